//! The name index (`MNT/find/`, `MNT/names`) and the world-wide rename
//! (`mv MNT/find/OLD MNT/find/NEW`): the index agrees with a full scan on
//! every real world, follows commits made through the mount and changes
//! made by another process, and a world-wide rename is undone byte for
//! byte by `worldfs undo`.

use crate::common;

use common::mount::Mounted;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;
use worldfs::fs::{Kind, Options, ROOT, WorldFs};
use worldfs_codec::luanti::Block;
use worldfs_store::journal::Journal;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// Every name with (blocks, nodes), and every name's blocks.
type Seen = (BTreeMap<Vec<u8>, (u64, u64)>, BTreeMap<Vec<u8>, BTreeSet<BlockPos>>);

/// Every name of a world with (blocks, nodes), and its blocks, by a scan.
fn scan(world: &Path) -> Seen {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    let (mut counts, mut blocks) = (BTreeMap::new(), BTreeMap::<Vec<u8>, BTreeSet<BlockPos>>::new());
    for (pos, blob) in store.scan_after(None, 10_000_000).unwrap() {
        let Ok(b) = Block::decode(&blob) else { continue };
        for (name, n) in worldfs::worlds::luanti::index::counts_of(&b) {
            let c: &mut (u64, u64) = counts.entry(name.clone()).or_default();
            c.0 += 1;
            c.1 += n as u64;
            blocks.entry(name).or_default().insert(pos);
        }
    }
    (counts, blocks)
}

fn core(world: &Path, cache: &Path, read_only: bool) -> WorldFs {
    let opts = Options { read_only, ttl: Duration::ZERO, index_dir: Some(cache.to_path_buf()), ..Options::default() };
    worldfs::open::open_world(world, opts).unwrap()
}

fn list(fs: &WorldFs, dir: u64) -> Vec<(String, u64, Kind)> {
    let mut v = Vec::new();
    fs.readdir(dir, 0, false, &mut |e, _| {
        v.push((e.name.to_string_lossy().into_owned(), e.ino, e.kind));
        false
    })
    .unwrap();
    v.retain(|(n, _, _)| n != "." && n != "..");
    v
}

fn read(fs: &WorldFs, ino: u64) -> String {
    String::from_utf8(fs.read_unopened(ino, 0, 1 << 30).unwrap()).unwrap()
}

/// What the index shows through the core: names with counts, and for each
/// name its blocks (from the listing of find/NAME, checked by readlink).
fn shown(fs: &WorldFs) -> Seen {
    let names = fs.lookup(ROOT, OsStr::new("names")).unwrap().ino;
    let mut counts = BTreeMap::new();
    for line in read(fs, names).lines() {
        let mut w = line.rsplitn(3, ' ');
        let (nodes, blocks, name) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
        counts.insert(name.as_bytes().to_vec(), (blocks.parse().unwrap(), nodes.parse().unwrap()));
    }
    let find = fs.lookup(ROOT, OsStr::new("find")).unwrap().ino;
    let mut blocks = BTreeMap::new();
    for (name, ino, kind) in list(fs, find) {
        assert_eq!(kind, Kind::Dir);
        let key = worldfs::view::escape::name_to_key(name.as_bytes()).unwrap();
        let mut set = BTreeSet::new();
        for (b, link, kind) in list(fs, ino) {
            assert_eq!(kind, Kind::Symlink);
            assert_eq!(fs.readlink(link).unwrap(), format!("../../blocks/{b}").into_bytes());
            set.insert(b.parse().unwrap());
        }
        blocks.insert(key, set);
    }
    (counts, blocks)
}

#[test]
fn the_index_agrees_with_a_full_scan_on_every_real_world() {
    let worlds = common::real_sqlite_worlds("the_index_agrees_with_a_full_scan_on_every_real_world");
    for src in worlds {
        let cache = tempfile::tempdir().unwrap();
        let fs = core(&src, cache.path(), true);
        let (counts, blocks) = shown(&fs);
        let (want_counts, want_blocks) = scan(&src);
        assert_eq!(counts, want_counts, "{}", src.display());
        assert_eq!(blocks, want_blocks, "{}", src.display());
        eprintln!("{}: {} names agree", src.display(), counts.len());
    }
}

