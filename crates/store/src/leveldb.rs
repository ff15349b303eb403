//! The LevelDB map (`backend = leveldb`; Luanti's `Database_LevelDB`,
//! src/database/database-leveldb.cpp of
//! <https://github.com/luanti-org/luanti>): the directory `map.db`, key =
//! the block's legacy position integer in decimal ASCII (the only key form
//! the engine writes or reads), value = the blob. Read and written with the
//! pure-Rust `rusty-leveldb` crate.
//!
//! * One process at a time. A writable open takes the `fcntl` lock on
//!   `map.db/LOCK` (see `lock.rs`): refused while a server holds it, and a
//!   server started during the mount stops with "lock ... unavailable".
//! * A change is one WriteBatch, written with sync (the crate never
//!   fsyncs: `env.rs` does). Expectations are checked first, on the one
//!   thread that owns the database, so nothing can write in between.
//! * Read-only opens never touch the directory: they run on a snapshot of
//!   its files (`env::SnapshotEnv`), which works even while a server has
//!   the database open, and shows the map as it was when mounted.
//! * Listing follows the database's own key order (the decimal text,
//!   which has no spatial meaning): a page resumes by seeking to the key
//!   of the last position, so any offset works without an index.
//! * The undo journal is the world's SQLite journal file. LevelDB cannot
//!   commit it together with the batch, so each entry is written first
//!   marked pending, the batch is committed, and the mark removed; an
//!   entry still pending at the next open (a crash in between) is kept or
//!   dropped by looking at whether the blocks hold what it wrote. (Extra
//!   keys in `map.db` were not an option: the engine parses every key as a
//!   number when it lists or migrates the map.)
//!
//! The crate's database is single-threaded (`Rc` inside), so it lives on a
//! thread of its own and the store sends it work.

pub mod bedrock;
pub(crate) mod env;
pub mod lock;
mod worker;

use super::journal::{self, Fingerprint};
use super::pos::{KEY_MAX, KEY_MIN};
use super::{BlockPos, Change, MapStore, Note, Result, StoreError};
use rusty_leveldb::{DB, DBIterator, LdbIterator, Options, WriteBatch};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use worker::{Worker, is_held, lock_holder};

/// The map in a LevelDB directory, `map.db` (the `leveldb` backend).
pub struct LevelDbStore {
    dir: PathBuf,
    read_only: bool,
    /// The database's thread; dropped (the database closed) before the lock.
    worker: Worker<Engine>,
    /// Bumped by every change (only this process writes while it holds the
    /// lock; a snapshot never changes).
    version: AtomicU64,
    /// The fcntl lock on LOCK (writable opens, and a snapshot's read of a
    /// map no server holds), released last.
    lock: Option<std::fs::File>,
}

/// What the database thread owns.
struct Engine {
    dir: PathBuf,
    read_only: bool,
    /// None after a failed write whose reopening failed too: every request
    /// then fails with `broken`.
    db: Option<DB>,
    broken: String,
    health: Rc<env::Health>,
    journal: Option<rusqlite::Connection>,
    /// Journal entries whose batch is in the map but whose pending mark is
    /// still there: it goes in the next entry's transaction (or at close),
    /// which saves a synced transaction per change.
    settled_later: Vec<i64>,
    /// The iterator of the last listing page, positioned after the key it
    /// returned last, while nothing changed: the next page goes on from it.
    cursor: Option<(Vec<u8>, DBIterator)>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("leveldb: {e}"))
}

fn key(p: BlockPos) -> Vec<u8> {
    p.legacy_key().to_string().into_bytes()
}

/// The position of a key the engine could have written (canonical
/// decimal of a legacy key whose position round-trips); None for any
/// other key.
fn pos_of(k: &[u8]) -> Option<BlockPos> {
    let s = std::str::from_utf8(k).ok()?;
    let n: i64 = s.parse().ok()?;
    let p = BlockPos::from_legacy_key(n);
    (n.to_string() == s && p.legacy_key() == n).then_some(p)
}

/// `get_near` stops reading a side of a column after this many absent
/// blocks in a row.
const NEAR_GAP: u32 = 4;

