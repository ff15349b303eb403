//! Many readers and writers at once on overlapping blocks, served by the
//! daemon's worker threads (issue 4, "Nothing lost"): no deadlock, no torn
//! read, every successful write visible at once, and the final state equal
//! to the writes applied in some order.
//!
//! The world is a copy of the smallest real world (tests/data/luanti, or
//! ../shared's when that is there). Twenty blocks that share a node type A
//! are picked, and for about twelve seconds:
//!
//! * `sed -i` renames A to B and back in the `names` of all twenty blocks,
//!   round after round (one process per round);
//! * three python processes write `node/X,Y,Z` files; each owns two
//!   positions in each of eight shared blocks and writes there a sequence of
//!   values that names the writer and the step (`NAME WRITER STEP/4`), reads
//!   each value back at once after a successful close, and reports it;
//! * a python process writes two fields of a metadata node the same way;
//! * readers check every read: `nodes` has its 4096 lines in order, names
//!   only of its block, and never both A and B (one version of the block);
//!   `names` has unique ids; a `node/` file holds the original value or one
//!   its owner wrote, never older than what the same reader saw before; a
//!   field likewise; a shell loop runs grep, cat and ls -R;
//!
//! then the writers stop, a deadlock fails the test after a minute (with the
//! daemon's thread stacks), and at the end: each position holds its owner's
//! last successful write, through the mount and in the database; every A
//! node carries the name of the last sed round; the fields hold their last
//! values; every block decodes, blocks nobody wrote are unchanged, and
//! `PRAGMA integrity_check` is ok for the map and the undo journal.
//!
//! `WORLDFS_STRESS_OPTIONS=ttl=0` (or `group_ms=50`, ...) adds mount options.

use crate::common;

use common::mount::Mounted;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};
use worldfs_codec::luanti::block::{Block, index_xyz, node_index};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// How long the writers run.
const RUN_FOR: Duration = Duration::from_secs(12);
/// After the writers' time is up, a reader or writer still running after
/// this is taken as a deadlock.
const DEADLOCK_AFTER: Duration = Duration::from_secs(60);
/// Node types the node writers write (names no world has).
const VALUES: [&str; 4] = ["worldfs_stress:a", "worldfs_stress:b", "worldfs_stress:c", "worldfs_stress:d"];
/// What sed renames A to, and back.
const RENAMED: &str = "worldfs_stress:renamed";
const BLOCKS: usize = 20;
/// Blocks holding node writers' positions (the first of the twenty).
const NODE_BLOCKS: usize = 8;
const NODE_WRITERS: usize = 3;
/// The metadata node the field writer writes, in the first block.
const META_LOCAL: [usize; 3] = [14, 14, 2];

/// Positions owned by node writer `k`: two in each node block.
fn owned(blocks: &[BlockPos], k: usize) -> Vec<[i32; 3]> {
    let mut v = Vec::new();
    for pos in &blocks[..NODE_BLOCKS] {
        for j in 0..2 {
            v.push(world_coords(*pos, [1 + 3 * k + j, 9, 9]));
        }
    }
    v
}

/// Positions that keep one node of each of VALUES in each node block, so
/// that their content ids never change (see `anchor_values`).
fn anchors(pos: BlockPos) -> Vec<[i32; 3]> {
    (0..VALUES.len()).map(|i| world_coords(pos, [i, 15, 15])).collect()
}

fn world_coords(pos: BlockPos, [x, y, z]: [usize; 3]) -> [i32; 3] {
    let (ox, oy, oz) = pos.origin();
    [ox + x as i32, oy + y as i32, oz + z as i32]
}

fn coords_name(p: [i32; 3]) -> String {
    format!("{},{},{}", p[0], p[1], p[2])
}

/// The value node writer `k` writes at its `i`-th step at a position.
fn step_value(k: usize, i: usize) -> String {
    format!("{} {k} {}", VALUES[i % 4], i / 4)
}

