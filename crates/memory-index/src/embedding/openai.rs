//! The `openai` backend: any OpenAI-compatible `POST {base_url}/embeddings` endpoint
//! (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, ...).

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use types::EmbeddingConfig;

use super::{EmbedError, Embedder, normalize};

/// How long one embeddings request may take, connection included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest server error message quoted in an [`EmbedError`].
const MAX_QUOTED_MESSAGE: usize = 200;

/// Everything the `openai` backend needs, already resolved (the key read from its variable).
#[derive(Clone)]
pub struct OpenAiSettings {
    /// e.g. `https://api.openai.com/v1`; `/embeddings` is appended.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// The variable the key came from, named in error messages.
    pub api_key_env: Option<String>,
    /// Texts per request.
    pub batch_size: usize,
    /// Expected vector size; when `None`, the first response decides.
    pub dimensions: Option<usize>,
    pub request_timeout: Duration,
}

impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("batch_size", &self.batch_size)
            .field("dimensions", &self.dimensions)
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

impl OpenAiSettings {
    /// Resolves `[memory.embedding]`, reading the API key from the variable `api_key_env` names.
    pub fn from_config(config: &EmbeddingConfig) -> Result<Self, EmbedError> {
        let base_url = config
            .base_url
            .clone()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                EmbedError::Config(
                "the openai backend needs memory.embedding.base_url, e.g. https://api.openai.com/v1"
                    .to_owned(),
            )
            })?;
        let model = config
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                EmbedError::Config(
                    "the openai backend needs memory.embedding.model, e.g. text-embedding-3-small"
                        .to_owned(),
                )
            })?;
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                _ => {
                    return Err(EmbedError::Config(format!(
                        "the environment variable {var} (memory.embedding.api_key_env) is not set"
                    )));
                }
            },
        };
        Ok(Self {
            base_url,
            model,
            api_key,
            api_key_env: config.api_key_env.clone(),
            batch_size: config.batch_size,
            dimensions: config.dimensions,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        })
    }
}

/// Embeds through an OpenAI-compatible HTTP endpoint, `batch_size` texts per request.
///
/// When no dimension is configured, [`Embedder::dimensions`] is 0 until the first response fixes
/// it (see [`OpenAiEmbedder::probe`]); every later response must match.
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    url: String,
    /// `host[:port]` of the endpoint, for messages and the model id.
    host: String,
    settings: OpenAiSettings,
    dimensions: OnceLock<usize>,
    model_id: String,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &self.url)
            .field("settings", &self.settings)
            .field("dimensions", &self.dimensions.get())
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: String,
}

impl OpenAiEmbedder {
    pub fn new(settings: OpenAiSettings) -> Result<Self, EmbedError> {
        let parsed = reqwest::Url::parse(&settings.base_url).map_err(|_| {
            EmbedError::Config("memory.embedding.base_url is not a valid URL".to_owned())
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(EmbedError::Config(
                "memory.embedding.base_url must start with http:// or https://".to_owned(),
            ));
        }
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => {
                return Err(EmbedError::Config(
                    "memory.embedding.base_url has no host".to_owned(),
                ));
            }
        };
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(settings.request_timeout)
            .build()
            .map_err(|e| EmbedError::Load(format!("HTTP client could not be built: {e}")))?;
        let url = format!("{}/embeddings", settings.base_url.trim_end_matches('/'));
        let model_id = format!("openai:{}@{host}", settings.model);
        let dimensions = OnceLock::new();
        if let Some(d) = settings.dimensions {
            let _ = dimensions.set(d);
        }
        let settings = OpenAiSettings {
            batch_size: settings.batch_size.max(1),
            ..settings
        };
        Ok(Self {
            client,
            url,
            host,
            settings,
            dimensions,
            model_id,
        })
    }

    /// Embeds one short text to learn (or check) the endpoint's vector size.
    pub async fn probe(&self) -> Result<usize, EmbedError> {
        let v = self.embed(&["dimension probe".to_owned()]).await?;
        Ok(v.first().map_or(0, Vec::len))
    }