fn options(read_only: bool, dir: &Path, health: &Rc<env::Health>, tune: Tune) -> std::io::Result<Options> {
    let env: Box<dyn rusty_leveldb::env::Env> = if read_only {
        Box::new(env::SnapshotEnv::pin(dir, health.clone())?)
    } else {
        Box::new(env::SyncedEnv::new(health.clone()))
    };
    let mut opts = Options {
        env: Rc::new(env),
        create_if_missing: false,
        // Tables we write are Snappy-compressed, as the engine's are.
        compressor: <rusty_leveldb::compressor::SnappyCompressor as rusty_leveldb::CompressorId>::ID,
        // A snapshot must not append to files it did not write.
        reuse_logs: !read_only,
        reuse_manifest: !read_only,
        ..Options::default()
    };
    tune(&mut opts);
    Ok(opts)
}

/// A change to the options a database is opened with (another game's
/// compressors: `crate::bedrock`).
pub(crate) type Tune = fn(&mut Options);

/// The database, and the health of its files (see `env::Health`).
pub(crate) fn open_db(dir: &Path, read_only: bool) -> std::result::Result<(DB, Rc<env::Health>), String> {
    open_db_with(dir, read_only, |_| {})
}

/// [`open_db`] with the options changed by `tune`.
pub(crate) fn open_db_with(
    dir: &Path,
    read_only: bool,
    tune: Tune,
) -> std::result::Result<(DB, Rc<env::Health>), String> {
    // A snapshot taken while a server compacts may miss a file the
    // manifest names; a fresh one will not.
    let mut last = String::new();
    for _ in 0..5 {
        let health = Rc::new(env::Health::default());
        let opts = options(read_only, dir, &health, tune)
            .map_err(|e| format!("{}: cannot open the LevelDB database: {e}", dir.display()))?;
        match DB::open(dir, opts) {
            Ok(db) => {
                if read_only {
                    health.freeze();
                }
                return Ok((db, health));
            }
            Err(e) if read_only && matches!(e.code, rusty_leveldb::StatusCode::Corruption) => last = e.to_string(),
            Err(e) => return Err(format!("{}: cannot open the LevelDB database: {e}", dir.display())),
        }
    }
    Err(format!("{}: cannot open the LevelDB database (it kept changing while read): {last}", dir.display()))
}

impl Engine {
    fn db(&mut self) -> Result<&mut DB> {
        match &mut self.db {
            Some(db) => Ok(db),
            None => Err(StoreError::Backend(self.broken.clone())),
        }
    }

