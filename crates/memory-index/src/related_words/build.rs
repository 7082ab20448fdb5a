//! How the related-words table is computed from the builtin model: the example that writes
//! `data/related-words.txt` and the test that checks it against the model share this.
//!
//! The words are the vocabulary's listable whole words ([`super::listable`]); each one's vector is
//! the builtin embedder's for the word alone (its token's row, unit length). A word's neighbours
//! are the nearest other words by cosine, at least [`MIN_COSINE`], one per stem and none of its
//! own stem (a plural adds nothing the stemmer does not), at most [`NEIGHBOURS`].

use crate::embedding::{BuiltinEmbedder, EmbedError};
use crate::terms::term;

use super::{MIN_COSINE, NEIGHBOURS, listable};

/// The vocabulary's listable words, sorted, from the model's `tokenizer.json`.
pub fn vocabulary(tokenizer_json: &str) -> Result<Vec<String>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Tokenizer {
        model: Model,
    }
    #[derive(serde::Deserialize)]
    struct Model {
        vocab: std::collections::BTreeMap<String, u32>,
    }
    let tokenizer: Tokenizer = serde_json::from_str(tokenizer_json)?;
    Ok(tokenizer
        .model
        .vocab
        .into_keys()
        .filter(|w| listable(w))
        .collect())
}

/// The words with their vectors and stems, ready for [`Words::nearest`].
#[derive(Debug)]
pub struct Words {
    pub words: Vec<String>,
    stems: Vec<String>,
    /// Every word's unit vector, one after the other.
    vectors: Vec<f32>,
    dimensions: usize,
}

impl Words {
    /// Embeds every word with the builtin model.
    pub fn embed(words: Vec<String>) -> Result<Self, EmbedError> {
        let rows = BuiltinEmbedder::new(1024)?.embed_blocking(&words)?;
        let dimensions = rows.first().map_or(0, Vec::len);
        Ok(Self {
            stems: words.iter().map(|w| term(w)).collect(),
            words,
            vectors: rows.concat(),
            dimensions,
        })
    }

    fn vector(&self, i: usize) -> &[f32] {
        &self.vectors[i * self.dimensions..(i + 1) * self.dimensions]
    }

    /// Word `i`'s neighbours (index into `words`, cosine), nearest first.
    pub fn nearest(&self, i: usize) -> Vec<(usize, f32)> {
        let own = self.vector(i);
        let mut close: Vec<(usize, f32)> = (0..self.words.len())
            .filter(|&j| self.stems[j] != self.stems[i])
            .map(|j| (j, dot(own, self.vector(j))))
            .filter(|&(_, cos)| cos >= MIN_COSINE)
            .collect();
        close.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut out: Vec<(usize, f32)> = Vec::with_capacity(NEIGHBOURS);
        for (j, cos) in close {
            if out.len() == NEIGHBOURS {
                break;
            }
            if out.iter().all(|&(k, _)| self.stems[k] != self.stems[j]) {
                out.push((j, cos));
            }
        }
        out
    }

    /// Word `i`'s line of the table, `None` when it has no neighbour.
    pub fn line(&self, i: usize) -> Option<String> {
        let nearest = self.nearest(i);
        if nearest.is_empty() {
            return None;
        }
        let mut line = self.words[i].clone();
        for (j, cos) in nearest {
            line.push_str(&format!(" {}:{}", self.words[j], hundredths(cos)));
        }
        Some(line)
    }
}

/// A cosine in hundredths, as the table writes it.
pub fn hundredths(cos: f32) -> u8 {
    (cos.clamp(0.0, 1.0) * 100.0).round() as u8
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes, so that the compiler vectorises the loop.
    let mut acc = [0.0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f32 = a
        .chunks_exact(8)
        .remainder()
        .iter()
        .zip(b.chunks_exact(8).remainder())
        .map(|(x, y)| x * y)
        .sum();
    acc.iter().sum::<f32>() + tail
}
