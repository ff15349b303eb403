//! `worldfs restore WORLD SNAPSHOT --area X1,Y1,Z1 X2,Y2,Z2` (and
//! `--player NAME`): an area put back as a snapshot holds it, in one
//! journaled change that `worldfs undo` takes back.
//!
//! * Offline, a block the area covers whole gets the snapshot's bytes back
//!   (or is removed, if the snapshot had none); a block at the area's edge
//!   is rebuilt from what it holds now, with the snapshot's nodes (name,
//!   param1, param2), metadata (fields and inventories) and node timers
//!   inside the area.
//! * On a running server with the worldfs_live mod, every block goes node
//!   by node (the server keeps what only it manages: a block's objects,
//!   flags and timestamp), through the server, nobody kicked
//!   (`worldfs_store::live`); without the mod, while the server holds the map, it
//!   is refused with the reason.
//! * Every block changed is expected to hold what was read (else the
//!   change is refused: someone changed it meanwhile).
//! * An area of more blocks than one change may hold is refused, with the
//!   commands for the parts to restore one after the other.

use super::diff::NodeBox;
use std::path::Path;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::{MappingEntry, index_xyz};
use worldfs_store::records::{Collection, RecordStore};
use worldfs_store::snapshots::{SnapshotMap, SnapshotRecords, Snapshots};
use worldfs_store::world::World;
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// Most blocks one restore may change offline (one transaction), and
/// through a running server (which applies a few blocks a step).
pub(crate) const MAX_BLOCKS: u64 = 4096;
pub(crate) const MAX_LIVE_BLOCKS: u64 = 1024;

/// The nodes of `now` inside `area` made as in `then` (block `pos`): their
/// names, param1, param2, metadata and node timers. Pure.
pub(crate) fn merge_area(pos: BlockPos, now: &Block, then: &Block, area: NodeBox) -> Result<Block, String> {
    let (ox, oy, oz) = pos.origin();
    let inside = |i: usize| {
        let (x, y, z) = index_xyz(i);
        area.contains([ox + x as i32, oy + y as i32, oz + z as i32])
    };
    let mut out = now.clone();
    for i in (0..4096).filter(|&i| inside(i)) {
        let id = *then.param0.get(i).ok_or_else(|| format!("block {pos} of the snapshot: fewer than 4096 nodes"))?;
        let name =
            then.name_of(id).ok_or_else(|| format!("block {pos} of the snapshot: content id {id} has no name"))?;
        let new_id = match out.mapping.iter().find(|m| m.name == name) {
            Some(m) => m.id,
            None => {
                let id = out.mapping.iter().map(|m| m.id).max().map_or(0, |m| m + 1);
                out.mapping.push(MappingEntry { id, name: name.to_vec() });
                id
            }
        };
        let bad = || format!("block {pos}: fewer than 4096 nodes");
        *out.param0.get_mut(i).ok_or_else(bad)? = new_id;
        *out.param1.get_mut(i).ok_or_else(bad)? = then.param1.get(i).copied().unwrap_or(0);
        *out.param2.get_mut(i).ok_or_else(bad)? = then.param2.get(i).copied().unwrap_or(0);
    }
    out.metadata.entries.retain(|e| !inside(e.pos as usize));
    out.metadata.entries.extend(then.metadata.entries.iter().filter(|e| inside(e.pos as usize)).cloned());
    out.metadata.entries.sort_by_key(|e| e.pos);
    out.timers.retain(|t| !inside(t.pos as usize));
    out.timers.extend(then.timers.iter().filter(|t| inside(t.pos as usize)).cloned());
    out.timers.sort_by_key(|t| t.pos);
    // Names no node uses any more are left out, as the engine saves.
    let used = worldfs_codec::luanti::block::ids_present(&out.param0);
    out.mapping.retain(|m| used.contains(m.id));
    Ok(out)
}

