//! A Bedrock world's database as the mount's parts share it: the store
//! (`worldfs_store::leveldb::bedrock`), the undo journal's path, the list of chunks
//! (made by one walk over the keys, again after each change), and each
//! chunk's records (every key of the chunk and the entities its actor
//! digest names).

use crate::fs::{FsError, Result};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use worldfs_codec::bedrock::key::{ChunkPos, Key};
use worldfs_codec::bedrock::records;
use worldfs_store::leveldb::bedrock::{BedrockDb, KeyChange};
use worldfs_store::{Note, StoreError};

pub(crate) struct Db {
    pub(crate) store: BedrockDb,
    /// The undo journal (None: not kept).
    pub(crate) journal: Option<PathBuf>,
    /// One change at a time (a read, then a conditional write).
    pub(crate) lock: Mutex<()>,
    /// The chunks of each dimension, as of a store version.
    chunks: Mutex<Option<(u64, Arc<BTreeSet<ChunkPos>>)>>,
    /// The folder a `.mcworld` was unpacked into, removed when the mount
    /// ends (after the store, declared above, is closed).
    pub(crate) scratch: Option<tempfile::TempDir>,
}

/// A store's error as the filesystem shows it.
/// A chunk's records by key (`Db::records`).
pub(crate) type Records = BTreeMap<Vec<u8>, Vec<u8>>;

pub(crate) fn fs_err(e: StoreError) -> FsError {
    match e {
        StoreError::Conflict(m) => FsError::stale(m),
        StoreError::ReadOnly => FsError::read_only("the mount is read-only"),
        other => FsError::io(other.to_string()),
    }
}

impl Db {
    pub(crate) fn new(store: BedrockDb, journal: Option<PathBuf>) -> Db {
        Db { store, journal, lock: Mutex::new(()), chunks: Mutex::new(None), scratch: None }
    }

    /// Every chunk that has a key, of every dimension.
    pub(crate) fn chunks(&self) -> Result<Arc<BTreeSet<ChunkPos>>> {
        let v = self.store.version();
        let mut c = self.chunks.lock();
        if let Some((at, list)) = c.as_ref()
            && *at == v
        {
            return Ok(list.clone());
        }
        let mut set = BTreeSet::new();
        let mut after = None;
        loop {
            let page = self.store.page(after.take(), 4096, false).map_err(fs_err)?;
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            set.extend(page.iter().filter_map(|(k, _)| match Key::parse(k) {
                Key::Chunk { pos, .. } => Some(pos),
                _ => None,
            }));
        }
        let list = Arc::new(set);
        *c = Some((v, list.clone()));
        Ok(list)
    }

    /// The chunks of one dimension, as (x, z).
    pub(crate) fn chunks_of(&self, dim: i32) -> Result<Vec<(i32, i32)>> {
        Ok(self.chunks()?.iter().filter(|p| p.dim == dim).map(|p| (p.x, p.z)).collect())
    }

    /// Every record of chunk `pos`: its keys, its actor digest and the
    /// entities the digest names (empty: no such chunk).
    pub(crate) fn records(&self, pos: ChunkPos) -> Result<Records> {
        let mut out: BTreeMap<Vec<u8>, Vec<u8>> = self
            .store
            .prefixed(&pos.prefix())
            .map_err(fs_err)?
            .into_iter()
            .filter(|(k, _)| matches!(Key::parse(k), Key::Chunk { pos: p, .. } if p == pos))
            .collect();
        let digest = Key::Digest(pos).bytes();
        if let Some(d) = self.store.get(&digest).map_err(fs_err)? {
            for id in records::digest(&d).unwrap_or_default() {
                let k = Key::Actor(id).bytes();
                if let Some(v) = self.store.get(&k).map_err(fs_err)? {
                    out.insert(k, v);
                }
            }
            out.insert(digest, d);
        }
        Ok(out)
    }

    /// Write what changed from `old` to `new` (records of one chunk or one
    /// player) as one batch, refused (ESTALE) if a key no longer holds
    /// what `old` says. The caller holds `lock`.
    pub(crate) fn write(
        &self,
        old: &BTreeMap<Vec<u8>, Vec<u8>>,
        new: &BTreeMap<Vec<u8>, Vec<u8>>,
        what: &str,
    ) -> Result<()> {
        let mut changes = Vec::new();
        for (k, v) in new {
            if old.get(k) != Some(v) {
                changes.push(KeyChange { key: k.clone(), old: old.get(k).cloned(), new: Some(v.clone()) });
            }
        }
        for (k, v) in old {
            if !new.contains_key(k) {
                changes.push(KeyChange { key: k.clone(), old: Some(v.clone()), new: None });
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        self.store.write(changes, &Note::new(what), self.journal.as_deref()).map_err(fs_err)
    }
}
