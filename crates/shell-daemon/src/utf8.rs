//! Decodes a byte stream into UTF-8 text chunk by chunk, carrying a character split across reads
//! over to the next chunk; invalid bytes become U+FFFD.

#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// The text of `bytes` (after whatever was carried over), keeping an incomplete trailing
    /// character for later.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest = std::mem::take(&mut self.pending);
        let mut start = 0;
        loop {
            match std::str::from_utf8(&rest[start..]) {
                Ok(text) => {
                    out.push_str(text);
                    start = rest.len();
                    break;
                }
                Err(e) => {
                    let valid_end = start + e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&rest[start..valid_end]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            start = valid_end + bad;
                        }
                        None => {
                            start = valid_end;
                            break;
                        }
                    }
                }
            }
        }
        rest.drain(..start);
        self.pending = rest;
        out
    }

    /// Whatever is left at the end of the stream (an incomplete character becomes U+FFFD).
    pub(crate) fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(chunks: &[&[u8]], expected: &[&str]) {
        let mut stream = Utf8Stream::default();
        let mut got: Vec<String> = chunks.iter().map(|c| stream.push(c)).collect();
        got.push(stream.finish());
        assert_eq!(got, expected, "{chunks:?}");
    }

    #[test]
    fn decodes_across_chunk_boundaries() {
        let e_acute = "é".as_bytes();
        check(&[b"ab", b"c"], &["ab", "c", ""]);
        check(&[&e_acute[..1], &e_acute[1..]], &["", "é", ""]);
        check(&[b"a\xffb"], &["a\u{FFFD}b", ""]);
        check(&[&[b'x', e_acute[0]]], &["x", "\u{FFFD}"]);
    }
}
