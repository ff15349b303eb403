//! The commit path: a file's new content -> a new block -> validated,
//! encoded, checked by decoding, and written in one short transaction.
//! A refused write changes nothing and says why (Invalid for content,
//! Io for storage, ReadOnly while a server has the map open); the reason is
//! logged and kept in MNT/write-errors.

use super::cache::Loaded;
use super::table::TableKey;
use super::{LuantiTree, Node, limits};
use crate::fs::{ErrorKind, FsError, Inval, Result};
use crate::view::parse::{self, ParseError};
use crate::view::{BlockFile, MetaFile, escape, meta_dir_name};
use parking_lot::MutexGuard;
use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::sync::Arc;
use std::time::SystemTime;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::{MAX_VERSION, MIN_WRITE_VERSION};
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_store::{BlockPos, Change, Note};

/// The rules the engine relies on when it loads a block; a block breaking
/// one of them is never written (a v29 block that breaks them stops the
/// server). Only checked for what changed, so that an old oddity elsewhere
/// in a block does not make it impossible to edit.
fn validate(orig: &Block, new: &Block) -> std::result::Result<(), String> {
    if new.param0 != orig.param0 || new.mapping != orig.mapping {
        let named = worldfs_codec::luanti::block::ids_present(&new.mapping.iter().map(|m| m.id).collect::<Vec<_>>());
        if let Some(id) = new.param0.iter().find(|&&id| !named.contains(id)) {
            return Err(format!("content id {id} is used but has no name in names"));
        }
        if new.mapping.iter().any(|m| m.name.is_empty()) {
            return Err("a name in names is empty".into());
        }
    }
    let mut seen = HashSet::new();
    for e in &new.metadata.entries {
        if e.pos >= 4096 || !seen.insert(e.pos) {
            return Err(format!("node metadata position {} is outside the block or repeated", e.pos));
        }
    }
    if new.version < 27 && new.lighting_complete != 0xffff {
        return Err(format!(
            "version {} cannot store lighting_complete (27 and later can); it must stay 0xffff",
            new.version
        ));
    }
    if new.version < 28 && new.metadata.entries.iter().any(|e| e.vars.iter().any(|v| v.private)) {
        return Err(format!("version {} cannot store private fields", new.version));
    }
    Ok(())
}

/// What the engine would write for an edited block: versions 22/23 become
/// 25, content ids that no longer fit one byte widen the ids, and the
/// metadata list version follows the block version.
fn normalize(b: &mut Block) {
    if b.version < MIN_WRITE_VERSION {
        b.version = 25;
    }
    if !b.fits_content_width() {
        b.content_width = 2;
    }
    b.metadata.version = b.metadata.version_for(b.version);
}

fn invalid(node: &str, e: ParseError) -> FsError {
    FsError::invalid(format!("{node}: {e}"))
}

/// Whether a content is written or only judged (see `check_content`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Commit,
    Check,
}

/// What the commit lock guards besides one commit at a time: the blocks
/// whose change a live mount handed to the server and waits for, and
/// whether a change of many blocks waits for them to end.
#[derive(Default)]
pub(super) struct Commits {
    in_flight: HashSet<BlockPos>,
    exclusive_waiting: usize,
}

/// A block's read-modify-write under the commit lock. On a live mount the
/// lock is given up while the server applies the change (`write`: until
/// its next step, ~0.1 s), so that changes of other blocks, from other
/// files and processes, reach the server meanwhile and are applied in the
/// same step; the block stays reserved until the commit ends, so another
/// change of it starts from this one's outcome (its `shown` bytes).
pub(super) struct BlockCommit<'a> {
    tree: &'a LuantiTree,
    pos: BlockPos,
    /// None while and after the block is reserved without the lock.
    lock: Option<MutexGuard<'a, Commits>>,
}

