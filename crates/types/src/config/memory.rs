//! `[memory]` and `[retrieval]`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ConfigError;

/// Where the memory database lives: `"auto"` (the user's `.oxydra/memory.db`) or a path; a
/// relative path resolves against the user's workspace root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum DbPath {
    #[default]
    Auto,
    Path(PathBuf),
}

impl From<String> for DbPath {
    fn from(value: String) -> Self {
        if value.is_empty() || value == "auto" {
            DbPath::Auto
        } else {
            DbPath::Path(value.into())
        }
    }
}

impl From<DbPath> for String {
    fn from(value: DbPath) -> Self {
        value.to_string()
    }
}

impl fmt::Display for DbPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbPath::Auto => f.write_str("auto"),
            DbPath::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

impl DbPath {
    /// The database file for the user whose workspace root is `user_root`.
    pub fn resolve(&self, user_root: &Path) -> PathBuf {
        match self {
            DbPath::Auto => crate::WorkspacePaths::new(user_root).default_memory_db(),
            DbPath::Path(p) if p.is_absolute() => p.clone(),
            DbPath::Path(p) => user_root.join(p),
        }
    }
}

/// `[memory]`: the per-user store behind the memory tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Turn memory (and the memory tools) on or off.
    pub enabled: bool,
    pub db_path: DbPath,
    /// A libSQL server (`libsql://`, `http://` or `https://`); when set, `db_path` is unused.
    pub remote_url: Option<String>,
    /// Name of the environment variable holding the remote server's auth token.
    pub auth_token_env: Option<String>,
    /// With `remote_url`: keep an embedded replica at `db_path`, synced from the server. Reads
    /// are served from the local file; writes go to the server.
    pub replica: bool,
    pub embedding: EmbeddingConfig,
    /// Days a deleted note stays restorable before the sweeper purges it (0..=3650).
    pub tombstone_retention_days: u32,
    /// Cosine similarity (0.5..=1.0) at or above which a new note is compared with a stored one
    /// as a possible restatement; one that states the same fact (no other number, name,
    /// negation, person or word in place) is a near-duplicate: the save is refused (listing the
    /// similar notes) unless the model insists.
    pub duplicate_similarity: f32,
    /// `[memory.capture]`: what the background capture call does after a turn.
    pub capture: super::CaptureConfig,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            db_path: DbPath::Auto,
            remote_url: None,
            auth_token_env: None,
            replica: false,
            embedding: EmbeddingConfig::default(),
            tombstone_retention_days: 30,
            duplicate_similarity: 0.85,
            capture: super::CaptureConfig::default(),
        }
    }
}

impl MemoryConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.remote_url {
            let ok = ["libsql://", "http://", "https://"]
                .iter()
                .any(|s| url.starts_with(s));
            if !ok {
                return Err(ConfigError::new(
                    "memory.remote_url",
                    "must start with libsql://, http:// or https://",
                ));
            }
        }
        if self.replica && self.remote_url.is_none() {
            return Err(ConfigError::new(
                "memory.replica",
                "needs memory.remote_url (the primary the replica syncs from)",
            ));
        }
        if let Some(var) = &self.auth_token_env {
            validate_env_name("memory.auth_token_env", var)?;
        }
        if self.tombstone_retention_days > 3650 {
            return Err(ConfigError::new(
                "memory.tombstone_retention_days",
                "must be at most 3650 (ten years)",
            ));
        }
        if !(0.5..=1.0).contains(&self.duplicate_similarity) {
            return Err(ConfigError::new(
                "memory.duplicate_similarity",
                "must be between 0.5 and 1.0",
            ));
        }
        self.capture.validate()?;
        self.embedding.validate()
    }
}

/// Which embedding model turns text into vectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbeddingBackend {
    /// The static model shipped inside the binary (no download, no API).
    #[default]
    Builtin,
    /// Deterministic feature hashing: tiny and fast, keyword-like quality.
    Hash,
    /// An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM, ...).
    Openai,
}

/// `[memory.embedding]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub backend: EmbeddingBackend,
    /// Vector size for `hash` (default 256); for `openai` (required), the size the endpoint
    /// returns (checked on every response).
    pub dimensions: Option<usize>,
    /// For `openai`: e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// For `openai`: the model name, e.g. `text-embedding-3-small` or `nomic-embed-text`.
    pub model: Option<String>,
    /// For `openai`: environment variable holding the API key (none for local servers).
    pub api_key_env: Option<String>,
    /// Texts per embedding request or batch.
    pub batch_size: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            backend: EmbeddingBackend::Builtin,
            dimensions: None,
            base_url: None,
            model: None,
            api_key_env: None,
            batch_size: 64,
        }
    }
}

