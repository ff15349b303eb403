//! The undo journal: a SQLite file in the world directory
//! (`worldfs-journal.sqlite`) holding, for every transaction worldfs makes,
//! what it was ("write blocks/1,2,3/names"), when, and each changed block's
//! bytes from before. A fingerprint (length and CRC-32) of the bytes after
//! lets `worldfs undo` notice blocks changed since by someone else.
//!
//! For the SQLite map the journal is ATTACHed to the map's connections and
//! written inside the same transaction as the change, so block and journal
//! entry commit together or not at all (SQLite commits attached databases
//! atomically unless the map is in WAL mode, which the engine never sets).

use super::{BlockPos, Note, Result, StoreError};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The journal's file name in the world directory.
pub const FILE_NAME: &str = "worldfs-journal.sqlite";

/// Create the journal's tables in the schema named `db` ("main" or an
/// ATTACH alias), and add the columns a journal of an older worldfs lacks.
pub(super) fn create(conn: &Connection, db: &str) -> rusqlite::Result<()> {
    conn.execute_batch(&create_sql(db))?;
    let has_dates: bool = conn.query_row(
        &format!("SELECT count(*) FROM pragma_table_info('records', '{db}') WHERE name = 'created'"),
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_dates {
        // No declared type: SQLite keeps each value exactly as it was given.
        for column in ["created", "modified"] {
            match conn.execute_batch(&format!("ALTER TABLE {db}.records ADD COLUMN {column}")) {
                // Another process opening the same old journal added it first.
                Err(e) if e.to_string().contains("duplicate column name") => {}
                other => other?,
            }
        }
    }
    Ok(())
}

/// Tables, created in the schema named `db` ("main" or an ATTACH alias).
fn create_sql(db: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {db}.changes (
             id INTEGER PRIMARY KEY,
             time_ms INTEGER NOT NULL,
             what TEXT NOT NULL,
             blocks INTEGER NOT NULL,
             reverted_by INTEGER);
         CREATE TABLE IF NOT EXISTS {db}.blocks (
             change INTEGER NOT NULL,
             seq INTEGER NOT NULL,
             x INTEGER NOT NULL, y INTEGER NOT NULL, z INTEGER NOT NULL,
             before BLOB,
             after_len INTEGER,
             after_crc INTEGER,
             PRIMARY KEY (change, seq));
         CREATE TABLE IF NOT EXISTS {db}.records (
             change INTEGER NOT NULL,
             seq INTEGER NOT NULL,
             collection TEXT NOT NULL,
             name TEXT NOT NULL,
             before BLOB,
             after_len INTEGER,
             after_crc INTEGER,
             created,
             modified,
             PRIMARY KEY (change, seq));
         CREATE TABLE IF NOT EXISTS {db}.file_patches (
             change INTEGER NOT NULL,
             seq INTEGER NOT NULL,
             path TEXT NOT NULL,
             patch BLOB NOT NULL,
             after_len INTEGER NOT NULL,
             after_crc INTEGER NOT NULL,
             PRIMARY KEY (change, seq));"
    )
}

/// Defined at the crate's root, which names it in its conflict messages.
pub use crate::Fingerprint;

/// One journaled transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeInfo {
    /// The change's number: increasing, never reused.
    pub id: i64,
    /// Milliseconds since 1970-01-01 UTC.
    pub time_ms: i64,
    /// What the change was ([`Note::what`](crate::Note::what)).
    pub what: String,
    /// How many blocks (or records) it changed.
    pub blocks: u64,
    /// The change that reverted this one, if any.
    pub reverted_by: Option<i64>,
}

/// One block of a journaled transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    /// The block.
    pub pos: BlockPos,
    /// The bytes before; None: the block did not exist.
    pub before: Option<Vec<u8>>,
    /// What the change left; None: it deleted the block.
    pub after: Option<Fingerprint>,
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("undo journal: {e}"))
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// One block for `record`: position, bytes before, bytes after (None:
/// absent).
pub type Step<'a> = StepOf<'a, Vec<u8>>;

