//! Players and accounts in LevelDB (`players.db`, `auth.db`; Luanti's
//! `PlayerDatabaseLevelDB` and `AuthDatabaseLevelDB` in
//! src/database/database-leveldb.cpp of
//! <https://github.com/luanti-org/luanti>): key = the name, value = the
//! record in the engine's binary form, which is worldfs's canonical form for
//! both. The databases are small, so each call opens the directory and closes
//! it again: a read on a snapshot of its files that never writes to it (as
//! the map's read-only store does), a change under the engine's own lock on
//! `LOCK`, as one synced batch, journaled first and taken back if the batch
//! fails.

use super::{Collection, RecordDates, RecordStore, write_unless_changed};
use crate::leveldb::{lock, open_db};
use crate::{Note, Result, StoreError};
use parking_lot::Mutex;
use rusty_leveldb::{LdbIterator, WriteBatch};
use std::path::{Path, PathBuf};

/// Players or accounts in the `leveldb` backend of a world.
pub struct LevelDbRecords {
    collection: Collection,
    dir: PathBuf,
    read_only: bool,
    journal: Option<PathBuf>,
    one: Mutex<()>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// The engine's directory of a collection.
pub fn dir_name(c: Collection) -> Option<&'static str> {
    match c {
        Collection::Players => Some("players.db"),
        Collection::Auth => Some("auth.db"),
        Collection::ModStorage => None,
    }
}

impl LevelDbRecords {
    /// The collection's database in world directory `world`, journaled to
    /// `journal` when given (opened at each call). Mod storage has no
    /// LevelDB backend: such a store is empty and refuses every change.
    pub fn new(world: &Path, collection: Collection, read_only: bool, journal: Option<&Path>) -> LevelDbRecords {
        LevelDbRecords {
            collection,
            dir: world.join(dir_name(collection).unwrap_or("none")),
            read_only,
            journal: journal.map(Path::to_path_buf),
            one: Mutex::new(()),
        }
    }

    fn exists(&self) -> bool {
        self.dir.join("CURRENT").is_file()
    }

    fn read_db(&self) -> Result<Option<rusty_leveldb::DB>> {
        if !self.exists() {
            return Ok(None); // nobody joined yet
        }
        open_db(&self.dir, true).map(|(db, _)| Some(db)).map_err(StoreError::Backend)
    }
}

impl RecordStore for LevelDbRecords {
    fn describe(&self) -> String {
        format!("{} in {} (leveldb)", self.collection.name(), self.dir.display())
    }

    fn names(&self) -> Result<Vec<String>> {
        let _one = self.one.lock();
        let Some(mut db) = self.read_db()? else { return Ok(Vec::new()) };
        let mut it = db.new_iter().map_err(backend)?;
        it.seek_to_first();
        let mut out = Vec::new();
        while let Some((k, v)) = it.current() {
            if !v.is_empty()
                && let Ok(name) = String::from_utf8(k.to_vec())
            {
                out.push(name);
            }
            it.advance();
        }
        out.sort();
        Ok(out)
    }

    fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let _one = self.one.lock();
        let Some(mut db) = self.read_db()? else { return Ok(None) };
        Ok(db.get(name.as_bytes()).map(|b| b.to_vec()).filter(|v| !v.is_empty()))
    }

    fn restore(
        &self,
        name: &str,
        expect: Option<&[u8]>,
        new: Option<&[u8]>,
        _dates: Option<&RecordDates>,
        note: &Note,
    ) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        let _one = self.one.lock();
        if !self.exists() {
            return Err(StoreError::Backend(format!(
                "{} does not exist yet (the server makes it when the first player joins)",
                self.dir.display()
            )));
        }
        let lock_file = self.dir.join("LOCK");
        let _lock = lock::take(&lock_file).map_err(|e| {
            let who = lock::holder(&lock_file).ok().flatten().unwrap_or_else(|| "another process".into());
            StoreError::Busy(format!("{} is locked by {who} ({e}); stop the server first", self.dir.display()))
        })?;
        let (mut db, _) = open_db(&self.dir, false).map_err(StoreError::Backend)?;
        let now = db.get(name.as_bytes()).map(|b| b.to_vec()).filter(|v| !v.is_empty());
        let journal = self.journal.as_deref();
        write_unless_changed(self.collection, journal, note, name, (now, expect, new), || {
            let mut batch = WriteBatch::default();
            match new {
                Some(v) => batch.put(name.as_bytes(), v),
                None => batch.delete(name.as_bytes()),
            }
            db.write(batch, true).and_then(|_| db.close()).map_err(backend)
        })
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn watched(&self) -> Vec<PathBuf> {
        vec![self.dir.join("LOCK")]
    }
}