    fn get(&mut self, p: BlockPos) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        let snap = db.get_snapshot();
        let v = db.get_at(&snap, &key(p)).map_err(backend)?;
        // A read may start a compaction; if that failed, start over from
        // the disk (what was read came before it).
        self.heal();
        Ok(v.map(|b| b.to_vec()).filter(|d| !d.is_empty()))
    }

    /// `pos` and the blocks of its column (x, y) next to it, read under one
    /// snapshot in one job: a walk in name order visits a column's blocks
    /// out of key order (and a column's keys are 2^24 apart, so no iterator
    /// run holds them), and one job instead of one per block saves the hop
    /// to this thread and back for each. At most `limit` positions are
    /// read, half below and half above; a side stops at a gap of
    /// `NEAR_GAP` absent blocks (the end of the column: every read of an
    /// absent key costs as much as a hit).
    fn get_near(&mut self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        if !pos.in_range() {
            return Ok(self.get(pos)?.map(|v| vec![(pos, v)]).unwrap_or_default());
        }
        let db = self.db()?;
        let snap = db.get_snapshot();
        let mut read = |z: i16| -> Result<Option<(BlockPos, Vec<u8>)>> {
            let p = BlockPos::new(pos.x, pos.y, z);
            let v = db.get_at(&snap, &key(p)).map_err(backend)?;
            Ok(v.filter(|d| !d.is_empty()).map(|d| (p, d.to_vec())))
        };
        let mut out: Vec<(BlockPos, Vec<u8>)> = read(pos.z)?.into_iter().collect();
        let others = limit.max(1) - 1;
        for (step, quota) in [(-1i16, others / 2), (1, others - others / 2)] {
            let (mut z, mut misses) = (pos.z, 0);
            for _ in 0..quota {
                z += step;
                if !(KEY_MIN..=KEY_MAX).contains(&z) || misses == NEAR_GAP {
                    break;
                }
                match read(z)? {
                    Some(found) => {
                        out.push(found);
                        misses = 0;
                    }
                    None => misses += 1,
                }
            }
        }
        self.heal();
        Ok(out)
    }

    /// Reopen the database if its files refuse changes (see `env::Health`).
    fn heal(&mut self) {
        if self.read_only {
            return;
        }
        if let Some(why) = self.health.failure() {
            log::warn!("{}: reopening the LevelDB database after: {why}", self.dir.display());
            let _ = self.reopen();
        }
    }

    /// Up to `limit` entries after `after` in key order; values only when
    /// `values`.
    fn page(&mut self, after: Option<BlockPos>, limit: usize, values: bool) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let start = after.map(key);
        let mut it = match (self.cursor.take(), &start) {
            (Some((last, it)), Some(k)) if last == *k => it,
            _ => {
                let mut it = self.db()?.new_iter().map_err(backend)?;
                match &start {
                    None => it.seek_to_first(),
                    Some(k) => {
                        it.seek(k);
                        if it.current().is_some_and(|(ck, _)| ck.as_ref() == k.as_slice()) {
                            it.advance();
                        }
                    }
                }
                it
            }
        };
        let mut out = Vec::new();
        let mut last = None;
        while out.len() < limit {
            let Some((k, v)) = it.current() else { break };
            last = Some(k.to_vec());
            it.advance();
            match pos_of(&k) {
                Some(p) if !v.is_empty() => out.push((p, if values { v.to_vec() } else { Vec::new() })),
                Some(_) => {}
                None => log::warn!(
                    "{}: key {:?} is not a block position (the engine ignores it); skipped",
                    self.dir.display(),
                    String::from_utf8_lossy(&k)
                ),
            }
        }
        if let Some(l) = last
            && out.len() == limit
        {
            self.cursor = Some((l, it));
        }
        Ok(out)
    }

    fn write(&mut self, changes: &[Change]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for c in changes {
            match c {
                Change::Put(p, d) => batch.put(&key(*p), d),
                Change::Delete(p) => batch.delete(&key(*p)),
                Change::Expect(..) => {}
            }
        }
        self.cursor = None;
        self.db()?.write(batch, true).map_err(|e| {
            if e.code == rusty_leveldb::StatusCode::IOError && e.err.contains("No space") {
                StoreError::Full(e.to_string())
            } else {
                backend(e)
            }
        })
    }

    /// After a failed write the crate's memory may already hold the batch
    /// (it fills the memtable before the log): start over from the disk.
    fn reopen(&mut self) -> Result<()> {
        self.cursor = None;
        // The old handle must let go of its flock before the new one.
        self.db = None;
        match open_db(&self.dir, self.read_only) {
            Ok((db, health)) => {
                self.db = Some(db);
                self.health = health;
                Ok(())
            }
            Err(e) => {
                self.broken = format!("{e} (after a failed write); unmount and mount again");
                Err(StoreError::Backend(self.broken.clone()))
            }
        }
    }

    fn apply(&mut self, changes: &[Change], note: &Note) -> Result<()> {
        self.heal();
        let mut now = std::collections::HashMap::new();
        for c in changes {
            if let std::collections::hash_map::Entry::Vacant(slot) = now.entry(c.pos()) {
                slot.insert(self.get(c.pos())?);
            }
        }
        if let Some(refusal) = super::unmet_expectation(changes, |p| Ok(now[&p].clone()))? {
            return Err(refusal);
        }
        let Some(j) = &mut self.journal else {
            return match self.write(changes) {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.reopen()?;
                    Err(e)
                }
            };
        };
        let steps: Vec<journal::Step<'_>> = changes
            .iter()
            .filter_map(|ch| match ch {
                Change::Put(p, d) => Some((*p, now[p].clone(), Some(d.as_slice()))),
                Change::Delete(p) => Some((*p, now[p].clone(), None)),
                Change::Expect(..) => None,
            })
            .collect();
        let tx = j.transaction().map_err(journal_err)?;
        let id = journal::record(&tx, note, &steps).map_err(journal_err)?;
        tx.execute("INSERT INTO journal.leveldb_pending (change) VALUES (?1)", [id]).map_err(journal_err)?;
        for done in &self.settled_later {
            tx.execute("DELETE FROM journal.leveldb_pending WHERE change = ?1", [done]).map_err(journal_err)?;
        }
        tx.commit().map_err(journal_err)?;
        self.settled_later.clear();
        match self.write(changes) {
            Ok(()) => {
                self.settled_later.push(id);
                Ok(())
            }
            Err(e) => {
                self.reopen()?;
                // The batch may have reached the log before the error.
                if self.resolve(id)? { Ok(()) } else { Err(e) }
            }
        }
    }

    /// Close a pending journal entry: keep it (the batch is in) or drop it.
    fn settle(&mut self, id: i64, committed: bool) -> Result<()> {
        let Some(j) = self.journal.as_mut() else {
            return Err(StoreError::Backend("no undo journal is kept for this map".into()));
        };
        let tx = j.transaction().map_err(journal_err)?;
        if !committed {
            tx.execute("DELETE FROM journal.blocks WHERE change = ?1", [id]).map_err(journal_err)?;
            tx.execute("DELETE FROM journal.changes WHERE id = ?1", [id]).map_err(journal_err)?;
            tx.execute("UPDATE journal.changes SET reverted_by = NULL WHERE reverted_by = ?1", [id])
                .map_err(journal_err)?;
        }
        tx.execute("DELETE FROM journal.leveldb_pending WHERE change = ?1", [id]).map_err(journal_err)?;
        tx.commit().map_err(journal_err)
    }

    /// Whether the batch of pending entry `id` is in the database: some
    /// block holds what the entry wrote and not what was there before (a
    /// batch is all or nothing, so one block tells). Then settles it.
    fn resolve(&mut self, id: i64) -> Result<bool> {
        let records: Vec<(BlockPos, Option<Vec<u8>>, Option<Fingerprint>)> = {
            let Some(j) = self.journal.as_ref() else {
                return Err(StoreError::Backend("no undo journal is kept for this map".into()));
            };
            let mut stmt = j
                .prepare("SELECT x, y, z, before, after_len, after_crc FROM journal.blocks WHERE change = ?1")
                .map_err(journal_err)?;
            let rows = stmt
                .query_map([id], |r| {
                    let len: Option<i64> = r.get(4)?;
                    let crc: Option<i64> = r.get(5)?;
                    Ok((
                        BlockPos::new(r.get(0)?, r.get(1)?, r.get(2)?),
                        r.get::<_, Option<Vec<u8>>>(3)?,
                        len.zip(crc).map(|(len, crc)| Fingerprint { len: len as u64, crc: crc as u32 }),
                    ))
                })
                .map_err(journal_err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(journal_err)?
        };
        let mut committed = false;
        for (p, before, after) in records {
            let now = self.get(p)?;
            let fp = |b: &Option<Vec<u8>>| b.as_deref().map(Fingerprint::of);
            if fp(&now) == after && fp(&before) != after {
                committed = true;
                break;
            }
        }
        self.settle(id, committed)?;
        Ok(committed)
    }

    /// Remove the marks of entries known to be in the map (at close).
    fn close(&mut self) {
        for id in std::mem::take(&mut self.settled_later) {
            if let Err(e) = self.settle(id, true) {
                log::warn!("undo journal: change #{id} stays marked pending ({e}); the next open settles it");
            }
        }
    }

    /// Settle the entries a crash left pending.
    fn resolve_all(&mut self) -> Result<()> {
        let ids: Vec<i64> = {
            let Some(j) = self.journal.as_ref() else {
                return Err(StoreError::Backend("no undo journal is kept for this map".into()));
            };
            let mut stmt =
                j.prepare("SELECT change FROM journal.leveldb_pending ORDER BY change").map_err(journal_err)?;
            stmt.query_map([], |r| r.get(0))
                .map_err(journal_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(journal_err)?
        };
        for id in ids {
            let kept = self.resolve(id)?;
            log::info!(
                "undo journal: change #{id} was pending at a crash; {}",
                if kept { "it is in the map" } else { "it never reached the map, dropped" }
            );
        }
        Ok(())
    }
}

fn journal_err(e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        return StoreError::Full(format!("undo journal: {e}"));
    }
    StoreError::Backend(format!("undo journal: {e}"))
}

