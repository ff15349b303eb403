//! Opening what a path is: the one place that knows both the filesystem
//! core and every kind of world. It picks the kind (a Luanti world
//! directory, a Minecraft Java world directory: level.dat and region/, or
//! a one-file kind of [`crate::kinds::kinds`]), builds its
//! tree, and hands the core ([`WorldFs`]) that tree, so the core names no
//! kind of world and no store.

use crate::fs::{Options, Services, Tree, WorldFs};
use crate::store::MapStore;
use crate::world::World;
use std::path::Path;
use std::sync::Arc;

/// Open what `path` is (a Luanti world directory, or a file of a kind
/// `crate::kinds` knows; `kind` forces one). `extra`: mount options for
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
    let tree = crate::kinds::luanti::open_world_tree(dir, opts.clone(), services.clone())?;
    Ok(WorldFs::new(tree, services, opts))
}

/// The map of a world directory served from a given store (tests wrap
/// stores to count or fail their calls).
pub fn world_with_store(world: World, store: Box<dyn MapStore>, opts: Options) -> WorldFs {
    let services = Services::new();
    let tree =
        Arc::new(crate::kinds::luanti::LuantiTree::new(world, store, opts.clone(), services.clone()).with_index());
    WorldFs::new(tree, services, opts)
}

/// The kind name of a Luanti world directory.
pub const LUANTI: &str = "luanti";

/// Open what `path` is (or what `kind` says it is) as a tree to mount.
/// `extra`: the mount options the core did not know, for the kind.
pub fn open_mount(
    path: &Path,
    kind: Option<&str>,
    extra: Vec<(String, Option<String>)>,
    opts: Options,
    services: Arc<Services>,
) -> Result<Arc<dyn Tree>, String> {
    let all = crate::kinds::kinds();
    let names = || {
        [LUANTI, crate::kinds::minecraft::NAME]
            .into_iter()
            .chain(all.iter().map(|k| k.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let java = kind.is_none() && path.is_dir() && crate::kinds::minecraft::is_java_world(path);
    if kind.is_none()
        && path.is_dir()
        && let Some(why) = unknown_directory(path)
    {
        return Err(why);
    }
    if kind == Some(crate::kinds::minecraft::NAME) || java {
        if let Some((k, _)) = extra.first() {
            return Err(format!("unknown mount option '{k}' (a minecraft mount takes none of its own)"));
        }
        return crate::kinds::minecraft::open_world_tree(path, opts, services);
    }
    if kind == Some(LUANTI) || (kind.is_none() && path.is_dir()) {
        if let Some((k, _)) = extra.first() {
            return Err(format!("unknown mount option '{k}'"));
        }
        return crate::kinds::luanti::open_world_tree(path, opts, services);
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
/// what a Luanti world starts from: world.mt or map.sqlite).
pub fn unknown_directory(dir: &Path) -> Option<String> {
    let minecraft = crate::kinds::minecraft::layout::missing(dir)?;
    let luanti = ["world.mt", crate::store::backends::SQLITE_MAP_FILE];
    if luanti.iter().any(|f| dir.join(f).is_file()) {
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
