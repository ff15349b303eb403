//! Refusing to write while another process (a running server) has the map
//! database open: the server would overwrite our changes with its own copy
//! of loaded blocks, and may crash on our lock (a save that waits more than
//! 3 s for an SQLite lock fails and stops the server:
//! `Database_SQLite3::busyHandler` in src/database/database-sqlite3.cpp of
//! <https://github.com/luanti-org/luanti>). Who holds a file is found in
//! /proc by [`crate::holders`].

use crate::holders::openers;
use parking_lot::{Condvar, Mutex};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// A guard of the file at `path` (when not `enabled`, it never finds anyone).
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
        let mut scan = lock.lock();
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
                let mut scan = lock.lock();
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
        let timeout = done.wait_while_for(&mut scan, |s| s.running, WAIT);
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
pub fn refuse_other_users(store: &dyn crate::MapStore) -> Result<(), String> {
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
