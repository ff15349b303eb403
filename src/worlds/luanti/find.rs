//! `find/` and `names` in a world mount (from the name index, `index.rs`),
//! and the world-wide rename `mv MNT/find/OLD MNT/find/NEW`.
//!
//! * `names`: one line per node name of the world: the name, how many
//!   blocks hold it, how many nodes.
//! * `find/NAME/`: one symbolic link per block holding NAME, named X,Y,Z
//!   and pointing to `../../blocks/X,Y,Z`. Names are written as metadata
//!   keys are (`%XX` for bytes a file name cannot hold).
//! * Renaming `find/OLD` to `find/NEW` renames the node type OLD to NEW in
//!   every block that holds it (merging with NEW where a block has both),
//!   decoded and encoded on all cores, written in parts, each one
//!   transaction, each journaled (`worldfs undo --last N` with N the number
//!   of parts, which the listing shows, takes it back). A part holds the
//!   old and new blobs of its blocks until they are written, so it ends
//!   when they reach `part_budget` bytes (half the block cache's budget):
//!   the rename's memory does not grow with the world. Parts are
//!   contiguous runs of the block list in key order; a crash between two
//!   leaves the parts written, each whole, and their journal entries.

use super::{LuantiTree, Node, index::NameInfo};
use crate::fs::{Attr, DirEntry, FsError, Inval, Kind, Result};
use crate::view::{escape, parse, quote_text};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use worldfs_codec::luanti::Block;
use worldfs_store::{BlockPos, Change, Note};

/// A block a rename changes: position, old blob, new blob.
type Edit = (BlockPos, Vec<u8>, Vec<u8>);

/// What one block of a rename part costs besides its blobs (the edit's
/// entry, the change list's two entries, the store's read of it).
const EDIT_OVERHEAD: usize = 160;

/// Directory cookies of `find/NAME/`: a block's packed position plus this.
const COOKIE_BASE: u64 = 3;

fn io(e: String) -> FsError {
    FsError::io(format!("name index: {e}"))
}

impl LuantiTree {
    fn index(&self) -> Result<&super::index::NameIndex> {
        self.index.as_ref().ok_or_else(|| FsError::io("the name index is not available (see the mount's log)"))
    }

    /// The names of the world, with counts.
    pub(super) fn all_names(&self) -> Result<Vec<NameInfo>> {
        self.index()?.names(self.store.as_ref()).map_err(io)
    }

    /// The text of `names`.
    pub(super) fn names_text(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for n in self.all_names()? {
            out.extend_from_slice(&quote_text(&n.name));
            out.extend_from_slice(format!(" {} {}\n", n.blocks, n.nodes).as_bytes());
        }
        Ok(out)
    }

    /// The node of `find/NAME` for a file name in `find/`.
    pub(super) fn find_name_node(&self, file_name: &[u8]) -> Result<Node> {
        let name = escape::name_to_key(file_name).ok_or_else(FsError::not_found)?;
        if !self.index()?.has(self.store.as_ref(), &name).map_err(io)? {
            return Err(FsError::not_found());
        }
        Ok(Node::FindName(self.index()?.number(&name)))
    }

    /// The name a `find/NAME` number stands for, if the world still has it.
    pub(super) fn find_name(&self, n: u32) -> Result<Vec<u8>> {
        let name = self.index()?.name_of(n).ok_or_else(FsError::not_found)?;
        if !self.index()?.has(self.store.as_ref(), &name).map_err(io)? {
            return Err(FsError::not_found());
        }
        Ok(name)
    }

    fn blocks_with(&self, name: &[u8]) -> Result<Arc<Vec<BlockPos>>> {
        self.index()?.blocks_with(self.store.as_ref(), name).map_err(io)
    }

    /// Whether block `pos` holds the name numbered `n`.
    pub(super) fn find_link_exists(&self, n: u32, pos: BlockPos) -> Result<()> {
        let list = self.blocks_with(&self.find_name(n)?)?;
        list.binary_search_by_key(&pos.packed(), BlockPos::packed).map(|_| ()).map_err(|_| FsError::not_found())
    }

    pub(super) fn readlink_of(&self, node: &Node) -> Result<Vec<u8>> {
        match node {
            Node::FindLink(n, pos) => {
                self.find_link_exists(*n, *pos)?;
                Ok(format!("../../blocks/{pos}").into_bytes())
            }
            _ => Err(FsError::invalid("not a symbolic link")),
        }
    }

