//! The filesystem core: what each inode is, its attributes, directory
//! listings, file contents and open handles. Plain Rust signatures so that
//! it can be tested without mounting; the FUSE adapter only translates.

pub mod cache;
pub mod error;
pub mod inode;
mod table;

pub use error::{FsError, Result};
pub use inode::Node;

use crate::codec::block::node_index;
use crate::codec::nodemeta::MetaEntry;
use crate::store::{BlockPos, MapStore, parse_triple};
use crate::view::{self, BlockFile, MetaFile, escape};
use crate::world::World;
use cache::{BlockCache, Loaded};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use table::{InodeTable, TableKey};

/// The text of `MNT/README`: the short layout section of docs/layout.md.
pub fn readme_text() -> &'static str {
    const DOC: &str = include_str!("../../docs/layout.md");
    const START: &str = "<!-- readme:start -->\n";
    const END: &str = "<!-- readme:end -->";
    let from = DOC.find(START).map_or(0, |i| i + START.len());
    let to = DOC[from..].find(END).map_or(DOC.len(), |i| from + i);
    &DOC[from..to]
}

#[derive(Clone, Debug)]
pub struct Options {
    pub read_only: bool,
    /// How long the kernel may cache attributes and entries, and how long a
    /// cached block is trusted before it is re-checked against the store.
    pub ttl: Duration,
    /// Memory budget of the decoded-block cache.
    pub cache_bytes: usize,
    pub uid: u32,
    pub gid: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            read_only: true,
            ttl: Duration::from_secs(1),
            cache_bytes: 128 << 20,
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub nlink: u32,
    pub mtime: SystemTime,
    pub uid: u32,
    pub gid: u32,
}

/// One directory entry for a listing. `offset` is the cookie that resumes
/// the listing after this entry.
#[derive(Clone, Debug)]
pub struct DirEntry {
    pub ino: u64,
    pub offset: u64,
    pub kind: Kind,
    pub name: OsString,
}

/// The answer to `open`.
#[derive(Clone, Copy, Debug)]
pub struct Opened {
    pub fh: u64,
    /// The content is the same as at the last open: the kernel may keep its
    /// page cache.
    pub keep_cache: bool,
}

struct Handle {
    content: Arc<Vec<u8>>,
}

/// What a file's bytes come from, with an identity for page-cache reuse.
struct Content {
    bytes: Arc<Vec<u8>>,
    /// Serial of the loaded block it was rendered from (0: no identity).
    serial: u64,
}

pub struct WorldFs {
    world: World,
    store: Box<dyn MapStore>,
    opts: Options,
    cache: BlockCache,
    table: Mutex<InodeTable>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// Which loaded block each inode's content was last served from.
    served: Mutex<HashMap<u64, u64>>,
    mount_time: SystemTime,
}

/// Cap on `served` entries (it is only an optimization).
const SERVED_MAX: usize = 100_000;

/// Blocks fetched per store query while listing `blocks/`.
const LIST_PAGE: usize = 512;

/// Directory cookies of `blocks/`: 1 and 2 are `.` and `..`; a block's
/// cookie is its packed position plus this.
const BLOCK_COOKIE_BASE: u64 = 3;

fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_bytes()
}

/// Parse world node coordinates "X,Y,Z".
fn parse_node_coords(name: &[u8]) -> Option<[i32; 3]> {
    let s = std::str::from_utf8(name).ok()?;
    let (x, y, z) = parse_triple::<i32>(s)?;
    BlockPos::of_node(x, y, z)?;
    Some([x, y, z])
}

/// The in-block index of world node coordinates, if they are in `pos`.
fn in_block(pos: BlockPos, [x, y, z]: [i32; 3]) -> Option<u16> {
    (BlockPos::of_node(x, y, z)? == pos).then(|| {
        node_index(
            x.rem_euclid(16) as usize,
            y.rem_euclid(16) as usize,
            z.rem_euclid(16) as usize,
        ) as u16
    })
}

impl WorldFs {
    pub fn new(world: World, store: Box<dyn MapStore>, opts: Options) -> WorldFs {
        WorldFs {
            cache: BlockCache::new(opts.cache_bytes, opts.ttl),
            world,
            store,
            opts,
            table: Mutex::new(InodeTable::default()),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            served: Mutex::new(HashMap::new()),
            mount_time: SystemTime::now(),
        }
    }

