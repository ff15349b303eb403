//! `dimensions/NAMESPACE/PATH/` of a Java world: every dimension but the
//! overworld (whose trees stay at the mount's root), as the game names it
//! (`dimensions/minecraft/the_nether/`, `dimensions/minecraft/the_end/`,
//! a data pack's or mod's `dimensions/mymod/moon/`), wherever the world
//! keeps it (`DIM-1/`, `DIM1/`, `dimensions/...`: `layout.rs`). Each holds
//! what the root holds for the overworld: `chunks/`, `block/`, `find/`,
//! `names`, `map/`, and `entities/` and `poi/` where the dimension has
//! them.
//!
//! Trees are told apart by four bits of their inodes (`fs::union`); the
//! root has too few tags for every tree of every dimension, so
//! `dimensions/` is one tag of the root, a union of namespaces (the next
//! four bits), each a union of its dimensions (four more), each a union of
//! its trees (four more): 15 namespaces of 15 dimensions each at most.

use super::layout::Dimension;
use super::{Trees, dimension_trees};
use crate::fs::union::{Mounted, Union};
use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, Result, Services, Tree};
use std::path::Path;
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
    fn readme(&self) -> String {
        String::new()
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
fn folder_union(base: u64, shift: u32, prefix: String, mounted: Vec<Mounted>, opts: &Options) -> Union {
    let folder = Folder { base, opts: opts.clone(), what: format!("{prefix} of the world") };
    let root = folder.root();
    Union::nested(Arc::new(folder), mounted, root, shift, prefix)
}

/// `dimensions/` for `others` (each dimension but the overworld) as one
/// tree whose inodes have `tag` in their top four bits; None when there
/// are none.
pub(crate) fn tree(
    world: &Path,
    others: &[Dimension],
    tag: u64,
    trees: &Trees,
    opts: &Options,
    services: &Arc<Services>,
) -> Option<Mounted> {
    let base = tag << 60;
    let mut namespaces: Vec<(&str, Vec<&Dimension>)> = Vec::new();
    for d in others {
        match namespaces.iter_mut().find(|(ns, _)| *ns == d.namespace) {
            Some((_, ds)) => ds.push(d),
            None => namespaces.push((&d.namespace, vec![d])),
        }
    }
    let mut ns_mounts = Vec::new();
    for (i, (ns, dims)) in namespaces.into_iter().enumerate() {
        let Some(ns_tag) = tag_of(i, &format!("namespace {ns}")) else { continue };
        let ns_base = base | ns_tag << 56;
        let mut dim_mounts = Vec::new();
        for (k, d) in dims.into_iter().enumerate() {
            let Some(dim_tag) = tag_of(k, &format!("dimension {}", d.id())) else { continue };
            let dim_base = ns_base | dim_tag << 52;
            let prefix = format!("dimensions/{ns}/{}/", d.path);
            let mounted = dimension_trees(world, d, |t| dim_base | t << 48, trees, opts, services);
            let union = folder_union(dim_base, 48, prefix, mounted, opts);
            dim_mounts.push(mounted_union(&d.path, dim_tag, union));
        }
        let union = folder_union(ns_base, 52, format!("dimensions/{ns}/"), dim_mounts, opts);
        ns_mounts.push(mounted_union(ns, ns_tag, union));
    }
    if ns_mounts.is_empty() {
        return None;
    }
    Some(mounted_union("dimensions", tag, folder_union(base, 56, "dimensions/".into(), ns_mounts, opts)))
}

/// The tag of the `i`th of a union's trees (1 to 15; 0 is its folder).
fn tag_of(i: usize, what: &str) -> Option<u64> {
    let tag = i as u64 + 1;
    if tag > 15 {
        log::warn!("{what} is not shown: a directory of dimensions/ shows at most 15");
        return None;
    }
    Some(tag)
}

fn mounted_union(name: &str, tag: u64, union: Union) -> Mounted {
    Mounted { name: name.into(), tag, root: union.root(), tree: Arc::new(union) }
}
