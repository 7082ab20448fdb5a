//! The index snapshot's file: `<store>.index` beside a plain local store.
//!
//! A run of sections ([`memory_index::flat`]: each a length, its bytes and their CRC-32). First a
//! header: the magic `OXYIDX07` (the version: a file of another layout is rebuilt), the byte-order
//! mark, the embedding model id and dimensions, the change-log entry the rows are current to
//! (`applied`) and the token naming this snapshot (also recorded in the store's `store_meta`, so
//! a store restored from an older copy, or another store's file, is never trusted). Then the
//! index's arrays as they lie in memory ([`VectorIndex::write_flat`]): per session the chunk ids,
//! scales, int8 codes, facets and binary codes, then the keyword dictionary, postings and term
//! lists. Nothing may follow. Written to a temporary file, synced, then renamed over the old one
//! (and the directory synced): a crash leaves the old snapshot or the new one, and a torn or
//! altered file fails a length or a checksum.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

use memory_index::VectorIndex;
use memory_index::flat::{BYTE_ORDER, Record, SectionReader, SectionWriter};

/// `06`: stored text's terms without the names it addresses (`memory_index::terms`; an `05`
/// file's term lists hold them). `05`: the first pass's shares measured by the masked distance.
const MAGIC: &str = "OXYIDX07";
/// Bytes buffered around the sections (the large arrays are read and written directly).
const BUFFER: usize = 1 << 20;

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
    let mut buffered = BufWriter::with_capacity(BUFFER, file);
    let mut out = SectionWriter::new(&mut buffered);
    Record::default()
        .text(MAGIC)
        .u64(u64::from(BYTE_ORDER))
        .text(&header.model)
        .u64(header.dims as u64)
        .u64(header.applied.cast_unsigned())
        .text(&header.token)
        .write(&mut out)?;
    let rows = index.write_flat(&mut out)?;
    let file = buffered
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
/// but for `applied`, which is returned. `Ok(None)`: no file, another version, model, size or
/// token, or a damaged file (what `fresh` holds is then to be thrown away).
pub(crate) fn read(path: &Path, expected: &Header, fresh: &VectorIndex) -> io::Result<Option<i64>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let mut buffered = BufReader::with_capacity(BUFFER, file);
    let mut input = SectionReader::new(&mut buffered, len);
    match snapshot(&mut input, expected, fresh) {
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

fn snapshot<R: Read>(
    input: &mut SectionReader<'_, R>,
    expected: &Header,
    fresh: &VectorIndex,
) -> io::Result<Option<i64>> {
    let mut head = Record::read(input)?;
    let (magic, order) = (head.take_text()?, head.take_u64()?);
    if magic != MAGIC || order != u64::from(BYTE_ORDER) {
        tracing::info!("the memory index snapshot is of another version; rebuilding");
        return Ok(None);
    }
    let model = head.take_text()?;
    let dims = head.take_usize()?;
    let applied = head.take_u64()?.cast_signed();
    let token = head.take_text()?;
    head.done()?;
    if model != expected.model || dims != expected.dims || token != expected.token {
        tracing::info!("the memory index snapshot is of another model or store state; rebuilding");
        return Ok(None);
    }
    fresh.read_flat(input)?;
    if input.left() != 0 {
        return Err(memory_index::flat::invalid("trailing bytes"));
    }
    Ok(Some(applied))
}
