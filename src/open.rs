//! Opening what a path is: the one place that knows both the filesystem
//! core and every kind of world. It picks the kind (a Luanti world
//! directory, a Minecraft Java world directory: level.dat and region/, a
//! Minecraft Bedrock world directory: level.dat and db/, or a one-file kind of [`document_kinds`]), builds its
//! tree, and hands the core ([`WorldFs`]) that tree, so the core names no
//! kind of world and no store.

use crate::documents::{KindInfo, doc_kind};
use crate::fs::{Options, Services, Tree, WorldFs};
use std::path::Path;
use std::sync::Arc;
use worldfs_store::MapStore;
use worldfs_store::world::World;

/// Open what `path` is (a Luanti world directory, or a file of a kind
/// `crate::documents` knows; `kind` forces one). `extra`: mount options for
/// the kind.
pub fn open_path(
    path: &Path,
    kind: Option<&str>,
    extra: Vec<(String, Option<String>)>,
    opts: Options,
) -> Result<WorldFs, String> {
    let services = Services::new();
    let tree = open_mount(path, kind, extra, opts.clone(), services.clone())?;
    Ok(WorldFs::new(tree, services, opts))
}

/// Open a Luanti world directory with the map store its world.mt names.
/// A writable open is refused while another process has the map database
/// open, unless `opts.force`.
pub fn open_world(dir: &Path, opts: Options) -> Result<WorldFs, String> {
    let services = Services::new();
    let tree = crate::worlds::luanti::open_world_tree(dir, opts.clone(), services.clone())?;
    Ok(WorldFs::new(tree, services, opts))
}

/// The map of a world directory served from a given store (tests wrap
/// stores to count or fail their calls).
pub fn world_with_store(world: World, store: Box<dyn MapStore>, opts: Options) -> WorldFs {
    let services = Services::new();
    let tree =
        Arc::new(crate::worlds::luanti::LuantiTree::new(world, store, opts.clone(), services.clone()).with_index());
    WorldFs::new(tree, services, opts)
}

/// Every one-file kind a mount can serve (worlds kept in a directory are
/// [`WorldKind`]s). Adding a kind is adding its module under
/// `crate::documents` and one line here.
pub fn document_kinds() -> Vec<KindInfo> {
    use crate::documents::{cubeset, mcchunk, mts, twmap, we};
    vec![
        doc_kind::<twmap::TwMap>("Teeworlds/DDNet map (.map)"),
        doc_kind::<mts::MtsDocument>("Luanti schematic (.mts)"),
        doc_kind::<we::WeDocument>("WorldEdit file (.we)"),
        doc_kind::<cubeset::Cubeset>("Cuberite prefab set (.cubeset)"),
        doc_kind::<mcchunk::McChunk>("Minecraft chunk data, 1.9-1.12 or 1.16 (.dump with its .meta)"),
    ]
}

/// The kind name of a Luanti world directory.
pub(crate) const LUANTI: &str = "luanti";

/// A kind of world kept in a directory; every command that works on a
/// world directory (mount, check, undo, journal prune) asks this which one
/// a directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorldKind {
    /// A Luanti world: world.mt and a map database.
    Luanti,
    /// A Minecraft Java world: level.dat and region files.
    MinecraftJava,
    /// A Minecraft Bedrock world: level.dat and db/ (LevelDB).
    MinecraftBedrock,
}

impl WorldKind {
    /// Every kind of world kept in a directory.
    pub const ALL: [WorldKind; 3] = [WorldKind::Luanti, WorldKind::MinecraftJava, WorldKind::MinecraftBedrock];

    /// The kind of the world directory `dir` (a Luanti world unless it
    /// looks like another kind: the Luanti tree says what is missing).
    pub(crate) fn of(dir: &Path) -> WorldKind {
        if crate::worlds::minecraft::is_java_world(dir) {
            WorldKind::MinecraftJava
        } else if crate::worlds::bedrock::is_bedrock_world(dir) {
            WorldKind::MinecraftBedrock
        } else {
            WorldKind::Luanti
        }
    }

