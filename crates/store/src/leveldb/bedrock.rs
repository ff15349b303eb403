//! A Minecraft Bedrock world's database (`db/`): Mojang's fork of
//! LevelDB, read and written with `rusty-leveldb` as Luanti's LevelDB maps
//! are (`crate::leveldb`), with the fork's two compressions registered:
//! id 2, zlib (older worlds), and id 4, raw deflate (what the game writes
//! now, and what tables written here use).
//!
//! * One process at a time: a writable open takes the `fcntl` lock on
//!   `db/LOCK` (`leveldb::lock`), which the game and Bedrock Dedicated
//!   Server hold while the world is open; refused while they do.
//! * Read-only opens run on a snapshot of the files (`leveldb::env`) and
//!   never touch the directory, so they work beside a running game.
//! * A change is one write batch, synced (`env::SyncedEnv` fsyncs), made
//!   only if every key it changes still holds what the change was made
//!   from ([`KeyChange::old`]), all on the one thread that owns the
//!   database. Its undo journal entry (records of collection [`JOURNAL`],
//!   each key named in hex) is written first and taken back if the batch
//!   fails; a crash in between leaves an entry that `worldfs undo` sees was
//!   never applied (its keys do not hold what it wrote).

use super::open_db_with;
use super::worker::{Worker, take_lock};
use crate::journal::{Pending, RecordStep};
use crate::{Note, Result, StoreError};
use rusty_leveldb::{Compressor, DB, LdbIterator, Options, WriteBatch};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The undo journal's collection of a Bedrock world's keys.
pub const JOURNAL: &str = "bedrock keys";

/// A table block inflates to at most this (the game's are a few KiB).
const MAX_BLOCK: u64 = 64 << 20;

fn inflate(r: impl Read) -> rusty_leveldb::Result<Vec<u8>> {
    let mut out = Vec::new();
    r.take(MAX_BLOCK + 1).read_to_end(&mut out).map_err(|e| {
        rusty_leveldb::Status::new(rusty_leveldb::StatusCode::CompressionError, &format!("bad deflate data: {e}"))
    })?;
    if out.len() as u64 > MAX_BLOCK {
        return Err(rusty_leveldb::Status::new(
            rusty_leveldb::StatusCode::CompressionError,
            "a table block inflating past 64 MiB",
        ));
    }
    Ok(out)
}

fn deflated(mut w: impl Write, block: &[u8]) -> rusty_leveldb::Result<()> {
    w.write_all(block).map_err(|e| rusty_leveldb::Status::new(rusty_leveldb::StatusCode::IOError, &e.to_string()))
}

/// Compression id 2 of Mojang's LevelDB: a zlib stream.
struct Zlib;

impl Compressor for Zlib {
    fn encode(&self, block: Vec<u8>) -> rusty_leveldb::Result<Vec<u8>> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        deflated(&mut e, &block)?;
        e.finish().map_err(|e| rusty_leveldb::Status::new(rusty_leveldb::StatusCode::IOError, &e.to_string()))
    }
    fn decode(&self, block: Vec<u8>) -> rusty_leveldb::Result<Vec<u8>> {
        inflate(flate2::read::ZlibDecoder::new(&block[..]))
    }
}

/// Compression id 4 of Mojang's LevelDB: raw deflate, no header.
struct RawDeflate;

impl Compressor for RawDeflate {
    fn encode(&self, block: Vec<u8>) -> rusty_leveldb::Result<Vec<u8>> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        deflated(&mut e, &block)?;
        e.finish().map_err(|e| rusty_leveldb::Status::new(rusty_leveldb::StatusCode::IOError, &e.to_string()))
    }
    fn decode(&self, block: Vec<u8>) -> rusty_leveldb::Result<Vec<u8>> {
        inflate(flate2::read::DeflateDecoder::new(&block[..]))
    }
}

/// Compression ids 2 and 4 of Mojang's fork, tables written with 4.
fn mojang(opts: &mut Options) {
    let mut list = rusty_leveldb::CompressorList::new();
    list.set_with_id(0, rusty_leveldb::compressor::NoneCompressor);
    list.set_with_id(1, rusty_leveldb::compressor::SnappyCompressor);
    list.set_with_id(2, Zlib);
    list.set_with_id(4, RawDeflate);
    opts.compressor_list = std::rc::Rc::new(list);
    opts.compressor = 4;
}

/// One key's change: it must hold `old` (None: be absent) when the batch
/// is written, and then holds `new` (None: deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyChange {
    /// The key.
    pub key: Vec<u8>,
    /// What it must hold before (None: absent).
    pub old: Option<Vec<u8>>,
    /// What it holds after (None: deleted).
    pub new: Option<Vec<u8>>,
}

