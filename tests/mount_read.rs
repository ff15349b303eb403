//! Real mounts, real tools: cat, grep, find, cp -r, ls -l, python3 against
//! mounted copies of the demo world and of the real worlds.

use crate::common;

use common::mount::Mounted;
use std::collections::BTreeSet;
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, Change, MapStore};

/// Every (block, blob) of a world, via the codec, for expected values.
fn all_blocks(world: &std::path::Path) -> Vec<(BlockPos, Vec<u8>)> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.scan_after(None, usize::MAX >> 1).unwrap()
}

#[test]
fn demo_world_with_shell_tools() {
    require_fuse!("demo_world_with_shell_tools");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let ls = m.ok("ls $MNT");
    assert_eq!(ls, "README\nauth\nblocks\nfind\nmap\nmap_meta.txt\nmod_storage\nnames\nnode\nplayers\nworld.mt\n");
    assert_eq!(m.ok("ls $MNT/blocks | wc -l").trim(), "18");
    assert_eq!(m.ok("grep -l default:chest $MNT/blocks/*/names"), format!("{}/blocks/0,0,0/names\n", m.mnt.display()));
    let inv = m.ok("cat $MNT/blocks/*/meta/*/inventory");
    assert!(inv.contains("Item default:apple 12\n") && inv.contains("Item default:coal_lump 5\n"), "{inv}");
    assert_eq!(m.ok("find $MNT -name inventory | wc -l").trim(), "3");
    assert_eq!(m.ok("cat $MNT/node/3,1,3"), "default:chest 0 0\n");
    assert_eq!(m.ok("cat $MNT/blocks/0,0,0/meta/3,2,8/fields/infotext"), "\"Welcome to worldfs!\"\n");
    assert!(m.ok("cat $MNT/README").contains("MNT/blocks/X,Y,Z/"));
    assert_eq!(m.ok("cat $MNT/blocks/0,0,0/timers"), "7 1 3 1 0\n");
    // Sizes in stat are exact: ls -l agrees with wc -c for every file.
    let check = m.ok(
        "cd $MNT/blocks/0,0,0 && for f in info names nodes param0 param1 param2 timers objects raw meta/3,1,3/inventory; do \
         [ \"$(stat -c %s $f)\" = \"$(wc -c < $f)\" ] || echo \"size mismatch $f\"; done; ls -l $MNT/blocks/0,0,0 > /dev/null",
    );
    assert_eq!(check, "");
    // Writing is refused on a read-only mount.
    let (code, _, err) = m.sh("echo x > $MNT/blocks/0,0,0/info");
    assert_ne!(code, 0);
    assert!(err.contains("Read-only file system"), "{err}");
    // Missing and non-canonical names do not exist.
    assert_ne!(m.sh("stat $MNT/blocks/5,5,5").0, 0);
    assert_ne!(m.sh("stat $MNT/blocks/00,0,0").0, 0);
    assert_ne!(m.sh("stat $MNT/node/100,100,100").0, 0);
}

#[test]
fn cp_r_gives_the_same_files() {
    require_fuse!("cp_r_gives_the_same_files");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let out = tempfile::tempdir().unwrap();
    m.ok(&format!("cp -r $MNT/blocks/0,0,0 {0}/copy && diff -r $MNT/blocks/0,0,0 {0}/copy", out.path().display()));
    let blob = std::fs::read(out.path().join("copy/raw")).unwrap();
    let b = Block::decode(&blob).unwrap();
    assert_eq!(std::fs::read(out.path().join("copy/names")).unwrap(), worldfs::view::render_names(&b));
}