    /// The name `worldfs mount -t NAME` takes.
    pub fn name(self) -> &'static str {
        match self {
            WorldKind::Luanti => LUANTI,
            WorldKind::MinecraftJava => crate::worlds::minecraft::NAME,
            WorldKind::MinecraftBedrock => crate::worlds::bedrock::NAME,
        }
    }

    fn named(name: &str) -> Option<WorldKind> {
        WorldKind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn open_tree(self, dir: &Path, opts: Options, services: Arc<Services>) -> Result<Arc<dyn Tree>, String> {
        match self {
            WorldKind::Luanti => crate::worlds::luanti::open_world_tree(dir, opts, services),
            WorldKind::MinecraftJava => crate::worlds::minecraft::open_world_tree(dir, opts, services),
            WorldKind::MinecraftBedrock => crate::worlds::bedrock::open_world_tree(dir, opts, services),
        }
    }
}

/// Open what `path` is (or what `kind` says it is) as a tree to mount.
/// `extra`: the mount options the core did not know, for the kind.
pub(crate) fn open_mount(
    path: &Path,
    kind: Option<&str>,
    extra: Vec<(String, Option<String>)>,
    opts: Options,
    services: Arc<Services>,
) -> Result<Arc<dyn Tree>, String> {
    let all = document_kinds();
    let names = || {
        WorldKind::ALL.map(|k| k.name()).into_iter().chain(all.iter().map(|k| k.name)).collect::<Vec<_>>().join(", ")
    };
    let world = match kind {
        Some(name) => WorldKind::named(name),
        None if path.is_dir() => Some(WorldKind::of(path)),
        None => None,
    };
    if kind.is_none()
        && path.is_dir()
        && let Some(why) = unknown_directory(path)
    {
        return Err(why);
    }
    if path.is_file() && matches!(kind, None | Some(crate::worlds::bedrock::NAME)) {
        let head = read_head(path)?;
        if crate::worlds::bedrock::mcworld::is_mcworld(path, &head) {
            if let Some((k, _)) = extra.first() {
                return Err(format!("unknown mount option '{k}' (a bedrock mount takes none of its own)"));
            }
            return crate::worlds::bedrock::open_mcworld(path, opts, services);
        }
    }
    if let Some(world) = world {
        if let Some((k, _)) = extra.first() {
            return Err(format!("unknown mount option '{k}' (a {} mount takes none of its own)", world.name()));
        }
        return world.open_tree(path, opts, services);
    }
    let info = match kind {
        Some(name) => all
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| format!("-t {name}: no such kind of world (kinds: {})", names()))?,
        None => {
            let head = read_head(path)?;
            all.iter().find(|k| k.sniffs(path, &head)).ok_or_else(|| {
                format!(
                    "{}: not a kind of world worldfs knows (a Luanti world is a directory with world.mt; \
                     files: {}); name one with -t KIND",
                    path.display(),
                    all.iter().map(|k| format!("{} ({})", k.name, k.what)).collect::<Vec<_>>().join(", ")
                )
            })?
        }
    };
    if path.is_dir() {
        return Err(format!("{}: a {} is a file, not a directory", path.display(), info.name));
    }
    let known = info.mount_options();
    if let Some((k, _)) = extra.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        return Err(format!(
            "unknown mount option '{k}' (a {} mount takes: {})",
            info.name,
            if known.is_empty() { "none of its own".to_string() } else { known.join(", ") }
        ));
    }
    info.open(path, extra, opts, services)
}

/// Why directory `dir` is no world worldfs knows, saying what each kind
/// of world would have that it lacks (None: it is a Java world, or has
/// what a Luanti world starts from: world.mt or map.sqlite, or is a Bedrock
/// world).
pub(crate) fn unknown_directory(dir: &Path) -> Option<String> {
    let minecraft = crate::worlds::minecraft::layout::missing(dir)?;
    let luanti = ["world.mt", worldfs_store::world::backends::SQLITE_MAP_FILE];
    if luanti.iter().any(|f| dir.join(f).is_file()) || crate::worlds::bedrock::is_bedrock_world(dir) {
        return None;
    }
    Some(format!(
        "{}: not a world worldfs knows. A Luanti world has world.mt and its map (map.sqlite, or the database \
         world.mt names); here: no world.mt and no map.sqlite. {}{}.",
        dir.display(),
        minecraft[..1].to_uppercase(),
        &minecraft[1..]
    ))
}

/// The first 4 KiB of a file, for sniffing.
fn read_head(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = vec![0; 4096];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    head.truncate(n);
    Ok(head)
}