/// The map a restore writes, and whether it goes through the server.
fn target(w: &World) -> Result<(Box<dyn MapStore>, bool), String> {
    use worldfs_store::live::{ServerState, check_spool, server_state};
    if let ServerState::Running { .. } = server_state(&w.dir) {
        check_spool(&w.dir)?;
        return Ok((Box::new(w.open_live_store(Some(w.journal_path()), true)?), true));
    }
    let who = worldfs_store::holders::openers_after_daemons_exit(&w.map_path());
    if !who.is_empty() {
        return Err(format!(
            "{} is open in {}; a running server would overwrite the restored area with its own copy: stop it \
             (or unmount), or let the server apply the restore: `worldfs live install {}` and restart the \
             server once",
            w.map_path().display(),
            who.join(", "),
            w.dir.display()
        ));
    }
    Ok((w.open_store(false, true)?, false))
}

/// The refusal of an area of `n` blocks, with the parts to restore instead.
fn too_big(area: NodeBox, n: u64, max: u64, live: bool, how: &str) -> String {
    // Slabs along the longest side, cut at block edges.
    let side = (0..3).max_by_key(|&i| area.max[i] - area.min[i]).unwrap_or(0);
    let blocks_across = (area.max[side].div_euclid(16) - area.min[side].div_euclid(16) + 1) as u64;
    let per_slab = n / blocks_across;
    let slab_blocks = (max / per_slab.max(1)).max(1) as i32;
    let mut parts = Vec::new();
    let mut from = area.min[side];
    while from <= area.max[side] {
        let to = ((from.div_euclid(16) + slab_blocks) * 16 - 1).min(area.max[side]);
        let (mut a, mut b) = (area.min, area.max);
        a[side] = from;
        b[side] = to;
        parts.push(format!("--area {},{},{} {},{},{}", a[0], a[1], a[2], b[0], b[1], b[2]));
        from = to + 1;
    }
    let shown: Vec<String> = parts.iter().take(4).map(|p| format!("  worldfs restore {how} {p}")).collect();
    format!(
        "the area touches {n} blocks, more than one restore may change ({max}{}); restore it in {} parts, one \
         after the other:\n{}{}",
        if live { " through a running server" } else { "" },
        parts.len(),
        shown.join("\n"),
        if parts.len() > 4 { "\n  ..." } else { "" }
    )
}

/// What a restore did, for the report.
#[derive(Debug, Default)]
pub(crate) struct Restored {
    pub(crate) whole: u64,
    pub(crate) by_node: u64,
    pub(crate) removed: u64,
    pub(crate) unchanged: u64,
    pub(crate) notes: Vec<String>,
}

/// The changes that put `area` back as `snap` holds it.
fn area_changes(
    snap: &dyn MapStore,
    map: &dyn MapStore,
    area: NodeBox,
    live: bool,
    done: &mut Restored,
) -> Result<Vec<Change>, String> {
    let mut changes = Vec::new();
    for pos in area.blocks() {
        let then = snap.get(pos).map_err(|e| e.to_string())?;
        let now = map.get(pos).map_err(|e| e.to_string())?;
        let decode = |b: &[u8], which: &str| Block::decode(b).map_err(|e| format!("block {pos} ({which}): {e}"));
        let new = match (&then, &now) {
            (None, None) => None,
            (t, n) if t == n => None,
            (t, _) if area.covers(pos) && !live => {
                if t.is_none() {
                    done.removed += 1;
                } else {
                    done.whole += 1;
                }
                Some(t.clone())
            }
            (Some(t), None) => {
                done.notes.push(format!("block {pos} is not stored now: the snapshot's block goes back whole"));
                done.whole += 1;
                Some(Some(t.clone()))
            }
            (None, Some(_)) if area.covers(pos) => {
                done.removed += 1;
                Some(None)
            }
            (None, Some(_)) => {
                done.notes.push(format!("block {pos} was not stored then: its nodes in the area are left as they are"));
                None
            }
            (Some(t), Some(n)) => {
                let merged = merge_area(pos, &decode(n, "now")?, &decode(t, "snapshot")?, area)?;
                let blob = merged.encode().map_err(|e| format!("block {pos}: {}", e.0))?;
                done.by_node += 1;
                (blob != *n).then_some(Some(blob))
            }
        };
        match new {
            None => done.unchanged += 1,
            Some(blob) => {
                changes.push(Change::Expect(pos, now.clone()));
                changes.push(match blob {
                    Some(b) => Change::Put(pos, b),
                    None => Change::Delete(pos),
                });
            }
        }
    }
    Ok(changes)
}