#[test]
fn python_reads_nodes_and_binary_params_consistently() {
    require_fuse!("python_reads_nodes_and_binary_params_consistently");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let script = r#"
import os, struct, sys
d = os.path.join(os.environ['MNT'], 'blocks', '0,0,0')
names = dict(l.split(' ', 1) for l in open(d + '/names').read().splitlines())
p0 = struct.unpack('>4096H', open(d + '/param0', 'rb').read())
p1 = open(d + '/param1', 'rb').read()
p2 = open(d + '/param2', 'rb').read()
lines = open(d + '/nodes').read().splitlines()
assert len(lines) == 4096
for i, line in enumerate(lines):
    x, y, z, name, a, b = line.split(' ')
    assert (int(x), int(y), int(z)) == (i % 16, i // 16 % 16, i // 256), line
    assert names[str(p0[i])] == name and int(a) == p1[i] and int(b) == p2[i], line
print(sum(1 for l in lines if ' default:cobble ' in l))
"#;
    let n: usize = m.ok(&format!("python3 -c \"{}\"", script.replace('"', "\\\""))).trim().parse().unwrap();
    assert!(n > 50, "{n} cobble nodes");
}

#[test]
fn a_corrupt_block_shows_raw_and_error_and_check_reports_it() {
    require_fuse!("a_corrupt_block_shows_raw_and_error_and_check_reports_it");
    let world = common::demo_world();
    let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
    let p = BlockPos::new(1, -1, 0);
    let blob = store.get(p).unwrap().unwrap();
    store.apply(&[Change::Put(p, blob[..blob.len() / 2].to_vec())], &worldfs_store::Note::default()).unwrap();
    drop(store);
    let m = Mounted::new(world.path(), &["ro"]);
    assert_eq!(m.ok("ls $MNT/blocks/1,-1,0"), "error\nraw\n");
    let err = m.ok("cat $MNT/blocks/1,-1,0/error");
    assert!(err.starts_with("block 1,-1,0 cannot be decoded: bad zstd frame"), "{err}");
    assert_eq!(m.ok("wc -c < $MNT/blocks/1,-1,0/raw").trim(), (blob.len() / 2).to_string());
    assert_eq!(m.ok("ls $MNT/blocks | wc -l").trim(), "18");
    assert!(m.ok("cat $MNT/blocks/0,-1,0/info").contains("version = 29"));
    drop(m);
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_worldfs")).arg("check").arg(world.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("corrupt: 1\n  1,-1,0: bad zstd frame"), "{text}");
}

#[test]
fn real_worlds_through_the_mount() {
    require_fuse!("real_worlds_through_the_mount");
    let worlds = common::real_sqlite_worlds("real_worlds_through_the_mount");
    for src in worlds {
        let world = common::copy_world(&src);
        let blocks = all_blocks(world.path());
        let mut chest_blocks = BTreeSet::new();
        let mut inventories = 0;
        let mut inventory_bytes = 0;
        for (pos, blob) in &blocks {
            let b = Block::decode(blob).unwrap();
            if b.mapping.iter().any(|m| m.name == b"default:chest") {
                chest_blocks.insert(format!("blocks/{pos}/names"));
            }
            inventories += b.metadata.entries.len();
            inventory_bytes += b.metadata.entries.iter().map(|e| e.inventory.len()).sum::<usize>();
        }
        let m = Mounted::new(world.path(), &["ro"]);
        let listed: BTreeSet<String> = m.ok("ls $MNT/blocks").lines().map(String::from).collect();
        let expect: BTreeSet<String> = blocks.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(listed, expect, "{}", src.display());
        let (_, grep, _) = m.sh("cd $MNT && grep -l default:chest blocks/*/names");
        let grep: BTreeSet<String> = grep.lines().map(String::from).collect();
        assert_eq!(grep, chest_blocks, "{}", src.display());
        let found: usize = m.ok("find $MNT/blocks -name inventory | wc -l").trim().parse().unwrap();
        assert_eq!(found, inventories, "{}", src.display());
        let cat: usize = m.ok("cat $MNT/blocks/*/meta/*/inventory | wc -c").trim().parse().unwrap();
        assert_eq!(cat, inventory_bytes, "{}", src.display());
        // The world's own text files are there, byte for byte.
        m.ok("cmp $MNT/world.mt $WORLD/world.mt && cmp $MNT/env_meta.txt $WORLD/env_meta.txt");
        eprintln!("{}: {} blocks, {} inventories via the mount", src.display(), blocks.len(), inventories);
    }
}

fn is_mounted(path: &std::path::Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let p = path.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(p))
}

/// Processes whose command line mentions `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(needle) {
            v.push(pid);
        }
    }
    v
}