/// The step a node/ value was written at (by writer `k`), if it is one.
fn value_step(k: usize, text: &str) -> Option<usize> {
    let f: Vec<&str> = text.strip_suffix('\n')?.split(' ').collect();
    let [name, p1, p2] = f[..] else { return None };
    let n = VALUES.iter().position(|v| *v == name)?;
    (p1.parse::<usize>().ok()? == k).then_some(())?;
    Some(p2.parse::<usize>().ok()? * 4 + n)
}

fn decode_all(world: &Path) -> BTreeMap<BlockPos, Result<Block, String>> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store
        .scan_after(None, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(p, b)| (p, Block::decode(&b).map_err(|e| e.to_string())))
        .collect()
}

fn name_at(b: &Block, i: usize) -> String {
    String::from_utf8_lossy(b.name_of(b.param0[i]).unwrap_or(b"?")).into_owned()
}

fn node_text(b: &Block, i: usize) -> String {
    format!("{} {} {}\n", name_at(b, i), b.param1[i], b.param2[i])
}

/// The world to stress: a copy of the smallest real sqlite world (one of
/// the repository's, or ../shared's when that is there).
fn world_copy() -> (tempfile::TempDir, String) {
    let real = common::real_sqlite_worlds("the real world of concurrency");
    let w = real.iter().min_by_key(|w| std::fs::metadata(w.join("map.sqlite")).map(|m| m.len()).unwrap_or(0)).unwrap();
    (common::copy_world(w), w.file_name().unwrap().to_string_lossy().into_owned())
}

/// The node type to rename (the one in most blocks, not air or ignore) and twenty
/// decodable blocks that use it (or as many as there are).
fn pick_blocks(blocks: &BTreeMap<BlockPos, Result<Block, String>>) -> (String, Vec<BlockPos>) {
    let mut used_in: BTreeMap<String, Vec<BlockPos>> = BTreeMap::new();
    for (pos, b) in blocks {
        // Blocks whose names are all shown unquoted (the checks compare
        // names as stored).
        let Ok(b) = b else { continue };
        if !b.mapping.iter().all(|m| m.name.iter().all(|c| c.is_ascii_graphic() && *c != b'"' && *c != b'\\')) {
            continue;
        }
        let ids: BTreeSet<u16> = b.param0.iter().copied().collect();
        for id in ids {
            let name = String::from_utf8_lossy(b.name_of(id).unwrap_or(b"")).into_owned();
            // sed patterns: keep to names without regex or quoting trouble
            if name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b':' || c == b'_')
                && !["air", "ignore"].contains(&name.as_str())
            {
                used_in.entry(name).or_default().push(*pos);
            }
        }
    }
    let (name, mut at) = used_in.into_iter().max_by_key(|(_, v)| v.len()).expect("a node type");
    // (the demo world has fewer)
    assert!(at.len() >= NODE_BLOCKS, "only {} blocks use {name}", at.len());
    // Spread the picks over the world rather than taking one corner.
    let n = at.len().min(BLOCKS);
    let step = at.len() / n;
    at = (0..n).map(|i| at[i * step]).collect();
    (name, at)
}

/// The daemon serving `mnt` (for its stacks when it hangs).
fn daemon_pid(mnt: &Path) -> Option<u32> {
    let want = mnt.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&c| c == 0).collect();
        (args.first().is_some_and(|a| a.ends_with(b"worldfs")) && args.contains(&want)).then_some(pid)
    })
}

/// What each of the daemon's threads is waiting in (kernel stacks, and
/// user stacks when gdb is installed).
fn daemon_stacks(pid: u32) -> String {
    let mut out = String::new();
    if common::mount::which("gdb").is_some() {
        let gdb = Command::new("timeout")
            .args(["20", "gdb", "-batch", "-p", &pid.to_string(), "-ex", "thread apply all bt"])
            .output();
        if let Ok(g) = gdb {
            out += &String::from_utf8_lossy(&g.stdout);
        }
    }
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let stack = std::fs::read_to_string(t.path().join("stack")).unwrap_or_default();
        out += &format!("--- thread {} {}{}\n", t.file_name().to_string_lossy(), comm, stack);
    }
    out
}

