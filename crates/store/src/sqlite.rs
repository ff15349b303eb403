//! `map.sqlite`, in both schemas: the legacy `blocks(pos, data)` (worlds
//! made before Luanti 5.12, kept forever) and `blocks(x, y, z, data)` with
//! primary key (x, z, y). The schema is detected by looking for a `z`
//! column, as the engine does. Extra columns and triggers added by other
//! tools are left alone: writes UPDATE the data column in place and only
//! INSERT rows that do not exist. An UPDATE also gives the row a new row id
//! above all others, as the engine's REPLACE does, so that a reader can
//! find every block written since a point by its row id
//! (`MapStore::written_after`).

mod consistent;

pub use consistent::copy_consistent;

use super::sqlite_pool::{Pool, backend};
use super::{BlockPos, Change, MapStore, Note, Result, StoreError, journal};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many blocks `get_many` reads in one read transaction.
const GET_MANY_CHUNK: usize = 256;

/// Which of the two `blocks` tables a `map.sqlite` has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// `blocks(pos INT PRIMARY KEY, data BLOB)`, pos = z*2^24 + y*2^12 + x.
    Legacy,
    /// `blocks(x, y, z, data, PRIMARY KEY (x, z, y))` (Luanti 5.12+).
    Split,
}

/// A `map.sqlite` (the `sqlite3` backend), in either schema.
pub struct SqliteStore {
    path: PathBuf,
    schema: Schema,
    read_only: bool,
    busy_timeout: Duration,
    /// Idle connections; one is taken per call so that FUSE threads do not
    /// serialize on a single connection. Reads keep a transaction open on
    /// them for a few milliseconds (see `sqlite_pool`).
    pool: Pool,
    /// The undo journal attached to every connection, if kept.
    journal: Option<PathBuf>,
    /// Device and inode of the files opened, to notice when one is removed
    /// or replaced under us (writes would go to a file nobody sees).
    identity: Vec<(PathBuf, (u64, u64))>,
    /// The map file, to read its header's change counter (`data_version`).
    /// Declared after `pool` so that it is closed after the connections:
    /// closing any descriptor of a file drops every POSIX lock this process
    /// holds on it, SQLite's included, so it must stay open while they do.
    header: Option<std::fs::File>,
    /// Checked inside every write, under an exclusive lock
    /// (`MapStore::set_write_gate`).
    gate: Option<super::WriteGate>,
    /// Whether `blocks` has row ids (not a WITHOUT ROWID table): then every
    /// write gives the row a new id above all others (the engine's REPLACE
    /// does, and so do our writes), which is how `written_after` finds them.
    rowids: bool,
}

fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

impl SqliteStore {
    /// Open an existing map database.
    pub fn open(path: &Path, read_only: bool) -> Result<SqliteStore> {
        if !path.is_file() {
            return Err(StoreError::Backend(format!("{} does not exist", path.display())));
        }
        let mut store = SqliteStore {
            path: path.to_path_buf(),
            schema: Schema::Legacy,
            read_only,
            busy_timeout: Duration::from_secs(2),
            pool: Pool::new(),
            journal: None,
            identity: Vec::new(),
            header: None,
            gate: None,
            rowids: false,
        };
        let conn = store.connect()?;
        store.header = std::fs::File::open(path).ok();
        store.schema = detect_schema(&conn).map_err(|e| hot_journal_explained(path, read_only, e))?;
        store.rowids = has_own_rowids(&conn);
        let id = file_identity(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        store.identity.push((path.to_path_buf(), id));
        store.pool.add(conn);
        Ok(store)
    }

    /// Create a new, empty map database with the given schema.
    pub fn create(path: &Path, schema: Schema) -> Result<SqliteStore> {
        let conn = Connection::open(path).map_err(backend)?;
        let sql = match schema {
            Schema::Legacy => "CREATE TABLE `blocks` (`pos` INT PRIMARY KEY, `data` BLOB)",
            Schema::Split => {
                "CREATE TABLE `blocks` (`x` INTEGER, `y` INTEGER, `z` INTEGER, \
                 `data` BLOB NOT NULL, PRIMARY KEY (`x`, `z`, `y`))"
            }
        };
        conn.execute_batch(sql).map_err(backend)?;
        drop(conn);
        SqliteStore::open(path, false)
    }

    /// The schema the file has.
    pub fn schema(&self) -> Schema {
        self.schema
    }

    /// The map file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self) -> Result<Connection> {
        let flags = if self.read_only { OpenFlags::SQLITE_OPEN_READ_ONLY } else { OpenFlags::SQLITE_OPEN_READ_WRITE }
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(backend)?;
        conn.busy_timeout(self.busy_timeout).map_err(backend)?;
        if let Some(j) = &self.journal {
            let j = j.to_str().ok_or_else(|| StoreError::Backend("journal path is not UTF-8".into()))?;
            conn.execute("ATTACH DATABASE ?1 AS journal", [j]).map_err(backend)?;
        }
        Ok(conn)
    }