impl LevelDbStore {
    /// Open `dir` (a world's `map.db`). A writable open takes the lock and
    /// is refused while another process (a running server) holds it.
    pub fn open(dir: &Path, read_only: bool) -> std::result::Result<LevelDbStore, String> {
        if !dir.is_dir() {
            return Err(format!("{}: no such LevelDB directory (world.mt says backend = leveldb)", dir.display()));
        }
        if !dir.join("CURRENT").is_file() {
            return Err(format!("{}: not a LevelDB database (it has no CURRENT file)", dir.display()));
        }
        let lock = match read_only {
            true => None,
            false => Some(worker::take_lock(
                dir,
                "a running server",
                "stop the server to write, or mount read-only (-o ro) to see the map as it is now",
            )?),
        };
        let d = dir.to_path_buf();
        let open = move || {
            let (db, health) = open_db(&d, read_only)?;
            Ok(Engine {
                dir: d,
                read_only,
                db: Some(db),
                broken: String::new(),
                health,
                journal: None,
                settled_later: Vec::new(),
                cursor: None,
            })
        };
        let end = |engine: &mut Engine| {
            if engine.journal.is_some() {
                engine.close();
            }
        };
        let worker = Worker::start(dir, "worldfs-leveldb", open, end)?;
        Ok(LevelDbStore { dir: dir.to_path_buf(), read_only, worker, version: AtomicU64::new(0), lock })
    }

