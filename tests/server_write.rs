//! The real server reads what worldfs writes: edits made through the mount
//! with vim, sed -i and shell redirection, node/, timers, objects, mkdir and
//! rmdir of blocks, a node type replaced in hundreds of blocks, and blocks
//! of the real worlds in versions 25 and 28.

mod common;

use common::mount::Mounted;
use common::probe::{Ask, ask};
use worldfs::codec::Block;
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, MapStore};

const CHEST: [i32; 3] = worldfs::demo::CHEST;
const SIGN: [i32; 3] = worldfs::demo::SIGN;

fn has_tool(t: &str) -> bool {
    common::mount::which(t).is_some()
}

#[test]
fn demo_world_edits_are_what_the_server_sees() {
    require_fuse!("demo_world_edits_are_what_the_server_sees");
    require_server!("demo_world_edits_are_what_the_server_sees");
    let world = tempfile::tempdir().unwrap();
    worldfs::demo::write_demo(world.path()).unwrap();
    let m = Mounted::new(world.path(), &[]);
    let chest = "blocks/0,0,0/meta/3,1,3";
    if has_tool("vim") {
        m.ok(&format!("cd $MNT/{chest} && vim -es -c '%s/apple 12/apple 13/' -c wq inventory"));
    } else {
        eprintln!("vim not installed: using sed for that edit too");
        m.ok(&format!("sed -i 's/apple 12/apple 13/' $MNT/{chest}/inventory"));
    }
    m.ok(&format!("sed -i 's/default:torch 20/default:torch 25/' $MNT/{chest}/inventory"));
    m.ok("printf 'Hello\\nserver\\n' > $MNT/blocks/0,0,0/meta/3,2,8/fields/text");
    m.ok("echo 'default:mese' > $MNT/node/5,3,5 && echo 'default:torch 14 1' > $MNT/node/6,3,5");
    m.ok("echo '5 3 5 30 1.5' >> $MNT/blocks/0,0,0/timers");
    // Stored objects of a never-activated block (timestamp undefined) are
    // dropped by the server: give the block a timestamp first.
    m.ok("sed -i 's/^timestamp = .*/timestamp = 0/' $MNT/blocks/0,0,0/info");
    m.ok(
        "printf 'lua_entity 5,1,6 __builtin:item hp=1 velocity=0,0,0 yaw=0 staticdata=\"default:apple 3\"\\n\
         lua_entity 6,1,6 __builtin:item hp=1 velocity=0,0,0 yaw=0 staticdata=\"default:dirt 4\"\\n' > $MNT/blocks/0,0,0/objects",
    );
    m.ok("sed -i '/default:dirt 4/d' $MNT/blocks/0,0,0/objects");
    m.ok("mkdir $MNT/blocks/3,0,3 && rmdir $MNT/blocks/-1,-1,-1");
    assert_eq!(m.ok("cat $MNT/write-errors"), "");
    m.unmount();

    let facts = ask(
        world.path(),
        &[
            Ask::Meta(CHEST),
            Ask::Meta(SIGN),
            Ask::Node([5, 3, 5]),
            Ask::Node([6, 3, 5]),
            Ask::Timer([5, 3, 5]),
            Ask::Node([50, 3, 50]),
            Ask::Node([-10, -10, -10]),
            Ask::Node(CHEST),
            Ask::Objects([5, 1, 6], 12),
        ],
    );
    let main = &facts.meta[&CHEST].lists[&b"main".to_vec()];
    assert_eq!(main.0, 32);
    assert_eq!(main.2[0], b"default:apple 13");
    assert_eq!(main.2[2], b"default:torch 25");
    assert_eq!(facts.meta[&SIGN].fields[&b"text".to_vec()], b"Hello\nserver");
    assert_eq!(facts.nodes[&[5, 3, 5]].0, "default:mese");
    assert_eq!(facts.nodes[&[6, 3, 5]], ("default:torch".to_string(), 14, 1));
    assert_eq!(facts.timers[&[5, 3, 5]], (30.0, 1.5, true));
    assert_eq!(facts.nodes[&[50, 3, 50]].0, "air", "the block made with mkdir");
    assert_eq!(facts.nodes[&[-10, -10, -10]].0, "ignore", "the block removed with rmdir is gone");
    assert_eq!(facts.nodes[&CHEST].0, "default:chest");
    let objects = &facts.objects[&[5, 1, 6]];
    assert_eq!(objects, &vec![("__builtin:item".to_string(), "default:apple 3".to_string())], "{objects:?}");
}