struct Engine {
    dir: PathBuf,
    read_only: bool,
    db: Option<DB>,
    broken: String,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("leveldb: {e}"))
}

/// A key as hex, the journal's name for it.
pub fn hex(k: &[u8]) -> String {
    k.iter().map(|b| format!("{b:02x}")).collect()
}

impl Engine {
    fn db(&mut self) -> Result<&mut DB> {
        match &mut self.db {
            Some(db) => Ok(db),
            None => Err(StoreError::Backend(self.broken.clone())),
        }
    }

    fn get(&mut self, k: &[u8]) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        let snap = db.get_snapshot();
        Ok(db.get_at(&snap, k).map_err(backend)?.map(|v| v.to_vec()))
    }

    /// Up to `limit` entries after `after` (None: from the first) whose key
    /// starts with `prefix`, in key order; values only when `values`.
    fn scan(
        &mut self,
        prefix: &[u8],
        after: Option<&[u8]>,
        limit: usize,
        values: bool,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.db()?.new_iter().map_err(backend)?;
        match after {
            Some(k) => {
                it.seek(k);
                if it.current().is_some_and(|(ck, _)| ck.as_ref() == k) {
                    it.advance();
                }
            }
            None if prefix.is_empty() => it.seek_to_first(),
            None => it.seek(prefix),
        }
        let mut out = Vec::new();
        while out.len() < limit {
            let Some((k, v)) = it.current() else { break };
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.to_vec(), if values { v.to_vec() } else { Vec::new() }));
            it.advance();
        }
        Ok(out)
    }

    fn write(&mut self, changes: &[KeyChange], note: &Note, journal: Option<&Path>) -> Result<()> {
        for c in changes {
            let now = self.get(&c.key)?;
            if now != c.old {
                return Err(StoreError::Conflict(format!(
                    "key {} changed since it was read (by another program?); read it again",
                    hex(&c.key)
                )));
            }
        }
        let names: Vec<String> = changes.iter().map(|c| hex(&c.key)).collect();
        let entry = match journal {
            Some(path) => {
                let steps: Vec<RecordStep<'_>> = changes
                    .iter()
                    .zip(&names)
                    .map(|(c, n)| (n.as_str(), c.old.clone(), c.new.as_deref(), None))
                    .collect();
                Some(Pending::records(path, note, JOURNAL, &steps)?)
            }
            None => None,
        };
        let mut batch = WriteBatch::default();
        for c in changes {
            match &c.new {
                Some(v) => batch.put(&c.key, v),
                None => batch.delete(&c.key),
            }
        }
        match self.db()?.write(batch, true) {
            Ok(()) => {
                if let Some(e) = entry {
                    e.kept();
                }
                Ok(())
            }
            Err(e) => {
                // The crate's memory may hold the batch already: start over
                // from the disk. The journal entry is taken back (dropped).
                self.reopen();
                if e.code == rusty_leveldb::StatusCode::IOError && e.err.contains("No space") {
                    Err(StoreError::Full(e.to_string()))
                } else {
                    Err(backend(e))
                }
            }
        }
    }

    fn reopen(&mut self) {
        self.db = None;
        match open_db_with(&self.dir, self.read_only, mojang) {
            Ok((db, _)) => self.db = Some(db),
            Err(e) => self.broken = format!("{e} (after a failed write); unmount and mount again"),
        }
    }
}

/// A Bedrock world's `db/`, open on a thread of its own (the crate's
/// database is single-threaded).
pub struct BedrockDb {
    dir: PathBuf,
    read_only: bool,
    /// The database's thread; dropped (the database closed) before the lock.
    worker: Worker<Engine>,
    /// Bumped by every write (only this process writes while it holds the
    /// lock; a snapshot never changes).
    version: AtomicU64,
    _lock: Option<std::fs::File>,
}

impl BedrockDb {
    /// Open `dir` (a world's `db/`). A writable open takes LevelDB's lock
    /// and is refused while the game or a server holds it.
    pub fn open(dir: &Path, read_only: bool) -> std::result::Result<BedrockDb, String> {
        if !dir.join("CURRENT").is_file() {
            return Err(format!("{}: not a LevelDB database (it has no CURRENT file)", dir.display()));
        }
        let lock = match read_only {
            true => None,
            false => Some(take_lock(
                dir,
                "the game or Bedrock Dedicated Server with this world open",
                "close the world to write, or mount read-only (-o ro)",
            )?),
        };
        let d = dir.to_path_buf();
        let open = move || {
            let (db, _) = open_db_with(&d, read_only, mojang)?;
            Ok(Engine { dir: d, read_only, db: Some(db), broken: String::new() })
        };
        let worker = Worker::start(dir, "worldfs-bedrock", open, |_| {})?;
        Ok(BedrockDb { dir: dir.to_path_buf(), read_only, worker, version: AtomicU64::new(0), _lock: lock })
    }

