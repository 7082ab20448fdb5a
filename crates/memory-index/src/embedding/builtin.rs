//! The `builtin` backend: a static model distilled from all-MiniLM-L6-v2, run with `model2vec-rs`.
//!
//! A static model looks every token up in a table and averages the vectors: no transformer, no GPU,
//! no network. The files live in `models/minilm-l6-static/` (see its `PROVENANCE.md`). With the
//! `builtin-model` feature they are compiled into the binary; without it they are read from the
//! repository at run time. Either way the model is loaded once per process, on first use, and
//! shared by every [`BuiltinEmbedder`].

use std::sync::{Mutex, OnceLock};

use async_trait::async_trait;
use model2vec_rs::model::StaticModel;

use super::{EmbedError, Embedder};

/// Vector size of the shipped model.
pub const DIMENSIONS: usize = 384;

/// Names the model, its size, its storage type and the first bytes of the sha256 of its
/// `model.safetensors` (listed in `PROVENANCE.md`; a test keeps the two in step). Rebuilding the
/// artefact changes the id, so the store re-indexes instead of mixing vectors of two models.
pub const BUILTIN_MODEL_ID: &str = "builtin:minilm-l6-static-384-i8-4ff6bbae";

/// Texts longer than this many tokens are truncated (the model's own limit).
const MAX_TOKENS: usize = 512;

/// The shared model, set by the first successful load.
static MODEL: OnceLock<StaticModel> = OnceLock::new();
/// Serialises loads so that concurrent first users load the model once.
static LOADING: Mutex<()> = Mutex::new(());

/// Embeds with the shipped static model (384 dimensions, unit-length vectors).
#[derive(Debug, Clone)]
pub struct BuiltinEmbedder {
    batch_size: usize,
}

impl BuiltinEmbedder {
    /// Checks that the model files are present (cheap; the model loads on first use).
    /// `batch_size` is the number of texts encoded per chunk.
    pub fn new(batch_size: usize) -> Result<Self, EmbedError> {
        files::check_present()?;
        Ok(Self {
            batch_size: batch_size.max(1),
        })
    }

    /// Loads the model now, off the async threads, so that the first search does not wait.
    pub async fn preload(&self) -> Result<(), EmbedError> {
        tokio::task::spawn_blocking(|| shared_model().map(|_| ()))
            .await
            .map_err(|e| EmbedError::Internal(format!("model loading task failed: {e}")))?
    }

    /// The vectors for `texts`, computed on the calling thread (for benchmarks and blocking code;
    /// async callers use [`Embedder::embed`]).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = shared_model()?;
        let vectors = model.encode_with_args(texts, Some(MAX_TOKENS), self.batch_size);
        for v in &vectors {
            if v.len() != DIMENSIONS {
                return Err(EmbedError::Dimensions {
                    expected: DIMENSIONS,
                    got: v.len(),
                });
            }
        }
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for BuiltinEmbedder {
    fn model_id(&self) -> &str {
        BUILTIN_MODEL_ID
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
            .await
            .map_err(|e| EmbedError::Internal(format!("builtin embedding task failed: {e}")))?
    }
}

/// The process-wide model, loading it on first call. Blocks: call from a blocking thread.
fn shared_model() -> Result<&'static StaticModel, EmbedError> {
    if let Some(model) = MODEL.get() {
        return Ok(model);
    }
    // A poisoned lock only means another loader panicked; the model slot is still consistent.
    let _guard = LOADING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(model) = MODEL.get() {
        return Ok(model);
    }
    let started = std::time::Instant::now();
    let model = files::load()?;
    if model.dim() != DIMENSIONS {
        return Err(EmbedError::Load(format!(
            "the builtin model has {} dimensions, expected {DIMENSIONS}",
            model.dim()
        )));
    }
    tracing::info!(
        model_id = BUILTIN_MODEL_ID,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "loaded the builtin embedding model"
    );
    Ok(MODEL.get_or_init(|| model))
}

/// The model files compiled into the binary.
#[cfg(feature = "builtin-model")]
mod files {
    use model2vec_rs::model::StaticModel;

    use crate::embedding::EmbedError;

