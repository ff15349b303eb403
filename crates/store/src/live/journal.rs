//! The undo journal of changes a running server applied (`LiveStore`).
//! The server re-serializes a block when it saves it, so the bytes it
//! saves are not the bytes the mount wrote, and a fingerprint cannot tell
//! whether the game still holds the change. A live change is journaled as
//! any other (`store::journal`, bytes before, fingerprint after) and, in
//! the table `live_after` beside it, the bytes the mount wrote: undo then
//! sends the server the change from those bytes back to the ones before,
//! and the mod checks, node by node, that the game still holds what the
//! change left (else the undo is refused: a conflict). Once the server
//! stopped, undo writes the map itself: `AsJournaled` then takes a block
//! as the change left it when the map holds the same content in the
//! server's serialization (`holds_live_change`).

use crate::journal::{attached, record};
use crate::{BlockPos, Change, MapStore, Note, Result, StoreError};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension, params};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::inventory::Inventory;

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("undo journal: {e}"))
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS journal.live_after (
    change INTEGER NOT NULL,
    x INTEGER NOT NULL, y INTEGER NOT NULL, z INTEGER NOT NULL,
    after BLOB,
    PRIMARY KEY (change, x, y, z));
    CREATE TABLE IF NOT EXISTS journal.live_pending (
    change INTEGER NOT NULL,
    x INTEGER NOT NULL, y INTEGER NOT NULL, z INTEGER NOT NULL,
    run TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (change, x, y, z))";

/// A block the server applied: its position, bytes before, and bytes the
/// mount wrote (None: absent).
pub type Applied<'a> = (BlockPos, Option<&'a [u8]>, Option<&'a [u8]>);

/// A journaled block the server applied but had not saved yet: its
/// position, the run that applied it and the request's number (`settle`).
pub type Unsaved = (BlockPos, String, u64);

/// Journal blocks the server applied, in one entry with `note`; those in
/// `unsaved` are kept only once the server saved them (`settle`).
pub fn record_applied(path: &Path, note: &Note, blocks: &[Applied<'_>], unsaved: &[Unsaved]) -> Result<()> {
    record_many(path, &[Entry::borrowed(note.clone(), blocks, unsaved.to_vec())])
}

/// A block's bytes in an `Entry`: borrowed from the change while its
/// writer journals it itself, owned while it waits for an other writer's
/// journal commit (`Entry::into_owned`).
pub type Bytes<'a> = Option<Cow<'a, [u8]>>;

/// One change the server applied, for `record_many`.
pub struct Entry<'a> {
    /// What the change was (`Note`).
    pub note: Note,
    /// Its blocks: position, bytes before, bytes the mount wrote.
    pub blocks: Vec<(BlockPos, Bytes<'a>, Bytes<'a>)>,
    /// Those not saved yet.
    pub unsaved: Vec<Unsaved>,
}

