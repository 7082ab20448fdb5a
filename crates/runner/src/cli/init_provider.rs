//! `runner init`'s choice of model: the providers it knows (OpenAI, Anthropic, OpenRouter, Ollama,
//! any OpenAI-compatible URL), the questions asked on a terminal, the one cheap request that
//! checks the key (`GET /v1/models`, which both wire formats serve) before anything is written,
//! and `agent.toml`'s `[provider]` lines rewritten from the choice.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use types::ProviderKind;

use crate::out::say;

/// `runner init --provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Openai,
    Anthropic,
    Openrouter,
    Ollama,
    /// Any other OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio…): needs --base-url.
    Compatible,
}

/// What a provider starts from: wire format, base URL, model, key variable ("" = no key).
struct Preset {
    label: &'static str,
    kind: ProviderKind,
    base_url: &'static str,
    model: &'static str,
    key_env: &'static str,
}

impl ProviderArg {
    const ALL: [Self; 5] = [
        Self::Openai,
        Self::Anthropic,
        Self::Openrouter,
        Self::Ollama,
        Self::Compatible,
    ];

    fn preset(self) -> Preset {
        let (label, kind, base_url, model, key_env) = match self {
            Self::Openai => (
                "OpenAI",
                ProviderKind::Openai,
                "https://api.openai.com/v1",
                "gpt-4o-mini",
                "OPENAI_API_KEY",
            ),
            Self::Anthropic => (
                "Anthropic",
                ProviderKind::Anthropic,
                "https://api.anthropic.com",
                "claude-sonnet-4-5",
                "ANTHROPIC_API_KEY",
            ),
            Self::Openrouter => (
                "OpenRouter",
                ProviderKind::Openai,
                "https://openrouter.ai/api/v1",
                "openai/gpt-4o-mini",
                "OPENROUTER_API_KEY",
            ),
            Self::Ollama => (
                "Ollama (local, no key)",
                ProviderKind::Openai,
                "http://127.0.0.1:11434/v1",
                "llama3.1",
                "",
            ),
            Self::Compatible => (
                "another OpenAI-compatible URL",
                ProviderKind::Openai,
                "",
                "",
                "",
            ),
        };
        Preset {
            label,
            kind,
            base_url,
            model,
            key_env,
        }
    }
}

/// `runner init`'s provider options, as given.
#[derive(Debug, Clone, Default)]
pub struct ProviderFlags {
    pub provider: Option<ProviderArg>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub no_check: bool,
}

impl ProviderFlags {
    /// True when any option that shapes a new agent.toml was given.
    pub fn any(&self) -> bool {
        self.provider.is_some()
            || self.model.is_some()
            || self.base_url.is_some()
            || self.api_key_env.is_some()
    }
}

/// The provider chosen: what `[provider]` will say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// `""`: no key (local servers).
    pub key_env: String,
}

impl Choice {
    pub fn describe(&self) -> String {
        let key = if self.key_env.is_empty() {
            "no key".to_owned()
        } else {
            format!("key in ${}", self.key_env)
        };
        format!("{} at {} ({key})", self.model, self.base_url)
    }
}

/// The choice from the flags, or from questions when none was given and stdin and stderr are a
/// terminal; `None` otherwise (agent.toml is then the example, OpenAI by default).
pub fn choose(flags: &ProviderFlags) -> Result<Option<Choice>> {
    if let Some(provider) = flags.provider {
        return from_flags(provider, flags).map(Some);
    }
    if flags.any() {
        bail!("--model, --base-url and --api-key-env go with --provider (e.g. --provider ollama)");
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        let stdin = std::io::stdin();
        return ask(&mut stdin.lock()).map(Some);
    }
    Ok(None)
}