    fn call<T: Send + 'static>(&self, f: impl FnOnce(&mut Engine) -> T + Send + 'static) -> Result<T> {
        self.worker.call(f)
    }

    /// The database in words, for errors and `check`.
    pub fn describe(&self) -> String {
        let ro = if self.read_only { ", read-only snapshot" } else { "" };
        format!("Bedrock LevelDB ({}{ro})", self.dir.display())
    }

    /// Whether it was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let k = key.to_vec();
        self.call(move |e| e.get(&k))?
    }

    /// Every entry whose key starts with `prefix`, in key order.
    pub fn prefixed(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let p = prefix.to_vec();
        self.call(move |e| e.scan(&p, None, usize::MAX, true))?
    }

    /// Up to `limit` entries after key `after` (None: from the first), in
    /// key order, with their values when `values`.
    pub fn page(&self, after: Option<Vec<u8>>, limit: usize, values: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.call(move |e| e.scan(&[], after.as_deref(), limit, values))?
    }

    /// Make `changes` in one synced write batch, journaled in the undo
    /// journal file `journal` (None: not journaled). Refused with
    /// `Conflict` (nothing written) if a key no longer holds its `old`.
    pub fn write(&self, changes: Vec<KeyChange>, note: &Note, journal: Option<&Path>) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        let (note, journal) = (note.clone(), journal.map(Path::to_path_buf));
        let r = self.call(move |e| e.write(&changes, &note, journal.as_deref()))?;
        self.version.fetch_add(1, Ordering::SeqCst);
        r
    }

    /// Changes with every write through this handle.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("db");
        let mut opts = Options { create_if_missing: true, ..Options::default() };
        mojang(&mut opts);
        let mut db = DB::open(&dir, opts).unwrap();
        db.put(b"a", b"1").unwrap();
        db.flush().unwrap();
        drop(db);
        (d, dir)
    }

    #[test]
    fn both_compressions_round_trip() {
        let block: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for c in [&Zlib as &dyn Compressor, &RawDeflate] {
            let packed = c.encode(block.clone()).unwrap();
            assert!(packed.len() < block.len());
            assert_eq!(c.decode(packed).unwrap(), block);
        }
        // Raw deflate has no zlib header.
        assert_ne!(RawDeflate.encode(block.clone()).unwrap()[0], 0x78);
        assert_eq!(Zlib.encode(block).unwrap()[0], 0x78);
    }

    #[test]
    fn writes_are_conditional_batches_and_one_writer_at_a_time() {
        let (d, dir) = fresh();
        let journal = d.path().join(crate::journal::FILE_NAME);
        let db = BedrockDb::open(&dir, false).unwrap();
        assert!(BedrockDb::open(&dir, false).err().unwrap().contains("is locked by"));
        let put = |k: &[u8], old: Option<&[u8]>, new: &[u8]| KeyChange {
            key: k.to_vec(),
            old: old.map(<[u8]>::to_vec),
            new: Some(new.to_vec()),
        };
        db.write(vec![put(b"a", Some(b"1"), b"2"), put(b"b", None, b"3")], &Note::new("two"), Some(&journal)).unwrap();
        let stale = db.write(vec![put(b"a", Some(b"1"), b"9")], &Note::new("stale"), Some(&journal));
        assert!(matches!(stale, Err(StoreError::Conflict(_))));
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
        assert_eq!(db.page(None, 10, false).unwrap().len(), 2);
        assert_eq!(db.prefixed(b"b").unwrap(), vec![(b"b".to_vec(), b"3".to_vec())]);
        let j = crate::journal::Journal::open(&journal).unwrap().unwrap();
        let changes = j.changes(None, None).unwrap();
        assert_eq!(changes.len(), 1, "the refused write left no entry");
        let recs = j.records(changes[0].id).unwrap();
        assert_eq!((recs[0].name.as_str(), recs[0].before.as_deref()), ("61", Some(&b"1"[..])));
        assert_eq!(recs[1].before, None);
        drop(db);
        // A read-only snapshot sees what was written, and writes nothing.
        let ro = BedrockDb::open(&dir, true).unwrap();
        assert_eq!(ro.get(b"b").unwrap().as_deref(), Some(&b"3"[..]));
        assert!(matches!(ro.write(vec![], &Note::new("x"), None), Err(StoreError::ReadOnly)));
    }
}
