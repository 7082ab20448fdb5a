//! A small Server-Sent Events parser: bytes in (split anywhere), events out.
//!
//! Handles `\n`, `\r\n` and `\r` line ends (even when a chunk ends between `\r` and `\n`),
//! comment lines, multi-line `data:` and the optional `event:` name. `id:` and `retry:` are ignored.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds a chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            match self.buf[i] {
                b'\n' => {
                    let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                    self.line(&line, &mut out);
                    i += 1;
                    start = i;
                }
                b'\r' => {
                    if i + 1 == self.buf.len() {
                        break; // may be the first half of "\r\n": wait for the next chunk
                    }
                    let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                    self.line(&line, &mut out);
                    i += if self.buf[i + 1] == b'\n' { 2 } else { 1 };
                    start = i;
                }
                _ => i += 1,
            }
        }
        self.buf.drain(..start);
        out
    }

    /// The input ended: a last unterminated line and a pending event are dispatched.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        let rest = String::from_utf8_lossy(&rest);
        let rest = rest.trim_end_matches(['\r', '\n']);
        if !rest.is_empty() {
            self.line(rest, &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event = None;
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    /// Feeds `input` split at every possible point and checks the events are always the same.
    fn check(input: &str, expected: &[SseEvent]) {
        let bytes = input.as_bytes();
        for split in 0..=bytes.len() {
            let mut p = SseParser::default();
            let mut got = p.push(&bytes[..split]);
            got.extend(p.push(&bytes[split..]));
            got.extend(p.finish());
            assert_eq!(got, expected, "split at {split}");
        }
    }

    #[test]
    fn parses_events() {
        check(
            "data: {\"a\":1}\n\ndata: [DONE]\n\n",
            &[ev(None, "{\"a\":1}"), ev(None, "[DONE]")],
        );
        check(
            "data: x\r\n\r\ndata: y\r\n\r\n",
            &[ev(None, "x"), ev(None, "y")],
        );
        check("data: x\r\rdata: y\r\r", &[ev(None, "x"), ev(None, "y")]);
        check(
            ": keep-alive\n\nevent: ping\ndata: {}\n\n",
            &[ev(Some("ping"), "{}")],
        );
        check("data: one\ndata: two\n\n", &[ev(None, "one\ntwo")]);
        check("data:nospace\n\n", &[ev(None, "nospace")]);
        check("event: only-name\n\n", &[]);
        check("data: unterminated", &[ev(None, "unterminated")]);
        check("data: héllo wörld\n\n", &[ev(None, "héllo wörld")]);
    }
}
