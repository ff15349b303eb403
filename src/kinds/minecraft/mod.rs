//! A Minecraft Java world directory (`level.dat` and `region/`) as files:
//! `level` (level.dat as SNBT) at the root, `chunks/X,Z/` (`chunk.rs`, over
//! the region files: `regions.rs`), `block/X,Y,Z` (`block.rs`) and
//! `players/UUID/` (`level.rs`, over `playerdata/`), and in 1.17+ worlds
//! `entities/X,Z/` (`entities.rs`, over `entities/`, read-only); `find/`
//! and `names` (`find.rs`), `map/` (`map.rs`, as Luanti's). Each part is a tree of
//! its own, joined by `fs::union` as a Luanti world's are. NBT, SNBT and
//! region files are the codecs `codec::nbt`, `codec::snbt` and
//! `codec::region`; sections are drawn with `view::layers`.

pub mod block;
pub mod check;
pub mod chunk;
pub mod chunk_dir;
pub mod entities;
pub mod find;
pub mod heightmap;
pub mod items;
pub mod journal;
pub mod legacy;
pub mod level;
pub mod map;
pub mod regions;
pub mod section;
pub mod sign;
pub mod top;
pub mod undo;

use crate::fs::union::{Mounted, Union};
use crate::fs::{FsError, Options, Result, Services, Tree};
use crate::kinds::doc_tree::write_atomically;
use crate::kinds::files_tree::{FilesTree, Home, Stored};
use crate::kinds::{Context, Document};
use level::{LevelDoc, PlayerDoc};
use regions::{ChunkHome, FileStamp, Regions, check_session_lock, stamp_of};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The kind's name (`-t minecraft`).
pub const NAME: &str = "minecraft";

/// Whether a directory is a Java world: `level.dat` and `region/`.
pub fn is_java_world(dir: &Path) -> bool {
    dir.join("level.dat").is_file() && dir.join("region").is_dir()
}

const CHUNKS_TAG: u64 = 1;
const BLOCK_TAG: u64 = 2;
const PLAYERS_TAG: u64 = 3;
const ENTITIES_TAG: u64 = 4;
const FIND_TAG: u64 = 5;
const MAP_TAG: u64 = 6;

/// The world at `dir` as one tree.
pub fn open_world_tree(
    dir: &Path,
    opts: Options,
    services: Arc<Services>,
) -> std::result::Result<Arc<dyn Tree>, String> {
    if !is_java_world(dir) {
        return Err(format!("{}: not a Minecraft Java world (level.dat and region/ expected)", dir.display()));
    }
    let journal = (!opts.read_only && opts.journal).then(|| dir.join(crate::store::journal::FILE_NAME));
    if !opts.read_only {
        // A crash can leave a rewrite's temporary file behind.
        for sub in ["", "region", "entities", "playerdata"] {
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
    let regions = Arc::new(Regions::new(dir, "region", journal.clone()));
    regions.chunk_names().map_err(|e| format!("{}: {e}", dir.display()))?;
    let home = ChunkHome { regions: regions.clone(), force: opts.force };
    let chunks = FilesTree::with_home(CHUNKS_TAG, home, opts.clone(), services.clone());
    let block = block::BlockTree::new(regions.clone(), BLOCK_TAG, opts.clone(), services.clone());
    let map = crate::kinds::map_tree::MapTree::new(MAP_TAG, map::MinecraftTops(regions.clone()), opts.clone());
    let find = Arc::new(find::FindTree::new(regions, FIND_TAG, opts.clone()));
    let mut mounted = vec![
        Mounted { name: "chunks".into(), tag: CHUNKS_TAG, root: chunks.root(), tree: Arc::new(chunks) },
        Mounted { name: "block".into(), tag: BLOCK_TAG, root: block.root(), tree: Arc::new(block) },
        Mounted { name: "find".into(), tag: FIND_TAG, root: find.root(), tree: find.clone() },
        Mounted { name: "names".into(), tag: FIND_TAG, root: find.names_file(), tree: find },
        Mounted { name: "map".into(), tag: MAP_TAG, root: map.root(), tree: Arc::new(map) },
    ];
    if dir.join("entities").is_dir() {
        let home = regions::EntityHome { regions: Arc::new(Regions::new(dir, "entities", None)) };
        let tree = FilesTree::with_home(ENTITIES_TAG, home, opts.clone(), services.clone());
        mounted.push(Mounted { name: "entities".into(), tag: ENTITIES_TAG, root: tree.root(), tree: Arc::new(tree) });
    }
    if dir.join("playerdata").is_dir() {
        let home = PlayerHome { dir: dir.join("playerdata"), world: dir.to_path_buf(), force: opts.force, journal };
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
pub fn replace_file(
    path: &Path,
    old: &[u8],
    new: &[u8],
    journal: Option<&Path>,
    (collection, name, what): (&str, &str, &str),
) -> Result<()> {
    let entry = journal::begin(journal, &crate::store::Note::new(what), collection, &[(name, old, new)])?;
    swap_file(path, old, new)?;
    entry.kept();
    Ok(())
}

/// [`replace_file`] without its journal entry.
pub fn swap_file(path: &Path, old: &[u8], new: &[u8]) -> Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(old) {
        return Err(FsError::stale(format!("{} changed on disk meanwhile; read it again", path.display())));
    }
    write_atomically(path, new)
}

/// A player's file in `playerdata/` by its UUID (None: not a UUID's form).
pub fn player_file(playerdata: &Path, name: &str) -> Option<PathBuf> {
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    ok.then(|| playerdata.join(format!("{name}.dat")))
}