    pub(super) fn link_attr(&self, node: &Node) -> Result<Attr> {
        let Node::FindLink(n, pos) = node else { return Err(FsError::not_found()) };
        self.find_link_exists(*n, *pos)?;
        Ok(self.attr(node, Kind::Symlink, format!("../../blocks/{pos}").len() as u64, 0))
    }

    /// `find/`: every name, by file name.
    pub(super) fn list_find_dir(&self) -> Result<Vec<(Vec<u8>, Node)>> {
        let index = self.index()?;
        Ok(self
            .all_names()?
            .into_iter()
            .map(|n| (escape::key_to_name(&n.name), Node::FindName(index.number(&n.name))))
            .collect())
    }

    /// `find/NAME/`: its blocks in packed order; a cookie is a block's
    /// packed position plus 3, so any offset resumes.
    pub(super) fn list_find_name(
        &self,
        n: u32,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let list = self.blocks_with(&self.find_name(n)?)?;
        let start = match offset.checked_sub(COOKIE_BASE) {
            Some(after) => list.partition_point(|p| p.packed() <= after),
            None => 0,
        };
        for pos in &list[start..] {
            let node = Node::FindLink(n, *pos);
            let entry = DirEntry {
                ino: node.ino(),
                offset: pos.packed() + COOKIE_BASE,
                kind: Kind::Symlink,
                name: pos.to_string().into(),
            };
            let target_len = format!("../../blocks/{pos}").len() as u64;
            let attr = plus.then(|| self.attr(&node, Kind::Symlink, target_len, 0));
            if add(&entry, attr.as_ref()) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// What the kernel may hold about find/ and names after a block's
    /// names changed from `old` to `new`.
    pub(super) fn find_invals(&self, pos: BlockPos, old: Option<&Block>, new: Option<&Block>) -> Vec<Inval> {
        let Some(index) = &self.index else { return Vec::new() };
        let names = |b: Option<&Block>| -> Vec<Vec<u8>> {
            b.map(|b| super::index::counts_of(b).into_iter().map(|(n, _)| n).collect()).unwrap_or_default()
        };
        let (a, b) = (names(old), names(new));
        let mut inv = vec![Inval::Inode(super::inode::NAMES_FILE)];
        if a != b {
            inv.push(Inval::Inode(super::inode::FIND_DIR));
            for name in a.iter().filter(|n| !b.contains(n)).chain(b.iter().filter(|n| !a.contains(n))) {
                let dir = Node::FindName(index.number(name)).ino();
                inv.push(Inval::Inode(dir));
                inv.push(Inval::Entry(dir, pos.to_string().into()));
                inv.push(Inval::Entry(super::inode::FIND_DIR, OsString::from_vec(escape::key_to_name(name))));
            }
        }
        inv
    }

    /// `mv find/FROM find/TO`: rename node type FROM to TO in every block.
    pub(super) fn rename_everywhere(&self, from_file: &[u8], to_file: &[u8]) -> Result<()> {
        let from = escape::name_to_key(from_file).ok_or_else(FsError::not_found)?;
        let to = escape::name_to_key(to_file).ok_or_else(|| FsError::invalid("not a name"))?;
        parse::check_node_name(&to).map_err(FsError::invalid)?;
        if from == to {
            return Ok(());
        }
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        let _lock = self.commit_exclusive();
        self.check_guard()?;
        self.flush_queue()?;
        // Not an index the store cannot prove current: a block it misses
        // would keep the old name.
        let list = self.index()?.blocks_for_write(self.store.as_ref(), &from).map_err(io)?;
        if list.is_empty() {
            return Err(FsError::not_found());
        }
        // Looked up before the rename, after which TO is everywhere FROM was.
        let unseen = match &self.index {
            Some(index) if !index.has(self.store.as_ref(), &to).map_err(FsError::io)? => vec![to.clone()],
            _ => Vec::new(),
        };
        let t = std::time::Instant::now();
        // In the store's usual key order: neighbouring reads and writes.
        let mut ordered = list.to_vec();
        ordered.sort_by_key(BlockPos::legacy_key);
        let r = self.rename_parts(&ordered, &from, &to, from_file, to_file);
        if let Some(index) = &self.index {
            match &r {
                Ok(_) => index.renamed(&from, &to),
                Err(_) => index.invalidate(),
            }
        }
        let parts = r?;
        let what = format!("mv find/{} find/{}", String::from_utf8_lossy(from_file), String::from_utf8_lossy(to_file));
        self.warn_unseen(&what, unseen);
        log::info!(
            "renamed {} to {} in {} block(s) in {:.1} s, {parts} part(s) (`worldfs undo --last {parts}` takes it back)",
            String::from_utf8_lossy(&from),
            String::from_utf8_lossy(&to),
            list.len(),
            t.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// What the old and new blobs of one part of a world-wide rename may
    /// hold: half the block cache's budget (24 MiB by default), at least
    /// 64 KiB. A part stops taking blocks once its blobs reach it, so it
    /// can pass it by one block per decoding thread. A quarter on a live
    /// mount: it also holds the blocks the server has not saved yet, as
    /// much again (`LiveStore::with_shown_bytes`); with half each, the
    /// 2.8M-block world's live rename of default:cobble peaked at 108 MB.
    fn part_budget(&self) -> usize {
        let share = if self.store.applies_through_server() { 4 } else { 2 };
        (self.opts.cache_bytes / share).max(64 << 10)
    }

    /// Rename in parts of at most `part_budget` bytes of blobs, each
    /// written and journaled before the next is read; returns the number
    /// of parts.
    fn rename_parts(
        &self,
        list: &[BlockPos],
        from: &[u8],
        to: &[u8],
        from_file: &[u8],
        to_file: &[u8],
    ) -> Result<usize> {
        let r = self.rename_each_part(list, from, to, from_file, to_file);
        // The names in find/ once, after the last part (or a failed one):
        // the `mv` holds find/ locked until it returns, so invalidating a
        // name in it waits for that, and a daemon killed while its sending
        // thread waits could never exit (the `mv` waiting for its answer).
        self.send_invals(vec![
            Inval::Entry(super::inode::FIND_DIR, OsString::from_vec(from_file.to_vec())),
            Inval::Entry(super::inode::FIND_DIR, OsString::from_vec(to_file.to_vec())),
        ]);
        r
    }

    fn rename_each_part(
        &self,
        list: &[BlockPos],
        from: &[u8],
        to: &[u8],
        from_file: &[u8],
        to_file: &[u8],
    ) -> Result<usize> {
        let mut start = 0;
        let mut k = 0;
        while k == 0 || start < list.len() {
            k += 1;
            let t = std::time::Instant::now();
            let (edits, end) = self.renamed_blocks(list, start, self.part_budget(), from, to)?;
            let prepared = t.elapsed();
            // The part's label: how many parts there are is known at the last.
            let label = match (k, end == list.len()) {
                (1, true) => String::new(),
                (_, true) => format!(" (part {k} of {k})"),
                (_, false) => format!(" (part {k})"),
            };
            let what = format!(
                "mv find/{} find/{}: {} in {} block(s){label}",
                String::from_utf8_lossy(from_file),
                String::from_utf8_lossy(to_file),
                String::from_utf8_lossy(to),
                edits.len(),
            );
            let (done, bytes) = self.write_part(edits, &what)?;
            log::info!(
                "rename part {k}: {} block(s), {:.1} MB of blobs, read and re-encoded in {:.2} s, written in {:.2} s",
                done.len(),
                bytes as f64 / 1e6,
                prepared.as_secs_f64(),
                (t.elapsed() - prepared).as_secs_f64()
            );
            self.after_part(&done);
            start = end;
        }
        Ok(k)
    }

    /// Write one part in one journaled transaction, the blobs moved into
    /// the change list (not copied); returns its positions and blob bytes.
    fn write_part(&self, edits: Vec<Edit>, what: &str) -> Result<(Vec<BlockPos>, usize)> {
        let mut changes = Vec::with_capacity(edits.len() * 2);
        let mut done = Vec::with_capacity(edits.len());
        let mut bytes = 0;
        for (pos, old, new) in edits {
            bytes += old.len() + new.len();
            done.push(pos);
            changes.push(Change::Expect(pos, Some(old)));
            changes.push(Change::Put(pos, new));
        }
        // Only mapping names changed (`rename_in_block`).
        self.apply_changes(&changes, &Note::new(what.to_string()).of_nodes_only())?;
        Ok((done, bytes))
    }

    /// What the cache and the kernel hold about the blocks a part changed.
    fn after_part(&self, done: &[BlockPos]) {
        let mut inval = Vec::new();
        let now = std::time::SystemTime::now();
        let mut changed = self.changed.lock();
        for pos in done {
            self.cache.remove(*pos);
            changed.insert(*pos, now);
        }
        drop(changed);
        let mut served = self.served.lock();
        for pos in done {
            if let Some(inos) = served.remove(pos) {
                inval.extend(inos.into_keys().map(Inval::Inode));
            }
            inval.push(Inval::Inode(Node::BlockDir(*pos).ino()));
        }
        drop(served);
        inval.extend([Inval::Inode(super::inode::NAMES_FILE), Inval::Inode(super::inode::FIND_DIR)]);
        self.send_invals(inval);
    }

    /// The next part of a rename: the blocks of `list` from `start` on,
    /// read, renamed and encoded on all cores, until their old and new
    /// blobs reach `budget` bytes. Each thread takes the next block while
    /// the part is under budget, so the part is the run `start..end` of
    /// the list, whole; returns its (position, old blob, new blob) in the
    /// list's order and `end`. Blocks that no longer hold `from` (or do
    /// not decode) are left out.
    fn renamed_blocks(
        &self,
        list: &[BlockPos],
        start: usize,
        budget: usize,
        from: &[u8],
        to: &[u8],
    ) -> Result<(Vec<Edit>, usize)> {
        let next = AtomicUsize::new(start);
        let held = AtomicUsize::new(0);
        let take = || -> Result<Vec<(usize, Edit)>> {
            let mut out = Vec::new();
            while held.load(Ordering::Relaxed) < budget {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&pos) = list.get(i) else { break };
                let Some(old) = self.store.get(pos)? else { continue };
                let Ok(mut b) = Block::decode(&old) else { continue };
                if !rename_in_block(&mut b, from, to) {
                    continue;
                }
                let new = b.encode().map_err(|e| FsError::io(format!("block {pos}: {e}")))?;
                held.fetch_add(old.len() + new.len() + EDIT_OVERHEAD, Ordering::Relaxed);
                out.push((i, (pos, old, new)));
            }
            Ok(out)
        };
        let threads = crate::worlds::luanti::scan::threads();
        let results: Vec<Result<Vec<_>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let take = &take;
                    s.spawn(move || {
                        crate::sys::affinity::start_on(i);
                        take()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        });
        let mut all = Vec::new();
        for r in results {
            all.extend(r?);
        }
        all.sort_unstable_by_key(|(i, _)| *i);
        // Every index taken was done (or failed above), so the part ends
        // where the taking stopped.
        let end = next.load(Ordering::Relaxed).min(list.len());
        Ok((all.into_iter().map(|(_, e)| e).collect(), end))
    }
}

/// Rename node type `from` to `to` in a block, merging ids when the block
/// has both. Returns whether the block changed.
pub(crate) fn rename_in_block(b: &mut Block, from: &[u8], to: &[u8]) -> bool {
    let Some(from_id) = b.mapping.iter().find(|m| m.name == from).map(|m| m.id) else { return false };
    match b.mapping.iter().find(|m| m.name == to).map(|m| m.id) {
        Some(to_id) => {
            for id in b.param0.iter_mut().filter(|id| **id == from_id) {
                *id = to_id;
            }
            b.mapping.retain(|m| m.name != from);
        }
        None => {
            for m in b.mapping.iter_mut().filter(|m| m.name == from) {
                m.name = to.to_vec();
            }
        }
    }
    // Names no node uses are dropped, as the engine writes them.
    let used = worldfs_codec::luanti::block::ids_present(&b.param0);
    b.mapping.retain(|m| used.contains(m.id));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::MappingEntry;

    #[test]
    fn renames_and_merges_ids() {
        let mut b = Block::new_air(29);
        b.mapping.push(MappingEntry { id: 1, name: b"old:x".to_vec() });
        b.mapping.push(MappingEntry { id: 2, name: b"new:y".to_vec() });
        b.param0[0] = 1;
        b.param0[1] = 2;
        let mut c = b.clone();
        assert!(rename_in_block(&mut c, b"old:x", b"new:y"));
        assert_eq!(c.param0[0], 2);
        assert_eq!(c.mapping.len(), 2, "air and new:y");
        let mut d = b.clone();
        assert!(rename_in_block(&mut d, b"old:x", b"brand:new"));
        assert_eq!(d.name_of(1), Some(&b"brand:new"[..]));
        assert!(!rename_in_block(&mut d, b"absent:z", b"a:b"));
    }
}