    /// Open the map for a snapshot: read-only, holding LevelDB's lock while
    /// it is read, so nobody writes meanwhile and the read is one instant.
    /// When another process (a running server) holds the lock, the map is
    /// refused with the reason, or with `partial_ok` read from its files as
    /// they are (a save in progress then may be in part).
    pub fn open_for_snapshot(dir: &Path, partial_ok: bool) -> std::result::Result<LevelDbStore, String> {
        let lock_file = dir.join("LOCK");
        match lock::take_after_exiting_daemons(&lock_file) {
            Ok(f) => {
                let mut store = LevelDbStore::open(dir, true)?;
                store.lock = Some(f);
                Ok(store)
            }
            Err(e) if is_held(&e) && partial_ok => LevelDbStore::open(dir, true),
            Err(e) if is_held(&e) => Err(format!(
                "{} is locked by {}, most likely a running server: a snapshot would not be one instant (the \
                 engine writes a save's blocks one by one, and LevelDB admits one process at a time), so it is \
                 refused. Stop the server (or unmount a writable mount) and take the snapshot then; or take it \
                 anyway with --allow-partial-save, which reads map.db's files as they are now: the saves before \
                 it whole, a save in progress then perhaps in part",
                dir.display(),
                lock_holder(&lock_file)
            )),
            Err(e) if !lock_file.exists() => Err(format!("{}: {e}", lock_file.display())),
            Err(e) => Err(format!("{}: cannot lock: {e}", lock_file.display())),
        }
    }

    /// Keep the undo journal in the SQLite file `path`; settles entries a
    /// crash left pending.
    pub fn enable_journal(&mut self, path: &Path) -> Result<()> {
        let p = path.to_path_buf();
        self.call(move |e| {
            let conn = journal::attached(&p)?;
            conn.execute_batch("CREATE TABLE IF NOT EXISTS journal.leveldb_pending (change INTEGER PRIMARY KEY)")
                .map_err(journal_err)?;
            e.journal = Some(conn);
            e.resolve_all()
        })?
    }

    /// Run `f` on the database thread and wait for its answer.
    fn call<T: Send + 'static>(&self, f: impl FnOnce(&mut Engine) -> T + Send + 'static) -> Result<T> {
        self.worker.call(f)
    }
}

impl MapStore for LevelDbStore {
    fn describe(&self) -> String {
        if self.read_only {
            format!("leveldb ({}, read-only snapshot)", self.dir.display())
        } else {
            format!("leveldb ({})", self.dir.display())
        }
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        self.call(move |e| e.get(pos))?
    }