const NODE_WRITER: &str = r#"
import os, sys, time
mnt, k, dur, names = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[5].split(',')
pos = sys.argv[4].split(';')
end = time.monotonic() + dur
step = {p: 0 for p in pos}
while time.monotonic() < end:
    for p in pos:
        i = step[p]
        if i >= 1000:
            continue
        step[p] = i + 1
        v = "%s %d %d\n" % (names[i % 4], k, i // 4)
        path = mnt + "/node/" + p
        try:
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, v.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            print("ERR", p, i, e, flush=True)
            continue
        print("OK", p, i, flush=True)
        with open(path) as f:
            got = f.read()
        if got != v:
            print("STALE", p, i, repr(v), repr(got), flush=True)
"#;

const FIELD_WRITER: &str = r#"
import os, sys, time
meta, dur = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + dur
i = 0
while time.monotonic() < end:
    i += 1
    for key in ["stress_a"] + (["stress_b"] if i % 3 == 0 else []):
        v = "%s%d\n" % (key[-1], i)
        path = meta + "/fields/" + key
        try:
            with open(path, "w") as f:
                f.write(v)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            print("ERR", key, i, e, flush=True)
            continue
        print("OK", key, i, flush=True)
        with open(path) as f:
            got = f.read()
        if got != v:
            print("STALE", key, i, repr(v), repr(got), flush=True)
"#;

#[derive(Default)]
struct Shared {
    failures: Mutex<Vec<String>>,
    reads: AtomicUsize,
}

impl Shared {
    fn fail(&self, what: String) {
        let mut f = self.failures.lock().unwrap();
        if f.len() < 50 {
            f.push(what);
        }
    }
}

/// Check a `nodes` file read whole: 4096 lines in order, only names the
/// block may have, and one version of the block (never both A and B).
fn check_nodes(text: &str, pos: BlockPos, allowed: &BTreeSet<String>, a: &str) -> Result<(), String> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != 4096 || !text.ends_with('\n') {
        return Err(format!("torn nodes file of {pos}: {} lines, {} bytes", lines.len(), text.len()));
    }
    let (mut has_a, mut has_b) = (false, false);
    for (i, line) in lines.iter().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let (x, y, z) = index_xyz(i);
        let want = world_coords(pos, [x, y, z]);
        let got: Vec<i32> = f.iter().take(3).filter_map(|v| v.parse().ok()).collect();
        if f.len() != 6 || got != want || !allowed.contains(f[3]) {
            return Err(format!("bad line {i} in nodes of {pos}: {line:?}"));
        }
        has_a |= f[3] == a;
        has_b |= f[3] == RENAMED;
    }
    if has_a && has_b {
        return Err(format!("nodes of {pos} mixes two versions of the block: both {a} and {RENAMED}"));
    }
    Ok(())
}

fn check_names(text: &str, pos: BlockPos, allowed: &BTreeSet<String>) -> Result<(), String> {
    let mut ids = BTreeSet::new();
    for line in text.lines() {
        let ok = line
            .split_once(' ')
            .is_some_and(|(id, name)| id.parse::<u16>().is_ok_and(|id| ids.insert(id)) && allowed.contains(name));
        if !ok {
            return Err(format!("bad line in names of {pos}: {line:?} in {text:?}"));
        }
    }
    if !text.ends_with('\n') || ids.is_empty() {
        return Err(format!("torn names of {pos}: {text:?}"));
    }
    Ok(())
}

