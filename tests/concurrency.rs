//! Many readers and writers at once on overlapping blocks, served by the
//! daemon's worker threads: no deadlock, no torn read, every successful
//! write visible, and the final state equal to the writes applied in some
//! order.

mod common;

use common::mount::Mounted;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use worldfs::codec::block::Block;
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, MapStore};

const RUN_FOR: Duration = Duration::from_secs(8);
/// Past this, a thread that has not finished is taken as deadlocked.
const DEADLOCK_AFTER: Duration = Duration::from_secs(90);
const VALUES: [&str; 4] = ["default:mese", "default:goldblock", "default:diamondblock", "default:steelblock"];
const GRASS: &str = "default:dirt_with_grass";
const SNOW: &str = "default:dirt_with_snow";
const WRITERS: i32 = 4;

/// Positions owned by node writer `k`: in two shared blocks.
fn owned(k: i32) -> Vec<[i32; 3]> {
    vec![[10 + k, 5, 10], [10 + k, 5, 11], [16 + k, 5, 10], [16 + k, 5, 11]]
}

/// Write content and fsync (which commits, so errors are seen).
fn put(path: &Path, content: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
    f.write_all(content.as_bytes())?;
    f.sync_all()
}

fn db_blocks(world: &Path) -> BTreeMap<BlockPos, Block> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store
        .scan_after(None, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(p, b)| (p, Block::decode(&b).unwrap_or_else(|e| panic!("block {p} does not decode: {e}"))))
        .collect()
}

fn node_name(blocks: &BTreeMap<BlockPos, Block>, [x, y, z]: [i32; 3]) -> String {
    let pos = BlockPos::of_node(x, y, z).unwrap();
    let b = &blocks[&pos];
    let (ox, oy, oz) = pos.origin();
    let id = b.param0[((z - oz) * 256 + (y - oy) * 16 + (x - ox)) as usize];
    String::from_utf8_lossy(&b.mapping.iter().find(|m| m.id == id).unwrap().name).into_owned()
}

/// Check a `nodes` file read whole: 4096 lines in order, known names.
fn check_nodes(text: &str, pos: BlockPos, allowed: &BTreeSet<String>) -> Result<(), String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != 4096 || !text.ends_with('\n') {
        return Err(format!("torn nodes file of {pos}: {} lines, {} bytes", lines.len(), text.len()));
    }
    let (ox, oy, oz) = pos.origin();
    for (i, line) in lines.iter().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let want = [ox + (i % 16) as i32, oy + (i / 16 % 16) as i32, oz + (i / 256) as i32];
        let got: Vec<i32> = f.iter().take(3).filter_map(|v| v.parse().ok()).collect();
        if f.len() != 6 || got != want || !allowed.contains(f[3]) {
            return Err(format!("bad line {i} in nodes of {pos}: {line:?}"));
        }
    }
    Ok(())
}

