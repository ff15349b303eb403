//! `worldfs diff` and `MNT/snapshots/NAME/changed/` (issue 40): the blocks
//! that changed between two snapshots or since one, grouped into areas
//! with their node-count changes and changed inventories; blocks saved
//! again with only their light changed are no area; `--area` and `--json`.

use crate::common;

use common::mount::Mounted;
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

/// Change block `pos` of the world's map with `edit`.
fn edit(world: &Path, pos: BlockPos, edit: impl FnOnce(&mut Block)) {
    let store = SqliteStore::open(&world.join("map.sqlite"), false).unwrap();
    let mut b = match store.get(pos).unwrap() {
        Some(blob) => Block::decode(&blob).unwrap(),
        None => Block::new_air(29),
    };
    edit(&mut b);
    store.apply(&[Change::Put(pos, b.encode().unwrap())], &Note::new("test")).unwrap();
}

/// Set the node at in-block x, y, z to `name`.
fn set(b: &mut Block, (x, y, z): (usize, usize, usize), name: &str) {
    let id = match b.mapping.iter().find(|m| m.name == name.as_bytes()) {
        Some(m) => m.id,
        None => {
            let id = b.mapping.iter().map(|m| m.id).max().map_or(0, |m| m + 1);
            b.mapping.push(MappingEntry { id, name: name.as_bytes().to_vec() });
            id
        }
    };
    b.param0[node_index(x, y, z)] = id;
}

/// The demo world with one more block far from its house (4,0,4: a copy
/// of its grass at 1,0,1).
fn demo_with_far_block() -> tempfile::TempDir {
    let world = common::demo_world();
    let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
    let grass = store.get(BlockPos::new(1, 0, 1)).unwrap().unwrap();
    store.apply(&[Change::Put(BlockPos::new(4, 0, 4), grass)], &Note::new("test")).unwrap();
    world
}

/// The griefing of the demo world: its chest emptied and 500 nodes of
/// the house replaced (block 0,0,0), and lava poured far away (4,0,4).
fn grief(world: &Path) {
    edit(world, BlockPos::new(0, 0, 0), |b| {
        let chest = node_index(3, 1, 3) as u16;
        let e = b.metadata.entries.iter_mut().find(|e| e.pos == chest).unwrap();
        e.inventory = b"List main 32\nWidth 0\n".iter().copied().chain("Empty\n".repeat(32).bytes()).collect();
        e.inventory.extend_from_slice(b"EndInventoryList\nEndInventory\n");
        let mut n = 0;
        'all: for y in 6..16 {
            for z in 0..16 {
                for x in 0..16 {
                    if n == 500 {
                        break 'all;
                    }
                    set(b, (x, y, z), "default:mese");
                    n += 1;
                }
            }
        }
    });
    edit(world, BlockPos::new(4, 0, 4), |b| {
        for x in 0..4 {
            set(b, (x, 1, 0), "default:lava_source");
        }
    });
    // Light alone changed: no area.
    edit(world, BlockPos::new(1, -1, -1), |b| b.param1[0] ^= 0x0f);
}

#[test]
fn diff_lists_the_areas_a_griefer_changed_with_their_counts_and_inventories() {
    let world = demo_with_far_block();
    let w = world.path();
    let ws = w.to_str().unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    let same = ok(&["diff", ws, "tue"]);
    assert_eq!(same, "0 area(s) changed from tue to now\n");
    grief(w);
    ok(&["snapshot", ws, "--name", "wed"]);
    for to in [vec!["wed"], vec![]] {
        let mut args = vec!["diff", ws, "tue"];
        args.extend(&to);
        let text = ok(&args);
        let lines: Vec<&str> = text.lines().collect();
        let name = if to.is_empty() { "now" } else { "wed" };
        assert_eq!(
            lines[0],
            format!(
                "2 area(s) changed from tue to {name} (1 more block(s) saved again with no node or metadata change)"
            ),
            "{text}"
        );
        // The 500 nodes, and the chest whose inventory changed.
        assert_eq!(lines[1], "area 1: 0,1,0 15,7,15 (1 block(s)): 501 node(s) changed", "{text}");
        assert_eq!(lines[2], "  nodes: -500 air +500 default:mese", "{text}");
        assert_eq!(
            lines[3],
            "  inventory 3,1,3 (default:chest): -20 default:torch -12 default:apple -1 default:pick_steel \
             -1 default:sword_steel",
            "{text}"
        );
        assert_eq!(lines[4], "area 2: 64,1,64 67,1,64 (1 block(s)): 4 node(s) changed", "{text}");
        assert_eq!(lines[5], "  nodes: -4 air +4 default:lava_source", "{text}");
        assert_eq!(lines.len(), 6, "{text}");
    }
    // Backwards, within an area, as JSON.
    let back: serde_json::Value =
        serde_json::from_str(&ok(&["diff", ws, "wed", "tue", "--area", "60,0,60", "70,5,70", "--json"])).unwrap();
    assert_eq!(back["areas"].as_array().unwrap().len(), 1, "{back}");
    assert_eq!(back["areas"][0]["counts"], serde_json::json!({"air": 4, "default:lava_source": -4}));
    assert_eq!(back["areas"][0]["blocks"], serde_json::json!(["4,0,4"]));
    let part = ok(&["diff", ws, "tue", "wed", "--area", "0,6,0", "1,6,1"]);
    assert!(part.contains("area 1: 0,6,0 1,6,1 (1 block(s)): 4 node(s) changed"), "{part}");
    let (code, _, err) = worldfs(&["diff", ws, "mon"]);
    assert_eq!(code, 2);
    assert!(err.contains("no snapshot named \"mon\"") && err.contains("wed, tue"), "{err}");
}

#[test]
fn changed_in_the_mount_says_what_changed_since_the_snapshot() {
    require_fuse!("changed_in_the_mount_says_what_changed_since_the_snapshot");
    let world = demo_with_far_block();
    let w = world.path();
    let ws = w.to_str().unwrap();
    ok(&["snapshot", ws, "--name", "tue"]);
    let m = Mounted::new(w, &[]);
    assert_eq!(m.ok("cat $MNT/snapshots/tue/changed/areas"), "0 area(s) changed from tue to now\n");
    assert_eq!(m.ok("cat $MNT/snapshots/tue/changed/blocks"), "");
    m.ok("echo 'default:lava_source 0 0' > $MNT/node/64,1,64");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let areas = m.ok("cat $MNT/snapshots/tue/changed/areas");
    assert_eq!(areas, ok(&["diff", ws, "tue"]), "the same report as worldfs diff");
    assert!(areas.contains("area 1: 64,1,64 64,1,64 (1 block(s))") && areas.contains("+1 default:lava_source"));
    assert_eq!(m.ok("cat $MNT/snapshots/tue/changed/blocks"), "4,0,4\n");
    let json: serde_json::Value = serde_json::from_str(&m.ok("cat $MNT/snapshots/tue/changed/areas.json")).unwrap();
    assert_eq!(json["areas"][0]["blocks"], serde_json::json!(["4,0,4"]));
    // From the shell: every changed block against the snapshot's copy.
    let out = m.sh(
        "cd $MNT/snapshots/tue && for b in $(cat changed/blocks); do diff blocks/$b/names $MNT/blocks/$b/names; done",
    );
    assert!(out.1.contains("default:lava_source"), "{out:?}");
    assert_eq!(m.ok("ls $MNT/snapshots/tue/changed"), "areas\nareas.json\nblocks\n");
}