    macro_rules! model_file {
        ($name:literal) => {
            include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../models/minilm-l6-static/",
                $name
            ))
        };
    }

    static TOKENIZER: &[u8] = model_file!("tokenizer.json");
    static WEIGHTS: &[u8] = model_file!("model.safetensors");
    static CONFIG: &[u8] = model_file!("config.json");

    pub(super) fn check_present() -> Result<(), EmbedError> {
        Ok(())
    }

    pub(super) fn load() -> Result<StaticModel, EmbedError> {
        StaticModel::from_bytes(TOKENIZER, WEIGHTS, CONFIG, None).map_err(|e| {
            tracing::error!(error = %format!("{e:#}"), "embedded builtin model failed to load");
            EmbedError::Load("the embedded builtin model is damaged".to_owned())
        })
    }
}

/// The model files read from the repository at run time (builds without `builtin-model`).
#[cfg(not(feature = "builtin-model"))]
mod files {
    use std::path::PathBuf;

    use model2vec_rs::model::StaticModel;

    use crate::embedding::EmbedError;

    const FILES: [&str; 3] = ["tokenizer.json", "model.safetensors", "config.json"];

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/minilm-l6-static")
    }

    fn missing() -> EmbedError {
        EmbedError::Load(
            "the builtin model files (models/minilm-l6-static/) are missing: build with the \
             `builtin-model` feature from a full checkout, or run scripts/build-embedding-model.sh"
                .to_owned(),
        )
    }

    pub(super) fn check_present() -> Result<(), EmbedError> {
        let dir = dir();
        match FILES.iter().find(|f| !dir.join(f).is_file()) {
            None => Ok(()),
            Some(file) => {
                tracing::error!(dir = %dir.display(), file, "builtin model file is missing");
                Err(missing())
            }
        }
    }

    pub(super) fn load() -> Result<StaticModel, EmbedError> {
        check_present()?;
        let dir = dir();
        StaticModel::from_pretrained(&dir, None, None, None).map_err(|e| {
            tracing::error!(dir = %dir.display(), error = %format!("{e:#}"), "builtin model failed to load");
            EmbedError::Load("the builtin model files in models/minilm-l6-static/ are damaged".to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[tokio::test]
    async fn loads_and_embeds_unit_vectors_with_semantic_similarity() {
        let e = BuiltinEmbedder::new(64).unwrap();
        e.preload().await.unwrap();
        let input = texts(&[
            "The user's name is Shantanu",
            "what is my name",
            "I like chocolate cake",
            "",
        ]);
        let v = e.embed(&input).await.unwrap();
        assert_eq!(v.len(), 4);
        for x in &v[..3] {
            assert_eq!(x.len(), 384);
            assert!((dot(x, x) - 1.0).abs() < 1e-4, "not unit length");
        }
        assert!(v[3].iter().all(|x| x.is_finite()));
        let (name, question, cake) = (&v[0], &v[1], &v[2]);
        assert!(
            dot(name, question) > dot(name, cake),
            "name·question {} <= name·cake {}",
            dot(name, question),
            dot(name, cake)
        );
        assert_eq!(e.model_id(), BUILTIN_MODEL_ID);
        assert_eq!(e.dimensions(), 384);
    }

    #[tokio::test]
    async fn deterministic_and_independent_of_batching() {
        let input = texts(&[
            "alpha beta",
            "gamma",
            "Delta epsilon zeta",
            "the quick brown fox",
        ]);
        let one = BuiltinEmbedder::new(1)
            .unwrap()
            .embed(&input)
            .await
            .unwrap();
        let all = BuiltinEmbedder::new(64)
            .unwrap()
            .embed(&input)
            .await
            .unwrap();
        assert_eq!(one, all);
        assert_eq!(
            all,
            BuiltinEmbedder::new(64)
                .unwrap()
                .embed(&input)
                .await
                .unwrap()
        );
        assert!(
            BuiltinEmbedder::new(8)
                .unwrap()
                .embed(&[])
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn model_id_names_the_shipped_artefact() {
        let provenance = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/minilm-l6-static/PROVENANCE.md"
        ))
        .unwrap();
        let sha = provenance
            .lines()
            .find_map(|l| l.strip_suffix("  model.safetensors"))
            .expect("PROVENANCE.md lists the sha256 of model.safetensors");
        let dtype = if provenance.contains("- dtype: `int8`") {
            "i8"
        } else {
            "f16"
        };
        assert_eq!(
            BUILTIN_MODEL_ID,
            format!("builtin:minilm-l6-static-384-{dtype}-{}", &sha[..8]),
            "the artefact changed: update BUILTIN_MODEL_ID"
        );
    }
}
