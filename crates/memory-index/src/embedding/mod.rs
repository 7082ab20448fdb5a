//! Embedding backends: text in, unit-length vectors out.
//!
//! Every backend names its model with a stable [`Embedder::model_id`]; the store records that id
//! with each vector and never ranks vectors of two models together.

mod builtin;
mod hash;
mod openai;

pub use builtin::{BUILTIN_MODEL_ID, BuiltinEmbedder};
pub use hash::HashEmbedder;
pub use openai::{OpenAiEmbedder, OpenAiSettings};

use std::sync::Arc;

use async_trait::async_trait;
use types::{EmbeddingBackend, EmbeddingConfig};

/// Why embedding failed. Messages are safe to show: no keys, no host paths.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding model could not be loaded: {0}")]
    Load(String),
    /// Network trouble, a timeout, rate limiting or a server error: worth retrying later.
    #[error("embedding endpoint failed: {0}")]
    Endpoint(String),
    /// The configuration is wrong (missing or rejected key, unknown model or URL, a server that
    /// does not speak the embeddings API): retrying will not help.
    #[error("embedding is misconfigured: {0}")]
    Config(String),
    #[error("embedding returned {got} dimensions, expected {expected}")]
    Dimensions { expected: usize, got: usize },
    #[error("embedding backend `{0}` is not available in this build")]
    Unavailable(&'static str),
    /// The embedding task itself failed (it panicked or was cancelled).
    #[error("embedding task failed: {0}")]
    Internal(String),
}

impl EmbedError {
    /// Worth retrying later (network trouble), as opposed to a broken configuration.
    pub fn is_retryable(&self) -> bool {
        matches!(self, EmbedError::Endpoint(_))
    }
}

/// Turns texts into vectors of `dimensions()` floats with unit L2 norm (so cosine = dot product).
///
/// Implementations do CPU-heavy or network work inside `embed`; local backends move their work off
/// the async threads themselves.
#[async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug + 'static {
    /// Stable identifier of the model and its settings, stored with every vector.
    fn model_id(&self) -> &str;
    fn dimensions(&self) -> usize;
    /// One vector per input text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Builds the backend named in the configuration.
///
/// Cheap and synchronous: the builtin model is loaded on first use (or by
/// [`BuiltinEmbedder::preload`]), and the `openai` backend only reads its API key here.
pub fn from_config(config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config.backend {
        EmbeddingBackend::Hash => Ok(Arc::new(HashEmbedder::new(
            config
                .dimensions
                .unwrap_or(EmbeddingConfig::DEFAULT_HASH_DIMENSIONS),
        ))),
        EmbeddingBackend::Builtin => {
            if let Some(d) = config.dimensions.filter(|d| *d != builtin::DIMENSIONS) {
                return Err(EmbedError::Config(format!(
                    "the builtin model has {} dimensions, but memory.embedding.dimensions is {d}: \
                     remove the setting",
                    builtin::DIMENSIONS
                )));
            }
            Ok(Arc::new(BuiltinEmbedder::new(config.batch_size)?))
        }
        EmbeddingBackend::Openai => Ok(Arc::new(OpenAiEmbedder::new(
            OpenAiSettings::from_config(config)?,
        )?)),
    }
}

/// Scales `v` to unit length in place; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_builds_every_backend() {
        let check = |config: EmbeddingConfig, expected: Result<&str, &str>| {
            let got = from_config(&config)
                .map(|e| e.model_id().to_owned())
                .map_err(|e| e.to_string());
            match (&got, expected) {
                (Ok(id), Ok(want)) => assert_eq!(id, want),
                (Err(msg), Err(want)) => assert!(msg.contains(want), "{msg:?} lacks {want:?}"),
                _ => panic!("{config:?}: got {got:?}, expected {expected:?}"),
            }
        };
        check(EmbeddingConfig::default(), Ok(BUILTIN_MODEL_ID));
        check(
            EmbeddingConfig {
                dimensions: Some(256),
                ..Default::default()
            },
            Err("the builtin model has 384 dimensions"),
        );
        check(
            EmbeddingConfig {
                backend: EmbeddingBackend::Hash,
                ..Default::default()
            },
            Ok("hash-v1-256"),
        );
        let openai = EmbeddingConfig {
            backend: EmbeddingBackend::Openai,
            base_url: Some("http://127.0.0.1:11434/v1".to_owned()),
            model: Some("nomic-embed-text".to_owned()),
            ..Default::default()
        };
        check(
            openai.clone(),
            Ok("openai:nomic-embed-text@127.0.0.1:11434"),
        );
        check(
            EmbeddingConfig {
                base_url: None,
                ..openai
            },
            Err("needs memory.embedding.base_url"),
        );
    }
}
