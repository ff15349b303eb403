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
        let port = crate::common::server::free_port();
        let child = spawn(port, dir.path(), password, persistent);
        Redis { child, port, dir, password: password.map(str::to_string), persistent }
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

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
