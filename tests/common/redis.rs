//! A throwaway Redis server on loopback for one test (no persistence),
//! stopped when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    password: Option<String>,
    persistent: bool,
}

pub fn unavailable() -> Option<String> {
    crate::common::mount::which("redis-server").is_none().then(|| "no redis-server (apt install redis-server)".into())
}

impl Redis {
    pub fn start(password: Option<&str>) -> Redis {
        Self::start_with(password, false)
    }

    /// `persistent`: an append-only file synced at every write, so that
    /// the server can be killed and restarted with its data.
    pub fn start_with(password: Option<&str>, persistent: bool) -> Redis {
        let dir = tempfile::tempdir().unwrap();
        // A port found free can be taken by another test's server before
        // ours binds it: then ours exits and the port answers for another
        // process. Try another port until our own server answers.
        for _ in 0..5 {
            let port = crate::common::server::free_port();
            let mut child = spawn(port, dir.path(), password, persistent);
            if answers_ping(&mut child, port) {
                return Redis { child, port, dir, password: password.map(str::to_string), persistent };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    /// SIGKILL the server (a crash).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start it again on the same port and directory.
    pub fn restart(&mut self) {
        self.child = spawn(self.port, self.dir.path(), self.password.as_deref(), self.persistent);
    }
}

fn spawn(port: u16, dir: &std::path::Path, password: Option<&str>, persistent: bool) -> Child {
    let mut c = Command::new("redis-server");
    c.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""]).arg("--dir").arg(dir);
    if persistent {
        c.args(["--appendonly", "yes", "--appendfsync", "always"]);
    } else {
        c.args(["--appendonly", "no"]);
    }
    if let Some(p) = password {
        c.args(["--requirepass", p]);
    }
    let child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start redis-server");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(60), "redis-server did not start within 60 s on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Whether `child` is still running and a PING on `port` is answered by a
/// Redis server (`+PONG`, or `-NOAUTH` when a password is set).
fn answers_ping(child: &mut Child, port: u16) -> bool {
    use std::io::{Read, Write};
    if !matches!(child.try_wait(), Ok(None)) {
        return false;
    }
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reply = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok()
        && s.read(&mut reply).is_ok_and(|n| reply[..n].starts_with(b"+PONG") || reply[..n].starts_with(b"-NOAUTH"))
        && matches!(child.try_wait(), Ok(None))
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
