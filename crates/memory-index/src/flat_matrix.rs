//! The vector index's matrices as flat sections ([`crate::flat`]): per matrix its chunk ids,
//! scales, int8 codes, facets and binary codes (the sessions with their own, then the pool with
//! its sessions' names and its rows' session numbers), written as they lie in memory and read
//! back into the same vectors, so a load does no per-row quantizing or coding.

use std::io::{self, Read, Write};
use std::sync::{Arc, RwLock};

use rustc_hash::{FxBuildHasher, FxHashMap};

use super::{Pool, SessionMatrix, VectorIndex};
use crate::category::Category;
use crate::facets::{ChunkFacets, time_key};
use crate::flat::{Record, SectionReader, SectionWriter, invalid};
use crate::index_change::{read, write};
use crate::sign_codes::SignCodes;

impl VectorIndex {
    /// Writes the pool (with its sessions' names and its rows' session numbers), every other
    /// session's matrix, then the keyword postings; returns the rows written. Each matrix stays
    /// read-locked while its arrays are written (a removal moves rows). The pool goes first: a
    /// session that leaves it meanwhile is then written twice, never missed, and a load keeps
    /// its own matrix.
    pub fn write_flat<W: Write>(&self, out: &mut SectionWriter<'_, W>) -> io::Result<usize> {
        let mut rows = {
            let pool = read(&self.pool);
            Record::default().u64(pool.names.len() as u64).write(out)?;
            out.texts(pool.names.iter().map(|n| Some(n.as_str())))?;
            pool.matrix.write_flat("", self.dims, out)?;
            out.array(&pool.tags)?;
            pool.matrix.ids.len()
        };
        let sessions: Vec<(String, Arc<RwLock<SessionMatrix>>)> = read(&self.sessions)
            .iter()
            .map(|(name, m)| (name.clone(), Arc::clone(m)))
            .collect();
        Record::default().u64(sessions.len() as u64).write(out)?;
        for (name, matrix) in sessions {
            let matrix = read(&matrix);
            rows += matrix.ids.len();
            matrix.write_flat(&name, self.dims, out)?;
        }
        self.keywords.write_flat(out)?;
        Ok(rows)
    }

    /// Reads what [`Self::write_flat`] wrote into this (empty) index. Binary codes come back as
    /// they were; [`Self::train`] then only builds those the leg wants and the file lacks.
    pub fn read_flat<R: Read>(&self, input: &mut SectionReader<'_, R>) -> io::Result<()> {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let mut head = Record::read(input)?;
        let numbers = head.take_usize()?;
        head.done()?;
        let texts = input.texts(numbers)?;
        let names = (0..numbers)
            .map(|n| texts.some(n).map(str::to_owned))
            .collect::<io::Result<Vec<String>>>()?;
        drop(texts);
        let (_, matrix) = SessionMatrix::read_flat(self.dims, input)?;
        let tags: Vec<u32> = input.array(matrix.ids.len())?;
        let mut pool = Pool::from_parts(matrix, tags, names).ok_or_else(|| invalid("pool"))?;
        let mut head = Record::read(input)?;
        let sessions = head.take_u64()?;
        head.done()?;
        let mut own = write(&self.sessions);
        for _ in 0..sessions {
            let (name, matrix) = SessionMatrix::read_flat(self.dims, input)?;
            // Left the pool while the file was written: its own matrix is the later one.
            if let Some(n) = pool.number(&name) {
                pool.take(self.dims, n);
            }
            if own.insert(name, Arc::new(RwLock::new(matrix))).is_some() {
                return Err(invalid("session listed twice"));
            }
        }
        drop(own);
        *write(&self.pool) = pool;
        self.keywords.read_flat(input)
    }
}

