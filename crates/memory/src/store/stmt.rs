//! One SQL statement with its arguments, written once and run two ways: bound on a connection
//! ([`Stmt::run`], every store), or with its arguments written into the text as SQL literals
//! ([`Stmt::inline`]) for a remote server's one-request batch (see [`crate::notes::one_trip`] for
//! writes, [`crate::store::batch_read`] for reads), which libsql sends without parameters.
//!
//! Inlining is safe by construction: integers and reals are printed as numbers, text is quoted
//! with every `'` doubled (or, when it holds a NUL, sent as the hex of its UTF-8 bytes cast back
//! to text), blobs as `X'..'` hex. No argument's text is ever scanned for placeholders again.

use std::borrow::Cow;

use libsql::{Connection, Value};

use crate::error::MemoryError;

/// A statement whose `?N` placeholders take `args[N - 1]` (a bare `?` is numbered as SQLite
/// numbers it: one more than the largest number before it).
#[derive(Debug, Clone)]
pub(crate) struct Stmt {
    pub(crate) sql: Cow<'static, str>,
    pub(crate) args: Vec<Value>,
}

impl Stmt {
    pub(crate) fn new(sql: &'static str, args: Vec<Value>) -> Self {
        Self {
            sql: Cow::Borrowed(sql),
            args,
        }
    }

    /// A statement whose text is built at run time (a list of placeholders, say).
    pub(crate) fn built(sql: String, args: Vec<Value>) -> Self {
        Self {
            sql: Cow::Owned(sql),
            args,
        }
    }

    /// Runs the statement on `conn` with its arguments bound.
    pub(crate) async fn run(
        &self,
        conn: &Connection,
        ctx: &'static str,
    ) -> Result<u64, MemoryError> {
        conn.execute(self.sql.as_ref(), self.args.clone())
            .await
            .map_err(MemoryError::db(ctx))
    }

    /// The statement's text with every argument written in as a literal.
    pub(crate) fn inline(&self) -> Result<String, MemoryError> {
        self.inline_with(&[])
    }

    /// [`Stmt::inline`], with the placeholders listed in `exprs` (1-based) taking an SQL
    /// expression of ours instead of their argument (a value the server computes in the same
    /// transaction, such as a sequence number).
    pub(crate) fn inline_with(&self, exprs: &[(usize, &str)]) -> Result<String, MemoryError> {
        let bad = |what: &str| MemoryError::Corrupt {
            what: "statement placeholder",
            source: Some(what.to_owned().into()),
        };
        let mut out = String::with_capacity(self.sql.len() + 64);
        let mut chars = self.sql.char_indices().peekable();
        // As SQLite numbers them: a bare `?` is one more than the largest number so far.
        let mut largest = 0usize;
        while let Some((_, c)) = chars.next() {
            if c != '?' {
                out.push(c);
                continue;
            }
            let mut digits = None;
            while let Some(d) = chars.peek().and_then(|(_, d)| d.to_digit(10)) {
                digits = Some(digits.unwrap_or(0usize) * 10 + d as usize);
                chars.next();
            }
            let n = digits.unwrap_or(largest + 1);
            largest = largest.max(n);
            if let Some((_, expr)) = exprs.iter().find(|(i, _)| *i == n) {
                out.push_str(expr);
                continue;
            }
            let value = n
                .checked_sub(1)
                .and_then(|i| self.args.get(i))
                .ok_or_else(|| bad(&self.sql))?;
            push_literal(&mut out, value);
        }
        Ok(out)
    }
}

/// `value` as an SQL literal.
pub(crate) fn literal(value: &Value) -> String {
    let mut out = String::new();
    push_literal(&mut out, value);
    out
}

