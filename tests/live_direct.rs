//! A big live change writes the blocks the running server does not hold
//! to the database itself, and sends only the held ones through the
//! server (crates/store/src/live/direct.rs): with the real server, map
//! saves every ten minutes (so nothing the test sees in the database
//! comes from a save), and two blocks held in the game with a change of
//! the game's own that is not saved yet.

use crate::common;

use common::live;
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// The block at `pos` as the database holds it now.
fn stored(world: &std::path::Path, pos: BlockPos) -> Block {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    Block::decode(&store.get(pos).unwrap().unwrap()).unwrap()
}

fn has(b: &Block, name: &[u8]) -> bool {
    let ids: Vec<u16> = b.mapping.iter().filter(|m| m.name == name).map(|m| m.id).collect();
    b.param0.iter().any(|id| ids.contains(id))
}

/// A rename of cobble in 64 blocks while the game holds two of them, each
/// with a node it set and has not saved: the 62 others hold the rename in
/// the database at once, written by the mount (the server saves nothing
/// for ten minutes); the two held ones are renamed in the game; once the
/// server stops (and saves), every block holds the rename, and the held
/// ones also the game's own change (a direct write of those would have
/// been written over by the server's save).
#[test]
fn a_live_rename_writes_what_the_server_does_not_hold_and_sends_it_the_rest() {
    require_fuse!("a_live_rename_writes_what_the_server_does_not_hold_and_sends_it_the_rest");
    require_minetestserver!("a_live_rename_writes_what_the_server_does_not_hold_and_sends_it_the_rest");
    let world = common::demo_world();
    let (blocks, _) = crate::live_memory::add_cobbled_blocks(world.path(), 8);
    let mut server = live::LiveServer::start(
        world.path(),
        "server_map_save_interval = 600\nserver_unload_unused_data_timeout = 600",
        true,
    );
    let held = [blocks[0], blocks[blocks.len() - 1]];
    // The node after the first cobble of each held block (index 1: stone).
    let set_at = |b: BlockPos| [16 * i32::from(b.x) + 1, 16 * i32::from(b.y), 16 * i32::from(b.z)];
    for b in held {
        let [x, y, z] = set_at(b);
        let said = server.ask(&[format!("set {x} {y} {z} default:goldblock")], std::time::Duration::from_secs(10));
        assert_eq!(said, [format!("set {x} {y} {z}")]);
    }
    let m = common::mount::Mounted::new(world.path(), &[]);
    assert!(m.log_text().contains("changes go through the server"), "{}", m.log_text());
    m.ok("mv $MNT/find/default:cobble $MNT/find/default:mossycobble");
    assert_eq!(m.refusals(), "");
    let stats = worldfs::fs::stats::parse(&m.ok("cat $MNT/.worldfs-stats"));
    assert!(stats.get("live-direct").is_some_and(|c| c.0 >= 1), "no direct write: {stats:?}");
    // Before any map save: the blocks the server did not hold are renamed
    // in the database; the held ones are not yet (the game has them).
    for pos in blocks.iter().filter(|p| !held.contains(p)) {
        let b = stored(world.path(), *pos);
        assert!(has(&b, b"default:mossycobble") && !has(&b, b"default:cobble"), "{pos} is not renamed in the database");
    }
    for b in held {
        assert!(has(&stored(world.path(), b), b"default:cobble"), "{b} held by the server is not put back");
    }
    for b in held {
        let [x, y, z] = set_at(b);
        assert!(server.node([x - 1, y, z]).starts_with("default:mossycobble "), "{b} is not renamed in the game");
        assert!(server.node([x, y, z]).starts_with("default:goldblock "), "{b} lost the game's own change");
    }
    m.unmount();
    assert!(server.stop().success());
    for pos in &blocks {
        let b = stored(world.path(), *pos);
        assert!(has(&b, b"default:mossycobble") && !has(&b, b"default:cobble"), "{pos} is not renamed after the save");
    }
    for b in held {
        assert!(has(&stored(world.path(), b), b"default:goldblock"), "{b} lost the game's own change at the save");
    }
}