    /// The block's column around it, in one job on the database thread
    /// (see `Engine::get_near`).
    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        self.call(move |e| e.get_near(pos, limit))?
    }

    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        let positions = positions.to_vec();
        self.call(move |e| positions.into_iter().map(|p| e.get(p)).collect())?
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.call(move |e| e.page(after, limit, false))??.into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        self.call(move |e| e.page(after, limit, true))?
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        let (changes, note) = (changes.to_vec(), note.clone());
        let r = self.call(move |e| e.apply(&changes, &note))?;
        self.version.fetch_add(1, Ordering::SeqCst);
        r
    }

    fn count(&self) -> Result<u64> {
        self.call(|e| {
            let mut it = e.db()?.new_iter().map_err(backend)?;
            it.seek_to_first();
            let mut n = 0u64;
            while let Some((k, v)) = it.current() {
                if !v.is_empty() && pos_of(&k).is_some() {
                    n += 1;
                }
                it.advance();
            }
            Ok(n)
        })?
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn data_version(&self) -> Option<u64> {
        Some(self.version.load(Ordering::SeqCst))
    }

    /// Page by page over the database as opened: a read-only open is a
    /// snapshot of map.db's files, which no later write changes. The
    /// engine writes a LevelDB map one block at a time (a save is no
    /// transaction there), so a save in progress when it was opened may be
    /// in it in part.
    fn read_consistent(
        &self,
        _scratch: &Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<super::Consistency> {
        super::read_by_pages(self, each)?;
        let held = self.lock.is_some();
        let how = if held {
            "map.db locked by this process while read: one instant"
        } else {
            "map.db's files as they were when opened, while another process held it (--allow-partial-save; the \
             engine writes a save's blocks one by one: a save in progress then may be in part)"
        };
        Ok(super::Consistency { one_instant: held, how: how.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("map.db");
        let opts = Options { create_if_missing: true, ..Options::default() };
        drop(DB::open(&dir, opts).unwrap());
        (d, dir)
    }

    fn put(s: &LevelDbStore, p: BlockPos, v: &[u8]) {
        s.apply(&[Change::Put(p, v.to_vec())], &Note::new("put")).unwrap();
    }

    #[test]
    fn keys_are_the_engines() {
        assert_eq!(key(BlockPos::new(-1, -1, -1)), b"-16781313");
        assert_eq!(pos_of(b"-16781313"), Some(BlockPos::new(-1, -1, -1)));
        for bad in [&b"007"[..], b"+7", b"x", b"", b"99999999999999999999", b"1 "] {
            assert_eq!(pos_of(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn listing_resumes_anywhere_in_key_order() {
        let (_d, dir) = fresh();
        let s = LevelDbStore::open(&dir, false).unwrap();
        let mut all = Vec::new();
        for x in -20..20i16 {
            let p = BlockPos::new(x, x / 3, -x);
            put(&s, p, &[(x + 100) as u8]);
            all.push(p);
        }
        let mut listed: Vec<BlockPos> = Vec::new();
        let mut after = None;
        loop {
            let page = s.list_after(after, 7).unwrap();
            listed.extend(&page);
            if page.len() < 7 {
                break;
            }
            after = page.last().copied();
        }
        let mut by_key = all.clone();
        by_key.sort_by_key(|p| key(*p));
        assert_eq!(listed, by_key);
        // Resuming from a position in the middle, with the values.
        let mid = by_key[10];
        let rest = s.scan_after(Some(mid), 100).unwrap();
        assert_eq!(rest.len(), 29);
        assert_eq!(rest[0].0, by_key[11]);
        assert_eq!(s.count().unwrap(), 40);
    }

    #[test]
    fn expectations_deletes_and_versions() {
        let (_d, dir) = fresh();
        let s = LevelDbStore::open(&dir, false).unwrap();
        let p = BlockPos::new(1, 2, 3);
        let v0 = s.data_version();
        put(&s, p, b"one");
        assert_ne!(s.data_version(), v0);
        let stale = [Change::Expect(p, Some(b"zero".to_vec())), Change::Put(p, b"two".to_vec())];
        assert!(matches!(s.apply(&stale, &Note::default()), Err(StoreError::Conflict(_))));
        assert_eq!(s.get(p).unwrap().as_deref(), Some(&b"one"[..]));
        s.apply(&[Change::Expect(p, Some(b"one".to_vec())), Change::Delete(p)], &Note::default()).unwrap();
        assert_eq!(s.get(p).unwrap(), None);
    }

    #[test]
    fn writes_survive_reopening_and_a_second_writer_is_refused() {
        let (_d, dir) = fresh();
        let s = LevelDbStore::open(&dir, false).unwrap();
        put(&s, BlockPos::new(0, 0, 0), b"zero");
        let e = LevelDbStore::open(&dir, false).err().unwrap();
        assert!(e.contains("is locked by") && e.contains("-o ro"), "{e}");
        // A read-only snapshot opens beside the writer.
        let ro = LevelDbStore::open(&dir, true).unwrap();
        assert_eq!(ro.get(BlockPos::new(0, 0, 0)).unwrap().as_deref(), Some(&b"zero"[..]));
        drop(s);
        let s = LevelDbStore::open(&dir, false).unwrap();
        assert_eq!(s.get(BlockPos::new(0, 0, 0)).unwrap().as_deref(), Some(&b"zero"[..]));
    }

    fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let m = e.metadata().unwrap();
                (e.file_name().to_string_lossy().into_owned(), m.len(), m.modified().unwrap())
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn read_only_opens_never_touch_the_directory() {
        let (_d, dir) = fresh();
        {
            // Leave a log with entries to recover, as a killed server does.
            let mut db = DB::open(&dir, Options { create_if_missing: false, ..Options::default() }).unwrap();
            for i in 0..100i64 {
                db.put(i.to_string().as_bytes(), &[1; 100]).unwrap();
            }
            db.flush().unwrap();
            std::mem::forget(db);
        }
        let before = listing(&dir);
        let ro = LevelDbStore::open(&dir, true).unwrap();
        assert_eq!(ro.count().unwrap(), 100);
        assert!(matches!(ro.apply(&[], &Note::default()), Err(StoreError::ReadOnly)));
        drop(ro);
        assert_eq!(listing(&dir), before);
    }

    #[test]
    fn entries_left_pending_by_a_crash_are_kept_or_dropped_by_the_map() {
        let (d, dir) = fresh();
        let jp = d.path().join(journal::FILE_NAME);
        let (a, b) = (BlockPos::new(1, 0, 0), BlockPos::new(2, 0, 0));
        {
            let mut s = LevelDbStore::open(&dir, false).unwrap();
            s.enable_journal(&jp).unwrap();
            put(&s, a, b"in the map");
        }
        // As a crash would leave them: one entry whose batch is in (a holds
        // what it wrote), one whose batch never was (b is still absent).
        let mut conn = journal::attached(&jp).unwrap();
        let tx = conn.transaction().unwrap();
        let kept = journal::record(&tx, &Note::new("kept"), &[(a, None::<Vec<u8>>, Some(&b"in the map"[..]))]).unwrap();
        let lost =
            journal::record(&tx, &Note::new("lost"), &[(b, None::<Vec<u8>>, Some(&b"never written"[..]))]).unwrap();
        for id in [kept, lost] {
            tx.execute("INSERT INTO journal.leveldb_pending (change) VALUES (?1)", [id]).unwrap();
        }
        tx.commit().unwrap();
        drop(conn);
        let mut s = LevelDbStore::open(&dir, false).unwrap();
        s.enable_journal(&jp).unwrap();
        let j = journal::Journal::open(&jp).unwrap().unwrap();
        let whats: Vec<String> = j.changes(None, None).unwrap().into_iter().map(|c| c.what).collect();
        assert_eq!(whats, vec!["kept".to_string(), "put".to_string()]);
        drop(s);
        let conn = journal::attached(&jp).unwrap();
        let left: i64 = conn.query_row("SELECT count(*) FROM journal.leveldb_pending", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "every mark settled by the close");
    }

    #[test]
    fn not_a_database() {
        let d = tempfile::tempdir().unwrap();
        let e = LevelDbStore::open(&d.path().join("map.db"), true).err().unwrap();
        assert!(e.contains("no such LevelDB directory"), "{e}");
        let e = LevelDbStore::open(d.path(), true).err().unwrap();
        assert!(e.contains("not a LevelDB database"), "{e}");
    }
}
