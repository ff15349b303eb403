//! Bounded memory for a live world-wide change (issue 42): a rename
//! through a live mount streams its parts as the offline one does, and the
//! blocks it changed that the server has not saved yet are held only up
//! to a bound (the `shown` overlay, `crates/store/src/live/mod.rs`), not
//! every changed block until the end. The real server applies the change;
//! the daemon's peak resident memory (VmHWM) is the measure.

use crate::common;

use common::live;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// `n` by `n` blocks of stone at y = -6 whose param1 and param2 are
/// random bytes (so each blob holds about 8 KB that compress to nothing),
/// written before the server starts; gives their positions and blob bytes.
fn add_big_blocks(world: &std::path::Path, n: i16) -> (Vec<BlockPos>, usize) {
    let store = SqliteStore::open(&world.join("map.sqlite"), false).unwrap();
    let mut x64 = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = || {
        x64 ^= x64 << 13;
        x64 ^= x64 >> 7;
        x64 ^= x64 << 17;
        x64
    };
    let (mut placed, mut bytes) = (Vec::new(), 0);
    for x in -n / 2..n - n / 2 {
        let mut changes = Vec::new();
        for z in -n / 2..n - n / 2 {
            let pos = BlockPos::new(x, -6, z);
            let mut b = worldfs::worlds::luanti::demo::demo_block(BlockPos::new(x, -3, z));
            for v in b.param1.iter_mut().chain(b.param2.iter_mut()) {
                *v = random() as u8;
            }
            let blob = b.encode().unwrap();
            bytes += blob.len();
            changes.push(worldfs_store::Change::Put(pos, blob));
            placed.push(pos);
        }
        store.apply(&changes, &worldfs_store::Note::default()).unwrap();
    }
    (placed, bytes)
}

/// The peak resident memory of process `pid`, in bytes (VmHWM).
fn peak(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// A live rename of 4,096 blocks whose blobs hold 34 MB, with map saves
/// every second, on a mount with an 8 MiB cache: the daemon's peak grows
/// by well under the blobs it changed (the offline rename holds a part of
/// them at a time, half the cache; the live one also holds the changed
/// blocks until the server saves them, at most as much again), every
/// block is renamed in the game and the database, and a block the rename
/// changed reads back renamed right after it.
#[test]
fn a_live_world_wide_rename_holds_a_bounded_part_of_what_it_changes() {
    require_fuse!("a_live_world_wide_rename_holds_a_bounded_part_of_what_it_changes");
    require_minetestserver!("a_live_world_wide_rename_holds_a_bounded_part_of_what_it_changes");
    let world = common::demo_world();
    let (blocks, bytes) = add_big_blocks(world.path(), 64);
    let conf =
        "server_map_save_interval = 1\nworldfs_live.blocks_per_save = 1024\nworldfs_live.blocks_per_save_max = 8192";
    let mut server = live::LiveServer::start(world.path(), conf, true);
    // A cache of 8 MiB: parts of 4 MiB of blobs, and 4 MiB of changed
    // blocks held until the server saves them.
    let m = common::mount::Mounted::new(world.path(), &["cache_mb=8"]);
    assert!(m.log_text().contains("changes go through the server"), "{}", m.log_text());
    assert!(m.ok("ls $MNT/find").lines().any(|l| l == "default:stone"));
    // The peak from here on (the scan that built find/ peaked higher).
    std::fs::write(format!("/proc/{}/clear_refs", m.pid()), "5").unwrap();
    let before = peak(m.pid());
    let start = std::time::Instant::now();
    m.ok("mv $MNT/find/default:stone $MNT/find/default:desert_stone");
    let took = start.elapsed();
    let after = peak(m.pid());
    eprintln!(
        "live rename of {} blocks ({:.1} MB of blobs) in {:.1} s: the daemon's peak {:.1} MB before, {:.1} MB after",
        blocks.len(),
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        before as f64 / 1e6,
        after as f64 / 1e6
    );
    assert_eq!(m.refusals(), "");
    let last = blocks.last().unwrap();
    let names = m.ok(&format!("cat $MNT/blocks/{},{},{}/names", last.x, last.y, last.z));
    assert!(names.contains("default:desert_stone") && !names.contains("default:stone\n"), "{names}");
    assert!(server.node([16 * i32::from(last.x), -96, 16 * i32::from(last.z)]).starts_with("default:desert_stone "));
    m.unmount();
    assert!(server.stop().success());
    let store = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    for pos in &blocks {
        let b = worldfs_codec::luanti::Block::decode(&store.get(*pos).unwrap().unwrap()).unwrap();
        assert!(!b.mapping.iter().any(|e| e.name == b"default:stone"), "{pos} keeps stone");
    }
    let grew = after.saturating_sub(before) as usize;
    // Before the bound (every changed block held until the end, and the
    // journal's copies of each part) it grew by 20 MB here, over the
    // scan's freed memory that the allocator reuses.
    assert!(grew < bytes / 4, "the daemon's peak grew by {grew} bytes during a rename of {bytes} bytes of blobs");
}
