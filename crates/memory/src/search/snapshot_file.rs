//! The index snapshot's file: `<store>.index` beside a plain local store.
//!
//! Layout (little-endian): the magic `OXYIDX01`; the embedding model id and dimensions; the
//! change-log entry the rows are current to (`applied`); the token naming this snapshot (also
//! recorded in the store's `store_meta`, so a store restored from an older copy never trusts a
//! newer file); then pages — `1`, a session, a row count and the rows (chunk id, scale, int8
//! codes, facets, keyword terms) — ended by `0`; last, a checksum of every byte before it.
//! Strings are a `u32` length and UTF-8. Written to a temporary file, synced, then renamed over
//! the old one (and the directory synced): a crash leaves the old snapshot or the new one, and a
//! torn or altered file fails the checksum.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use memory_index::terms::TermBag;
use memory_index::vector_index::IndexRow;
use memory_index::{ChunkFacets, VectorIndex};

const MAGIC: &[u8; 8] = b"OXYIDX01";
/// Rows per page (a page is applied to the fresh index at once while reading).
const PAGE: usize = 4096;
/// No string in a snapshot is longer (a longer length means a damaged file).
const MAX_STRING: u32 = 1 << 20;

/// What a snapshot says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) model: String,
    pub(crate) dims: usize,
    pub(crate) applied: i64,
    pub(crate) token: String,
}

/// The snapshot file of the store at `db`.
pub(crate) fn path_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".index");
    PathBuf::from(name)
}

