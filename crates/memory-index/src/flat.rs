//! The in-memory indexes as flat arrays, for a snapshot file that loads without per-row work.
//!
//! A file is a run of sections: a `u64` byte length, the bytes, and their CRC-32. Each array of
//! the indexes (a matrix's chunk ids, scales, int8 codes and binary codes; a session's keyword
//! dictionary, postings and per-chunk term lists; the facets' texts) is one section, written from
//! its memory as it lies and read back with one `read` into its final, typed vector (no parse, no
//! allocation per row). Numbers are in the host's byte order: a snapshot is a cache kept beside
//! its store, and its header carries a byte-order mark ([`BYTE_ORDER`]) so a file from a host of
//! the other order is rebuilt rather than misread. A section's length is checked against what
//! its header says before anything is allocated, and against the bytes left in the file, so a
//! damaged length never asks for more memory than the file holds; a damaged byte fails its CRC.

use std::io::{self, Read, Write};

use bytemuck::{Pod, Zeroable};

/// Written in the host's byte order; read back as another value on a host of the other order.
pub const BYTE_ORDER: u32 = 0x0102_0304;

/// An invalid-data error naming what is wrong.
pub fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad {what}"))
}

/// Writes sections to `W`.
#[derive(Debug)]
pub struct SectionWriter<'a, W: Write> {
    out: &'a mut W,
}

impl<'a, W: Write> SectionWriter<'a, W> {
    pub fn new(out: &'a mut W) -> Self {
        Self { out }
    }

    /// One section of raw bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(&(bytes.len() as u64).to_ne_bytes())?;
        self.out.write_all(bytes)?;
        self.out.write_all(&crc32fast::hash(bytes).to_ne_bytes())
    }

    /// One section holding `values` as they lie in memory.
    pub fn array<T: Pod>(&mut self, values: &[T]) -> io::Result<()> {
        self.bytes(bytemuck::cast_slice(values))
    }

    /// Texts (each `None` or a string) as two sections: lengths (`u32::MAX` for `None`), then
    /// the bytes of all of them.
    pub fn texts<'t>(&mut self, texts: impl Iterator<Item = Option<&'t str>>) -> io::Result<()> {
        let mut lens = Vec::new();
        let mut bytes = Vec::new();
        for text in texts {
            let len = match text {
                None => u32::MAX,
                Some(t) => {
                    bytes.extend_from_slice(t.as_bytes());
                    u32::try_from(t.len())
                        .ok()
                        .filter(|l| *l < u32::MAX)
                        .ok_or_else(|| invalid("text length"))?
                }
            };
            lens.push(len);
        }
        self.array(&lens)?;
        self.bytes(&bytes)
    }
}

/// Reads sections from `R`, never past the `left` bytes the file still holds.
#[derive(Debug)]
pub struct SectionReader<'a, R: Read> {
    input: &'a mut R,
    left: u64,
}

impl<'a, R: Read> SectionReader<'a, R> {
    pub fn new(input: &'a mut R, left: u64) -> Self {
        Self { input, left }
    }

    /// Bytes of the file not read yet.
    pub fn left(&self) -> u64 {
        self.left
    }

    fn take(&mut self, buf: &mut [u8]) -> io::Result<()> {
        if (buf.len() as u64) > self.left {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.input.read_exact(buf)?;
        self.left -= buf.len() as u64;
        Ok(())
    }

    fn length(&mut self) -> io::Result<u64> {
        let mut len = [0u8; 8];
        self.take(&mut len)?;
        let len = u64::from_ne_bytes(len);
        // The payload and its CRC must fit in what is left.
        if len > self.left.saturating_sub(4) {
            return Err(invalid("section length"));
        }
        Ok(len)
    }

    fn check(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut crc = [0u8; 4];
        self.take(&mut crc)?;
        if u32::from_ne_bytes(crc) != crc32fast::hash(bytes) {
            return Err(invalid("section checksum"));
        }
        Ok(())
    }

    /// A section of raw bytes, whatever its length.
    pub fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let len = usize::try_from(self.length()?).map_err(|_| invalid("section length"))?;
        let mut bytes = vec![0u8; len];
        self.take(&mut bytes)?;
        self.check(&bytes)?;
        Ok(bytes)
    }

    /// A section of exactly `count` values of `T`.
    pub fn array<T: Pod + Zeroable>(&mut self, count: usize) -> io::Result<Vec<T>> {
        let len = self.length()?;
        let expected = count.checked_mul(size_of::<T>()).map(|n| n as u64);
        if expected != Some(len) {
            return Err(invalid("section size"));
        }
        self.fill(count)
    }

