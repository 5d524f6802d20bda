//! Keystone's database, read directly (SQLite file or MySQL/MariaDB URL) through sqlx's `Any`
//! driver. Every column comes back as text (`CAST(... AS CHAR)` means text on both engines), so
//! one reader serves both whatever their column types: booleans are `0`/`1`, times Keystone's
//! `DATETIME` text, JSON blobs their text.

use std::collections::HashMap;
use std::str::FromStr;

use anyhow::{bail, Context};
use chrono::NaiveDateTime;
use futures::TryStreamExt;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, ConnectOptions, Row};

/// The alembic revisions of Keystone 2023.1 (Antelope) and later, oldest first, per branch:
/// the schemas this reader knows. An older database must be upgraded by Keystone first.
const EXPAND: [&str; 6] = ["29e87d24a316", "b4f8b3f584e0", "11c3b243b4cb", "47147121", "e8725d6fa226", "742c857f1dfb"];
const CONTRACT: [&str; 3] = ["e25ffa003242", "99de3849d860", "c88cdce8f248"];

pub struct Db {
    pool: AnyPool,
    /// For messages: where the database is (the URL without a password).
    pub shown: String,
}

/// One row: the selected columns by name, each text or NULL.
pub struct SqlRow {
    values: HashMap<&'static str, Option<String>>,
}

impl SqlRow {
    pub fn opt(&self, col: &str) -> Option<&str> {
        self.values.get(col).and_then(|v| v.as_deref())
    }

    pub fn text(&self, col: &str) -> String {
        self.opt(col).unwrap_or_default().to_string()
    }

    /// Keystone's booleans: `1`/`0` (SQLite, MySQL), or `true`.
    pub fn flag(&self, col: &str) -> bool {
        matches!(self.opt(col), Some("1" | "true" | "t"))
    }

    pub fn int(&self, col: &str) -> Option<i64> {
        self.opt(col).and_then(|v| v.trim().parse().ok())
    }

    /// A `DATETIME` column as unix microseconds (Keystone stores UTC without a zone).
    pub fn micros(&self, col: &str) -> Option<i64> {
        let v = self.opt(col)?.trim();
        ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"]
            .iter()
            .find_map(|f| {
                NaiveDateTime::parse_from_str(v, f)
                    .ok()
                    .or_else(|| chrono::NaiveDate::parse_from_str(v, f).ok().and_then(|d| d.and_hms_opt(0, 0, 0)))
            })
            .map(|t| t.and_utc().timestamp_micros())
    }
}

impl Db {
    /// `source`: a path to a SQLite file, or a `sqlite:`, `mysql:` or `mariadb:` URL.
    pub async fn open(source: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let (url, shown) = if let Some(rest) = source.strip_prefix("mariadb://") {
            (format!("mysql://{rest}"), hide_password(source))
        } else if source.starts_with("mysql://") {
            (source.to_string(), hide_password(source))
        } else if source.starts_with("sqlite:") {
            (source.to_string(), source.to_string())
        } else {
            let path = std::path::Path::new(source);
            if !path.is_file() {
                bail!("{source}: no such database file (give a SQLite file or a mysql:// URL)");
            }
            // Read only: the source is never changed.
            (format!("sqlite://{source}?mode=ro"), source.to_string())
        };
        // Reading a whole table is slow by design: no slow-statement warnings in the output.
        let options = AnyConnectOptions::from_str(&url)
            .with_context(|| format!("{shown}: not a database URL"))?
            .disable_statement_logging();
        let pool = AnyPoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .with_context(|| format!("opening Keystone's database {shown}"))?;
        let db = Db { pool, shown };
        db.check_schema().await?;
        Ok(db)
    }

    /// Refuses a database that is not Keystone's, or whose schema head this reader does not
    /// know, naming what it found.
    async fn check_schema(&self) -> anyhow::Result<()> {
        let heads = self.rows("alembic_version", &["version_num"], "").await.map_err(|e| {
            anyhow::anyhow!(
                "{}: not a Keystone database of 2023.1 or later (no alembic_version table: {e:#}); a database \
                 of an older release must be upgraded with its keystone-manage db_sync first",
                self.shown
            )
        })?;
        let heads: Vec<String> = heads.iter().map(|r| r.text("version_num")).collect();
        for head in &heads {
            if !EXPAND.contains(&head.as_str()) && !CONTRACT.contains(&head.as_str()) {
                let hint = if head == "27e647c0fad4" {
                    "an unfinished upgrade from before 2023.1"
                } else {
                    "a Keystone this idnode does not know (newer than 2026.1?)"
                };
                bail!(
                    "{}: Keystone schema head {head} is {hint}; this import reads the schema of Keystone 2023.1 to \
                     2026.1 (expand {}, contract {})",
                    self.shown,
                    EXPAND[EXPAND.len() - 1],
                    CONTRACT[CONTRACT.len() - 1]
                );
            }
        }
        if !heads.iter().any(|h| EXPAND.contains(&h.as_str())) || !heads.iter().any(|h| CONTRACT.contains(&h.as_str()))
        {
            bail!(
                "{}: Keystone schema heads {heads:?} are incomplete (an expand and a contract head expected)",
                self.shown
            );
        }
        Ok(())
    }

    /// Every row of `table` (with `rest`: a `WHERE`/`ORDER BY` tail), the named columns as text.
    pub async fn rows(&self, table: &str, cols: &[&'static str], rest: &str) -> anyhow::Result<Vec<SqlRow>> {
        let mut out = Vec::new();
        self.each(table, cols, rest, |r| {
            out.push(r);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Streams the rows of `table` through `f`, so a large table is never held whole.
    pub async fn each(
        &self,
        table: &str,
        cols: &[&'static str],
        rest: &str,
        mut f: impl FnMut(SqlRow) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let select: Vec<String> = cols.iter().map(|c| format!("CAST({} AS CHAR) AS {}", quote(c), quote(c))).collect();
        let sql = format!("SELECT {} FROM {} {rest}", select.join(", "), quote(table));
        let mut stream = sqlx::query(&sql).fetch(&self.pool);
        while let Some(row) = stream.try_next().await.with_context(|| format!("reading {table} from {}", self.shown))? {
            f(decode(&row, cols).with_context(|| format!("reading {table}"))?)?;
        }
        Ok(())
    }

    pub async fn close(self) {
        self.pool.close().await;
    }
}

fn decode(row: &AnyRow, cols: &[&'static str]) -> anyhow::Result<SqlRow> {
    let mut values = HashMap::with_capacity(cols.len());
    for (i, c) in cols.iter().enumerate() {
        // MariaDB reports a cast of a TEXT column as binary: read its bytes then.
        let value = match row.try_get::<Option<String>, _>(i) {
            Ok(v) => v,
            Err(_) => match row.try_get::<Option<Vec<u8>>, _>(i)? {
                Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("column {c} is not UTF-8"))?),
                None => None,
            },
        };
        values.insert(*c, value);
    }
    Ok(SqlRow { values })
}

/// Keystone's table and column names include reserved words (`group`, `type`): quoted with
/// backquotes, which both SQLite and MySQL accept.
fn quote(name: &str) -> String {
    format!("`{name}`")
}

fn hide_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}
