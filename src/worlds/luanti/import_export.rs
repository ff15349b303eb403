//! Moving builds between a world and files: a box of the world exported as
//! a schematic (`.mts`) or a WorldEdit file (`.we`), and such a file
//! imported into the world (`worldfs export`, `worldfs import`).
//!
//! The pure parts are in `crate::transfer`: the box of nodes, world ->
//! schematic, schematic or node list -> edited blocks, rotation. This file
//! reads and writes the store: an import is one transaction with a journal
//! note, so `worldfs undo` takes it back.

use crate::documents::mts::Schematic;
use crate::transfer::node_box::NodeBox;
use crate::transfer::{capture, place, rotate};
use crate::worlds::luanti::limits;
use std::collections::HashMap;
use std::path::Path;
use worldfs_codec::luanti::Block;
use worldfs_store::{BlockPos, Change, MapStore, Note, parse_triple};

/// "X,Y,Z" as node coordinates.
pub(crate) fn parse_pos(s: &str) -> Result<[i32; 3], String> {
    parse_triple::<i32>(s)
        .map(|(x, y, z)| [x, y, z])
        .ok_or_else(|| format!("'{s}' is not a node position X,Y,Z (whole numbers, no spaces)"))
}

/// The kinds of file export and import handle, by file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Mts,
    We,
}

impl FileKind {
    pub(crate) fn of(path: &Path) -> Result<FileKind, String> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("mts") => Ok(FileKind::Mts),
            Some("we") | Some("wem") => Ok(FileKind::We),
            _ => Err(format!("{}: the file name must end in .mts (schematic) or .we (WorldEdit)", path.display())),
        }
    }
}

/// Decoded blocks read through a store, each once, with the bytes they
/// were read from (an import expects them unchanged when it commits).
struct Reader<'a> {
    store: &'a dyn MapStore,
    blobs: HashMap<BlockPos, Option<Vec<u8>>>,
}

impl Reader<'_> {
    fn fetch(&mut self, p: BlockPos) -> Result<Option<Block>, String> {
        let blob = match self.blobs.get(&p) {
            Some(b) => b.clone(),
            None => {
                let b = self.store.get(p).map_err(|e| format!("block {p}: {e}"))?;
                self.blobs.insert(p, b.clone());
                b
            }
        };
        match blob {
            None => Ok(None),
            Some(b) => Block::decode(&b).map(Some).map_err(|e| format!("block {p} cannot be decoded: {e}")),
        }
    }
}

/// The version new blocks get: the newest the world uses among its first
/// blocks (as the mount does), 29 for an empty world.
fn new_block_version(store: &dyn MapStore) -> u8 {
    let page = store.scan_after(None, 64).unwrap_or_default();
    let newest =
        page.iter().filter_map(|(_, b)| b.first().copied()).max().unwrap_or(worldfs_codec::luanti::block::MAX_VERSION);
    newest.clamp(25, worldfs_codec::luanti::block::MAX_VERSION)
}

/// The world's mapchunk size in blocks (`chunksize` in map_meta.txt, 5 by
/// default).
fn chunksize(w: &worldfs_store::world::World) -> i16 {
    std::fs::read_to_string(w.dir.join("map_meta.txt"))
        .ok()
        .and_then(|t| {
            worldfs_store::world::parse_settings(&t).into_iter().rev().find(|(k, _)| k == "chunksize").map(|(_, v)| v)
        })
        .and_then(|v| v.trim().parse::<i16>().ok())
        .filter(|&c| (1..=10).contains(&c))
        .unwrap_or(5)
}