/// Run a process to the end, passing its stdout lines to `each`.
fn run_reporting(mut cmd: Command, each: &mut dyn FnMut(&str)) -> Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&out.stdout).lines().for_each(&mut *each);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{:?}: {}: {}", cmd.get_program(), out.status, String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn readers_and_writers_at_once() {
    require_fuse!("readers_and_writers_at_once");
    if common::mount::which("python3").is_none() {
        common::skip("readers_and_writers_at_once", "python3", "python3 is not installed");
        return;
    }
    let started = Instant::now();
    let (world, world_name) = world_copy();
    let original = decode_all(world.path());
    let (a, blocks) = pick_blocks(&original);
    eprintln!("world {world_name}: {} blocks; renaming {a} in {blocks:?}", original.len());
    let dec = |p: &BlockPos| original[p].as_ref().unwrap();

    // WORLDFS_STRESS_OPTIONS adds mount options, e.g. "ttl=0" (every open
    // re-checks the store) or "group_ms=50".
    let extra = std::env::var("WORLDFS_STRESS_OPTIONS").unwrap_or_default();
    let mut options = vec!["threads=4"];
    options.extend(extra.split(',').filter(|o| !o.is_empty()));
    let m = Mounted::new(world.path(), &options);
    let mnt: PathBuf = m.mnt.clone();

    // Setup: one node of each value in each node block (their ids then stay
    // put, so that a names file read before a node write still names the
    // same ids when sed writes it back), and a metadata node for the fields.
    for pos in &blocks[..NODE_BLOCKS] {
        for (p, v) in anchors(*pos).iter().zip(VALUES) {
            std::fs::write(mnt.join(format!("node/{}", coords_name(*p))), format!("{v}\n")).unwrap();
        }
    }
    let meta_coords = coords_name(world_coords(blocks[0], META_LOCAL));
    let meta_dir = mnt.join(format!("blocks/{}/meta/{meta_coords}", blocks[0]));
    if !meta_dir.exists() {
        std::fs::create_dir(&meta_dir).unwrap();
    }
    std::fs::write(meta_dir.join("fields/stress_a"), "a0\n").unwrap();
    std::fs::write(meta_dir.join("fields/stress_b"), "b0\n").unwrap();
    let metas: Vec<PathBuf> = blocks
        .iter()
        .flat_map(|pos| {
            dec(pos).metadata.entries.iter().map(move |e| {
                let (x, y, z) = index_xyz(e.pos as usize);
                let c = coords_name(world_coords(*pos, [x, y, z]));
                format!("blocks/{pos}/meta/{c}/inventory")
            })
        })
        .map(|rel| mnt.join(rel))
        .collect();

    // The names each block may show: its own, the values, and B.
    let allowed: BTreeMap<BlockPos, BTreeSet<String>> = blocks
        .iter()
        .map(|p| {
            let mut s: BTreeSet<String> =
                dec(p).mapping.iter().map(|e| String::from_utf8_lossy(&e.name).into_owned()).collect();
            s.extend(VALUES.iter().chain(&[RENAMED]).map(|v| v.to_string()));
            (*p, s)
        })
        .collect();
    let originals: BTreeMap<[i32; 3], String> = (0..NODE_WRITERS)
        .flat_map(|k| owned(&blocks, k))
        .map(|p| {
            let pos = BlockPos::of_node(p[0], p[1], p[2]).unwrap();
            let (ox, oy, oz) = pos.origin();
            let i = node_index((p[0] - ox) as usize, (p[1] - oy) as usize, (p[2] - oz) as usize);
            (p, node_text(dec(&pos), i))
        })
        .collect();

    let shared = Arc::new(Shared::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<String>();
    let mut running = BTreeSet::new();
    let mut spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        let tx = done_tx.clone();
        running.insert(name.clone());
        std::thread::spawn(move || {
            f();
            let _ = tx.send(name);
        });
    };
    let secs = RUN_FOR.as_secs_f64().to_string();

    // Node writers: python processes.
    let last_node: Arc<Mutex<BTreeMap<[i32; 3], usize>>> = Arc::default();
    for k in 0..NODE_WRITERS {
        let positions = owned(&blocks, k);
        let (mnt, secs, shared, last) = (mnt.clone(), secs.clone(), shared.clone(), last_node.clone());
        spawn(
            format!("node writer {k}"),
            Box::new(move || {
                let arg: Vec<String> = positions.iter().map(|p| coords_name(*p)).collect();
                let by_name: BTreeMap<String, [i32; 3]> = positions.iter().map(|p| (coords_name(*p), *p)).collect();
                let mut cmd = Command::new("python3");
                cmd.args(["-c", NODE_WRITER]).arg(&mnt).arg(k.to_string()).arg(&secs).arg(arg.join(";"));
                cmd.arg(VALUES.join(","));
                let r = run_reporting(cmd, &mut |line| {
                    let f: Vec<&str> = line.splitn(3, ' ').collect();
                    match f[..] {
                        ["OK", p, i] => {
                            last.lock().unwrap().insert(by_name[p], i.parse().unwrap());
                        }
                        _ => shared.fail(format!("node writer {k}: {line}")),
                    }
                });
                if let Err(e) = r {
                    shared.fail(format!("node writer {k}: {e}"));
                }
            }),
        );
    }

    // The field writer.
    let last_field: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    {
        let (meta_dir, secs, shared, last) = (meta_dir.clone(), secs.clone(), shared.clone(), last_field.clone());
        spawn(
            "field writer".into(),
            Box::new(move || {
                let mut cmd = Command::new("python3");
                cmd.args(["-c", FIELD_WRITER]).arg(&meta_dir).arg(&secs);
                let r = run_reporting(cmd, &mut |line| {
                    let f: Vec<&str> = line.splitn(3, ' ').collect();
                    match f[..] {
                        ["OK", key, i] => {
                            last.lock().unwrap().insert(key.to_string(), i.parse().unwrap());
                        }
                        _ => shared.fail(format!("field writer: {line}")),
                    }
                });
                if let Err(e) = r {
                    shared.fail(format!("field writer: {e}"));
                }
            }),
        );
    }

    // sed -i, A -> B and back, over the names of all twenty blocks.
    let sed_rounds = Arc::new(AtomicUsize::new(0));
    {
        let names: Vec<String> = blocks.iter().map(|p| format!("blocks/{p}/names")).collect();
        let script = format!(
            "end=$((SECONDS+{})); r=0
             while [ $SECONDS -lt $end ]; do
               if [ $((r % 2)) = 0 ]; then from='{a}'; to='{b}'; else from='{b}'; to='{a}'; fi
               sed -i \"s/^\\([0-9]*\\) $from\\$/\\1 $to/\" {} || exit 1
               r=$((r + 1)); echo ROUND $r
             done",
            RUN_FOR.as_secs(),
            names.join(" "),
            a = a,
            b = RENAMED,
        );
        let (mnt, shared, rounds) = (mnt.clone(), shared.clone(), sed_rounds.clone());
        spawn(
            "sed -i".into(),
            Box::new(move || {
                let mut cmd = Command::new("bash");
                cmd.arg("-c").arg(script).current_dir(&mnt);
                let r = run_reporting(cmd, &mut |line| {
                    if let Some(n) = line.strip_prefix("ROUND ") {
                        rounds.store(n.parse().unwrap(), Ordering::SeqCst);
                    }
                });
                if let Err(e) = r {
                    shared.fail(format!("sed -i (after {} rounds): {e}", rounds.load(Ordering::SeqCst)));
                }
            }),
        );
    }

    // Readers of nodes and names.
    for r in 0..2 {
        let (mnt, stop, shared, allowed, a, blocks) =
            (mnt.clone(), stop.clone(), shared.clone(), allowed.clone(), a.clone(), blocks.clone());
        spawn(
            format!("nodes reader {r}"),
            Box::new(move || {
                while !stop.load(Ordering::SeqCst) {
                    for pos in &blocks {
                        let file = if r == 0 { "nodes" } else { "names" };
                        let text = std::fs::read_to_string(mnt.join(format!("blocks/{pos}/{file}")));
                        let checked = text.map_err(|e| format!("read {file} of {pos}: {e}")).and_then(|t| {
                            if r == 0 {
                                check_nodes(&t, *pos, &allowed[pos], &a)
                            } else {
                                check_names(&t, *pos, &allowed[pos])
                            }
                        });
                        match checked {
                            Ok(()) => shared.reads.fetch_add(1, Ordering::Relaxed),
                            Err(e) => return shared.fail(e),
                        };
                    }
                }
            }),
        );
    }

    // Reader of node/ files and fields: values their writers wrote, never
    // older than what this reader saw before.
    {
        let (mnt, stop, shared, originals, meta_dir, a) =
            (mnt.clone(), stop.clone(), shared.clone(), originals.clone(), meta_dir.clone(), a.clone());
        let owner: BTreeMap<[i32; 3], usize> =
            (0..NODE_WRITERS).flat_map(|k| owned(&blocks, k).into_iter().map(move |p| (p, k))).collect();
        spawn(
            "node/ and field reader".into(),
            Box::new(move || {
                let mut seen: BTreeMap<String, usize> = BTreeMap::new();
                let mut check = |what: String, got: std::io::Result<String>, step: &dyn Fn(&str) -> Option<usize>| {
                    let got = match got {
                        Ok(t) => t,
                        Err(e) => return Err(format!("read {what}: {e}")),
                    };
                    let Some(i) = step(&got) else { return Err(format!("{what} shows {got:?}")) };
                    let before = seen.insert(what.clone(), i).unwrap_or(0);
                    if i < before {
                        return Err(format!("{what} went back in time: step {i} after step {before}"));
                    }
                    Ok(())
                };
                while !stop.load(Ordering::SeqCst) {
                    for (p, k) in &owner {
                        let got = std::fs::read_to_string(mnt.join(format!("node/{}", coords_name(*p))));
                        // before the first write: the original node, maybe renamed by sed
                        let orig = &originals[p];
                        let renamed = orig.replacen(&format!("{a} "), &format!("{RENAMED} "), 1);
                        let step = |t: &str| match t == orig || t == renamed {
                            true => Some(0),
                            false => value_step(*k, t).map(|i| i + 1),
                        };
                        if let Err(e) = check(format!("node/{}", coords_name(*p)), got, &step) {
                            return shared.fail(e);
                        }
                        shared.reads.fetch_add(1, Ordering::Relaxed);
                    }
                    for key in ["stress_a", "stress_b"] {
                        let got = std::fs::read_to_string(meta_dir.join("fields").join(key));
                        let step = |t: &str| t.strip_prefix(&key[key.len() - 1..])?.strip_suffix('\n')?.parse().ok();
                        if let Err(e) = check(format!("field {key}"), got, &step) {
                            return shared.fail(e);
                        }
                    }
                }
            }),
        );
    }

    // Shell readers: grep, cat, ls -R.
    {
        let list: Vec<String> = blocks.iter().map(|p| format!("blocks/{p}")).collect();
        let inventories: Vec<String> = metas.iter().map(|p| p.display().to_string()).collect();
        let script = format!(
            "set -e
             while [ ! -e {stop} ]; do
               grep -l -e '{a}' -e '{b}' {names} >/dev/null || [ $? = 1 ]
               cat {nodes} {inv} >/dev/null
               ls -R {list} >/dev/null
             done",
            stop = mnt.parent().unwrap().join("stop").display(),
            a = a,
            b = RENAMED,
            names = list.iter().map(|d| format!("{d}/names")).collect::<Vec<_>>().join(" "),
            nodes = list.iter().take(5).map(|d| format!("{d}/nodes {d}/info")).collect::<Vec<_>>().join(" "),
            inv = inventories.join(" "),
            list = list.join(" "),
        );
        let (mnt, shared) = (mnt.clone(), shared.clone());
        spawn(
            "grep, cat, ls -R".into(),
            Box::new(move || {
                let mut cmd = Command::new("bash");
                cmd.arg("-c").arg(script).current_dir(&mnt);
                if let Err(e) = run_reporting(cmd, &mut |_| {}) {
                    shared.fail(format!("grep/cat/ls: {e}"));
                }
            }),
        );
    }
    drop(done_tx);

    std::thread::sleep(RUN_FOR);
    stop.store(true, Ordering::SeqCst);
    std::fs::write(mnt.parent().unwrap().join("stop"), "").unwrap();
    let deadline = Instant::now() + DEADLOCK_AFTER;
    while !running.is_empty() {
        match done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(name) => {
                running.remove(&name);
            }
            Err(_) => {
                let stacks = daemon_pid(&mnt).map(daemon_stacks).unwrap_or_default();
                let log = m.kill9();
                panic!(
                    "DEADLOCK: {running:?} still running {DEADLOCK_AFTER:?} after the writers' time was up \
                     (the daemon was killed)\ndaemon threads:\n{stacks}\nlog:\n{log}"
                );
            }
        }
    }
    let failures = shared.failures.lock().unwrap().clone();
    assert!(failures.is_empty(), "{} failures:\n{}\nlog:\n{}", failures.len(), failures.join("\n"), m.log_text());
    let rounds = sed_rounds.load(Ordering::SeqCst);
    let last_node = last_node.lock().unwrap().clone();
    let last_field = last_field.lock().unwrap().clone();
    eprintln!(
        "{} checked reads, {rounds} sed rounds, {} node writes, {} field writes",
        shared.reads.load(Ordering::Relaxed),
        last_node.values().map(|i| i + 1).sum::<usize>(),
        last_field.get("stress_a").copied().unwrap_or(0),
    );
    assert!(rounds > 0 && shared.reads.load(Ordering::Relaxed) > 0, "nothing ran");

    // Each position holds its owner's last successful write...
    let owner_of = |p: &[i32; 3]| (0..NODE_WRITERS).find(|k| owned(&blocks, *k).contains(p)).unwrap();
    let want_node = |p: &[i32; 3]| match last_node.get(p) {
        Some(i) => step_value(owner_of(p), *i) + "\n",
        None => originals[p].clone(),
    };
    for p in originals.keys() {
        let shown = std::fs::read_to_string(mnt.join(format!("node/{}", coords_name(*p)))).unwrap();
        assert_eq!(shown, want_node(p), "node/{} through the mount", coords_name(*p));
    }
    for (key, i) in &last_field {
        let shown = std::fs::read_to_string(meta_dir.join("fields").join(key)).unwrap();
        assert_eq!(shown, format!("{}{i}\n", &key[key.len() - 1..]), "field {key}");
    }
    drop(m);

    // ...in the database too, which is whole.
    for db in ["map.sqlite", "worldfs-journal.sqlite"] {
        let c = rusqlite::Connection::open(world.path().join(db)).unwrap();
        let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok", "{db}");
    }
    let after = decode_all(world.path());
    assert_eq!(after.keys().collect::<Vec<_>>(), original.keys().collect::<Vec<_>>(), "the set of blocks changed");
    for (pos, b) in &after {
        if original[pos].is_ok() {
            assert!(b.is_ok(), "block {pos} no longer decodes: {:?}", b.as_ref().err());
        }
        if !blocks.contains(pos) {
            assert_eq!(b, &original[pos], "block {pos} was not written to but changed");
        }
    }
    let at = |p: [i32; 3]| {
        let pos = BlockPos::of_node(p[0], p[1], p[2]).unwrap();
        let (ox, oy, oz) = pos.origin();
        let i = node_index((p[0] - ox) as usize, (p[1] - oy) as usize, (p[2] - oz) as usize);
        node_text(after[&pos].as_ref().unwrap(), i)
    };
    for p in originals.keys() {
        assert_eq!(at(*p), want_node(p), "node {} in the database", coords_name(*p));
    }
    // Every A node not overwritten carries the name of the last sed round.
    let want = if rounds % 2 == 1 { RENAMED } else { a.as_str() };
    let mut written: BTreeSet<[i32; 3]> = originals.keys().copied().collect();
    written.extend(blocks[..NODE_BLOCKS].iter().flat_map(|p| anchors(*p)));
    let mut a_nodes = 0;
    for pos in &blocks {
        let (before, now) = (dec(pos), after[pos].as_ref().unwrap());
        for i in 0..4096 {
            let (x, y, z) = index_xyz(i);
            if name_at(before, i) == a && !written.contains(&world_coords(*pos, [x, y, z])) {
                a_nodes += 1;
                assert_eq!(name_at(now, i), want, "node {i} of {pos} after {rounds} sed rounds");
            }
        }
    }
    assert!(a_nodes > 0);
    let meta = after[&blocks[0]]
        .as_ref()
        .unwrap()
        .metadata
        .get(node_index(META_LOCAL[0], META_LOCAL[1], META_LOCAL[2]) as u16);
    for (key, i) in &last_field {
        let v = meta.and_then(|e| e.get(key.as_bytes())).map(|v| v.value.clone());
        assert_eq!(v, Some(format!("{}{i}", &key[key.len() - 1..]).into_bytes()), "field {key} in the database");
    }
    eprintln!("done in {:?}", started.elapsed());
}
