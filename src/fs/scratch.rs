//! Scratch files: new names that editors and tools create next to the
//! decoded files (swap files, `sed -i` temporaries, backups). They live in
//! memory only, behave like ordinary files, and never reach the database,
//! except when one is renamed over a decoded file, which then gets its
//! content (validated) as a write.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

pub(crate) struct ScratchFile {
    pub(crate) parent: u64,
    pub(crate) name: Vec<u8>,
    pub(crate) data: Vec<u8>,
    pub(crate) mode: u16,
    pub(crate) mtime: SystemTime,
    /// A new name that becomes part of the world when written and closed
    /// (`NewName::Pending`).
    pub(crate) pending: bool,
    /// The files of the world its content was made from, as they were
    /// read (see `provenance`).
    pub(crate) bases: super::provenance::Bases,
    /// What its writer's process group had read when the writer last
    /// closed it (a pipeline's reader: see `provenance`).
    pub(crate) group_bases: super::provenance::Bases,
    /// When its rename over a file was last refused as stale (the kernel
    /// retries such a rename once: one refusal, one line).
    pub(crate) stale_at: Option<std::time::Instant>,
}

impl ScratchFile {
    /// What tree file `t` showed when this file's content was made from
    /// it: its writer's own read first, else its writer's group's.
    pub(crate) fn base_of(&self, t: u64) -> Option<Arc<Vec<u8>>> {
        self.bases.get(&t).or_else(|| self.group_bases.get(&t)).cloned()
    }

    /// Every file its content was made from, as `base_of` sees them.
    pub(crate) fn all_bases(&self) -> super::provenance::Bases {
        let mut all = self.group_bases.clone();
        all.extend(self.bases.iter().map(|(&t, c)| (t, c.clone())));
        all
    }
}

pub(crate) struct Scratch {
    files: HashMap<u64, ScratchFile>,
    by_name: HashMap<(u64, Vec<u8>), u64>,
    bytes: usize,
    /// What scratch files and write handles' buffers may hold together,
    /// and the latter's bytes (see `Options::write_buffers`).
    limit: usize,
    buffered: Arc<AtomicUsize>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            files: HashMap::new(),
            by_name: HashMap::new(),
            bytes: 0,
            limit: 512 << 20,
            buffered: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Scratch {
    pub(crate) fn set_budget(&mut self, limit: usize, buffered: Arc<AtomicUsize>) {
        self.limit = limit;
        self.buffered = buffered;
    }

    /// Bytes all scratch files hold.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn insert(&mut self, ino: u64, f: ScratchFile) {
        self.bytes += f.data.len();
        self.by_name.insert((f.parent, f.name.clone()), ino);
        self.files.insert(ino, f);
    }

    pub(crate) fn get(&self, ino: u64) -> Option<&ScratchFile> {
        self.files.get(&ino)
    }

    /// A file's bookkeeping, to change other than through its data (which
    /// goes through `edit`, to keep the count).
    pub(crate) fn note(&mut self, ino: u64, f: impl FnOnce(&mut ScratchFile)) {
        if let Some(file) = self.files.get_mut(&ino) {
            let len = file.data.len();
            f(file);
            debug_assert_eq!(file.data.len(), len, "data changes go through edit");
        }
    }

    pub(crate) fn lookup(&self, parent: u64, name: &[u8]) -> Option<u64> {
        self.by_name.get(&(parent, name.to_vec())).copied()
    }

    pub(crate) fn remove(&mut self, ino: u64) -> Option<ScratchFile> {
        let f = self.files.remove(&ino)?;
        self.by_name.remove(&(f.parent, f.name.clone()));
        self.bytes -= f.data.len();
        Some(f)
    }

    pub(crate) fn rename(&mut self, ino: u64, parent: u64, name: &[u8]) {
        if let Some(f) = self.files.get_mut(&ino) {
            self.by_name.remove(&(f.parent, f.name.clone()));
            f.parent = parent;
            f.name = name.to_vec();
            self.by_name.insert((parent, name.to_vec()), ino);
        }
    }

    /// Change a file's data through `edit`, keeping the memory count right.
    /// Err when the scratch budget would be exceeded (the growth is undone).
    pub(crate) fn edit<T>(&mut self, ino: u64, edit: impl FnOnce(&mut ScratchFile) -> T) -> Option<Result<T, ()>> {
        let f = self.files.get_mut(&ino)?;
        let before = f.data.len();
        let r = edit(f);
        let after = f.data.len();
        let others = self.buffered.load(Ordering::Relaxed);
        if after > before && self.bytes + (after - before) + others > self.limit {
            f.data.truncate(before);
            return Some(Err(()));
        }
        f.mtime = SystemTime::now();
        self.bytes = self.bytes + after - before;
        Some(Ok(r))
    }

    /// The scratch files in a directory, by name.
    pub(crate) fn children(&self, parent: u64) -> Vec<(Vec<u8>, u64)> {
        let mut v: Vec<(Vec<u8>, u64)> =
            self.files.iter().filter(|(_, f)| f.parent == parent).map(|(&ino, f)| (f.name.clone(), ino)).collect();
        v.sort();
        v
    }
}
