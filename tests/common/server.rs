//! The real Luanti server as an oracle for the oracle tests
//! (tests/server_oracle.rs): generate a world with Debian's
//! `minetestserver` (minetest_game, mapgen v7, fixed seed) and furnish it,
//! and ask the server what it sees at given node positions, through its
//! own Lua API (tests/fixtures/oracle/probe.lua).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use worldfs_codec::luanti::Block;
use worldfs_store::BlockPos;

const GEN_LUA: &str = include_str!("../fixtures/oracle/gen.lua");
const PROBE_LUA: &str = include_str!("../fixtures/oracle/probe.lua");

/// Where the games are (minetest_game is `minetest` there).
const GAMES: &str = "/usr/share/games/minetest/games";

/// The field the probe adds to every node with metadata so that the server
/// re-saves the block (see probe.lua).
pub const TOUCH: &[u8] = b"worldfs_oracle_touched";

/// A safety net only (no test asserts on time): a server run that takes
/// longer than this is stuck.
const SERVER_TIMEOUT: Duration = Duration::from_secs(600);

pub fn minetestserver() -> Option<PathBuf> {
    ["/usr/games/minetestserver", "/usr/bin/minetestserver"].iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Skip the calling test (print and return) when the server or
/// minetest_game is not installed.
#[macro_export]
macro_rules! require_minetestserver {
    ($test:expr) => {
        if common::server::minetestserver().is_none() {
            common::skip($test, "server", "minetestserver not installed");
            return;
        }
        if !common::server::game_installed("minetest") {
            common::skip($test, "server", "minetest_game not installed (minetest-data)");
            return;
        }
    };
}

/// Whether the server finds the game `id` (it looks for the directory ID,
/// then ID_game).
pub fn game_installed(id: &str) -> bool {
    [id.to_string(), format!("{id}_game")].iter().any(|d| Path::new(GAMES).join(d).is_dir())
}

/// Why the server cannot run `world` with the installed games, if it
/// cannot: the world's `gameid` must be installed.
pub fn game_missing(world: &Path) -> Option<String> {
    let mt = std::fs::read_to_string(world.join("world.mt")).unwrap_or_default();
    let gameid = mt
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == "gameid")
        .map(|(_, v)| v.trim().to_string());
    match gameid {
        None => Some("world.mt names no gameid".into()),
        Some(id) if !game_installed(&id) => Some(format!("game `{id}` is not installed in {GAMES}")),
        Some(_) => None,
    }
}

/// A port that was free a moment ago (the server binds it right after).
///
/// Below the kernel's ephemeral range (32768-60999 on Linux): a client
/// connecting to a stopped server on an ephemeral port can be given that
/// same port as its own and connect to itself (TCP simultaneous open),
/// which then holds the port so the server cannot start again.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    for attempt in 0u64.. {
        let port = 20000 + (RandomState::new().hash_one(attempt) % 12000) as u16;
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if tcp.is_ok() && udp.is_ok() {
            return port;
        }
        assert!(attempt < 1000, "no free port below the ephemeral range");
    }
    unreachable!()
}

/// The last `n` lines of a file, for panic messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    format!("--- {} (last {n} lines) ---\n{}", path.display(), lines[lines.len().saturating_sub(n)..].join("\n"))
}

