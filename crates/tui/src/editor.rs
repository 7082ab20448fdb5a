//! The input editor: multi-line text with a cursor, and the history of sent messages.
//!
//! Positions are in characters (not bytes), so no edit can split a UTF-8 sequence.

/// Multi-line input with a cursor and message history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// While recalling: the history index shown, and the draft it replaced.
    recall: Option<(usize, String)>,
}

impl Default for Editor {
    fn default() -> Self {
        Self {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            recall: None,
        }
    }
}

const MAX_HISTORY: usize = 500;

impl Editor {
    /// The whole text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor as (line, character column).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = char_len(&self.lines[self.row]);
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.recall = None;
    }

    /// Takes the text out (for sending), remembering it in the history.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > MAX_HISTORY {
                self.history.remove(0);
            }
        }
        self.clear();
        text
    }

    pub fn insert_char(&mut self, c: char) {
        if c == '\n' {
            self.newline();
            return;
        }
        let at = byte_at(&self.lines[self.row], self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Inserts pasted text: `\r\n` and `\r` become newlines, tabs four spaces, other control
    /// characters are dropped. Linear in the text and the current line: the pasted lines are
    /// built whole and spliced in once (a 288 KB paste of one line took 35 s char by char).
    pub fn insert_str(&mut self, text: &str) {
        let mut pasted: Vec<String> = vec![String::new()];
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    chars.next_if_eq(&'\n');
                    pasted.push(String::new());
                }
                '\n' => pasted.push(String::new()),
                '\t' => pasted
                    .last_mut()
                    .into_iter()
                    .for_each(|l| l.push_str("    ")),
                c if c.is_control() => {}
                c => pasted.last_mut().into_iter().for_each(|l| l.push(c)),
            }
        }
        let at = byte_at(&self.lines[self.row], self.col);
        let tail = self.lines[self.row].split_off(at);
        let last = pasted.len() - 1;
        self.col = if last == 0 { self.col } else { 0 } + char_len(&pasted[last]);
        pasted[last].push_str(&tail);
        let mut pasted = pasted.into_iter();
        if let Some(first) = pasted.next() {
            self.lines[self.row].push_str(&first);
        }
        self.lines.splice(self.row + 1..self.row + 1, pasted);
        self.row += last;
    }

    pub fn newline(&mut self) {
        let at = byte_at(&self.lines[self.row], self.col);
        let rest = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    pub fn backspace(&mut self) {
        if self.col > 0 {
            let at = byte_at(&self.lines[self.row], self.col - 1);
            self.lines[self.row].remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = char_len(&self.lines[self.row]);
            self.lines[self.row].push_str(&line);
        }
    }

    pub fn delete(&mut self) {
        if self.col < char_len(&self.lines[self.row]) {
            let at = byte_at(&self.lines[self.row], self.col);
            self.lines[self.row].remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Deletes the word before the cursor (and the spaces after it).
    pub fn delete_word(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        let kept: String = chars[..start].iter().chain(&chars[self.col..]).collect();
        self.lines[self.row] = kept;
        self.col = start;
    }

    /// Deletes from the start of the line to the cursor.
    pub fn delete_to_start(&mut self) {
        let at = byte_at(&self.lines[self.row], self.col);
        self.lines[self.row].replace_range(..at, "");
        self.col = 0;
    }

    /// Deletes from the cursor to the end of the line.
    pub fn delete_to_end(&mut self) {
        let at = byte_at(&self.lines[self.row], self.col);
        self.lines[self.row].truncate(at);
    }

    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = char_len(&self.lines[self.row]);
        }
    }

    pub fn right(&mut self) {
        if self.col < char_len(&self.lines[self.row]) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn home(&mut self) {
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.col = char_len(&self.lines[self.row]);
    }

    /// Up: the line above, or the previous history entry when on the first line.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(char_len(&self.lines[self.row]));
            return;
        }
        let index = match &self.recall {
            Some((0, _)) => return,
            Some((i, _)) => i - 1,
            None if self.history.is_empty() => return,
            None => self.history.len() - 1,
        };
        let draft = match self.recall.take() {
            Some((_, draft)) => draft,
            None => self.text(),
        };
        let entry = self.history[index].clone();
        self.set_text(&entry);
        self.recall = Some((index, draft));
    }

    /// Down: the line below, or the next history entry (then the draft) when on the last line.
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(char_len(&self.lines[self.row]));
            return;
        }
        match self.recall.take() {
            None => {}
            Some((i, draft)) if i + 1 >= self.history.len() => self.set_text(&draft),
            Some((i, draft)) => {
                let entry = self.history[i + 1].clone();
                self.set_text(&entry);
                self.recall = Some((i + 1, draft));
            }
        }
    }
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// The byte offset of character `col` (the end when past it).
fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `keys` (one char each: `<` left, `>` right, `^` up, `v` down, `B` backspace,
    /// `D` delete, `N` newline, `W` delete word, `H` home, `E` end, anything else typed) and
    /// returns the text with `|` at the cursor.
    fn check(start: &str, keys: &str, expected: &str) {
        let mut e = Editor::default();
        e.set_text(start);
        for k in keys.chars() {
            match k {
                '<' => e.left(),
                '>' => e.right(),
                '^' => e.up(),
                'v' => e.down(),
                'B' => e.backspace(),
                'D' => e.delete(),
                'N' => e.newline(),
                'W' => e.delete_word(),
                'H' => e.home(),
                'E' => e.end(),
                c => e.insert_char(c),
            }
        }
        let (row, col) = e.cursor();
        let mut lines = e.lines().to_vec();
        let at = byte_at(&lines[row], col);
        lines[row].insert(at, '|');
        assert_eq!(lines.join("\n"), expected, "{start:?} + {keys:?}");
    }

    #[test]
    fn edits() {
        check("", "hi", "hi|");
        check("héllo", "<<<B", "h|llo");
        check("ab", "<Nc", "a\nc|b");
        check("a\nb", "HB", "a|b");
        check("ab\ncd", "^D", "ab|cd");
        check("one two  ", "W", "one |");
        check("one two", "<<<W", "|two");
        check("long line\nx", "^E", "long line|\nx");
        check("a\nlong", "^v", "a\nl|ong");
        check("ü", "<<<>>>", "ü|");
        check("", "BD<>", "|");
    }

    #[test]
    fn paste_normalises() {
        let mut e = Editor::default();
        e.insert_str("a\r\nb\tc\u{7}\rd");
        assert_eq!(e.text(), "a\nb    c\nd");
        assert_eq!(e.cursor(), (2, 1));
        // Into the middle of a line: the tail follows the pasted text, the cursor its end.
        let mut e = Editor::default();
        e.set_text("head|tail");
        (0..5).for_each(|_| e.left());
        e.insert_str("x\ny");
        assert_eq!(e.text(), "headx\ny|tail");
        assert_eq!(e.cursor(), (1, 1));
        e.insert_str("zz");
        assert_eq!(e.text(), "headx\nyzz|tail");
        assert_eq!(e.cursor(), (1, 3));
        e.insert_str("");
        assert_eq!(e.cursor(), (1, 3));
    }

    #[test]
    fn history_recall_keeps_the_draft() {
        let mut e = Editor::default();
        e.set_text("first");
        assert_eq!(e.take(), "first");
        e.set_text("second\nline");
        e.take();
        e.set_text("dra");
        e.up();
        assert_eq!(e.text(), "second\nline");
        e.up(); // moves to the first line of the entry
        e.up();
        assert_eq!(e.text(), "first");
        e.up();
        assert_eq!(e.text(), "first");
        e.down();
        assert_eq!(e.text(), "second\nline");
        e.down();
        assert_eq!(e.text(), "dra");
        e.down();
        assert_eq!(e.text(), "dra");
    }

    #[test]
    fn blank_text_is_not_remembered() {
        let mut e = Editor::default();
        e.set_text("  ");
        e.take();
        e.up();
        assert_eq!(e.text(), "");
    }
}
