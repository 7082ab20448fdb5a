//! Removes secrets and host paths from everything a tool returns to the model, outputs and errors
//! alike.
//!
//! Host paths: the user's workspace root (as given and as canonicalised) followed by `/` is cut, so
//! `<root>/shared/notes.md` becomes `shared/notes.md`, and the bare root becomes `<workspace>`.
//! Other absolute paths under directories that reveal the host's layout (`/home`, `/Users`,
//! `/root`, `/srv`, `/var`, `/mnt`, `/media`, `/opt`, `/private`, `/run`, `/tmp`, `/data`,
//! `/workspace(s)`, `/nix`, `/snap`, `/Volumes`, and the top directory of the workspace root)
//! become `<host path>`. System paths such as `/usr/bin/python` or `/etc/hosts`, and URL paths like
//! `/api/v1`, are left alone so that file contents stay editable.
//!
//! Secrets: provider keys (`sk-…`, `sk-ant-…`, Stripe `sk_live_…`), GitHub (`ghp_…`,
//! `github_pat_…`), GitLab (`glpat-…`), Hugging Face (`hf_…`), npm (`npm_…`), Slack
//! (`xox[abposr]-…`), AWS access key ids (`AKIA…`), Google (`AIza…`), `Bearer` tokens, JWTs, PEM
//! private keys, the password of a URL (`postgres://user:pass@host`), assignments to a name that
//! says secret (`password = 'x'`, `AWS_SECRET_ACCESS_KEY=…`, Azure `AccountKey=…`,
//! `"api_key": "…"`; after a colon an unquoted word of letters is prose, as in `pwd: Permission
//! denied`), and long high-entropy strings become `[REDACTED]`.

use std::path::Path;
use std::sync::LazyLock;

use regex::{Captures, Regex};

pub const REDACTED: &str = "[REDACTED]";
/// How every redaction marker begins (`[REDACTED]`, `[REDACTED:email]`): a value already
/// redacted is not a secret again.
const REDACTED_PREFIX: &str = "[REDACTED";
pub const HOST_PATH: &str = "<host path>";
pub const WORKSPACE: &str = "<workspace>";

/// Top-level directories whose sub-paths reveal the host's layout.
const HOST_DIRS: [&str; 17] = [
    "home",
    "Users",
    "root",
    "srv",
    "var",
    "mnt",
    "media",
    "opt",
    "private",
    "run",
    "tmp",
    "data",
    "workspace",
    "workspaces",
    "nix",
    "snap",
    "Volumes",
];

/// Characters that end a path when scanning free text (besides whitespace), as a regex class body.
const PATH_END: &str = r#"\s"'`)\]}>,;:|*?"#;

fn is_path_end(c: char) -> bool {
    c.is_whitespace() || "\"'`)]}>,;:|*?".contains(c)
}

/// Words that name a secret in an assignment (`password = …`, `AWS_SECRET_ACCESS_KEY=…`,
/// `"api_key": "…"`), possibly inside a longer snake- or kebab-case name.
const SECRET_NAMES: &str = r"password|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|private[_-]?key|token|accountkey|sharedaccesskey|client[_-]?secret";

/// The secret patterns, with what replaces the secret. A pattern's group `v` is the secret
/// itself (the name before it is kept); without one, the whole match is.
fn secret_patterns() -> Vec<(String, &'static str, Needles)> {
    let assignment = format!(
        r#"(?i)\b(?:[a-z0-9]+[_-])*(?:{SECRET_NAMES})(?:[_-][a-z0-9]+)*"?[ \t]*(?P<sep>[=:])[ \t]*(?:'(?P<v>[^'\n]+)'|"(?P<v2>[^"\n]+)"|(?P<v3>[^\s"'&,;]{{3,}}))"#
    );
    let table: [(&str, &'static str, Needles); 15] = [
        (
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
            "[REDACTED PRIVATE KEY]",
            &["-----begin"],
        ),
        (r"\bsk-(?:ant-)?[A-Za-z0-9_\-]{16,}", REDACTED, &["sk-"]),
        (
            r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}",
            REDACTED,
            &["k_live_", "k_test_"],
        ),
        (
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",
            REDACTED,
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        ),
        (
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            REDACTED,
            &["github_pat_"],
        ),
        (r"\bglpat-[A-Za-z0-9_\-]{16,}", REDACTED, &["glpat-"]),
        (r"\bhf_[A-Za-z0-9]{20,}", REDACTED, &["hf_"]),
        (r"\bnpm_[A-Za-z0-9]{20,}", REDACTED, &["npm_"]),
        (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", REDACTED, &["xox"]),
        (
            r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
            REDACTED,
            &["akia", "asia"],
        ),
        (r"\bAIza[0-9A-Za-z_\-]{35}", REDACTED, &["aiza"]),
        (
            r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            REDACTED,
            &["eyj"],
        ),
        (
            r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)",
            REDACTED,
            &["bearer"],
        ),
        (
            r"(?i)authorization:\s*basic\s+(?P<v>[A-Za-z0-9+/]{8,}=*)",
            REDACTED,
            &["authorization"],
        ),
        (
            r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s@/]+)@[A-Za-z0-9]",
            REDACTED,
            &["://"],
        ),
    ];
    let mut patterns: Vec<(String, &'static str, Needles)> = table
        .into_iter()
        .map(|(p, r, n)| (p.to_owned(), r, n))
        .collect();
    patterns.push((
        assignment,
        REDACTED,
        &[
            "password",
            "passwd",
            "passphrase",
            "pwd",
            "secret",
            "key",
            "token",
        ],
    ));
    patterns
}

