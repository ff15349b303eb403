//! `worldfs check WORLD` of a Java world: what the mount reads, as it
//! reads it. `level.dat` and each player's file (`playerdata/` or
//! `players/data/`) decoded; in every dimension (`layout.rs`) every chunk
//! of every region file in `region/` read (its place in the header, its
//! compression, an external `c.X.Z.mcc`), its NBT decoded and its parts
//! checked (`ChunkDoc::problems`: sections, palette indices, light, block
//! entities, heightmaps); 1.17+ `entities/` and 1.14+ `poi/` region files
//! read and decoded. A problem is named by its file, chunk and section; each
//! header entry is checked on its own (one that is wrong hides no other
//! chunk).
//! Region files are checked on all cores, each read once.

use super::chunk::ChunkDoc;
use super::level::{LevelDoc, PlayerDoc};
use super::regions::{ChunkBytes, chunk_from, shared_sectors};
use crate::documents::{Context, Document};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use worldfs_codec::minecraft::{nbt, region};

#[derive(Default, Debug)]
pub(crate) struct Report {
    pub(crate) region_files: u64,
    pub(crate) chunks: u64,
    /// Chunks per DataVersion (0: none stored, before 1.9).
    pub(crate) per_data_version: BTreeMap<i64, u64>,
    pub(crate) sections: u64,
    pub(crate) block_entities: u64,
    /// Entity chunks read in `entities/` (1.17+).
    pub(crate) entity_chunks: u64,
    /// Chunks of points of interest read in `poi/` (1.14+).
    pub(crate) poi_chunks: u64,
    /// Players' files read.
    pub(crate) players: u64,
    /// The dimensions checked: id and folder.
    pub(crate) dimensions: Vec<(String, String)>,
    /// (file relative to the world, chunk `X,Z` or empty for the whole
    /// file, what is wrong).
    pub(crate) corrupt: Vec<(String, String, String)>,
}

impl Report {
    fn merge(&mut self, other: Report) {
        self.region_files += other.region_files;
        self.chunks += other.chunks;
        for (v, n) in other.per_data_version {
            *self.per_data_version.entry(v).or_default() += n;
        }
        self.sections += other.sections;
        self.block_entities += other.block_entities;
        self.entity_chunks += other.entity_chunks;
        self.poi_chunks += other.poi_chunks;
        self.players += other.players;
        self.dimensions.extend(other.dimensions);
        self.corrupt.extend(other.corrupt);
    }

    /// The report for scripts (`worldfs check --json`).
    pub(crate) fn json(&self, world: &Path) -> serde_json::Value {
        let versions: BTreeMap<String, u64> = self.per_data_version.iter().map(|(v, n)| (v.to_string(), *n)).collect();
        let corrupt: Vec<serde_json::Value> = self
            .corrupt
            .iter()
            .map(|(file, chunk, why)| serde_json::json!({"file": file, "chunk": chunk, "reason": why}))
            .collect();
        let dimensions: Vec<serde_json::Value> =
            self.dimensions.iter().map(|(id, dir)| serde_json::json!({"id": id, "folder": dir})).collect();
        serde_json::json!({
            "minecraft_world": world.display().to_string(),
            "region_files": self.region_files,
            "chunks": self.chunks,
            "per_data_version": versions,
            "sections": self.sections,
            "block_entities": self.block_entities,
            "entity_chunks": self.entity_chunks,
            "poi_chunks": self.poi_chunks,
            "players": self.players,
            "dimensions": dimensions,
            "corrupt": corrupt,
        })
    }

    pub(crate) fn print(&self, world: &Path, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "Minecraft Java world: {}", world.display())?;
        for (id, dir) in &self.dimensions {
            writeln!(out, "dimension {id}: {dir}")?;
        }
        writeln!(out, "players: {}", self.players)?;
        writeln!(out, "region files: {}", self.region_files)?;
        writeln!(out, "chunks: {}", self.chunks)?;
        for (v, n) in &self.per_data_version {
            writeln!(out, "  DataVersion {v}: {n}")?;
        }
        writeln!(out, "sections: {}", self.sections)?;
        writeln!(out, "block entities: {}", self.block_entities)?;
        writeln!(out, "entity chunks: {}", self.entity_chunks)?;
        writeln!(out, "poi chunks: {}", self.poi_chunks)?;
        writeln!(out, "corrupt: {}", self.corrupt.len())?;
        for (file, chunk, why) in &self.corrupt {
            match chunk.is_empty() {
                true => writeln!(out, "  {file}: {why}")?,
                false => writeln!(out, "  {file}: chunk {chunk}: {why}")?,
            }
        }
        Ok(())
    }
}

/// What a folder of region files holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holds {
    Chunks,
    /// 1.17+ `entities/`.
    Entities,
    /// 1.14+ `poi/`.
    Poi,
}

/// The region files of `world/folder`, sorted (none if the folder is absent).
fn region_files(world: &Path, folder: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = world.join(folder);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("r.") && n.ends_with(".mca") && region_xz(&n).is_some()
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// Region coordinates of a file name `r.X.Z.mca` (as the mount reads them).
fn region_xz(name: &str) -> Option<(i64, i64)> {
    name.strip_prefix("r.")?.strip_suffix(".mca").and_then(super::regions::region_xz)
}

/// Check the world at `world`. `progress` is called with (region files
/// done, total).
pub(crate) fn check(world: &Path, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<Report, String> {
    if let Some(missing) = super::layout::missing(world) {
        return Err(format!("{}: not a Minecraft Java world: {missing}", world.display()));
    }
    let layout = super::layout::of(world);
    let mut files: Vec<(PathBuf, Holds)> = Vec::new();
    for dim in layout.all() {
        for (what, folder) in dim.region_folders(world) {
            let holds = match what {
                "entities" => Holds::Entities,
                "poi" => Holds::Poi,
                _ => Holds::Chunks,
            };
            files.extend(region_files(world, &folder)?.into_iter().map(|f| (f, holds)));
        }
    }
    let total = files.len() as u64;
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    let parts: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut r = Report::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((file, holds)) = files.get(i) else { break };
                        r.merge(check_region_file(world, file, *holds));
                        progress(i as u64 + 1, total);
                    }
                    r
                })
            })
            .collect();
        // A worker's panic is raised again here, as it would be without threads.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut report = check_files(world, &layout);
    for p in parts {
        report.merge(p);
    }
    report.corrupt.sort();
    Ok(report)
}

