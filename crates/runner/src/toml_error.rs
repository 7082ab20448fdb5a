//! TOML mistakes said the way a user fixes them: the line, and the setting by its full key
//! (`provider.model`), in front of the parser's message.

/// A TOML error as `line N, key.path: message`: where the mistake is (from the error's span) and
/// which setting it is (the key on that line, under the nearest table header above it).
pub(crate) fn toml_problem(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    let Some(span) = error.span() else {
        return message.to_owned();
    };
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or_default();
    let line_no = before.matches('\n').count() + 1;
    let line = text
        .get(before.rfind('\n').map_or(0, |i| i + 1)..)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_default();
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let table = before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[["))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
    match (key, table) {
        (Some(key), Some(table)) => format!("line {line_no}, {table}.{key}: {message}"),
        (Some(key), None) => format!("line {line_no}, {key}: {message}"),
        (None, _) => format!("line {line_no}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use crate::{RunnerConfig, load_agent_config};
    use std::path::Path;

    #[test]
    fn toml_mistakes_name_the_line_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.toml");
        let check = |text: &str, needle: &str| {
            std::fs::write(&path, text).unwrap();
            let err = load_agent_config(Some(&path)).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        };
        check(
            "# models\n[provider]\nmodel = 5\n",
            "line 3, provider.model: invalid type: integer `5`, expected a string",
        );
        check(
            "[provider]\nmodel = \"m\"\n\n[runtime]\nmax_tool_rounds = \"ten\"\n",
            "line 5, runtime.max_tool_rounds: invalid type: string \"ten\"",
        );
        check(
            "[memory.embedding]\nbatch_size = -1\n",
            "line 2, memory.embedding.batch_size:",
        );
        check(
            "[provider]\nmodle = \"x\"\n",
            "line 2, provider.modle: unknown field `modle`",
        );
        let err = RunnerConfig::parse("tier = 3\n", Path::new("/etc/oxydra/runner.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1, tier: "), "{err}");
    }
}
