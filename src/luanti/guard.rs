//! Refusing to write while another process (a running server) has the map
//! database open: the server would overwrite our changes with its own copy
//! of loaded blocks, and may crash on our lock (spec §3.3).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Processes other than this one that have `path` open, described as
/// "pid 123 (minetestserver --world ...)". Only processes whose /proc
/// entries we may read are seen (all of them when running as root).
pub fn openers(path: &Path) -> Vec<String> {
    // A process that forks holds every descriptor it has until its child
    // execs (a test harness starting a program, a shell): a child seen
    // once may be gone a moment later. Only what is still open on a second
    // look counts.
    // Compared by pid: a process may exec meanwhile (a shell becoming
    // the program it runs keeps its descriptors but not its command line).
    let first = scan_openers(path);
    if first.is_empty() {
        return Vec::new();
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    still_open(&first, scan_openers(path))
}

/// The openers of a second look that were there at the first, by pid,
/// described as they are now.
fn still_open(first: &[(String, String)], second: Vec<(String, String)>) -> Vec<String> {
    second.into_iter().filter(|(pid, _)| first.iter().any(|(p, _)| p == pid)).map(|(_, who)| who).collect()
}

/// (pid, description) of the processes that have `path` open now.
fn scan_openers(path: &Path) -> Vec<(String, String)> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Vec::new();
    };
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|c| c.is_ascii_digit()) || pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let opened = fds.flatten().any(|fd| std::fs::read_link(fd.path()).map(|l| l == target).unwrap_or(false));
        if opened {
            let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cmd: Vec<String> = cmd
                .split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect();
            let who = format!("pid {pid} ({})", cmd.join(" "));
            found.push((pid, who));
        }
    }
    found
}

/// Checks, at most every `interval`, that nobody else has the map open.
///
/// The scan runs on its own thread and a request waits for it only a
/// moment: reading `/proc/PID/fd` of a process that is exiting while it
/// closes a file on this mount blocks until we answer that close, so a
/// scan inside a request handler can deadlock. After `WAIT` the previous
/// result is used.
pub struct ServerGuard {
    path: PathBuf,
    enabled: bool,
    interval: Duration,
    state: Arc<(Mutex<Scan>, Condvar)>,
}

#[derive(Default)]
struct Scan {
    /// When the last finished scan started, and what it found.
    last: Option<(Instant, Vec<String>)>,
    running: bool,
}

const WAIT: Duration = Duration::from_millis(300);

impl ServerGuard {
    pub fn new(path: PathBuf, enabled: bool) -> ServerGuard {
        ServerGuard { path, enabled, interval: Duration::from_millis(500), state: Arc::default() }
    }

    /// Re-scan at most every `interval` (zero: before every write).
    pub fn with_interval(mut self, interval: Duration) -> ServerGuard {
        self.interval = interval;
        self
    }

    /// The processes that have the map open (a recent scan is reused).
    pub fn current(&self) -> Vec<String> {
        if !self.enabled {
            return Vec::new();
        }
        let (lock, done) = &*self.state;
        let mut scan = lock.lock().unwrap();
        if let Some((at, who)) = &scan.last
            && at.elapsed() < self.interval
        {
            return who.clone();
        }
        if !scan.running {
            scan.running = true;
            let (state, path) = (self.state.clone(), self.path.clone());
            let started = std::thread::Builder::new().name("worldfs-guard".into()).spawn(move || {
                let at = Instant::now();
                let who = openers(&path);
                let (lock, done) = &*state;
                let mut scan = lock.lock().unwrap();
                scan.last = Some((at, who));
                scan.running = false;
                done.notify_all();
            });
            if started.is_err() {
                scan.running = false;
                drop(scan);
                return openers(&self.path);
            }
        }
        let (scan, timeout) = done.wait_timeout_while(scan, WAIT, |s| s.running).unwrap();
        if timeout.timed_out() {
            log::debug!("the scan for other openers of the map is slow; using the previous result");
        }
        scan.last.as_ref().map(|(_, who)| who.clone()).unwrap_or_default()
    }
}

/// For a map on a database server (PostgreSQL, Redis): refuse when other
/// clients that are not worldfs are connected, since a running Luanti
/// server keeps its connections open (from this machine or another) and
/// overwrites blocks it has loaded. The server's own session list is the
/// only place that sees clients on other machines.
pub fn refuse_other_users(store: &dyn crate::store::MapStore) -> Result<(), String> {
    let others = store.other_users().map_err(|e| format!("{}: cannot list its clients: {e}", store.describe()))?;
    if others.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} has other clients ({}); a running Luanti server would overwrite changes made through the \
         mount: stop it, mount read-only with -o ro, or use --force",
        store.describe(),
        others.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A holder that execs between the two looks (a shell becoming the
    /// program it runs) is still a holder; one gone at the second is not.
    #[test]
    fn holders_are_matched_by_pid() {
        let o = |pid: &str, cmd: &str| (pid.to_string(), format!("pid {pid} ({cmd})"));
        let first = [o("10", "bash -c exec 3<map.sqlite; sleep 30"), o("11", "cp map.sqlite x")];
        let second = vec![o("10", "sleep 30"), o("12", "new")];
        assert_eq!(still_open(&first, second), ["pid 10 (sleep 30)"]);
    }

    #[test]
    fn sees_another_process_holding_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("map.sqlite");
        std::fs::write(&f, b"x").unwrap();
        assert!(openers(&f).is_empty());
        let mut child =
            std::process::Command::new("sleep").arg("30").stdin(std::fs::File::open(&f).unwrap()).spawn().unwrap();
        let start = Instant::now();
        let mut seen: Vec<String> = Vec::new();
        // Between fork and exec the child still shows our own command line.
        while !seen.iter().any(|s| s.contains("sleep 30")) && start.elapsed() < Duration::from_secs(5) {
            seen = openers(&f);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains("sleep 30"), "{seen:?}");
    }
}
