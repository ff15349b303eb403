//! A map held by a running server that runs the worldfs_live mod: reads
//! come from the database, opened read-only; every change is handed to the
//! server as a request (`request.rs`, `spool.rs`), which the mod applies in
//! one server step after checking that what it replaces is still what the
//! mount showed.
//!
//! The server writes changed blocks to the database only every
//! `server_map_save_interval`. So that a read after a write shows the
//! write, a block this store changed is shown as written until the
//! database's copy of it changes (the server saved it, with this change
//! and any made in the game since); then the database is shown again.

pub mod request;
pub mod spool;

use crate::codec::Block;
use crate::store::journal::Fingerprint;
use crate::store::{BlockPos, Change, MapStore, Note, Result, StoreError, unmet_expectation};
use parking_lot::Mutex;
use spool::Spool;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

pub use spool::{ServerState, check_spool, server_state};

/// The most blocks one change may touch: the server applies a request in
/// one step, which must stay short (world-wide changes live are not
/// supported yet).
pub const MAX_BLOCKS: usize = 256;

/// A block as this mount changed it, until the database shows a save.
struct Shown {
    /// What the mount wrote (None: deleted).
    blob: Option<Vec<u8>>,
    /// The database's copy just after the server applied the change.
    db_after: Option<Fingerprint>,
}

pub struct LiveStore {
    /// The map database, read-only.
    db: Box<dyn MapStore>,
    spool: Spool,
    shown: Mutex<HashMap<BlockPos, Shown>>,
    /// Changes applied through the server (part of `data_version`).
    applied: AtomicU64,
}

fn fingerprint(blob: &Option<Vec<u8>>) -> Option<Fingerprint> {
    blob.as_deref().map(Fingerprint::of)
}

impl LiveStore {
    /// The map of the world at `world`, read from `db` (opened read-only),
    /// changed through the server.
    pub fn new(world: &Path, db: Box<dyn MapStore>) -> LiveStore {
        LiveStore { db, spool: Spool::new(world), shown: Mutex::new(HashMap::new()), applied: AtomicU64::new(0) }
    }

    /// What a block shows: this mount's change, until the server saved it.
    fn shown(&self, pos: BlockPos, db: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let mut shown = self.shown.lock();
        if let Some(s) = shown.get(&pos) {
            if fingerprint(&db) == s.db_after {
                return s.blob.clone();
            }
            shown.remove(&pos);
        }
        db
    }

    /// The request for `changes`, or why the server cannot be given them.
    fn request(&self, changes: &[Change]) -> Result<String> {
        let mut out = String::from(request::HEADER);
        let before = out.len();
        let expected: HashMap<BlockPos, &Option<Vec<u8>>> =
            changes.iter().filter_map(|c| if let Change::Expect(p, b) = c { Some((*p, b)) } else { None }).collect();
        let decode = |pos: BlockPos, blob: &[u8]| {
            Block::decode(blob).map_err(|e| StoreError::Backend(format!("block {pos} does not decode: {e}")))
        };
        for c in changes {
            let pos = c.pos();
            let old = match expected.get(&pos) {
                Some(b) => (*b).clone(),
                None => self.get(pos)?,
            };
            let old = match (c, old) {
                (Change::Expect(..), _) => continue,
                (_, Some(old)) => decode(pos, &old)?,
                (_, None) => {
                    return Err(StoreError::Refused(format!(
                        "block {pos} is not stored: new blocks cannot be made while the server runs \
                         (it generates them); stop the server to make it"
                    )));
                }
            };
            match c {
                Change::Put(_, blob) => {
                    request::block_change(&mut out, pos, &old, &decode(pos, blob)?).map_err(StoreError::Refused)?
                }
                _ => request::block_delete(&mut out, pos, &old),
            }
        }
        if out.len() == before {
            return Ok(String::new());
        }
        out.push_str("end\n");
        Ok(out)
    }
}

impl MapStore for LiveStore {
    fn describe(&self) -> String {
        format!("{}, changed through the running server (worldfs_live)", self.db.describe())
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let db = self.db.get(pos)?;
        Ok(self.shown(pos, db))
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.scan_after(after, limit)?.into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        // Blocks this mount deleted are skipped; a short page would end a
        // listing, so pages are read until `limit` is reached or the map ends.
        let mut out = Vec::new();
        let mut from = after;
        loop {
            let page = self.db.scan_after(from, limit)?;
            let ended = page.len() < limit;
            for (pos, blob) in page {
                from = Some(pos);
                if let Some(b) = self.shown(pos, Some(blob))
                    && out.len() < limit
                {
                    out.push((pos, b));
                }
            }
            if ended || out.len() >= limit {
                return Ok(out);
            }
        }
    }

    fn apply(&self, changes: &[Change], _note: &Note) -> Result<()> {
        if let Some(e) = unmet_expectation(changes, |p| self.get(p))? {
            return Err(e);
        }
        let blocks: std::collections::HashSet<BlockPos> =
            changes.iter().filter(|c| !matches!(c, Change::Expect(..))).map(Change::pos).collect();
        if blocks.len() > MAX_BLOCKS {
            return Err(StoreError::Refused(format!(
                "{} blocks in one change; while the server runs a change may touch at most {MAX_BLOCKS} \
                 (world-wide changes need the server stopped)",
                blocks.len()
            )));
        }
        let text = self.request(changes)?;
        if text.is_empty() {
            return Ok(()); // nothing the server would see changes
        }
        self.spool.send(&text)?;
        for c in changes {
            let blob = match c {
                Change::Put(_, b) => Some(b.clone()),
                Change::Delete(_) => None,
                Change::Expect(..) => continue,
            };
            let db_after = fingerprint(&self.db.get(c.pos()).unwrap_or(None));
            self.shown.lock().insert(c.pos(), Shown { blob, db_after });
        }
        self.applied.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn count(&self) -> Result<u64> {
        let deleted = self.shown.lock().values().filter(|s| s.blob.is_none()).count() as u64;
        Ok(self.db.count()?.saturating_sub(deleted))
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn data_version(&self) -> Option<u64> {
        self.db.data_version().map(|v| v.wrapping_add(self.applied.load(Ordering::SeqCst)))
    }
}