    /// Open a world directory with the store its world.mt names.
    pub fn open_world(
        dir: &std::path::Path,
        opts: Options,
    ) -> std::result::Result<WorldFs, String> {
        let world = World::open(dir)?;
        let store = world.open_store(opts.read_only)?;
        Ok(WorldFs::new(world, store, opts))
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn store(&self) -> &dyn MapStore {
        self.store.as_ref()
    }

    pub fn ttl(&self) -> Duration {
        self.opts.ttl
    }

    fn block(&self, pos: BlockPos) -> Result<Option<Arc<Loaded>>> {
        Ok(self.cache.get(pos, self.store.as_ref())?)
    }

    fn existing_block(&self, pos: BlockPos) -> Result<Arc<Loaded>> {
        self.block(pos)?.ok_or_else(FsError::not_found)
    }

    /// A block's metadata entry at `p16`, with the block it came from.
    fn meta_entry(&self, pos: BlockPos, p16: u16) -> Result<(Arc<Loaded>, MetaEntry)> {
        let l = self.existing_block(pos)?;
        let entry = l
            .decoded()
            .and_then(|b| b.metadata.get(p16))
            .cloned()
            .ok_or_else(FsError::not_found)?;
        Ok((l, entry))
    }

    fn table_key(&self, id: u64) -> Result<TableKey> {
        self.table
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or_else(FsError::not_found)
    }

    fn table_node(&self, key: TableKey) -> Node {
        Node::Table(self.table.lock().unwrap().id(key))
    }

    fn node(&self, ino: u64) -> Result<Node> {
        Node::from_ino(ino).ok_or_else(FsError::not_found)
    }

    fn is_dir(&self, node: &Node) -> Result<bool> {
        Ok(match node {
            Node::Root
            | Node::Blocks
            | Node::NodeDir
            | Node::BlockDir(_)
            | Node::MetaRoot(_)
            | Node::MetaDir(..)
            | Node::FieldsDir(..) => true,
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(_) | TableKey::Field { .. } => false,
            },
            _ => false,
        })
    }