impl<'a> Entry<'a> {
    /// An entry borrowing the bytes of `blocks` (no copy of the blobs).
    pub fn borrowed(note: Note, blocks: &[Applied<'a>], unsaved: Vec<Unsaved>) -> Entry<'a> {
        let blocks = blocks.iter().map(|(p, b, a)| (*p, b.map(Cow::Borrowed), a.map(Cow::Borrowed))).collect();
        Entry { note, blocks, unsaved }
    }

    /// The entry with its own copy of the bytes, to wait in a queue beyond
    /// the change's lifetime: one change's blocks (a world-wide change
    /// sends a part at a time), never the whole change.
    pub fn into_owned(self) -> Entry<'static> {
        let own = |b: Bytes<'a>| b.map(|b| Cow::Owned(b.into_owned()));
        let blocks = self.blocks.into_iter().map(|(p, b, a)| (p, own(b), own(a))).collect();
        Entry { note: self.note, blocks, unsaved: self.unsaved }
    }
}

/// Journal several changes, an entry each, in one transaction (the
/// changes of several writers the server answered in the same step: one
/// journal commit instead of one each).
pub fn record_many(path: &Path, entries: &[Entry<'_>]) -> Result<()> {
    let mut conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
    let tx = conn.transaction().map_err(backend)?;
    for e in entries {
        let blocks: Vec<Applied<'_>> = e.blocks.iter().map(|(p, b, a)| (*p, b.as_deref(), a.as_deref())).collect();
        record_entry(&tx, &e.note, &blocks, &e.unsaved)?;
    }
    tx.commit().map_err(backend)
}

fn record_entry(
    tx: &rusqlite::Transaction<'_>,
    note: &Note,
    blocks: &[Applied<'_>],
    unsaved: &[Unsaved],
) -> Result<()> {
    let id = record(tx, note, blocks).map_err(backend)?;
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO journal.live_after (change, x, y, z, after) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(backend)?;
        for (p, _, after) in blocks {
            ins.execute(params![id, p.x, p.y, p.z, after]).map_err(backend)?;
        }
        let mut ins = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO journal.live_pending (change, x, y, z, run, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(backend)?;
        for (p, run, seq) in unsaved {
            ins.execute(params![id, p.x, p.y, p.z, run, *seq as i64]).map_err(backend)?;
        }
    }
    Ok(())
}

/// A journaled block not known to be saved: its entry, position, run,
/// request number, and the bytes the change wrote (None: deleted).
pub type PendingRow = (i64, BlockPos, String, u64, Option<Vec<u8>>);

/// The journal's blocks not known to be saved (`settle.rs`).
pub fn pending(path: &Path) -> Result<Vec<PendingRow>> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
    let mut stmt = conn
        .prepare(
            "SELECT p.change, p.x, p.y, p.z, p.run, p.seq, a.after FROM journal.live_pending p \
             LEFT JOIN journal.live_after a ON a.change = p.change AND a.x = p.x AND a.y = p.y AND a.z = p.z",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map([], |r| {
            let (x, y, z): (i64, i64, i64) = (r.get(1)?, r.get(2)?, r.get(3)?);
            let seq: i64 = r.get(5)?;
            Ok((r.get::<_, i64>(0)?, (x, y, z), r.get::<_, String>(4)?, seq as u64, r.get(6)?))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    for row in rows {
        let (change, (x, y, z), run, seq, after) = row.map_err(backend)?;
        if let (Ok(x), Ok(y), Ok(z)) = (i16::try_from(x), i16::try_from(y), i16::try_from(z)) {
            out.push((change, BlockPos::new(x, y, z), run, seq, after));
        }
    }
    Ok(out)
}

/// Settled pending blocks: (entry, position, whether its run lost it).
/// A kept one is no longer pending; a lost one is taken out of its entry
/// (an entry left without blocks goes, and what it reverted is no longer
/// marked so). Gives how many were taken out.
pub fn resolve(path: &Path, settled: &[(i64, BlockPos, bool)]) -> Result<usize> {
    let mut conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
    let tx = conn.transaction().map_err(backend)?;
    let mut lost = 0;
    for (change, p, is_lost) in settled {
        let (x, y, z) = (i64::from(p.x), i64::from(p.y), i64::from(p.z));
        tx.execute(
            "DELETE FROM journal.live_pending WHERE change = ?1 AND x = ?2 AND y = ?3 AND z = ?4",
            params![change, x, y, z],
        )
        .map_err(backend)?;
        if *is_lost {
            forget_block(&tx, *change, x, y, z).map_err(backend)?;
            lost += 1;
        }
    }
    tx.commit().map_err(backend)?;
    Ok(lost)
}

/// Take a block a killed run lost out of journal entry `change`.
fn forget_block(tx: &rusqlite::Transaction<'_>, change: i64, x: i64, y: i64, z: i64) -> rusqlite::Result<()> {
    let at = params![change, x, y, z];
    tx.execute("DELETE FROM journal.blocks WHERE change = ?1 AND x = ?2 AND y = ?3 AND z = ?4", at)?;
    tx.execute("DELETE FROM journal.live_after WHERE change = ?1 AND x = ?2 AND y = ?3 AND z = ?4", at)?;
    tx.execute("UPDATE journal.changes SET blocks = blocks - 1 WHERE id = ?1", [change])?;
    let empty: bool = tx.query_row(
        "SELECT blocks <= 0 AND NOT EXISTS (SELECT 1 FROM journal.records WHERE change = ?1) \
         FROM journal.changes WHERE id = ?1",
        [change],
        |r| r.get(0),
    )?;
    if empty {
        tx.execute("DELETE FROM journal.changes WHERE id = ?1", [change])?;
        tx.execute("UPDATE journal.changes SET reverted_by = NULL WHERE reverted_by = ?1", [change])?;
    }
    Ok(())
}

/// What the newest journaled change of block `pos` wrote, when that
/// change went through a running server (Some: its bytes, None inside: it
/// deleted the block); None when it did not (or no change touched it).
pub fn live_after(path: &Path, pos: BlockPos) -> Result<Option<Option<Vec<u8>>>> {
    let conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
    newest_live_after(&conn, pos)
}

fn newest_live_after(conn: &Connection, pos: BlockPos) -> Result<Option<Option<Vec<u8>>>> {
    let newest: Option<i64> = conn
        .query_row(
            "SELECT max(change) FROM journal.blocks WHERE x = ?1 AND y = ?2 AND z = ?3",
            params![pos.x, pos.y, pos.z],
            |r| r.get(0),
        )
        .map_err(backend)?;
    let Some(change) = newest else { return Ok(None) };
    conn.query_row(
        "SELECT after FROM journal.live_after WHERE change = ?1 AND x = ?2 AND y = ?3 AND z = ?4",
        params![change, pos.x, pos.y, pos.z],
        |r| r.get::<_, Option<Vec<u8>>>(0),
    )
    .optional()
    .map_err(backend)
}

/// Whether block bytes `saved`, as a server saved them, hold what a live
/// change wrote (`wrote`): the same node names and param2 at every node,
/// and the same metadata (fields with their private flag, inventories
/// compared as lists of items, whatever their text). Light (param1), node
/// timers (they run), objects and the block's info are the server's own
/// and not compared, as the mod does not compare them either.
pub fn holds_live_change(saved: &[u8], wrote: &[u8]) -> bool {
    let (Ok(a), Ok(b)) = (Block::decode(saved), Block::decode(wrote)) else { return false };
    same_nodes(&a, &b) && metadata(&a) == metadata(&b)
}

fn same_nodes(a: &Block, b: &Block) -> bool {
    let names = |blk: &Block| -> BTreeMap<u16, Vec<u8>> {
        // The last entry of an id wins, as `Block::name_of` reads it.
        blk.mapping.iter().map(|m| (m.id, m.name.clone())).collect()
    };
    let (na, nb) = (names(a), names(b));
    a.param0.len() == b.param0.len()
        && a.param2 == b.param2
        && a.param0.iter().zip(&b.param0).all(|(x, y)| match (na.get(x), nb.get(y)) {
            (Some(p), Some(q)) => p == q,
            _ => false,
        })
}

/// A field: its value and private flag.
type Field = (Vec<u8>, bool);

/// A node's metadata as compared: its fields by key, and its inventory
/// (its raw text when it does not parse).
type NodeMeta = (BTreeMap<Vec<u8>, Field>, std::result::Result<Inventory, Vec<u8>>);

/// A block's metadata by node: its fields (the last of a duplicated key,
/// as the engine reads them) and its inventory (parsed; its raw text when
/// it does not parse).
fn metadata(b: &Block) -> BTreeMap<u16, NodeMeta> {
    b.metadata
        .entries
        .iter()
        .map(|e| {
            let fields = e.vars.iter().map(|v| (v.key.clone(), (v.value.clone(), v.private))).collect();
            let inventory = if e.inventory.is_empty() {
                Ok(Inventory { lists: Vec::new() })
            } else {
                Inventory::parse_strict(&e.inventory).map_err(|_| e.inventory.clone())
            };
            (e.pos, (fields, inventory))
        })
        .collect()
}

/// The map as an undo plans it: a block whose newest journaled change went
/// through a running server reads as the bytes that change wrote, where
/// the map's bytes cannot be compared with them (the server saves blocks
/// in its own serialization). While the server runs, always (the mod then
/// compares the nodes the undo changes with the game); once it stopped,
/// only when the map holds the same content (`holds_live_change`), so that
/// a change made in the game since stays a conflict. Any other block reads
/// as `map` has it.
pub struct AsJournaled<'a> {
    map: &'a dyn MapStore,
    /// The journal, when it holds live changes.
    journal: Option<Mutex<Connection>>,
    server_runs: bool,
}

impl<'a> AsJournaled<'a> {
    /// `map` as journaled at `path` (while the server runs: `server_runs`).
    pub fn new(map: &'a dyn MapStore, path: &Path, server_runs: bool) -> Result<AsJournaled<'a>> {
        let journal = if path.exists() {
            let conn = attached(path)?;
            let live: bool = conn
                .query_row("SELECT count(*) > 0 FROM journal.sqlite_master WHERE name = 'live_after'", [], |r| r.get(0))
                .map_err(backend)?;
            live.then(|| Mutex::new(conn))
        } else {
            None
        };
        Ok(AsJournaled { map, journal, server_runs })
    }
}

impl MapStore for AsJournaled<'_> {
    fn describe(&self) -> String {
        self.map.describe()
    }
    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let now = self.map.get(pos)?;
        let Some(conn) = &self.journal else { return Ok(now) };
        let Some(wrote) = newest_live_after(&conn.lock(), pos)? else { return Ok(now) };
        let saved_as_wrote = match (&now, &wrote) {
            (Some(saved), Some(w)) => holds_live_change(saved, w),
            (None, None) => true,
            _ => false,
        };
        Ok(if self.server_runs || saved_as_wrote { wrote } else { now })
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        self.map.list_after(after, limit)
    }
    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        self.map.scan_after(after, limit)
    }
    fn apply(&self, _: &[Change], _: &Note) -> Result<()> {
        Err(StoreError::Refused("only for planning".into()))
    }
    fn count(&self) -> Result<u64> {
        self.map.count()
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_change_of_a_block_decides() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("j.sqlite");
        let (a, b) = (BlockPos::new(1, 2, 3), BlockPos::new(-1, 0, 0));
        record_applied(
            &path,
            &Note::new("live"),
            &[(a, Some(&[1][..]), Some(&[2][..])), (b, Some(&[5][..]), None)],
            &[],
        )
        .unwrap();
        assert_eq!(live_after(&path, a).unwrap(), Some(Some(vec![2])));
        assert_eq!(live_after(&path, b).unwrap(), Some(None), "deleted live");
        assert_eq!(live_after(&path, BlockPos::new(9, 9, 9)).unwrap(), None, "never changed");
        // A later change made without a server (the journal only).
        let mut conn = attached(&path).unwrap();
        let tx = conn.transaction().unwrap();
        record(&tx, &Note::new("offline"), &[(a, Some(vec![2]), Some(&[3][..]))]).unwrap();
        tx.commit().unwrap();
        assert_eq!(live_after(&path, a).unwrap(), None, "the newest change of a was not live");
    }

    /// A block with a chest, as the mount wrote it.
    fn wrote() -> Block {
        let mut b = Block::new_air(29);
        b.mapping.push(worldfs_codec::luanti::MappingEntry { id: 1, name: b"default:chest".to_vec() });
        b.param0[5] = 1;
        b.param2[5] = 3;
        let mut e = worldfs_codec::luanti::nodemeta::MetaEntry::new(5);
        e.vars.push(worldfs_codec::luanti::nodemeta::MetaVar {
            key: b"infotext".to_vec(),
            value: b"Chest".to_vec(),
            private: false,
        });
        e.inventory = b"List main 2\nWidth 0\nItem default:apple 13\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        b.metadata.entries.push(e);
        b
    }

    /// The server's save of the same content (other ids, light, time,
    /// item text) is the change; a node or an item changed since is not.
    #[test]
    fn a_saved_block_holds_the_live_change_by_content() {
        let w = wrote();
        let mut saved = w.clone();
        saved.mapping = vec![
            worldfs_codec::luanti::MappingEntry { id: 0, name: b"default:chest".to_vec() },
            worldfs_codec::luanti::MappingEntry { id: 7, name: b"air".to_vec() },
        ];
        saved.param0 = w.param0.iter().map(|&id| if id == 1 { 0 } else { 7 }).collect();
        saved.param1[6] = 14;
        saved.timestamp = 99;
        saved.metadata.entries[0].inventory =
            b"List main 2\nWidth 0\nItem default:apple 13 0\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        let (saved_bytes, wrote_bytes) = (saved.encode().unwrap(), w.encode().unwrap());
        assert_ne!(saved_bytes, wrote_bytes);
        assert!(holds_live_change(&saved_bytes, &wrote_bytes));
        let mut dug = saved.clone();
        dug.param0[5] = 7;
        assert!(!holds_live_change(&dug.encode().unwrap(), &wrote_bytes), "a node changed in the game");
        let mut taken = saved.clone();
        taken.metadata.entries[0].inventory =
            b"List main 2\nWidth 0\nItem default:apple 12\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        assert!(!holds_live_change(&taken.encode().unwrap(), &wrote_bytes), "an item taken in the game");
        let mut turned = saved;
        turned.param2[5] = 0;
        assert!(!holds_live_change(&turned.encode().unwrap(), &wrote_bytes), "param2 changed in the game");
        assert!(!holds_live_change(b"not a block", &wrote_bytes));
    }
}
