//! Files whose attributes and pages the kernel keeps until it is told they
//! changed, instead of for the TTL: on a read-only mount of a map with a
//! change counter, a walk (`grep` over every block) then costs no GETATTR
//! per file. The tree says which files may be kept so (`Tree::watched`)
//! and offers the counter (`Tree::outside_version`); a thread polls it every
//! TTL and, when it moved, invalidates every such file handed to the kernel
//! since: in the poll that saw the change and in the two after it, because
//! a reply made from the old content may still be on its way, and cached
//! blocks are trusted for one TTL after their last check.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Weak;
use std::time::Duration;

/// At most this many files are kept until told (16 bytes each here); past
/// it, files get the plain TTL until the next change empties the list.
const HANDED_MAX: usize = 1 << 20;

/// Rounds of invalidation after a change is seen.
const ROUNDS: u8 = 3;

#[derive(Default)]
pub struct Watch {
    /// Whether a poller runs (only then may the kernel keep files longer).
    active: std::sync::atomic::AtomicBool,
    handed: Mutex<HashSet<u64>>,
}

impl Watch {
    /// Note that the kernel gets `ino`'s attributes to keep until told;
    /// false if it may not (no poller, or the list is full).
    pub fn hand_out(&self, ino: u64) -> bool {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let mut h = self.handed.lock();
        if h.len() >= HANDED_MAX && !h.contains(&ino) {
            return false;
        }
        h.insert(ino);
        true
    }

    /// The kernel dropped `ino`: nothing to invalidate for it any more.
    pub fn forget(&self, ino: u64) {
        if self.active.load(std::sync::atomic::Ordering::Relaxed) {
            self.handed.lock().remove(&ino);
        }
    }

    fn take(&self) -> Vec<u64> {
        self.handed.lock().drain().collect()
    }

    pub fn len(&self) -> usize {
        self.handed.lock().len()
    }
}

/// Start polling `fs`'s tree (until `fs` is dropped). Does nothing when the
/// tree has no change counter.
pub fn start(fs: Weak<super::WorldFs>, every: Duration) {
    let Some(first) = fs.upgrade() else { return };
    // Read before anything is handed out: a change after this is seen by
    // the first poll.
    let mut last = first.tree.outside_version();
    if last.is_none() {
        return;
    }
    first.watch.active.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(first);
    let every = every.max(Duration::from_millis(100));
    let polled = fs.clone();
    let spawned = std::thread::Builder::new().name("worldfs-watch".into()).spawn(move || {
        let fs = polled;
        let mut rounds = 0u8;
        loop {
            std::thread::sleep(every);
            let Some(fs) = fs.upgrade() else { return };
            let now = fs.tree.outside_version();
            // A counter that cannot be read says nothing: treat as a change.
            if now != last || now.is_none() {
                last = now;
                rounds = ROUNDS;
            }
            if rounds > 0 {
                rounds -= 1;
                let list: Vec<super::Inval> = fs.watch.take().into_iter().map(super::Inval::Inode).collect();
                fs.services.invalidate(list);
            }
        }
    });
    if spawned.is_err() {
        // Without a poller nothing may be kept past the TTL.
        if let Some(fs) = fs.upgrade() {
            fs.watch.active.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }
}
