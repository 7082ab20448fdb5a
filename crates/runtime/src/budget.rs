//! Token budgets: the model's limits and a deliberately simple size estimate.
//!
//! Tokens are estimated as characters / 4 (rounded up) plus 4 per message for role and framing;
//! tool calls count their name and arguments, tool schemas their JSON. This over-counts code and
//! under-counts some scripts, which is why the summary triggers well before the window is full.

use types::{Message, ProviderConfig, ToolSchema};

/// What the model can take and give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// The whole context window, in tokens.
    pub context_window: u32,
    /// Reserved for the reply.
    pub max_output_tokens: u32,
}

impl From<&ProviderConfig> for ModelLimits {
    fn from(config: &ProviderConfig) -> Self {
        Self {
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
        }
    }
}

impl ModelLimits {
    /// Tokens left for the prompt once the reply is reserved.
    pub fn prompt_budget(&self) -> u32 {
        self.context_window.saturating_sub(self.max_output_tokens)
    }
}

/// Per-message framing overhead.
const MESSAGE_OVERHEAD: u32 = 4;

/// Estimated tokens of `text`.
pub fn estimate_text(text: &str) -> u32 {
    u32::try_from(text.len().div_ceil(4)).unwrap_or(u32::MAX)
}

/// Estimated tokens of one message as sent.
pub fn estimate_message(message: &Message) -> u32 {
    let mut tokens = MESSAGE_OVERHEAD + message.content.as_deref().map_or(0, estimate_text);
    for call in &message.tool_calls {
        tokens = tokens
            .saturating_add(MESSAGE_OVERHEAD)
            .saturating_add(estimate_text(&call.name))
            .saturating_add(estimate_text(&call.arguments));
    }
    tokens
}

/// Estimated tokens of the tool schemas offered.
pub fn estimate_tools(schemas: &[ToolSchema]) -> u32 {
    schemas
        .iter()
        .map(|s| estimate_text(&s.to_openai().to_string()))
        .fold(0, u32::saturating_add)
}

/// `fraction` of `tokens`, rounded down.
pub(crate) fn fraction_of(tokens: u32, fraction: f64) -> u32 {
    // `as` saturates for floats: NaN and negatives give 0, huge values u32::MAX.
    (f64::from(tokens) * fraction).floor() as u32
}

/// `text` cut to about `tokens` tokens on a char boundary, with an ellipsis when cut.
pub(crate) fn clip(text: &str, tokens: u32) -> String {
    let max = usize::try_from(tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(4);
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", text[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates() {
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("abcd"), 1);
        assert_eq!(estimate_text("abcde"), 2);
        assert_eq!(estimate_message(&Message::user("abcdefgh")), 6);
        assert_eq!(fraction_of(1000, 0.75), 750);
        assert_eq!(clip("héllo world", 1), "hél…");
        assert_eq!(clip("short", 10), "short");
    }
}
