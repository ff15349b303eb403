//! A Minecraft Bedrock world directory (`level.dat` and `db/`, Mojang's
//! LevelDB) as files: `level` (level.dat as SNBT) at the root,
//! `chunks/X,Z/` for the overworld and `dimensions/nether/chunks/X,Z/`,
//! `dimensions/end/chunks/X,Z/` (`chunk.rs`; each chunk's keys a document),
//! `block/X,Y,Z` (`block.rs`), `players/NAME/` (`level.rs`), `find/` and
//! `names` (`find.rs`), `map/` (`map.rs`). The Java world's parts are
//! reused where they fit: its section drawing, block entity files, top
//! pictures, level journal and undo planner; the other dimensions' chunk
//! trees are nested under `dimensions/` as a Java world's are
//! (`worlds::folders`).

pub(crate) mod block;
pub(crate) mod check;
pub mod chunk;
pub(crate) mod db;
pub(crate) mod find;
pub(crate) mod items;
pub(crate) mod level;
pub(crate) mod map;
pub(crate) mod mcworld;
pub(crate) mod sign;
pub(crate) mod states;
pub(crate) mod tables;
pub(crate) mod undo;

use crate::documents::files_tree::{FilesTree, Home, Stored};
use crate::fs::union::{Mounted, Union};
use crate::fs::{FsError, Options, Result, Services, Tree};
use crate::worlds::block_tree::BlockTree;
use crate::worlds::folders::{folder_union, mounted_union};
use chunk::ChunkDoc;
use db::Db;
use std::path::Path;
use std::sync::Arc;
use worldfs_codec::bedrock::key::{ChunkPos, END, NETHER, OVERWORLD};
use worldfs_store::leveldb::bedrock::BedrockDb;

/// The kind's name (`-t bedrock`).
pub(crate) const NAME: &str = "bedrock";

/// Whether a directory is a Bedrock world: `level.dat` and `db/CURRENT`.
pub(crate) fn is_bedrock_world(dir: &Path) -> bool {
    dir.join("level.dat").is_file() && dir.join("db").join("CURRENT").is_file()
}

const CHUNKS_TAG: u64 = 1;
const BLOCK_TAG: u64 = 2;
const PLAYERS_TAG: u64 = 3;
const FIND_TAG: u64 = 4;
const MAP_TAG: u64 = 5;
const DIMS_TAG: u64 = 6;

/// The dimensions under `dimensions/`: name, id; each a folder of the
/// tag of its place (1, 2) with its chunks as tree 1.
const OTHER_DIMENSIONS: [(&str, i32); 2] = [("nether", NETHER), ("end", END)];

/// Open the world's database as a mount needs it.
pub(crate) fn open_db(dir: &Path, opts: &Options) -> std::result::Result<Db, String> {
    if !is_bedrock_world(dir) {
        return Err(format!("{}: not a Minecraft Bedrock world (level.dat and db/ expected)", dir.display()));
    }
    let store = BedrockDb::open(&dir.join("db"), opts.read_only)?;
    let journal = (!opts.read_only && opts.journal).then(|| dir.join(worldfs_store::journal::FILE_NAME));
    Ok(Db::new(store, journal))
}

