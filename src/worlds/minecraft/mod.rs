//! A Minecraft Java world directory (`level.dat` and `region/`, or from
//! 26.1 `dimensions/minecraft/overworld/region/`: `layout.rs`) as files:
//! `level` (level.dat as SNBT) at the root, the overworld's
//! `chunks/X,Z/` (`chunk.rs`, over the region files: `regions.rs`),
//! `block/X,Y,Z` (`block.rs`), in 1.17+ worlds `entities/X,Z/`
//! (`entities.rs`, over `entities/`, read-only), in 1.14+ worlds
//! `poi/X,Z/` (`poi.rs`, read-only), `find/` and `names` (`find.rs`),
//! `map/` (`map.rs`, as Luanti's); every other dimension's under
//! `dimensions/NAMESPACE/PATH/` (`dimensions.rs`); `players/UUID/`
//! (`level.rs`, over `playerdata/` or `players/data/`). Each part is a
//! tree of its own, joined by `fs::union` as a Luanti world's are. NBT,
//! SNBT and region files are the codecs `worldfs_codec::minecraft::nbt`,
//! `::snbt` and `::region`; sections are drawn with `view::layers`.

pub(crate) mod block;
pub(crate) mod check;
pub mod chunk;
pub(crate) mod chunk_dir;
pub(crate) mod dimensions;
pub(crate) mod entities;
pub(crate) mod find;
pub(crate) mod heightmap;
pub(crate) mod items;
pub(crate) mod journal;
pub(crate) mod layout;
pub(crate) mod legacy;
pub mod level;
pub(crate) mod map;
pub mod poi;
pub mod regions;
pub(crate) mod registry;
pub mod section;
pub(crate) mod sign;
pub(crate) mod top;
pub(crate) mod undo;

use crate::documents::doc_tree::write_atomically;
use crate::documents::files_tree::{FilesTree, Home, Stored};
use crate::documents::{Context, Document};
use crate::fs::union::{Mounted, Union};
use crate::fs::{FsError, Options, Result, Services, Tree};
use crate::worlds::block_tree::BlockTree;
use level::{LevelDoc, PlayerDoc};
use regions::{ChunkHome, FileStamp, Regions, check_session_lock, stamp_of};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The kind's name (`-t minecraft`).
pub(crate) const NAME: &str = "minecraft";

/// Whether a directory is a Java world: `level.dat` and the overworld's
/// `region/` (`layout.rs`: at the root, or from 26.1 in
/// `dimensions/minecraft/overworld/`).
pub(crate) fn is_java_world(dir: &Path) -> bool {
    layout::is_java_world(dir)
}

const CHUNKS_TAG: u64 = 1;
const BLOCK_TAG: u64 = 2;
const PLAYERS_TAG: u64 = 3;
const ENTITIES_TAG: u64 = 4;
const FIND_TAG: u64 = 5;
const MAP_TAG: u64 = 6;
const POI_TAG: u64 = 7;
const DIMENSIONS_TAG: u64 = 8;

/// What the trees of every dimension share.
pub(crate) struct Trees {
    /// The undo journal (None: not kept).
    pub(crate) journal: Option<PathBuf>,
}