/// Restore `area` of `world` from snapshot `name` of the store in `dir`.
pub(crate) fn restore_area(world: &Path, dir: &Path, name: &str, area: NodeBox) -> Result<Vec<String>, String> {
    let w = World::open(world)?;
    let store = Snapshots::open(dir, false)?;
    let info = store.find(name)?;
    let snap = SnapshotMap::open(&store, &info).map_err(|e| e.to_string())?;
    let (map, live) = target(&w)?;
    let n = area.block_count();
    let max = if live { MAX_LIVE_BLOCKS } else { MAX_BLOCKS };
    if n > max {
        return Err(too_big(area, n, max, live, &format!("{} {name}", world.display())));
    }
    let mut done = Restored::default();
    let changes = area_changes(&snap, map.as_ref(), area, live, &mut done)?;
    let what = format!(
        "restore {},{},{} {},{},{} from snapshot {name}",
        area.min[0], area.min[1], area.min[2], area.max[0], area.max[1], area.max[2]
    );
    let mut said = done.notes.clone();
    if changes.is_empty() {
        said.push(format!("{what}: the area is as the snapshot holds it already; nothing changed"));
        return Ok(said);
    }
    map.apply(&changes, &Note::new(what.clone())).map_err(|e| e.to_string())?;
    said.push(format!(
        "{what}{}: {} block(s) back byte for byte, {} node by node, {} removed ({} already as then); \
         `worldfs undo {} --last 1` takes it back",
        if live { " through the running server" } else { "" },
        done.whole,
        changes.iter().filter(|c| matches!(c, Change::Put(..))).count() as u64 - done.whole,
        done.removed,
        done.unchanged,
        world.display()
    ));
    Ok(said)
}

/// Restore player `player` of `world` from snapshot `name`.
pub(crate) fn restore_player(world: &Path, dir: &Path, name: &str, player: &str) -> Result<Vec<String>, String> {
    use worldfs_store::live::{ServerState, server_state};
    let w = World::open(world)?;
    let store = Snapshots::open(dir, false)?;
    let info = store.find(name)?;
    let then = SnapshotRecords::open(&store, &info, Collection::Players)
        .and_then(|s| s.get(player))
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("snapshot {name} holds no player {player:?}"))?;
    let mut records = w.open_records(Collection::Players, false, true)?;
    if let ServerState::Running { .. } = server_state(&w.dir) {
        records = Box::new(worldfs_store::live::records::LiveRecords::new(&w.dir, Collection::Players, records, true));
    } else {
        for file in records.watched() {
            let who = worldfs_store::holders::openers_after_daemons_exit(&file);
            if !who.is_empty() {
                return Err(format!(
                    "{} is open in {}: stop the server first, or let it apply the restore (`worldfs live install`)",
                    file.display(),
                    who.join(", ")
                ));
            }
        }
    }
    let now = records.get(player).map_err(|e| e.to_string())?;
    if now.as_deref() == Some(then.as_slice()) {
        return Ok(vec![format!("player {player} is as snapshot {name} holds it already; nothing changed")]);
    }
    let what = format!("restore player {player} from snapshot {name}");
    records.put(player, now.as_deref(), Some(&then), &Note::new(what.clone())).map_err(|e| e.to_string())?;
    Ok(vec![format!("{what}; `worldfs undo {} --last 1` takes it back", world.display())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_big_says_which_parts_to_restore() {
        let area = NodeBox::new([0, 0, 0], [2047, 15, 63]);
        let e = too_big(area, 128 * 4, 256, false, "W tue");
        assert!(e.starts_with("the area touches 512 blocks, more than one restore may change (256)"), "{e}");
        assert!(
            e.contains("in 2 parts")
                && e.contains("--area 0,0,0 1023,15,63")
                && e.contains("--area 1024,0,0 2047,15,63"),
            "{e}"
        );
    }
}