#[test]
fn a_node_type_replaced_with_sed_in_hundreds_of_blocks() {
    require_fuse!("a_node_type_replaced_with_sed_in_hundreds_of_blocks");
    require_server!("a_node_type_replaced_with_sed_in_hundreds_of_blocks");
    let world = tempfile::tempdir().unwrap();
    common::probe::generate_world(world.path(), 40, 24);
    let store = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    let mut stone_blocks: Vec<(BlockPos, Block)> = store
        .scan_after(None, 1 << 30)
        .unwrap()
        .into_iter()
        .map(|(p, blob)| (p, Block::decode(&blob).unwrap()))
        .filter(|(_, b)| b.is_generated() && b.mapping.iter().any(|m| m.name == b"default:stone"))
        .collect();
    drop(store);
    stone_blocks.truncate(300);
    assert!(stone_blocks.len() >= 100, "only {} blocks with stone", stone_blocks.len());
    let list: String = stone_blocks.iter().map(|(p, _)| format!("blocks/{p}/names\n")).collect();
    let m = Mounted::new(world.path(), &[]);
    std::fs::write(m.dir.path().join("list"), list).unwrap();
    m.ok(&format!(
        "cd $MNT && xargs -d '\\n' sed -i 's/^\\([0-9]*\\) default:stone$/\\1 default:desert_stone/' < {}",
        m.dir.path().join("list").display()
    ));
    assert_eq!(m.ok("cat $MNT/write-errors"), "");
    m.unmount();
    // One stone node of each edited block, as the server sees it.
    let mut asks = Vec::new();
    for (pos, b) in &stone_blocks {
        let id = b.mapping.iter().find(|m| m.name == b"default:stone").unwrap().id;
        let i = b.param0.iter().position(|&p| p == id).unwrap();
        let (x, y, z) = worldfs::view::node_coords(*pos, i as u16);
        asks.push(Ask::Node([x, y, z]));
    }
    let facts = ask(world.path(), &asks);
    assert_eq!(facts.nodes.len(), stone_blocks.len());
    for (p, (name, _, _)) in &facts.nodes {
        assert_eq!(name, "default:desert_stone", "node {p:?}");
    }
}

/// Blocks of the real worlds, edited in their own versions (25, 27, 28),
/// load in the server with the edits.
#[test]
fn real_world_blocks_of_versions_25_and_28_load_after_edits() {
    require_fuse!("real_world_blocks_of_versions_25_and_28_load_after_edits");
    require_server!("real_world_blocks_of_versions_25_and_28_load_after_edits");
    let Some(worlds) = common::real_sqlite_worlds("real_world_blocks_of_versions_25_and_28_load_after_edits") else {
        return;
    };
    let mut versions_seen = std::collections::BTreeSet::new();
    for src in worlds {
        let world = common::copy_world(&src);
        let store = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
        if matches!(store.schema(), worldfs::store::sqlite::Schema::Split) {
            eprintln!("{}: x,y,z schema, which the 5.6.1 server cannot open; skipped", src.display());
            continue;
        }
        let blocks: Vec<(BlockPos, Block)> = store
            .scan_after(None, 1 << 30)
            .unwrap()
            .into_iter()
            .map(|(p, blob)| (p, Block::decode(&blob).unwrap()))
            .filter(|(_, b)| b.is_generated() && b.mapping.len() > 1)
            .collect();
        drop(store);
        // A few blocks: rename their last node type; and a metadata field.
        let edited: Vec<&(BlockPos, Block)> = blocks.iter().step_by((blocks.len() / 5).max(1)).take(5).collect();
        let with_meta = blocks.iter().find(|(_, b)| !b.metadata.entries.is_empty());
        let m = Mounted::new(world.path(), &[]);
        let mut asks = Vec::new();
        for (pos, b) in &edited {
            let last = b.mapping.last().unwrap();
            m.ok(&format!("sed -i 's/^{} .*/{} default:goldblock/' $MNT/blocks/{pos}/names", last.id, last.id));
            let i = b.param0.iter().position(|&p| p == last.id).unwrap();
            let (x, y, z) = worldfs::view::node_coords(*pos, i as u16);
            asks.push(Ask::Node([x, y, z]));
            versions_seen.insert(b.version);
        }
        let mut meta_at = None;
        if let Some((pos, b)) = with_meta {
            let e = &b.metadata.entries[0];
            let (x, y, z) = worldfs::view::node_coords(*pos, e.pos);
            m.ok(&format!("echo 'written by worldfs' > $MNT/blocks/{pos}/meta/{x},{y},{z}/fields/worldfs"));
            asks.push(Ask::Meta([x, y, z]));
            meta_at = Some(([x, y, z], e.clone()));
        }
        assert_eq!(m.ok("cat $MNT/write-errors"), "");
        m.unmount();
        for (pos, b) in &edited {
            let blob = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap().get(*pos).unwrap().unwrap();
            assert_eq!(blob[0], b.version, "{pos}: the version is kept");
        }
        let facts = ask(world.path(), &asks);
        for a in &asks {
            if let Ask::Node(p) = a {
                assert_eq!(facts.nodes[p].0, "default:goldblock", "{}: node {p:?}", src.display());
            }
        }
        if let Some((p, entry)) = meta_at {
            let seen = &facts.meta[&p];
            assert_eq!(seen.fields[&b"worldfs".to_vec()], b"written by worldfs");
            for v in &entry.vars {
                if !v.value.is_empty() {
                    assert_eq!(seen.fields.get(&v.key), Some(&v.value), "{}: field kept", src.display());
                }
            }
        }
        eprintln!("{}: {} edited blocks read back by the server", src.display(), edited.len());
    }
    if !versions_seen.is_empty() {
        assert!(versions_seen.contains(&25) && versions_seen.contains(&28), "{versions_seen:?}");
    }
}