#[test]
fn the_index_follows_commits_and_other_processes() {
    let world = common::demo_world();
    let cache = tempfile::tempdir().unwrap();
    let fs = core(world.path(), cache.path(), false);
    let (counts, _) = shown(&fs);
    assert!(counts.contains_key(&b"default:chest"[..]));
    assert!(!counts.contains_key(&b"default:mese"[..]));
    // A commit through the mount.
    let node = fs.lookup(worldfs::worlds::luanti::inode::NODE_DIR, OsStr::new("1,2,3")).unwrap().ino;
    let o = fs.open(node, libc::O_WRONLY | libc::O_TRUNC, 1).unwrap();
    fs.write(o.fh, 0, b"default:mese\n").unwrap();
    fs.flush(o.fh, 1).unwrap();
    fs.release(o.fh).unwrap();
    let (counts, blocks) = shown(&fs);
    assert_eq!(counts[&b"default:mese"[..]], (1, 1));
    assert_eq!(blocks[&b"default:mese"[..]], BTreeSet::from([BlockPos::new(0, 0, 0)]));
    assert_eq!((counts, blocks), scan(world.path()));
    // Another process adds a block with a new name.
    let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
    let mut b = Block::new_air(29);
    b.mapping.push(worldfs_codec::luanti::MappingEntry { id: 1, name: b"default:diamondblock".to_vec() });
    b.param0[0] = 1;
    store.apply(&[Change::Put(BlockPos::new(5, 5, 5), b.encode().unwrap())], &Note::default()).unwrap();
    assert_eq!(shown(&fs), scan(world.path()));
    // A second mount of the world uses the index file without a scan and
    // sees the same.
    let again = core(world.path(), cache.path(), true);
    assert_eq!(shown(&again), scan(world.path()));
}

#[test]
fn mv_in_find_renames_a_node_type_everywhere_and_undo_takes_it_back() {
    require_fuse!("mv_in_find_renames_a_node_type_everywhere_and_undo_takes_it_back");
    let world = common::demo_world();
    let before: BTreeMap<BlockPos, Vec<u8>> = all_blocks(world.path());
    let m = Mounted::new(world.path(), &[]);
    assert!(m.ok("ls $MNT/find").contains("default:cobble\n"));
    let linked = m.ok("readlink $MNT/find/default:cobble/0,0,0");
    assert_eq!(linked, "../../blocks/0,0,0\n");
    assert!(m.ok("cat $MNT/find/default:cobble/0,0,0/info").contains("version = 29"));
    let cobble_nodes: u64 =
        m.ok("grep '^default:cobble ' $MNT/names").split(' ').nth(2).unwrap().trim().parse().unwrap();
    let wood_nodes: u64 = m.ok("grep '^default:wood ' $MNT/names").split(' ').nth(2).unwrap().trim().parse().unwrap();
    // Rename onto a name that exists (mv moves it into that directory).
    m.ok("mv $MNT/find/default:cobble $MNT/find/default:wood");
    assert!(!m.ok("ls $MNT/find").contains("default:cobble\n"));
    let wood: u64 = m.ok("grep '^default:wood ' $MNT/names").split(' ').nth(2).unwrap().trim().parse().unwrap();
    assert_eq!(wood, wood_nodes + cobble_nodes);
    // ...and onto a new one.
    m.ok("mv $MNT/find/default:wood $MNT/find/default:junglewood");
    assert!(m.ok("grep -c default:junglewood $MNT/blocks/0,0,0/names") == "1\n");
    // A bad new name is refused and changes nothing.
    let (code, _, _) = m.sh("mv $MNT/find/default:glass \"$MNT/find/Not A Name\"");
    assert_ne!(code, 0);
    assert!(m.refusals().contains("'Not A Name' is not a node name"), "{}", m.refusals());
    let (code, _, _) = m.sh("mv $MNT/find/default:glass $MNT/find/nonsense:::");
    assert_ne!(code, 0);
    assert!(m.refusals().contains("'nonsense:::' is not a node name"), "{}", m.refusals());
    let after = all_blocks(world.path());
    let (counts, blocks) = scan(world.path());
    assert!(!counts.contains_key(&b"default:cobble"[..]) && !counts.contains_key(&b"default:wood"[..]));
    assert!(blocks.contains_key(&b"default:junglewood"[..]));
    assert_ne!(after, before);
    drop(m);
    // Both renames are taken back by undo.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["undo", "--last", "2"])
        .arg(world.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(all_blocks(world.path()), before);
}

fn all_blocks(world: &Path) -> BTreeMap<BlockPos, Vec<u8>> {
    SqliteStore::open(&world.join("map.sqlite"), true)
        .unwrap()
        .scan_after(None, 1_000_000)
        .unwrap()
        .into_iter()
        .collect()
}

/// A world of `n` blocks in a row, each holding `name` and `default:dirt`
/// in a noisy pattern (blobs of a few KB, as real blocks are), and a block
/// without `name`.
fn noisy_world(dir: &Path, n: i16, name: &[u8]) {
    use worldfs_codec::luanti::MappingEntry;
    use worldfs_store::sqlite::Schema;
    std::fs::write(dir.join("world.mt"), "gameid = minetest\nbackend = sqlite3\n").unwrap();
    let store = SqliteStore::create(&dir.join("map.sqlite"), Schema::Split).unwrap();
    let mut seed = 0x2545_f491_u32;
    let mut changes = vec![Change::Put(BlockPos::new(-1, 0, 0), Block::new_air(29).encode().unwrap())];
    for x in 0..n {
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: name.to_vec() });
        b.mapping.push(MappingEntry { id: 2, name: b"default:dirt".to_vec() });
        for id in b.param0.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            *id = [0, 0, 1, 2][(seed % 4) as usize];
        }
        changes.push(Change::Put(BlockPos::new(x, 0, x % 7), b.encode().unwrap()));
    }
    store.apply(&changes, &Note::default()).unwrap();
}

