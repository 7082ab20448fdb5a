//! [`Upkeep::erase_database`](crate::Upkeep::erase_database): what `runner forget` does to a user's database on a server,
//! where no file can be removed and no key destroyed. Every table and view found in
//! `sqlite_master` is dropped (so tables added by later migrations are covered), in one
//! transaction sent as one batch (one round trip to a server: a transaction of one request per
//! table outlives sqld's transaction timeout); the next open starts from an empty database.

use libsql::Connection;
use types::UserId;

use crate::error::MemoryError;
use crate::rooms::Upkeep;

/// What [`Upkeep::erase_database`](crate::Upkeep::erase_database) removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erased {
    /// Tables dropped (virtual tables count once, with their shadow tables).
    pub tables: usize,
    /// Rows those tables held.
    pub rows: u64,
}

async fn erase(conn: &Connection, user: &str) -> Result<Erased, MemoryError> {
    let others = strings(
        conn,
        "SELECT DISTINCT user_id FROM sessions WHERE user_id <> ?1 ORDER BY user_id LIMIT 3",
        libsql::params![user],
    )
    .await?;
    if !others.is_empty() {
        return Err(MemoryError::InvalidInput(format!(
            "this memory database also holds other users' data ({}); forgetting one user \
             erases a whole database, so nothing was erased",
            others.join(", ")
        )));
    }
    let listed = "SELECT type, name FROM sqlite_master \
         WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name";
    let mut objects = Vec::new();
    let mut rows = conn
        .query(listed, ())
        .await
        .map_err(MemoryError::db("listing the memory tables"))?;
    while let Some(row) = rows
        .next()
        .await
        .map_err(MemoryError::db("listing the memory tables"))?
    {
        let kind: String = row
            .get(0)
            .map_err(MemoryError::db("listing the memory tables"))?;
        let name: String = row
            .get(1)
            .map_err(MemoryError::db("listing the memory tables"))?;
        objects.push((kind, name));
    }
    let shadow = shadow_tables(conn).await?;
    let mut erased = Erased::default();
    // Foreign keys are checked at commit, when every table is gone.
    let mut script = String::from("BEGIN IMMEDIATE; PRAGMA defer_foreign_keys = ON;\n");
    // Views first (they name tables), then virtual tables (they take their shadow tables
    // along), then the rest.
    objects.sort_by_key(|(kind, name)| (kind != "view", !is_virtual(name, &shadow), name.clone()));
    for (kind, name) in objects {
        if shadow.shadows.contains(&name) {
            continue;
        }
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        if kind == "view" {
            script.push_str(&format!("DROP VIEW IF EXISTS {quoted};\n"));
            continue;
        }
        erased.rows += count(conn, &format!("SELECT count(*) FROM {quoted}")).await?;
        script.push_str(&format!("DROP TABLE IF EXISTS {quoted};\n"));
        erased.tables += 1;
    }
    script.push_str("COMMIT;");
    if let Err(e) = conn.execute_batch(&script).await {
        // All or nothing: whatever the batch began is rolled back.
        if let Err(rollback) = conn.execute("ROLLBACK", ()).await {
            tracing::debug!(error = %rollback, "nothing to roll back after a failed erase");
        }
        return Err(MemoryError::db("erasing the memory database")(e));
    }
    Ok(erased)
}

/// The database's virtual tables and the shadow tables that belong to them.
#[derive(Default)]
struct Shadows {
    virtuals: Vec<String>,
    shadows: Vec<String>,
}

fn is_virtual(name: &str, shadow: &Shadows) -> bool {
    shadow.virtuals.iter().any(|v| v == name)
}

async fn shadow_tables(conn: &Connection) -> Result<Shadows, MemoryError> {
    let virtuals = strings(
        conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'",
        (),
    )
    .await?;
    let mut shadows = Vec::new();
    let all = strings(
        conn,
        "SELECT name FROM sqlite_master WHERE type = 'table'",
        (),
    )
    .await?;
    for name in all {
        let belongs = virtuals
            .iter()
            .any(|v| name.len() > v.len() + 1 && name.starts_with(&format!("{v}_")));
        if belongs {
            shadows.push(name);
        }
    }
    Ok(Shadows { virtuals, shadows })
}

async fn strings(
    conn: &Connection,
    sql: &str,
    params: impl libsql::params::IntoParams,
) -> Result<Vec<String>, MemoryError> {
    let mut rows = conn
        .query(sql, params)
        .await
        .map_err(MemoryError::db("reading the memory tables"))?;
    let mut out = Vec::new();
    while let Some(row) = rows
        .next()
        .await
        .map_err(MemoryError::db("reading the memory tables"))?
    {
        out.push(
            row.get::<String>(0)
                .map_err(MemoryError::db("reading the memory tables"))?,
        );
    }
    Ok(out)
}

async fn count(conn: &Connection, sql: &str) -> Result<u64, MemoryError> {
    let mut rows = conn
        .query(sql, ())
        .await
        .map_err(MemoryError::db("counting the memory rows"))?;
    let n = match rows
        .next()
        .await
        .map_err(MemoryError::db("counting the memory rows"))?
    {
        Some(row) => row
            .get::<i64>(0)
            .map_err(MemoryError::db("counting the memory rows"))?,
        None => 0,
    };
    Ok(u64::try_from(n).unwrap_or(0))
}

impl Upkeep<'_> {
    /// Drops every table of the database after checking that it holds no other user's sessions
    /// (a database shared by several users is refused and left untouched). All or nothing.
    pub async fn erase_database(&self, user: &UserId) -> Result<Erased, MemoryError> {
        let user = user.as_str().to_owned();
        self.write(move |conn| async move { erase(&conn, &user).await })
            .await
    }
}