impl BlockCommit<'_> {
    /// Run `write` (the store's apply): without the commit lock on a live
    /// mount, the block reserved.
    fn write<T>(&mut self, write: impl FnOnce() -> T) -> T {
        if !self.tree.live {
            return write();
        }
        if let Some(mut lock) = self.lock.take() {
            lock.in_flight.insert(self.pos);
        }
        write()
    }
}

impl Drop for BlockCommit<'_> {
    fn drop(&mut self) {
        if self.lock.is_none() {
            self.tree.commit_lock.lock().in_flight.remove(&self.pos);
            self.tree.commit_done.notify_all();
        }
    }
}

impl LuantiTree {
    /// The commit lock for a change of block `pos`, once no other change
    /// of it is in flight and no change of many blocks waits.
    pub(super) fn commit_block(&self, pos: BlockPos) -> BlockCommit<'_> {
        let mut lock = self.commit_lock.lock();
        while lock.in_flight.contains(&pos) || lock.exclusive_waiting > 0 {
            self.commit_done.wait(&mut lock);
        }
        BlockCommit { tree: self, pos, lock: Some(lock) }
    }

    /// The commit lock with no block's change in flight: for a change of
    /// many blocks (or of the set of blocks).
    pub(super) fn commit_exclusive(&self) -> MutexGuard<'_, Commits> {
        let mut lock = self.commit_lock.lock();
        if !lock.in_flight.is_empty() {
            lock.exclusive_waiting += 1;
            while !lock.in_flight.is_empty() {
                self.commit_done.wait(&mut lock);
            }
            lock.exclusive_waiting -= 1;
        }
        lock
    }
}

/// The refusal of a write made from a copy that is no longer current.
fn stale(what: &str) -> FsError {
    FsError::stale(format!(
        "{what} was changed by someone else since it was opened; nothing written \
         (read it again and redo the change)"
    ))
}

impl LuantiTree {
    pub(super) fn send_invals(&self, list: Vec<Inval>) {
        self.services.invalidate(list);
    }

    /// Refuse while another process has the map database open.
    pub(super) fn check_guard(&self) -> Result<()> {
        let who = self.guard.current();
        if who.is_empty() {
            return Ok(());
        }
        Err(FsError::read_only(format!(
            "the map database is open in {}; writes are refused while it runs (it would overwrite them)",
            who.join(", ")
        )))
    }

    /// The block as stored now (the cache is refreshed if it is stale).
    fn fresh(&self, pos: BlockPos) -> Result<Option<Arc<Loaded>>> {
        if let Some(blob) = self.queue.get(pos) {
            return Ok(Some(self.loaded_from(pos, blob)));
        }
        let Some(blob) = self.store.get(pos)? else {
            self.cache.remove(pos);
            return Ok(None);
        };
        if let Some(l) = self.cache.peek(pos)
            && l.blob == blob
        {
            return Ok(Some(l));
        }
        let l = Arc::new(Loaded::new(pos, blob));
        self.cache.insert(l.clone());
        Ok(Some(l))
    }

    /// Commit new content for a file node; `base`: what the writer started
    /// from (see `Tree::write`).
    pub(super) fn commit(&self, node: &Node, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.commit_or_check(node, content, base, Mode::Commit)
    }

    /// Judge `content` as the new content of a file as `commit` would,
    /// without writing it (see `Tree::check_content`).
    pub(super) fn judge_content(&self, node: &Node, content: &[u8]) -> Result<()> {
        self.commit_or_check(node, content, None, Mode::Check)
    }