#[test]
fn daemon_mode_and_signals_unmount_cleanly() {
    require_fuse!("daemon_mode_and_signals_unmount_cleanly");
    let world = common::demo_world();
    let mnt = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_worldfs");
    let canonical = std::fs::canonicalize(mnt.path()).unwrap();
    // Without -f the command returns once the mount is ready.
    let st = std::process::Command::new(bin).arg("mount").arg(world.path()).arg(mnt.path()).status().unwrap();
    assert!(st.success());
    assert!(mnt.path().join("README").exists() && is_mounted(&canonical));
    let needle = canonical.to_str().unwrap().to_string();
    assert_eq!(processes_with(&needle).len(), 1, "one daemon");
    let tool = if common::is_root() { vec!["umount"] } else { vec!["fusermount3", "-u"] };
    let st = std::process::Command::new(tool[0]).args(&tool[1..]).arg(mnt.path()).status().unwrap();
    assert!(st.success());
    common::wait_until("the daemon exits after unmount", || processes_with(&needle).is_empty());
    // In the foreground, SIGTERM and SIGINT unmount and exit with success.
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut child = std::process::Command::new(bin)
            .args(["mount", "-f", "-o", "ro"])
            .arg(world.path())
            .arg(mnt.path())
            .spawn()
            .unwrap();
        common::wait_until("mounted", || mnt.path().join("README").exists());
        common::kill(child.id() as i32, sig);
        let st = child.wait().unwrap();
        assert!(st.success(), "signal {sig}: {st:?}");
        assert!(!is_mounted(&canonical), "signal {sig}: still mounted");
    }
    // A world that cannot be opened is reported before detaching.
    let not_a_world = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin).arg("mount").arg(not_a_world.path()).arg(mnt.path()).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no map.sqlite"));
}

/// `umount; mount` at once on the same mountpoint (a script, a service
/// restart): the old daemon, exiting, must not unmount the new mount
/// (fuser's own unmount-on-drop would: it takes the dead connection for a
/// live one and unmounts the path).
#[test]
fn a_new_mount_survives_the_old_daemons_exit() {
    require_fuse!("a_new_mount_survives_the_old_daemons_exit");
    let world = common::demo_world();
    let mnt = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_worldfs");
    let canonical = std::fs::canonicalize(mnt.path()).unwrap();
    let needle = canonical.to_str().unwrap().to_string();
    let tool = if common::is_root() { vec!["umount"] } else { vec!["fusermount3", "-u"] };
    let mount = || {
        let st = std::process::Command::new(bin).args(["mount", "-o", "ro"]).arg(world.path()).arg(mnt.path()).status();
        assert!(st.unwrap().success());
    };
    for round in 0..3 {
        mount();
        let st = std::process::Command::new(tool[0]).args(&tool[1..]).arg(mnt.path()).status().unwrap();
        assert!(st.success());
        mount();
        // The old daemon notices its unmount within 200 ms and exits.
        common::wait_until("one daemon left", || processes_with(&needle).len() == 1);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(is_mounted(&canonical), "round {round}: the new mount is gone");
        assert!(mnt.path().join("blocks").is_dir(), "round {round}");
        let st = std::process::Command::new(tool[0]).args(&tool[1..]).arg(mnt.path()).status().unwrap();
        assert!(st.success());
        common::wait_until("the daemon exits", || processes_with(&needle).is_empty());
    }
}

/// mmap readers get the same bytes as read(2), on read-only mounts (page
/// cache) and writable ones (direct I/O, with mmap allowed).
#[test]
fn mmap_reads_match_read() {
    require_fuse!("mmap_reads_match_read");
    let world = common::demo_world();
    for opts in [&["ro"][..], &[][..]] {
        let m = Mounted::new(world.path(), opts);
        let out = m.ok("python3 -c \"
import mmap, sys
p = sys.argv[1]
with open(p, 'rb') as f:
    data = f.read()
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert mm[:] == data, 'mmap differs from read'
print(len(data))
\" $MNT/blocks/0,0,0/nodes");
        assert!(out.trim().parse::<usize>().unwrap() > 4096 * 10, "{opts:?}: {out}");
    }
}

