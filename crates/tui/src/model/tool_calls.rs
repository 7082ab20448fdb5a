//! A turn's tool calls as they run: a call that finished, and how far a running one got (a
//! `tool_progress` event, shown in the turn state: "running files__index (3/10: notes/)…").

use super::{App, Entry, ToolState, TurnState};

impl App {
    pub(super) fn tool_finished(
        &mut self,
        call_id: String,
        name: String,
        ok: bool,
        summary: String,
        duration_ms: u64,
    ) {
        let finished = ToolState::Finished {
            ok,
            summary,
            duration_ms: Some(duration_ms),
        };
        self.turn = TurnState::Thinking;
        if let Some(state) = self.tool_state(&call_id) {
            *state = finished;
        } else {
            self.push(Entry::Tool {
                call_id,
                name,
                arguments: String::new(),
                state: finished,
            });
        }
    }

    /// A running call reported how far it got.
    pub(super) fn tool_progress(
        &mut self,
        name: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        if matches!(self.turn, TurnState::Tool(_)) {
            self.turn = TurnState::Tool(format!(
                "{name} ({})",
                progress_text(progress, total, message)
            ));
        }
    }
}

/// "3/10: indexing notes/", "40%", "step 3": how far a call got, short and safe to print.
pub fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(total) if total > 0.0 && total <= 1.0 => {
            format!("{:.0}%", (progress / total * 100.0).clamp(0.0, 100.0))
        }
        Some(total) if total > 0.0 => format!("{}/{}", number(progress), number(total)),
        _ => format!("step {}", number(progress)),
    };
    let first_line = message.and_then(|m| m.lines().next());
    match first_line.map(types::terminal::escape_line) {
        Some(m) if !m.trim().is_empty() => {
            format!("{amount}: {}", super::tool_line::clip(m.trim(), 40))
        }
        _ => amount,
    }
}

/// A whole number without its `.0`; otherwise one decimal.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}