/// Writes `value` as an SQL literal.
fn push_literal(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("NULL"),
        Value::Integer(i) => out.push_str(&i.to_string()),
        // `{:?}` keeps every digit an f64 needs to read back equal; SQLite has no literal for a
        // non-finite real.
        Value::Real(r) if r.is_finite() => out.push_str(&format!("{r:?}")),
        Value::Real(_) => out.push_str("NULL"),
        Value::Text(t) if !t.contains('\0') => {
            out.push('\'');
            out.push_str(&t.replace('\'', "''"));
            out.push('\'');
        }
        Value::Text(t) => {
            out.push_str("CAST(");
            push_hex(out, t.as_bytes());
            out.push_str(" AS TEXT)");
        }
        Value::Blob(b) => push_hex(out, b),
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2 + 3);
    out.push_str("X'");
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in memory and a connection to it (which the database must outlive).
    async fn in_memory() -> (libsql::Database, Connection) {
        let db = libsql::Builder::new_local(":memory:")
            .build()
            .await
            .unwrap();
        let conn = db.connect().unwrap();
        (db, conn)
    }

    /// Every kind of value reads back equal through its literal as through a bound parameter,
    /// including text that looks like SQL or placeholders.
    #[tokio::test]
    async fn literals_read_back_equal_to_bound_values() {
        let (_db, conn) = in_memory().await;
        let values = [
            Value::Null,
            Value::Integer(0),
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Real(0.1),
            Value::Real(-3.25e-300),
            Value::Real(f64::MAX),
            Value::Text(String::new()),
            Value::Text("it's a 'quoted' ?1 -- text; DROP TABLE x; \\ \" ''".into()),
            Value::Text("nul \0 inside, é, 日本, 🦀, \n\t".into()),
            Value::Blob(vec![]),
            Value::Blob((0..=255).collect()),
        ];
        for value in values {
            let stmt = Stmt::new("SELECT ?1, typeof(?1)", vec![value.clone()]);
            let mut bound = conn
                .query(stmt.sql.as_ref(), stmt.args.clone())
                .await
                .unwrap();
            let bound = bound.next().await.unwrap().unwrap();
            let mut inlined = conn.query(&stmt.inline().unwrap(), ()).await.unwrap();
            let inlined = inlined.next().await.unwrap().unwrap();
            assert_eq!(
                (inlined.get_value(0).unwrap(), inlined.get_value(1).unwrap()),
                (bound.get_value(0).unwrap(), bound.get_value(1).unwrap()),
                "{value:?}"
            );
        }
    }

    #[test]
    fn placeholders_take_their_argument_or_expression() {
        let stmt = Stmt::new(
            "INSERT INTO t VALUES (?1, ?2, ?10, ?1)",
            (1..=10).map(Value::Integer).collect(),
        );
        assert_eq!(
            stmt.inline_with(&[(2, "(SELECT 7)")]).unwrap(),
            "INSERT INTO t VALUES (1, (SELECT 7), 10, 1)"
        );
        let short = Stmt::new("SELECT ?3", vec![Value::Null]);
        assert!(short.inline().is_err());
    }

    /// Bare `?`s are numbered as SQLite numbers them, so a statement reads the same inlined as
    /// bound: each one more than the largest number before it.
    #[tokio::test]
    async fn bare_placeholders_are_numbered_as_sqlite_numbers_them() {
        let (_db, conn) = in_memory().await;
        let stmt = Stmt::built(
            "SELECT ?, ?, ?5, ?, ?2, ?".to_owned(),
            (1..=7).map(Value::Integer).collect(),
        );
        assert_eq!(stmt.inline().unwrap(), "SELECT 1, 2, 5, 6, 2, 7");
        let mut bound = conn
            .query(stmt.sql.as_ref(), stmt.args.clone())
            .await
            .unwrap();
        let bound = bound.next().await.unwrap().unwrap();
        let read: Vec<i64> = (0..6).map(|i| bound.get(i).unwrap()).collect();
        assert_eq!(read, [1, 2, 5, 6, 2, 7]);
        let missing = Stmt::built("SELECT ?, ?".to_owned(), vec![Value::Null]);
        assert!(missing.inline().is_err());
    }
}
