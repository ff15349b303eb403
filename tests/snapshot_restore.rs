//! `worldfs restore` offline (issue 40): an area the snapshot's blocks
//! cover whole comes back byte for byte, an area's edge node by node (with
//! metadata and inventories) and nothing outside it changes; `worldfs undo`
//! takes the restore back; a player comes back; an area too big for one
//! change is refused with the parts to restore; a map another process
//! holds is refused.

use crate::common;

use std::path::Path;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::{MappingEntry, node_index};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

fn worldfs(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = worldfs(args);
    assert_eq!(code, 0, "worldfs {args:?}: {out}{err}");
    out
}

fn blob(world: &Path, pos: BlockPos) -> Option<Vec<u8>> {
    SqliteStore::open(&world.join("map.sqlite"), true).unwrap().get(pos).unwrap()
}

fn block(world: &Path, pos: BlockPos) -> Block {
    Block::decode(&blob(world, pos).unwrap()).unwrap()
}

fn edit(world: &Path, pos: BlockPos, edit: impl FnOnce(&mut Block)) {
    let store = SqliteStore::open(&world.join("map.sqlite"), false).unwrap();
    let mut b = Block::decode(&store.get(pos).unwrap().unwrap()).unwrap();
    edit(&mut b);
    store.apply(&[Change::Put(pos, b.encode().unwrap())], &Note::new("grief")).unwrap();
}

fn set(b: &mut Block, i: usize, name: &str) {
    let id = match b.mapping.iter().find(|m| m.name == name.as_bytes()) {
        Some(m) => m.id,
        None => {
            let id = b.mapping.iter().map(|m| m.id).max().map_or(0, |m| m + 1);
            b.mapping.push(MappingEntry { id, name: name.as_bytes().to_vec() });
            id
        }
    };
    b.param0[i] = id;
}

/// The name of in-block node `i`.
fn name(b: &Block, i: usize) -> Vec<u8> {
    b.name_of(b.param0[i]).unwrap().to_vec()
}

/// Empty the demo's chest and turn every node of block 0,0,0 above y 5
/// into mese, and lava into block 1,0,1.
fn grief(w: &Path) {
    edit(w, BlockPos::new(0, 0, 0), |b| {
        let chest = node_index(3, 1, 3) as u16;
        b.metadata.entries.iter_mut().find(|e| e.pos == chest).unwrap().inventory =
            b"List main 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        for i in 0..4096 {
            if i / 16 % 16 > 5 {
                set(b, i, "default:mese");
            }
        }
    });
    edit(w, BlockPos::new(1, 0, 1), |b| set(b, node_index(0, 1, 0), "default:lava_source"));
}

#[test]
fn an_area_comes_back_whole_blocks_byte_for_byte_its_edges_node_by_node_and_undo_takes_it_back() {
    let world = common::demo_world();
    let w = world.path();
    let ws = w.to_str().unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    let (house, lava) = (BlockPos::new(0, 0, 0), BlockPos::new(1, 0, 1));
    let (tue_house, tue_lava) = (blob(w, house).unwrap(), blob(w, lava).unwrap());
    assert_ne!(tue_lava, blob(w, house).unwrap());
    grief(w);
    let (griefed_house, griefed_lava) = (blob(w, house).unwrap(), blob(w, lava).unwrap());

    // The whole block of the house: its bytes as they were; lava stays.
    let said = ok(&["restore", ws, "tue", "--area", "0,0,0", "15,15,15"]);
    assert!(said.contains("1 block(s) back byte for byte") && said.contains("--last 1"), "{said}");
    assert_eq!(blob(w, house).unwrap(), tue_house);
    assert_eq!(blob(w, lava).unwrap(), griefed_lava, "outside the area nothing changed");
    let diff = ok(&["diff", ws, "tue"]);
    assert!(diff.starts_with("1 area(s)") && diff.contains("default:lava_source"), "{diff}");
    ok(&["restore", ws, "tue", "--area", "16,0,16", "31,15,31"]);
    assert_eq!(blob(w, lava).unwrap(), tue_lava, "the lava's block byte for byte too");
    ok(&["undo", ws, "--last", "1"]);
    ok(&["undo", ws, "--last", "1"]);
    assert_eq!(blob(w, house).unwrap(), griefed_house, "undo takes the restore back");

    // An edge: x 2..5, y 0..7, z 2..5 of the house's block.
    let said = ok(&["restore", ws, "tue", "--area", "2,0,2", "5,7,5"]);
    assert!(said.contains("0 block(s) back byte for byte, 1 node by node"), "{said}");
    let (now, then, before) =
        (block(w, house), Block::decode(&tue_house).unwrap(), Block::decode(&griefed_house).unwrap());
    for i in 0..4096 {
        let (x, y, z) = (i % 16, i / 16 % 16, i / 256);
        let inside = (2..=5).contains(&x) && y <= 7 && (2..=5).contains(&z);
        let want = if inside { &then } else { &before };
        assert_eq!(name(&now, i), name(want, i), "node {x},{y},{z}");
        assert_eq!(now.param2[i], want.param2[i]);
    }
    let chest = node_index(3, 1, 3) as u16;
    let inv = |b: &Block| b.metadata.get(chest).unwrap().inventory.clone();
    assert_eq!(inv(&now), inv(&then), "the chest's items are back");
    assert!(String::from_utf8_lossy(&inv(&now)).contains("Item default:apple 12"));
    let furnace = node_index(7, 1, 3) as u16;
    assert_eq!(now.metadata.get(furnace), before.metadata.get(furnace), "outside the area: as it was");
    ok(&["undo", ws, "--last", "1"]);
    assert_eq!(blob(w, house).unwrap(), griefed_house);
    // Already as then: nothing to do.
    ok(&["restore", ws, "tue", "--area", "0,0,0", "15,15,15"]);
    let again = ok(&["restore", ws, "tue", "--area", "0,0,0", "15,15,15"]);
    assert!(again.contains("nothing changed"), "{again}");
}

