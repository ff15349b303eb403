//! `MNT/map/`: a world as a pyramid of PNG tiles (`Z/X,Y.png`, see
//! `view::tiles`) and `index.html` to look at them in a browser, for every
//! kind of world that can say what its columns are and draw a tile of them
//! from above ([`TopSource`]: Luanti's blocks, Minecraft's chunks). Tiles
//! are drawn on demand: the most detailed by the source, the others from
//! four finer tiles. Drawn tiles are kept under a memory bound; the column
//! list and the tiles are drawn again after [`FRESH`], so the map follows
//! changes (through the mount or by a server) within it.

use crate::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, Result, Tree, list_numbered};
use crate::view::picture;
use crate::view::tiles::{self, Bounds, MAX_Z, TILE};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long the column list and drawn tiles are trusted.
pub(crate) const FRESH: Duration = Duration::from_secs(30);
/// Memory for drawn tiles (PNG bytes).
const TILE_BUDGET: usize = 64 << 20;

/// What a kind of world draws its map from.
pub(crate) trait TopSource: Send + Sync + 'static {
    /// What the source knows of its columns when it draws.
    type Columns: Send + Sync;
    /// Whether z grows southwards (Minecraft) rather than northwards
    /// (Luanti): the page then shows z as the world has it.
    const SOUTH_Z: bool = false;

    /// Read the world's columns (cheap: positions only).
    fn read_columns(&self) -> Result<Self::Columns>;
    /// The 16 x 16 node columns there are, in map coordinates: (x, z) in
    /// units of 16 nodes, x growing eastwards and z northwards.
    fn keys(cols: &Self::Columns) -> Vec<(i64, i64)>;
    /// The RGBA pixels of the most detailed tile (TILE x TILE, a pixel a
    /// node) whose north-west pixel is map column (`west`, `north`).
    fn draw_tile(&self, cols: &Self::Columns, west: i64, north: i64) -> Result<Vec<u8>>;
}

/// Every column of the world, and the tiles each level has.
struct Columns<C> {
    at: Instant,
    cols: C,
    tiles: Vec<BTreeSet<(i64, i64)>>,
    bounds: Option<Bounds>,
}

/// A drawn tile: its PNG, when it was drawn, when it was last used.
type Drawn = (Arc<Vec<u8>>, Instant, u64);

#[derive(Default)]
struct TileCache {
    tiles: HashMap<(u8, i64, i64), Drawn>,
    bytes: usize,
    tick: u64,
}

pub(crate) struct MapTree<S: TopSource> {
    /// Every inode of the tree is this with a number below 1 << 48.
    base: u64,
    world: S,
    opts: Options,
    columns: Mutex<Option<Arc<Columns<S::Columns>>>>,
    cache: Mutex<TileCache>,
    since: SystemTime,
}

const INDEX: u64 = 2;

enum Node {
    Root,
    Index,
    Level(u8),
    Tile(u8, i64, i64),
}

impl<S: TopSource> MapTree<S> {
    pub(crate) fn new(tag: u64, world: S, opts: Options) -> MapTree<S> {
        Self::new_at(tag << 60, world, opts)
    }

    /// A map whose inodes are `base` with its own numbers in the low bits
    /// (a tree in a union mounted in another).
    pub(crate) fn new_at(base: u64, world: S, opts: Options) -> MapTree<S> {
        MapTree {
            base,
            world,
            opts,
            columns: Mutex::new(None),
            cache: Mutex::new(TileCache::default()),
            since: SystemTime::now(),
        }
    }

    pub(crate) fn root(&self) -> u64 {
        self.base | 1
    }

    fn ino(&self, n: &Node) -> u64 {
        let v = match *n {
            Node::Root => 1,
            Node::Index => INDEX,
            Node::Level(z) => 0x100 + z as u64,
            Node::Tile(z, x, y) => (1 << 32) | ((z as u64) << 24) | ((x as u64) << 12) | y as u64,
        };
        self.base | v
    }

    fn node(&self, ino: u64) -> Result<Node> {
        if ino >> 48 != self.base >> 48 {
            return Err(FsError::not_found());
        }
        let v = ino & ((1 << 48) - 1);
        Ok(match v {
            1 => Node::Root,
            INDEX => Node::Index,
            0x100..=0x1ff if v - 0x100 <= MAX_Z as u64 => Node::Level((v - 0x100) as u8),
            _ if v >> 32 == 1 => Node::Tile(((v >> 24) & 0xff) as u8, ((v >> 12) & 0xfff) as i64, (v & 0xfff) as i64),
            _ => return Err(FsError::not_found()),
        })
    }