/// A running server; killed (and waited for) when dropped, so that a
/// panicking test leaves no server behind.
struct ServerProcess {
    child: Child,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Run the server on `world` with the settings `conf` (plus server_announce
/// off, bound to 127.0.0.1 on a free port) until it exits. `what` names the
/// files it leaves in the world: `<what>.conf`, `.log`, `.stdout`, `.stderr`.
fn run_server(world: &Path, conf: &str, what: &str) -> (ExitStatus, PathBuf) {
    run_server_args(world, conf, what, &[])
}

/// The real server's own conversion of a world's players, accounts or mod
/// storage (`--migrate-players`, `--migrate-auth`, `--migrate-mod-storage`)
/// to `backend`: it reads everything with the engine's reader and writes it
/// with the engine's writer, then rewrites the key in world.mt.
#[allow(dead_code)]
pub fn migrate(world: &Path, flag: &str, backend: &str) {
    let (status, log) = run_server_args(world, "", "worldfs_migrate", &[flag, backend]);
    assert!(status.success(), "minetestserver {flag} {backend} failed ({status})\n{}", tail(&log, 40));
}

fn run_server_args(world: &Path, conf: &str, what: &str, extra: &[&str]) -> (ExitStatus, PathBuf) {
    let server = minetestserver().expect("minetestserver is installed");
    let conf_path = world.join(format!("{what}.conf"));
    let conf = format!(
        "{conf}\nserver_announce = false\nbind_address = 127.0.0.1\nenable_rollback_recording = false\n\
         server_name = worldfs oracle\nmotd =\n"
    );
    std::fs::write(&conf_path, conf).unwrap();
    let log = world.join(format!("{what}.log"));
    // The server creates ~/.minetest and looks for games there: give it an
    // empty home of its own.
    let home = tempfile::tempdir().unwrap();
    let child = Command::new(server)
        .env("HOME", home.path())
        .arg("--world")
        .arg(world)
        .arg("--config")
        .arg(&conf_path)
        .arg("--port")
        .arg(free_port().to_string())
        .arg("--logfile")
        .arg(&log)
        .arg("--color")
        .arg("never")
        .args(extra)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(world.join(format!("{what}.stdout"))).unwrap())
        .stderr(std::fs::File::create(world.join(format!("{what}.stderr"))).unwrap())
        .spawn()
        .expect("start minetestserver");
    let mut proc = ServerProcess { child };
    let start = Instant::now();
    let status = loop {
        if let Some(status) = proc.child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > SERVER_TIMEOUT {
            drop(proc);
            panic!("minetestserver ({what}) did not stop within {SERVER_TIMEOUT:?}\n{}", tail(&log, 60));
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    (status, log)
}

fn install_mod(world: &Path, name: &str, init: &str) {
    let dir = world.join("worldmods").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mod.conf"), format!("name = {name}\n")).unwrap();
    std::fs::write(dir.join("init.lua"), init).unwrap();
}

/// Run the server on `world` itself (not a copy) with the mod `name`
/// (`init` its init.lua) and the settings `conf`, until it exits; the mod
/// is removed afterwards. Returns the exit status and the server's log.
pub fn run_with_mod(world: &Path, name: &str, init: &str, conf: &str) -> (ExitStatus, PathBuf) {
    install_mod(world, name, init);
    let r = run_server(world, conf, name);
    let _ = std::fs::remove_dir_all(world.join("worldmods").join(name));
    r
}

/// Generate a real world in `dir` (created if needed): mapgen v7 with a
/// fixed seed over [-radius, radius] x [-height, height] x [-radius, radius]
/// nodes, stored by the 5.6.1 server in the legacy sqlite schema, then
/// furnished by tests/fixtures/oracle/gen.lua (chests with several lists,
/// worn tools, items with metadata, unknown items; signs; furnaces with
/// fuel; node timers; private fields; field keys and values with odd bytes).
pub fn generate_world(dir: &Path, radius: i32, height: i32) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("world.mt"),
        "gameid = minetest\nworld_name = worldfs oracle\nbackend = sqlite3\nplayer_backend = sqlite3\n\
         auth_backend = sqlite3\nmod_storage_backend = sqlite3\n",
    )
    .unwrap();
    install_mod(dir, "worldfs_oracle_gen", GEN_LUA);
    let conf = format!(
        "fixed_map_seed = 1234567\nmg_name = v7\nworldfs_oracle_radius = {radius}\nworldfs_oracle_height = {height}\n"
    );
    let (status, log) = run_server(dir, &conf, "worldfs_oracle_gen");
    let result = std::fs::read_to_string(dir.join("worldfs_oracle_gen.out")).unwrap_or_default();
    assert!(
        status.success() && result == "ok\n",
        "generating a world failed ({status}, generator said {result:?})\n{}\n{}",
        tail(&log, 60),
        tail(&dir.join("worldfs_oracle_gen.stderr"), 20)
    );
    std::fs::remove_dir_all(dir.join("worldmods")).unwrap();
}

/// One inventory list as the server sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFact {
    pub size: usize,
    pub width: u32,
    /// `ItemStack:to_string()` of every slot ("" for an empty slot).
    pub items: Vec<Vec<u8>>,
}