fn from_flags(provider: ProviderArg, flags: &ProviderFlags) -> Result<Choice> {
    let preset = provider.preset();
    let base_url = match (&flags.base_url, provider) {
        (Some(url), _) => url.clone(),
        (None, ProviderArg::Compatible) => {
            bail!("--provider compatible needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        }
        (None, _) => preset.base_url.to_owned(),
    };
    let model = match (&flags.model, provider) {
        (Some(model), _) => model.clone(),
        (None, ProviderArg::Compatible) => bail!("--provider compatible needs --model"),
        (None, _) => preset.model.to_owned(),
    };
    let key_env = flags
        .api_key_env
        .clone()
        .unwrap_or_else(|| preset.key_env.to_owned());
    checked(Choice {
        kind: preset.kind,
        base_url,
        model,
        key_env,
    })
}

/// Refuses what agent.toml would refuse, before anything is asked of the network.
fn checked(choice: Choice) -> Result<Choice> {
    let url = choice.base_url.trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!(
            "the base URL `{}` must start with http:// or https://",
            choice.base_url
        );
    }
    if choice.model.trim().is_empty() {
        bail!("the model name is empty");
    }
    let key_ok = choice
        .key_env
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !key_ok {
        bail!(
            "`{}` is not an environment variable name (letters, digits and _)",
            choice.key_env
        );
    }
    Ok(Choice {
        base_url: url.to_owned(),
        ..choice
    })
}

/// The questions: provider, (base URL), model, key variable. Each has a default (Enter keeps it).
pub fn ask(input: &mut impl BufRead) -> Result<Choice> {
    let mut menu = String::from("Which LLM provider?\n");
    for (n, p) in ProviderArg::ALL.iter().enumerate() {
        menu.push_str(&format!("  {}) {}\n", n + 1, p.preset().label));
    }
    prompt_line(&menu)?;
    let provider = loop {
        let answer = question(input, "Provider", "1")?;
        let picked = answer
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| ProviderArg::ALL.get(i).copied())
            .or_else(|| ProviderArg::from_str(&answer, true).ok());
        match picked {
            Some(p) => break p,
            None => prompt_line("  a number from 1 to 5\n")?,
        }
    };
    let preset = provider.preset();
    let base_url = if provider == ProviderArg::Compatible {
        required(
            input,
            "Base URL (OpenAI-compatible, usually ending in /v1)",
            "",
        )?
    } else {
        question(input, "Base URL", preset.base_url)?
    };
    let model = required(input, "Model", preset.model)?;
    let key_env = if provider == ProviderArg::Ollama {
        String::new()
    } else {
        let default = if preset.key_env.is_empty() {
            "none"
        } else {
            preset.key_env
        };
        let answer = question(
            input,
            "Environment variable holding the API key (none: no key)",
            default,
        )?;
        if answer == "none" {
            String::new()
        } else {
            answer
        }
    };
    checked(Choice {
        kind: preset.kind,
        base_url,
        model,
        key_env,
    })
}

fn required(input: &mut impl BufRead, label: &str, default: &str) -> Result<String> {
    loop {
        let answer = question(input, label, default)?;
        if !answer.is_empty() {
            return Ok(answer);
        }
        prompt_line("  an answer is needed here\n")?;
    }
}

/// Asks `label [default]: ` on stderr; the trimmed answer, or the default for an empty line.
fn question(input: &mut impl BufRead, label: &str, default: &str) -> Result<String> {
    if default.is_empty() {
        prompt_line(&format!("{label}: "))?;
    } else {
        prompt_line(&format!("{label} [{default}]: "))?;
    }
    let mut line = String::new();
    let read = input
        .read_line(&mut line)
        .context("cannot read the answer")?;
    if read == 0 {
        bail!("no answer (end of input): nothing was written");
    }
    let answer = line.trim();
    Ok(if answer.is_empty() {
        default.to_owned()
    } else {
        answer.to_owned()
    })
}

fn prompt_line(text: &str) -> Result<()> {
    let mut err = std::io::stderr().lock();
    err.write_all(text.as_bytes())
        .and_then(|()| err.flush())
        .context("cannot write the question")
}