/// Writes `index`'s rows (current at least to `header.applied`) to `path`, safely (temporary
/// file, sync, rename, directory sync). Returns the rows written.
pub(crate) fn write(path: &Path, index: &VectorIndex, header: &Header) -> io::Result<usize> {
    let tmp = path.with_extension(format!("index.tmp-{}", uuid::Uuid::new_v4().simple()));
    let written = write_to(&tmp, index, header).and_then(|rows| {
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        Ok(rows)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write_to(tmp: &Path, index: &VectorIndex, header: &Header) -> io::Result<usize> {
    let file = private_file(tmp)?;
    let mut out = Out {
        inner: BufWriter::with_capacity(1 << 20, file),
        sum: Checksum::default(),
    };
    out.bytes(MAGIC)?;
    out.string(&header.model)?;
    out.u32(u32::try_from(header.dims).map_err(|_| invalid("dimensions"))?)?;
    out.bytes(&header.applied.to_le_bytes())?;
    out.string(&header.token)?;
    let mut rows = 0;
    let mut failed = Ok(());
    index.export_rows(PAGE, |page| {
        if failed.is_ok() {
            rows += page.len();
            failed = out.page(&page);
        }
    });
    failed?;
    out.bytes(&[0])?;
    let sum = out.sum.finish();
    out.inner.write_all(&sum.to_le_bytes())?;
    let file = out
        .inner
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    Ok(rows)
}

/// A new file only the owner may read (the snapshot holds note text's terms).
fn private_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Reads the snapshot at `path` into `fresh` (an empty index) when its header is `expected`
/// but for `applied`, which is returned. `Ok(None)`: no file, another model, size or token, or
/// a damaged file (what `fresh` holds is then to be thrown away).
pub(crate) fn read(path: &Path, expected: &Header, fresh: &VectorIndex) -> io::Result<Option<i64>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut input = In {
        inner: BufReader::with_capacity(1 << 20, file),
        sum: Checksum::default(),
    };
    match input.snapshot(expected, fresh) {
        Ok(found) => Ok(found),
        Err(e)
            if e.kind() == io::ErrorKind::UnexpectedEof
                || e.kind() == io::ErrorKind::InvalidData =>
        {
            tracing::warn!(error = %e, "the memory index snapshot is damaged; rebuilding");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad {what}"))
}

/// FxHash's mixing over 8-byte words: fast, and any torn or flipped byte changes it.
#[derive(Default)]
struct Checksum {
    hash: u64,
    pending: [u8; 8],
    filled: usize,
    total: u64,
}

impl Checksum {
    fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = (8 - self.filled).min(bytes.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == 8 {
                self.mix(u64::from_le_bytes(self.pending));
                self.filled = 0;
            }
        }
    }

    fn mix(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(mut self) -> u64 {
        let mut last = [0u8; 8];
        last[..self.filled].copy_from_slice(&self.pending[..self.filled]);
        self.mix(u64::from_le_bytes(last));
        self.mix(self.total);
        self.hash
    }
}

struct Out<W: Write> {
    inner: W,
    sum: Checksum,
}

impl<W: Write> Out<W> {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.sum.update(b);
        self.inner.write_all(b)
    }

    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    fn string(&mut self, s: &str) -> io::Result<()> {
        let len = u32::try_from(s.len()).ok().filter(|l| *l <= MAX_STRING);
        self.u32(len.ok_or_else(|| invalid("string length"))?)?;
        self.bytes(s.as_bytes())
    }

    fn optional(&mut self, s: Option<&str>) -> io::Result<()> {
        match s {
            None => self.bytes(&[0]),
            Some(s) => {
                self.bytes(&[1])?;
                self.string(s)
            }
        }
    }

    fn page(&mut self, rows: &[IndexRow]) -> io::Result<()> {
        let Some(first) = rows.first() else {
            return Ok(());
        };
        self.bytes(&[1])?;
        self.string(&first.session)?;
        self.u32(u32::try_from(rows.len()).map_err(|_| invalid("page"))?)?;
        for row in rows {
            self.bytes(&row.chunk_id.to_le_bytes())?;
            self.bytes(&row.scale.to_le_bytes())?;
            let codes: Vec<u8> = row.codes.iter().map(|c| c.to_le_bytes()[0]).collect();
            self.bytes(&codes)?;
            let f = &row.facets;
            self.optional(f.category.map(|c| c.as_str()))?;
            self.u32(u32::try_from(f.tags.len()).map_err(|_| invalid("tags"))?)?;
            for tag in &f.tags {
                self.string(tag)?;
            }
            self.string(&f.created_at)?;
            self.optional(f.expires_at.as_deref())?;
            self.u32(row.terms.len)?;
            self.u32(u32::try_from(row.terms.terms.len()).map_err(|_| invalid("terms"))?)?;
            for (term, count) in &row.terms.terms {
                self.string(term)?;
                self.bytes(&count.to_le_bytes())?;
            }
        }
        Ok(())
    }
}

struct In<R: Read> {
    inner: R,
    sum: Checksum,
}

impl<R: Read> In<R> {
    fn exact<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.inner.read_exact(&mut b)?;
        self.sum.update(&b);
        Ok(b)
    }

    fn u32(&mut self) -> io::Result<u32> {
        self.exact::<4>().map(u32::from_le_bytes)
    }

    fn string(&mut self) -> io::Result<String> {
        let len = self.u32()?;
        if len > MAX_STRING {
            return Err(invalid("string length"));
        }
        let mut b = vec![0u8; len as usize];
        self.inner.read_exact(&mut b)?;
        self.sum.update(&b);
        String::from_utf8(b).map_err(|_| invalid("text"))
    }

    fn optional(&mut self) -> io::Result<Option<String>> {
        match self.exact::<1>()?[0] {
            0 => Ok(None),
            1 => self.string().map(Some),
            _ => Err(invalid("flag")),
        }
    }

    fn snapshot(&mut self, expected: &Header, fresh: &VectorIndex) -> io::Result<Option<i64>> {
        if &self.exact::<8>()? != MAGIC {
            return Err(invalid("magic"));
        }
        let model = self.string()?;
        let dims = self.u32()? as usize;
        let applied = i64::from_le_bytes(self.exact::<8>()?);
        let token = self.string()?;
        if model != expected.model || dims != expected.dims || token != expected.token {
            tracing::info!(
                "the memory index snapshot is of another model or store state; rebuilding"
            );
            return Ok(None);
        }
        loop {
            match self.exact::<1>()?[0] {
                0 => break,
                1 => {
                    let page = self.page(dims)?;
                    let changes: Vec<_> = page.into_iter().map(IndexRow::into_change).collect();
                    fresh.apply_untrained(&changes);
                }
                _ => return Err(invalid("page marker")),
            }
        }
        let computed = std::mem::take(&mut self.sum).finish();
        let mut stored = [0u8; 8];
        self.inner.read_exact(&mut stored)?;
        let mut rest = [0u8; 1];
        if u64::from_le_bytes(stored) != computed || self.inner.read(&mut rest)? != 0 {
            return Err(invalid("checksum"));
        }
        Ok(Some(applied))
    }

    fn page(&mut self, dims: usize) -> io::Result<Vec<IndexRow>> {
        let session = self.string()?;
        let n = self.u32()? as usize;
        let mut rows = Vec::with_capacity(n.min(PAGE));
        for _ in 0..n {
            let chunk_id = i64::from_le_bytes(self.exact::<8>()?);
            let scale = f32::from_le_bytes(self.exact::<4>()?);
            let mut raw = vec![0u8; dims];
            self.inner.read_exact(&mut raw)?;
            self.sum.update(&raw);
            let codes = raw.into_iter().map(|b| i8::from_le_bytes([b])).collect();
            let category = self.optional()?;
            let tags = (0..self.u32()?)
                .map(|_| self.string())
                .collect::<io::Result<Vec<_>>>()?;
            let created_at = self.string()?;
            let expires_at = self.optional()?;
            let len = self.u32()?;
            let terms = (0..self.u32()?)
                .map(|_| Ok((self.string()?, u16::from_le_bytes(self.exact::<2>()?))))
                .collect::<io::Result<Vec<_>>>()?;
            rows.push(IndexRow {
                session: session.clone(),
                chunk_id,
                scale,
                codes,
                facets: ChunkFacets::new(category.as_deref(), tags, created_at, expires_at),
                terms: TermBag { len, terms },
            });
        }
        Ok(rows)
    }
}
