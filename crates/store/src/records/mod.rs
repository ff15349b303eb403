//! Players, accounts and mod storage: the world's other databases. Each
//! collection is a set of named records kept in one backend (sqlite3,
//! files; the world.mt keys `player_backend`, `auth_backend`,
//! `mod_storage_backend`). A store speaks canonical records (the encodings
//! of `codec::player`, `codec::auth`, `codec::mod_storage`), so the journal,
//! `worldfs undo` and the views are the same for every backend.

pub mod files;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "postgresql")]
pub mod postgres;
pub mod sqlite;

use super::{Note, Result, StoreError};
use crate::journal::RecordDates;
use std::path::{Path, PathBuf};

/// The three kinds of records a world keeps beside its map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Collection {
    /// Players' saved state ([`worldfs_codec::luanti::player`]).
    Players,
    /// Accounts: password hash, privileges, last login ([`worldfs_codec::luanti::auth`]).
    Auth,
    /// Each mod's key/value storage ([`worldfs_codec::luanti::mod_storage`]).
    ModStorage,
}

impl Collection {
    /// Every collection.
    pub const ALL: [Collection; 3] = [Collection::Players, Collection::Auth, Collection::ModStorage];

    /// The directory in the mount, and the collection's name in the journal.
    pub fn name(self) -> &'static str {
        match self {
            Collection::Players => "players",
            Collection::Auth => "auth",
            Collection::ModStorage => "mod_storage",
        }
    }

    /// The collection named `name` ([`Collection::name`]), if any.
    pub fn from_name(name: &str) -> Option<Collection> {
        Collection::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The world.mt key naming its backend.
    pub fn backend_key(self) -> &'static str {
        match self {
            Collection::Players => "player_backend",
            Collection::Auth => "auth_backend",
            Collection::ModStorage => "mod_storage_backend",
        }
    }

    /// The backend when world.mt names none. A world.mt without the key
    /// means `files` (for players and accounts the engine then writes the
    /// key back: `ServerEnvironment::init` in src/serverenvironment.cpp of
    /// <https://github.com/luanti-org/luanti>; for mod storage
    /// `Server::openModStorageDatabase` in src/server.cpp); a world with no
    /// world.mt at all gets sqlite3.
    pub fn default_backend(self, has_world_mt: bool) -> &'static str {
        if has_world_mt { "files" } else { "sqlite3" }
    }
}

/// One collection's records in one backend. Like the map store: usable
/// from several threads, no transaction held between calls.
pub trait RecordStore: Send + Sync {
    /// For messages: "players in players.sqlite".
    fn describe(&self) -> String;

    /// Every record's name, sorted.
    fn names(&self) -> Result<Vec<String>>;

    /// A record's canonical bytes, if it exists.
    fn get(&self, name: &str) -> Result<Option<Vec<u8>>>;

    /// Replace (`Some`) or delete (`None`) a record in one transaction,
    /// journaled with `note`; refused with [`StoreError::Conflict`] when the
    /// record does not hold `expect` when the transaction starts.
    fn put(&self, name: &str, expect: Option<&[u8]>, new: Option<&[u8]>, note: &Note) -> Result<()> {
        self.restore(name, expect, new, None, note)
    }

    /// `put`, and for undo: the record also gets back the dates its table
    /// held beside it then (`dates`, from the journal), not the time of the
    /// undo. Backends that keep no dates (files, LevelDB) ignore them.
    fn restore(
        &self,
        name: &str,
        expect: Option<&[u8]>,
        new: Option<&[u8]>,
        dates: Option<&RecordDates>,
        note: &Note,
    ) -> Result<()>;

    /// Whether the store was opened read-only (every change is then refused
    /// with [`StoreError::ReadOnly`]).
    fn is_read_only(&self) -> bool;

    /// Files a running server holds open while it uses this store (for
    /// refusing writes meanwhile).
    fn watched(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Every record with its canonical bytes, sorted by name, read as one
    /// instant as far as the backend allows (the answer says how): what
    /// `worldfs snapshot` records. `scratch`: a directory the read may
    /// keep a temporary copy in. By default record by record.
    fn read_all(&self, scratch: &Path) -> Result<AllRecords> {
        let _ = scratch;
        let mut out = Vec::new();
        for name in self.names()? {
            if let Some(bytes) = self.get(&name)? {
                out.push((name, bytes));
            }
        }
        let how = "record by record (a change meanwhile may be seen in part)".to_string();
        Ok((out, crate::Consistency { one_instant: false, how }))
    }
}

/// Every record of a collection with its canonical bytes, and how they
/// were read (`RecordStore::read_all`).
pub type AllRecords = (Vec<(String, Vec<u8>)>, crate::Consistency);

/// A record as the store holds it now, as the writer read it (`expect`),
/// and as it is to be (`new`; None: removed).
type Versions<'a> = (Option<Vec<u8>>, Option<&'a [u8]>, Option<&'a [u8]>);

/// The end of a `restore` that keeps its own journal beside the store
/// (file and LevelDB records), called holding the record's lock with what
/// the store holds `now`: refused when that is not what the writer read
/// (`expect`); else the journal entry first, then `write`, and the entry
/// kept only if the write succeeded.
pub(crate) fn write_unless_changed(
    collection: Collection,
    journal: Option<&Path>,
    note: &Note,
    name: &str,
    (now, expect, new): Versions,
    write: impl FnOnce() -> Result<()>,
) -> Result<()> {
    if now.as_deref() != expect {
        return Err(conflict(collection.name(), name));
    }
    let pending = match journal {
        Some(j) => Some(crate::journal::Pending::records(j, note, collection.name(), &[(name, now, new, None)])?),
        None => None,
    };
    let written = write();
    if written.is_ok()
        && let Some(p) = pending
    {
        p.kept();
    }
    written
}

/// The refusal when a record changed since it was read.
pub(crate) fn conflict(what: &str, name: &str) -> StoreError {
    StoreError::Conflict(format!(
        "{what} {name} was changed by someone else since it was read; nothing written: read it again and redo the change"
    ))
}
