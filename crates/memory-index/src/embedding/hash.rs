//! Deterministic feature-hashing embedder: no model, no network, keyword-like similarity.

use async_trait::async_trait;

use super::{EmbedError, Embedder, normalize};

/// Hashes lowercased words and character trigrams into signed buckets. Same text, same vector, on
/// every machine and build.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dimensions: usize,
    model_id: String,
}

impl HashEmbedder {
    pub fn new(dimensions: usize) -> Self {
        let dimensions = dimensions.max(1);
        Self {
            dimensions,
            model_id: format!("hash-v1-{dimensions}"),
        }
    }

    /// The vector for one text (synchronous; cheap enough for the async threads).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            self.add(&mut v, word.as_bytes(), 1.0);
            let padded: Vec<char> = format!(" {word} ").chars().collect();
            for tri in padded.windows(3) {
                let s: String = tri.iter().collect();
                self.add(&mut v, s.as_bytes(), 0.5);
            }
        }
        normalize(&mut v);
        v
    }

    fn add(&self, v: &mut [f32], token: &[u8], weight: f32) {
        let h = fnv1a(token);
        // The bucket count fits in u64 on every supported platform.
        let bucket = (h % self.dimensions as u64) as usize;
        let sign = if (h >> 63) & 1 == 0 { 1.0 } else { -1.0 };
        v[bucket] += sign * weight;
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[async_trait]
impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_unit_vectors_with_keyword_similarity() {
        let e = HashEmbedder::new(256);
        let a = e.embed_one("The user's name is Shantanu");
        assert_eq!(a, e.embed_one("The user's name is Shantanu"));
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        let near = e.embed_one("what is the user's name");
        let far = e.embed_one("chocolate cake recipe");
        assert!(dot(&a, &near) > dot(&a, &far));
        assert_eq!(e.embed_one("").iter().filter(|x| **x != 0.0).count(), 0);
        assert_eq!(e.model_id(), "hash-v1-256");
    }
}
