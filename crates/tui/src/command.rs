//! Slash commands typed in the input: `/new`, `/sessions`, `/switch`, `/continue`, `/history`,
//! `/cancel`, `/help`, `/quit`.

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/new [title]`
    New { title: Option<String> },
    /// `/sessions`
    Sessions,
    /// `/switch <id | number from /sessions | id prefix>`
    Switch { target: String },
    /// `/continue` (or `/last`): open the most recent other conversation.
    Continue,
    /// `/history`: an earlier page of the conversation.
    History,
    /// `/cancel`: stop the running turn.
    Cancel,
    /// `/details`: show or hide tool details.
    Details,
    /// `/help`
    Help,
    /// `/quit` (or `/exit`)
    Quit,
}

/// What went wrong with a slash command, in words for the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError(pub String);

/// The commands with a one-line description each, for `/help`.
pub const COMMANDS: [(&str, &str); 9] = [
    ("/new [title]", "start a new session"),
    ("/sessions", "list your sessions"),
    (
        "/switch <n|id>",
        "switch to a session (number from /sessions, or id)",
    ),
    ("/continue", "open your most recent other conversation"),
    ("/history", "load earlier messages of this session"),
    ("/cancel", "stop the running reply"),
    ("/details", "show or hide tool details (also Ctrl+T)"),
    ("/help", "keys and commands"),
    ("/quit", "leave (also Ctrl+D on an empty line)"),
];

/// Parses `input` if it is a slash command: `None` for ordinary text (including text starting
/// with `//`, sent as `/…`, and `/` followed by a space).
pub fn parse(input: &str) -> Option<Result<Command, CommandError>> {
    let trimmed = input.trim();
    let rest = trimmed.strip_prefix('/')?;
    if rest.starts_with('/') || rest.starts_with(char::is_whitespace) || rest.is_empty() {
        return None;
    }
    let (name, arg) = match rest.split_once(char::is_whitespace) {
        Some((name, arg)) => (name, arg.trim()),
        None => (rest, ""),
    };
    let no_arg = |command: Command| {
        if arg.is_empty() {
            Ok(command)
        } else {
            Err(CommandError(format!("/{name} takes no argument")))
        }
    };
    Some(match name.to_ascii_lowercase().as_str() {
        "new" => Ok(Command::New {
            title: (!arg.is_empty()).then(|| arg.to_owned()),
        }),
        "sessions" | "ls" => no_arg(Command::Sessions),
        "switch" | "sw" if arg.is_empty() => Err(CommandError(
            "/switch needs a session: a number from /sessions, or its id".into(),
        )),
        "switch" | "sw" => Ok(Command::Switch {
            target: arg.to_owned(),
        }),
        "continue" | "last" => no_arg(Command::Continue),
        "history" => no_arg(Command::History),
        "cancel" => no_arg(Command::Cancel),
        "details" => no_arg(Command::Details),
        "help" | "?" => no_arg(Command::Help),
        "quit" | "exit" | "q" => no_arg(Command::Quit),
        _ => Err(CommandError(format!(
            "unknown command /{name}: type /help for the list"
        ))),
    })
}

/// Text that starts with `//` is sent with one slash removed.
pub fn unescape(input: &str) -> &str {
    match input.trim_start().strip_prefix("//") {
        Some(_) => input.trim_start().get(1..).unwrap_or(input),
        None => input,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Option<Result<Command, &str>>) {
        let got = parse(input);
        let expected = expected.map(|r| r.map_err(|e| CommandError(e.to_owned())));
        assert_eq!(got, expected, "{input:?}");
    }

    #[test]
    fn commands() {
        check("hello", None);
        check("/new", Some(Ok(Command::New { title: None })));
        check(
            "  /new Trip planning ",
            Some(Ok(Command::New {
                title: Some("Trip planning".into()),
            })),
        );
        check("/sessions", Some(Ok(Command::Sessions)));
        check(
            "/switch 2",
            Some(Ok(Command::Switch { target: "2".into() })),
        );
        check(
            "/switch",
            Some(Err(
                "/switch needs a session: a number from /sessions, or its id",
            )),
        );
        check("/history", Some(Ok(Command::History)));
        check("/CANCEL", Some(Ok(Command::Cancel)));
        check("/help", Some(Ok(Command::Help)));
        check("/quit", Some(Ok(Command::Quit)));
        check("/quit now", Some(Err("/quit takes no argument")));
        check(
            "/frob",
            Some(Err("unknown command /frob: type /help for the list")),
        );
        check("//etc/hosts is a file", None);
        check("/ nothing", None);
        check("/", None);
    }

    #[test]
    fn double_slash_sends_one() {
        assert_eq!(unescape("//etc/hosts"), "/etc/hosts");
        assert_eq!(unescape("plain"), "plain");
    }
}