/// Texts one of which (ignoring case) occurs in every match of a pattern: where none occurs,
/// the pattern is not run.
type Needles = &'static [&'static str];

/// `pattern` with ASCII word boundaries and digits: a Unicode `\b` makes the regex engine give up
/// its fast DFA on any non-ASCII text (a 64 KiB note with accents took 28 ms to screen, not
/// 0.6 ms); the screener matches a view whose digits are ASCII already.
pub(crate) fn ascii_classes(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)").replace(r"\d", "[0-9]")
}

/// The compiled secret patterns, and one search for all their needles: a pass over a text
/// (a literal search, far faster than running the patterns) tells which patterns can match at
/// all — usually none — so only those are run.
struct Secrets {
    needles: Option<Regex>,
    /// Each needle (lower case) and the pattern it belongs to.
    owners: Vec<(&'static str, usize)>,
    patterns: Vec<(Regex, &'static str)>,
}

impl Secrets {
    /// The patterns whose needles occur in `text`, by index.
    fn candidates(&self, text: &str) -> Vec<bool> {
        let mut wanted = vec![false; self.patterns.len()];
        let Some(needles) = &self.needles else {
            wanted.iter_mut().for_each(|w| *w = true);
            return wanted;
        };
        // Needles are lower case: search the lower-cased text (a case-sensitive literal search
        // stays on the engine's fastest path; a case-insensitive one of 30 needles does not).
        let lower = text.to_ascii_lowercase();
        let text = lower.as_str();
        let mut at = 0;
        while let Some(hit) = needles.find_at(text, at) {
            let found = hit.as_str();
            for (needle, owner) in &self.owners {
                if *needle == found
                    && let Some(w) = wanted.get_mut(*owner)
                {
                    *w = true;
                }
            }
            // One past the hit's start, so a needle overlapping this one is found too.
            at = hit.start() + text[hit.start()..].chars().next().map_or(1, char::len_utf8);
        }
        wanted
    }
}

static SECRETS: LazyLock<Secrets> = LazyLock::new(|| {
    let mut owners = Vec::new();
    let mut patterns = Vec::new();
    for (pattern, replacement, needles) in secret_patterns() {
        let Ok(re) = Regex::new(&ascii_classes(&pattern)) else {
            continue;
        };
        owners.extend(needles.iter().map(|n| (*n, patterns.len())));
        patterns.push((re, replacement));
    }
    let alternation: Vec<String> = owners.iter().map(|(n, _)| regex::escape(n)).collect();
    let needles = Regex::new(&alternation.join("|")).ok();
    Secrets {
        needles,
        owners,
        patterns,
    }
});

/// The secret a pattern's match holds: group `v` (or `v2`, `v3`) or the whole match. An
/// unquoted word of letters after a colon is prose (`pwd: Permission denied`), not a password;
/// nor is the shell's working directory (`PWD=/workspace/shared`, `OLDPWD=~/x`).
fn secret_span(caps: &Captures<'_>) -> Option<std::ops::Range<usize>> {
    let whole = caps.get(0)?;
    let value = ["v", "v2", "v3"].iter().find_map(|g| caps.name(g));
    if value.is_some_and(|v| v.as_str().starts_with(REDACTED_PREFIX)) {
        return None;
    }
    if let (Some(sep), Some(v)) = (caps.name("sep"), value)
        && is_directory_variable(
            whole.as_str().get(..sep.start() - whole.start())?,
            v.as_str(),
        )
    {
        return None;
    }
    match value {
        None => Some(whole.range()),
        Some(v)
            if caps.name("v3").is_some() && caps.name("sep").map(|s| s.as_str()) == Some(":") =>
        {
            (!v.as_str().chars().all(char::is_alphabetic)).then(|| v.range())
        }
        Some(v) => Some(v.range()),
    }
}

/// True for the shell's `PWD` or `OLDPWD` (as `env` or `set` print them: the directory the
/// shell is in, which `pwd` prints anyway; relative once the workspace root was cut), or a
/// lower-case `pwd` holding a path. `pwd=hunter22` stays a password.
fn is_directory_variable(name: &str, value: &str) -> bool {
    let name = name.trim_end_matches([' ', '\t', '"']);
    matches!(name, "PWD" | "OLDPWD")
        || (name.eq_ignore_ascii_case("pwd") && value.starts_with(['/', '~', '.', '<']))
}

/// Each secret in `text` (byte range) with what replaces it, in order, never overlapping.
fn secret_matches(text: &str) -> Vec<(std::ops::Range<usize>, &'static str)> {
    let mut spans = Vec::new();
    let secrets = &*SECRETS;
    let wanted = secrets.candidates(text);
    let run = secrets
        .patterns
        .iter()
        .zip(wanted)
        .filter_map(|(p, w)| w.then_some(p));
    for (re, replacement) in run {
        for caps in re.captures_iter(text) {
            if let Some(span) = secret_span(&caps) {
                spans.push((span, *replacement));
            }
        }
    }
    spans.sort_by_key(|(s, _)| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<(std::ops::Range<usize>, &'static str)> = Vec::new();
    for (span, replacement) in spans {
        match out.last_mut() {
            Some((last, _)) if span.start < last.end => last.end = last.end.max(span.end),
            _ => out.push((span, replacement)),
        }
    }
    out
}

/// Byte ranges of the secrets in `text` (the value only: a `password=` prefix is kept), found by
/// the same patterns [`Scrubber::scrub`] removes; the high-entropy rule is left out, since notes
/// legitimately hold long identifiers. Used by the governance stage to refuse secrets in memory.
pub(crate) fn secret_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    secret_matches(text).into_iter().map(|(s, _)| s).collect()
}

static HIGH_ENTROPY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+_\-=]{32,}").ok());

/// Scrubs text for one user's workspace.
#[derive(Debug)]
pub struct Scrubber {
    roots: Vec<String>,
    host_paths: Option<Regex>,
}

impl Scrubber {
    pub fn new(workspace_root: &Path) -> Self {
        let mut roots = Vec::new();
        let mut add = |p: &Path| {
            let s = p.to_string_lossy().trim_end_matches('/').to_owned();
            if s.len() > 1 && !roots.contains(&s) {
                roots.push(s);
            }
        };
        add(workspace_root);
        if let Ok(canonical) = std::fs::canonicalize(workspace_root) {
            add(&canonical);
        }
        // Longest first, so a canonical form that extends the given one is cut whole.
        roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
        let mut dirs: Vec<String> = HOST_DIRS.iter().map(|d| regex::escape(d)).collect();
        for root in &roots {
            if let Some(top) = root.trim_start_matches('/').split('/').next()
                && !top.is_empty()
                && root.starts_with('/')
            {
                dirs.push(regex::escape(top));
            }
        }
        let pattern = format!(
            r#"(^|[\s"'`(\[{{<=:,;])/(?:{})/[^{PATH_END}]+"#,
            dirs.join("|")
        );
        Self {
            roots,
            host_paths: Regex::new(&pattern).ok(),
        }
    }

    /// The scrubbed text: host paths first, then secrets.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = self.rewrite_roots(text);
        if let Some(re) = &self.host_paths {
            out = re
                .replace_all(&out, format!("${{1}}{HOST_PATH}"))
                .into_owned();
        }
        scrub_secrets(&out)
    }

    fn rewrite_roots(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for root in &self.roots {
            if !out.contains(root.as_str()) {
                continue;
            }
            let mut result = String::with_capacity(out.len());
            let mut rest = out.as_str();
            while let Some(at) = rest.find(root.as_str()) {
                result.push_str(&rest[..at]);
                let after = &rest[at + root.len()..];
                match after.chars().next() {
                    Some('/') => {
                        let tail = after.trim_start_matches('/');
                        if tail.is_empty() || tail.starts_with(is_path_end) {
                            result.push_str(WORKSPACE);
                        }
                        rest = tail;
                    }
                    Some(c) if !(is_path_end(c) || c == '.') => {
                        // A longer name that merely starts like the root (`/ws/alice2`): keep it
                        // for the host-path pass.
                        result.push_str(root);
                        rest = after;
                    }
                    _ => {
                        result.push_str(WORKSPACE);
                        rest = after;
                    }
                }
            }
            result.push_str(rest);
            out = result;
        }
        out
    }
}

/// Secrets only (no workspace needed).
pub fn scrub_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (span, replacement) in secret_matches(text) {
        out.push_str(text.get(at..span.start).unwrap_or_default());
        out.push_str(replacement);
        at = span.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    if let Some(re) = HIGH_ENTROPY.as_ref() {
        out = re
            .replace_all(&out, |caps: &Captures<'_>| {
                let token = &caps[0];
                if looks_random(token) {
                    REDACTED.to_owned()
                } else {
                    token.to_owned()
                }
            })
            .into_owned();
    }
    out
}

/// Mixed case and digits with a high per-character Shannon entropy: a generated key, not a word,
/// an identifier or a hex digest.
fn looks_random(token: &str) -> bool {
    let has = |f: fn(&char) -> bool| token.chars().any(|c| f(&c));
    if !(has(char::is_ascii_uppercase)
        && has(char::is_ascii_lowercase)
        && has(char::is_ascii_digit))
    {
        return false;
    }
    let mut counts = [0u32; 128];
    for b in token.bytes() {
        counts[usize::from(b & 0x7f)] += 1;
    }
    let len = token.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum();
    entropy >= 4.2
}

#[cfg(test)]
#[path = "scrub_tests.rs"]
mod tests;