    async fn embed_batch(&self, batch: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut request = self.client.post(&self.url).json(&EmbeddingsRequest {
            model: &self.settings.model,
            input: batch,
        });
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(&e))?;
        if !status.is_success() {
            return Err(self.status_error(status, &body));
        }
        let parsed: EmbeddingsResponse = serde_json::from_slice(&body).map_err(|e| {
            tracing::warn!(host = %self.host, error = %e, "embeddings response is not OpenAI-shaped");
            EmbedError::Config(format!(
                "{} did not answer with OpenAI-style embeddings (`data[].embedding`): check \
                 memory.embedding.base_url",
                self.host
            ))
        })?;
        self.order_and_check(batch.len(), parsed.data)
    }

    /// Puts the vectors in input order and checks their count, size and values.
    fn order_and_check(
        &self,
        expected: usize,
        mut data: Vec<EmbeddingItem>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        data.sort_by_key(|item| item.index);
        let indices_ok =
            data.len() == expected && data.iter().enumerate().all(|(i, d)| d.index == i);
        if !indices_ok {
            return Err(EmbedError::Config(format!(
                "{} returned {} embeddings for {expected} texts",
                self.host,
                data.len()
            )));
        }
        let mut out = Vec::with_capacity(expected);
        for item in data {
            let mut v = item.embedding;
            let want = *self.dimensions.get_or_init(|| v.len());
            if v.len() != want || v.is_empty() {
                return Err(EmbedError::Dimensions {
                    expected: want,
                    got: v.len(),
                });
            }
            if !v.iter().all(|x| x.is_finite()) {
                return Err(EmbedError::Endpoint(format!(
                    "{} returned an embedding with non-finite values",
                    self.host
                )));
            }
            normalize(&mut v);
            out.push(v);
        }
        Ok(out)
    }

    fn transport_error(&self, e: &reqwest::Error) -> EmbedError {
        tracing::warn!(host = %self.host, error = %e, "embeddings request failed");
        let host = &self.host;
        let what = if e.is_timeout() {
            format!(
                "{host} did not answer within {} s",
                self.settings.request_timeout.as_secs_f32()
            )
        } else if e.is_connect() {
            format!(
                "could not reach {host}: is the server running and memory.embedding.base_url right?"
            )
        } else {
            format!("the request to {host} failed before a complete answer")
        };
        EmbedError::Endpoint(what)
    }

    fn status_error(&self, status: StatusCode, body: &[u8]) -> EmbedError {
        let host = &self.host;
        let code = status.as_u16();
        let quoted = self.server_message(body);
        tracing::warn!(host = %host, status = code, message = %quoted, "embeddings request rejected");
        let suffix = if quoted.is_empty() {
            String::new()
        } else {
            format!(": {quoted}")
        };
        match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                let hint = match &self.settings.api_key_env {
                    Some(var) => format!("check the key in the environment variable {var}"),
                    None => "set memory.embedding.api_key_env to the variable holding the key"
                        .to_owned(),
                };
                EmbedError::Config(format!("{host} refused the API key (HTTP {code}): {hint}"))
            }
            StatusCode::NOT_FOUND => EmbedError::Config(format!(
                "{host} answered HTTP 404: check memory.embedding.base_url (it should end before \
                 /embeddings, e.g. .../v1) and memory.embedding.model (`{}`){suffix}",
                self.settings.model
            )),
            StatusCode::TOO_MANY_REQUESTS | StatusCode::REQUEST_TIMEOUT => {
                EmbedError::Endpoint(format!("{host} is rate limiting (HTTP {code}){suffix}"))
            }
            s if s.is_server_error() => {
                EmbedError::Endpoint(format!("{host} had a server error (HTTP {code}){suffix}"))
            }
            _ => EmbedError::Config(format!("{host} rejected the request (HTTP {code}){suffix}")),
        }
    }

    /// The server's `error.message`, shortened, with the API key masked should it be echoed.
    fn server_message(&self, body: &[u8]) -> String {
        let Ok(parsed) = serde_json::from_slice::<ErrorResponse>(body) else {
            return String::new();
        };
        let mut message = parsed.error.message;
        if let Some(key) = self.settings.api_key.as_deref().filter(|k| k.len() >= 4) {
            message = message.replace(key, "<redacted>");
        }
        if message.chars().count() > MAX_QUOTED_MESSAGE {
            message = message.chars().take(MAX_QUOTED_MESSAGE).collect::<String>() + "…";
        }
        message
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions.get().copied().unwrap_or(0)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.settings.batch_size) {
            out.extend(self.embed_batch(batch).await?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
