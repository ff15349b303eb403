//! Names: creating scratch files, mkdir/rmdir of blocks and metadata,
//! unlink, rename. Decoded files cannot be created, deleted or renamed
//! away; metadata fields can (they are keys).

use super::scratch::ScratchFile;
use super::table::TableKey;
use super::{Attr, FsError, Inval, Node, Opened, Result, WorldFs, in_block, parse_node_coords};
use crate::store::BlockPos;
use crate::view::escape;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::SystemTime;

impl WorldFs {
    fn writable_mount(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(FsError::read_only("the mount is read-only (-o ro)"));
        }
        Ok(())
    }

    /// The existing node called `name` in `parent` (decoded or scratch).
    fn existing_child(&self, parent: &Node, name: &[u8]) -> Result<Node> {
        if let Ok(child) = self.child(parent, name)
            && self.stat(&child).is_ok()
        {
            return Ok(child);
        }
        let ino = self.scratch.lock().unwrap().lookup(parent.ino(), name).ok_or_else(FsError::not_found)?;
        Node::from_ino(ino).ok_or_else(FsError::not_found)
    }

    /// Whether new names in `dir` may become scratch files, and whether
    /// such a file becomes a metadata key when written.
    fn scratch_allowed(&self, dir: &Node, name: &[u8]) -> Result<bool> {
        if name.is_empty() || name.len() > 255 || name.contains(&b'/') {
            return Err(FsError::invalid("bad file name"));
        }
        match dir {
            Node::Root | Node::MetaDir(..) => Ok(false),
            Node::BlockDir(_) => Ok(false),
            Node::FieldsDir(..) => Ok(escape::name_to_key(name).is_some()),
            Node::Blocks => Err(FsError::perm("blocks/ holds only block directories (mkdir X,Y,Z creates a block)")),
            Node::MetaRoot(_) => {
                Err(FsError::perm("meta/ holds only node directories (mkdir X,Y,Z adds metadata to a node)"))
            }
            Node::NodeDir => Err(FsError::not_found()),
            _ => Err(FsError::not_dir()),
        }
    }

    /// create(2): open an existing file, or make a scratch file.
    pub fn create(&self, parent: u64, name: &OsStr, mode: u32, flags: i32, pid: u32) -> Result<(Attr, Opened)> {
        self.writable_mount()?;
        let dir = self.node(parent)?;
        self.check_dir(&dir)?;
        let name = name.as_bytes();
        if let Ok(node) = self.existing_child(&dir, name) {
            if flags & libc::O_EXCL != 0 {
                return Err(FsError::new(libc::EEXIST, "file exists"));
            }
            let opened = self.open(node.ino(), flags, pid)?;
            let attr = self.stat(&node)?;
            self.remember(attr.ino);
            return Ok((attr, opened));
        }
        if let Node::NodeDir = dir
            && let Some([x, y, z]) = parse_node_coords(name)
        {
            return Err(FsError::new(
                libc::ENOENT,
                format!("node {x},{y},{z}: its block {} is not stored", BlockPos::of_node(x, y, z).unwrap()),
            ));
        }
        let ino = self.new_scratch(&dir, name, mode)?;
        let fh = self.open_scratch(ino, flags, pid);
        self.remember(ino);
        Ok((self.scratch_stat(ino)?, Opened { fh, keep_cache: false, direct_io: false }))
    }

    /// mknod(2) of a regular file: a scratch file.
    pub fn mknod(&self, parent: u64, name: &OsStr, mode: u32) -> Result<Attr> {
        self.writable_mount()?;
        if mode & libc::S_IFMT != libc::S_IFREG && mode & libc::S_IFMT != 0 {
            return Err(FsError::perm("only regular files can be created here"));
        }
        let dir = self.node(parent)?;
        self.check_dir(&dir)?;
        if self.existing_child(&dir, name.as_bytes()).is_ok() {
            return Err(FsError::new(libc::EEXIST, "file exists"));
        }
        let ino = self.new_scratch(&dir, name.as_bytes(), mode)?;
        self.remember(ino);
        self.scratch_stat(ino)
    }

    fn new_scratch(&self, dir: &Node, name: &[u8], mode: u32) -> Result<u64> {
        let pending_key = self.scratch_allowed(dir, name)?;
        let ino = Node::Table(self.table.lock().unwrap().new_scratch()).ino();
        let f = ScratchFile {
            parent: dir.ino(),
            name: name.to_vec(),
            data: Vec::new(),
            mode: (mode & 0o7777) as u16,
            mtime: SystemTime::now(),
            pending_key,
        };
        self.scratch.lock().unwrap().insert(ino, f);
        Ok(ino)
    }

    /// Drop a scratch file that was unlinked while open, once it is closed.
    /// (Locks: handles before scratch, as everywhere.)
    pub(super) fn drop_orphan(&self, ino: u64) {
        let handles = self.handles.lock().unwrap();
        let mut s = self.scratch.lock().unwrap();
        if s.get(ino).is_some_and(|f| f.parent == 0) && !Self::scratch_open_in(&handles, ino) {
            s.remove(ino);
        }
    }

    fn remove_scratch(&self, ino: u64) {
        // Both locks at once, so that a release between the check and the
        // removal cannot leave an orphan nobody drops.
        let handles = self.handles.lock().unwrap();
        let open = Self::scratch_open_in(&handles, ino);
        let mut s = self.scratch.lock().unwrap();
        if open {
            s.rename(ino, 0, &ino.to_le_bytes()); // orphan: parent 0 is no directory
        } else {
            s.remove(ino);
        }
    }

    pub fn mkdir(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let r = self.mkdir_inner(parent, name);
        self.name_change(|| super::describe_name(self, "mkdir", parent, name), r)
    }

    fn mkdir_inner(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        self.writable_mount()?;
        let dir = self.node(parent)?;
        let name_b = name.as_bytes();
        let node = match dir {
            Node::Blocks => {
                let pos: BlockPos = std::str::from_utf8(name_b).ok().and_then(|s| s.parse().ok()).ok_or_else(|| {
                    FsError::invalid("a block directory is named X,Y,Z in block coordinates (-2048..2047)")
                })?;
                self.create_block(pos)?;
                Node::BlockDir(pos)
            }
            Node::MetaRoot(pos) => {
                let c = parse_node_coords(name_b)
                    .ok_or_else(|| FsError::invalid("a metadata directory is named X,Y,Z in node coordinates"))?;
                let p16 = in_block(pos, c).ok_or_else(|| {
                    FsError::invalid(format!("node {},{},{} is not in block {pos}", c[0], c[1], c[2]))
                })?;
                self.add_metadata(pos, p16)?;
                Node::MetaDir(pos, p16)
            }
            _ => {
                return Err(FsError::perm("directories can only be made in blocks/ and blocks/X,Y,Z/meta/"));
            }
        };
        self.send_invals(vec![Inval::Entry(parent, name.to_os_string())]);
        self.stat(&node)
    }

    /// rmdir of a block deletes it from the map; rmdir of a metadata
    /// directory removes that node's metadata (both regardless of content).
    pub fn rmdir(&self, parent: u64, name: &OsStr) -> Result<()> {
        let r = self.rmdir_inner(parent, name);
        self.name_change(|| super::describe_name(self, "rmdir", parent, name), r)
    }

    fn rmdir_inner(&self, parent: u64, name: &OsStr) -> Result<()> {
        self.writable_mount()?;
        let dir = self.node(parent)?;
        let child = self.child(&dir, name.as_bytes())?;
        match child {
            Node::BlockDir(pos) => self.delete_block(pos)?,
            Node::MetaDir(pos, p16) => self.remove_metadata(pos, p16)?,
            _ if self.stat(&child).is_err() => return Err(FsError::not_found()),
            _ => {
                return Err(FsError::perm("only block and metadata directories can be removed"));
            }
        }
        self.send_invals(vec![Inval::Entry(parent, name.to_os_string())]);
        Ok(())
    }

    pub fn unlink(&self, parent: u64, name: &OsStr) -> Result<()> {
        let r = self.unlink_inner(parent, name);
        self.name_change(|| super::describe_name(self, "unlink", parent, name), r)
    }

    fn unlink_inner(&self, parent: u64, name: &OsStr) -> Result<()> {
        self.writable_mount()?;
        let dir = self.node(parent)?;
        let node = self.existing_child(&dir, name.as_bytes())?;
        if self.is_dir(&node)? {
            return Err(FsError::is_dir());
        }
        if self.is_scratch(&node) {
            self.remove_scratch(node.ino());
            return Ok(());
        }
        if let Node::Table(id) = node
            && let TableKey::Field { pos, p16, key } = self.table_key(id)?
        {
            return self.delete_field(pos, p16, &key);
        }
        Err(FsError::perm("decoded files cannot be deleted (rmdir the block or metadata directory, or write the file)"))
    }

    pub fn rename(&self, parent: u64, name: &OsStr, newparent: u64, newname: &OsStr, flags: u32) -> Result<()> {
        let r = self.rename_inner(parent, name, newparent, newname, flags);
        self.name_change(
            || {
                let to = super::describe_name(self, "", newparent, newname);
                format!("{} to{to}", super::describe_name(self, "rename", parent, name))
            },
            r,
        )
    }

    fn rename_inner(&self, parent: u64, name: &OsStr, newparent: u64, newname: &OsStr, flags: u32) -> Result<()> {
        self.writable_mount()?;
        if flags & libc::RENAME_EXCHANGE != 0 {
            return Err(FsError::invalid("RENAME_EXCHANGE is not supported"));
        }
        let (src_dir, dst_dir) = (self.node(parent)?, self.node(newparent)?);
        let (name, newname) = (name.as_bytes(), newname.as_bytes());
        let src = self.existing_child(&src_dir, name)?;
        let dst = self.existing_child(&dst_dir, newname).ok();
        if flags & libc::RENAME_NOREPLACE != 0 && dst.is_some() {
            return Err(FsError::new(libc::EEXIST, "target exists"));
        }
        if dst.as_ref() == Some(&src) {
            return Ok(());
        }
        let invals = vec![
            Inval::Entry(parent, OsStr::from_bytes(name).to_os_string()),
            Inval::Entry(newparent, OsStr::from_bytes(newname).to_os_string()),
        ];
        if self.is_scratch(&src) {
            self.rename_scratch(&src, &dst_dir, newname, dst.as_ref())?;
        } else if let Node::Table(id) = src
            && let TableKey::Field { pos, p16, key } = self.table_key(id)?
        {
            if dst_dir != src_dir {
                return Err(FsError::new(libc::EXDEV, "metadata fields move only within their fields/ directory"));
            }
            match escape::name_to_key(newname) {
                Some(newkey) => self.rename_field(pos, p16, &key, &newkey)?,
                None => {
                    // Renamed to a scratch name (a backup): the key goes away
                    // and its content lives on as a scratch file.
                    let content = self.content(&src)?.bytes.to_vec();
                    if let Some(d) = &dst {
                        self.remove_scratch(d.ino());
                    }
                    let ino = self.new_scratch(&dst_dir, newname, 0o644)?;
                    let _ = self.scratch.lock().unwrap().edit(ino, |f| f.data = content);
                    if let Err(e) = self.delete_field(pos, p16, &key) {
                        self.remove_scratch(ino);
                        return Err(e);
                    }
                }
            }
        } else {
            return Err(FsError::perm("decoded files cannot be renamed; copy them instead"));
        }
        self.send_invals(invals);
        Ok(())
    }

    /// A scratch file renamed onto `dst_dir/newname`: onto a decoded file it
    /// is a write of that file (validated, then committed); onto a field
    /// name it sets that key; anything else is a plain scratch rename.
    fn rename_scratch(&self, src: &Node, dst_dir: &Node, newname: &[u8], dst: Option<&Node>) -> Result<()> {
        let ino = src.ino();
        let target = match dst {
            Some(d) if !self.is_scratch(d) => Some(d.clone()),
            _ => match dst_dir {
                Node::FieldsDir(pos, p16) => escape::name_to_key(newname)
                    .map(|key| self.table_node(TableKey::Field { pos: *pos, p16: *p16, key })),
                _ => None,
            },
        };
        match target {
            Some(node) => {
                if self.is_dir(&node)? {
                    return Err(FsError::is_dir());
                }
                let data =
                    self.scratch.lock().unwrap().get(ino).map(|f| f.data.clone()).ok_or_else(FsError::not_found)?;
                self.check_writable(&node)?;
                self.commit(&node, &data)?;
                self.remove_scratch(ino);
                self.add_alias(ino, node);
                Ok(())
            }
            None => {
                self.scratch_allowed(dst_dir, newname)?;
                if let Some(d) = dst {
                    self.remove_scratch(d.ino());
                }
                let pending = matches!(dst_dir, Node::FieldsDir(..)) && escape::name_to_key(newname).is_some();
                let mut s = self.scratch.lock().unwrap();
                s.rename(ino, dst_dir.ino(), newname);
                let _ = s.edit(ino, |f| f.pending_key = pending);
                Ok(())
            }
        }
    }

    /// A written scratch file in fields/ becomes that key.
    pub(super) fn commit_pending_key(&self, ino: u64) -> Result<()> {
        let (parent, name, data) = {
            let s = self.scratch.lock().unwrap();
            let f = s.get(ino).ok_or_else(FsError::not_found)?;
            (f.parent, f.name.clone(), f.data.clone())
        };
        let Node::FieldsDir(pos, p16) = self.node(parent)? else {
            return Ok(());
        };
        let key = escape::name_to_key(&name).ok_or_else(|| FsError::invalid("not a field name"))?;
        let node = self.table_node(TableKey::Field { pos, p16, key });
        self.commit(&node, &data)?;
        self.remove_scratch(ino);
        self.add_alias(ino, node);
        self.send_invals(vec![Inval::Entry(parent, OsStr::from_bytes(&name).to_os_string())]);
        Ok(())
    }
}