impl SessionMatrix {
    fn write_flat<W: Write>(
        &self,
        name: &str,
        dims: usize,
        out: &mut SectionWriter<'_, W>,
    ) -> io::Result<()> {
        let mut head = Record::default()
            .text(name)
            .u64(self.ids.len() as u64)
            .u64(u64::from(self.signs.is_some()));
        if let Some(signs) = &self.signs {
            head = head
                .u64(signs.built_rows() as u64)
                .f64(signs.sampled_share())
                .f64(signs.learnt_share());
        }
        head.write(out)?;
        debug_assert_eq!(self.codes.len(), self.ids.len() * dims);
        out.array(&self.ids)?;
        out.array(&self.scales)?;
        out.array(&self.codes)?;
        let categories: Vec<u8> = self
            .facets
            .iter()
            .map(|f| category_byte(f.category))
            .collect();
        out.array(&categories)?;
        out.texts(self.facets.iter().map(|f| Some(f.created_at.as_str())))?;
        out.texts(self.facets.iter().map(|f| f.expires_at.as_deref()))?;
        let tag_counts: Vec<u32> = self
            .facets
            .iter()
            .map(|f| u32::try_from(f.tags.len()).map_err(|_| invalid("tags")))
            .collect::<io::Result<_>>()?;
        out.array(&tag_counts)?;
        out.texts(
            self.facets
                .iter()
                .flat_map(|f| f.tags.iter().map(|t| Some(t.as_str()))),
        )?;
        if let Some(signs) = &self.signs {
            out.array(signs.centre())?;
            out.array(signs.bits())?;
        }
        Ok(())
    }

    fn read_flat<R: Read>(
        dims: usize,
        input: &mut SectionReader<'_, R>,
    ) -> io::Result<(String, Self)> {
        let mut head = Record::read(input)?;
        let name = head.take_text()?;
        let n = head.take_usize()?;
        let coded = match head.take_u64()? {
            0 => None,
            1 => Some((head.take_usize()?, head.take_f64()?, head.take_f64()?)),
            _ => return Err(invalid("codes flag")),
        };
        head.done()?;
        let ids: Vec<i64> = input.array(n)?;
        let scales: Vec<f32> = input.array(n)?;
        let size = n.checked_mul(dims).ok_or_else(|| invalid("matrix size"))?;
        let codes: Vec<i8> = input.array(size)?;
        // `quantize` writes -127..=127, what the int8 kernels rely on (`crate::dot`).
        if codes.contains(&i8::MIN) {
            return Err(invalid("code out of range"));
        }
        let categories: Vec<u8> = input.array(n)?;
        let created = input.texts(n)?;
        let expires = input.texts(n)?;
        let tag_counts: Vec<u32> = input.array(n)?;
        let total_tags = tag_counts
            .iter()
            .try_fold(0usize, |sum, &c| sum.checked_add(c as usize))
            .ok_or_else(|| invalid("tags"))?;
        let tags = input.texts(total_tags)?;
        let mut facets = Vec::with_capacity(n);
        let mut tag_at = 0;
        for row in 0..n {
            let count = tag_counts[row] as usize;
            let row_tags = (tag_at..tag_at + count)
                .map(|t| tags.some(t).map(str::to_owned))
                .collect::<io::Result<Vec<_>>>()?;
            tag_at += count;
            facets.push(ChunkFacets {
                category: category_of(categories[row])?,
                tags: row_tags.into_boxed_slice(),
                created_at: created.some(row)?.to_owned(),
                expires_at: expires.get(row)?.map(str::to_owned),
            });
        }
        let mut rows = FxHashMap::with_capacity_and_hasher(n, FxBuildHasher);
        for (row, &id) in ids.iter().enumerate() {
            if rows.insert(id, row).is_some() {
                return Err(invalid("chunk listed twice"));
            }
        }
        let signs = match coded {
            None => None,
            Some((built_rows, sampled, learnt)) => {
                let centre = input.array(dims)?;
                let words = dims.div_ceil(64);
                let bits = input.array(n.checked_mul(words).ok_or_else(|| invalid("codes"))?)?;
                let signs =
                    SignCodes::from_parts(dims, centre, bits, built_rows, (sampled, learnt));
                Some(signs.ok_or_else(|| invalid("codes"))?)
            }
        };
        let created = facets.iter().map(|f| time_key(&f.created_at)).collect();
        let matrix = Self {
            codes,
            scales,
            ids,
            facets,
            created,
            rows,
            signs,
        };
        Ok((name, matrix))
    }
}

fn category_byte(category: Option<Category>) -> u8 {
    let at = category.and_then(|c| Category::ALL.iter().position(|a| *a == c));
    at.map_or(0, |i| u8::try_from(i + 1).unwrap_or(0))
}

fn category_of(byte: u8) -> io::Result<Option<Category>> {
    match byte {
        0 => Ok(None),
        b => Category::ALL
            .get(usize::from(b) - 1)
            .copied()
            .map(Some)
            .ok_or_else(|| invalid("category")),
    }
}