/// One cheap request with the key: `GET /v1/models` (free on every provider). A refused key, an
/// unset variable or an unreachable server is an error (nothing is written); a model the list
/// lacks is said, not refused (lists can be partial).
pub async fn check_key(choice: &Choice) -> Result<()> {
    let key = if choice.key_env.is_empty() {
        None
    } else {
        match std::env::var(&choice.key_env) {
            Ok(k) if !k.trim().is_empty() => Some(k),
            _ => bail!(
                "${var} is not set: export {var}=<your key> and run this again (or pass \
                 --no-check to write the files without checking)",
                var = choice.key_env
            ),
        }
    };
    let url = match choice.kind {
        ProviderKind::Anthropic => format!("{}/v1/models", choice.base_url),
        ProviderKind::Openai => format!("{}/models", choice.base_url),
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(15))
        .build()
        .context("cannot build an HTTP client")?;
    let mut request = client.get(&url);
    if let Some(key) = &key {
        request = match choice.kind {
            ProviderKind::Anthropic => request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            ProviderKind::Openai => request.bearer_auth(key),
        };
    }
    let response = request.send().await.map_err(|e| {
        anyhow::anyhow!(
            "cannot reach {url} ({}): check the base URL and that the server runs (or pass \
             --no-check)",
            short_reason(&e)
        )
    })?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        if key.is_none() {
            bail!(
                "{url} wants an API key (HTTP {}): name its variable",
                status.as_u16()
            );
        }
        bail!(
            "{url} refused the key in ${} (HTTP {}): check the key",
            choice.key_env,
            status.as_u16()
        );
    }
    if !status.is_success() {
        bail!(
            "{url} answered HTTP {}: check the base URL (or pass --no-check)",
            status.as_u16()
        );
    }
    let listed: Vec<String> = response
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|v| {
            v["data"].as_array().map(|models| {
                models
                    .iter()
                    .filter_map(|m| m["id"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    match &key {
        Some(_) => say(format!(
            "checked: {url} accepts the key in ${}",
            choice.key_env
        )),
        None => say(format!("checked: {url} answers")),
    }
    if !listed.is_empty() && !listed.iter().any(|m| m == &choice.model) {
        say(format!(
            "note: {} is not among the {} models it lists; check the name (Ollama: `ollama \
             pull {}`)",
            choice.model,
            listed.len(),
            choice.model
        ));
    }
    Ok(())
}

/// The transport error without the URL reqwest repeats.
fn short_reason(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    }
}

/// `example` with its `[provider]` kind, base_url, model and api_key_env lines set to `choice`.
pub fn agent_toml(example: &str, choice: &Choice) -> Result<String> {
    let kind = match choice.kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    };
    let mut text = example.to_owned();
    for (key, value) in [
        ("kind", kind),
        ("base_url", choice.base_url.as_str()),
        ("model", choice.model.as_str()),
        ("api_key_env", choice.key_env.as_str()),
    ] {
        text = set_provider_line(&text, key, value)?;
    }
    Ok(text)
}

/// Replaces the first uncommented `key = …` line after `[provider]` (before the next table).
fn set_provider_line(text: &str, key: &str, value: &str) -> Result<String> {
    let mut out = Vec::new();
    let mut in_provider = false;
    let mut done = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            in_provider = trimmed.starts_with("[provider]");
        }
        let is_key = trimmed
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if in_provider && !done && is_key {
            out.push(format!(
                "{key} = {}\n",
                toml::Value::String(value.to_owned())
            ));
            done = true;
        } else {
            out.push(line.to_owned());
        }
    }
    if !done {
        bail!("agent.toml.example has no `{key} =` line under [provider]");
    }
    Ok(out.concat())
}

#[cfg(test)]
#[path = "init_provider_tests.rs"]
mod tests;