/// A rename over 58 blocks while the game changed a node of one of them
/// since the mount read it (held in the game, not saved): ESTALE, and
/// write-errors says 57 of 58 blocks were changed: the others are renamed
/// in the database at once (no map save for ten minutes), the refused
/// block keeps its old names and the game's change, in the game and in
/// the database (written there first, then put back). (Through the server,
/// the other block of its batch was left too:
/// live_server::a_batch_refused_mid_way_leaves_the_earlier_batches_applied.)
#[test]
fn a_conflict_in_a_held_block_refuses_that_block_alone() {
    require_fuse!("a_conflict_in_a_held_block_refuses_that_block_alone");
    require_minetestserver!("a_conflict_in_a_held_block_refuses_that_block_alone");
    let world = common::demo_world();
    let added = crate::live_server::add_stone_blocks(world.path(), 7);
    let conf = "server_map_save_interval = 600\nserver_unload_unused_data_timeout = 600";
    let (server, m) = live::start(world.path(), conf);
    assert_eq!(
        server.ask(&["set 53 -40 53 default:dirt".into()], std::time::Duration::from_secs(10)),
        ["set 53 -40 53"]
    );
    let (code, _, err) = m.sh("mv $MNT/find/default:stone $MNT/find/default:desert_stone");
    assert!(code != 0 && err.contains("Stale file handle"), "{err}");
    let total = added.len() + 9;
    let refusals = m.refusals();
    assert!(
        refusals.contains(&format!("{} of {total} blocks were changed", total - 1))
            && refusals.contains("node 53,-40,53 is now default:dirt"),
        "{refusals}"
    );
    for pos in added.iter().filter(|p| **p != BlockPos::new(3, -3, 3)) {
        let b = stored(world.path(), *pos);
        assert!(has(&b, b"default:desert_stone") && !has(&b, b"default:stone"), "{pos} is not renamed in the database");
    }
    let refused = stored(world.path(), BlockPos::new(3, -3, 3));
    assert!(has(&refused, b"default:stone") && !has(&refused, b"default:desert_stone"), "refused, but in the database");
    assert!(server.node([53, -41, 53]).starts_with("default:stone "), "the refused block is as it was");
    assert!(server.node([53, -40, 53]).starts_with("default:dirt "), "the game keeps its change");
    assert!(server.node([40, -40, 56]).starts_with("default:desert_stone "), "a block beside it is renamed");
}

/// The name index of a live mount between the server's saves: a node the
/// game sets (and the server saves) shows in `find/` within the TTL, the
/// name the game took out is gone, and a world-wide rename of the new name
/// reaches it, all from the blocks the server wrote since the index was
/// built (src/worlds/luanti/index.rs, `refresh`): the index is built once.
#[test]
fn a_live_find_shows_what_the_server_saved_without_building_the_index_again() {
    require_fuse!("a_live_find_shows_what_the_server_saved_without_building_the_index_again");
    require_minetestserver!("a_live_find_shows_what_the_server_saved_without_building_the_index_again");
    let world = common::demo_world();
    let mut server = live::LiveServer::start(world.path(), "server_map_save_interval = 1", true);
    let m = common::mount::Mounted::new(world.path(), &["ttl=1"]);
    assert!(m.log_text().contains("changes go through the server"), "{}", m.log_text());
    let names = m.ok("ls $MNT/find");
    assert!(!names.lines().any(|l| l == "default:goldblock"), "{names}");
    let p = [5, 3, 5];
    let before = server.node(p);
    let block = BlockPos::new(0, 0, 0);
    assert_eq!(m.ok("ls $MNT/find/default:goldblock 2>/dev/null || true"), "");
    let said = server.ask(&["set 5 3 5 default:goldblock".into()], std::time::Duration::from_secs(10));
    assert_eq!(said, ["set 5 3 5"]);
    // Saved within a second or two; then shown within the TTL.
    let start = std::time::Instant::now();
    let listed = loop {
        let (_, out, _) = m.sh("ls $MNT/find/default:goldblock 2>/dev/null");
        if !out.trim().is_empty() || start.elapsed() > std::time::Duration::from_secs(15) {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(listed.trim(), "0,0,0", "the game's goldblock in find/");
    assert!(has(&stored(world.path(), block), b"default:goldblock"), "saved by the server");
    // The same block renamed world-wide, from the index as refreshed.
    m.ok("mv $MNT/find/default:goldblock $MNT/find/default:diamondblock");
    assert_eq!(m.refusals(), "");
    assert!(server.node(p).starts_with("default:diamondblock "), "renamed in the game: {}", server.node(p));
    assert_eq!(m.ok("ls $MNT/find/default:diamondblock").trim(), "0,0,0");
    // The game puts back what was there: the name is gone from the listing
    // once saved (a name looked up before may stay in the kernel's cache).
    let name = before.split(' ').next().unwrap_or_default().to_string();
    let said = server.ask(&[format!("set 5 3 5 {name}")], std::time::Duration::from_secs(10));
    assert_eq!(said, ["set 5 3 5"]);
    let start = std::time::Instant::now();
    while m.ok("ls $MNT/find").lines().any(|l| l == "default:diamondblock") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(15),
            "default:diamondblock still in find/:\n{}",
            m.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(m.ok("ls $MNT/find/default:diamondblock 2>/dev/null || true").trim(), "", "no block holds it");
    let log = m.log_text();
    assert_eq!(log.matches("names built in").count(), 1, "the index was built again:\n{log}");
    assert!(log.contains("taken in"), "no refresh:\n{log}");
    m.unmount();
    assert!(server.stop().success());
}
