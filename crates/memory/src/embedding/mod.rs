//! Embedding backends: text in, unit-length vectors out.
//!
//! Every backend names its model with a stable [`Embedder::model_id`]; the store records that id
//! with each vector and never ranks vectors of two models together.

mod hash;

pub use hash::HashEmbedder;

use std::sync::Arc;

use async_trait::async_trait;
use types::{EmbeddingBackend, EmbeddingConfig};

/// Why embedding failed. Messages are safe to show: no keys, no host paths.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding model could not be loaded: {0}")]
    Load(String),
    #[error("embedding endpoint failed: {0}")]
    Endpoint(String),
    #[error("embedding returned {got} dimensions, expected {expected}")]
    Dimensions { expected: usize, got: usize },
    #[error("embedding backend `{0}` is not available in this build")]
    Unavailable(&'static str),
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
pub fn from_config(config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config.backend {
        EmbeddingBackend::Hash => Ok(Arc::new(HashEmbedder::new(
            config.dimensions.unwrap_or(EmbeddingConfig::DEFAULT_HASH_DIMENSIONS),
        ))),
        EmbeddingBackend::Builtin => Err(EmbedError::Unavailable("builtin")),
        EmbeddingBackend::Openai => Err(EmbedError::Unavailable("openai")),
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