    fn reading<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.pool.read(|| self.connect(), f)
    }

    fn get_in(&self, conn: &Connection, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let blob: Option<Option<Vec<u8>>> = match self.schema {
            Schema::Legacy => conn
                .prepare_cached("SELECT data FROM blocks WHERE pos = ?1 LIMIT 1")
                .and_then(|mut s| s.query_row(params![pos.legacy_key()], |r| column_bytes(r, 0)).optional()),
            Schema::Split => conn
                .prepare_cached("SELECT data FROM blocks WHERE x = ?1 AND y = ?2 AND z = ?3 LIMIT 1")
                .and_then(|mut s| s.query_row(params![pos.x, pos.y, pos.z], |r| column_bytes(r, 0)).optional()),
        }
        .map_err(backend)?;
        Ok(blob.flatten().filter(|b| !b.is_empty()))
    }

    /// Keep an undo journal in `path` (created if missing), written in the
    /// same transaction as every change.
    pub fn enable_journal(&mut self, path: &Path) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        // Created here: connections to the map are opened without CREATE,
        // and an ATTACH inherits that.
        let j = Connection::open(path).map_err(backend)?;
        j.busy_timeout(self.busy_timeout).map_err(backend)?;
        journal::create(&j, "main").map_err(backend)?;
        drop(j);
        let id = file_identity(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        self.identity.push((path.to_path_buf(), id));
        self.journal = Some(path.to_path_buf());
        self.pool.clear();
        let conn = self.connect()?;
        let mode: String = conn.query_row("PRAGMA main.journal_mode", [], |r| r.get(0)).map_err(backend)?;
        if mode.eq_ignore_ascii_case("wal") {
            log::warn!(
                "{}: the map is in WAL mode, so SQLite cannot commit it and the undo journal as one; \
                 after a crash the journal may lack the last change",
                self.path.display()
            );
        }
        self.pool.add(conn);
        Ok(())
    }

    /// Refuse to write when a file we opened was removed or replaced since.
    fn check_files(&self) -> Result<()> {
        for (path, id) in &self.identity {
            match file_identity(path) {
                Ok(now) if now == *id => {}
                Ok(_) => {
                    return Err(StoreError::Backend(format!(
                        "{} was replaced by another file since the mount; nothing written (remount to use the new one)",
                        path.display()
                    )));
                }
                Err(e) => {
                    return Err(StoreError::Backend(format!(
                        "{} is gone since the mount ({e}); nothing written (put it back or remount)",
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The undo journal attached to every connection, if one is kept.
    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_deref()
    }

    fn select_sql(&self, with_data: bool, after: bool) -> String {
        let cols = match (self.schema, with_data) {
            (Schema::Legacy, false) => "pos",
            (Schema::Legacy, true) => "pos, data",
            (Schema::Split, false) => "x, y, z",
            (Schema::Split, true) => "x, y, z, data",
        };
        let (cond, order) = match self.schema {
            Schema::Legacy => ("pos > ?1", "pos"),
            Schema::Split => ("(x, z, y) > (?1, ?2, ?3)", "x, z, y"),
        };
        let filter = if after { format!("WHERE {cond} ") } else { String::new() };
        format!("SELECT {cols} FROM blocks {filter}ORDER BY {order} LIMIT ?{}", self.limit_param(after))
    }

    fn limit_param(&self, after: bool) -> usize {
        match (self.schema, after) {
            (_, false) => 1,
            (Schema::Legacy, true) => 2,
            (Schema::Split, true) => 4,
        }
    }

    fn row_pos(&self, row: &rusqlite::Row<'_>) -> rusqlite::Result<Option<BlockPos>> {
        self.row_pos_at(row, 0)
    }

    /// The block of a row whose key starts at column `first`.
    fn row_pos_at(&self, row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Option<BlockPos>> {
        Ok(match self.schema {
            Schema::Legacy => {
                let Some(key) = column_int(row, first)? else { return Ok(None) };
                let p = BlockPos::from_legacy_key(key);
                (p.legacy_key() == key).then_some(p)
            }
            Schema::Split => {
                let col = |i: usize| column_int(row, first + i);
                let (Some(x), Some(y), Some(z)) = (col(0)?, col(1)?, col(2)?) else {
                    return Ok(None);
                };
                let c = |v: i64| i16::try_from(v).ok();
                match (c(x), c(y), c(z)) {
                    (Some(x), Some(y), Some(z)) => Some(BlockPos::new(x, y, z)).filter(|p| p.in_range()),
                    _ => None,
                }
            }
        })
    }

    /// The last row written, its block and its checksum (`WriteMark`), in
    /// `conn`'s transaction.
    fn mark_in(&self, conn: &Connection) -> Result<super::WriteMark> {
        let row: i64 =
            conn.query_row("SELECT coalesce(max(rowid), 0) FROM blocks", [], |r| r.get(0)).map_err(backend)?;
        let (block, check) = self.row_check(conn, row)?.unwrap_or((None, 0));
        Ok(super::WriteMark { row, block, check })
    }

    /// Row `row`'s block and a checksum of its key and bytes; None if there
    /// is no such row.
    fn row_check(&self, conn: &Connection, row: i64) -> Result<Option<(Option<BlockPos>, u32)>> {
        let sql = format!("{} WHERE rowid = ?1", self.select_rows_sql());
        let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
        let mut rows = stmt.query(params![row]).map_err(backend)?;
        let Some(r) = rows.next().map_err(backend)? else { return Ok(None) };
        let block = self.row_pos(r).map_err(backend)?;
        let mut crc = flate2::Crc::new();
        crc.update(&block.map_or(u64::MAX, |p| p.packed()).to_le_bytes());
        crc.update(&column_bytes(r, self.data_column()).map_err(backend)?.unwrap_or_default());
        Ok(Some((block, crc.sum())))
    }

    fn select_rows_sql(&self) -> &'static str {
        match self.schema {
            Schema::Legacy => "SELECT pos, data FROM blocks",
            Schema::Split => "SELECT x, y, z, data FROM blocks",
        }
    }

    fn data_column(&self) -> usize {
        match self.schema {
            Schema::Legacy => 1,
            Schema::Split => 3,
        }
    }

    /// A page of `written_after`, in one read transaction.
    fn written_in(
        &self,
        conn: &Connection,
        mark: &super::WriteMark,
        after: i64,
        limit: usize,
    ) -> Result<super::Written> {
        let sql = format!(
            "{} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            self.select_rows_sql().replacen("SELECT ", "SELECT rowid, ", 1)
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
        let mut rows = stmt.query(params![after, limit as i64]).map_err(backend)?;
        let (mut blocks, mut read) = (Vec::new(), 0usize);
        while let Some(r) = rows.next().map_err(backend)? {
            read += 1;
            let row: i64 = r.get(0).map_err(backend)?;
            let pos = self.row_pos_at(r, 1).map_err(backend)?;
            if let Some(p) = pos {
                blocks.push((row, p, column_bytes(r, self.data_column() + 1).map_err(backend)?.unwrap_or_default()));
            }
        }
        if read == limit {
            return Ok(super::Written { blocks, end: None });
        }
        let mark_row_kept = self.row_check(conn, mark.row)?.map(|(_, check)| check == mark.check);
        let count: i64 = conn.query_row("SELECT count(*) FROM blocks", [], |r| r.get(0)).map_err(backend)?;
        let end = super::WrittenEnd { count: count as u64, mark: self.mark_in(conn)?, mark_row_kept };
        Ok(super::Written { blocks, end: Some(end) })
    }

    fn query_after<T>(
        &self,
        after: Option<BlockPos>,
        limit: usize,
        with_data: bool,
        mut map: impl FnMut(BlockPos, &rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let sql = self.select_sql(with_data, after.is_some());
        self.reading(|conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            let limit = limit as i64;
            let mut rows = match (after, self.schema) {
                (None, _) => stmt.query(params![limit]),
                (Some(p), Schema::Legacy) => stmt.query(params![p.legacy_key(), limit]),
                (Some(p), Schema::Split) => stmt.query(params![p.x, p.z, p.y, limit]),
            }
            .map_err(backend)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(backend)? {
                match self.row_pos(row).map_err(backend)? {
                    Some(p) => out.push(map(p, row).map_err(backend)?),
                    None => {
                        log::warn!("{}: skipping a row whose key is not a valid block position", self.path.display())
                    }
                }
            }
            Ok(out)
        })
    }
}

/// The path of the rollback journal SQLite keeps beside `map`.
pub fn rollback_journal_path(map: &Path) -> PathBuf {
    let mut p = map.as_os_str().to_owned();
    p.push("-journal");
    PathBuf::from(p)
}

/// Whether a crash left a hot journal beside database `db` (SQLite itself
/// also checks that no process holds the database's write lock).
pub fn has_hot_journal(db: &Path) -> bool {
    std::fs::metadata(rollback_journal_path(db)).is_ok_and(|m| m.len() > 0)
}

/// A read-only open or read refused because a crash left a hot journal:
/// SQLite must roll the interrupted transaction back (which writes the
/// database) before it reads anything, so it says "read-only". Say what
/// it is and what to do instead.
pub fn hot_journal_explained(db: &Path, read_only: bool, e: StoreError) -> StoreError {
    if !read_only || !matches!(e, StoreError::ReadOnly) || !has_hot_journal(db) {
        return e;
    }
    let name = db.file_name().map_or_else(|| db.display().to_string(), |n| n.to_string_lossy().into_owned());
    StoreError::Backend(format!(
        "{} holds a transaction that a crash interrupted (a hot journal); SQLite must roll it back \
         before {name} can be read, which writes it, and this open is read-only. Roll it back \
         with `worldfs check --repair WORLD` (or mount the world once without -o ro, or run \
         `sqlite3 {} 'PRAGMA quick_check'`), then try again; do not delete the journal, that would \
         leave {name} half-written",
        rollback_journal_path(db).display(),
        db.display()
    ))
}

/// A block's data as the engine reads it (`sqlite3_column_blob`): the bytes
/// of a BLOB or of a TEXT value alike (a tool may have stored it as TEXT),
/// a number as its text; None for NULL. Never an error for one odd row:
/// data that does not decode is one corrupt block, shown as such.
fn column_bytes(row: &rusqlite::Row<'_>, col: usize) -> rusqlite::Result<Option<Vec<u8>>> {
    use rusqlite::types::ValueRef;
    Ok(match row.get_ref(col)? {
        ValueRef::Null => None,
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
        ValueRef::Integer(i) => Some(i.to_string().into_bytes()),
        ValueRef::Real(f) => Some(f.to_string().into_bytes()),
    })
}

/// A key column's integer; None (the row is skipped as not a block
/// position) for any other type.
fn column_int(row: &rusqlite::Row<'_>, col: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(col)? {
        rusqlite::types::ValueRef::Integer(i) => Some(i),
        _ => None,
    })
}

/// Whether `blocks` has row ids of its own: a table WITHOUT ROWID has
/// none, and in one whose key is declared `INTEGER PRIMARY KEY` (another
/// tool's) the row id is the key itself, which a write must never move.
fn has_own_rowids(conn: &Connection) -> bool {
    if conn.prepare("SELECT rowid FROM blocks LIMIT 1").is_err() {
        return false;
    }
    let keys: Vec<String> = conn
        .prepare("SELECT type FROM pragma_table_info('blocks') WHERE pk > 0")
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect())
        .unwrap_or_default();
    !(keys.len() == 1 && keys[0].eq_ignore_ascii_case("INTEGER"))
}

fn detect_schema(conn: &Connection) -> Result<Schema> {
    let mut stmt = conn.prepare("PRAGMA table_info(blocks)").map_err(backend)?;
    let cols: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(1))
        .map_err(backend)?
        .collect::<rusqlite::Result<_>>()
        .map_err(backend)?;
    let has = |c: &str| cols.iter().any(|x| x.eq_ignore_ascii_case(c));
    if has("z") && has("x") && has("y") && has("data") {
        Ok(Schema::Split)
    } else if has("pos") && has("data") {
        Ok(Schema::Legacy)
    } else if cols.is_empty() {
        Err(StoreError::Backend("no 'blocks' table in the map database".into()))
    } else {
        Err(StoreError::Backend(format!("unrecognised 'blocks' table columns: {}", cols.join(", "))))
    }
}

impl MapStore for SqliteStore {
    fn describe(&self) -> String {
        let s = match self.schema {
            Schema::Legacy => "legacy pos schema",
            Schema::Split => "x,y,z schema",
        };
        format!("sqlite3, {s}")
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        self.reading(|conn| self.get_in(conn, pos))
    }

    /// A few hundred blocks a read (one connection and transaction taken
    /// for them all, yet short enough that a server's save waits little).
    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out = Vec::with_capacity(positions.len());
        for chunk in positions.chunks(GET_MANY_CHUNK) {
            self.reading(|conn| {
                for p in chunk {
                    out.push(self.get_in(conn, *p)?);
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    fn contains(&self, pos: BlockPos) -> Result<bool> {
        self.reading(|conn| {
            let n: Option<i64> = match self.schema {
                Schema::Legacy => conn
                    .prepare_cached("SELECT length(data) FROM blocks WHERE pos = ?1 LIMIT 1")
                    .and_then(|mut s| s.query_row(params![pos.legacy_key()], |r| r.get(0)).optional()),
                Schema::Split => conn
                    .prepare_cached("SELECT length(data) FROM blocks WHERE x = ?1 AND y = ?2 AND z = ?3 LIMIT 1")
                    .and_then(|mut s| s.query_row(params![pos.x, pos.y, pos.z], |r| r.get(0)).optional()),
            }
            .map_err(backend)?
            .flatten();
            Ok(n.unwrap_or(0) > 0)
        })
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        self.query_after(after, limit, false, |p, _| Ok(p))
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let col = self.data_column();
        self.query_after(after, limit, true, |p, row| Ok((p, column_bytes(row, col)?.unwrap_or_default())))
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        self.check_files()?;
        self.pool.write(
            || self.connect(),
            |conn| {
                // With a gate, readers are kept out from its check to the
                // commit: nobody reads the old blocks in between.
                let behavior = match self.gate {
                    Some(_) => rusqlite::TransactionBehavior::Exclusive,
                    None => rusqlite::TransactionBehavior::Immediate,
                };
                let tx = conn.transaction_with_behavior(behavior).map_err(backend)?;
                if let Some(gate) = &self.gate {
                    gate()?;
                }
                // Each block read once, for its expectation and its journal
                // record both.
                let mut current: std::collections::HashMap<BlockPos, Option<Vec<u8>>> =
                    std::collections::HashMap::new();
                let mut read = |p: BlockPos| -> Result<Option<Vec<u8>>> {
                    if let Some(b) = current.get(&p) {
                        return Ok(b.clone());
                    }
                    let b = self.get_in(&tx, p)?;
                    current.insert(p, b.clone());
                    Ok(b)
                };
                if let Some(e) = super::unmet_expectation(changes, &mut read)? {
                    return Err(e);
                }
                if self.journal.is_some() {
                    let mut blocks = Vec::with_capacity(changes.len());
                    for change in changes {
                        let (p, after) = match change {
                            Change::Put(p, data) => (*p, Some(data.as_slice())),
                            Change::Delete(p) => (*p, None),
                            Change::Expect(..) => continue,
                        };
                        // The expectation's read moved, not copied (a world-wide
                        // rename's part holds many); nothing is written yet, so
                        // a second change of the same block reads the same.
                        let before = match current.remove(&p) {
                            Some(b) => b,
                            None => self.get_in(&tx, p)?,
                        };
                        blocks.push((p, before, after));
                    }
                    journal::record(&tx, note, &blocks).map_err(backend)?;
                }
                for change in changes {
                    match (change, self.schema) {
                        (Change::Put(p, data), Schema::Legacy) => {
                            let n = tx
                                .prepare_cached(if self.rowids {
                                    "UPDATE blocks SET data = ?1, rowid = (SELECT max(rowid) FROM blocks) + 1 WHERE pos = ?2"
                                } else {
                                    "UPDATE blocks SET data = ?1 WHERE pos = ?2"
                                })
                                .and_then(|mut s| s.execute(params![data, p.legacy_key()]))
                                .map_err(backend)?;
                            if n == 0 {
                                tx.prepare_cached("INSERT INTO blocks (pos, data) VALUES (?1, ?2)")
                                    .and_then(|mut s| s.execute(params![p.legacy_key(), data]))
                                    .map_err(backend)?;
                            }
                        }
                        (Change::Put(p, data), Schema::Split) => {
                            let n = tx
                                .prepare_cached(if self.rowids {
                                    "UPDATE blocks SET data = ?1, rowid = (SELECT max(rowid) FROM blocks) + 1 \
                                     WHERE x = ?2 AND y = ?3 AND z = ?4"
                                } else {
                                    "UPDATE blocks SET data = ?1 WHERE x = ?2 AND y = ?3 AND z = ?4"
                                })
                                .and_then(|mut s| s.execute(params![data, p.x, p.y, p.z]))
                                .map_err(backend)?;
                            if n == 0 {
                                tx.prepare_cached("INSERT INTO blocks (x, y, z, data) VALUES (?1, ?2, ?3, ?4)")
                                    .and_then(|mut s| s.execute(params![p.x, p.y, p.z, data]))
                                    .map_err(backend)?;
                            }
                        }
                        (Change::Delete(p), Schema::Legacy) => {
                            tx.prepare_cached("DELETE FROM blocks WHERE pos = ?1")
                                .and_then(|mut s| s.execute(params![p.legacy_key()]))
                                .map_err(backend)?;
                        }
                        (Change::Delete(p), Schema::Split) => {
                            tx.prepare_cached("DELETE FROM blocks WHERE x = ?1 AND y = ?2 AND z = ?3")
                                .and_then(|mut s| s.execute(params![p.x, p.y, p.z]))
                                .map_err(backend)?;
                        }
                        (Change::Expect(..), _) => {}
                    }
                }
                tx.commit().map_err(backend)
            },
        )
    }

    fn write_mark(&self) -> Result<Option<super::WriteMark>> {
        if !self.rowids {
            return Ok(None);
        }
        self.reading(|conn| self.mark_in(conn).map(Some))
    }

    fn written_after(&self, mark: &super::WriteMark, after: i64, limit: usize) -> Result<Option<super::Written>> {
        if !self.rowids {
            return Ok(None);
        }
        self.reading(|conn| self.written_in(conn, mark, after, limit).map(Some))
    }

    fn count(&self) -> Result<u64> {
        self.reading(|conn| {
            conn.query_row("SELECT count(*) FROM blocks", [], |r| r.get::<_, i64>(0)).map(|n| n as u64).map_err(backend)
        })
    }

    fn set_write_gate(&mut self, gate: super::WriteGate) {
        self.gate = Some(gate);
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The file change counter of the database header (offset 24), which
    /// SQLite increments in every transaction that changes the file, as
    /// other processes' SQLite does to learn that its cache is stale. Not
    /// kept in WAL mode (header bytes 18 and 19 are then 2): None.
    fn data_version(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut h = [0u8; 10];
        self.header.as_ref()?.read_exact_at(&mut h, 18).ok()?;
        if h[0] != 1 || h[1] != 1 {
            return None;
        }
        Some(u32::from_be_bytes([h[6], h[7], h[8], h[9]]).into())
    }

    fn read_consistent(
        &self,
        scratch: &Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<super::Consistency> {
        consistent::read_consistent(self, scratch, each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both() -> Vec<(tempfile::TempDir, SqliteStore)> {
        [Schema::Legacy, Schema::Split]
            .into_iter()
            .map(|s| {
                let d = tempfile::tempdir().unwrap();
                let st = SqliteStore::create(&d.path().join("map.sqlite"), s).unwrap();
                (d, st)
            })
            .collect()
    }

    #[test]
    fn put_get_list_delete_in_both_schemas() {
        for (_d, st) in both() {
            let ps = [
                BlockPos::new(0, 0, 0),
                BlockPos::new(-1, 2, -3),
                BlockPos::new(5, -6, 7),
                BlockPos::new(-2048, 2047, 0),
            ];
            st.apply(
                &ps.iter().map(|&p| Change::Put(p, vec![29, p.x as u8])).collect::<Vec<_>>(),
                &crate::Note::default(),
            )
            .unwrap();
            assert_eq!(st.count().unwrap(), 4);
            assert_eq!(st.get(ps[1]).unwrap(), Some(vec![29, ps[1].x as u8]));
            assert!(st.contains(ps[2]).unwrap());
            assert!(!st.contains(BlockPos::new(9, 9, 9)).unwrap());
            // paging in pages of 1 visits everything once, in order
            let mut seen = Vec::new();
            let mut after = None;
            loop {
                let page = st.list_after(after, 1).unwrap();
                let Some(&p) = page.first() else { break };
                seen.push(p);
                after = Some(p);
            }
            let mut all = st.list_after(None, 100).unwrap();
            assert_eq!(seen, all);
            all.sort();
            let mut expect = ps.to_vec();
            expect.sort();
            assert_eq!(all, expect, "{}", st.describe());
            let scanned = st.scan_after(None, 100).unwrap();
            assert_eq!(scanned.len(), 4);
            st.apply(&[Change::Put(ps[0], vec![1, 2, 3]), Change::Delete(ps[1])], &crate::Note::default()).unwrap();
            assert_eq!(st.get(ps[0]).unwrap(), Some(vec![1, 2, 3]));
            assert_eq!(st.get(ps[1]).unwrap(), None);
        }
    }

    #[test]
    fn unmet_expectations_refuse_the_whole_transaction() {
        for (_d, st) in both() {
            let (a, b) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0));
            st.apply(&[Change::Put(a, vec![29, 1])], &Note::default()).unwrap();
            let e = st
                .apply(&[Change::Expect(a, Some(vec![29, 0])), Change::Put(b, vec![29, 2])], &Note::default())
                .unwrap_err();
            assert!(matches!(&e, StoreError::Conflict(m) if m.contains("block 1,0,0 was changed")), "{e}");
            assert_eq!(st.get(b).unwrap(), None, "nothing of a refused transaction is written");
            let e = st.apply(&[Change::Expect(b, Some(vec![1])), Change::Delete(a)], &Note::default()).unwrap_err();
            assert!(e.to_string().contains("it is now absent"), "{e}");
            st.apply(
                &[Change::Expect(a, Some(vec![29, 1])), Change::Expect(b, None), Change::Delete(a)],
                &Note::default(),
            )
            .unwrap();
            assert_eq!(st.get(a).unwrap(), None);
        }
    }

    #[test]
    fn extra_columns_survive_an_update() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("map.sqlite");
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE blocks (pos INT PRIMARY KEY, data BLOB, mtime INT DEFAULT 7); INSERT INTO blocks VALUES (0, x'1d', 42);").unwrap();
        drop(c);
        let st = SqliteStore::open(&path, false).unwrap();
        st.apply(&[Change::Put(BlockPos::new(0, 0, 0), vec![29, 1])], &crate::Note::default()).unwrap();
        let c = Connection::open(&path).unwrap();
        let mtime: i64 = c.query_row("SELECT mtime FROM blocks WHERE pos = 0", [], |r| r.get(0)).unwrap();
        assert_eq!(mtime, 42);
    }

    #[test]
    fn read_only_refuses_writes_and_missing_table_is_explained() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("map.sqlite");
        SqliteStore::create(&path, Schema::Legacy).unwrap();
        let ro = SqliteStore::open(&path, true).unwrap();
        assert_eq!(
            ro.apply(&[Change::Delete(BlockPos::new(0, 0, 0))], &crate::Note::default()),
            Err(StoreError::ReadOnly)
        );
        let other = d.path().join("other.sqlite");
        Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (a)").unwrap();
        let e = SqliteStore::open(&other, true).err().unwrap();
        assert!(e.to_string().contains("no 'blocks' table"), "{e}");
    }

    /// The gate runs while no other connection can read the map (so a
    /// server cannot read the old blocks between the check and the
    /// commit), and its refusal writes nothing.
    #[test]
    fn a_write_gate_keeps_readers_out_and_can_refuse() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("map.sqlite");
        let mut st = SqliteStore::create(&path, Schema::Legacy).unwrap();
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(None));
        let (p, s) = (path.clone(), seen.clone());
        st.set_write_gate(Box::new(move || {
            let other = Connection::open(&p).map_err(backend)?;
            let read = other.query_row("SELECT count(*) FROM blocks", [], |r| r.get::<_, i64>(0));
            *s.lock() = Some(read.is_err());
            Ok(())
        }));
        let (a, b) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0));
        st.apply(&[Change::Put(a, vec![29, 1])], &Note::default()).unwrap();
        assert_eq!(*seen.lock(), Some(true), "a reader was kept out while the gate looked");
        st.set_write_gate(Box::new(|| Err(StoreError::Busy("a server started".into()))));
        let e = st.apply(&[Change::Put(b, vec![29, 2])], &Note::default()).unwrap_err();
        assert!(matches!(&e, StoreError::Busy(m) if m == "a server started"), "{e}");
        assert_eq!(st.get(b).unwrap(), None, "nothing of a refused write is written");
    }

    #[test]
    fn a_held_lock_gives_busy_not_a_crash() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("map.sqlite");
        let mut st = SqliteStore::create(&path, Schema::Legacy).unwrap();
        st.busy_timeout = Duration::from_millis(50);
        st.pool.clear();
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE; INSERT INTO blocks VALUES (1, x'00');").unwrap();
        let e = st.apply(&[Change::Put(BlockPos::new(0, 0, 0), vec![1])], &crate::Note::default()).unwrap_err();
        assert!(matches!(e, StoreError::Busy(_)), "{e:?}");
        assert!(matches!(st.get(BlockPos::new(0, 0, 0)), Err(StoreError::Busy(_))));
        other.execute_batch("ROLLBACK").unwrap();
        st.apply(&[Change::Put(BlockPos::new(0, 0, 0), vec![1])], &crate::Note::default()).unwrap();
    }

    #[test]
    fn data_version_changes_with_every_write_by_anyone() {
        for (d, st) in both() {
            let p = BlockPos::new(1, 2, 3);
            st.apply(&[Change::Put(p, vec![29, 1])], &Note::default()).unwrap();
            let v0 = st.data_version().expect("a rollback-journal map has a change counter");
            // Reads change nothing.
            st.get(p).unwrap();
            st.list_after(None, 10).unwrap();
            assert_eq!(st.data_version(), Some(v0));
            // A write of ours...
            st.apply(&[Change::Put(p, vec![29, 2])], &Note::default()).unwrap();
            let v1 = st.data_version().unwrap();
            assert_ne!(v1, v0);
            // ...and another process's (another connection, as the server).
            let other = Connection::open(d.path().join("map.sqlite")).unwrap();
            other.execute("DELETE FROM blocks", []).unwrap();
            let v2 = st.data_version().unwrap();
            assert_ne!(v2, v1);
            // A transaction that changes nothing leaves it.
            other.execute_batch("BEGIN; SELECT count(*) FROM blocks; COMMIT;").unwrap();
            assert_eq!(st.data_version(), Some(v2));
        }
    }

    /// What the engine does to save a block (`REPLACE INTO`), from another connection.
    fn save_as_the_server(d: &tempfile::TempDir, st: &SqliteStore, p: BlockPos, data: &[u8]) {
        let other = Connection::open(d.path().join("map.sqlite")).unwrap();
        match st.schema() {
            Schema::Legacy => {
                other.execute("REPLACE INTO blocks (pos, data) VALUES (?1, ?2)", params![p.legacy_key(), data])
            }
            Schema::Split => other
                .execute("REPLACE INTO blocks (x, y, z, data) VALUES (?1, ?2, ?3, ?4)", params![p.x, p.y, p.z, data]),
        }
        .unwrap();
    }

    #[test]
    fn blocks_written_since_a_mark_by_us_and_by_the_server() {
        let (a, b, c, n) =
            (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0), BlockPos::new(3, 0, 0), BlockPos::new(-4, 5, 6));
        let since_most = |st: &SqliteStore, m: &crate::WriteMark, most: usize| {
            let mut got: Vec<(BlockPos, Vec<u8>)> = Vec::new();
            let end = crate::each_written_since(st, m, most, &mut |page| {
                got.extend(page.iter().map(|(_, p, b)| (*p, b.clone())))
            })
            .unwrap();
            got.sort_by_key(|(p, _)| p.packed());
            end.map(|(count, _)| (got, count))
        };
        let since = |st: &SqliteStore, m: &crate::WriteMark| since_most(st, m, 100);
        for (d, st) in both() {
            let put = |p: BlockPos, v: u8| st.apply(&[Change::Put(p, vec![29, v])], &Note::default()).unwrap();
            [a, b, c].into_iter().for_each(|p| put(p, 1));
            let m0 = st.write_mark().unwrap().expect("a table with row ids");
            assert_eq!(since(&st, &m0), Some((vec![], 3)));
            // The server saves b again and a new block n.
            save_as_the_server(&d, &st, b, &[29, 2]);
            save_as_the_server(&d, &st, n, &[29, 3]);
            assert_eq!(since(&st, &m0), Some((vec![(n, vec![29, 3]), (b, vec![29, 2])], 4)));
            // Ours are seen too (another mount's index needs them).
            let m1 = st.write_mark().unwrap().unwrap();
            put(a, 4);
            assert_eq!(since(&st, &m1), Some((vec![(a, vec![29, 4])], 4)));
            assert_eq!(since_most(&st, &m0, 2), None, "more than asked for");
            // The last row replaced by the server: its block is among the written.
            let m2 = st.write_mark().unwrap().unwrap();
            assert_eq!(m2.block, Some(a));
            save_as_the_server(&d, &st, a, &[29, 5]);
            assert_eq!(since(&st, &m2), Some((vec![(a, vec![29, 5])], 4)));
            // The last row deleted: a row id at or below the mark may be given
            // again, so nothing can be told.
            let m3 = st.write_mark().unwrap().unwrap();
            let other = Connection::open(d.path().join("map.sqlite")).unwrap();
            let key = |p: BlockPos| match st.schema() {
                Schema::Legacy => format!("pos = {}", p.legacy_key()),
                Schema::Split => format!("x = {} AND y = {} AND z = {}", p.x, p.y, p.z),
            };
            other.execute(&format!("DELETE FROM blocks WHERE {}", key(a)), []).unwrap();
            assert_eq!(since(&st, &m3), None);
            save_as_the_server(&d, &st, a, &[29, 6]);
            assert_eq!(since(&st, &m3), None, "a row id given again");
            // A deletion elsewhere is told by the count alone.
            let m4 = st.write_mark().unwrap().unwrap();
            other.execute(&format!("DELETE FROM blocks WHERE {}", key(c)), []).unwrap();
            assert_eq!(since(&st, &m4), Some((vec![], 3)));
        }
        // A table without row ids cannot tell, nor one whose key is its row
        // id (`INTEGER PRIMARY KEY`): there a write must not move the row id,
        // which is the block's position.
        for table in [
            "CREATE TABLE blocks (pos INT PRIMARY KEY, data BLOB) WITHOUT ROWID",
            "CREATE TABLE blocks (pos integer PRIMARY KEY, data BLOB)",
        ] {
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join("map.sqlite");
            Connection::open(&path).unwrap().execute_batch(table).unwrap();
            let st = SqliteStore::open(&path, false).unwrap();
            st.apply(&[Change::Put(a, vec![29, 1]), Change::Put(b, vec![29, 2])], &Note::default()).unwrap();
            st.apply(&[Change::Put(a, vec![29, 3])], &Note::default()).unwrap();
            assert_eq!(st.get(a).unwrap(), Some(vec![29, 3]), "{table}");
            assert_eq!(st.get(b).unwrap(), Some(vec![29, 2]), "{table}");
            assert_eq!(st.list_after(None, 10).unwrap(), vec![a, b], "{table}: no block moved");
            assert_eq!(st.write_mark().unwrap(), None, "{table}");
        }
    }

    #[test]
    fn no_data_version_in_wal_mode() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("map.sqlite");
        let st = SqliteStore::create(&path, Schema::Legacy).unwrap();
        assert!(st.data_version().is_some());
        let other = Connection::open(&path).unwrap();
        let mode: String = other.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(st.data_version(), None, "WAL commits do not move the header's counter");
    }
}