/// The world-wide rename holds at most its part budget of blobs (half the
/// block cache's budget, at least 64 KiB) before writing them: on a small
/// cache a rename of 300 blocks goes in many parts, each one transaction
/// and journal entry whose old and new blobs stay within the budget (plus
/// one block per decoding thread), covering every block once, in key
/// order; the parts are labelled so that the listing tells how many to
/// undo, and `worldfs undo --last N` takes the whole rename back.
#[test]
fn a_world_wide_rename_on_a_small_budget_goes_in_parts_and_undo_takes_all_back() {
    const OLD: &[u8] = b"default:cobble";
    const NEW: &[u8] = b"default:mossycobble";
    let (world, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    noisy_world(world.path(), 300, OLD);
    let before = all_blocks(world.path());
    let budget = 64 << 10;
    let opts = Options {
        read_only: false,
        ttl: Duration::ZERO,
        index_dir: Some(cache.path().to_path_buf()),
        cache_bytes: 2 * budget,
        ..Options::default()
    };
    let fs = worldfs::open::open_world(world.path(), opts).unwrap();
    let find = fs.lookup(ROOT, OsStr::new("find")).unwrap().ino;
    fs.rename(find, OsStr::new("default:cobble"), find, OsStr::new("default:mossycobble"), 0).unwrap();
    drop(fs);
    let after = all_blocks(world.path());
    let (_, holding) = scan(world.path());
    assert!(!holding.contains_key(OLD));
    assert_eq!(holding[NEW].len(), 300);

    let journal = Journal::open(&world.path().join("worldfs-journal.sqlite")).unwrap().unwrap();
    let mut parts = journal.changes(None, None).unwrap();
    parts.reverse();
    let n = parts.len();
    assert!(n >= 10, "{n} part(s) for 300 blocks of about 4 KB each (old and new) in 64 KiB");
    let largest = before.values().map(Vec::len).max().unwrap() + after.values().map(Vec::len).max().unwrap();
    let threads = std::thread::available_parallelism().unwrap().get().clamp(1, 8);
    let mut seen = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        let label = if k + 1 == n { format!("(part {n} of {n})") } else { format!("(part {})", k + 1) };
        assert!(part.what.starts_with("mv find/default:cobble find/default:mossycobble: "), "{}", part.what);
        assert!(part.what.ends_with(&label), "{} does not end with {label}", part.what);
        let blocks = journal.blocks(part.id).unwrap();
        let bytes: usize = blocks.iter().map(|b| b.before.as_ref().unwrap().len() + after[&b.pos].len()).sum();
        assert!(bytes <= budget + threads * largest, "part {}: {bytes} bytes of blobs", k + 1);
        assert!(bytes >= budget * 3 / 4 || k + 1 == n, "part {} ended early: {bytes} bytes of blobs", k + 1);
        for b in blocks {
            assert_eq!(b.before.as_ref(), before.get(&b.pos), "{}", b.pos);
            seen.push(b.pos);
        }
    }
    let in_key_order: Vec<BlockPos> = {
        let mut v: Vec<BlockPos> = holding[NEW].iter().copied().collect();
        v.sort_by_key(BlockPos::legacy_key);
        v
    };
    assert_eq!(seen, in_key_order, "every block once, the parts in key order");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["undo", "--last", &n.to_string()])
        .arg(world.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(all_blocks(world.path()) == before, "undo of {n} parts did not restore every block");
}

