//! A throwaway Redis server on loopback for one test (no persistence),
//! stopped when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

pub fn unavailable() -> Option<String> {
    crate::common::mount::which("redis-server").is_none().then(|| "no redis-server (apt install redis-server)".into())
}

impl Redis {
    pub fn start(password: Option<&str>) -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::common::server::free_port();
        let mut c = Command::new("redis-server");
        c.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path());
        if let Some(p) = password {
            c.args(["--requirepass", p]);
        }
        let child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start redis-server");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(10), "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port, _dir: dir }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