/// Write `bytes` to `path` through a temporary file in the same directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.worldfs-{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// `worldfs export`: the box between `a` and `b` (corners included) of
/// `world` written to `out`. Returns lines to print (warnings first).
pub fn export(world: &Path, a: [i32; 3], b: [i32; 3], out: &Path, sparse: bool) -> Result<Vec<String>, String> {
    let kind = FileKind::of(out)?;
    let bx = NodeBox::new(a, b)?;
    let w = worldfs_store::world::World::open(world)?;
    let store = w.open_store(true, false)?;
    let mut reader = Reader { store: store.as_ref(), blobs: HashMap::new() };
    let mut fetch = |p: BlockPos| {
        let r = reader.fetch(p);
        reader.blobs.remove(&p); // export reads each block once: keep no copies
        r
    };
    let mut said = Vec::new();
    let [sx, sy, sz] = bx.size();
    let bytes = match kind {
        FileKind::Mts => {
            let opts = capture::CaptureOptions { sparse_air: sparse, ..Default::default() };
            let c = capture::capture(&bx, &mut fetch, &opts)?;
            if c.metadata_nodes > 0 {
                said.push(format!(
                    "warning: {} node(s) in the box have metadata (inventories, texts), which a schematic cannot \
                     hold; export to a .we file to keep it",
                    c.metadata_nodes
                ));
            }
            if c.missing_blocks > 0 {
                said.push(format!(
                    "note: {} block(s) of the box are not stored; their nodes are air that is never placed",
                    c.missing_blocks
                ));
            }
            if c.unnamed_nodes > 0 {
                said.push(format!(
                    "warning: {} node(s) had a content id without a name: written as unknown",
                    c.unnamed_nodes
                ));
            }
            c.schematic.encode().map_err(|e| e.to_string())?
        }
        FileKind::We => {
            let c = crate::transfer::we::capture(&bx, &mut fetch)?;
            said.push(format!("{} node(s) that are not air, {} with metadata", c.file.nodes.len(), c.metadata_nodes));
            if c.widths_lost > 0 {
                said.push(format!(
                    "note: {} inventory list(s) have a width, which a .we file cannot keep (they load with width 0)",
                    c.widths_lost
                ));
            }
            worldfs_codec::we::codec::encode(&c.file)
        }
    };
    write_atomically(out, &bytes)?;
    said.push(format!(
        "{}: {sx} x {sy} x {sz} nodes from {},{},{} to {},{},{} ({} bytes)",
        out.display(),
        bx.min[0],
        bx.min[1],
        bx.min[2],
        bx.max[0],
        bx.max[1],
        bx.max[2],
        bytes.len()
    ));
    Ok(said)
}

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Degrees: 0, 90, 180 or 270 (schematics only).
    pub rotate: i64,
    /// Replace whatever is in the world (schematics only; a .we file
    /// always replaces).
    pub force: bool,
    /// A node-definition dump (`<name> <paramtype2>` lines) to turn param2.
    pub nodedefs: Option<rotate::NodeDefs>,
}

/// `worldfs import`: `file` placed with its minimum corner at `at`, in one
/// journaled transaction. Refused while another process has the map open.
pub fn import(world: &Path, file: &Path, at: [i32; 3], opts: &ImportOptions) -> Result<Vec<String>, String> {
    let kind = FileKind::of(file)?;
    let rotation = rotate::Rotation::from_degrees(opts.rotate)?;
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let w = worldfs_store::world::World::open(world)?;
    let store = import_store(&w)?;
    let version = new_block_version(store.as_ref());
    let mut reader = Reader { store: store.as_ref(), blobs: HashMap::new() };
    let mut said = Vec::new();
    let placed_file = PlacedFile { file, kind, bytes: &bytes, at, rotation };
    let mut placement = place_file(&placed_file, opts, &mut reader, version, &mut said)?;
    let made = mark_generated(&mut placement)?;
    add_mapchunk_filler(&mut placement, &made, chunksize(&w), &mut reader, version, &mut said)?;
    let (changes, created) = block_changes(&placement, &reader)?;
    if placement.metadata_kept > 0 {
        said.push(format!(
            "note: {} replaced node(s) kept their metadata, as place_schematic leaves it",
            placement.metadata_kept
        ));
    }
    if placement.blocked > 0 {
        said.push(format!("{} node(s) not placed: the world had something there (use --force)", placement.blocked));
    }
    if changes.is_empty() {
        said.push("nothing changed".into());
        return Ok(said);
    }
    let what = format!(
        "import {} at {},{},{}{}{}",
        file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        at[0],
        at[1],
        at[2],
        if rotation.0 != 0 { format!(" rotate {}", rotation.degrees()) } else { String::new() },
        if opts.force { " force" } else { "" }
    );
    store.apply(&changes, &Note::new(what.clone())).map_err(|e| e.to_string())?;
    said.push(format!(
        "{what}: {} node(s) in {} block(s) ({created} new); `worldfs undo {} --last 1` takes it back",
        placement.placed,
        placement.blocks.len(),
        world.display()
    ));
    Ok(said)
}

/// The map an import writes: through the server when it runs the
/// worldfs_live mod (in batches, as a live world-wide rename; the mod
/// checks every node it replaces), else the database, refused while
/// another process has it open.
fn import_store(w: &worldfs_store::world::World) -> Result<Box<dyn worldfs_store::MapStore>, String> {
    use worldfs_store::live::{ServerState, check_spool, server_state};
    if let ServerState::Running { .. } = server_state(&w.dir) {
        check_spool(&w.dir)?;
        return Ok(Box::new(w.open_live_store(Some(w.journal_path()), true)?));
    }
    let who = worldfs_store::holders::openers_after_daemons_exit(&w.map_path());
    if !who.is_empty() {
        return Err(format!(
            "{} is open in {}; stop the server (or unmount) before importing, or let the server apply it: \
             `worldfs live install {}` and restart the server once",
            w.map_path().display(),
            who.join(", "),
            w.dir.display()
        ));
    }
    w.open_store(false, true)
}

/// A file to import, read, and where and how it goes.
struct PlacedFile<'a> {
    file: &'a Path,
    kind: FileKind,
    bytes: &'a [u8],
    at: [i32; 3],
    rotation: rotate::Rotation,
}

