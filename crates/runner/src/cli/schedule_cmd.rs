//! `runner schedule list|cancel|pause|resume --user U`: the user's schedules from the command
//! line, through the same schedule tools the model calls, behind the governance of the `cli`
//! surface (permissions, rate limits, one audit row per change). An id that is not one of the
//! user's schedules (another user's included) is "no such schedule" and changes nothing.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tools::Governance;
use types::{CallSurface, SessionId, Surface, ToolExecutionContext, TurnId, WorkspacePaths};

use crate::args::{ScheduleAction, ScheduleArgs};
use crate::memory_cmd::{UserStore, give_back, open_user_store};
use crate::{Global, out};

pub async fn run(args: ScheduleArgs, global: &Global) -> Result<()> {
    let root = args.root.clone();
    let opened = open_user_store(global, args.root, args.agent_config).await;
    let result = match opened {
        Ok(user_store) => {
            let result = act(args.action, &user_store).await;
            // The database threads close their connections before the process exits.
            user_store.store.close().await;
            result
        }
        Err(e) => Err(e),
    };
    give_back(root, global);
    result
}

async fn act(action: ScheduleAction, us: &UserStore) -> Result<()> {
    let zone =
        tools::resolve_timezone(us.config.user.timezone.as_deref()).map_err(anyhow::Error::msg)?;
    let schedules = tools::Schedules::new(us.store.clone(), us.config.schedules.clone(), zone);
    let governance = Governance::new(us.config.governance.clone()).with_store(&us.store);
    let registry = tools::ToolSet::new(None)
        .schedules(&schedules)
        .registry()?
        .with_output_limit(usize::MAX)
        .with_governance(Arc::new(governance));
    let ctx = ToolExecutionContext {
        surface: CallSurface::new(Surface::Cli).with_client("runner"),
        ..ToolExecutionContext::new(
            us.user.clone(),
            SessionId::parse("cli")?,
            TurnId::parse("cli")?,
            WorkspacePaths::new(&us.user_root),
        )
    };
    let call = |name: &'static str, args: Value| {
        let (registry, ctx) = (&registry, &ctx);
        async move {
            let outcome = registry.execute(name, &args.to_string(), ctx).await;
            if !outcome.ok {
                bail!("{}", outcome.output);
            }
            serde_json::from_str::<Value>(&outcome.output).context("the tool's answer is not JSON")
        }
    };
    let mut stdout = std::io::stdout().lock();
    let (name, id, resume) = match action {
        ScheduleAction::List { json } => {
            let list = call(tools::SCHEDULE_LIST_TOOL_NAME, json!({})).await?;
            return print_list(&list, json, &mut stdout);
        }
        ScheduleAction::Cancel { id } => (tools::SCHEDULE_CANCEL_TOOL_NAME, id, None),
        ScheduleAction::Pause { id } => (tools::SCHEDULE_PAUSE_TOOL_NAME, id, Some(false)),
        ScheduleAction::Resume { id } => (tools::SCHEDULE_PAUSE_TOOL_NAME, id, Some(true)),
    };
    let mut args = json!({ "id": id });
    if let Some(resume) = resume {
        args["resume"] = json!(resume);
    }
    let answer = call(name, args).await.map_err(|e| not_found(e, &id))?;
    // The one changed schedule, under its verb (`cancelled`, `paused`, `resumed`).
    let (verb, schedule) = answer
        .as_object()
        .and_then(|o| o.iter().next())
        .context("the tool's answer is empty")?;
    writeln!(stdout, "{verb}: {}", line(schedule))?;
    Ok(())
}

/// The store's "not found" (an id of no schedule of this user's) in the CLI's words.
fn not_found(error: anyhow::Error, id: &str) -> anyhow::Error {
    if error.to_string().contains("was not found") {
        let id: String = id.chars().take(80).collect();
        anyhow::anyhow!(
            "no such schedule: {}; `runner schedule list` shows the ids",
            out::field(&id, false)
        )
    } else {
        error
    }
}

fn print_list(list: &Value, json: bool, stdout: &mut impl Write) -> Result<()> {
    if json {
        return out::write_json(stdout, list);
    }
    let items = list["schedules"].as_array().map_or(&[][..], Vec::as_slice);
    if items.is_empty() {
        writeln!(stdout, "no schedules")?;
    }
    for s in items {
        writeln!(stdout, "{}", line(s))?;
    }
    Ok(())
}

/// `id  state  next run (local)  recurrence  title`, one line, control characters shown escaped.
fn line(s: &Value) -> String {
    let text = |k: &str| out::field(s[k].as_str().unwrap_or("-"), false);
    format!(
        "{}  {}  {}  {}  {}",
        text("id"),
        text("state"),
        text("next_run"),
        text("recurrence"),
        text("title")
    )
}
