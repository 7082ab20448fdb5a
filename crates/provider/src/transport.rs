//! The HTTP side shared by both wire formats: headers, timeouts, retries, status → error mapping.

use std::future::Future;
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Response, StatusCode};

use crate::error::TimeoutPhase;
use crate::provider::OnRetry;
use crate::retry::{self, RetryPolicy};
use crate::{ProviderError, RetryNotice};

/// One endpoint of one provider: where to POST, with which headers, and how patiently.
#[derive(Debug)]
pub(crate) struct Transport {
    pub client: reqwest::Client,
    /// The full URL requests go to.
    pub endpoint: String,
    /// `provider.base_url`, for error messages.
    pub base_url: String,
    pub model: String,
    pub headers: HeaderMap,
    /// The API key, only so that it can be scrubbed from error bodies.
    pub secret: Option<String>,
    pub env_var: Option<String>,
    pub retry: RetryPolicy,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Transport {
    /// POSTs a non-streaming request and parses the JSON reply, retrying transient failures
    /// (including a body cut off mid-way: nothing has reached the caller yet).
    pub async fn post_json(
        &self,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, ProviderError> {
        self.with_retries(&|_| {}, || async {
            let response = self
                .request(body)
                .timeout(self.request_timeout)
                .send()
                .await
                .map_err(|e| self.map_error(e))?;
            let response = self.check_status(response).await?;
            let bytes = response.bytes().await.map_err(|e| self.map_error(e))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| ProviderError::bad_response(format!("the reply is not JSON ({e})")))
        })
        .await
    }

    /// POSTs a streaming request and returns the response once its status is a success. Retries
    /// happen only here, before any stream data has been handed to the caller.
    pub async fn post_stream(
        &self,
        body: &serde_json::Value,
        on_retry: OnRetry<'_>,
    ) -> Result<Response, ProviderError> {
        self.with_retries(on_retry, || async {
            let response = tokio::time::timeout(self.request_timeout, self.request(body).send())
                .await
                .map_err(|_| self.timeout(TimeoutPhase::Response, self.request_timeout))?
                .map_err(|e| self.map_error(e))?;
            self.check_status(response).await
        })
        .await
    }

    pub fn timeout(&self, phase: TimeoutPhase, after: Duration) -> ProviderError {
        ProviderError::Timeout {
            phase,
            base_url: self.base_url.clone(),
            after,
        }
    }

    pub fn interrupted(
        &self,
        reason: impl Into<String>,
        source: Option<reqwest::Error>,
    ) -> ProviderError {
        ProviderError::Interrupted {
            base_url: self.base_url.clone(),
            reason: reason.into(),
            source,
        }
    }

    fn request(&self, body: &serde_json::Value) -> reqwest::RequestBuilder {
        self.client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .json(body)
    }

    async fn with_retries<T, F, Fut>(
        &self,
        on_retry: OnRetry<'_>,
        mut attempt: F,
    ) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut retries = 0;
        let mut timeouts = 0;
        loop {
            tracing::debug!(endpoint = %self.endpoint, model = %self.model, retries, "LLM request");
            let err = match attempt().await {
                Ok(value) => return Ok(value),
                Err(err) => err,
            };
            if matches!(err, ProviderError::Timeout { .. }) {
                timeouts += 1;
            }
            if !retry::worth_retrying(&err, retries, timeouts, self.retry.max_retries) {
                return Err(err);
            }
            let Some(wait) = self
                .retry
                .delay(retries, err.retry_after(), retry::jitter())
            else {
                return Err(err);
            };
            tracing::warn!(error = %err, wait_ms = wait.as_millis() as u64, retry = retries + 1,
                "LLM request failed; retrying");
            on_retry(RetryNotice {
                attempt: retries + 2,
                max_attempts: self.retry.max_retries + 1,
                wait,
                reason: err.short_reason(),
            });
            tokio::time::sleep(wait).await;
            retries += 1;
        }
    }

    async fn check_status(&self, response: Response) -> Result<Response, ProviderError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(retry::parse_retry_after);
        let body = response.text().await.unwrap_or_default();
        let detail = self.scrub(&error_detail(&body));
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ProviderError::Auth {
                status: status.as_u16(),
                env_var: self.env_var.clone(),
                detail,
            },
            StatusCode::NOT_FOUND => ProviderError::NotFound {
                url: self.endpoint.clone(),
                model: self.model.clone(),
                detail,
            },
            StatusCode::TOO_MANY_REQUESTS => ProviderError::RateLimited {
                retry_after,
                detail,
            },
            s if s.is_server_error() || s == StatusCode::REQUEST_TIMEOUT => ProviderError::Server {
                status: s.as_u16(),
                detail,
            },
            s => ProviderError::BadRequest {
                status: s.as_u16(),
                detail,
            },
        })
    }

    pub fn map_error(&self, e: reqwest::Error) -> ProviderError {
        if e.is_timeout() && !e.is_connect() {
            self.timeout(TimeoutPhase::Response, self.request_timeout)
        } else if e.is_body() || e.is_decode() {
            self.interrupted(root_cause(&e), Some(e))
        } else if e.is_builder() {
            ProviderError::Http { source: e }
        } else {
            ProviderError::Unreachable {
                base_url: self.base_url.clone(),
                reason: root_cause(&e),
                source: Some(e),
            }
        }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(secret) if !secret.is_empty() => text.replace(secret.as_str(), "***"),
            _ => text.to_owned(),
        }
    }
}

/// The innermost cause's message ("Connection refused (os error 111)").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// The useful part of an error body: `error.message` (OpenAI, Anthropic), `error` or `message`
/// as a string, else the raw text, shortened.
fn error_detail(body: &str) -> String {
    const MAX: usize = 300;
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    });
    let text = message.unwrap_or_else(|| body.trim().to_owned());
    if text.is_empty() {
        return "(empty body)".into();
    }
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details() {
        let check = |body: &str, expected: &str| assert_eq!(error_detail(body), expected);
        check(
            r#"{"error":{"message":"bad model","type":"x"}}"#,
            "bad model",
        );
        check(
            r#"{"type":"error","error":{"type":"not_found_error","message":"nope"}}"#,
            "nope",
        );
        check(r#"{"error":"model not found"}"#, "model not found");
        check("  plain text\n", "plain text");
        check("", "(empty body)");
        assert_eq!(error_detail(&"x".repeat(400)).chars().count(), 301);
    }
}