/// A `Step` whose bytes before are any byte buffer (borrowed or owned).
pub type StepOf<'a, B> = (BlockPos, Option<B>, Option<&'a [u8]>);

/// Record a transaction in the journal attached as `journal`, inside the
/// caller's transaction.
/// (The bytes before may be borrowed: `B` is any byte buffer.)
pub(crate) fn record<B: AsRef<[u8]>>(
    tx: &rusqlite::Transaction<'_>,
    note: &Note,
    blocks: &[StepOf<'_, B>],
) -> rusqlite::Result<i64> {
    let id = insert_change(tx, note, blocks.len())?;
    let mut ins = tx.prepare_cached(
        "INSERT INTO journal.blocks (change, seq, x, y, z, before, after_len, after_crc) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, (p, before, after)) in blocks.iter().enumerate() {
        let fp = after.map(Fingerprint::of);
        ins.execute(params![
            id,
            seq as i64,
            p.x,
            p.y,
            p.z,
            before.as_ref().map(AsRef::as_ref),
            fp.map(|f| f.len as i64),
            fp.map(|f| f.crc as i64)
        ])?;
    }
    Ok(id)
}

/// The entry of a change of `count` blocks or records, with the entries it
/// reverts marked; its id.
fn insert_change(tx: &rusqlite::Transaction<'_>, note: &Note, count: usize) -> rusqlite::Result<i64> {
    tx.prepare_cached("INSERT INTO journal.changes (time_ms, what, blocks) VALUES (?1, ?2, ?3)")?.execute(params![
        now_ms(),
        note.what,
        count as i64
    ])?;
    let id = tx.last_insert_rowid();
    let mut mark = tx.prepare_cached("UPDATE journal.changes SET reverted_by = ?1 WHERE id = ?2")?;
    for r in &note.reverts {
        mark.execute(params![id, r])?;
    }
    Ok(id)
}

/// One record (player, account, mod storage) for `record_records`: its
/// name, canonical bytes before, bytes after (None: absent), and the dates
/// its table kept beside it before (None: the backend keeps none).
pub type RecordStep<'a> = (&'a str, Option<Vec<u8>>, Option<&'a [u8]>, Option<RecordDates>);

/// A player's `creation_date` and `modification_date` as its table held
/// them (SQLite: the value itself, of any type; PostgreSQL: the text of
/// the timestamp). The encoded record has no dates, so undo restores them
/// from these.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordDates {
    /// `creation_date` as the table held it.
    pub created: rusqlite::types::Value,
    /// `modification_date` as the table held it.
    pub modified: rusqlite::types::Value,
}

/// Record a transaction over records of `collection` ("players", "auth",
/// "mod_storage") in the journal attached as `journal`, inside the
/// caller's transaction. Its `blocks` count is the number of records.
pub fn record_records(
    tx: &rusqlite::Transaction<'_>,
    note: &Note,
    collection: &str,
    steps: &[RecordStep<'_>],
) -> rusqlite::Result<i64> {
    let id = insert_change(tx, note, steps.len())?;
    let mut ins = tx.prepare_cached(
        "INSERT INTO journal.records (change, seq, collection, name, before, after_len, after_crc, created, modified) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, (name, before, after, dates)) in steps.iter().enumerate() {
        let fp = after.map(Fingerprint::of);
        ins.execute(params![
            id,
            seq as i64,
            collection,
            name,
            before,
            fp.map(|f| f.len as i64),
            fp.map(|f| f.crc as i64),
            dates.as_ref().map(|d| &d.created),
            dates.as_ref().map(|d| &d.modified)
        ])?;
    }
    Ok(id)
}

/// A whole file a change of records rewrote, for undo to put back byte for
/// byte (a Minecraft region file): its path in the world, the patch that
/// turns what the change left back into what was there
/// (`codec::filepatch`), and a fingerprint of what the change left.
pub type FileStep<'a> = (&'a str, &'a [u8], Fingerprint);

/// One file of a journaled change (see [`FileStep`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePatch {
    /// The file's path in the world (`region/r.0.0.mca`).
    pub path: String,
    /// The patch that turns what the change left back into what it found.
    pub patch: Vec<u8>,
    /// The fingerprint of what the change left.
    pub after: Fingerprint,
}