    fn commit_or_check(&self, node: &Node, content: &[u8], base: Option<&[u8]>, mode: Mode) -> Result<()> {
        self.check_writable_node(node)?;
        let what = self.describe(node);
        let file = Some((node, base));
        match node {
            Node::BlockFile(pos, BlockFile::Raw) => self.commit_raw(*pos, content, base, &what, mode),
            Node::BlockFile(pos, f) => self.edit_block(*pos, file, content, &what, mode, |b| {
                match f {
                    BlockFile::Info => parse::apply_info(b, content),
                    BlockFile::Names => parse::apply_names(b, content),
                    BlockFile::Nodes => parse::apply_nodes(*pos, b, content),
                    BlockFile::Layers => parse::apply_layers(*pos, b, content),
                    BlockFile::Param0 => parse::apply_param0(b, content),
                    BlockFile::Param1 => parse::apply_param(&mut b.param1, content, "param1"),
                    BlockFile::Param2 => parse::apply_param(&mut b.param2, content, "param2"),
                    BlockFile::Timers => parse::apply_timers(*pos, b, content),
                    BlockFile::Objects => {
                        let old = b.objects.objects.clone();
                        parse::apply_objects(b, content).and_then(|_| self.check_objects_survive(b, &old))
                    }
                    BlockFile::Raw | BlockFile::Error | BlockFile::Schematic | BlockFile::Top => {
                        unreachable!("refused above")
                    }
                }
                .map_err(|e| invalid(&what, e))
            }),
            Node::MetaFile(pos, p16, f) => self.edit_block(*pos, file, content, &what, mode, |b| {
                let version = b.version;
                let e = entry_mut(b, *p16)?;
                match f {
                    MetaFile::Inventory => parse::apply_inventory(e, content),
                    MetaFile::Private => parse::apply_private(e, content, version),
                }
                .map_err(|e| invalid(&what, e))
            }),
            Node::NodeFile([x, y, z]) => {
                let pos = BlockPos::of_node(*x, *y, *z).ok_or_else(FsError::not_found)?;
                let i = super::in_block(pos, [*x, *y, *z]).ok_or_else(FsError::not_found)? as usize;
                self.edit_block(pos, file, content, &what, mode, |b| {
                    parse::apply_node(b, i, content).map_err(|e| invalid(&what, e))
                })
            }
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(_) if mode == Mode::Check => Ok(()),
                TableKey::WorldFile(name) => self.write_world_file(&name, content, base),
                TableKey::Field { pos, p16, key } => {
                    self.set_field_value(pos, p16, &key, node, content, base, false, mode)
                }
            },
            _ => Err(FsError::perm("this file cannot be written")),
        }
    }

    /// Write a field's value (`base`: see `commit`). `new`: the key is being made (a new file in
    /// fields/); otherwise it must still exist (a file opened before its
    /// key was deleted or renamed does not bring it back).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn set_field_value(
        &self,
        pos: BlockPos,
        p16: u16,
        key: &[u8],
        node: &Node,
        content: &[u8],
        base: Option<&[u8]>,
        new: bool,
        mode: Mode,
    ) -> Result<()> {
        let what = self.describe(node);
        let file = if new { None } else { Some((node, base)) };
        self.edit_block(pos, file, content, &what, mode, |b| {
            let value = parse::field_value(content).map_err(|e| invalid(&what, e))?;
            let entry = entry_mut(b, p16)?;
            if !new && entry.get(key).is_none() {
                return Err(FsError::new(
                    ErrorKind::NotFound,
                    format!("{what}: the key was deleted or renamed meanwhile"),
                ));
            }
            parse::set_field(entry, key, value).map_err(|e| invalid(&what, e))
        })
    }

    /// The server deletes a block's stored objects when it activates the
    /// block if its timestamp is undefined or older than the last
    /// /clearobjects: new objects written there would silently vanish.
    fn check_objects_survive(
        &self,
        b: &Block,
        old: &[worldfs_codec::luanti::objects::StaticObject],
    ) -> parse::Result<()> {
        if b.objects.objects.iter().all(|o| old.contains(o)) {
            return Ok(());
        }
        let cleared: u32 = self.world.env_meta("last_clear_objects_time").and_then(|v| v.parse().ok()).unwrap_or(0);
        let why = if b.timestamp == u32::MAX {
            "the block's timestamp is undefined (4294967295)".to_string()
        } else if b.timestamp < cleared {
            format!("the block's timestamp {} is older than the last /clearobjects ({cleared})", b.timestamp)
        } else {
            return Ok(());
        };
        let game_time = self.world.env_meta("game_time").unwrap_or_else(|| "0".into());
        Err(ParseError {
            line: None,
            message: format!(
                "{why}, so the server would delete these objects when it activates the block; \
                 set timestamp in info first (the world's game_time is {game_time})"
            ),
        })
    }

    /// Read-modify-write of one block. `file`: the file being written, for
    /// the no-op check (content equal to what the file shows now) and the
    /// conflict check (what it showed when the writer opened it, if known).
    fn edit_block(
        &self,
        pos: BlockPos,
        file: Option<(&Node, Option<&[u8]>)>,
        content: &[u8],
        what: &str,
        mode: Mode,
        edit: impl FnOnce(&mut Block) -> Result<()>,
    ) -> Result<()> {
        let mut commit = self.commit_block(pos);
        self.check_guard()?;
        let loaded = self.fresh(pos)?.ok_or_else(FsError::not_found)?;
        let Some(orig) = loaded.decoded() else {
            return Err(FsError::io(format!(
                "block {pos} cannot be decoded; write a valid blob to its raw file or rmdir it"
            )));
        };
        if let Some((node, base)) = file {
            let now = self.content(node).ok().map(|c| c.bytes);
            let now = now.as_deref().map(Vec::as_slice);
            if now == Some(content) {
                return Ok(());
            }
            if mode == Mode::Commit && base.is_some_and(|b| now != Some(b)) {
                return Err(stale(what));
            }
        }
        let mut b = Block::clone(&orig);
        edit(&mut b)?;
        if b == *orig {
            return Ok(());
        }
        normalize(&mut b);
        validate(&orig, &b).map_err(|m| FsError::invalid(format!("block {pos}: {m}")))?;
        limits::check_objects(&orig, &b, self.max_objects_per_block)
            .map_err(|m| FsError::invalid(format!("block {pos}: {m}")))?;
        let blob = b.encode().map_err(|e| FsError::invalid(format!("block {pos}: {e}")))?;
        match Block::decode(&blob) {
            Ok(back) if back == b => {}
            other => {
                return Err(FsError::io(format!(
                    "block {pos}: internal error: the encoded block does not decode back ({:?})",
                    other.err()
                )));
            }
        }
        if mode == Mode::Check {
            return Ok(());
        }
        let unseen = self.unseen_names(&orig, &b)?;
        commit.write(|| self.write_block(pos, &loaded.blob, blob.clone(), what))?;
        self.cache.insert(Arc::new(Loaded::with_block(pos, blob, Ok(b.clone()))));
        self.after_commit(pos, Some(&orig), Some(&b));
        self.warn_unseen(what, unseen);
        Ok(())
    }

    /// Names `new` brings into its block that no block of the world holds.
    fn unseen_names(&self, orig: &Block, new: &Block) -> Result<Vec<Vec<u8>>> {
        let added: Vec<Vec<u8>> = new
            .mapping
            .iter()
            .filter(|m| !orig.mapping.iter().any(|o| o.name == m.name))
            .map(|m| m.name.clone())
            .collect();
        let Some(index) = &self.index else { return Ok(Vec::new()) };
        if self.live {
            // The server refuses a name it has not registered, which says
            // more; and the index goes stale at each of its map saves, so
            // asking it would scan the whole map (30 s for 2.8M blocks).
            return Ok(Vec::new());
        }
        let mut unseen = Vec::new();
        for name in added {
            if !index.has(self.store.as_ref(), &name).map_err(FsError::io)? {
                unseen.push(name);
            }
        }
        Ok(unseen)
    }

    /// A committed write that brought in names found nowhere else in the
    /// world: accepted, with a warning in write-errors (a typo shows).
    pub(super) fn warn_unseen(&self, what: &str, unseen: Vec<Vec<u8>>) {
        if unseen.is_empty() {
            return;
        }
        let list: Vec<String> = unseen.iter().map(|n| format!("'{}'", String::from_utf8_lossy(n))).collect();
        let line = format!(
            "{what}: warning: written, but {} appear{} nowhere else in the world (a typo?)",
            list.join(", "),
            if unseen.len() == 1 { "s" } else { "" }
        );
        self.services.report(line);
    }

    /// Store a block's new bytes in place of `old`: at once (refused if the
    /// store no longer holds `old`: someone else wrote it since it was
    /// read), or queued for a grouped commit.
    fn write_block(&self, pos: BlockPos, old: &[u8], blob: Vec<u8>, what: &str) -> Result<()> {
        if self.queue.enabled() {
            self.queue.push(pos, blob, what);
            Ok(())
        } else {
            let changes = [Change::Expect(pos, Some(old.to_vec())), Change::Put(pos, blob)];
            self.apply_changes(&changes, &Note::new(what))
        }
    }

    /// Write every queued block now (grouped commits); a failure is logged
    /// and shown in write-errors, and the blocks stay queued for a retry.
    pub(super) fn flush_queue(&self) -> Result<()> {
        if !self.queue.enabled() {
            return Ok(());
        }
        let was_failing = self.queue.failing();
        let before = self.store.data_version();
        let r = self.queue.flush(self.store.as_ref(), || self.check_guard().map_err(|e| e.message));
        if matches!(r, Ok(n) if n > 0) {
            self.index_wrote(before);
        }
        match r {
            Ok(_) => Ok(()),
            Err(e) => {
                let err =
                    FsError::io(format!("{} queued block change(s) not written yet (retrying): {e}", self.queue.len()));
                if was_failing.as_deref() != Some(e.as_str()) {
                    self.services.report(format!("grouped commit: {}", err.message));
                }
                Err(err)
            }
        }
    }

    /// At unmount, after the last group could not be written (`error`):
    /// keep its changes for the next mount (`unwritten.rs`) and say so, or
    /// say that they are lost if even that fails.
    pub(super) fn keep_unwritten(&self, error: &str) -> String {
        let kept: Vec<super::unwritten::Kept> = self
            .queue
            .pending()
            .into_iter()
            .map(|(pos, blob, what)| {
                // Unknown if the store cannot be read: then written as is.
                let base = self.store.get(pos).ok().map(Option::unwrap_or_default);
                super::unwritten::Kept { pos, blob, base, what }
            })
            .collect();
        let n = kept.len();
        match super::unwritten::keep(&self.world.dir, &kept) {
            Ok(file) => format!(
                "NOT WRITTEN: {n} block change(s) could not be written to the map at unmount ({error}); they are \
                 kept in {} and will be written at the next writable mount of {} (`worldfs check` lists them)",
                file.display(),
                self.world.dir.display()
            ),
            Err(why) => {
                format!("LOST: {n} block change(s) could not be written at unmount ({error}), nor kept ({why})")
            }
        }
    }

    /// `raw`: a whole blob, stored byte for byte if it decodes and breaks
    /// none of the engine's rules.
    fn commit_raw(&self, pos: BlockPos, content: &[u8], base: Option<&[u8]>, what: &str, mode: Mode) -> Result<()> {
        let mut commit = self.commit_block(pos);
        self.check_guard()?;
        let loaded = self.fresh(pos)?.ok_or_else(FsError::not_found)?;
        if loaded.blob == content {
            return Ok(());
        }
        if mode == Mode::Commit && base.is_some_and(|b| b != loaded.blob.as_slice()) {
            return Err(stale(what));
        }
        let b = Block::decode(content)
            .map_err(|e| FsError::invalid(format!("blocks/{pos}/raw: the new blob does not decode: {e}")))?;
        let empty = Block { param0: Vec::new(), ..b.clone() };
        validate(&empty, &b).map_err(|m| FsError::invalid(format!("blocks/{pos}/raw: {m}")))?;
        let old = loaded.decoded();
        let before = old.as_deref().cloned().unwrap_or_else(|| Block { mapping: Vec::new(), ..Block::new_air(29) });
        limits::check_objects(&before, &b, self.max_objects_per_block)
            .map_err(|m| FsError::invalid(format!("blocks/{pos}/raw: {m}")))?;
        for m in b.mapping.iter().filter(|m| !before.mapping.iter().any(|o| o.name == m.name)) {
            parse::check_node_name(&m.name).map_err(|e| FsError::invalid(format!("blocks/{pos}/raw: {e}")))?;
        }
        if mode == Mode::Check {
            return Ok(());
        }
        let unseen = self.unseen_names(&before, &b)?;
        commit.write(|| self.write_block(pos, &loaded.blob, content.to_vec(), what))?;
        self.cache.insert(Arc::new(Loaded::with_block(pos, content.to_vec(), Ok(b.clone()))));
        self.after_commit(pos, old.as_deref(), Some(&b));
        self.warn_unseen(what, unseen);
        Ok(())
    }

    /// Apply changes to the store in one transaction (the name index
    /// learns that this mount wrote it).
    pub(super) fn apply_changes(&self, changes: &[Change], note: &Note) -> Result<()> {
        let before = self.store.data_version();
        self.store.apply(changes, note)?;
        self.index_wrote(before);
        Ok(())
    }

    fn index_wrote(&self, before: Option<u64>) {
        if let Some(i) = &self.index {
            i.wrote(self.store.as_ref(), before, self.store.data_version());
        }
    }

    /// Everything the kernel may hold about a block that just changed, and
    /// the name index.
    fn after_commit(&self, pos: BlockPos, old: Option<&Block>, new: Option<&Block>) {
        if let Some(i) = &self.index {
            i.changed(pos, old, new);
        }
        self.send_invals(self.find_invals(pos, old, new));
        self.after_commit_kernel(pos, old, new);
    }

    /// Everything the kernel may hold about a block that just changed.
    fn after_commit_kernel(&self, pos: BlockPos, old: Option<&Block>, new: Option<&Block>) {
        self.changed.lock().insert(pos, SystemTime::now());
        let mut inv = vec![Inval::Inode(Node::BlockDir(pos).ino()), Inval::Inode(Node::MetaRoot(pos).ino())];
        let dir = Node::BlockDir(pos).ino();
        for f in BlockFile::DECODED.iter().chain(&[BlockFile::Error]) {
            inv.push(Inval::Inode(Node::BlockFile(pos, *f).ino()));
            // the set of files changes when a block becomes (un)decodable
            inv.push(Inval::Entry(dir, f.name().into()));
        }
        inv.push(Inval::Entry(dir, "meta".into()));
        let entries =
            |b: Option<&Block>| -> Vec<MetaEntry> { b.map(|b| b.metadata.entries.clone()).unwrap_or_default() };
        let (old_e, new_e) = (entries(old), entries(new));
        let meta_root = Node::MetaRoot(pos).ino();
        let table = self.table.lock();
        for e in old_e.iter().chain(&new_e) {
            let p16 = e.pos;
            inv.push(Inval::Inode(Node::MetaDir(pos, p16).ino()));
            inv.push(Inval::Inode(Node::FieldsDir(pos, p16).ino()));
            for f in MetaFile::ALL {
                inv.push(Inval::Inode(Node::MetaFile(pos, p16, f).ino()));
            }
            let in_old = old_e.iter().find(|o| o.pos == p16);
            let in_new = new_e.iter().find(|o| o.pos == p16);
            if in_old.is_none() || in_new.is_none() {
                inv.push(Inval::Entry(meta_root, meta_dir_name(pos, p16).into()));
            }
            let fields = Node::FieldsDir(pos, p16).ino();
            for v in &e.vars {
                let key = TableKey::Field { pos, p16, key: v.key.clone() };
                if let Some(id) = table.find(&key) {
                    inv.push(Inval::Inode(Node::Table(id).ino()));
                }
                let has = |x: Option<&MetaEntry>| x.is_some_and(|x| x.get(&v.key).is_some());
                if !has(in_old) || !has(in_new) {
                    inv.push(Inval::Entry(fields, OsString::from_vec(escape::key_to_name(&v.key))));
                }
            }
        }
        drop(table);
        if let Some(inos) = self.served.lock().remove(&pos) {
            inv.extend(inos.into_keys().map(Inval::Inode));
        }
        inv.sort_by_key(|i| format!("{i:?}"));
        inv.dedup();
        self.send_invals(inv);
    }

    /// The version new blocks get: the newest the world uses (looking at
    /// its first blocks), 29 for an empty world.
    fn new_block_version(&self) -> u8 {
        *self.new_block_version.get_or_init(|| {
            let page = self.store.scan_after(None, 64).unwrap_or_default();
            let newest = page.iter().filter_map(|(_, b)| b.first().copied()).max().unwrap_or(MAX_VERSION);
            newest.clamp(25, MAX_VERSION)
        })
    }

    pub(super) fn create_block(&self, pos: BlockPos) -> Result<()> {
        let _lock = self.commit_exclusive();
        self.check_guard()?;
        self.flush_queue()?;
        limits::check_new_block(pos).map_err(FsError::invalid)?;
        if self.store.contains(pos)? {
            return Err(FsError::exists(format!("block {pos} exists")));
        }
        let b = Block::new_air(self.new_block_version());
        let blob = b.encode().map_err(|e| FsError::io(e.to_string()))?;
        let changes = [Change::Expect(pos, None), Change::Put(pos, blob.clone())];
        self.apply_changes(&changes, &Note::new(format!("mkdir blocks/{pos}")))?;
        self.cache.insert(Arc::new(Loaded::with_block(pos, blob, Ok(b.clone()))));
        self.after_commit(pos, None, Some(&b));
        Ok(())
    }

    pub(super) fn delete_block(&self, pos: BlockPos) -> Result<()> {
        let _lock = self.commit_exclusive();
        self.check_guard()?;
        self.flush_queue()?;
        let old = self.fresh(pos)?.ok_or_else(FsError::not_found)?;
        let changes = [Change::Expect(pos, Some(old.blob.clone())), Change::Delete(pos)];
        self.apply_changes(&changes, &Note::new(format!("rmdir blocks/{pos}")))?;
        self.cache.remove(pos);
        self.after_commit(pos, old.decoded().as_deref(), None);
        Ok(())
    }

    pub(super) fn add_metadata(&self, pos: BlockPos, p16: u16) -> Result<()> {
        let what = format!("mkdir blocks/{pos}/meta/{}", meta_dir_name(pos, p16));
        self.edit_block(pos, None, b"", &what, Mode::Commit, |b| {
            if b.metadata.get(p16).is_some() {
                return Err(FsError::exists("the node already has metadata"));
            }
            b.metadata.entries.push(MetaEntry::new(p16));
            Ok(())
        })
    }

    pub(super) fn remove_metadata(&self, pos: BlockPos, p16: u16) -> Result<()> {
        let what = format!("rmdir blocks/{pos}/meta/{}", meta_dir_name(pos, p16));
        self.edit_block(pos, None, b"", &what, Mode::Commit, |b| {
            let before = b.metadata.entries.len();
            b.metadata.entries.retain(|e| e.pos != p16);
            if b.metadata.entries.len() == before {
                return Err(FsError::not_found());
            }
            Ok(())
        })
    }

    pub(super) fn delete_field(&self, pos: BlockPos, p16: u16, key: &[u8]) -> Result<()> {
        let what = format!("unlink field {} of {pos}", String::from_utf8_lossy(key));
        self.edit_block(pos, None, b"", &what, Mode::Commit, |b| {
            let e = entry_mut(b, p16)?;
            if e.get(key).is_none() {
                return Err(FsError::not_found());
            }
            e.vars.retain(|v| v.key != key);
            Ok(())
        })
    }

    /// Rename a key (replacing `to` if it exists), keeping value and flag.
    pub(super) fn rename_field(&self, pos: BlockPos, p16: u16, from: &[u8], to: &[u8]) -> Result<()> {
        let what = format!("rename field {} of {pos}", String::from_utf8_lossy(from));
        self.edit_block(pos, None, b"", &what, Mode::Commit, |b| {
            let e = entry_mut(b, p16)?;
            let var = e.get(from).cloned().ok_or_else(FsError::not_found)?;
            e.vars.retain(|v| v.key != to);
            for v in e.vars.iter_mut().filter(|v| v.key == from) {
                v.key = to.to_vec();
                v.value = var.value.clone();
            }
            Ok(())
        })
    }

    /// The world's own text files are replaced atomically: a temporary file
    /// in the world directory, then rename.
    fn write_world_file(&self, name: &str, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        use std::io::Write;
        use std::sync::atomic::{AtomicU64, Ordering};
        static TEMP_SERIAL: AtomicU64 = AtomicU64::new(0);
        // One at a time: two closes of the same file must not interleave
        // their compare-write-rename (the loser could fail after its content
        // was installed, or rename a file the winner is still writing).
        let _lock = self.commit_lock.lock();
        let path = self.world.dir.join(name);
        let now = std::fs::read(&path).ok();
        if now.as_deref() == Some(content) {
            return Ok(());
        }
        if base.is_some_and(|b| now.as_deref() != Some(b)) {
            return Err(stale(name));
        }
        let serial = TEMP_SERIAL.fetch_add(1, Ordering::Relaxed);
        let tmp = self.world.dir.join(format!(".{name}.worldfs-{}-{serial}", std::process::id()));
        // The kind of failure is kept: a full disk is ENOSPC, as the
        // line in write-errors says.
        let io = |e: std::io::Error| FsError::from_io(&e, format!("{name}: {e}; the file is unchanged"));
        let r = (|| {
            let mut f = std::fs::File::create(&tmp).map_err(io)?;
            f.write_all(content).map_err(io)?;
            f.sync_all().map_err(io)?;
            if let Ok(meta) = std::fs::metadata(&path) {
                std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
            }
            std::fs::rename(&tmp, &path).map_err(io)
        })();
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r
    }
}

fn entry_mut(b: &mut Block, p16: u16) -> Result<&mut MetaEntry> {
    b.metadata.get_mut(p16).ok_or_else(FsError::not_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_follows_the_engine() {
        let mut b = Block::new_air(22);
        normalize(&mut b);
        assert_eq!(b.version, 25);
        let mut b = Block::new_air(29);
        b.content_width = 1;
        b.param0[0] = 300;
        b.mapping.push(worldfs_codec::luanti::MappingEntry { id: 300, name: b"x".to_vec() });
        normalize(&mut b);
        assert_eq!(b.content_width, 2);
    }

    #[test]
    fn validate_refuses_unnamed_ids_and_repeated_metadata() {
        let orig = Block::new_air(29);
        let mut b = orig.clone();
        b.param0[3] = 9;
        assert!(validate(&orig, &b).unwrap_err().contains("content id 9"));
        let mut b = orig.clone();
        b.metadata.entries.push(MetaEntry::new(1));
        b.metadata.entries.push(MetaEntry::new(1));
        assert!(validate(&orig, &b).is_err());
    }
}