/// `level.dat` and the players' files, decoded as the mount decodes them;
/// the dimensions named.
fn check_files(world: &Path, layout: &super::layout::Layout) -> Report {
    let mut r = Report::default();
    for d in layout.all() {
        let dir = if d.dir.as_os_str().is_empty() { ".".to_string() } else { d.dir.display().to_string() };
        r.dimensions.push((d.id(), format!("{dir}/")));
    }
    let level = world.join("level.dat");
    let problem = match std::fs::read(&level) {
        Ok(bytes) => LevelDoc::decode(&bytes, &Context::default()).err().map(|e| e.message),
        Err(e) => Some(e.to_string()),
    };
    r.corrupt.extend(problem.map(|p| ("level.dat".to_string(), String::new(), p)));
    let dir = world.join(&layout.players);
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    for name in names {
        let Some(uuid) = name.strip_suffix(".dat").filter(|n| super::player_file(&dir, n).is_some()) else {
            continue;
        };
        let shown = layout.players.join(&name).display().to_string();
        r.players += 1;
        let problem = match std::fs::read(dir.join(&name)) {
            Ok(bytes) => PlayerDoc::decode(&bytes, &Context::default()).err().map(|e| e.message),
            Err(e) => Some(e.to_string()),
        };
        r.corrupt.extend(problem.map(|p| (shown, String::new(), format!("player {uuid}: {p}"))));
    }
    r
}

/// Check one region file.
fn check_region_file(world: &Path, path: &Path, holds: Holds) -> Report {
    let mut r = Report { region_files: 1, ..Report::default() };
    let shown = path.strip_prefix(world).unwrap_or(path).display().to_string();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let Some((rx, rz)) = region_xz(&name) else {
        r.corrupt.push((shown, String::new(), "not named r.X.Z.mca".into()));
        return r;
    };
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) => {
            r.corrupt.push((shown, String::new(), e.to_string()));
            return r;
        }
    };
    if !file.is_empty() && file.len() < 2 * region::SECTOR {
        let why = format!(
            "{} bytes: shorter than its 8192-byte header (each chunk listed in what is left is named below; those \
             listed in the part cut off are lost)",
            file.len()
        );
        r.corrupt.push((shown.clone(), String::new(), why));
    }
    // Each entry on its own: one that is wrong hides no other chunk.
    for at in region::located(&file, file.len()) {
        let (x, z) = (rx * 32 + (at.index % 32) as i64, rz * 32 + (at.index / 32) as i64);
        let problems = match chunk_from(path, &at, at.bytes(&file), (x, z)) {
            ChunkBytes::Nbt(nbt) => {
                let mut problems = match holds {
                    Holds::Entities => check_entity_chunk(&nbt, &mut r),
                    Holds::Poi => check_poi_chunk(&nbt, &mut r),
                    _ => check_chunk(&nbt, (x, z), &mut r),
                };
                if !at.shares_with.is_empty() {
                    problems.insert(
                        0,
                        format!("{}, whose entry is wrong (the data is this chunk's own)", shared_sectors(&at, (x, z))),
                    );
                }
                problems
            }
            ChunkBytes::Bad(why) => vec![why],
        };
        r.corrupt.extend(problems.into_iter().map(|p| (shown.clone(), format!("{x},{z}"), p)));
    }
    r
}

/// Decode a chunk and count its parts; its problems.
fn check_chunk(bytes: &[u8], (x, z): (i64, i64), r: &mut Report) -> Vec<String> {
    let doc = match ChunkDoc::decode(bytes, &Context::default()) {
        Ok(d) => d,
        Err(e) => return vec![e.message],
    };
    r.chunks += 1;
    *r.per_data_version.entry(doc.data_version()).or_default() += 1;
    r.sections += doc.section_count() as u64;
    r.block_entities += doc.block_entity_count() as u64;
    let mut problems = doc.problems();
    if let Some((px, pz)) = doc.stored_pos().filter(|p| *p != (x, z)) {
        problems.push(format!("its NBT says it is chunk {px},{pz}"));
    }
    problems
}

/// Decode a chunk of points of interest (1.14+ `poi/`) as `poi/` shows it.
fn check_poi_chunk(bytes: &[u8], r: &mut Report) -> Vec<String> {
    let doc = match super::poi::PoiChunkDoc::decode(bytes, &Context::default()) {
        Ok(d) => d,
        Err(e) => return vec![e.message],
    };
    r.poi_chunks += 1;
    doc.render("records").err().map(|e| e.message).into_iter().collect()
}

/// Decode an entity chunk (1.17+ `entities/`): NBT holding an `Entities` list.
fn check_entity_chunk(bytes: &[u8], r: &mut Report) -> Vec<String> {
    match nbt::decode(bytes) {
        Ok((_, root)) if root.list("Entities").is_some() => {
            r.entity_chunks += 1;
            Vec::new()
        }
        Ok(_) => vec!["an entity chunk without an Entities list".into()],
        Err(e) => vec![e],
    }
}