    /// The bytes of a file node (checking that it exists).
    fn content(&self, node: &Node) -> Result<Content> {
        let plain = |bytes: Vec<u8>| Content {
            bytes: Arc::new(bytes),
            serial: 0,
        };
        match node {
            Node::Readme => Ok(plain(readme_text().as_bytes().to_vec())),
            Node::WriteErrors => Ok(plain(Vec::new())),
            Node::BlockFile(pos, f) => {
                let l = self.existing_block(*pos)?;
                let bytes = l.file(*f).ok_or_else(FsError::not_found)?;
                Ok(Content {
                    bytes,
                    serial: l.serial,
                })
            }
            Node::MetaFile(pos, p16, f) => {
                let (l, entry) = self.meta_entry(*pos, *p16)?;
                Ok(Content {
                    bytes: Arc::new(view::render_meta_file(&entry, *f)),
                    serial: l.serial,
                })
            }
            Node::NodeFile(c) => {
                let pos = BlockPos::of_node(c[0], c[1], c[2]).ok_or_else(FsError::not_found)?;
                let l = self.existing_block(pos)?;
                let b = l
                    .decoded()
                    .ok_or_else(|| FsError::io(format!("block {pos} cannot be decoded")))?;
                let i = in_block(pos, *c).expect("node is in its block") as usize;
                let id = b.param0[i];
                let mut out = match b.name_of(id) {
                    Some(n) => view::quote_text(n),
                    None => view::unmapped_name(id).into_bytes(),
                };
                out.extend_from_slice(format!(" {} {}\n", b.param1[i], b.param2[i]).as_bytes());
                Ok(Content {
                    bytes: Arc::new(out),
                    serial: l.serial,
                })
            }
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(name) => {
                    let bytes =
                        std::fs::read(self.world.dir.join(&name)).map_err(|e| match e.kind() {
                            std::io::ErrorKind::NotFound => FsError::not_found(),
                            _ => FsError::io(format!("{name}: {e}")),
                        })?;
                    Ok(plain(bytes))
                }
                TableKey::Field { pos, p16, key } => {
                    let (l, entry) = self.meta_entry(pos, p16)?;
                    let var = entry.get(&key).ok_or_else(FsError::not_found)?;
                    Ok(Content {
                        bytes: Arc::new(view::render_field(&var.value)),
                        serial: l.serial,
                    })
                }
            },
            _ => Err(FsError::is_dir()),
        }
    }

    /// Check that a directory node exists.
    fn check_dir(&self, node: &Node) -> Result<()> {
        match node {
            Node::Root | Node::Blocks | Node::NodeDir => Ok(()),
            Node::BlockDir(pos) => {
                if self.cache.peek(*pos).is_some() || self.store.contains(*pos)? {
                    Ok(())
                } else {
                    Err(FsError::not_found())
                }
            }
            Node::MetaRoot(pos) => {
                let l = self.existing_block(*pos)?;
                l.decoded().map(|_| ()).ok_or_else(FsError::not_found)
            }
            Node::MetaDir(pos, p16) | Node::FieldsDir(pos, p16) => {
                self.meta_entry(*pos, *p16).map(|_| ())
            }
            _ => Err(FsError::not_dir()),
        }
    }

    fn attr_of(&self, node: &Node, kind: Kind, size: u64) -> Attr {
        let writable = !self.opts.read_only && !matches!(node, Node::Readme | Node::WriteErrors);
        let perm = match (kind, writable) {
            (Kind::Dir, true) => 0o755,
            (Kind::Dir, false) => 0o555,
            (Kind::File, true) => 0o644,
            (Kind::File, false) => 0o444,
        };
        Attr {
            ino: node.ino(),
            kind,
            size,
            perm,
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            mtime: self.mount_time,
            uid: self.opts.uid,
            gid: self.opts.gid,
        }
    }

    fn stat(&self, node: &Node) -> Result<Attr> {
        if self.is_dir(node)? {
            self.check_dir(node)?;
            Ok(self.attr_of(node, Kind::Dir, 0))
        } else if let Node::BlockFile(pos, f) = node {
            let size = self
                .existing_block(*pos)?
                .file_size(*f)
                .ok_or_else(FsError::not_found)?;
            Ok(self.attr_of(node, Kind::File, size as u64))
        } else {
            let c = self.content(node)?;
            Ok(self.attr_of(node, Kind::File, c.bytes.len() as u64))
        }
    }

    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        self.stat(&self.node(ino)?)
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr> {
        let child = self.child(&self.node(parent)?, name_bytes(name))?;
        self.stat(&child)
    }

    /// The node `name` in directory `parent`, if it could exist (existence
    /// is checked by `stat`).
    fn child(&self, parent: &Node, name: &[u8]) -> Result<Node> {
        let nf = FsError::not_found;
        match parent {
            Node::Root => Ok(match name {
                b"README" => Node::Readme,
                b"blocks" => Node::Blocks,
                b"node" => Node::NodeDir,
                b"write-errors" => Node::WriteErrors,
                _ => {
                    let s = std::str::from_utf8(name).map_err(|_| nf())?;
                    if !World::is_text_file_name(s) || !self.world.dir.join(s).is_file() {
                        return Err(nf());
                    }
                    self.table_node(TableKey::WorldFile(s.to_string()))
                }
            }),
            Node::Blocks => {
                let s = std::str::from_utf8(name).map_err(|_| nf())?;
                Ok(Node::BlockDir(s.parse().map_err(|_| nf())?))
            }
            Node::BlockDir(pos) => {
                if name == b"meta" {
                    return Ok(Node::MetaRoot(*pos));
                }
                let f = BlockFile::from_name(name).ok_or_else(nf)?;
                Ok(Node::BlockFile(*pos, f))
            }
            Node::MetaRoot(pos) => {
                let c = parse_node_coords(name).ok_or_else(nf)?;
                Ok(Node::MetaDir(*pos, in_block(*pos, c).ok_or_else(nf)?))
            }
            Node::MetaDir(pos, p16) => match name {
                b"fields" => Ok(Node::FieldsDir(*pos, *p16)),
                _ => Ok(Node::MetaFile(
                    *pos,
                    *p16,
                    MetaFile::from_name(name).ok_or_else(nf)?,
                )),
            },
            Node::FieldsDir(pos, p16) => {
                let key = escape::name_to_key(name).ok_or_else(nf)?;
                Ok(self.table_node(TableKey::Field {
                    pos: *pos,
                    p16: *p16,
                    key,
                }))
            }
            Node::NodeDir => Ok(Node::NodeFile(parse_node_coords(name).ok_or_else(nf)?)),
            _ => Err(FsError::not_dir()),
        }
    }

    fn parent_of(&self, node: &Node) -> Result<Node> {
        Ok(match node {
            Node::Root | Node::Blocks | Node::NodeDir | Node::Readme | Node::WriteErrors => {
                Node::Root
            }
            Node::BlockDir(_) => Node::Blocks,
            Node::BlockFile(p, _) | Node::MetaRoot(p) => Node::BlockDir(*p),
            Node::MetaDir(p, _) => Node::MetaRoot(*p),
            Node::FieldsDir(p, i) | Node::MetaFile(p, i, _) => Node::MetaDir(*p, *i),
            Node::NodeFile(_) => Node::NodeDir,
            Node::Table(id) => match self.table_key(*id)? {
                TableKey::WorldFile(_) => Node::Root,
                TableKey::Field { pos, p16, .. } => Node::FieldsDir(pos, p16),
            },
        })
    }

    /// The children of a directory other than `blocks/`, in listing order.
    fn children(&self, dir: &Node) -> Result<Vec<(Vec<u8>, Node)>> {
        self.check_dir(dir)?;
        Ok(match dir {
            Node::Root => {
                let mut v: Vec<(Vec<u8>, Node)> = vec![(b"README".to_vec(), Node::Readme)];
                for name in self.world.text_files() {
                    let node = self.table_node(TableKey::WorldFile(name.clone()));
                    v.push((name.into_bytes(), node));
                }
                v.push((b"blocks".to_vec(), Node::Blocks));
                v.push((b"node".to_vec(), Node::NodeDir));
                if !self.opts.read_only {
                    v.push((b"write-errors".to_vec(), Node::WriteErrors));
                }
                v
            }
            Node::NodeDir => Vec::new(),
            Node::BlockDir(pos) => {
                let l = self.existing_block(*pos)?;
                let mut v: Vec<(Vec<u8>, Node)> = l
                    .files()
                    .iter()
                    .map(|&f| (f.name().as_bytes().to_vec(), Node::BlockFile(*pos, f)))
                    .collect();
                if l.decoded().is_some() {
                    // after the node arrays, before timers: the order of the format
                    let at = v
                        .iter()
                        .position(|(n, _)| n == b"timers")
                        .unwrap_or(v.len());
                    v.insert(at, (b"meta".to_vec(), Node::MetaRoot(*pos)));
                }
                v
            }
            Node::MetaRoot(pos) => {
                let l = self.existing_block(*pos)?;
                let b = l.decoded().ok_or_else(FsError::not_found)?;
                b.metadata
                    .entries
                    .iter()
                    .map(|e| {
                        (
                            view::meta_dir_name(*pos, e.pos).into_bytes(),
                            Node::MetaDir(*pos, e.pos),
                        )
                    })
                    .collect()
            }
            Node::MetaDir(pos, p16) => {
                let mut v = vec![(b"fields".to_vec(), Node::FieldsDir(*pos, *p16))];
                v.extend(
                    MetaFile::ALL
                        .iter()
                        .map(|&f| (f.name().as_bytes().to_vec(), Node::MetaFile(*pos, *p16, f))),
                );
                v
            }
            Node::FieldsDir(pos, p16) => {
                let (_, entry) = self.meta_entry(*pos, *p16)?;
                view::field_names(&entry)
                    .into_iter()
                    .map(|name| {
                        let key = escape::name_to_key(&name).expect("escaped names unescape");
                        let node = self.table_node(TableKey::Field {
                            pos: *pos,
                            p16: *p16,
                            key,
                        });
                        (name, node)
                    })
                    .collect()
            }
            _ => return Err(FsError::not_dir()),
        })
    }

    /// List a directory from `offset` (0 = the start). `add` receives each
    /// entry (with its attributes when `plus`) and returns true when the
    /// reply buffer is full; the entry it was given is then not consumed.
    pub fn readdir(
        &self,
        ino: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let dir = self.node(ino)?;
        if !self.is_dir(&dir)? {
            return Err(FsError::not_dir());
        }
        let dots = [
            (1u64, b".".to_vec(), dir.clone()),
            (2, b"..".to_vec(), self.parent_of(&dir)?),
        ];
        for (cookie, name, node) in dots {
            if offset < cookie && self.emit(&node, name, cookie, Kind::Dir, plus, add)? {
                return Ok(());
            }
        }
        if dir == Node::Blocks {
            return self.list_blocks(offset, plus, add);
        }
        let children = self.children(&dir)?;
        for (i, (name, node)) in children.into_iter().enumerate() {
            let cookie = i as u64 + 3;
            if offset >= cookie {
                continue;
            }
            let kind = if self.is_dir(&node)? {
                Kind::Dir
            } else {
                Kind::File
            };
            if self.emit(&node, name, cookie, kind, plus, add)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Send one entry; true when the buffer is full.
    fn emit(
        &self,
        node: &Node,
        name: Vec<u8>,
        cookie: u64,
        kind: Kind,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<bool> {
        let entry = DirEntry {
            ino: node.ino(),
            offset: cookie,
            kind,
            name: OsString::from_vec(name),
        };
        let attr = if plus {
            match self.stat(node) {
                Ok(a) => Some(a),
                Err(e) if e.errno == libc::ENOENT => return Ok(false), // vanished meanwhile
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        Ok(add(&entry, attr.as_ref()))
    }

    /// `blocks/` is streamed from the store in key order: the cookie of an
    /// entry encodes its position, so any offset resumes with one indexed
    /// query and no state is kept between calls.
    fn list_blocks(
        &self,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let mut after =
            (offset >= BLOCK_COOKIE_BASE).then(|| BlockPos::unpack(offset - BLOCK_COOKIE_BASE));
        loop {
            let page = self.store.list_after(after, LIST_PAGE)?;
            for &pos in &page {
                let node = Node::BlockDir(pos);
                let cookie = pos.packed() + BLOCK_COOKIE_BASE;
                let entry = DirEntry {
                    ino: node.ino(),
                    offset: cookie,
                    kind: Kind::Dir,
                    name: pos.to_string().into(),
                };
                let attr = plus.then(|| self.attr_of(&node, Kind::Dir, 0));
                if add(&entry, attr.as_ref()) {
                    return Ok(());
                }
            }
            if page.len() < LIST_PAGE {
                return Ok(());
            }
            after = page.last().copied();
        }
    }

    pub fn open(&self, ino: u64, write: bool) -> Result<Opened> {
        let node = self.node(ino)?;
        if self.is_dir(&node)? {
            return Err(FsError::is_dir());
        }
        if write {
            return Err(FsError::read_only(if self.opts.read_only {
                "the mount is read-only (-o ro)"
            } else {
                "this file is read-only"
            }));
        }
        let c = self.content(&node)?;
        let keep_cache = {
            let mut served = self.served.lock().unwrap();
            if served.len() > SERVED_MAX {
                served.clear();
            }
            c.serial != 0 && served.insert(ino, c.serial) == Some(c.serial)
        };
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles
            .lock()
            .unwrap()
            .insert(fh, Handle { content: c.bytes });
        Ok(Opened { fh, keep_cache })
    }

    /// Read from an open handle; the content is the snapshot taken at open.
    pub fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>> {
        let handles = self.handles.lock().unwrap();
        let h = handles.get(&fh).ok_or_else(FsError::bad_handle)?;
        let start = (offset as usize).min(h.content.len());
        let end = start.saturating_add(size as usize).min(h.content.len());
        Ok(h.content[start..end].to_vec())
    }

    pub fn release(&self, fh: u64) -> Result<()> {
        self.handles.lock().unwrap().remove(&fh);
        Ok(())
    }

    /// Number of stored blocks (for statfs).
    pub fn block_count(&self) -> u64 {
        self.store.count().unwrap_or(0)
    }
}