    /// A section of any whole number of values of `T`.
    pub fn array_any<T: Pod + Zeroable>(&mut self) -> io::Result<Vec<T>> {
        let len = self.length()?;
        let size = size_of::<T>() as u64;
        if len % size != 0 {
            return Err(invalid("section size"));
        }
        self.fill(usize::try_from(len / size).map_err(|_| invalid("section size"))?)
    }

    fn fill<T: Pod + Zeroable>(&mut self, count: usize) -> io::Result<Vec<T>> {
        // A large array (the int8 rows, the binary codes) on huge pages from its first touch.
        let mut values = crate::huge_pages::vec_with_capacity(count);
        values.resize(count, T::zeroed());
        self.take(bytemuck::cast_slice_mut(&mut values))?;
        self.check(bytemuck::cast_slice(&values))?;
        Ok(values)
    }

    /// `count` texts written by [`SectionWriter::texts`].
    pub fn texts(&mut self, count: usize) -> io::Result<Texts> {
        let lens: Vec<u32> = self.array(count)?;
        let bytes = self.bytes()?;
        let text = String::from_utf8(bytes).map_err(|_| invalid("text"))?;
        let mut starts = Vec::with_capacity(count + 1);
        let mut at = 0usize;
        for &len in &lens {
            starts.push(at);
            if len != u32::MAX {
                at = at
                    .checked_add(len as usize)
                    .ok_or_else(|| invalid("text"))?;
            }
        }
        starts.push(at);
        if at != text.len() {
            return Err(invalid("text lengths"));
        }
        Ok(Texts { lens, starts, text })
    }
}

/// Texts read back: each `None` or a slice of one string.
#[derive(Debug)]
pub struct Texts {
    lens: Vec<u32>,
    starts: Vec<usize>,
    text: String,
}

impl Texts {
    /// Text `i`: `Ok(None)` when it was `None`; an error when it does not end on a character.
    pub fn get(&self, i: usize) -> io::Result<Option<&str>> {
        match self.lens.get(i) {
            None => Err(invalid("text index")),
            Some(&u32::MAX) => Ok(None),
            Some(_) => self
                .text
                .get(self.starts[i]..self.starts[i + 1])
                .map(Some)
                .ok_or_else(|| invalid("text")),
        }
    }

    /// Text `i`, which must be there.
    pub fn some(&self, i: usize) -> io::Result<&str> {
        self.get(i)?.ok_or_else(|| invalid("missing text"))
    }
}

/// A small record of scalars and names (a section's header), built and read field by field.
#[derive(Debug, Default)]
pub struct Record {
    bytes: Vec<u8>,
    at: usize,
}

impl Record {
    pub fn u64(mut self, v: u64) -> Self {
        self.bytes.extend_from_slice(&v.to_ne_bytes());
        self
    }

    pub fn f64(self, v: f64) -> Self {
        self.u64(v.to_bits())
    }

    pub fn text(self, s: &str) -> Self {
        let mut out = self.u64(s.len() as u64);
        out.bytes.extend_from_slice(s.as_bytes());
        out
    }

    pub fn write<W: Write>(&self, out: &mut SectionWriter<'_, W>) -> io::Result<()> {
        out.bytes(&self.bytes)
    }

    pub fn read<R: Read>(input: &mut SectionReader<'_, R>) -> io::Result<Self> {
        Ok(Self {
            bytes: input.bytes()?,
            at: 0,
        })
    }

    fn next(&mut self, n: usize) -> io::Result<&[u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| invalid("record"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub fn take_u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.next(8)?);
        Ok(u64::from_ne_bytes(b))
    }

    /// A count or size, which must fit this host's `usize`.
    pub fn take_usize(&mut self) -> io::Result<usize> {
        usize::try_from(self.take_u64()?).map_err(|_| invalid("count"))
    }

    pub fn take_f64(&mut self) -> io::Result<f64> {
        self.take_u64().map(f64::from_bits)
    }

    pub fn take_text(&mut self) -> io::Result<String> {
        let len = self.take_usize()?;
        String::from_utf8(self.next(len)?.to_vec()).map_err(|_| invalid("text"))
    }

    /// Fails unless every field was read (a record of another layout).
    pub fn done(&self) -> io::Result<()> {
        match self.at == self.bytes.len() {
            true => Ok(()),
            false => Err(invalid("record length")),
        }
    }
}

#[cfg(test)]
#[path = "flat_tests.rs"]
mod tests;