/// The blocks the file's nodes change, read through `reader`; warnings go
/// to `said`.
fn place_file(
    f: &PlacedFile,
    opts: &ImportOptions,
    reader: &mut Reader,
    version: u8,
    said: &mut Vec<String>,
) -> Result<place::Placement, String> {
    let (file, rotation) = (f.file, f.rotation);
    match f.kind {
        FileKind::Mts => {
            let s = Schematic::decode(f.bytes).map_err(|e| format!("{}: {e}", file.display()))?;
            if rotation.0 != 0 && opts.nodedefs.is_none() {
                let turned = s.param2.iter().filter(|&&p| p != 0).count();
                if turned > 0 {
                    said.push(format!(
                        "warning: rotated without --nodedefs: the param2 of {turned} node(s) (facing of stairs, \
                         chests, torches...) was kept as it was"
                    ));
                }
            }
            let p = place::PlaceOptions { rotation, force: opts.force, defs: opts.nodedefs.clone() };
            place::place_schematic(&s, f.at, &p, &mut |p| reader.fetch(p), version)
        }
        FileKind::We => {
            if rotation.0 != 0 || opts.force {
                return Err("--rotate and --force are for schematics; a .we file is placed as WorldEdit does".into());
            }
            let we = worldfs_codec::we::codec::decode(f.bytes).map_err(|e| format!("{}: {e}", file.display()))?;
            let writes = crate::transfer::we::writes(&we, f.at)?;
            place::apply_writes(writes, &mut |p| reader.fetch(p), version)
        }
    }
}

/// Blocks the mapgen has not generated yet (created here, or stored but
/// marked not generated: the border blocks the mapgen leaves full of
/// `ignore`) become generated, their `ignore` air. Refused if a new block
/// is outside the map. Gives those blocks.
fn mark_generated(placement: &mut place::Placement) -> Result<Vec<BlockPos>, String> {
    for (p, (before, _)) in &placement.blocks {
        if before.is_none() {
            limits::check_new_block(*p).map_err(|e| format!("{e}; nothing imported"))?;
        }
    }
    let mut made = Vec::new();
    for (p, (before, after)) in placement.blocks.iter_mut() {
        if before.as_ref().is_none_or(|b| !b.is_generated()) {
            if let Some(id) = after.mapping.iter().find(|m| m.name == b"ignore").map(|m| m.id) {
                let air = crate::view::parse::id_for(after, b"air").map_err(|e| e.message)?;
                after.param0.iter_mut().filter(|c| **c == id).for_each(|c| *c = air);
                crate::view::parse::drop_unused_names(after);
            }
            after.flags &= !worldfs_codec::luanti::block::FLAG_NOT_GENERATED;
            made.push(*p);
        }
    }
    Ok(made)
}

/// The rest of the mapchunks of the `made` blocks is completed with new
/// air blocks, so that the mapgen never runs over the build (see
/// place::complete_mapchunks); a note goes to `said`.
fn add_mapchunk_filler(
    placement: &mut place::Placement,
    made: &[BlockPos],
    cs: i16,
    reader: &mut Reader,
    version: u8,
    said: &mut Vec<String>,
) -> Result<(), String> {
    let filler = place::complete_mapchunks(made, cs, &mut |p| {
        Ok(placement.blocks.contains_key(&p) || reader.fetch(p)?.is_some_and(|b| b.is_generated()))
    })?;
    // A mapchunk at the map's edge reaches past it: the engine never loads
    // those blocks, so they are not made.
    let filler: Vec<BlockPos> = filler.into_iter().filter(|p| limits::block_in_map(*p)).collect();
    for p in &filler {
        let before = reader.fetch(*p)?;
        placement.blocks.insert(*p, (before, place::new_block(version)));
    }
    if !filler.is_empty() {
        let mut chunks: Vec<[i32; 3]> = made.iter().map(|&b| place::mapchunk_of(b, cs)).collect();
        chunks.sort();
        chunks.dedup();
        said.push(format!(
            "note: {} air block(s) added to complete {} mapchunk(s) the world had not generated, so that the \
             mapgen never runs over the build",
            filler.len(),
            chunks.len()
        ));
    }
    Ok(())
}

/// The store changes of a placement: each block encoded (and checked to
/// read back as built), expecting the bytes it was read with. Also how
/// many blocks are new.
fn block_changes(placement: &place::Placement, reader: &Reader) -> Result<(Vec<Change>, usize), String> {
    let mut changes = Vec::new();
    let mut created = 0;
    for (bp, (before, after)) in &placement.blocks {
        let blob = after.encode().map_err(|e| format!("block {bp}: {e}"))?;
        let back = Block::decode(&blob).map_err(|e| format!("block {bp}: re-reading the new block: {e}"))?;
        if back != *after {
            return Err(format!("block {bp}: the new block does not read back as written; nothing imported"));
        }
        created += before.is_none() as usize;
        changes.push(Change::Expect(*bp, reader.blobs.get(bp).cloned().flatten()));
        changes.push(Change::Put(*bp, blob));
    }
    Ok((changes, created))
}
