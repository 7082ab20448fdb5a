//! The web tools: `web_fetch` (a page from the web, as Markdown) and `web_search` (through the
//! configured backend). Both are off unless `[tools.web] enabled = true`; both read text written
//! by others, so what the model saves after them is recorded as unconfirmed (the `web` origin).
//!
//! `web_fetch` never reaches a loopback, private, link-local, multicast, unspecified or
//! cloud-metadata address unless the operator names the host in `allow_hosts` ([`guard`]).

mod convert;
mod fetch;
pub mod guard;
mod nesting;
mod render;
mod search;

use std::sync::Arc;
use std::time::Duration;

use types::WebConfig;

use crate::{Tool, ToolError};

pub use convert::html_to_markdown;
pub use fetch::{MAX_REDIRECTS, WEB_FETCH_TOOL_NAME, WebFetch};
pub use search::{MAX_SEARCH_RESULTS, WEB_SEARCH_TOOL_NAME, WebSearch};

/// The web tools `config` turns on, resolving host names with `lookup`: none when it is
/// disabled, `web_fetch` when enabled, and `web_search` too when a search backend is configured.
pub(crate) fn web_tools(
    config: &WebConfig,
    lookup: Arc<dyn guard::Lookup>,
) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
    if !config.enabled {
        return Ok(Vec::new());
    }
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WebFetch::new(config, lookup)?)];
    if let Some(search) = &config.search {
        let limit = Duration::from_secs(config.timeout_secs);
        tools.push(Arc::new(WebSearch::new(search, limit)?));
    }
    Ok(tools)
}
