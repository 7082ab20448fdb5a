//! Slash commands typed in the input: `/new`, `/sessions`, `/switch`, `/continue`, `/history`,
//! `/cancel`, `/memory`, `/search`, `/undo`, `/model`, `/usage`, `/export`, `/help`, `/quit`.

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/new [title]`
    New {
        title: Option<String>,
    },
    /// `/sessions`
    Sessions,
    /// `/switch <id | number from /sessions | id prefix>`
    Switch {
        target: String,
    },
    /// `/continue` (or `/last`): open the most recent other conversation.
    Continue,
    /// `/history`: an earlier page of the conversation.
    History,
    /// `/cancel`: stop the running turn.
    Cancel,
    /// `/details`: show or hide tool details.
    Details,
    /// `/memory …`: the user's saved notes.
    Memory(MemoryCommand),
    /// `/search <words>`: the user's past conversations; `/search open <n>` opens hit `n`'s
    /// session.
    Search {
        query: String,
    },
    SearchOpen {
        n: usize,
    },
    /// `/schedules [cancel|pause|resume <n>]`: the user's schedules.
    Schedules(crate::model::SchedulesCommand),
    /// `/undo [n]`: take back memory change `n` (the latest without it).
    Undo {
        n: Option<usize>,
    },
    /// `/export [md|jsonl] [path]`: write this conversation to a file.
    Export {
        format: types::ExportFormat,
        path: Option<String>,
    },
    /// `/model [name]`: list the models, or switch this session to one.
    Model {
        name: Option<String>,
    },
    /// `/usage`: the session's tokens and cost, and the last turn's.
    Usage,
    /// `/help`
    Help,
    /// `/quit` (or `/exit`)
    Quit,
}

/// `/memory [category]`, `/memory more`, `/memory search <words>`, `/memory show <n>`,
/// `/memory edit <n> <new text>`, `/memory delete <n>`, `/memory history <n>`,
/// `/memory confirm <n>` (`n` from the last list); `/memory revert <v>` (a version of the last
/// history); `/memory deleted`, `/memory restore <n>` (`n` from the last deleted list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryCommand {
    List {
        category: Option<String>,
    },
    More,
    Search {
        query: String,
    },
    Show {
        n: usize,
    },
    Edit {
        n: usize,
        text: String,
    },
    Delete {
        n: usize,
    },
    History {
        n: usize,
    },
    Revert {
        version: u32,
    },
    Deleted,
    Restore {
        n: usize,
    },
    Confirm {
        n: usize,
    },
    /// `/memory pending`: what capture proposes (mode `suggest`).
    Pending,
    /// `/memory accept <n>` / `/memory reject <n>`: decide on pending proposal `n`.
    Accept {
        n: usize,
    },
    Reject {
        n: usize,
    },
}

/// What went wrong with a slash command, in words for the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError(pub String);

/// The commands with a one-line description each, for `/help`.
pub const COMMANDS: [(&str, &str); 25] = [
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
    (
        "/memory [category]",
        "your saved notes, newest first (/memory more: next page)",
    ),
    ("/memory search <words>", "find notes"),
    ("/memory show <n>", "a note whole (n from the last list)"),
    ("/memory edit <n> <text>", "replace a note's text"),
    ("/memory delete <n>", "delete a note"),
    (
        "/memory history <n>",
        "a note's versions (/memory revert <v>: make one current)",
    ),
    (
        "/memory deleted",
        "deleted notes that can still be restored",
    ),
    ("/memory restore <n>", "bring a deleted note back"),
    (
        "/memory confirm <n>",
        "vouch for a note saved after untrusted tool output",
    ),
    (
        "/memory pending",
        "what capture proposes to remember (/memory accept|reject <n>)",
    ),
    (
        "/search <words>",
        "your past conversations (/search open <n>: go to one)",
    ),
    ("/undo [n]", "undo memory change n (the latest: Ctrl+Z)"),
    (
        "/schedules [cancel|pause|resume <n>]",
        "your schedules, or change one",
    ),
    (
        "/model [name]",
        "list the models, or switch this session to one",
    ),
    (
        "/usage",
        "tokens and cost of this session and of the last turn",
    ),
    (
        "/export [md|jsonl] [path]",
        "write this conversation to a file (Markdown by default)",
    ),
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
        "schedules" => crate::model::parse_schedules(arg)
            .map(Command::Schedules)
            .map_err(CommandError),
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
        "memory" | "mem" => memory(arg).map(Command::Memory),
        "search" if arg.is_empty() => Err(CommandError(
            "/search needs words to look for in your past conversations".into(),
        )),
        // `open <n>` opens a hit; other words after "open" ("open source licences") are a search.
        "search" => match arg.strip_prefix("open ").map(str::trim) {
            Some(n) if n.bytes().all(|b| b.is_ascii_digit()) => {
                number(n, "/search open").map(|n| Command::SearchOpen { n })
            }
            _ => Ok(Command::Search {
                query: arg.to_owned(),
            }),
        },
        "undo" if arg.is_empty() => Ok(Command::Undo { n: None }),
        "undo" => number(arg, "/undo").map(|n| Command::Undo { n: Some(n) }),
        "export" => export(arg),
        "model" | "models" => Ok(Command::Model {
            name: (!arg.is_empty()).then(|| arg.to_owned()),
        }),
        "usage" | "cost" => no_arg(Command::Usage),
        "help" | "?" => no_arg(Command::Help),
        "quit" | "exit" | "q" => no_arg(Command::Quit),
        _ => Err(CommandError(format!(
            "unknown command /{name}: type /help for the list"
        ))),
    })
}

fn memory(arg: &str) -> Result<MemoryCommand, CommandError> {
    let (verb, rest) = match arg.split_once(char::is_whitespace) {
        Some((verb, rest)) => (verb, rest.trim()),
        None => (arg, ""),
    };
    match verb.to_ascii_lowercase().as_str() {
        "" => Ok(MemoryCommand::List { category: None }),
        // `/memory list [category]`, as people type it, is `/memory [category]`.
        "list" | "ls" if !rest.contains(char::is_whitespace) => Ok(MemoryCommand::List {
            category: (!rest.is_empty()).then(|| rest.to_owned()),
        }),
        "more" => Ok(MemoryCommand::More),
        "search" | "find" if rest.is_empty() => Err(CommandError(
            "/memory search needs words to look for".into(),
        )),
        "search" | "find" => Ok(MemoryCommand::Search {
            query: rest.to_owned(),
        }),
        "show" => number(rest, "/memory show").map(|n| MemoryCommand::Show { n }),
        "delete" | "rm" => number(rest, "/memory delete").map(|n| MemoryCommand::Delete { n }),
        "history" => number(rest, "/memory history").map(|n| MemoryCommand::History { n }),
        "confirm" => number(rest, "/memory confirm").map(|n| MemoryCommand::Confirm { n }),
        "deleted" if rest.is_empty() => Ok(MemoryCommand::Deleted),
        "pending" if rest.is_empty() => Ok(MemoryCommand::Pending),
        "accept" => number(rest, "/memory accept").map(|n| MemoryCommand::Accept { n }),
        "reject" => number(rest, "/memory reject").map(|n| MemoryCommand::Reject { n }),
        "restore" => number(rest, "/memory restore").map(|n| MemoryCommand::Restore { n }),
        "revert" => number(rest, "/memory revert")
            .and_then(|v| {
                u32::try_from(v)
                    .map_err(|_| CommandError("/memory revert needs a version number".into()))
            })
            .map(|version| MemoryCommand::Revert { version }),
        "edit" => {
            let (n, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let n = number(n, "/memory edit")?;
            if text.trim().is_empty() {
                return Err(CommandError(
                    "/memory edit needs the note's number and its new text".into(),
                ));
            }
            Ok(MemoryCommand::Edit {
                n,
                text: text.trim().to_owned(),
            })
        }
        category if rest.is_empty() => Ok(MemoryCommand::List {
            category: Some(category.to_owned()),
        }),
        _ => Err(CommandError(
            "/memory takes a category, more, search, show, edit, delete, history, revert, \
             deleted, restore, confirm, pending, accept or reject: see /help"
                .into(),
        )),
    }
}

/// `/export [md|jsonl] [path]`: a format word first if any, then the path (the rest).
fn export(arg: &str) -> Result<Command, CommandError> {
    let (first, rest) = match arg.split_once(char::is_whitespace) {
        Some((first, rest)) => (first, rest.trim()),
        None => (arg, ""),
    };
    let (format, path) = match types::ExportFormat::parse(first) {
        Some(format) => (format, rest),
        None => (types::ExportFormat::Markdown, arg),
    };
    Ok(Command::Export {
        format,
        path: (!path.is_empty()).then(|| path.to_owned()),
    })
}

fn number(arg: &str, command: &str) -> Result<usize, CommandError> {
    arg.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| CommandError(format!("{command} needs a number from the list")))
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
        let mem = |m| Some(Ok(Command::Memory(m)));
        check("/memory", mem(MemoryCommand::List { category: None }));
        check(
            "/memory preference",
            mem(MemoryCommand::List {
                category: Some("preference".into()),
            }),
        );
        check("/memory list", mem(MemoryCommand::List { category: None }));
        check(
            "/memory ls preference",
            mem(MemoryCommand::List {
                category: Some("preference".into()),
            }),
        );
        check("/memory more", mem(MemoryCommand::More));
        check(
            "/memory search trams in Lisbon",
            mem(MemoryCommand::Search {
                query: "trams in Lisbon".into(),
            }),
        );
        check(
            "/memory search",
            Some(Err("/memory search needs words to look for")),
        );
        check(
            "/memory edit 2 Loves Porto too",
            mem(MemoryCommand::Edit {
                n: 2,
                text: "Loves Porto too".into(),
            }),
        );
        check(
            "/memory edit 2",
            Some(Err("/memory edit needs the note's number and its new text")),
        );
        check(
            "/memory edit x y",
            Some(Err("/memory edit needs a number from the list")),
        );
        check(
            "/memory delete 0",
            Some(Err("/memory delete needs a number from the list")),
        );
        check("/memory show 3", mem(MemoryCommand::Show { n: 3 }));
        check("/memory history 2", mem(MemoryCommand::History { n: 2 }));
        check(
            "/memory revert 1",
            mem(MemoryCommand::Revert { version: 1 }),
        );
        check("/memory deleted", mem(MemoryCommand::Deleted));
        check("/memory restore 1", mem(MemoryCommand::Restore { n: 1 }));
        check("/memory confirm 4", mem(MemoryCommand::Confirm { n: 4 }));
        check("/memory pending", mem(MemoryCommand::Pending));
        // A mistake's answer names every verb, the proposals' among them.
        check(
            "/memory pending all",
            Some(Err(
                "/memory takes a category, more, search, show, edit, delete, history, revert, \
                 deleted, restore, confirm, pending, accept or reject: see /help",
            )),
        );
        check(
            "/search dog name",
            Some(Ok(Command::Search {
                query: "dog name".into(),
            })),
        );
        check("/search open 2", Some(Ok(Command::SearchOpen { n: 2 })));
        check(
            "/search open source licences",
            Some(Ok(Command::Search {
                query: "open source licences".into(),
            })),
        );
        check(
            "/search open 0",
            Some(Err("/search open needs a number from the list")),
        );
        check("/memory accept 2", mem(MemoryCommand::Accept { n: 2 }));
        check("/memory reject 1", mem(MemoryCommand::Reject { n: 1 }));
        check(
            "/memory history",
            Some(Err("/memory history needs a number from the list")),
        );
        check(
            "/memory revert 0",
            Some(Err("/memory revert needs a number from the list")),
        );
        check("/undo", Some(Ok(Command::Undo { n: None })));
        check("/undo 2", Some(Ok(Command::Undo { n: Some(2) })));
        check("/undo two", Some(Err("/undo needs a number from the list")));
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
