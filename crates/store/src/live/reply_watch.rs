//! Waking a change's waiter as soon as the mod writes its answer.
//!
//! A waiter used to look for its reply file every 5 ms: 2.5 ms late on
//! average when the machine is idle, and every waiter's looks wake-ups
//! that compete for the CPUs with the server when it is not (paired at
//! load 7-9, 8 writers: within noise in one set of runs, 3-12 % more
//! writes a second and a third of the late server steps in another;
//! docs/performance.md). One inotify watch on `replies/` per
//! spool (the mod renames each answer into place) now wakes every waiter
//! of that spool; each looks for its own file again. Without inotify (no
//! instance left, the directory not there yet) waiters look every 5 ms as
//! before.

use parking_lot::{Condvar, Mutex};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

/// How often a waiter looks when there is no watch.
const POLL: Duration = Duration::from_millis(5);
/// How long a waiter sleeps at most with a watch (a lost event costs this).
const WATCHED: Duration = Duration::from_millis(50);
/// How often a missing watch is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How often the watching thread checks that its spool still exists.
const ALIVE_CHECK_MS: i32 = 1000;

/// The watch of one spool's `replies/` directory.
pub(super) struct ReplyWatch {
    dir: PathBuf,
    state: Mutex<WatchState>,
}

struct WatchState {
    shared: Option<Arc<Shared>>,
    tried: Option<Instant>,
}

/// What the watching thread and the waiters share.
struct Shared {
    /// Bumped at every batch of events in the directory.
    events: Mutex<Events>,
    changed: Condvar,
    /// False once the watch is gone (the directory removed).
    alive: AtomicBool,
}

/// How many batches of events the watch saw, and when it saw the last.
struct Events {
    count: u64,
    last: SystemTime,
}

/// Taken before a waiter looks for its file: a reply written after the
/// look bumps the count, so the wait that follows returns at once.
pub(super) struct Ticket {
    shared: Option<Arc<Shared>>,
    seen: u64,
}

impl ReplyWatch {
    pub(super) fn new(dir: &Path) -> ReplyWatch {
        ReplyWatch { dir: dir.to_path_buf(), state: Mutex::new(WatchState { shared: None, tried: None }) }
    }

    pub(super) fn ticket(&self) -> Ticket {
        let shared = self.shared();
        let seen = shared.as_ref().map_or(0, |s| s.events.lock().count);
        Ticket { shared, seen }
    }

    /// Until an event after `ticket`, at most `most` (and never longer
    /// than `WATCHED`, or `POLL` without a watch).
    pub(super) fn wait(&self, ticket: &Ticket, most: Duration) {
        let Some(shared) = ticket.shared.as_ref().filter(|s| s.alive.load(Ordering::Acquire)) else {
            std::thread::sleep(most.min(POLL));
            return;
        };
        let deadline = Instant::now() + most.min(WATCHED);
        let mut events = shared.events.lock();
        while events.count == ticket.seen && shared.alive.load(Ordering::Acquire) {
            if shared.changed.wait_until(&mut events, deadline).timed_out() {
                break;
            }
        }
    }

    /// When the watch last saw an answer written, if it saw one after
    /// `ticket` was taken: a better time for an answer found after that
    /// than its file's, which the kernel takes from its coarse clock (a
    /// new file's time is up to a tick early, and measured 5 ms early on
    /// average here: more than the whole pickup).
    pub(super) fn woken_at(&self, ticket: &Ticket) -> Option<SystemTime> {
        let events = ticket.shared.as_ref()?.events.lock();
        (events.count != ticket.seen).then_some(events.last)
    }

    /// The live watch, made (again) when there is none, at most once a
    /// `RETRY`.
    fn shared(&self) -> Option<Arc<Shared>> {
        let mut state = self.state.lock();
        if let Some(s) = &state.shared
            && s.alive.load(Ordering::Acquire)
        {
            return Some(s.clone());
        }
        if state.tried.is_some_and(|t| t.elapsed() < RETRY) {
            return None;
        }
        state.tried = Some(Instant::now());
        state.shared = start(&self.dir);
        state.shared.clone()
    }
}

