//! A big change of a live mount written to the database by the mount
//! itself, for the blocks the server does not hold in memory: the server
//! would only load each one, change it and save it again, one request of
//! four blocks at a time (a world-wide rename of 37,269 blocks took 112 s
//! that way, 1 s offline).
//!
//! Why the server cannot lose such a write: the 5.6.1 server reads a
//! block from the database (`EmergeThread::getBlockOrStartGen`, Lua's
//! VoxelManip) and writes one (`ServerMap::save`, at unload) only while
//! it holds its environment lock, as it does while the mod runs a step.
//! So the mount first writes the blocks (each only if the database still
//! holds what the mount showed), then asks the mod in one step which of
//! them the server holds (`held`). A block not held then is read from the
//! database, with the change, whenever the server needs it again. One it
//! holds may be an older copy that a later save would write over the
//! change: it is put back in the database as it was, and the change goes
//! to it through the server as any change does (its request marked
//! `written`: the game may already hold the new nodes, loaded from the
//! database after the write), which may refuse it. And a block the server saved between the write and
//! the question (an older copy it held and unloaded) no longer holds the
//! change when read again after the answer: it goes through the server
//! too.
//!
//! Only nodes are written so (a rename, a replace, a copy): metadata,
//! timers and deletions always go through the server, as do blocks this
//! mount changed through it and the server has not saved (`Shown`).

use super::{LiveStore, Requests};
use crate::{BlockPos, Change, MapStore, Note, Result, StoreError};
use std::collections::{HashMap, HashSet};

/// From how many blocks that can be written directly a change is: below,
/// the whole change goes through the server (a single edit is answered
/// in one step either way, and the game shows it at once).
pub const DIRECT_FROM: usize = 8;

/// Blocks written in one transaction: the server's map save and its
/// reads wait while one commits (about 11 ms on the benchmark machine;
/// 256 a transaction cost a fifth more in all, in commits).
const TX_BLOCKS: usize = 1024;

/// Blocks written directly and still holding the change after the
/// server's answer; when something failed after some were written, the
/// error with them.
pub(super) type Written = std::result::Result<Vec<BlockPos>, (Vec<BlockPos>, StoreError)>;

impl LiveStore {
    /// Write to the database the blocks of `requests` the server does not
    /// hold (see the module doc), when the mod can say which it holds and
    /// there are at least `DIRECT_FROM` of them; their lines leave
    /// `requests`, and the lines left are marked `written` when any block
    /// was.
    pub(super) fn write_directly(
        &self,
        requests: &mut Requests<'_>,
        changes: &HashMap<BlockPos, &Change>,
        note: &Note,
    ) -> Written {
        let Some(direct) = &self.direct else { return Ok(Vec::new()) };
        let held_query =
            matches!(super::server_state(&self.world), super::ServerState::Running { held_query: true, .. });
        let candidates = self.direct_candidates(requests, changes);
        if !held_query || candidates.len() < self.direct_from {
            return Ok(Vec::new());
        }
        let start = std::time::Instant::now();
        // Not read first: `apply` just compared every block with what the
        // mount showed, and each transaction expects that again.
        let written = write_blocks(direct.as_ref(), requests, changes, &candidates, note);
        if written.is_empty() {
            return Ok(Vec::new());
        }
        requests.written = true;
        self.applied.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        super::timing::add(super::timing::Part::Direct, start.elapsed());
        let held = self.spool.held(&written);
        // Read again after the answer (or the failure): what no longer holds
        // the change was saved over by the server, and goes through it.
        let kept = match &held {
            Ok(h) => {
                put_back(direct.as_ref(), requests, changes, h, note);
                let h: HashSet<&BlockPos> = h.iter().collect();
                let free: Vec<BlockPos> = written.iter().filter(|p| !h.contains(p)).copied().collect();
                self.holding_change(&free, changes)
            }
            Err(_) => self.holding_change(&written, changes),
        };
        let kept = match (kept, held) {
            (Ok(k), Ok(_)) => k,
            (Ok(k), Err(e)) => return Err((k, held_unknown(e, written.len()))),
            (Err(e), _) => return Err((Vec::new(), e)),
        };
        let done: HashSet<BlockPos> = kept.iter().copied().collect();
        requests.lines.retain(|l| !done.contains(&l.pos));
        Ok(kept)
    }

