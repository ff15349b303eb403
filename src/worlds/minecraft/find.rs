//! `find/<block id>/` and `names` of a Java world (read-only):
//!
//! * `names`: one line per block id the world's chunks hold (the state's
//!   name, without properties): the id, how many chunks hold it, how many
//!   blocks. Its size is given as 0 (read with direct I/O): the index is
//!   built when `names` or `find/` is read, not by a `stat` of the root;
//! * `find/ID/`: one symbolic link per chunk holding ID, named `X,Z` and
//!   pointing to `../../chunks/X,Z`. An id holding `/` or `%` is written
//!   with `%2F` and `%25`.
//!
//! Luanti's name index (`worlds::luanti::index`) does not fit: it scans a
//! `MapStore` of Luanti blocks and keeps its result in a cache file keyed
//! by the store's change counter, neither of which a folder of region
//! files has. This is the smallest thing that works: an index in memory,
//! built by one pass over every chunk's palettes and indices on first use,
//! and built again when any region file's identity, size or time changed
//! (a stat of each file per look, no chunk read).

use super::chunk::ChunkDoc;
use super::regions::{FileStamp, Regions, stamp_of};
use crate::documents::{Context, Document};
use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, Result, Tree, list_numbered};
use crate::worlds::names_by_inode::NamesByInode;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// Per block id: the chunks holding it (sorted) and the number of blocks.
pub(crate) type Names = BTreeMap<String, (Vec<(i64, i64)>, u64)>;

/// What the index is made from: a Java world's region files, a Bedrock
/// world's database.
pub(crate) trait NameSource: Send + Sync + 'static {
    /// What identifies the chunks' current state, cheaply: the index is
    /// made again when it changes.
    type Stamp: PartialEq + Send;
    fn stamp(&self) -> Result<Self::Stamp>;
    /// One pass over every chunk's blocks.
    fn build(&self) -> Result<Names>;
}

struct Built<S> {
    stamp: S,
    names: Arc<Names>,
}

pub(crate) struct FindTree<N: NameSource = RegionNames> {
    source: N,
    /// Every inode of the tree is this with a number below 1 << 48.
    base: u64,
    opts: Options,
    built: Mutex<Option<Built<N::Stamp>>>,
    /// Paths handed out (`ID` or `ID/X,Z`), by inode and by path.
    inodes: NamesByInode,
}

/// A Java world's region files as the index's source.
pub(crate) struct RegionNames(Arc<Regions>);

impl NameSource for RegionNames {
    type Stamp = Vec<(String, Option<FileStamp>)>;

    fn stamp(&self) -> Result<Self::Stamp> {
        let dir = self.0.dir();
        let rd = std::fs::read_dir(&dir).map_err(|e| FsError::io(format!("{}: {e}", dir.display())))?;
        let mut v: Vec<(String, Option<FileStamp>)> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("r.") && n.ends_with(".mca"))
            .map(|n| {
                let s = stamp_of(&dir.join(&n));
                (n, s)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(v)
    }

    fn build(&self) -> Result<Names> {
        let mut names = Names::new();
        for chunk in self.0.chunk_names().map_err(FsError::io)? {
            // chunk_names lists only names parse_name reads.
            let Some((x, z)) = super::regions::parse_name(&chunk) else { continue };
            // A chunk that cannot be read is shown as such in chunks/ (its
            // `error`); it hides no other chunk's blocks here.
            let counts = self.0.read_chunk(x, z).and_then(|bytes| match bytes {
                Some(b) => ChunkDoc::decode(&b, &Context::default())
                    .and_then(|d| d.block_counts())
                    .map_err(|e| format!("chunk {chunk}: {e}")),
                None => Ok(Vec::new()),
            });
            let counts = match counts {
                Ok(c) => c,
                Err(why) => {
                    log::warn!("names and find/ leave out {why}");
                    continue;
                }
            };
            for (id, n) in counts {
                let e = names.entry(id).or_default();
                e.0.push((x, z));
                e.1 += n;
            }
        }
        Ok(names)
    }
}

/// A block id as a file name.
fn escape(id: &str) -> String {
    id.replace('%', "%25").replace('/', "%2F")
}

fn unescape(name: &str) -> String {
    name.replace("%2F", "/").replace("%25", "%")
}

impl FindTree<RegionNames> {
    pub(crate) fn new(regions: Arc<Regions>, base: u64, opts: Options) -> FindTree<RegionNames> {
        FindTree::with_source(RegionNames(regions), base, opts)
    }
}

impl<N: NameSource> FindTree<N> {
    /// The tree over `source`, its inodes `base` | n.
    pub(crate) fn with_source(source: N, base: u64, opts: Options) -> FindTree<N> {
        FindTree { source, base, opts, built: Mutex::new(None), inodes: NamesByInode::new(base, 3) }
    }
    /// `find/`.
    pub(crate) fn root(&self) -> u64 {
        self.base | 1
    }
    /// `names`.
    pub(crate) fn names_file(&self) -> u64 {
        self.base | 2
    }

    /// The index, built again if the chunks changed since.
    fn names(&self) -> Result<Arc<Names>> {
        let stamp = self.source.stamp()?;
        let mut built = self.built.lock();
        if let Some(b) = built.as_ref().filter(|b| b.stamp == stamp) {
            return Ok(b.names.clone());
        }
        let names = Arc::new(self.source.build()?);
        *built = Some(Built { stamp, names: names.clone() });
        Ok(names)
    }