/// The metadata of one node as the server sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaFact {
    pub fields: BTreeMap<Vec<u8>, Vec<u8>>,
    pub lists: BTreeMap<Vec<u8>, ListFact>,
    /// The fields the server kept private, read from the block the server
    /// re-saved (None when it did not re-save this node's metadata).
    pub private: Option<BTreeSet<Vec<u8>>>,
}

/// A started node timer, in seconds as Lua returns them (f32 inside).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimerFact {
    pub timeout: f64,
    pub elapsed: f64,
}

/// An entity: (name, item string when it is a dropped item).
pub type Entity = (Vec<u8>, Vec<u8>);

/// A node: (name, param1, param2).
pub type Node = (Vec<u8>, u8, u8);

/// What the server saw: at every asked position the node, and for every
/// block holding one of them (whole blocks) the metadata and the timers.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// (name, param1, param2). A node of a block that is not stored is
    /// `ignore` (the server cannot tell such a block from one full of
    /// `ignore`); None: the server could not load the block at all.
    pub nodes: BTreeMap<[i32; 3], Option<Node>>,
    /// The probed blocks (those holding an asked position).
    pub blocks: BTreeSet<BlockPos>,
    /// Every node of the probed blocks that has metadata.
    pub meta: BTreeMap<[i32; 3], MetaFact>,
    /// Every started timer of the probed blocks.
    pub timers: BTreeMap<[i32; 3], TimerFact>,
    /// For each objects request: the entities found near it.
    pub objects: BTreeMap<[i32; 3], Vec<Entity>>,
}

impl Facts {
    /// Metadata positions of one probed block.
    pub fn meta_in(&self, b: BlockPos) -> BTreeSet<[i32; 3]> {
        self.meta.keys().filter(|p| block_of(**p) == b).copied().collect()
    }

    /// Timers of one probed block.
    pub fn timers_in(&self, b: BlockPos) -> BTreeMap<[i32; 3], TimerFact> {
        self.timers.iter().filter(|(p, _)| block_of(**p) == b).map(|(p, t)| (*p, *t)).collect()
    }
}

pub fn block_of(p: [i32; 3]) -> BlockPos {
    BlockPos::of_node(p[0], p[1], p[2]).expect("position in range")
}

fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    assert!(s.len().is_multiple_of(2), "odd hex {s:?}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The server's view of `world` at `positions`. The server runs on a copy
/// (with the probe mod added, the `load_mod_*` lines of world.mt removed,
/// as those mods are not installed, and `force_loaded.txt` removed, so that
/// no block is activated); `world` is not touched.
pub fn server_dump(world: &Path, positions: &[[i32; 3]]) -> Facts {
    server_dump_with_objects(world, positions, &[])
}

/// Like `server_dump`, and also activate the blocks of `objects` (node
/// position, radius) and list the entities the server made of their stored
/// objects. Takes a few seconds more.
pub fn server_dump_with_objects(world: &Path, positions: &[[i32; 3]], objects: &[([i32; 3], u32)]) -> Facts {
    let copy = super::copy_world(world);
    let dir = copy.path();
    let mt = std::fs::read_to_string(dir.join("world.mt")).unwrap_or_default();
    let kept: Vec<&str> = mt.lines().filter(|l| !l.trim_start().starts_with("load_mod_")).collect();
    std::fs::write(dir.join("world.mt"), kept.join("\n") + "\n").unwrap();
    let _ = std::fs::remove_file(dir.join("force_loaded.txt"));
    let _ = std::fs::remove_dir_all(dir.join("worldmods"));
    install_mod(dir, "worldfs_oracle_probe", PROBE_LUA);
    let mut input: String = positions.iter().map(|[x, y, z]| format!("{x} {y} {z}\n")).collect();
    for ([x, y, z], r) in objects {
        input.push_str(&format!("objects {x} {y} {z} {r}\n"));
    }
    std::fs::write(dir.join("worldfs_oracle_probe.in"), input).unwrap();
    let (status, log) = run_server(dir, "", "worldfs_oracle_probe");
    let out = std::fs::read_to_string(dir.join("worldfs_oracle_probe.out")).unwrap_or_default();
    if let Some(err) = out.lines().find_map(|l| l.strip_prefix("error ")) {
        panic!("the probe failed: {}\n{}", String::from_utf8_lossy(&unhex(err)), tail(&log, 40));
    }
    assert!(
        status.success() && out.ends_with("done\n"),
        "the probe run failed ({status})\n{}\n{}",
        tail(&log, 60),
        tail(&dir.join("worldfs_oracle_probe.stderr"), 20)
    );
    let mut facts = parse(&out);
    read_private(dir, &mut facts);
    facts
}

fn parse(out: &str) -> Facts {
    let mut f = Facts::default();
    for line in out.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let int = |i: usize| -> i32 { w[i].parse().unwrap_or_else(|_| panic!("bad probe line {line:?}")) };
        let pos = || [int(1), int(2), int(3)];
        match w[0] {
            "block" => {
                let b = BlockPos::new(int(1) as i16, int(2) as i16, int(3) as i16);
                f.blocks.insert(b);
            }
            "hasmeta" => {
                f.meta.insert(pos(), MetaFact::default());
            }
            "timer" => {
                let t = TimerFact { timeout: w[4].parse().unwrap(), elapsed: w[5].parse().unwrap() };
                f.timers.insert(pos(), t);
            }
            "node" => {
                let node = (unhex(w[4]), int(5) as u8, int(6) as u8);
                f.nodes.insert(pos(), Some(node));
            }
            "nonode" => {
                f.nodes.insert(pos(), None);
            }
            "field" => {
                let m = f.meta.get_mut(&pos()).expect("field of a hasmeta node");
                m.fields.insert(unhex(w[4]), unhex(w[5]));
            }
            "list" => {
                let m = f.meta.get_mut(&pos()).expect("list of a hasmeta node");
                let l = ListFact { size: int(5) as usize, width: int(6) as u32, items: Vec::new() };
                m.lists.insert(unhex(w[4]), l);
            }
            "item" => {
                let m = f.meta.get_mut(&pos()).expect("item of a hasmeta node");
                let l = m.lists.get_mut(&unhex(w[4])).expect("item of a listed list");
                assert_eq!(int(5) as usize, l.items.len() + 1, "slots in order: {line:?}");
                l.items.push(unhex(w[6]));
            }
            "object" => {
                f.objects.entry(pos()).or_default().push((unhex(w[4]), unhex(w[5])));
            }
            "done" => {}
            _ => panic!("unexpected probe output {line:?}"),
        }
    }
    f
}

/// The private flags as the server kept them: the probe made the server
/// re-save every block with metadata (adding the TOUCH field to every
/// entry), decode those server-written blocks.
fn read_private(copy: &Path, facts: &mut Facts) {
    // Whatever backend the world uses.
    let store = worldfs_store::world::World::open(copy).unwrap().open_store(true, false).unwrap();
    let blocks: BTreeSet<BlockPos> = facts.meta.keys().map(|p| block_of(*p)).collect();
    for b in blocks {
        let Some(blob) = store.get(b).unwrap() else { continue };
        let block = Block::decode(&blob).unwrap_or_else(|e| panic!("block {b} as re-saved by the server: {e}"));
        for e in &block.metadata.entries {
            let (x, y, z) = worldfs::view::node_coords(b, e.pos);
            let Some(m) = facts.meta.get_mut(&[x, y, z]) else { continue };
            if e.get(TOUCH).is_none() {
                continue; // not re-saved by the server
            }
            m.private = Some(e.vars.iter().filter(|v| v.private).map(|v| v.key.clone()).collect());
        }
    }
}
