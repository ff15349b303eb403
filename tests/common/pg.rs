//! A throwaway PostgreSQL server on loopback for one test: initdb in a
//! temporary directory (as the `postgres` user when run as root: initdb
//! refuses root), started on a free port with fsync off, stopped and
//! removed when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Pg {
    dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
}

/// The server's binaries (Debian keeps them off PATH).
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file() && p.join("postgres").is_file())
        .collect();
    found.sort();
    found.pop()
}

/// Why no PostgreSQL server can be started here, if it cannot.
pub fn unavailable() -> Option<String> {
    if bin_dir().is_none() {
        return Some("no PostgreSQL server (apt install postgresql)".into());
    }
    None
}

/// A fresh PostgreSQL server for `test`, or None when none can be started
/// here (then skipped, with why: `super::skip`, which fails the test when
/// WORLDFS_REQUIRE names pg).
pub fn start_or_skip(test: &str) -> Option<Pg> {
    if let Some(why) = unavailable() {
        super::skip(test, "pg", &why);
        return None;
    }
    Some(Pg::start())
}

/// A demo world whose map is in database `mt` of `pg` (`backend =
/// postgresql`, filled by the real server's own `--migrate`), its
/// map.sqlite moved aside so nothing reads it.
pub fn demo_world_on(pg: &Pg) -> tempfile::TempDir {
    pg.create_db("mt");
    let world = super::demo_world();
    let w = world.path();
    let mt = std::fs::read_to_string(w.join("world.mt")).unwrap();
    std::fs::write(w.join("world.mt"), format!("{mt}pgsql_connection = {}\n", pg.conninfo("mt"))).unwrap();
    super::server::migrate(w, "--migrate", "postgresql");
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    world
}

fn as_owner(cmd: &Path) -> Command {
    if super::is_root() {
        let mut c = Command::new("runuser");
        c.arg("-u").arg("postgres").arg("--").arg(cmd);
        c
    } else {
        Command::new(cmd)
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pg {
    pub fn start() -> Pg {
        let bin = bin_dir().expect("checked by unavailable()");
        let dir = tempfile::Builder::new().prefix("worldfs-pg").tempdir().unwrap();
        if super::is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("-R").arg("postgres").arg(dir.path());
                    c
                },
                "chown",
            );
        }
        let port = crate::common::server::free_port();
        let data = dir.path().join("data");
        let mut c = as_owner(&bin.join("initdb"));
        c.arg("-D").arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"]);
        run(c, "initdb");
        let sock = dir.path().join("sock");
        std::fs::create_dir(&sock).unwrap();
        if super::is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres").arg(&sock);
                    c
                },
                "chown",
            );
        }
        let mut c = as_owner(&bin.join("pg_ctl"));
        c.arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.path().join("log"))
            .arg("-w")
            .arg("start")
            .arg("-o")
            .arg(format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", sock.display()));
        run(c, "pg_ctl start");
        Pg { dir, port, bin }
    }

    /// A libpq keyword connection string for database `db`.
    pub fn conninfo(&self, db: &str) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname={db}", self.port)
    }

    /// Run SQL with psql (database `db`).
    pub fn sql(&self, db: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", "-d", db, "-At", "-c", sql])
            .output()
            .unwrap();
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Make an empty database.
    pub fn create_db(&self, db: &str) {
        self.sql("postgres", &format!("CREATE DATABASE {db}"));
    }

    /// Stop the server now (a test of a lost connection).
    /// Stop the server at once (as a crash would) and wait until its
    /// postmaster is gone, so that `restart` does not find it running.
    pub fn stop(&self) {
        let mut c = as_owner(&self.bin.join("pg_ctl"));
        c.arg("-D").arg(self.dir.path().join("data")).args(["-m", "immediate", "-w", "-t", "120", "stop"]);
        let _ = c.output();
        let pid_file = self.dir.path().join("data").join("postmaster.pid");
        let start = std::time::Instant::now();
        while pid_file.exists() && start.elapsed() < std::time::Duration::from_secs(120) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Start the stopped server again on the same port. A loaded machine
    /// can make one start fail (the port still held, a slow recovery): try
    /// three times, and say what the server's log says if all fail.
    pub fn restart(&self) {
        let mut last = String::new();
        for _ in 0..3 {
            let mut c = as_owner(&self.bin.join("pg_ctl"));
            c.arg("-D")
                .arg(self.dir.path().join("data"))
                .arg("-l")
                .arg(self.dir.path().join("log"))
                .args(["-w", "-t", "120", "start", "-o"])
                .arg(format!(
                    "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
                    self.port,
                    self.dir.path().join("sock").display()
                ));
            let out = c.output().expect("run pg_ctl");
            if out.status.success() {
                return;
            }
            last = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            self.stop();
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        panic!("pg_ctl start failed three times: {last}\nserver log (last lines, newest first):\n{}", tail.join("\n"));
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.stop();
    }
}
