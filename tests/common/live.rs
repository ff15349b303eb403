//! A real server running in the background for the live-mount tests
//! (tests/live_server.rs): Debian's minetestserver on a world with the
//! worldfs_live mod (installed by `worldfs live install`) and a probe mod
//! (tests/fixtures/live/probe.lua) that answers what the game sees now.
//! One server process per test; it never restarts.

use super::server::{free_port, minetestserver, tail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const PROBE_LUA: &str = include_str!("../fixtures/live/probe.lua");

pub struct LiveServer {
    child: Option<Child>,
    pub world: PathBuf,
    /// The UDP port it listens on (127.0.0.1).
    pub port: u16,
    pub log: PathBuf,
    _home: tempfile::TempDir,
    seq: std::cell::Cell<u32>,
}

/// `worldfs ARGS...`: (exit code, stdout, stderr).
pub fn worldfs(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().expect("run worldfs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The server of the world at `world` with the worldfs_live mod (settings
/// `conf`) and a live mount of it (its log says changes go through the
/// server).
pub fn start(world: &Path, conf: &str) -> (LiveServer, super::mount::Mounted) {
    start_with(world, conf, &[])
}

/// As `start`, the mount with options `opts` (`through_server`: the
/// blocks of a big change all go through the server, none written to the
/// database by the mount).
pub fn start_with(world: &Path, conf: &str, opts: &[&str]) -> (LiveServer, super::mount::Mounted) {
    let server = LiveServer::start(world, conf, true);
    let m = super::mount::Mounted::new(world, opts);
    assert!(m.log_text().contains("changes go through the server"), "{}", m.log_text());
    (server, m)
}

/// A demo world (`worldfs demo`) with its live server and a live mount,
/// as `start`.
pub fn demo(conf: &str) -> (tempfile::TempDir, LiveServer, super::mount::Mounted) {
    let world = super::demo_world();
    let (server, m) = start(world.path(), conf);
    (world, server, m)
}

/// Block `pos` as the SQLite map of `world` holds it.
pub fn stored_block(world: &Path, pos: worldfs_store::BlockPos) -> Option<worldfs_codec::luanti::Block> {
    use worldfs_store::MapStore;
    let store = worldfs_store::sqlite::SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.get(pos).unwrap().map(|b| worldfs_codec::luanti::Block::decode(&b).unwrap())
}

/// The name of node `p` in stored block `b`.
pub fn stored_name(b: &worldfs_codec::luanti::Block, [x, y, z]: [i32; 3]) -> String {
    let i = worldfs_codec::luanti::block::node_index(
        x.rem_euclid(16) as usize,
        y.rem_euclid(16) as usize,
        z.rem_euclid(16) as usize,
    );
    String::from_utf8_lossy(b.name_of(b.param0[i]).unwrap()).into_owned()
}

/// The name of node `p` as the SQLite map of `world` holds it.
pub fn stored_node(world: &Path, p: [i32; 3]) -> String {
    let pos = worldfs_store::BlockPos::of_node(p[0], p[1], p[2]).unwrap();
    stored_name(&stored_block(world, pos).expect("the block is stored"), p)
}

impl LiveServer {
    /// Start the server on `world` with the settings `conf`; with the
    /// worldfs_live mod when `live`. Returns once the probe answers (and,
    /// with the mod, its heartbeat is there).
    pub fn start(world: &Path, conf: &str, live: bool) -> LiveServer {
        if live {
            let (code, out, err) = worldfs(&["live".as_ref(), "install".as_ref(), world.as_os_str()]);
            assert_eq!(code, 0, "worldfs live install: {out}{err}");
            assert!(out.starts_with("worldfs_live ") && out.contains(" in "), "{out}");
        }
        // A probe's files from an earlier server of this world would be
        // taken for answers.
        for f in ["worldfs_live_probe.in", "worldfs_live_probe.out"] {
            let _ = std::fs::remove_file(world.join(f));
        }
        let probe = world.join("worldmods").join("worldfs_live_probe");
        std::fs::create_dir_all(&probe).unwrap();
        std::fs::write(probe.join("mod.conf"), "name = worldfs_live_probe\n").unwrap();
        std::fs::write(probe.join("init.lua"), PROBE_LUA).unwrap();
        let conf_path = world.join("worldfs_live_test.conf");
        std::fs::write(
            &conf_path,
            format!("{conf}\nserver_announce = false\nbind_address = 127.0.0.1\nenable_rollback_recording = false\n"),
        )
        .unwrap();
        let log = world.join("worldfs_live_test.log");
        let home = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new(minetestserver().expect("minetestserver is installed"))
            .env("HOME", home.path())
            .arg("--world")
            .arg(world)
            .arg("--config")
            .arg(&conf_path)
            .arg("--port")
            .arg(port.to_string())
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(world.join("worldfs_live_test.stderr")).unwrap())
            .spawn()
            .expect("start minetestserver");
        let s = LiveServer { child: Some(child), world: world.to_path_buf(), port, log, _home: home, seq: 0.into() };
        // Loading a block makes the server open the map database (it does
        // so at the first block, not at start).
        s.ask(&["node 0 0 0".into()], Duration::from_secs(120));
        // The probe may answer in the step before the mod's first heartbeat.
        let start = Instant::now();
        while live && !world.join("worldfs-live/server.json").is_file() {
            assert!(start.elapsed() < Duration::from_secs(10), "no heartbeat\n{}", tail(&s.log, 40));
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    /// The probe's answer to `lines` (see probe.lua), without the seq and
    /// end lines; panics after `within`.
    pub fn ask(&self, lines: &[String], within: Duration) -> Vec<String> {
        self.seq.set(self.seq.get() + 1);
        let seq = format!("seq {}", self.seq.get());
        let input = self.world.join("worldfs_live_probe.in");
        let tmp = self.world.join("worldfs_live_probe.in.tmp");
        std::fs::write(&tmp, format!("{seq}\n{}", lines.iter().map(|l| format!("{l}\n")).collect::<String>())).unwrap();
        std::fs::rename(&tmp, &input).unwrap();
        let out = self.world.join("worldfs_live_probe.out");
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            let got: Vec<String> = text.lines().map(String::from).collect();
            if got.first() == Some(&seq) && got.last().map(String::as_str) == Some("end") {
                return got[1..got.len() - 1].to_vec();
            }
            if let Some(child) = &self.child
                && Path::new(&format!("/proc/{}", child.id())).exists()
                && start.elapsed() < within
            {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            panic!("the probe did not answer {seq} within {within:?}\n{}", tail(&self.log, 60));
        }
    }

    /// What the game has at node `p` now: "NAME PARAM1 PARAM2".
    pub fn node(&self, p: [i32; 3]) -> String {
        let [x, y, z] = p;
        let got = self.ask(&[format!("node {x} {y} {z}")], Duration::from_secs(10));
        got[0].splitn(5, ' ').nth(4).unwrap_or_default().to_string()
    }

    /// The metadata lines ("field ..." and "item ...") of node `p` now.
    pub fn meta(&self, p: [i32; 3]) -> Vec<String> {
        let [x, y, z] = p;
        self.ask(&[format!("meta {x} {y} {z}")], Duration::from_secs(10))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Send signal `sig` to the server (SIGSTOP, SIGCONT, SIGKILL...).
    pub fn signal(&self, sig: i32) {
        super::kill(self.pid() as i32, sig);
    }

    /// Kill the server with SIGKILL (a crash, a power cut for what it had
    /// not saved) and wait for it.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The step times the worldfs_live mod logged (its steps.txt):
    /// (time in s, worst dtime in ms, worst work of the mod in ms, requests)
    /// per heartbeat window of the last two minutes.
    pub fn steps(&self) -> Vec<(f64, f64, f64, u32)> {
        let text = std::fs::read_to_string(self.world.join("worldfs-live/steps.txt")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                Some((
                    w.first()?.parse().ok()?,
                    w.get(1)?.parse().ok()?,
                    w.get(2)?.parse().ok()?,
                    w.get(3)?.parse().ok()?,
                ))
            })
            .collect()
    }

    /// Stop the server as an admin does (SIGTERM: it saves the map and
    /// exits) and wait for it.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        super::kill(child.id() as i32, libc::SIGTERM);
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "the server did not stop\n{}", tail(&self.log, 40));
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether a real client can run here: Debian's `minetest` and `xvfb-run`.
pub fn client_installed() -> bool {
    Path::new(CLIENT).is_file()
        && std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("xvfb-run").is_file()))
}

const CLIENT: &str = "/usr/games/minetest";

/// Skips (the caller returns) without the client and xvfb-run ("client").
#[macro_export]
macro_rules! require_client {
    ($test:expr) => {
        if !common::live::client_installed() {
            common::skip($test, "client", "the minetest client or xvfb-run is not installed (minetest, xvfb)");
            return;
        }
    };
}

/// A real player in the game: Debian's `minetest` client under `xvfb-run`
/// (a virtual X server; Mesa's software GL draws), joined to a server on
/// 127.0.0.1, drawing as little as it can (5 frames a second, 320x240,
/// viewing range 20). Quits cleanly on `quit`; killed when dropped.
pub struct Client {
    child: Option<Child>,
    pub log: PathBuf,
    _home: tempfile::TempDir,
}

impl Client {
    /// Start the client as player `name` (password `password`) on `server`'s port.
    pub fn join(server: &LiveServer, name: &str, password: &str) -> Client {
        let home = tempfile::tempdir().unwrap();
        let conf = home.path().join("client.conf");
        std::fs::write(
            &conf,
            "fps_max = 5\nfps_max_unfocused = 5\nviewing_range = 20\nenable_sound = false\nscreen_w = 320\n\
             screen_h = 240\nenable_shaders = false\nenable_clouds = false\nsmooth_lighting = false\n\
             enable_minimap = false\nclient_mapblock_limit = 200\n",
        )
        .unwrap();
        let password_file = home.path().join("password");
        std::fs::write(&password_file, format!("{password}\n")).unwrap();
        let log = home.path().join("client.log");
        let child = Command::new("xvfb-run")
            .env("HOME", home.path())
            .args(["-a", "-s", "-screen 0 320x240x24", CLIENT, "--go", "--address", "127.0.0.1", "--port"])
            .arg(server.port.to_string())
            .args(["--name", name, "--password-file"])
            .arg(&password_file)
            .arg("--config")
            .arg(&conf)
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.path().join("client.stderr")).unwrap())
            .spawn()
            .expect("start xvfb-run minetest");
        Client { child: Some(child), log, _home: home }
    }

    /// The game client's process (a child of xvfb-run, beside Xvfb).
    fn game_pid(&self) -> Option<i32> {
        let xvfb_run = self.child.as_ref()?.id();
        let children = std::fs::read_to_string(format!("/proc/{xvfb_run}/task/{xvfb_run}/children")).ok()?;
        children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
            .find(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "minetest"))
    }

    /// Quit as a player closing the game does (SIGTERM: the client says
    /// goodbye to the server) and wait for xvfb-run to end.
    pub fn quit(&mut self) {
        let pid = self.game_pid().unwrap_or_else(|| panic!("no client process\n{}", tail(&self.log, 40)));
        super::kill(pid, libc::SIGTERM);
        let mut child = self.child.take().expect("running");
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(60), "the client did not quit\n{}", tail(&self.log, 40));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(pid) = self.game_pid() {
            super::kill(pid, libc::SIGKILL);
        }
        if let Some(mut child) = self.child.take() {
            // xvfb-run stops its Xvfb once the game is gone.
            let start = Instant::now();
            while child.try_wait().ok().flatten().is_none() && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