#[test]
fn an_area_too_big_for_one_change_is_refused_with_the_parts_to_restore() {
    let world = common::demo_world();
    let w = world.path();
    let ws = w.to_str().unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    grief(w);
    let before = blob(w, BlockPos::new(0, 0, 0));
    let (code, _, err) = worldfs(&["restore", ws, "tue", "--area", "-1000,-16,-1000", "1000,15,1000"]);
    assert_eq!(code, 2);
    assert!(err.contains("more than one restore may change (4096)"), "{err}");
    assert!(err.contains(&format!("worldfs restore {ws} tue --area -1000,-16,-1000 ")), "{err}");
    assert_eq!(blob(w, BlockPos::new(0, 0, 0)), before, "nothing written");
    // The first part it names is accepted.
    let part = err.lines().find(|l| l.contains("--area")).unwrap().trim().to_string();
    let args: Vec<&str> = part.split_whitespace().skip(1).collect();
    ok(&args);
}

#[test]
fn a_player_comes_back_and_undo_takes_it_back() {
    use worldfs_store::records::Collection;
    let world = common::demo_world();
    let w = world.path();
    let ws = w.to_str().unwrap();
    // Opened for each step: restore refuses while another process (this
    // test) has players.sqlite open.
    let players =
        || worldfs_store::world::World::open(w).unwrap().open_records(Collection::Players, false, false).unwrap();
    let mut p = worldfs_codec::luanti::player::Player {
        hp: 20,
        breath: 11,
        pos: [1.0, 2.0, 3.0],
        pitch: 0.0,
        yaw: 0.0,
        meta: Default::default(),
        inventory: b"List main 1\nWidth 0\nItem default:diamond 99\nEndInventoryList\nEndInventory\n".to_vec(),
    };
    players().put("alice", None, Some(&p.encode()), &Note::new("t")).unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    let then = players().get("alice").unwrap().unwrap();
    p.inventory = b"List main 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
    players().put("alice", Some(&then), Some(&p.encode()), &Note::new("t")).unwrap();
    let robbed = players().get("alice").unwrap().unwrap();
    let said = ok(&["restore", ws, "tue", "--player", "alice"]);
    assert!(said.contains("restore player alice from snapshot tue"), "{said}");
    assert_eq!(players().get("alice").unwrap().unwrap(), then);
    ok(&["undo", ws, "--last", "1"]);
    assert_eq!(players().get("alice").unwrap().unwrap(), robbed);
    let (code, _, err) = worldfs(&["restore", ws, "tue", "--player", "bob"]);
    assert_eq!(code, 2);
    assert!(err.contains("snapshot tue holds no player \"bob\""), "{err}");
}

#[test]
fn a_map_another_process_holds_is_refused_with_the_reason() {
    let world = common::demo_world();
    let w = world.path();
    let ws = w.to_str().unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    grief(w);
    let before = blob(w, BlockPos::new(0, 0, 0));
    let mut holder = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("exec 3<>'{}'; sleep 30", w.join("map.sqlite").display()))
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, _, err) = worldfs(&["restore", ws, "tue", "--area", "0,0,0", "15,15,15"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(code, 2);
    assert!(err.contains("is open in pid") && err.contains("worldfs live install"), "{err}");
    assert_eq!(blob(w, BlockPos::new(0, 0, 0)), before);
}
