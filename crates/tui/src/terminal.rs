//! Owning the terminal: raw mode, the alternate screen and bracketed paste on the way in, and
//! ALWAYS the same undone on the way out — when the guard drops (normal exit, `?` errors) and
//! from the panic hook (before the panic message is printed, so it stays readable).

use std::io::{Stdout, Write, stdout};

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::error::TuiError;

/// The terminal in chat mode; dropping it restores the terminal.
#[derive(Debug)]
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Installs the panic hook, then enters raw mode and the alternate screen.
    pub fn enter() -> Result<Self, TuiError> {
        install_panic_hook();
        enable_raw_mode().map_err(TuiError::Terminal)?;
        let guard = || -> Result<Self, TuiError> {
            execute!(stdout(), EnterAlternateScreen, EnableBracketedPaste)
                .map_err(TuiError::Terminal)?;
            let terminal =
                Terminal::new(CrosstermBackend::new(stdout())).map_err(TuiError::Terminal)?;
            Ok(Self { terminal })
        };
        guard().inspect_err(|_| restore())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as it was. Safe to call more than once.
pub fn restore() {
    let _ = disable_raw_mode();
    let mut out = stdout();
    let _ = execute!(
        out,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = out.flush();
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