    /// The blocks of `requests` whose change is nodes only, a `Put`, and
    /// not of a block this mount changed through the server unsaved.
    fn direct_candidates(&self, requests: &Requests<'_>, changes: &HashMap<BlockPos, &Change>) -> Vec<BlockPos> {
        let shown = self.shown.lock();
        requests
            .lines
            .iter()
            .filter(|l| l.nodes_only && matches!(changes.get(&l.pos), Some(Change::Put(..))))
            .filter(|l| !shown.blocks.contains_key(&l.pos))
            .map(|l| l.pos)
            .collect()
    }

    /// Those of `blocks` the database holds as the change made them.
    fn holding_change(&self, blocks: &[BlockPos], changes: &HashMap<BlockPos, &Change>) -> Result<Vec<BlockPos>> {
        self.holding(blocks, |p| match changes.get(p) {
            Some(Change::Put(_, new)) => Some(new.as_slice()),
            _ => None,
        })
    }

    /// Those of `blocks` whose bytes in the database are `want`'s (a block
    /// `want` gives None for must be absent).
    fn holding<'w>(&self, blocks: &[BlockPos], want: impl Fn(&BlockPos) -> Option<&'w [u8]>) -> Result<Vec<BlockPos>> {
        let now = self.db.get_many(blocks)?;
        Ok(blocks.iter().zip(now).filter(|(p, b)| want(p) == b.as_deref()).map(|(p, _)| *p).collect())
    }
}

/// Write `blocks` to `store`, `TX_BLOCKS` a transaction, each expected to
/// hold what the mount showed; gives those written. A transaction that
/// fails (a block changed meanwhile, the database busy) wrote nothing:
/// its blocks go through the server.
fn write_blocks(
    store: &dyn MapStore,
    requests: &Requests<'_>,
    changes: &HashMap<BlockPos, &Change>,
    blocks: &[BlockPos],
    note: &Note,
) -> Vec<BlockPos> {
    let mut written = Vec::with_capacity(blocks.len());
    for part in blocks.chunks(TX_BLOCKS) {
        let mut tx = Vec::with_capacity(part.len() * 2);
        for p in part {
            let before = requests.before.get(p).and_then(|b| b.as_deref()).map(<[u8]>::to_vec);
            tx.push(Change::Expect(*p, before));
            if let Some(Change::Put(_, new)) = changes.get(p) {
                tx.push(Change::Put(*p, new.clone()));
            }
        }
        match store.apply(&tx, note) {
            Ok(()) => written.extend_from_slice(part),
            Err(e) => log::info!("{} block(s) go through the server, not written directly: {e}", part.len()),
        }
    }
    written
}

/// The blocks the server holds put back in the database as they were
/// (each only if it still holds what the mount wrote): the change goes
/// to them through the server, which may refuse it, and then the
/// database must not hold it (the server saves its own copy later, but a
/// server killed first would leave the refused change). A block that
/// cannot be put back is left as the server saved it.
fn put_back(
    store: &dyn MapStore,
    requests: &Requests<'_>,
    changes: &HashMap<BlockPos, &Change>,
    held: &[BlockPos],
    note: &Note,
) {
    for p in held {
        let (Some(Change::Put(_, new)), Some(before)) = (changes.get(p), requests.before.get(p)) else { continue };
        let tx = match before {
            Some(old) => [Change::Expect(*p, Some(new.clone())), Change::Put(*p, old.to_vec())],
            None => [Change::Expect(*p, Some(new.clone())), Change::Delete(*p)],
        };
        if let Err(e) = store.apply(&tx, note) {
            log::info!("block {p}, held by the server, was not put back as it was: {e}");
        }
    }
}

/// The server could not say which blocks it holds after `n` were written.
fn held_unknown(e: StoreError, n: usize) -> StoreError {
    let why = format!(
        "{n} block(s) were written to the map database, but the server could not say which of them it holds \
         in memory ({e}): a block it held may be written over by its next map save"
    );
    match e {
        StoreError::Unreachable(_) => StoreError::Unreachable(why),
        _ => StoreError::Backend(why),
    }
}
