//! A block change as a request to the worldfs_live mod (its format is
//! described at the top of contrib/worldfs_live/init.lua): the nodes,
//! metadata and timers that differ between what the mount showed and what
//! it writes, each with the old value the mod checks before changing
//! anything. Pure: bytes in, text out.

use crate::BlockPos;
use std::collections::BTreeMap;
use std::fmt::Write;
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::index_xyz;
use worldfs_codec::luanti::inventory::{Inventory, InventoryList};
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_codec::luanti::player::Player;

/// The first line of every request.
pub const HEADER: &str = "worldfs-live 1\n";

/// The line that lets a request's nodes already hold what it sets: its
/// blocks were written to the database by the mount, and the server may
/// have loaded them since (`LiveStore`'s direct writes).
pub const WRITTEN: &str = "written\n";

/// The request asking which of `blocks` the server holds in memory.
pub fn held_request(blocks: &[BlockPos]) -> String {
    let mut out = String::from(HEADER);
    for b in blocks {
        let _ = writeln!(out, "held {} {} {}", b.x, b.y, b.z);
    }
    out.push_str("end\n");
    out
}

/// Whether a block's request lines change its nodes only (node lines, or
/// the block whole): no metadata, timer or deletion, which the mount may
/// then write to the database itself (see `WRITTEN`).
pub fn only_nodes(lines: &str) -> bool {
    lines.lines().all(|l| {
        let word = l.split(' ').next().unwrap_or_default();
        matches!(word, "node" | "block" | "bname" | "bold" | "bnew")
    })
}

