//! Where a Java world keeps what. Before 26.1 the overworld is at the
//! world's root (`region/`, `entities/` from 1.17, `poi/` from 1.14), the
//! Nether in `DIM-1/`, the End in `DIM1/`, other dimensions (data packs,
//! mods; 1.16+) in `dimensions/NAMESPACE/PATH/`, and players in
//! `playerdata/`. From 26.1 every dimension is in
//! `dimensions/NAMESPACE/PATH/` (the overworld in
//! `dimensions/minecraft/overworld/`) and players in `players/data/`
//! (Mojang's changelog of 26.1 Snapshot 6, "World Storage").

use std::path::{Path, PathBuf};

/// One dimension's folder, relative to the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dimension {
    pub(crate) namespace: String,
    pub(crate) path: String,
    /// The folder holding its `region/`, `entities/` and `poi/` ("" for
    /// the overworld of a world before 26.1).
    pub(crate) dir: PathBuf,
}

impl Dimension {
    fn new(namespace: &str, path: &str, dir: impl Into<PathBuf>) -> Dimension {
        Dimension { namespace: namespace.into(), path: path.into(), dir: dir.into() }
    }
    /// Its id, as the game names it (`minecraft:the_nether`).
    pub(crate) fn id(&self) -> String {
        format!("{}:{}", self.namespace, self.path)
    }
    /// One of its folders (`region`, `entities`, `poi`), relative to the world.
    pub(crate) fn folder(&self, what: &str) -> PathBuf {
        self.dir.join(what)
    }
    /// The folders of region files it has in `world`: (folder name, path
    /// relative to the world).
    pub(crate) fn region_folders(&self, world: &Path) -> Vec<(&'static str, PathBuf)> {
        let all = ["region", "entities", "poi"].map(|w| (w, self.folder(w)));
        all.into_iter().filter(|(_, f)| world.join(f).is_dir()).collect()
    }
}

/// The overworld of the 26.1 layout.
const NEW_OVERWORLD: &str = "dimensions/minecraft/overworld";

/// A world's dimensions and players' folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) overworld: Dimension,
    /// The other dimensions with a folder of region files, by id.
    pub(crate) others: Vec<Dimension>,
    /// The folder of the players' files (`playerdata` or `players/data`).
    pub(crate) players: PathBuf,
}

impl Layout {
    /// Every dimension, the overworld first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Dimension> {
        std::iter::once(&self.overworld).chain(&self.others)
    }
    /// The dimension of an id (`minecraft:the_nether`).
    pub(crate) fn dimension(&self, id: &str) -> Option<&Dimension> {
        self.all().find(|d| d.id() == id)
    }
}

/// Whether `dir` holds a folder of region files.
fn has_regions(dir: &Path) -> bool {
    ["region", "entities", "poi"].iter().any(|w| dir.join(w).is_dir())
}

/// A file name as a namespace or path of a dimension id (the game's
/// resource location characters).
fn id_part(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
}

/// The layout of the world at `world`.
pub(crate) fn of(world: &Path) -> Layout {
    let new = world.join(NEW_OVERWORLD).join("region").is_dir();
    let overworld = Dimension::new("minecraft", "overworld", if new { NEW_OVERWORLD } else { "" });
    let mut others = Vec::new();
    for (path, old) in [("the_nether", "DIM-1"), ("the_end", "DIM1")] {
        let dir = Path::new("dimensions/minecraft").join(path);
        if !has_regions(&world.join(&dir)) && has_regions(&world.join(old)) {
            others.push(Dimension::new("minecraft", path, old));
        }
    }
    let mut namespaces: Vec<_> = read_names(&world.join("dimensions"));
    namespaces.sort();
    for ns in namespaces.iter().filter(|n| id_part(n)) {
        let mut paths = read_names(&world.join("dimensions").join(ns));
        paths.sort();
        for path in paths.iter().filter(|p| id_part(p)) {
            let dir = Path::new("dimensions").join(ns).join(path);
            if (ns.as_str(), path.as_str()) != ("minecraft", "overworld") && has_regions(&world.join(&dir)) {
                others.push(Dimension::new(ns, path, dir));
            }
        }
    }
    others.sort_by_key(Dimension::id);
    let players = if world.join("players/data").is_dir() { "players/data" } else { "playerdata" };
    Layout { overworld, others, players: players.into() }
}

/// The names of the directories in `dir` (none if it cannot be read).
fn read_names(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// Whether a directory is a Java world: `level.dat` and the overworld's
/// `region/` (at the root before 26.1, in
/// `dimensions/minecraft/overworld/` from 26.1).
pub(crate) fn is_java_world(dir: &Path) -> bool {
    dir.join("level.dat").is_file() && (dir.join("region").is_dir() || dir.join(NEW_OVERWORLD).join("region").is_dir())
}

/// What a directory lacks to be a Java world, in words (None: nothing).
pub(crate) fn missing(dir: &Path) -> Option<String> {
    let level = dir.join("level.dat").is_file();
    let region = dir.join("region").is_dir() || dir.join(NEW_OVERWORLD).join("region").is_dir();
    let what = match (level, region) {
        (true, true) => return None,
        (false, false) => "no level.dat and no region/",
        (false, true) => "no level.dat",
        (true, false) => "level.dat, but no region/",
    };
    Some(format!("a Minecraft Java world has level.dat and region/ (from 26.1 {NEW_OVERWORLD}/region/); here: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(dirs: &[&str]) -> tempfile::TempDir {
        let w = tempfile::tempdir().unwrap();
        std::fs::write(w.path().join("level.dat"), b"").unwrap();
        for d in dirs {
            std::fs::create_dir_all(w.path().join(d)).unwrap();
        }
        w
    }

    #[test]
    fn both_layouts_and_every_dimension() {
        let old =
            world(&["region", "DIM-1/region", "DIM1/entities", "DIM1/data", "dimensions/mymod/moon/poi", "playerdata"]);
        let l = of(old.path());
        assert_eq!(l.overworld.dir, PathBuf::new());
        let ids: Vec<(String, PathBuf)> = l.others.iter().map(|d| (d.id(), d.dir.clone())).collect();
        assert_eq!(
            ids,
            [
                ("minecraft:the_end".into(), "DIM1".into()),
                ("minecraft:the_nether".into(), "DIM-1".into()),
                ("mymod:moon".into(), "dimensions/mymod/moon".into())
            ]
        );
        assert_eq!(l.players, PathBuf::from("playerdata"));
        assert!(is_java_world(old.path()));
        let new = world(&[
            "dimensions/minecraft/overworld/region",
            "dimensions/minecraft/the_nether/region",
            "dimensions/minecraft/the_end/data",
            "players/data",
        ]);
        let l = of(new.path());
        assert_eq!(l.overworld.dir, PathBuf::from(NEW_OVERWORLD));
        assert_eq!(l.others.iter().map(Dimension::id).collect::<Vec<_>>(), ["minecraft:the_nether"]);
        assert_eq!(l.players, PathBuf::from("players/data"));
        assert!(is_java_world(new.path()));
        assert_eq!(missing(new.path()), None);
        let bare = world(&[]);
        assert!(!is_java_world(bare.path()));
        assert!(missing(bare.path()).unwrap().contains("here: level.dat, but no region/"));
    }
}