/// The trees of dimension `dim` of the world at `world`: `chunks/`,
/// `block/`, `find/` and `names`, `map/`, and `entities/` and `poi/` where
/// it has them; tree `tag`'s inodes are `base(tag)` with its own numbers.
/// The overworld's chunks are journaled as `journal::CHUNKS`, another
/// dimension's as [`journal::chunks_of`] its id.
pub(crate) fn dimension_trees(
    world: &Path,
    dim: &layout::Dimension,
    base: impl Fn(u64) -> u64,
    trees: &Trees,
    opts: &Options,
    services: &Arc<Services>,
) -> Vec<Mounted> {
    let overworld = dim.path == "overworld" && dim.namespace == "minecraft";
    let collection = if overworld { journal::CHUNKS.to_string() } else { journal::chunks_of(&dim.id()) };
    let regions =
        Arc::new(Regions::new(world, dim.folder("region"), trees.journal.clone()).with_collection(collection));
    let home = ChunkHome { regions: regions.clone(), force: opts.force };
    let chunks = FilesTree::with_home_at(base(CHUNKS_TAG), home, opts.clone(), services.clone());
    let blocks = block::JavaBlocks { regions: regions.clone(), force: opts.force };
    let block = BlockTree::new(blocks, base(BLOCK_TAG), opts.clone(), services.clone());
    let tops = map::MinecraftTops(regions.clone());
    let map = crate::worlds::map_tree::MapTree::new_at(base(MAP_TAG), tops, opts.clone());
    let find = Arc::new(find::FindTree::new(regions, base(FIND_TAG), opts.clone()));
    let mut mounted = vec![
        Mounted { name: "chunks".into(), tag: CHUNKS_TAG, root: chunks.root(), tree: Arc::new(chunks) },
        Mounted { name: "block".into(), tag: BLOCK_TAG, root: block.root(), tree: Arc::new(block) },
        Mounted { name: "find".into(), tag: FIND_TAG, root: find.root(), tree: find.clone() },
        Mounted { name: "names".into(), tag: FIND_TAG, root: find.names_file(), tree: find },
        Mounted { name: "map".into(), tag: MAP_TAG, root: map.root(), tree: Arc::new(map) },
    ];
    if world.join(dim.folder("entities")).is_dir() {
        let home = regions::EntityHome { regions: Arc::new(Regions::new(world, dim.folder("entities"), None)) };
        let tree = FilesTree::with_home_at(base(ENTITIES_TAG), home, opts.clone(), services.clone());
        mounted.push(Mounted { name: "entities".into(), tag: ENTITIES_TAG, root: tree.root(), tree: Arc::new(tree) });
    }
    if world.join(dim.folder("poi")).is_dir() {
        let home = poi::PoiHome { regions: Arc::new(Regions::new(world, dim.folder("poi"), None)) };
        let tree = FilesTree::with_home_at(base(POI_TAG), home, opts.clone(), services.clone());
        mounted.push(Mounted { name: "poi".into(), tag: POI_TAG, root: tree.root(), tree: Arc::new(tree) });
    }
    mounted
}

/// The world at `dir` as one tree: the overworld's trees at the root,
/// every other dimension's under `dimensions/` (`dimensions.rs`).
pub(crate) fn open_world_tree(
    dir: &Path,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn Tree>, String> {
    if let Some(missing) = layout::missing(dir) {
        return Err(format!("{}: not a Minecraft Java world: {missing}", dir.display()));
    }
    let layout = layout::of(dir);
    let journal = (!opts.read_only && opts.journal).then(|| dir.join(worldfs_store::journal::FILE_NAME));
    if !opts.read_only {
        // A crash can leave a rewrite's temporary file behind.
        let folders = layout.all().flat_map(|d| d.region_folders(dir)).map(|(_, f)| f);
        for sub in folders.chain([PathBuf::new(), layout.players.clone()]) {
            for f in regions::remove_stale_temps(&dir.join(sub)) {
                log::info!("removed {}, left by a worldfs that is gone", f.display());
            }
        }
    }
    let level_home = LevelHome {
        path: dir.join("level.dat"),
        world: dir.to_path_buf(),
        force: opts.force,
        journal: journal.clone(),
    };
    let stored =
        level_home.load("").map_err(|e| e.message)?.ok_or_else(|| format!("{}: no level.dat", dir.display()))?;
    let level = FilesTree::with_home(0, level_home, opts.clone(), services.clone());
    level.prime("", stored);
    let level = Arc::new(level);
    Regions::new(dir, layout.overworld.folder("region"), None)
        .chunk_names()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let trees = Trees { journal: journal.clone() };
    let mut mounted = dimension_trees(dir, &layout.overworld, |t| t << 60, &trees, &opts, &services);
    mounted.extend(dimensions::tree(dir, &layout.others, DIMENSIONS_TAG, &trees, &opts, &services));
    let players = dir.join(&layout.players);
    if players.is_dir() {
        let home = PlayerHome { dir: players, world: dir.to_path_buf(), force: opts.force, journal };
        let players = FilesTree::with_home(PLAYERS_TAG, home, opts.clone(), services);
        mounted.push(Mounted {
            name: "players".into(),
            tag: PLAYERS_TAG,
            root: players.root(),
            tree: Arc::new(players),
        });
    }
    Ok(Arc::new(Union::new(level, mounted)))
}

/// `players/`: `playerdata/<uuid>.dat`, each a directory.
struct PlayerHome {
    dir: PathBuf,
    world: PathBuf,
    force: bool,
    journal: Option<PathBuf>,
}

impl PlayerHome {
    fn file(&self, name: &str) -> Result<PathBuf> {
        player_file(&self.dir, name).ok_or_else(FsError::not_found)
    }
}

impl Home<PlayerDoc> for PlayerHome {
    type Stamp = ();
    const MANY: bool = true;

    fn describe(&self) -> String {
        format!("players in {}", self.dir.display())
    }
    fn label(&self) -> &'static str {
        "players"
    }
    fn names(&self) -> Result<Vec<String>> {
        let rd = std::fs::read_dir(&self.dir).map_err(|e| FsError::io(format!("{}: {e}", self.dir.display())))?;
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".dat").map(String::from))
            .filter(|n| self.file(n).is_ok())
            .collect();
        names.sort();
        Ok(names)
    }
    fn load(&self, name: &str) -> Result<Option<Stored<PlayerDoc, ()>>> {
        let path = self.file(name)?;
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(FsError::io(format!("{}: {e}", path.display()))),
        };
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp: () }))
    }
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<PlayerDoc> {
        PlayerDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("player {name}: {e}")))
    }
    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<()>> {
        let path = self.file(name)?;
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("players cannot be made or deleted here"));
        };
        self.before_change()?;
        replace_file(&path, old, new, self.journal.as_deref(), (journal::PLAYERS, name, what))?;
        Ok(None)
    }
    fn before_change(&self) -> Result<()> {
        if self.force { Ok(()) } else { check_session_lock(&self.world) }
    }
}