/// An inotify watch of `dir` and the thread that reads it; None when
/// either cannot be had.
fn start(dir: &Path) -> Option<Arc<Shared>> {
    let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
    let raw = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if raw < 0 {
        return None;
    }
    // SAFETY: `raw` is a descriptor we just opened and own alone.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    let wd =
        unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE) };
    if wd < 0 {
        return None;
    }
    let events = Events { count: 0, last: SystemTime::UNIX_EPOCH };
    let shared = Arc::new(Shared { events: Mutex::new(events), changed: Condvar::new(), alive: AtomicBool::new(true) });
    let weak = Arc::downgrade(&shared);
    std::thread::Builder::new().name("worldfs-replies".into()).spawn(move || watch(fd, weak)).ok()?;
    Some(shared)
}

/// Wake the waiters at each batch of events, until the spool is dropped
/// or the watch is gone.
fn watch(fd: OwnedFd, weak: Weak<Shared>) {
    let mut buf = [0u8; 4096];
    loop {
        let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, counted as one.
        let ready = unsafe { libc::poll(&mut pfd, 1, ALIVE_CHECK_MS) };
        let Some(shared) = weak.upgrade() else { return };
        if ready <= 0 {
            continue;
        }
        let mut gone = false;
        loop {
            // SAFETY: reads at most buf.len() bytes into buf, which we own.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            gone |= ignored_in(&buf[..n as usize]);
        }
        let mut events = shared.events.lock();
        events.count += 1;
        events.last = SystemTime::now();
        drop(events);
        if gone {
            shared.alive.store(false, Ordering::Release);
        }
        shared.changed.notify_all();
        if gone {
            return;
        }
    }
}

/// Whether a read of inotify events holds IN_IGNORED: the watch ended (the
/// directory was removed).
fn ignored_in(mut events: &[u8]) -> bool {
    const HEAD: usize = std::mem::size_of::<libc::inotify_event>();
    while events.len() >= HEAD {
        let mask = u32::from_ne_bytes(events[4..8].try_into().unwrap_or_default());
        let len = u32::from_ne_bytes(events[12..16].try_into().unwrap_or_default()) as usize;
        if mask & libc::IN_IGNORED != 0 {
            return true;
        }
        events = events.get(HEAD + len..).unwrap_or_default();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether an event came after `ticket`, waiting up to 5 s for one.
    fn woken(watch: &ReplyWatch, ticket: &Ticket) -> bool {
        let shared = ticket.shared.as_ref().expect("no inotify watch on this machine");
        let t = Instant::now();
        while shared.events.lock().count == ticket.seen && t.elapsed() < Duration::from_secs(5) {
            watch.wait(ticket, Duration::from_secs(1));
        }
        shared.events.lock().count != ticket.seen
    }

    #[test]
    fn a_reply_written_or_renamed_into_place_wakes_the_waiters() {
        let d = tempfile::tempdir().unwrap();
        let watch = ReplyWatch::new(d.path());
        let ticket = watch.ticket();
        // Nothing happens: no event.
        watch.wait(&ticket, Duration::from_millis(20));
        assert_eq!(watch.woken_at(&ticket), None);
        // The mod's way: a temporary file renamed into place.
        let dir = d.path().to_path_buf();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::write(dir.join(".r.tmp"), "ok 1\n").unwrap();
            std::fs::rename(dir.join(".r.tmp"), dir.join("r")).unwrap();
        });
        assert!(woken(&watch, &ticket), "the renamed reply woke nobody");
        assert!(watch.woken_at(&ticket).is_some_and(|at| at <= SystemTime::now()));
        writer.join().unwrap();
        // Written in place, before the wait began: the ticket taken before it
        // still sees it.
        let before = watch.ticket();
        std::fs::write(d.path().join("s"), "ok 2\n").unwrap();
        assert!(woken(&watch, &before), "the written reply woke nobody");
    }

    #[test]
    fn a_removed_directory_ends_the_watch_and_waiters_look_again_by_time() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("replies");
        std::fs::create_dir(&dir).unwrap();
        let watch = ReplyWatch::new(&dir);
        let ticket = watch.ticket();
        let shared = ticket.shared.clone().unwrap();
        std::fs::remove_dir(&dir).unwrap();
        let t = Instant::now();
        while shared.alive.load(Ordering::Acquire) && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!shared.alive.load(Ordering::Acquire), "the watch did not end with its directory");
        // No directory: no watch, the wait is a short sleep.
        assert!(watch.ticket().shared.is_none());
        let t = Instant::now();
        watch.wait(&watch.ticket(), Duration::from_secs(60));
        assert!(t.elapsed() < Duration::from_secs(30));
    }
}