/// A plain `ls` of the root of a fresh mount lists `names` without
/// building the name index (its size needs all of it: 1.5 s on the
/// 2.8M-block world): the daemon logs no build; then `stat` gives its
/// real size and `cat` all of its text.
#[test]
fn listing_the_root_does_not_build_the_name_index() {
    require_fuse!("listing_the_root_does_not_build_the_name_index");
    let world = common::demo_world();
    let m = common::mount::Mounted::new(world.path(), &["ro"]);
    let listed = m.ok("ls $MNT");
    assert!(listed.lines().any(|l| l == "names"), "{listed}");
    assert!(!m.log_text().contains("names built"), "{}", m.log_text());
    let size: usize = m.ok("stat -c %s $MNT/names").trim().parse().unwrap();
    let text = m.ok("cat $MNT/names");
    assert_eq!(text.len(), size, "{text}");
    assert!(text.contains("default:stone"), "{text}");
    assert!(m.log_text().contains("names built"), "{}", m.log_text());
}

/// The kernel keeps a directory's listing until its mtime changes (the
/// mount answers OPENDIR with ENOSYS, so the kernel opens directories
/// itself): a block another process adds to the map shows in `ls
/// MNT/blocks` within the TTL, on a read-only mount (it did not before:
/// blocks/ kept its mtime and its attributes for the entry TTL).
#[test]
fn a_block_another_process_adds_shows_in_the_blocks_listing_within_the_ttl() {
    require_fuse!("a_block_another_process_adds_shows_in_the_blocks_listing_within_the_ttl");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro", "ttl=1"]);
    let before = m.ok("ls $MNT/blocks");
    assert!(!before.lines().any(|l| l == "5,0,5"), "{before}");
    let c = rusqlite::Connection::open(world.path().join("map.sqlite")).unwrap();
    let key = 5 + 16_777_216 * 5;
    c.execute("INSERT INTO blocks (pos, data) SELECT ?1, data FROM blocks WHERE pos = -4096", [key]).unwrap();
    drop(c);
    let start = std::time::Instant::now();
    while !m.ok("ls $MNT/blocks").lines().any(|l| l == "5,0,5") {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "5,0,5 not listed after 10 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(m.ok("ls $MNT/blocks").lines().count(), before.lines().count() + 1);
}

/// The kernel keeps a listing until the directory's mtime moves: a block's
/// `meta/` must move when another process (a running server placing a
/// chest) gives the block metadata.
#[test]
fn metadata_another_process_adds_shows_in_the_blocks_meta_listing_within_the_ttl() {
    require_fuse!("metadata_another_process_adds_shows_in_the_blocks_meta_listing_within_the_ttl");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro", "ttl=1"]);
    assert_eq!(m.ok("ls $MNT/blocks/1,0,0/meta"), "");
    let with_meta = m.ok("ls $MNT/blocks/0,0,0/meta").lines().count();
    assert!(with_meta > 0);
    // Block 1,0,0 gets the bytes of 0,0,0, which has metadata.
    let c = rusqlite::Connection::open(world.path().join("map.sqlite")).unwrap();
    c.execute("UPDATE blocks SET data = (SELECT data FROM blocks WHERE pos = 0) WHERE pos = 1", []).unwrap();
    drop(c);
    let start = std::time::Instant::now();
    while m.ok("ls $MNT/blocks/1,0,0/meta").lines().count() != with_meta {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "1,0,0's metadata not listed after 10 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