fn hex(s: &[u8]) -> String {
    if s.is_empty() {
        return "-".into();
    }
    s.iter().fold(String::with_capacity(s.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// World node coordinates of in-block index `i` of block `pos`.
fn node_at(pos: BlockPos, i: usize) -> String {
    let (ox, oy, oz) = pos.origin();
    let (x, y, z) = index_xyz(i);
    format!("{} {} {}", ox + x as i32, oy + y as i32, oz + z as i32)
}

/// The request lines that turn block `pos` from `old` into `new` (appended
/// to `out`); an error names what a running server cannot be given.
pub fn block_change(out: &mut String, pos: BlockPos, old: &Block, new: &Block) -> Result<(), String> {
    unchanged_outside_nodes(pos, old, new)?;
    node_lines(out, pos, old, new)?;
    meta_lines(out, pos, old, new)?;
    timer_lines(out, pos, old, new);
    Ok(())
}

/// Whether `block_change` of `old` into `new` gives node lines only (see
/// `only_nodes`), found without making them; refused as `block_change`
/// refuses it.
pub fn nodes_only_change(pos: BlockPos, old: &Block, new: &Block) -> Result<bool, String> {
    unchanged_outside_nodes(pos, old, new)?;
    for b in [old, new] {
        if b.param0.len() < 4096 {
            return Err(format!("block {pos}: fewer than 4096 nodes"));
        }
        if let Some(id) =
            worldfs_codec::luanti::block::ids_present(&b.param0).iter().find(|id| b.name_of(*id).is_none())
        {
            return Err(format!("block {pos}: content id {id} has no name"));
        }
    }
    fn entries(b: &Block) -> BTreeMap<u16, &MetaEntry> {
        b.metadata.entries.iter().map(|e| (e.pos, e)).collect()
    }
    let timers =
        |b: &Block| -> BTreeMap<u16, (i32, i32)> { b.timers.iter().map(|t| (t.pos, (t.timeout, t.elapsed))).collect() };
    Ok(entries(old) == entries(new) && timers(old) == timers(new))
}

/// What only the server manages (or what the mod cannot set yet) must be
/// as it was: refused with the reason otherwise, so nothing is silently
/// dropped.
fn unchanged_outside_nodes(pos: BlockPos, old: &Block, new: &Block) -> Result<(), String> {
    let what = if old.version != new.version {
        "its version"
    } else if old.flags != new.flags || old.lighting_complete != new.lighting_complete {
        "its flags (info)"
    } else if old.timestamp != new.timestamp {
        "its timestamp (info)"
    } else if old.objects != new.objects {
        "its objects"
    } else if old.trailing != new.trailing {
        "its raw bytes"
    } else {
        return Ok(());
    };
    Err(format!(
        "block {pos}: {what} cannot be changed while the server runs (a live mount changes nodes, metadata \
         and timers); stop the server to change it"
    ))
}

/// From this many changed names with param1 and param2 unchanged (a
/// rename in `find/`), a block goes whole: its old and new ids, a few KB,
/// instead of a line a node, which the mod parses 20× slower.
pub const WHOLE_FROM: usize = 512;

/// How the lines of a whole block begin.
pub const WHOLE_BLOCK: &str = "block ";

fn node_lines(out: &mut String, pos: BlockPos, old: &Block, new: &Block) -> Result<(), String> {
    let name = |b: &Block, i: usize| -> Result<Vec<u8>, String> {
        let id = *b.param0.get(i).ok_or_else(|| format!("block {pos}: fewer than 4096 nodes"))?;
        b.name_of(id).map(<[u8]>::to_vec).ok_or_else(|| format!("block {pos}: content id {id} has no name"))
    };
    let params_kept = old.param1 == new.param1 && old.param2 == new.param2;
    if params_kept && old.param0.len() == 4096 && new.param0.len() == 4096 {
        let changed = (0..4096).filter(|&i| name(old, i) != name(new, i)).count();
        if changed >= WHOLE_FROM {
            whole_block_lines(out, pos, old, new);
            return Ok(());
        }
    }
    for i in 0..4096 {
        let (o, n) = (name(old, i)?, name(new, i)?);
        let (p1, p2) = ((old.param1[i], old.param2[i]), (new.param1[i], new.param2[i]));
        if o != n || p1 != p2 {
            let _ =
                writeln!(out, "node {} {} {} {} {} {} {}", node_at(pos, i), hex(&o), p1.0, p1.1, hex(&n), p2.0, p2.1);
        }
    }
    Ok(())
}

/// A block's names whole: "block BX BY BZ", its old and new name tables
/// ("bname old|new ID NAME") and ids ("bold"/"bnew", 4096 each, z*256 +
/// y*16 + x, in runs: `run_lengths`); param1 and param2 are neither sent
/// nor changed.
fn whole_block_lines(out: &mut String, pos: BlockPos, old: &Block, new: &Block) {
    let _ = writeln!(out, "{WHOLE_BLOCK}{} {} {}", pos.x, pos.y, pos.z);
    for (side, b) in [("old", old), ("new", new)] {
        for m in &b.mapping {
            let _ = writeln!(out, "bname {side} {} {}", m.id, hex(&m.name));
        }
    }
    for (side, b) in [("bold", old), ("bnew", new)] {
        out.push_str(side);
        run_lengths(out, &b.param0);
        out.push('\n');
    }
}

/// Ids as " ID" words, a run of N equal ones as " ID*N": a renamed block
/// is mostly long runs (stone, air), which the mod parses in a few words
/// instead of 4096 (parsing was most of its time on a whole block).
fn run_lengths(out: &mut String, ids: &[u16]) {
    let mut i = 0;
    while i < ids.len() {
        let run = ids[i..].iter().take_while(|&&id| id == ids[i]).count();
        let _ = if run == 1 { write!(out, " {}", ids[i]) } else { write!(out, " {}*{run}", ids[i]) };
        i += run;
    }
}

fn meta_lines(out: &mut String, pos: BlockPos, old: &Block, new: &Block) -> Result<(), String> {
    let entries =
        |b: &Block| -> BTreeMap<u16, MetaEntry> { b.metadata.entries.iter().map(|e| (e.pos, e.clone())).collect() };
    let (before, after) = (entries(old), entries(new));
    let mut at: Vec<u16> = before.keys().chain(after.keys()).copied().collect();
    at.sort_unstable();
    at.dedup();
    for p in at {
        let (o, n) = (before.get(&p), after.get(&p));
        if o == n {
            continue;
        }
        let _ = writeln!(out, "meta {}", node_at(pos, p as usize));
        if let Some(o) = o {
            entry_lines(out, "old", o, false).map_err(|e| format!("block {pos}: stored metadata: {e}"))?;
        }
        if let Some(n) = n {
            entry_lines(out, "new", n, true).map_err(|e| format!("block {pos}: new metadata: {e}"))?;
        }
        out.push_str("endmeta\n");
    }
    Ok(())
}

/// One metadata entry as "old"/"new" lines. The engine's view of a field
/// is its last duplicate.
fn entry_lines(out: &mut String, side: &str, e: &MetaEntry, private: bool) -> Result<(), String> {
    let mut fields: BTreeMap<&[u8], (&[u8], bool)> = BTreeMap::new();
    for v in &e.vars {
        fields.insert(&v.key, (&v.value, v.private));
    }
    for (k, (v, p)) in fields {
        let flag = if private { if p { " 1" } else { " 0" } } else { "" };
        let _ = writeln!(out, "{side} field {} {}{flag}", hex(k), hex(v));
    }
    let inv = if e.inventory.is_empty() {
        Inventory { lists: Vec::new() }
    } else {
        Inventory::parse_strict(&e.inventory).map_err(|e| format!("inventory: {e}"))?
    };
    for l in &inv.lists {
        let _ = writeln!(out, "{side} list {} {} {}", hex(&l.name), l.slots.len(), l.width);
        for (i, slot) in l.slots.iter().enumerate() {
            if let Some(item) = slot {
                let _ =
                    writeln!(out, "{side} item {} {} {}", hex(&l.name), i + 1, hex(&item.serialize(HighBytes::Raw)));
            }
        }
    }
    Ok(())
}

fn timer_lines(out: &mut String, pos: BlockPos, old: &Block, new: &Block) {
    let timers =
        |b: &Block| -> BTreeMap<u16, (i32, i32)> { b.timers.iter().map(|t| (t.pos, (t.timeout, t.elapsed))).collect() };
    let (before, after) = (timers(old), timers(new));
    for (p, t) in &after {
        if before.get(p) != Some(t) {
            let secs = |ms: i32| f64::from(ms) / 1000.0;
            let _ = writeln!(out, "timer {} {} {}", node_at(pos, *p as usize), secs(t.0), secs(t.1));
        }
    }
    for p in before.keys().filter(|p| !after.contains_key(p)) {
        let _ = writeln!(out, "notimer {}", node_at(pos, *p as usize));
    }
}

/// The request lines that delete block `pos`, which holds `old`: the mod
/// deletes it only if the game still has these nodes there.
pub fn block_delete(out: &mut String, pos: BlockPos, old: &Block) {
    let _ = writeln!(out, "delete {} {} {}", pos.x, pos.y, pos.z);
    for m in &old.mapping {
        let _ = writeln!(out, "dname {} {}", m.id, hex(&m.name));
    }
    out.push_str("dids");
    for id in &old.param0 {
        let _ = write!(out, " {id}");
    }
    out.push('\n');
}

/// The request that turns player `name` from `old` into `new` (None: no
/// record), with only what differs: the mod applies it through the player
/// API when the player is in the game, else answers "offline".
pub fn player_change(name: &str, old: Option<&Player>, new: Option<&Player>) -> Result<String, String> {
    let mut out = format!("{HEADER}player {}\n", hex(name.as_bytes()));
    match (old, new) {
        (Some(o), Some(n)) => player_lines(&mut out, name, o, n)?,
        _ => {
            for (side, p) in [("pold", old), ("pnew", new)] {
                if p.is_none() {
                    let _ = writeln!(out, "{side} gone");
                }
            }
        }
    }
    out.push_str("endplayer\nend\n");
    Ok(out)
}

fn player_lines(out: &mut String, name: &str, old: &Player, new: &Player) -> Result<(), String> {
    let both = |out: &mut String, what: &str, o: String, n: String| {
        if o != n {
            let _ = writeln!(out, "pold {what} {o}\npnew {what} {n}");
        }
    };
    both(out, "hp", old.hp.to_string(), new.hp.to_string());
    both(out, "breath", old.breath.to_string(), new.breath.to_string());
    // World units (1/10 node) as nodes, exactly enough for an f32.
    let nodes = |p: &Player| p.pos.map(|v| format!("{}", f64::from(v) / 10.0)).join(" ");
    both(out, "pos", nodes(old), nodes(new));
    both(out, "look", format!("{} {}", old.pitch, old.yaw), format!("{} {}", new.pitch, new.yaw));
    let lists = |p: &Player| -> Result<BTreeMap<Vec<u8>, InventoryList>, String> {
        let inv = Inventory::parse_strict(&p.inventory).map_err(|e| format!("player {name}: inventory: {e}"))?;
        Ok(inv.lists.into_iter().map(|l| (l.name.clone(), l)).collect())
    };
    let (before, after) = (lists(old)?, lists(new)?);
    let names: std::collections::BTreeSet<&Vec<u8>> = before.keys().chain(after.keys()).collect();
    for list in names {
        let (o, n) = (before.get(list), after.get(list));
        if o != n {
            player_list_lines(out, "pold", list, o);
            player_list_lines(out, "pnew", list, n);
        }
    }
    let keys: std::collections::BTreeSet<&Vec<u8>> = old.meta.keys().chain(new.meta.keys()).collect();
    for key in keys {
        let (o, n) = (old.meta.get(key), new.meta.get(key));
        if o != n {
            for (side, v) in [("pold", o), ("pnew", n)] {
                out.push_str(&match v {
                    Some(v) => format!("{side} attr {} {}\n", hex(key), hex(v)),
                    None => format!("{side} noattr {}\n", hex(key)),
                });
            }
        }
    }
    Ok(())
}

fn player_list_lines(out: &mut String, side: &str, name: &[u8], list: Option<&InventoryList>) {
    let Some(l) = list else {
        let _ = writeln!(out, "{side} nolist {}", hex(name));
        return;
    };
    let _ = writeln!(out, "{side} list {} {} {}", hex(name), l.slots.len(), l.width);
    for (i, slot) in l.slots.iter().enumerate() {
        if let Some(item) = slot {
            let _ = writeln!(out, "{side} item {} {} {}", hex(name), i + 1, hex(&item.serialize(HighBytes::Raw)));
        }
    }
}

/// The slots of the inventory lists a request sets, in all (its "new
/// list" and "pnew list" lines): the mod's work grows with them, empty or
/// not.
pub fn inventory_slots(text: &str) -> usize {
    text.lines()
        .filter_map(|l| l.strip_prefix("new list ").or_else(|| l.strip_prefix("pnew list ")))
        .filter_map(|rest| rest.split(' ').nth(1)?.parse::<usize>().ok())
        .sum()
}

/// The request that ends the hold on player `name`'s joins.
pub fn player_release(name: &str) -> String {
    format!("{HEADER}release {}\nend\n", hex(name.as_bytes()))
}

/// The request that tells the server account `name`'s privileges changed
/// in the database (`granted` and `revoked`).
pub fn privileges_changed(name: &str, granted: &[&str], revoked: &[&str]) -> String {
    format!(
        "{HEADER}privs {} {} {}\nend\n",
        hex(name.as_bytes()),
        hex(granted.join(",").as_bytes()),
        hex(revoked.join(",").as_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::MappingEntry;
    use worldfs_codec::luanti::nodemeta::MetaVar;

    fn stone_block() -> Block {
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: b"default:stone".to_vec() });
        b
    }

    #[test]
    fn only_changed_nodes_are_sent_with_their_old_values() {
        let old = stone_block();
        let mut new = old.clone();
        new.param0[worldfs_codec::luanti::block::node_index(1, 2, 3)] = 1;
        new.param2[0] = 4;
        let mut out = String::new();
        block_change(&mut out, BlockPos::new(1, 0, -1), &old, &new).unwrap();
        let air = hex(b"air");
        let stone = hex(b"default:stone");
        assert_eq!(
            out,
            format!("node 16 0 -16 {air} 15 0 {air} 15 4\nnode 17 2 -13 {air} 15 0 {stone} 15 0\n"),
            "{out}"
        );
    }

    #[test]
    fn metadata_is_sent_whole_with_the_old_entry() {
        let old = stone_block();
        let mut new = old.clone();
        let mut e = MetaEntry::new(0);
        e.vars.push(MetaVar { key: b"text".to_vec(), value: b"hi".to_vec(), private: true });
        e.inventory = b"List main 2\nWidth 1\nItem default:apple 3\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        new.metadata.entries.push(e);
        let mut out = String::new();
        block_change(&mut out, BlockPos::new(0, 0, 0), &old, &new).unwrap();
        let want = format!(
            "meta 0 0 0\nnew field {} {} 1\nnew list {} 2 1\nnew item {} 1 {}\nendmeta\n",
            hex(b"text"),
            hex(b"hi"),
            hex(b"main"),
            hex(b"main"),
            hex(b"default:apple 3")
        );
        assert_eq!(out, want);
    }

    #[test]
    fn objects_and_info_cannot_change_live() {
        let old = stone_block();
        let mut new = old.clone();
        new.timestamp = 5;
        let e = block_change(&mut String::new(), BlockPos::new(0, 0, 0), &old, &new).unwrap_err();
        assert!(e.contains("timestamp") && e.contains("stop the server"), "{e}");
    }

    #[test]
    fn timers_set_and_stopped() {
        let mut old = stone_block();
        old.timers.push(worldfs_codec::luanti::objects::NodeTimer { pos: 1, timeout: 1000, elapsed: 0 });
        let mut new = stone_block();
        new.timers.push(worldfs_codec::luanti::objects::NodeTimer { pos: 2, timeout: 30000, elapsed: 1500 });
        let mut out = String::new();
        block_change(&mut out, BlockPos::new(0, 0, 0), &old, &new).unwrap();
        assert_eq!(out, "timer 2 0 0 30 1.5\nnotimer 1 0 0\n");
    }

    #[test]
    fn a_block_mostly_renamed_goes_whole() {
        let old = stone_block();
        let mut new = old.clone();
        for id in new.param0.iter_mut().take(WHOLE_FROM) {
            *id = 1;
        }
        let mut out = String::new();
        block_change(&mut out, BlockPos::new(0, -1, 2), &old, &new).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "block 0 -1 2");
        assert!(lines.contains(&format!("bname new 1 {}", hex(b"default:stone")).as_str()), "{lines:?}");
        let bnew = lines.iter().find(|l| l.starts_with("bnew ")).unwrap();
        assert_eq!(*bnew, format!("bnew 1*{WHOLE_FROM} 0*{}", 4096 - WHOLE_FROM));
        assert!(!out.contains("\nnode "), "no node lines");
        // One node fewer: a line a node.
        let mut few = old.clone();
        for id in few.param0.iter_mut().take(WHOLE_FROM - 1) {
            *id = 1;
        }
        let mut out = String::new();
        block_change(&mut out, BlockPos::new(0, -1, 2), &old, &few).unwrap();
        assert!(out.starts_with("node ") && !out.contains("block "), "{}", &out[..40]);
    }

    #[test]
    fn ids_go_in_runs() {
        let mut out = String::new();
        run_lengths(&mut out, &[3, 3, 3, 1, 2, 2, 7]);
        assert_eq!(out, " 3*3 1 2*2 7");
    }

    fn player() -> Player {
        Player {
            hp: 20,
            breath: 10,
            pos: [10.0, 85.0, -3.0],
            pitch: 0.0,
            yaw: 90.0,
            meta: Default::default(),
            inventory: b"List main 2\nWidth 0\nItem default:apple 3\nEmpty\nEndInventoryList\nEndInventory\n".to_vec(),
        }
    }

    #[test]
    fn a_player_change_sends_only_what_differs() {
        let old = player();
        let mut new = old.clone();
        new.hp = 5;
        new.pos = [105.0, 85.0, -3.0];
        new.inventory = b"List main 2\nWidth 0\nItem default:apple 4\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        new.meta.insert(b"k".to_vec(), b"v".to_vec());
        let text = player_change("bob", Some(&old), Some(&new)).unwrap();
        let main = hex(b"main");
        let want = format!(
            "{HEADER}player {}\npold hp 20\npnew hp 5\npold pos 1 8.5 -0.3\npnew pos 10.5 8.5 -0.3\n\
             pold list {main} 2 0\npold item {main} 1 {}\npnew list {main} 2 0\npnew item {main} 1 {}\n\
             pold noattr {}\npnew attr {} {}\nendplayer\nend\n",
            hex(b"bob"),
            hex(b"default:apple 3"),
            hex(b"default:apple 4"),
            hex(b"k"),
            hex(b"k"),
            hex(b"v")
        );
        assert_eq!(text, want);
        let gone = player_change("bob", Some(&old), None).unwrap();
        assert!(gone.contains("\npnew gone\nendplayer\n") && !gone.contains("pold gone"), "{gone}");
    }

    #[test]
    fn a_deletion_lists_every_node() {
        let mut out = String::new();
        block_delete(&mut out, BlockPos::new(-1, 2, 3), &stone_block());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "delete -1 2 3");
        assert_eq!(lines[1], format!("dname 0 {}", hex(b"air")));
        assert_eq!(lines[3].split(' ').count(), 4097);
    }

    /// `nodes_only_change` says what the lines `block_change` makes would
    /// say (`only_nodes`), and refuses what it refuses.
    #[test]
    fn a_nodes_only_change_is_known_without_its_lines() {
        let pos = BlockPos::new(1, 2, 3);
        let old = stone_block();
        let mut renamed = old.clone();
        renamed.param0[7] = 1;
        let mut timed = renamed.clone();
        timed.timers.push(worldfs_codec::luanti::objects::NodeTimer { pos: 7, timeout: 1000, elapsed: 0 });
        for (new, nodes_only) in [(&renamed, true), (&timed, false), (&old, true)] {
            let mut text = String::new();
            block_change(&mut text, pos, &old, new).unwrap();
            assert_eq!(only_nodes(&text), nodes_only, "{text}");
            assert_eq!(nodes_only_change(pos, &old, new), Ok(nodes_only));
        }
        let mut stamped = renamed.clone();
        stamped.timestamp = old.timestamp.wrapping_add(1);
        assert!(nodes_only_change(pos, &old, &stamped).unwrap_err().contains("its timestamp"));
        let mut nameless = renamed.clone();
        nameless.param0[9] = 77;
        assert!(nodes_only_change(pos, &old, &nameless).unwrap_err().contains("content id 77 has no name"));
        assert!(held_request(&[pos, BlockPos::new(-1, 0, 2047)]).contains("held 1 2 3\nheld -1 0 2047\nend\n"));
    }
}