    fn ino_of(&self, path: &str) -> u64 {
        self.inodes.ino_of(path)
    }

    fn path_of(&self, ino: u64) -> Result<String> {
        self.inodes.name_of(ino)
    }

    fn names_text(&self) -> Result<Vec<u8>> {
        let mut s = String::from("# block id, chunks holding it, blocks\n");
        for (id, (chunks, n)) in self.names()?.iter() {
            s.push_str(&format!("{} {} {n}\n", escape(id), chunks.len()));
        }
        Ok(s.into_bytes())
    }

    fn attr(&self, ino: u64, kind: Kind, size: u64) -> Attr {
        Attr::new(ino, kind, size, Access::Generated, SystemTime::now(), &self.opts)
    }

    fn link_target(chunk: &str) -> String {
        format!("../../chunks/{chunk}")
    }
}

impl<N: NameSource> Tree for FindTree<N> {
    fn describe(&self) -> String {
        "find/ and names of the region files".into()
    }
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let name = std::str::from_utf8(name).map_err(|_| FsError::not_found())?;
        let names = self.names()?;
        if parent == self.root() {
            names.get(&unescape(name)).ok_or_else(FsError::not_found)?;
            return Ok(self.attr(self.ino_of(name), Kind::Dir, 0));
        }
        let dir = self.path_of(parent)?;
        let (chunks, _) = names.get(&unescape(&dir)).ok_or_else(FsError::not_found)?;
        let (x, z) = super::regions::parse_name(name).ok_or_else(FsError::not_found)?;
        chunks.binary_search(&(x, z)).map_err(|_| FsError::not_found())?;
        let size = Self::link_target(name).len() as u64;
        Ok(self.attr(self.ino_of(&format!("{dir}/{name}")), Kind::Symlink, size))
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        if ino == self.root() {
            return Ok(self.attr(ino, Kind::Dir, 0));
        }
        if ino == self.names_file() {
            // Its size would need the index, a read of every chunk: a root
            // listing (`ls -l`) must not cost that (see `sized_by_reading`).
            return Ok(self.attr(ino, Kind::File, 0));
        }
        let path = self.path_of(ino)?;
        match path.split_once('/') {
            None => self.lookup(self.root(), path.as_bytes()),
            Some((dir, name)) => self.lookup(self.ino_of(dir), name.as_bytes()),
        }
    }
    fn kind_of_root(&self, root: u64) -> Kind {
        if root == self.names_file() { Kind::File } else { Kind::Dir }
    }
    fn parent(&self, ino: u64) -> Result<u64> {
        let path = self.path_of(ino)?;
        Ok(path.split_once('/').map_or(self.root(), |(dir, _)| self.ino_of(dir)))
    }
    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let names = self.names()?;
        let entries: Vec<(String, Kind, String)> = if dir == self.root() {
            names.keys().map(|id| (escape(id), Kind::Dir, escape(id))).collect()
        } else {
            let path = self.path_of(dir)?;
            let (chunks, _) = names.get(&unescape(&path)).ok_or_else(FsError::not_found)?;
            chunks.iter().map(|(x, z)| (format!("{x},{z}"), Kind::Symlink, format!("{path}/{x},{z}"))).collect()
        };
        list_numbered(entries, offset, |(name, kind, path), cookie| {
            let ino = self.ino_of(&path);
            let size = if kind == Kind::Symlink { Self::link_target(&name).len() as u64 } else { 0 };
            let attr = plus.then(|| self.attr(ino, kind, size));
            Ok(add(&DirEntry { ino, offset: cookie, kind, name: name.into() }, attr.as_ref()))
        })
    }
    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        if ino == self.names_file() {
            return Ok(Arc::new(self.names_text()?));
        }
        Err(FsError::is_dir())
    }
    fn sized_by_reading(&self, ino: u64) -> bool {
        ino == self.names_file()
    }
    fn has_files_sized_by_reading(&self) -> bool {
        true
    }
    fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        let path = self.path_of(ino)?;
        let (_, chunk) = path.split_once('/').ok_or_else(FsError::not_found)?;
        Ok(Self::link_target(chunk).into_bytes())
    }
    fn check_writable(&self, _ino: u64) -> Result<()> {
        Err(FsError::read_only("find/ and names are made from the chunks; edit the chunks"))
    }
    fn write(&self, ino: u64, _content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        self.check_writable(ino)
    }
    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(FsError::perm("find/ is made from the chunks; nothing can be added here"))
    }
    /// Luanti's `mv find/A find/B` renames an id in every block; a Java
    /// world has no such world-wide change here (of any version).
    fn rename(&self, _dir: u64, _name: &[u8], _newdir: u64, _newname: &[u8]) -> Result<()> {
        Err(FsError::perm(
            "find/ of a Minecraft world is made from the chunks and renames no block id world-wide; \
             change the blocks in chunks/X,Z/sections/Y/blocks or block/X,Y,Z",
        ))
    }
    fn path(&self, ino: u64) -> String {
        if ino == self.names_file() {
            return "names".into();
        }
        format!("find/{}", self.path_of(ino).unwrap_or_default())
    }
    fn negative_entries(&self, _dir: u64) -> bool {
        false
    }
}
