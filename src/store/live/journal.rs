//! The undo journal of changes a running server applied (`LiveStore`).
//! The server re-serializes a block when it saves it, so the bytes it
//! saves are not the bytes the mount wrote, and a fingerprint cannot tell
//! whether the game still holds the change. A live change is journaled as
//! any other (`store::journal`, bytes before, fingerprint after) and, in
//! the table `live_after` beside it, the bytes the mount wrote: undo then
//! sends the server the change from those bytes back to the ones before,
//! and the mod checks, node by node, that the game still holds what the
//! change left (else the undo is refused: a conflict).

use crate::store::journal::{Step, attached, record};
use crate::store::{BlockPos, Note, Result, StoreError};
use rusqlite::{OptionalExtension, params};
use std::path::Path;

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("undo journal: {e}"))
}

const CREATE: &str = "CREATE TABLE IF NOT EXISTS journal.live_after (
    change INTEGER NOT NULL,
    x INTEGER NOT NULL, y INTEGER NOT NULL, z INTEGER NOT NULL,
    after BLOB,
    PRIMARY KEY (change, x, y, z))";

/// A block the server applied: its position, bytes before, and bytes the
/// mount wrote (None: absent).
pub type Applied = (BlockPos, Option<Vec<u8>>, Option<Vec<u8>>);

/// Journal blocks the server applied, in one entry with `note`.
pub fn record_applied(path: &Path, note: &Note, blocks: &[Applied]) -> Result<()> {
    let mut conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
    let tx = conn.transaction().map_err(backend)?;
    let steps: Vec<Step<'_>> = blocks.iter().map(|(p, before, after)| (*p, before.clone(), after.as_deref())).collect();
    let id = record(&tx, note, &steps).map_err(backend)?;
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO journal.live_after (change, x, y, z, after) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(backend)?;
        for (p, _, after) in blocks {
            ins.execute(params![id, p.x, p.y, p.z, after]).map_err(backend)?;
        }
    }
    tx.commit().map_err(backend)
}

/// What the newest journaled change of block `pos` wrote, when that
/// change went through a running server (Some: its bytes, None inside: it
/// deleted the block); None when it did not (or no change touched it).
pub fn live_after(path: &Path, pos: BlockPos) -> Result<Option<Option<Vec<u8>>>> {
    let conn = attached(path)?;
    conn.execute_batch(CREATE).map_err(backend)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_change_of_a_block_decides() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("j.sqlite");
        let (a, b) = (BlockPos::new(1, 2, 3), BlockPos::new(-1, 0, 0));
        record_applied(&path, &Note::new("live"), &[(a, Some(vec![1]), Some(vec![2])), (b, Some(vec![5]), None)])
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
}
