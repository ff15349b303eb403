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
//! A scratch file with no base for the file it replaces (its writer never
//! read that file: `cp new.txt B/.t; mv B/.t B/nodes`) is a deliberate
//! overwrite, accepted as it is.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What a file of the tree showed when it was read: tree inode, content.
pub type Bases = HashMap<u64, Arc<Vec<u8>>>;

/// How many (process, file) reads are remembered. The oldest go first;
/// a read still needed is that of a process that has not yet written its
/// scratch file, so a few hundred cover any number of parallel editors.
const READS_KEPT: usize = 512;

/// And what their contents may hold together (they are mostly shared with
/// the block cache and open handles, but a copy outlives both).
const READS_BYTES: usize = 32 << 20;

/// The recent reads of files of the world, by process.
#[derive(Default)]
pub struct Reads {
    /// (pid, tree inode, content), oldest first; one entry per pair.
    recent: VecDeque<(u32, u64, Arc<Vec<u8>>)>,
    bytes: usize,
}

impl Reads {
    /// Process `pid` read `content` of tree file `ino` (its newest read
    /// replaces an older one).
    pub fn record(&mut self, pid: u32, ino: u64, content: Arc<Vec<u8>>) {
        if let Some(at) = self.recent.iter().position(|(p, i, _)| *p == pid && *i == ino)
            && let Some((_, _, old)) = self.recent.remove(at)
        {
            self.bytes -= old.len();
        }
        self.bytes += content.len();
        self.recent.push_back((pid, ino, content));
        while self.recent.len() > READS_KEPT || self.bytes > READS_BYTES {
            match self.recent.pop_front() {
                Some((_, _, old)) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    /// Process `pid` read a scratch file made from `bases`: it now knows
    /// those files as they were (unless it read them itself since).
    pub fn inherit(&mut self, pid: u32, bases: &Bases) {
        for (&ino, content) in bases {
            if !self.recent.iter().any(|(p, i, _)| *p == pid && *i == ino) {
                self.record(pid, ino, content.clone());
            }
        }
    }

    /// What process `pid` has read, by file.
    pub fn of(&self, pid: u32) -> Bases {
        self.recent.iter().filter(|(p, _, _)| *p == pid).map(|(_, i, c)| (*i, c.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_kept_per_process_newest_first_and_inherited_without_overriding() {
        let mut r = Reads::default();
        r.record(1, 10, Arc::new(b"old".to_vec()));
        r.record(1, 10, Arc::new(b"new".to_vec()));
        r.record(2, 10, Arc::new(b"two".to_vec()));
        assert_eq!(r.of(1).get(&10).unwrap().as_slice(), b"new");
        assert_eq!(r.of(2).get(&10).unwrap().as_slice(), b"two");
        let bases: Bases = [(10, Arc::new(b"scratch".to_vec())), (11, Arc::new(b"other".to_vec()))].into();
        r.inherit(1, &bases);
        assert_eq!(r.of(1).get(&10).unwrap().as_slice(), b"new", "its own read stands");
        assert_eq!(r.of(1).get(&11).unwrap().as_slice(), b"other");
        for i in 0..READS_KEPT as u64 {
            r.record(3, 100 + i, Arc::new(Vec::new()));
        }
        assert!(r.of(1).is_empty(), "the oldest reads go first");
    }
}