/// The world at `dir` as one tree.
pub(crate) fn open_world_tree(
    dir: &Path,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn Tree>, String> {
    let db = Arc::new(open_db(dir, &opts)?);
    tree_of(dir, db, opts, services)
}

/// A `.mcworld` file, unpacked into a temporary folder (removed when the
/// mount ends) and mounted read-only.
pub(crate) fn open_mcworld(
    file: &Path,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn Tree>, String> {
    if !opts.read_only {
        return Err(format!(
            "{}: a .mcworld mounts read-only (-o ro); to edit it, `worldfs unpack {0} DIR` and mount DIR",
            file.display()
        ));
    }
    let scratch = tempfile::Builder::new()
        .prefix("worldfs-mcworld-")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary folder: {e}"))?;
    let dir = mcworld::unpack(file, scratch.path())?;
    let mut db = open_db(&dir, &opts)?;
    db.scratch = Some(scratch);
    tree_of(&dir, Arc::new(db), opts, services)
}

fn tree_of(
    dir: &Path,
    db: Arc<Db>,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn Tree>, String> {
    if !opts.read_only {
        for f in crate::worlds::minecraft::regions::remove_stale_temps(dir) {
            log::info!("removed {}, left by a worldfs that is gone", f.display());
        }
    }
    let level_home = level::LevelHome { path: dir.join("level.dat"), journal: db.journal.clone() };
    let stored =
        level_home.load("").map_err(|e| e.message)?.ok_or_else(|| format!("{}: no level.dat", dir.display()))?;
    let level = FilesTree::with_home(0, level_home, opts.clone(), services.clone());
    level.prime("", stored);
    db.chunks().map_err(|e| format!("{}: {}", dir.display(), e.message))?;
    let chunks = |dim: i32, base: u64| {
        let home = ChunkHome { db: db.clone(), dim };
        Arc::new(FilesTree::with_home_at(base, home, opts.clone(), services.clone()))
    };
    let over = chunks(OVERWORLD, CHUNKS_TAG << 60);
    // dimensions/NAME/chunks/: the four bits at 56 name the dimension,
    // those at 52 its trees (its chunks: 1).
    let dims_base = DIMS_TAG << 60;
    let dim_mounts = (1..)
        .zip(OTHER_DIMENSIONS)
        .map(|(dim_tag, (name, dim))| {
            let dim_base = dims_base | dim_tag << 56;
            let t = chunks(dim, dim_base | 1 << 52);
            let mounted = vec![Mounted { name: "chunks".into(), tag: 1, root: t.root(), tree: t }];
            mounted_union(name, dim_tag, folder_union(dim_base, 52, format!("dimensions/{name}/"), mounted, &opts))
        })
        .collect();
    let dims =
        mounted_union("dimensions", DIMS_TAG, folder_union(dims_base, 56, "dimensions/".into(), dim_mounts, &opts));
    let blocks = block::BedrockBlocks { db: db.clone() };
    let block = BlockTree::new(blocks, BLOCK_TAG << 60, opts.clone(), services.clone());
    let find = Arc::new(find::new(db.clone(), FIND_TAG, opts.clone()));
    let map = crate::worlds::map_tree::MapTree::new(MAP_TAG, map::BedrockTops(db.clone()), opts.clone());
    let players = FilesTree::with_home(PLAYERS_TAG, level::PlayerHome { db: db.clone() }, opts.clone(), services);
    let mounted = vec![
        Mounted { name: "chunks".into(), tag: CHUNKS_TAG, root: over.root(), tree: over },
        dims,
        Mounted { name: "block".into(), tag: BLOCK_TAG, root: block.root(), tree: Arc::new(block) },
        Mounted { name: "find".into(), tag: FIND_TAG, root: find.root(), tree: find.clone() },
        Mounted { name: "names".into(), tag: FIND_TAG, root: find.names_file(), tree: find },
        Mounted { name: "map".into(), tag: MAP_TAG, root: map.root(), tree: Arc::new(map) },
        Mounted { name: "players".into(), tag: PLAYERS_TAG, root: players.root(), tree: Arc::new(players) },
    ];
    Ok(Arc::new(Union::new(Arc::new(level), mounted)))
}

/// Chunk coordinates from an item name `X,Z`.
pub(crate) fn parse_name(name: &str) -> Option<(i32, i32)> {
    let (x, z) = name.split_once(',')?;
    let (x, z): (i32, i32) = (x.parse().ok()?, z.parse().ok()?);
    (format!("{x},{z}") == name).then_some((x, z))
}

/// `chunks/` of one dimension: each chunk a directory `X,Z`.
pub(crate) struct ChunkHome {
    pub(crate) db: Arc<Db>,
    pub(crate) dim: i32,
}

impl ChunkHome {
    fn pos(&self, name: &str) -> Result<ChunkPos> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        Ok(ChunkPos { dim: self.dim, x, z })
    }
}

impl Home<ChunkDoc> for ChunkHome {
    type Stamp = u64;
    const MANY: bool = true;

    fn describe(&self) -> String {
        format!("{} (dimension {})", self.db.store.describe(), self.dim)
    }
    fn label(&self) -> &'static str {
        "chunks"
    }
    fn names(&self) -> Result<Vec<String>> {
        Ok(self.db.chunks_of(self.dim)?.into_iter().map(|(x, z)| format!("{x},{z}")).collect())
    }
    fn stamp(&self, _name: &str) -> Result<Option<u64>> {
        Ok(Some(self.db.store.version()))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<ChunkDoc, u64>>> {
        let Ok(pos) = self.pos(name) else { return Ok(None) };
        let stamp = self.db.store.version();
        let records = self.db.records(pos)?;
        if records.is_empty() {
            return Ok(None);
        }
        let bytes = chunk::pack(&records);
        Ok(Some(Stored { bytes, doc: ChunkDoc::new(pos, records), stamp }))
    }
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<ChunkDoc> {
        let records = chunk::unpack(bytes).map_err(|e| FsError::io(format!("chunk {name}: {e}")))?;
        Ok(ChunkDoc::new(self.pos(name)?, records))
    }
    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<u64>> {
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("chunks cannot be made or deleted here"));
        };
        let io = |e: String| FsError::io(format!("chunk {name}: {e}"));
        let (old, new) = (chunk::unpack(old).map_err(io)?, chunk::unpack(new).map_err(io)?);
        let _one = self.db.lock.lock();
        self.db.write(&old, &new, what)?;
        Ok(Some(self.db.store.version()))
    }
}