/// A change made by another process (a running server) shows through the
/// mount within the TTL, even when the file keeps its size: the kernel's
/// cached pages of it are dropped. Read-only mounts keep pages across opens
/// (no OPEN round trip), writable ones read directly.
#[test]
fn outside_changes_show_within_the_ttl() {
    require_fuse!("outside_changes_show_within_the_ttl");
    for opts in [&["ro"][..], &["rw"][..]] {
        let world = common::demo_world();
        let m = Mounted::new(world.path(), opts);
        let param1 = |m: &Mounted| m.ok("od -An -tu1 -N4 $MNT/blocks/0,0,0/param1 | tr -s ' '");
        let before = param1(&m);
        let names = m.ok("cat $MNT/blocks/0,0,0/names");
        // Read twice, through the page cache on the read-only mount.
        assert_eq!(param1(&m), before, "{opts:?}");
        let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
        let p = BlockPos::new(0, 0, 0);
        let mut b = Block::decode(&store.get(p).unwrap().unwrap()).unwrap();
        for v in &mut b.param1[..4] {
            *v = v.wrapping_add(1);
        }
        store.apply(&[Change::Put(p, b.encode().unwrap())], &worldfs_store::Note::default()).unwrap();
        drop(store);
        let expected: String = b.param1[..4].iter().map(|v| format!(" {v}")).collect::<String>() + "\n";
        assert_ne!(expected, before);
        // At once the old content may still be shown; after the TTL (1 s,
        // and on read-only mounts the next poll of the map's change
        // counter) the new one must be, in every file of the block.
        common::wait_until("the new param1", || param1(&m) == expected);
        assert_eq!(m.ok("cat $MNT/blocks/0,0,0/names"), names, "{opts:?}");
        let size = m.ok("stat -c %s $MNT/blocks/0,0,0/param1");
        assert_eq!(size.trim(), "4096", "{opts:?}");
        // A change of size: read-only mounts let the kernel keep a block
        // file's size until the map changes; a new node name must show.
        let store = SqliteStore::open(&world.path().join("map.sqlite"), false).unwrap();
        let id = b.mapping.iter().map(|m| m.id).max().unwrap() + 1;
        b.mapping.push(worldfs_codec::luanti::MappingEntry { id, name: b"default:mese".to_vec() });
        b.param0[0] = id;
        store.apply(&[Change::Put(p, b.encode().unwrap())], &worldfs_store::Note::default()).unwrap();
        drop(store);
        common::wait_until("names with default:mese", || m.ok("cat $MNT/blocks/0,0,0/names").contains("default:mese"));
        let size: usize = m.ok("stat -c %s $MNT/blocks/0,0,0/names").trim().parse().unwrap();
        assert_eq!(size, m.ok("cat $MNT/blocks/0,0,0/names").len(), "{opts:?}");
    }
}

/// The daemon's spinner threads (src/sys/awake.rs): name, state letter and CPU
/// ticks (user + system) of each.
fn spinners(pid: u32) -> Vec<(String, char, u64)> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim().to_string();
        if !comm.starts_with("worldfs-spin") {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        v.push((comm, f[0].chars().next().unwrap(), ticks));
    }
    v
}

/// Spinners keep CPUs awake only while requests flow: a walk starts them,
/// they sleep (and use no CPU) once it is over, and `-o nospin` has none.
#[test]
fn spinners_only_while_requests_flow() {
    require_fuse!("spinners_only_while_requests_flow");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    m.ok("for i in 1 2 3; do find \"$MNT\"/blocks -type f -exec cat {} + >/dev/null; done");
    assert!(!spinners(m.pid()).is_empty(), "no spinner thread after a walk");
    // Once requests stop, every spinner sleeps...
    common::wait_until("spinners asleep", || spinners(m.pid()).iter().all(|s| s.1 == 'S'));
    // ...and stays asleep: no CPU time over a second (one tick of slack for
    // the periodic wake-up that bounds a lost race).
    let before: u64 = spinners(m.pid()).iter().map(|s| s.2).sum();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let after: u64 = spinners(m.pid()).iter().map(|s| s.2).sum();
    assert!(after <= before + 1, "idle spinners used CPU: {before} -> {after} ticks");
    m.unmount();

    let m = Mounted::new(world.path(), &["nospin"]);
    m.ok("cat \"$MNT\"/blocks/*/names >/dev/null");
    assert!(spinners(m.pid()).is_empty(), "-o nospin still spins");
    m.unmount();
}
