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
use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

/// At most this many files are kept until told (about 2 bytes each here,
/// a little more while lists grow: 16–32 MB at most; the 2.8M-block
/// world's walk keeps its 2.8M `names` in about 8 MB); past it, new files
/// get the plain TTL until the next change empties the list.
const HANDED_MAX: usize = 1 << 23;

/// Rounds of invalidation after a change is seen.
const ROUNDS: u8 = 3;

#[derive(Default)]
pub(crate) struct Watch {
    /// Whether a poller runs (only then may the kernel keep files longer).
    active: std::sync::atomic::AtomicBool,
    handed: Mutex<InoSet>,
}

/// A set of inode numbers, each kept as its low 16 bits in a sorted list
/// of its group (the other bits). Numbers are rotated by a byte first:
/// trees number a directory's files in the low byte (the Luanti tree does,
/// `worlds/luanti/inode.rs`), so the same file of neighbouring directories
/// (every block's `names`) falls in one group. Any other numbering is kept
/// exactly too, only with more groups.
#[derive(Default)]
struct InoSet {
    groups: HashMap<u64, Vec<u16>>,
    len: usize,
}

impl InoSet {
    fn split(ino: u64) -> (u64, u16) {
        let k = ino.rotate_right(8);
        (k >> 16, k as u16)
    }

    fn join(group: u64, low: u16) -> u64 {
        ((group << 16) | low as u64).rotate_left(8)
    }

    /// Adds `ino`; false (and nothing added) when `HANDED_MAX` are kept.
    fn insert(&mut self, ino: u64) -> bool {
        let (g, low) = Self::split(ino);
        let full = self.len >= HANDED_MAX;
        let list = match self.groups.get_mut(&g) {
            Some(list) => list,
            None if full => return false,
            None => self.groups.entry(g).or_default(),
        };
        match list.binary_search(&low) {
            Ok(_) => true,
            Err(_) if full => false,
            Err(at) => {
                list.insert(at, low);
                self.len += 1;
                true
            }
        }
    }

    fn contains(&self, ino: u64) -> bool {
        let (g, low) = Self::split(ino);
        self.groups.get(&g).is_some_and(|list| list.binary_search(&low).is_ok())
    }

    fn remove(&mut self, ino: u64) {
        let (g, low) = Self::split(ino);
        if let Some(list) = self.groups.get_mut(&g)
            && let Ok(at) = list.binary_search(&low)
        {
            list.remove(at);
            self.len -= 1;
            if list.is_empty() {
                self.groups.remove(&g);
            }
        }
    }

    fn into_inodes(self) -> impl Iterator<Item = u64> {
        self.groups.into_iter().flat_map(|(g, list)| list.into_iter().map(move |low| Self::join(g, low)))
    }
}

impl Watch {
    /// Note that the kernel gets `ino`'s attributes to keep until told;
    /// false if it may not (no poller, or the list is full).
    pub(crate) fn hand_out(&self, ino: u64) -> bool {
        if !self.active.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        self.handed.lock().insert(ino)
    }

    /// Whether `ino` is kept until told (and will be invalidated), and
    /// at most `max` files are.
    pub(crate) fn holds_within(&self, ino: u64, max: usize) -> bool {
        let h = self.handed.lock();
        h.len <= max && h.contains(ino)
    }

    /// The kernel dropped `ino`: nothing to invalidate for it any more.
    pub(crate) fn forget(&self, ino: u64) {
        if self.active.load(std::sync::atomic::Ordering::Relaxed) {
            self.handed.lock().remove(ino);
        }
    }

    fn take(&self) -> InoSet {
        std::mem::take(&mut *self.handed.lock())
    }

    pub(crate) fn len(&self) -> usize {
        self.handed.lock().len
    }
}

/// Invalidations are sent in batches of this many, a pause after each:
/// after a walk of millions of files, the list would otherwise wait whole
/// in the sending thread's queue (32 bytes a file) while the kernel takes
/// a few microseconds for each.
const BATCH: usize = 4096;
const BATCH_PAUSE: Duration = Duration::from_millis(10);

fn invalidate_paced(fs: &super::WorldFs, set: InoSet) {
    let mut batch = Vec::with_capacity(BATCH.min(set.len));
    for ino in set.into_inodes() {
        batch.push(super::Inval::Inode(ino));
        if batch.len() == BATCH {
            fs.services.invalidate(std::mem::take(&mut batch));
            std::thread::sleep(BATCH_PAUSE);
        }
    }
    fs.services.invalidate(batch);
}

/// Start polling `fs`'s tree (until `fs` is dropped). Does nothing when the
/// tree has no change counter.
pub(crate) fn start(fs: Weak<super::WorldFs>, every: Duration) {
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
                invalidate_paced(&fs, fs.watch.take());
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

#[cfg(test)]
mod tests {
    use super::InoSet;

    #[test]
    fn ino_set_keeps_exactly_what_was_added_and_not_removed() {
        let mut s = InoSet::default();
        // Every block's `names` (file 3) of a row of 200 blocks, a tag in
        // the top bits, and numbers that use every bit.
        let names: Vec<u64> = (0..200u64).map(|z| (1 << 60) | ((5 << 24 | z) << 8) | 3).collect();
        let odd = [0, 1, u64::MAX, 1 << 63, 0xff, 0x1_0000_0000_00ff];
        for &i in names.iter().chain(&odd) {
            assert!(s.insert(i));
            assert!(s.insert(i), "adding again is fine");
        }
        assert_eq!(s.len, names.len() + odd.len());
        assert!(s.groups.len() <= 1 + odd.len(), "neighbours share a group: {}", s.groups.len());
        s.remove(names[7]);
        s.remove(names[7]);
        s.remove(12345);
        let mut got: Vec<u64> = std::mem::take(&mut s).into_inodes().collect();
        got.sort_unstable();
        let mut want: Vec<u64> = names.iter().chain(&odd).copied().filter(|&i| i != names[7]).collect();
        want.sort_unstable();
        assert_eq!(got, want);
        assert_eq!((s.len, s.groups.len()), (0, 0));
    }
}
