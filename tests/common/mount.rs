//! Mount a world with the real `worldfs` binary for a test, and unmount it
//! when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why mounting cannot be tested here, if it cannot.
pub fn fuse_unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    let root = super::is_root();
    if !root && which("fusermount3").is_none() {
        return Some("not root and no fusermount3 (apt install fuse3)".into());
    }
    None
}

pub fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .chain(["/usr/games", "/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(cmd))
        .find(|p| p.is_file())
}

/// Skip the calling test (return None) with a message if FUSE is missing.
#[macro_export]
macro_rules! require_fuse {
    ($test:expr) => {
        if let Some(why) = common::mount::fuse_unavailable() {
            common::skip($test, "fuse", &why);
            return;
        }
    };
}

pub struct Mounted {
    pub world: PathBuf,
    /// Holds the mount point `mnt/`, the daemon's log and test scratch.
    pub dir: tempfile::TempDir,
    pub mnt: PathBuf,
    child: Option<Child>,
    pub log: PathBuf,
}

impl Mounted {
    /// Mount `world` (a directory the caller owns) with extra `-o` options.
    pub fn new(world: &Path, options: &[&str]) -> Mounted {
        let args: Vec<String> = options.iter().flat_map(|o| ["-o".to_string(), o.to_string()]).collect();
        Self::with_args(world, &args.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Mount `world` with extra command-line arguments.
    pub fn with_args(world: &Path, extra: &[&str]) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let log = dir.path().join("worldfs.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldfs"));
        cmd.arg("mount").arg(world).arg(&mnt).arg("-f").args(extra);
        // The name index goes to the test's own directory, not ~/.cache.
        let child = cmd
            .env("RUST_LOG", "worldfs=info")
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start worldfs");
        let m = Mounted { world: world.to_path_buf(), dir, mnt, child: Some(child), log };
        m.wait_mounted();
        m
    }

    fn wait_mounted(&self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if self.path("README").exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("mount did not appear; log:\n{}", std::fs::read_to_string(&self.log).unwrap_or_default());
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the daemon runs").id()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// Run a shell command with MNT set to the mount point; returns
    /// (status code, stdout, stderr).
    pub fn sh(&self, script: &str) -> (i32, String, String) {
        let out = Command::new("bash")
            .arg("-c")
            .arg(script)
            .env("MNT", &self.mnt)
            .env("WORLD", &self.world)
            .current_dir(&self.mnt)
            .output()
            .expect("bash");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The refusals in MNT/write-errors (its lines without the warnings
    /// about names found nowhere else in the world).
    pub fn refusals(&self) -> String {
        self.ok("cat $MNT/write-errors")
            .lines()
            .filter(|l| !l.contains(": warning: "))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// Like `sh`, but panics unless the command succeeds; returns stdout.
    pub fn ok(&self, script: &str) -> String {
        let (code, out, err) = self.sh(script);
        assert_eq!(code, 0, "`{script}` failed:\n{err}\nlog:\n{}", self.log_text());
        out
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Right after this mount was unmounted (its daemon may still be
    /// exiting): `worldfs mount WORLD MNT` again at once, as a daemon of its
    /// own (not a child the test waits for), with this mount's cache; the
    /// new mount must be accepted and appear within 10 s. `round` is for
    /// the messages.
    pub fn mount_again_at_once(&self, round: usize) {
        let out = Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("mount")
            .arg(&self.world)
            .arg(&self.mnt)
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "round {round}: the new mount was refused: {err}");
        let start = Instant::now();
        while !self.mnt.join("README").exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "round {round}: the new mount did not appear");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send a signal to the daemon.
    pub fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            super::kill(c.id() as i32, sig);
        }
    }

    /// Wait up to `timeout` for the daemon to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            match self.child.as_mut().map(|c| c.try_wait()) {
                None | Some(Ok(Some(_))) => {
                    self.child = None;
                    return true;
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        false
    }

    /// Kill the daemon with SIGKILL (a crash) and detach the dead mount.
    pub fn kill9(mut self) -> String {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.mnt).status();
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).stderr(Stdio::null()).status();
        }
        self.log_text()
    }

    /// Unmount and wait for the daemon to exit.
    pub fn unmount(mut self) -> String {
        self.stop();
        self.log_text()
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let tool = if super::is_root() { "umount" } else { "fusermount3" };
            let args: &[&str] = if tool == "umount" { &[] } else { &["-u"] };
            let _ = Command::new(tool).args(args).arg(&self.mnt).status();
            let start = Instant::now();
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A crash in the middle of a bulk edit: `tests/scripts/bulk_rename.py`
/// renames `old` to `new` in the blocks listed in `list` through `m`
/// (fsync after every `fsync_every` blocks, each fsynced block appended to
/// `log`); once `at_least` blocks are in the log and `then` more has passed,
/// the daemon is killed with SIGKILL. The blocks fsynced by then.
pub fn bulk_rename_then_kill(
    m: Mounted,
    list: &Path,
    log: &Path,
    (old, new): (&str, &str),
    fsync_every: u32,
    at_least: usize,
    then: Duration,
) -> Vec<String> {
    std::fs::write(log, "").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/bulk_rename.py");
    let mut editor = Command::new("python3")
        .arg(&script)
        .arg(&m.mnt)
        .arg(list)
        .arg(log)
        .args([old, new])
        .env("FSYNC_EVERY", fsync_every.to_string())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::read_to_string(log).unwrap().lines().count() < at_least {
        assert!(start.elapsed() < Duration::from_secs(60), "the bulk edit does not progress:\n{}", m.log_text());
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(then);
    m.kill9();
    let _ = editor.wait();
    std::fs::read_to_string(log).unwrap().lines().map(String::from).collect()
}
