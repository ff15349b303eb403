//! The Luanti world as the core sees it: the `Tree` methods, each a thin
//! translation from inode numbers to nodes.

use super::{LuantiTree, Node};
use crate::fs::{Attr, DirEntry, FsError, NewName, Result, Tree};
use crate::view::BlockFile;
use std::sync::Arc;

impl LuantiTree {
    /// Whether a file node may be written at all, and why not.
    pub(super) fn check_writable_node(&self, node: &Node) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        match node {
            _ if self.is_auth(node) => {
                Err(FsError::perm("auth data (password hashes) is never written through worldfs"))
            }
            Node::BlockFile(_, crate::view::BlockFile::Schematic) => Err(FsError::perm(
                "schematic.mts is made from the block (to place a schematic: worldfs import, or mount it and cp)",
            )),
            Node::BlockFile(_, crate::view::BlockFile::Top) => {
                Err(FsError::perm("top.png is drawn from the block; edit its nodes instead"))
            }
            Node::BlockFile(_, crate::view::BlockFile::Error) => {
                Err(FsError::perm("error describes a block that cannot be decoded; write a valid blob to raw"))
            }
            _ if Self::is_dir(node) => Err(FsError::is_dir()),
            Node::NamesFile | Node::FindLink(..) => {
                Err(FsError::perm("names and find/ are made from the world (mv find/OLD find/NEW renames a node type)"))
            }
            _ => Ok(()),
        }
    }

    fn dir_node(&self, ino: u64) -> Result<Node> {
        let node = self.node(ino)?;
        if !Self::is_dir(&node) {
            return Err(FsError::not_dir());
        }
        Ok(node)
    }
}

impl Tree for LuantiTree {
    fn describe(&self) -> String {
        self.store.describe()
    }

    fn readme(&self) -> String {
        super::readme_text().to_string()
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let dir = self.dir_node(parent)?;
        let child = self.child(&dir, name)?;
        self.stat(&child)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        self.stat(&self.node(ino)?)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        Ok(self.parent_of(&self.node(ino)?)?.ino())
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        self.list_dir(&self.node(ino_checked(dir)?)?, offset, plus, add)
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        let node = self.node(ino)?;
        if Self::is_dir(&node) {
            return Err(FsError::is_dir());
        }
        Ok(self.content(&node)?.bytes)
    }

    fn open_read(&self, ino: u64) -> Result<(Arc<Vec<u8>>, bool)> {
        let node = self.node(ino)?;
        if Self::is_dir(&node) {
            return Err(FsError::is_dir());
        }
        let c = self.content(&node)?;
        let keep_cache = c.serial != 0 && self.record_served(&node, c.serial) == Some(c.serial);
        Ok((c.bytes, keep_cache))
    }

    fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        self.readlink_of(&self.node(ino)?)
    }

    fn check_writable(&self, ino: u64) -> Result<()> {
        let node = self.node(ino)?;
        self.check_writable_node(&node)?;
        // it must exist
        self.content(&node).map(|_| ())
    }

    fn write(&self, ino: u64, content: &[u8], base: Option<&[u8]>) -> Result<()> {
        self.commit(&self.node(ino)?, content, base)
    }

    fn check_content(&self, ino: u64, content: &[u8]) -> Result<()> {
        self.judge_content(&self.node(ino)?, content)
    }

    fn complete(&self, ino: u64, content: &[u8]) -> bool {
        let one_line = content.ends_with(b"\n") && content.iter().filter(|&&c| c == b'\n').count() == 1;
        match Node::from_ino(ino) {
            Some(Node::NodeFile(_)) => one_line,
            Some(Node::BlockFile(_, BlockFile::Param0)) => content.len() == 8192,
            Some(Node::BlockFile(_, BlockFile::Param1 | BlockFile::Param2)) => content.len() == 4096,
            _ => false,
        }
    }

    fn new_name(&self, dir: u64, name: &[u8]) -> Result<NewName> {
        let dir = self.dir_node(dir)?;
        self.check_dir(&dir)?;
        self.new_name_in(&dir, name)
    }

    fn create(&self, dir: u64, name: &[u8], content: &[u8]) -> Result<u64> {
        self.create_field(&self.dir_node(dir)?, name, content)
    }

    fn mkdir(&self, dir: u64, name: &[u8]) -> Result<Attr> {
        self.mkdir_in(&self.dir_node(dir)?, name)
    }

    fn rmdir(&self, dir: u64, name: &[u8]) -> Result<()> {
        self.rmdir_in(&self.dir_node(dir)?, name)
    }

    fn unlink(&self, dir: u64, name: &[u8]) -> Result<()> {
        self.unlink_in(&self.dir_node(dir)?, name)
    }

    fn rename(&self, dir: u64, name: &[u8], newdir: u64, newname: &[u8]) -> Result<()> {
        self.rename_in(&self.dir_node(dir)?, name, &self.dir_node(newdir)?, newname)
    }

    fn remember(&self, ino: u64) {
        if let Some(Node::Table(id)) = Node::from_ino(ino) {
            self.table.lock().remember(id);
        }
    }

    /// A table entry the kernel no longer holds is removed (its number is
    /// handed out afresh at the next lookup).
    fn forget(&self, ino: u64, n: u64) {
        let Some(Node::Table(id)) = Node::from_ino(ino) else { return };
        let mut table = self.table.lock();
        if table.forget(id, n).is_some() {
            table.remove(id);
        }
    }

    /// The files made from the map: they change only when the map's data
    /// version moves (`outside_version`). On writable mounts a commit
    /// invalidates its block's files at once (`after_commit_kernel`) and
    /// moves the version too, so the watcher also covers what that list
    /// misses (node/ files past `SERVED_MAX`).
    fn watched(&self, ino: u64) -> bool {
        matches!(Node::from_ino(ino), Some(Node::BlockFile(..) | Node::MetaFile(..) | Node::NodeFile(..)))
    }

    /// The map's data version: commits of other processes and of this
    /// mount move it (none on Redis: no watcher, the plain TTL).
    fn outside_version(&self) -> Option<u64> {
        self.store.data_version()
    }

    /// At most `plus_max` blocks (one bounded listing to know).
    fn commits_wait_for_server(&self) -> bool {
        self.live
    }

    fn stats_counters(&self) -> Vec<(&'static str, (u64, u64))> {
        // The parts of a change through the server (docs/performance.md).
        if self.live { worldfs_store::live::timing::counters() } else { Vec::new() }
    }

    fn plus_everywhere(&self) -> bool {
        let max = self.opts.plus_max;
        max > 0 && self.store.list_after(None, max as usize + 1).is_ok_and(|l| l.len() as u64 <= max)
    }

    fn path(&self, ino: u64) -> String {
        match self.node(ino) {
            Ok(n) => self.describe(&n),
            Err(_) => format!("inode {ino:#x}"),
        }
    }

    /// Not under node/, where a name can appear through another directory
    /// (mkdir of its block) without an invalidation for it.
    fn negative_entries(&self, dir: u64) -> bool {
        dir != super::inode::NODE_DIR
    }

    fn sync(&self) -> Result<()> {
        self.flush_queue()
    }

    fn shutdown(&self) -> Vec<String> {
        match self.flush_queue() {
            Ok(()) => Vec::new(),
            Err(e) => vec![self.keep_unwritten(&e.message)],
        }
    }

    fn count(&self) -> u64 {
        self.cached_count()
    }
}

/// Tree inodes are never the core's (tag 15).
fn ino_checked(ino: u64) -> Result<u64> {
    if ino >> 60 == crate::fs::tree::CORE_TAG { Err(FsError::not_found()) } else { Ok(ino) }
}
