//! The name index (`MNT/find/`, `MNT/names`) and the world-wide rename
//! (`mv MNT/find/OLD MNT/find/NEW`): the index agrees with a full scan on
//! every real world, follows commits made through the mount and changes
//! made by another process, and a world-wide rename is undone byte for
//! byte by `worldfs undo`.

mod common;

use common::mount::Mounted;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;
use worldfs::codec::Block;
use worldfs::fs::{Kind, Options, ROOT, WorldFs};
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, Change, MapStore, Note};

/// Every name with (blocks, nodes), and every name's blocks.
type Seen = (BTreeMap<Vec<u8>, (u64, u64)>, BTreeMap<Vec<u8>, BTreeSet<BlockPos>>);

/// Every name of a world with (blocks, nodes), and its blocks, by a scan.
fn scan(world: &Path) -> Seen {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    let (mut counts, mut blocks) = (BTreeMap::new(), BTreeMap::<Vec<u8>, BTreeSet<BlockPos>>::new());
    for (pos, blob) in store.scan_after(None, 10_000_000).unwrap() {
        let Ok(b) = Block::decode(&blob) else { continue };
        for (name, n) in worldfs::kinds::luanti::index::counts_of(&b) {
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
    let Some(worlds) = common::real_sqlite_worlds("the_index_agrees_with_a_full_scan_on_every_real_world") else {
        return;
    };
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
    let node = fs.lookup(worldfs::kinds::luanti::inode::NODE_DIR, OsStr::new("1,2,3")).unwrap().ino;
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
    b.mapping.push(worldfs::codec::MappingEntry { id: 1, name: b"default:diamondblock".to_vec() });
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
