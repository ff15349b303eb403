//! Where a scratch file's content came from: the files of the world its
//! writer had read, and what they showed then.
//!
//! `sed -i FILE` and `cp FILE TMP; ...; mv TMP FILE` read a file of the
//! world, write a scratch file, and rename it over the original. If the
//! file changed between the read and the rename (a parallel `sed -i`, a
//! write to `node/X,Y,Z` of the same block), the rename would undo that
//! change. So the core remembers, per process, what it last read of each
//! file of the world; a scratch file a process makes or rewrites takes
//! those reads as its *bases*, a process reading a scratch file inherits
//! its bases (`sed -i` on a copy, then `mv` of the copy), and a scratch
//! file renamed over a file it has a base for is a write with that base:
//! refused with ESTALE if the file shows something else by then.
//!
//! The reader and the writer may be two processes of one shell pipeline
//! (`cat B/nodes | sed s/x/y/ > B/.t; ...; mv B/.t B/nodes`): so a scratch
//! file also takes the reads of its writer's process group (a pipeline, a
//! job, or a script without job control), the newest of each file read
//! before the writer last closed it. Its writer's own read of a file comes
//! first.
//!
//! A scratch file with no base for the file it replaces (neither its
//! writer nor its writer's group read that file: `cp new.txt B/.t; mv B/.t
//! B/nodes`) is a deliberate overwrite, accepted as it is.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What a file of the tree showed when it was read: tree inode, content.
pub(crate) type Bases = HashMap<u64, Arc<Vec<u8>>>;

/// How many (process, file) reads are remembered. The oldest go first;
/// a read still needed is that of a process that has not yet written its
/// scratch file, so a few hundred cover any number of parallel editors.
const READS_KEPT: usize = 512;

/// And what their contents may hold together (they are mostly shared with
/// the block cache and open handles, but a copy outlives both).
const READS_BYTES: usize = 32 << 20;

/// Who makes a request: the process, and its process group (the shell
/// pipeline or job it belongs to) when known. The adapter finds the group;
/// the core only compares numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub pid: u32,
    pub group: Option<u32>,
}

impl Caller {
    /// A process whose group is not known: only its own reads count.
    pub(crate) fn alone(pid: u32) -> Caller {
        Caller { pid, group: None }
    }
}

/// One read: who, which tree file, what it showed.
struct Read {
    pid: u32,
    group: Option<u32>,
    ino: u64,
    content: Arc<Vec<u8>>,
}

/// The recent reads of files of the world, by process.
#[derive(Default)]
pub(crate) struct Reads {
    /// Oldest first; one entry per (pid, inode).
    recent: VecDeque<Read>,
    bytes: usize,
}

impl Reads {
    /// `caller` read `content` of tree file `ino` (its newest read
    /// replaces an older one).
    pub(crate) fn record(&mut self, caller: Caller, ino: u64, content: Arc<Vec<u8>>) {
        if let Some(at) = self.recent.iter().position(|r| r.pid == caller.pid && r.ino == ino)
            && let Some(old) = self.recent.remove(at)
        {
            self.bytes -= old.content.len();
        }
        self.bytes += content.len();
        self.recent.push_back(Read { pid: caller.pid, group: caller.group, ino, content });
        while self.recent.len() > READS_KEPT || self.bytes > READS_BYTES {
            match self.recent.pop_front() {
                Some(old) => self.bytes -= old.content.len(),
                None => break,
            }
        }
    }

    /// `caller` read a scratch file made from `bases`: it now knows those
    /// files as they were (unless it read them itself since).
    pub(crate) fn inherit(&mut self, caller: Caller, bases: &Bases) {
        for (&ino, content) in bases {
            if !self.recent.iter().any(|r| r.pid == caller.pid && r.ino == ino) {
                self.record(caller, ino, content.clone());
            }
        }
    }

    /// What process `pid` has read, by file.
    pub(crate) fn of(&self, pid: u32) -> Bases {
        self.recent.iter().filter(|r| r.pid == pid).map(|r| (r.ino, r.content.clone())).collect()
    }

    /// The bases of a scratch file `caller` makes now: its own reads, and
    /// its group's.
    pub(crate) fn made_by(&self, caller: Caller) -> (Bases, Bases) {
        (self.of(caller.pid), caller.group.map(|g| self.of_group(g)).unwrap_or_default())
    }

    /// What the processes of `group` have read, by file: the newest read
    /// of each.
    pub(crate) fn of_group(&self, group: u32) -> Bases {
        // Oldest first, so a newer read of a file replaces an older one.
        self.recent.iter().filter(|r| r.group == Some(group)).map(|r| (r.ino, r.content.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_kept_per_process_newest_first_and_inherited_without_overriding() {
        let mut r = Reads::default();
        r.record(Caller::alone(1), 10, Arc::new(b"old".to_vec()));
        r.record(Caller::alone(1), 10, Arc::new(b"new".to_vec()));
        r.record(Caller::alone(2), 10, Arc::new(b"two".to_vec()));
        assert_eq!(r.of(1).get(&10).unwrap().as_slice(), b"new");
        assert_eq!(r.of(2).get(&10).unwrap().as_slice(), b"two");
        let bases: Bases = [(10, Arc::new(b"scratch".to_vec())), (11, Arc::new(b"other".to_vec()))].into();
        r.inherit(Caller::alone(1), &bases);
        assert_eq!(r.of(1).get(&10).unwrap().as_slice(), b"new", "its own read stands");
        assert_eq!(r.of(1).get(&11).unwrap().as_slice(), b"other");
        for i in 0..READS_KEPT as u64 {
            r.record(Caller::alone(3), 100 + i, Arc::new(Vec::new()));
        }
        assert!(r.of(1).is_empty(), "the oldest reads go first");
    }

    #[test]
    fn a_group_knows_the_newest_read_of_each_file_by_any_of_its_processes() {
        let mut r = Reads::default();
        let (cat, cat2, other) =
            (Caller { pid: 5, group: Some(5) }, Caller { pid: 6, group: Some(5) }, Caller::alone(7));
        r.record(cat, 10, Arc::new(b"v1".to_vec()));
        r.record(other, 11, Arc::new(b"elsewhere".to_vec()));
        assert_eq!(r.of_group(5).get(&10).unwrap().as_slice(), b"v1");
        r.record(cat2, 10, Arc::new(b"v2".to_vec()));
        assert_eq!(r.of_group(5).get(&10).unwrap().as_slice(), b"v2", "the newest read");
        assert!(!r.of_group(5).contains_key(&11), "a process of no group is in none");
        assert!(r.of_group(7).is_empty());
    }
}