    fn columns(&self) -> Result<Arc<Columns<S::Columns>>> {
        let mut c = self.columns.lock();
        if let Some(cols) = &*c
            && cols.at.elapsed() < FRESH
        {
            return Ok(cols.clone());
        }
        let all = self.world.read_columns()?;
        let mut tiles = vec![BTreeSet::new(); MAX_Z as usize + 1];
        let mut bounds: Option<Bounds> = None;
        for (cx, cz) in S::keys(&all) {
            let (x, z) = (cx * 16, cz * 16);
            for (level, set) in tiles.iter_mut().enumerate() {
                set.insert(tiles::tile_of(level as u8, x, z));
            }
            let b = bounds.get_or_insert(Bounds { min_x: x, max_x: x + 15, min_z: z, max_z: z + 15 });
            b.min_x = b.min_x.min(x);
            b.max_x = b.max_x.max(x + 15);
            b.min_z = b.min_z.min(z);
            b.max_z = b.max_z.max(z + 15);
        }
        let cols = Arc::new(Columns { at: Instant::now(), cols: all, tiles, bounds });
        *c = Some(cols.clone());
        Ok(cols)
    }

    /// A tile's PNG, drawn or from the cache.
    fn tile(&self, z: u8, tx: i64, ty: i64) -> Result<Arc<Vec<u8>>> {
        {
            let mut c = self.cache.lock();
            c.tick += 1;
            let tick = c.tick;
            if let Some((png, at, t)) = c.tiles.get_mut(&(z, tx, ty))
                && at.elapsed() < FRESH
            {
                *t = tick;
                return Ok(png.clone());
            }
        }
        let cols = self.columns()?;
        let pixels = if z == MAX_Z { self.draw_detail(&cols, tx, ty)? } else { self.draw_coarse(&cols, z, tx, ty)? };
        let png = Arc::new(picture::encode_png(TILE as u32, TILE as u32, &pixels));
        let mut c = self.cache.lock();
        c.tick += 1;
        let tick = c.tick;
        c.bytes += png.len();
        if let Some((old, _, _)) = c.tiles.insert((z, tx, ty), (png.clone(), Instant::now(), tick)) {
            c.bytes -= old.len();
        }
        while c.bytes > TILE_BUDGET && c.tiles.len() > 1 {
            let Some(oldest) = c.tiles.iter().min_by_key(|(_, (_, _, t))| *t).map(|(k, _)| *k) else { break };
            if let Some((old, _, _)) = c.tiles.remove(&oldest) {
                c.bytes -= old.len();
            }
        }
        Ok(png)
    }

    /// A most detailed tile: a pixel a node, from the source.
    fn draw_detail(&self, cols: &Columns<S::Columns>, tx: i64, ty: i64) -> Result<Vec<u8>> {
        let (west, north) = tiles::origin(MAX_Z, tx, ty);
        self.world.draw_tile(&cols.cols, west, north)
    }

