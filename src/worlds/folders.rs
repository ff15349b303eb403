//! The folders that hold the trees of a world's other dimensions (a Java
//! world's `dimensions/NAMESPACE/PATH/`, a Bedrock world's
//! `dimensions/nether/`): unions nested in the mount's union
//! (`fs::union::Union::nested`), whose own entries are all mounted trees.

use crate::fs::union::{Mounted, Union};
use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, Result, Tree};
use std::sync::Arc;
use std::time::SystemTime;

/// An empty directory: the main tree of a union whose entries are all
/// mounted trees.
struct Folder {
    base: u64,
    opts: Options,
    what: String,
}

impl Folder {
    fn root(&self) -> u64 {
        self.base | 1
    }
}

impl Tree for Folder {
    fn describe(&self) -> String {
        self.what.clone()
    }
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Attr> {
        Err(FsError::not_found())
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        if ino != self.root() {
            return Err(FsError::not_found());
        }
        Ok(Attr::new(ino, Kind::Dir, 0, Access::Normal, SystemTime::now(), &self.opts))
    }
    fn parent(&self, ino: u64) -> Result<u64> {
        Ok(ino)
    }
    fn list(&self, _dir: u64, _o: u64, _p: bool, _add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool) -> Result<()> {
        Ok(())
    }
    fn read(&self, _ino: u64) -> Result<Arc<Vec<u8>>> {
        Err(FsError::is_dir())
    }
    fn check_writable(&self, _ino: u64) -> Result<()> {
        Err(FsError::perm("the directories of dimensions are the world's"))
    }
    fn write(&self, _ino: u64, _content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        Err(FsError::perm("the directories of dimensions are the world's"))
    }
    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(FsError::perm("a dimension is made by the game, not here"))
    }
    fn path(&self, _ino: u64) -> String {
        String::new()
    }
}

/// A union mounted at `prefix` whose inodes are `base` with the four bits
/// at `shift` naming its trees (0: the folder itself).
pub(crate) fn folder_union(base: u64, shift: u32, prefix: String, mounted: Vec<Mounted>, opts: &Options) -> Union {
    let folder = Folder { base, opts: opts.clone(), what: format!("{prefix} of the world") };
    let root = folder.root();
    Union::nested(Arc::new(folder), mounted, root, shift, prefix)
}

/// The tag of the `i`th of a union's trees (1 to 15; 0 is its folder).
pub(crate) fn tag_of(i: usize, what: &str) -> Option<u64> {
    let tag = i as u64 + 1;
    if tag > 15 {
        log::warn!("{what} is not shown: a directory of dimensions/ shows at most 15");
        return None;
    }
    Some(tag)
}

/// `union` as the tree mounted on directory `name` with `tag`.
pub(crate) fn mounted_union(name: &str, tag: u64, union: Union) -> Mounted {
    Mounted { name: name.into(), tag, root: union.root(), tree: Arc::new(union) }
}