/// `level.dat`, the root's one document; written like a player's file.
struct LevelHome {
    path: PathBuf,
    world: PathBuf,
    force: bool,
    journal: Option<PathBuf>,
}

impl Home<LevelDoc> for LevelHome {
    type Stamp = Option<FileStamp>;
    const MANY: bool = false;

    fn describe(&self) -> String {
        format!("Minecraft Java world {}", self.world.display())
    }
    fn readme(&self, doc: Option<&LevelDoc>) -> String {
        doc.map(LevelDoc::readme).unwrap_or_default()
    }
    fn stamp(&self, _name: &str) -> Result<Option<Self::Stamp>> {
        Ok(Some(stamp_of(&self.path)))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<LevelDoc, Self::Stamp>>> {
        let stamp = stamp_of(&self.path);
        let bytes = std::fs::read(&self.path).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))?;
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }
    fn decode(&self, _name: &str, bytes: &[u8]) -> Result<LevelDoc> {
        LevelDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))
    }
    fn store(&self, _name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<Self::Stamp>> {
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("level.dat cannot be deleted here"));
        };
        self.before_change()?;
        let journal = self.journal.as_deref();
        replace_file(&self.path, old, new, journal, (journal::LEVEL, journal::LEVEL_NAME, what))?;
        Ok(Some(stamp_of(&self.path)))
    }
    fn before_change(&self) -> Result<()> {
        if self.force { Ok(()) } else { check_session_lock(&self.world) }
    }
}

/// Replace a whole NBT file (a player's, level.dat) that still holds `old`
/// with `new`, journaled as `(collection, name, what)`; a file changed on
/// disk since it was read is refused.
pub(crate) fn replace_file(
    path: &Path,
    old: &[u8],
    new: &[u8],
    journal: Option<&Path>,
    (collection, name, what): (&str, &str, &str),
) -> Result<()> {
    let entry = journal::begin(journal, &worldfs_store::Note::new(what), collection, &[(name, old, new)])?;
    swap_file(path, old, new)?;
    entry.kept();
    Ok(())
}

/// [`replace_file`] without its journal entry.
pub(crate) fn swap_file(path: &Path, old: &[u8], new: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(old) {
        return Err(FsError::stale(format!("{} changed on disk meanwhile; read it again", path.display())));
    }
    write_atomically(path, new)
}

/// A player's file in `playerdata/` by its UUID (None: not a UUID's form).
pub(crate) fn player_file(playerdata: &Path, name: &str) -> Option<PathBuf> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    ok.then(|| playerdata.join(format!("{name}.dat")))
}
