//! Many writers through one live mount (issue 42): the changes of several
//! processes that reach the server within one of its steps go to it
//! together and are applied in that step, each with its own stale check
//! and its own answer: one refused change never refuses another's. The
//! real server (Debian's 5.6.1, headless) is the oracle, as in
//! tests/live_server.rs.

use crate::common;

use common::live::{self, stored_node};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// Writes `name` into the file at argv[1] and closes it; prints "ok" or the
/// errno's name of the failed close. With argv[3] and argv[4]: reads the
/// file first, then says so (creates argv[3]) and waits for argv[4] to
/// exist before writing, so that the game can change the node meanwhile.
const WRITER: &str = r#"
import errno, os, sys, time
path, name = sys.argv[1], sys.argv[2]
f = open(path, "r+")
if len(sys.argv) > 4:
    f.read()
    open(sys.argv[3], "w").close()
    while not os.path.exists(sys.argv[4]):
        time.sleep(0.005)
f.seek(0)
f.truncate()
f.write(name + "\n")
try:
    f.close()
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
    sys.exit(3)
print("ok")
"#;

fn writer(path: &Path, name: &str, wait: Option<(&Path, &Path)>) -> Child {
    let mut c = Command::new("python3");
    c.arg("-c").arg(WRITER).arg(path).arg(name);
    if let Some((ready, go)) = wait {
        c.arg(ready).arg(go);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("python3")
}

/// What a writer printed ("ok" or an errno name), and its stderr.
fn outcome(child: Child) -> (String, String) {
    let out = child.wait_with_output().expect("writer");
    (String::from_utf8_lossy(&out.stdout).trim().to_string(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Stone blocks (the demo's kind) at y = -3, x and z from 1 to `n`, written
/// before the server starts; with a node of each, inside it.
fn add_blocks(world: &Path, n: i16) -> Vec<(BlockPos, [i32; 3])> {
    let store = SqliteStore::open(&world.join("map.sqlite"), false).unwrap();
    let mut out = Vec::new();
    for x in 1..=n {
        let pos = BlockPos::new(x, -3, 1 + x % 2);
        let blob = worldfs::worlds::luanti::demo::demo_block(pos).encode().unwrap();
        store.apply(&[worldfs_store::Change::Put(pos, blob)], &worldfs_store::Note::default()).unwrap();
        let (ox, oy, oz) = pos.origin();
        out.push((pos, [ox + 5, oy + 7, oz + 5]));
    }
    out
}

/// The request files waiting in the spool of `world`.
fn requests_waiting(world: &Path) -> usize {
    std::fs::read_dir(world.join("worldfs-live/requests"))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".req")).count())
        .unwrap_or(0)
}

fn node_file(m: &common::mount::Mounted, [x, y, z]: [i32; 3]) -> std::path::PathBuf {
    m.path(&format!("node/{x},{y},{z}"))
}

/// Seven processes write seven nodes of seven blocks while the server is
/// held (SIGSTOP, under a second): all seven requests wait in the spool at
/// once (before, the mount handed the server one change at a time), and
/// the server applies them in the step after it goes on. The one whose node
/// the game changed after the process read it gets ESTALE, the reason in
/// write-errors; the six others are in the game when their close()
/// returns, read back through the mount, are journaled one entry each, and
/// are in the database after the server's clean shutdown, as is the
/// game's change. Two processes writing two nodes of one block at once
/// both get theirs (the second change starts from the first's outcome).
#[test]
fn writers_of_several_processes_go_together_and_a_stale_one_fails_alone() {
    require_fuse!("writers_of_several_processes_go_together_and_a_stale_one_fails_alone");
    require_minetestserver!("writers_of_several_processes_go_together_and_a_stale_one_fails_alone");
    let world = common::demo_world();
    let nodes = add_blocks(world.path(), 7);
    // No map save while the test runs: the in-game change stays out of
    // the database, so the mod's check is what refuses the stale write.
    let (mut server, m) = live::start(world.path(), "server_map_save_interval = 600");
    let (stale_block, stale) = nodes[6];
    let flags = tempfile::tempdir().unwrap();
    let (ready, go) = (flags.path().join("ready"), flags.path().join("go"));
    let stale_writer = writer(&node_file(&m, stale), "default:mese", Some((&ready, &go)));
    let start = Instant::now();
    while !ready.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "the stale writer did not read its file");
        std::thread::sleep(Duration::from_millis(5));
    }
    let [sx, sy, sz] = stale;
    assert_eq!(
        server.ask(&[format!("set {sx} {sy} {sz} default:dirt")], Duration::from_secs(10)),
        [format!("set {sx} {sy} {sz}")]
    );

    server.signal(libc::SIGSTOP);
    let held = Instant::now();
    let mut writers: Vec<Child> =
        nodes[..6].iter().map(|(_, n)| writer(&node_file(&m, *n), "default:mese", None)).collect();
    std::fs::write(&go, "").unwrap();
    let mut most = 0;
    while most < 7 && held.elapsed() < Duration::from_millis(1500) {
        most = most.max(requests_waiting(world.path()));
        std::thread::sleep(Duration::from_millis(2));
    }
    server.signal(libc::SIGCONT);
    assert_eq!(most, 7, "the changes of seven processes wait in the spool together");

    let (stale_out, stale_err) = outcome(stale_writer);
    assert_eq!(stale_out, "ESTALE", "{stale_err}");
    for (w, (_, n)) in writers.drain(..).zip(&nodes) {
        let (out, err) = outcome(w);
        assert_eq!(out, "ok", "node {n:?}: {err}");
    }
    eprintln!("seven writers answered {:?} after the server was held", held.elapsed());
    let refusals = m.refusals();
    assert!(refusals.contains(&format!("node {sx},{sy},{sz} is now default:dirt")), "{refusals}");
    assert_eq!(refusals.lines().count(), 1, "one refusal, of the stale writer: {refusals}");
    for (_, n) in &nodes[..6] {
        assert!(server.node(*n).starts_with("default:mese "), "{n:?}: {}", server.node(*n));
        let [x, y, z] = *n;
        assert!(m.ok(&format!("cat $MNT/node/{x},{y},{z}")).starts_with("default:mese "), "{n:?} reads back");
    }
    assert!(server.node(stale).starts_with("default:dirt "), "the game keeps its change");

    // Two nodes of one block at once: both applied, both read back.
    let (_, first) = nodes[0];
    let second = [first[0] + 1, first[1], first[2]];
    let pair =
        [writer(&node_file(&m, first), "default:dirt", None), writer(&node_file(&m, second), "default:wood", None)];
    for w in pair {
        let (out, err) = outcome(w);
        assert_eq!(out, "ok", "{err}");
    }
    assert!(server.node(first).starts_with("default:dirt "), "{}", server.node(first));
    assert!(server.node(second).starts_with("default:wood "), "{}", server.node(second));
    let [x, y, z] = first;
    let both = m.ok(&format!("cat $MNT/node/{x},{y},{z} $MNT/node/{},{y},{z}", x + 1));
    assert!(both.starts_with("default:dirt ") && both.contains("\ndefault:wood "), "{both}");

    // The undo journal: an entry for each change the server applied.
    let (code, listing, err) = live::worldfs(&["undo".as_ref(), world.path().as_os_str()]);
    assert_eq!(code, 0, "{err}");
    for (i, (_, [x, y, z])) in nodes[..6].iter().enumerate() {
        let entries = if i == 0 { 2 } else { 1 };
        assert_eq!(listing.matches(&format!("node/{x},{y},{z}\n")).count(), entries, "node {x},{y},{z}: {listing}");
    }
    assert_eq!(listing.matches(&format!("node/{},{},{}\n", second[0], second[1], second[2])).count(), 1);
    assert!(!listing.contains(&format!("node/{sx},{sy},{sz}")), "the refused change is not journaled: {listing}");
    m.unmount();

    let status = server.stop();
    assert!(status.success(), "server exit {status}");
    for (_, n) in &nodes[1..6] {
        assert_eq!(stored_node(world.path(), *n), "default:mese", "{n:?}");
    }
    assert_eq!(stored_node(world.path(), first), "default:dirt");
    assert_eq!(stored_node(world.path(), second), "default:wood");
    assert_eq!(stored_node(world.path(), stale), "default:dirt", "block {stale_block}");
}

/// One node written over and over with two names (contrib/bench-live.sh's
/// edits): every write is applied. Before, the game kept its light value
/// in param1 when default:mese (lit) became default:dirt while the mount
/// showed the param1 it wrote, so every next write of the node was refused
/// as stale.
#[test]
fn alternating_names_of_one_node_are_all_applied() {
    require_fuse!("alternating_names_of_one_node_are_all_applied");
    require_minetestserver!("alternating_names_of_one_node_are_all_applied");
    let (_world, server, m) = live::demo("");
    for name in ["default:mese", "default:dirt", "default:mese", "default:dirt"] {
        m.ok(&format!("echo {name} | tee $MNT/node/5,3,5 >/dev/null"));
        assert!(server.node([5, 3, 5]).starts_with(&format!("{name} ")), "{name}: {}", server.node([5, 3, 5]));
        // What the mount shows is what the game has, but a lit node's
        // light (param1), which the engine keeps to itself.
        let (shown, game) = (m.ok("cat $MNT/node/5,3,5"), server.node([5, 3, 5]));
        if name == "default:dirt" {
            assert_eq!(shown.trim(), game.trim(), "the mount shows what the game has");
        }
    }
    assert_eq!(m.refusals(), "");
}