fn record_files(tx: &rusqlite::Transaction<'_>, id: i64, files: &[FileStep<'_>]) -> rusqlite::Result<()> {
    let mut ins = tx.prepare_cached(
        "INSERT INTO journal.file_patches (change, seq, path, patch, after_len, after_crc) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (seq, (path, patch, after)) in files.iter().enumerate() {
        ins.execute(params![id, seq as i64, path, patch, after.len as i64, after.crc as i64])?;
    }
    Ok(())
}

/// A journal entry written before the change it describes is made in a
/// database that is not the journal's (PostgreSQL, Redis, LevelDB, player
/// files): dropped without [`Pending::kept`], the entry is taken back, so
/// the journal never claims a change that did not happen. A crash in
/// between leaves the entry; undo finds its blocks or records unlike its
/// "after" fingerprints and treats it as never applied.
pub struct Pending {
    conn: Connection,
    id: i64,
    kept: bool,
}

impl Pending {
    /// Journal a change of blocks in the journal file at `path`.
    pub fn blocks(path: &Path, note: &Note, steps: &[Step<'_>]) -> Result<Pending> {
        Self::write(path, |tx| record(tx, note, steps))
    }

    /// Journal a change of records of `collection`.
    pub fn records(path: &Path, note: &Note, collection: &str, steps: &[RecordStep<'_>]) -> Result<Pending> {
        Self::write(path, |tx| record_records(tx, note, collection, steps))
    }

    /// [`Pending::records`] with the whole files the change rewrites.
    pub fn records_and_files(
        path: &Path,
        note: &Note,
        collection: &str,
        steps: &[RecordStep<'_>],
        files: &[FileStep<'_>],
    ) -> Result<Pending> {
        Self::write(path, |tx| {
            let id = record_records(tx, note, collection, steps)?;
            record_files(tx, id, files)?;
            Ok(id)
        })
    }

    fn write(path: &Path, f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<i64>) -> Result<Pending> {
        let undo = |e: rusqlite::Error| StoreError::Backend(format!("undo journal: {e}"));
        let mut conn = attached(path)?;
        let tx = conn.transaction().map_err(undo)?;
        let id = f(&tx).map_err(undo)?;
        tx.commit().map_err(undo)?;
        Ok(Pending { conn, id, kept: false })
    }

    /// The change was made: the entry stays.
    pub fn kept(mut self) {
        self.kept = true;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.kept {
            let id = self.id;
            let _ = self.conn.execute_batch(&format!(
                "DELETE FROM journal.blocks WHERE change = {id}; DELETE FROM journal.records WHERE change = {id}; \
                 DELETE FROM journal.file_patches WHERE change = {id}; DELETE FROM journal.changes WHERE id = {id};"
            ));
        }
    }
}

/// A connection with the journal file at `path` attached as `journal`
/// (created when missing), for stores that are not SQLite themselves.
pub fn attached(path: &Path) -> Result<Connection> {
    let conn = Connection::open_in_memory().map_err(backend)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
    let p = path.to_str().ok_or_else(|| StoreError::Backend("journal path is not UTF-8".into()))?;
    conn.execute("ATTACH DATABASE ?1 AS journal", [p]).map_err(backend)?;
    create(&conn, "journal").map_err(backend)?;
    Ok(conn)
}

/// One record of a journaled transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordEntry {
    /// The collection: "players", "auth" or "mod_storage".
    pub collection: String,
    /// The record's name (player, account or mod).
    pub name: String,
    /// Its canonical bytes before; None: it did not exist.
    pub before: Option<Vec<u8>>,
    /// What the change left; None: it removed the record.
    pub after: Option<Fingerprint>,
    /// The dates its table held beside `before` (None: none kept).
    pub dates: Option<RecordDates>,
}

/// Read and maintain a journal file (not for recording: see `record`).
pub struct Journal {
    conn: Connection,
    path: PathBuf,
}

/// What `prune` removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// How many changes were dropped.
    pub changes: u64,
    /// The file's size before, in bytes.
    pub bytes_before: u64,
    /// The file's size after compacting.
    pub bytes_after: u64,
}

impl Journal {
    /// Open an existing journal; Ok(None) when the world has none.
    pub fn open(path: &Path) -> Result<Option<Journal>> {
        if !path.is_file() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(backend)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
        create(&conn, "main").map_err(backend)?;
        Ok(Some(Journal { conn, path: path.to_path_buf() }))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn change_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChangeInfo> {
        Ok(ChangeInfo {
            id: r.get(0)?,
            time_ms: r.get(1)?,
            what: r.get(2)?,
            blocks: r.get::<_, i64>(3)? as u64,
            reverted_by: r.get(4)?,
        })
    }

    /// Changes, newest first; only those from `since_ms` on when given.
    pub fn changes(&self, since_ms: Option<i64>, limit: Option<usize>) -> Result<Vec<ChangeInfo>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, time_ms, what, blocks, reverted_by FROM changes \
                 WHERE time_ms >= ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(backend)?;
        let limit = limit.map_or(-1, |l| l as i64);
        let rows = stmt.query_map(params![since_ms.unwrap_or(i64::MIN), limit], Self::change_row).map_err(backend)?;
        rows.collect::<rusqlite::Result<_>>().map_err(backend)
    }

    /// The change numbered `id`, if the journal still has it.
    pub fn change(&self, id: i64) -> Result<Option<ChangeInfo>> {
        self.conn
            .query_row(
                "SELECT id, time_ms, what, blocks, reverted_by FROM changes WHERE id = ?1",
                [id],
                Self::change_row,
            )
            .optional()
            .map_err(backend)
    }

    /// Every change from `id` on (newest first).
    pub fn changes_from(&self, id: i64) -> Result<Vec<ChangeInfo>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, time_ms, what, blocks, reverted_by FROM changes WHERE id >= ?1 ORDER BY id DESC")
            .map_err(backend)?;
        let rows = stmt.query_map([id], Self::change_row).map_err(backend)?;
        rows.collect::<rusqlite::Result<_>>().map_err(backend)
    }

    /// The blocks of one change, in the order they were changed.
    pub fn blocks(&self, change: i64) -> Result<Vec<BlockRecord>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT x, y, z, before, after_len, after_crc FROM blocks WHERE change = ?1 ORDER BY seq")
            .map_err(backend)?;
        let rows = stmt
            .query_map([change], |r| {
                let (x, y, z): (i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
                let len: Option<i64> = r.get(4)?;
                let crc: Option<i64> = r.get(5)?;
                Ok((x, y, z, r.get::<_, Option<Vec<u8>>>(3)?, len.zip(crc)))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (x, y, z, before, after) = row.map_err(backend)?;
            let c =
                |v: i64| i16::try_from(v).map_err(|_| StoreError::Backend(format!("undo journal: bad coordinate {v}")));
            out.push(BlockRecord {
                pos: BlockPos::new(c(x)?, c(y)?, c(z)?),
                before,
                after: after.map(|(len, crc)| Fingerprint { len: len as u64, crc: crc as u32 }),
            });
        }
        Ok(out)
    }

    /// The records (players, accounts, mod storage) of one change, in order.
    pub fn records(&self, change: i64) -> Result<Vec<RecordEntry>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT collection, name, before, after_len, after_crc, created, modified FROM records \
                 WHERE change = ?1 ORDER BY seq",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map([change], |r| {
                let len: Option<i64> = r.get(3)?;
                let crc: Option<i64> = r.get(4)?;
                let created: rusqlite::types::Value = r.get(5)?;
                let modified: rusqlite::types::Value = r.get(6)?;
                let dates = (created != rusqlite::types::Value::Null || modified != rusqlite::types::Value::Null)
                    .then_some(RecordDates { created, modified });
                Ok(RecordEntry {
                    collection: r.get(0)?,
                    name: r.get(1)?,
                    before: r.get(2)?,
                    after: len.zip(crc).map(|(len, crc)| Fingerprint { len: len as u64, crc: crc as u32 }),
                    dates,
                })
            })
            .map_err(backend)?;
        rows.collect::<rusqlite::Result<_>>().map_err(backend)
    }

    /// The whole files one change rewrote (see [`FileStep`]), in order.
    pub fn file_patches(&self, change: i64) -> Result<Vec<FilePatch>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, patch, after_len, after_crc FROM file_patches WHERE change = ?1 ORDER BY seq")
            .map_err(backend)?;
        let rows = stmt
            .query_map([change], |r| {
                let (len, crc): (i64, i64) = (r.get(2)?, r.get(3)?);
                Ok(FilePatch {
                    path: r.get(0)?,
                    patch: r.get(1)?,
                    after: Fingerprint { len: len as u64, crc: crc as u32 },
                })
            })
            .map_err(backend)?;
        rows.collect::<rusqlite::Result<_>>().map_err(backend)
    }

    /// The file's size on disk.
    pub fn file_size(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    /// Drop the oldest changes: those older than `before_ms`, and more until
    /// the journal's contents fit in `max_bytes`; then compact the file.
    pub fn prune(&self, before_ms: Option<i64>, max_bytes: Option<u64>) -> Result<Pruned> {
        let bytes_before = self.file_size();
        let mut cutoff: Option<i64> = None; // delete ids <= cutoff
        if let Some(t) = before_ms {
            let id: Option<i64> = self
                .conn
                .query_row("SELECT max(id) FROM changes WHERE time_ms < ?1", [t], |r| r.get(0))
                .map_err(backend)?;
            cutoff = id;
        }
        if let Some(max) = max_bytes {
            // Sizes per change, newest first; keep changes while they fit.
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT c.id, 64 + coalesce(sum(coalesce(length(b.before), 0) + 64), 0) \
                     FROM changes c LEFT JOIN blocks b ON b.change = c.id \
                     GROUP BY c.id ORDER BY c.id DESC",
                )
                .map_err(backend)?;
            let sizes: Vec<(i64, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<_>>()
                .map_err(backend)?;
            let mut total = 0u64;
            for (id, size) in sizes {
                total += size as u64;
                if total > max {
                    cutoff = Some(cutoff.map_or(id, |c| c.max(id)));
                    break;
                }
            }
        }
        let Some(cutoff) = cutoff else {
            return Ok(Pruned { changes: 0, bytes_before, bytes_after: bytes_before });
        };
        let tx = self.conn.unchecked_transaction().map_err(backend)?;
        tx.execute("DELETE FROM blocks WHERE change <= ?1", [cutoff]).map_err(backend)?;
        tx.execute("DELETE FROM records WHERE change <= ?1", [cutoff]).map_err(backend)?;
        tx.execute("DELETE FROM file_patches WHERE change <= ?1", [cutoff]).map_err(backend)?;
        let changes = tx.execute("DELETE FROM changes WHERE id <= ?1", [cutoff]).map_err(backend)? as u64;
        tx.commit().map_err(backend)?;
        self.conn.execute_batch("VACUUM").map_err(backend)?;
        Ok(Pruned { changes, bytes_before, bytes_after: self.file_size() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending entry stays only when kept; dropped, it is taken back
    /// whole (blocks or records and the change), and a kept entry that
    /// reverts another marks it.
    #[test]
    fn pending_entries_are_taken_back_unless_kept() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("worldfs-journal.sqlite");
        let p = BlockPos::new(1, 2, 3);
        let after = [29u8, 1];
        let kept = Pending::blocks(&path, &Note::new("kept"), &[(p, None, Some(&after[..]))]).unwrap();
        kept.kept();
        let dropped = Pending::blocks(&path, &Note::new("dropped"), &[(p, Some(vec![29, 1]), None)]).unwrap();
        let dropped_id = dropped.id;
        drop(dropped);
        let rec = Pending::records(&path, &Note::new("record"), "players", &[("sam", None, Some(b"x"), None)]).unwrap();
        let rec_id = rec.id;
        drop(rec);
        let j = Journal::open(&path).unwrap().unwrap();
        let changes = j.changes(None, None).unwrap();
        assert_eq!(changes.iter().map(|c| c.what.as_str()).collect::<Vec<_>>(), ["kept"]);
        assert_eq!(j.blocks(changes[0].id).unwrap().len(), 1);
        assert!(j.blocks(dropped_id).unwrap().is_empty());
        assert!(j.records(rec_id).unwrap().is_empty());
        let mut note = Note::new("undo");
        note.reverts.push(changes[0].id);
        Pending::blocks(&path, &note, &[(p, Some(after.to_vec()), None)]).unwrap().kept();
        let j = Journal::open(&path).unwrap().unwrap();
        let undo = j.changes(None, None).unwrap()[0].id;
        assert_eq!(j.change(changes[0].id).unwrap().unwrap().reverted_by, Some(undo));
    }

    /// A change's whole-file patches are kept and read back with it, and
    /// taken back with an entry that is not kept.
    #[test]
    fn file_patches_go_with_their_entry() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("worldfs-journal.sqlite");
        let after = Fingerprint::of(b"new file");
        let files = [("region/r.0.0.mca", &b"patch"[..], after)];
        let step = ("1,2", Some(b"old".to_vec()), Some(&b"new"[..]), None);
        let kept =
            Pending::records_and_files(&path, &Note::new("kept"), "c", std::slice::from_ref(&step), &files).unwrap();
        let id = kept.id;
        kept.kept();
        let dropped = Pending::records_and_files(&path, &Note::new("dropped"), "c", &[step], &files).unwrap();
        let dropped_id = dropped.id;
        drop(dropped);
        let j = Journal::open(&path).unwrap().unwrap();
        let patches = j.file_patches(id).unwrap();
        assert_eq!(patches, [FilePatch { path: "region/r.0.0.mca".into(), patch: b"patch".to_vec(), after }]);
        assert!(j.file_patches(dropped_id).unwrap().is_empty());
        j.prune(None, Some(0)).unwrap();
        assert!(j.file_patches(id).unwrap().is_empty(), "pruned with its change");
    }

    /// A journal written before records kept dates (its `records` table
    /// has no `created`/`modified`) still opens: its records read with no
    /// dates, and new records are written into it with theirs.
    #[test]
    fn an_old_journal_without_record_dates_still_opens_and_records() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("worldfs-journal.sqlite");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE changes (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, what TEXT NOT NULL,
                 blocks INTEGER NOT NULL, reverted_by INTEGER);
             CREATE TABLE blocks (change INTEGER NOT NULL, seq INTEGER NOT NULL, x INTEGER NOT NULL,
                 y INTEGER NOT NULL, z INTEGER NOT NULL, before BLOB, after_len INTEGER, after_crc INTEGER,
                 PRIMARY KEY (change, seq));
             CREATE TABLE records (change INTEGER NOT NULL, seq INTEGER NOT NULL, collection TEXT NOT NULL,
                 name TEXT NOT NULL, before BLOB, after_len INTEGER, after_crc INTEGER, PRIMARY KEY (change, seq));
             INSERT INTO changes VALUES (1, 0, 'old', 1, NULL);
             INSERT INTO records VALUES (1, 0, 'players', 'sam', x'01', 1, 0);",
        )
        .unwrap();
        drop(old);
        let j = Journal::open(&path).unwrap().unwrap();
        let old_records = j.records(1).unwrap();
        assert_eq!((old_records.len(), old_records[0].dates.clone()), (1, None));
        let dates = RecordDates { created: "2001-02-03 04:05:06".to_string().into(), modified: 7i64.into() };
        let step = ("sam", Some(vec![1]), Some(&b"x"[..]), Some(dates.clone()));
        Pending::records(&path, &Note::new("new"), "players", &[step]).unwrap().kept();
        let newest = j.changes(None, Some(1)).unwrap()[0].id;
        assert_eq!(j.records(newest).unwrap()[0].dates, Some(dates));
    }
}