    /// A coarser tile from its four children, drawn side by side.
    fn draw_coarse(&self, cols: &Columns<S::Columns>, z: u8, tx: i64, ty: i64) -> Result<Vec<u8>> {
        let kids: Vec<(i64, i64)> = (0..4).map(|i| (2 * tx + (i % 2), 2 * ty + (i / 2))).collect();
        let drawn: Vec<Result<Option<Vec<u8>>>> = std::thread::scope(|s| {
            let handles: Vec<_> = kids
                .iter()
                .enumerate()
                .map(|(i, &(cx, cy))| {
                    s.spawn(move || -> Result<Option<Vec<u8>>> {
                        crate::sys::affinity::start_on(i);
                        if !cols.tiles[z as usize + 1].contains(&(cx, cy)) {
                            return Ok(None);
                        }
                        let png = self.tile(z + 1, cx, cy)?;
                        let (_, _, px) = picture::decode_png(&png).map_err(FsError::io)?;
                        Ok(Some(px))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        });
        let mut children: Vec<Option<Vec<u8>>> = Vec::with_capacity(4);
        for d in drawn {
            children.push(d?);
        }
        Ok(tiles::compose([
            children[0].as_deref(),
            children[1].as_deref(),
            children[2].as_deref(),
            children[3].as_deref(),
        ]))
    }

    fn content(&self, n: &Node) -> Result<Arc<Vec<u8>>> {
        match *n {
            Node::Index => Ok(Arc::new(tiles::index_html(self.columns()?.bounds, S::SOUTH_Z).into_bytes())),
            Node::Tile(z, x, y) => {
                if !self.columns()?.tiles[z as usize].contains(&(x, y)) {
                    return Err(FsError::not_found());
                }
                self.tile(z, x, y)
            }
            _ => Err(FsError::is_dir()),
        }
    }

    fn attr(&self, n: &Node) -> Result<Attr> {
        let ino = self.ino(n);
        match n {
            Node::Root | Node::Level(_) => Ok(Attr::new(ino, Kind::Dir, 0, Access::Generated, self.since, &self.opts)),
            _ => {
                let size = self.content(n)?.len() as u64;
                Ok(Attr::new(ino, Kind::File, size, Access::Generated, SystemTime::now(), &self.opts))
            }
        }
    }
}

impl<S: TopSource> Tree for MapTree<S> {
    fn describe(&self) -> String {
        "map tiles".into()
    }

    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        let name = std::str::from_utf8(name).map_err(|_| FsError::not_found())?;
        let child = match self.node(parent)? {
            Node::Root if name == "index.html" => Node::Index,
            Node::Root => {
                let z: u8 = name.parse().map_err(|_| FsError::not_found())?;
                if z > MAX_Z || name != z.to_string() {
                    return Err(FsError::not_found());
                }
                Node::Level(z)
            }
            Node::Level(z) => {
                let (x, y) = tiles::parse_name(name).ok_or_else(FsError::not_found)?;
                if !self.columns()?.tiles[z as usize].contains(&(x, y)) {
                    return Err(FsError::not_found());
                }
                Node::Tile(z, x, y)
            }
            _ => return Err(FsError::not_dir()),
        };
        self.attr(&child)
    }

    fn getattr(&self, ino: u64) -> Result<Attr> {
        self.attr(&self.node(ino)?)
    }

    fn parent(&self, ino: u64) -> Result<u64> {
        Ok(match self.node(ino)? {
            Node::Root => crate::fs::ROOT,
            Node::Index | Node::Level(_) => self.root(),
            Node::Tile(z, _, _) => self.ino(&Node::Level(z)),
        })
    }

    fn list(
        &self,
        dir: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        let entries: Vec<(String, Node)> = match self.node(dir)? {
            Node::Root => std::iter::once(("index.html".to_string(), Node::Index))
                .chain((0..=MAX_Z).map(|z| (z.to_string(), Node::Level(z))))
                .collect(),
            Node::Level(z) => self.columns()?.tiles[z as usize]
                .iter()
                .map(|&(x, y)| (format!("{x},{y}.png"), Node::Tile(z, x, y)))
                .collect(),
            _ => return Err(FsError::not_dir()),
        };
        list_numbered(entries, offset, |(name, n), cookie| {
            let attr = if plus { Some(self.attr(&n)?) } else { None };
            let kind = if matches!(n, Node::Level(_)) { Kind::Dir } else { Kind::File };
            Ok(add(&DirEntry { ino: self.ino(&n), offset: cookie, kind, name: name.into() }, attr.as_ref()))
        })
    }

    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        self.content(&self.node(ino)?)
    }

    fn check_writable(&self, _ino: u64) -> Result<()> {
        Err(FsError::perm("map/ is drawn from the world; edit the blocks instead"))
    }

    fn write(&self, _ino: u64, _content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        Err(FsError::perm("map/ is drawn from the world; edit the blocks instead"))
    }

    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Err(FsError::perm("map/ is drawn from the world; nothing can be made in it"))
    }

    fn path(&self, ino: u64) -> String {
        match self.node(ino) {
            Ok(Node::Root) => "map".into(),
            Ok(Node::Index) => "map/index.html".into(),
            Ok(Node::Level(z)) => format!("map/{z}"),
            Ok(Node::Tile(z, x, y)) => format!("map/{z}/{x},{y}.png"),
            Err(_) => format!("inode {ino:#x}"),
        }
    }

    /// Tiles appear as the world grows.
    fn negative_entries(&self, _dir: u64) -> bool {
        false
    }
}