impl EmbeddingConfig {
    pub const DEFAULT_HASH_DIMENSIONS: usize = 256;

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.dimensions.is_some_and(|d| !(8..=8192).contains(&d)) {
            return Err(ConfigError::new(
                "memory.embedding.dimensions",
                "must be between 8 and 8192",
            ));
        }
        if self.batch_size == 0 || self.batch_size > 2048 {
            return Err(ConfigError::new(
                "memory.embedding.batch_size",
                "must be between 1 and 2048",
            ));
        }
        if self.backend == EmbeddingBackend::Openai {
            match &self.base_url {
                Some(u) if u.starts_with("http://") || u.starts_with("https://") => {}
                _ => {
                    return Err(ConfigError::new(
                        "memory.embedding.base_url",
                        "the openai backend needs an http(s) base_url, e.g. http://127.0.0.1:11434/v1",
                    ));
                }
            }
            if self.dimensions.is_none() {
                return Err(ConfigError::new(
                    "memory.embedding.dimensions",
                    "the openai backend needs the vector size the model returns, e.g. 1536 for \
                     text-embedding-3-small or 768 for nomic-embed-text",
                ));
            }
            if self.model.as_deref().is_none_or(str::is_empty) {
                return Err(ConfigError::new(
                    "memory.embedding.model",
                    "the openai backend needs a model name, e.g. text-embedding-3-small",
                ));
            }
        }
        if let Some(var) = &self.api_key_env {
            validate_env_name("memory.embedding.api_key_env", var)?;
        }
        Ok(())
    }
}

/// `[retrieval]`: how hybrid search ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Results returned when a caller does not ask for a number.
    pub top_k: usize,
    /// Weight of the semantic (vector) leg in the fused score.
    pub vector_weight: f64,
    /// Weight of the keyword (BM25) leg in the fused score.
    pub fts_weight: f64,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        Self {
            top_k: 5,
            // LoCoMo (docs/benchmarks.md): 0.8 / 0.2 is the best raw-cosine split.
            vector_weight: 0.8,
            fts_weight: 0.2,
        }
    }
}

impl RetrievalConfig {
    pub const MAX_TOP_K: usize = 100;

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.top_k == 0 || self.top_k > Self::MAX_TOP_K {
            return Err(ConfigError::new(
                "retrieval.top_k",
                "must be between 1 and 100",
            ));
        }
        for (name, w) in [
            ("retrieval.vector_weight", self.vector_weight),
            ("retrieval.fts_weight", self.fts_weight),
        ] {
            if !w.is_finite() || w < 0.0 {
                return Err(ConfigError::new(name, "must be a finite number >= 0"));
            }
        }
        if self.vector_weight + self.fts_weight <= 0.0 {
            return Err(ConfigError::new(
                "retrieval.vector_weight",
                "vector_weight and fts_weight must not both be 0",
            ));
        }
        Ok(())
    }
}

pub(crate) fn validate_env_name(setting: &'static str, name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            setting,
            "must be an environment variable name like MY_API_KEY",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_path_resolution() {
        let root = Path::new("/srv/w/alice");
        let check = |raw: &str, expected: &str| {
            assert_eq!(
                DbPath::from(raw.to_owned()).resolve(root),
                PathBuf::from(expected),
                "{raw}"
            );
        };
        check("auto", "/srv/w/alice/.oxydra/memory.db");
        check("", "/srv/w/alice/.oxydra/memory.db");
        check("data/m.db", "/srv/w/alice/data/m.db");
        check("/var/m.db", "/var/m.db");
    }

    #[test]
    fn a_replica_needs_a_primary() {
        let replica_only = MemoryConfig {
            replica: true,
            ..MemoryConfig::default()
        };
        assert!(replica_only.validate().is_err());
        let with_primary = MemoryConfig {
            replica: true,
            remote_url: Some("https://db.example.org".into()),
            ..MemoryConfig::default()
        };
        assert!(with_primary.validate().is_ok());
    }

    #[test]
    fn retrieval_validation() {
        let check = |top_k, v, f, ok: bool| {
            let cfg = RetrievalConfig {
                top_k,
                vector_weight: v,
                fts_weight: f,
            };
            assert_eq!(cfg.validate().is_ok(), ok, "{cfg:?}");
        };
        check(5, 0.7, 0.3, true);
        check(0, 0.7, 0.3, false);
        check(101, 0.7, 0.3, false);
        check(5, 0.0, 0.0, false);
        check(5, -1.0, 1.0, false);
        check(5, f64::NAN, 1.0, false);
        check(5, 0.0, 1.0, true);
    }

    #[test]
    fn embedding_validation() {
        let openai = EmbeddingConfig {
            backend: EmbeddingBackend::Openai,
            ..Default::default()
        };
        assert_eq!(
            openai.validate().unwrap_err().setting,
            "memory.embedding.base_url"
        );
        let no_dims = EmbeddingConfig {
            base_url: Some("http://127.0.0.1:11434/v1".into()),
            model: Some("nomic-embed-text".into()),
            ..openai
        };
        assert_eq!(
            no_dims.validate().unwrap_err().setting,
            "memory.embedding.dimensions"
        );
        let ok = EmbeddingConfig {
            dimensions: Some(768),
            ..no_dims
        };
        assert!(ok.validate().is_ok());
    }
}