#[test]
fn readers_and_writers_at_once() {
    require_fuse!("readers_and_writers_at_once");
    let world = tempfile::tempdir().unwrap();
    worldfs::demo::write_demo(world.path()).unwrap();
    let original = db_blocks(world.path());
    let m = Mounted::new(world.path(), &["threads=4"]);
    let mnt: PathBuf = m.mnt.clone();

    let mut allowed: BTreeSet<String> = original
        .values()
        .flat_map(|b| b.mapping.iter().map(|m| String::from_utf8_lossy(&m.name).into_owned()))
        .collect();
    allowed.extend(VALUES.iter().map(|s| s.to_string()));
    allowed.insert(SNOW.into());
    let allowed = Arc::new(allowed);
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let reads = Arc::new(AtomicUsize::new(0));
    let (done_tx, done_rx) = mpsc::channel::<String>();
    let mut threads = 0;
    let mut spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        let tx = done_tx.clone();
        threads += 1;
        std::thread::spawn(move || {
            f();
            let _ = tx.send(name);
        });
    };

    // Node writers: each owns positions in two shared blocks.
    let last_written: Arc<Mutex<BTreeMap<[i32; 3], String>>> = Arc::default();
    for k in 0..WRITERS {
        let (mnt, stop, last, failures) = (mnt.clone(), stop.clone(), last_written.clone(), failures.clone());
        spawn(
            format!("node writer {k}"),
            Box::new(move || {
                let mut n = k as usize;
                while !stop.load(Ordering::Relaxed) {
                    for p in owned(k) {
                        let v = VALUES[n % VALUES.len()];
                        n += 1;
                        let path = mnt.join(format!("node/{},{},{}", p[0], p[1], p[2]));
                        match put(&path, &format!("{v}\n")) {
                            Ok(()) => {
                                last.lock().unwrap().insert(p, v.to_string());
                            }
                            Err(e) => failures.lock().unwrap().push(format!("node writer {k}: {p:?}: {e}")),
                        }
                    }
                }
            }),
        );
    }
    // sed -i over every names file, toggling a node type.
    let sed_rounds = Arc::new(AtomicUsize::new(0));
    {
        let (mnt, stop, rounds, failures) = (mnt.clone(), stop.clone(), sed_rounds.clone(), failures.clone());
        spawn(
            "sed -i".into(),
            Box::new(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (from, to) =
                        if rounds.load(Ordering::Relaxed) % 2 == 0 { (GRASS, SNOW) } else { (SNOW, GRASS) };
                    let out = Command::new("bash")
                        .arg("-c")
                        .arg(format!("sed -i 's/ {from}$/ {to}/' {}/blocks/*/names", mnt.display()))
                        .output()
                        .unwrap();
                    if out.status.success() {
                        rounds.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failures.lock().unwrap().push(format!("sed: {}", String::from_utf8_lossy(&out.stderr)));
                        return;
                    }
                }
            }),
        );
    }
    // A metadata field writer (the chest's infotext).
    let last_field = Arc::new(Mutex::new(None::<String>));
    {
        let (mnt, stop, last, failures) = (mnt.clone(), stop.clone(), last_field.clone(), failures.clone());
        spawn(
            "field writer".into(),
            Box::new(move || {
                let path = mnt.join("blocks/0,0,0/meta/3,1,3/fields/infotext");
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let v = format!("Chest {i}");
                    match put(&path, &format!("{v}\n")) {
                        Ok(()) => *last.lock().unwrap() = Some(v),
                        Err(e) => failures.lock().unwrap().push(format!("field writer: {e}")),
                    }
                }
            }),
        );
    }
    // Readers.
    for (k, pos) in [BlockPos::new(0, 0, 0), BlockPos::new(1, 0, 0)].into_iter().enumerate() {
        let (mnt, stop, allowed, failures, reads) =
            (mnt.clone(), stop.clone(), allowed.clone(), failures.clone(), reads.clone());
        spawn(
            format!("nodes reader {k}"),
            Box::new(move || {
                while !stop.load(Ordering::Relaxed) {
                    let text = std::fs::read_to_string(mnt.join(format!("blocks/{pos}/nodes")));
                    match text.map_err(|e| e.to_string()).and_then(|t| check_nodes(&t, pos, &allowed)) {
                        Ok(()) => reads.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            failures.lock().unwrap().push(e);
                            return;
                        }
                    };
                }
            }),
        );
    }
    {
        let (mnt, stop, failures, reads) = (mnt.clone(), stop.clone(), failures.clone(), reads.clone());
        spawn(
            "node/ reader".into(),
            Box::new(move || {
                let values: BTreeSet<&str> = VALUES.into_iter().chain(["air"]).collect();
                while !stop.load(Ordering::Relaxed) {
                    for k in 0..WRITERS {
                        for p in owned(k) {
                            let path = mnt.join(format!("node/{},{},{}", p[0], p[1], p[2]));
                            match std::fs::read_to_string(&path) {
                                Ok(t) if t.ends_with('\n') && values.contains(t.split(' ').next().unwrap()) => {
                                    reads.fetch_add(1, Ordering::Relaxed);
                                }
                                other => failures.lock().unwrap().push(format!("node/ read {p:?}: {other:?}")),
                            }
                        }
                    }
                }
            }),
        );
    }
    {
        let (mnt, stop, failures, reads) = (mnt.clone(), stop.clone(), failures.clone(), reads.clone());
        spawn(
            "grep and cat".into(),
            Box::new(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out = Command::new("bash")
                        .arg("-c")
                        .arg(format!(
                            "grep -l default: {m}/blocks/*/names >/dev/null && cat {m}/blocks/*/meta/*/inventory >/dev/null",
                            m = mnt.display()
                        ))
                        .output()
                        .unwrap();
                    if out.status.success() {
                        reads.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failures.lock().unwrap().push(format!("grep/cat: {}", String::from_utf8_lossy(&out.stderr)));
                    }
                }
            }),
        );
    }
    drop(done_tx);

    std::thread::sleep(RUN_FOR);
    stop.store(true, Ordering::Relaxed);
    let deadline = Instant::now() + DEADLOCK_AFTER;
    let mut finished = Vec::new();
    while finished.len() < threads {
        match done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(name) => finished.push(name),
            Err(_) => {
                let log = m.log_text();
                drop(m);
                panic!(
                    "deadlock: only {finished:?} of {threads} threads finished within {DEADLOCK_AFTER:?}\nlog:\n{log}"
                );
            }
        }
    }
    let failures = failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{} failures, first: {:#?}", failures.len(), &failures[..failures.len().min(5)]);
    assert!(reads.load(Ordering::Relaxed) > 0 && sed_rounds.load(Ordering::Relaxed) > 0, "nothing ran");

    // Every successful write is visible through the mount...
    let last_written = last_written.lock().unwrap().clone();
    for (p, v) in &last_written {
        let shown = std::fs::read_to_string(mnt.join(format!("node/{},{},{}", p[0], p[1], p[2]))).unwrap();
        assert!(shown.starts_with(&format!("{v} ")), "node {p:?}: wrote {v}, shows {shown}");
    }
    drop(m);

    // ...and in the database, which is whole.
    let c = rusqlite::Connection::open(world.path().join("map.sqlite")).unwrap();
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let blocks = db_blocks(world.path());
    for (p, v) in &last_written {
        assert_eq!(&node_name(&blocks, *p), v, "node {p:?}");
    }
    // The sed rounds: every grass node (not overwritten) carries the name of
    // the last successful round.
    let rounds = sed_rounds.load(Ordering::Relaxed);
    let want = if rounds % 2 == 1 { SNOW } else { GRASS };
    let writer_nodes: BTreeSet<[i32; 3]> = (0..WRITERS).flat_map(owned).collect();
    let mut grass_nodes = 0;
    for (pos, b) in &original {
        let (ox, oy, oz) = pos.origin();
        for (i, id) in b.param0.iter().enumerate() {
            let p = [ox + (i % 16) as i32, oy + (i / 16 % 16) as i32, oz + (i / 256) as i32];
            let name = &b.mapping.iter().find(|m| m.id == *id).unwrap().name;
            if name == GRASS.as_bytes() && !writer_nodes.contains(&p) {
                grass_nodes += 1;
                assert_eq!(node_name(&blocks, p), want, "node {p:?} after {rounds} sed rounds");
            }
        }
    }
    assert!(grass_nodes > 0);
    let meta = &blocks[&BlockPos::new(0, 0, 0)].metadata;
    let chest = meta.entries.iter().find(|e| e.pos == 3 * 256 + 16 + 3).expect("chest metadata");
    let infotext = chest.vars.iter().find(|v| v.key == b"infotext").unwrap();
    if let Some(v) = last_field.lock().unwrap().clone() {
        assert_eq!(String::from_utf8_lossy(&infotext.value), v);
    }
}
