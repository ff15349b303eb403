//! Writing a build into the world's blocks. Pure: blocks come from a
//! closure, and the result is the set of edited (or new) blocks.
//!
//! [`place_schematic`] follows `minetest.place_schematic`
//! (`Schematic::blitToVManip`), deterministically:
//! * a node or slice is placed when its probability is 1 or more (the
//!   engine draws a random number; builds use 0 and 127); a slice with
//!   probability 0 is skipped and the slices above it move down one, as in
//!   the engine;
//! * a node without force (neither `force` nor its own flag) only replaces
//!   `air` or `ignore` (or a node of a block that is not stored);
//! * a placed node gets param1 0, and with a rotation its position and
//!   param2 turn by the engine's rules (param2 by `paramtype2`, from
//!   [`NodeDefs`]);
//! * the name `ignore` in a schematic is placed as `air` (the engine
//!   renames it when it loads an `.mts`); other names are written as they
//!   are, known to the game or not (the engine would place air for a name
//!   it does not know);
//! * node metadata and timers at replaced nodes are left as they were (the
//!   engine's voxel manipulator does not touch them); [`Placement`] counts
//!   them.
//!
//! Where the engine differs on purpose: it places nothing into blocks that
//! are not stored (its voxel manipulator cannot write them); here such
//! blocks are created (see [`new_block`]).

use super::node_box::{block_node, block_of};
use super::rotate::{NodeDefs, Rotation, rotate_param2};
use std::collections::BTreeMap;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_codec::mts::{FORCE_PLACE, PROB_MASK, Schematic};
use worldfs_store::BlockPos;

/// One node to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeWrite {
    pub(crate) pos: [i32; 3],
    pub(crate) name: Vec<u8>,
    pub(crate) param1: u8,
    pub(crate) param2: u8,
    /// Replace only air or ignore (or nothing stored).
    pub(crate) only_into_air: bool,
    /// Remove the node's metadata first (as `set_node` does).
    pub(crate) clear_meta: bool,
    /// New metadata for the node (its `pos` is set here).
    pub(crate) meta: Option<MetaEntry>,
}

/// The edited blocks of a placement.
#[derive(Debug, Default)]
pub struct Placement {
    /// Every block that changed or was created: (before, after); before
    /// is None for a created block.
    pub blocks: BTreeMap<BlockPos, (Option<Block>, Block)>,
    /// Nodes written.
    pub(crate) placed: usize,
    /// Nodes not written because the world had something there and the
    /// node was not forced.
    pub(crate) blocked: usize,
    /// Written nodes whose old metadata was left in place.
    pub(crate) metadata_kept: usize,
}

/// A block the world does not have yet, as an import creates it: marked
/// generated, all air lit by daylight (param1 15), lighting marked
/// complete, the given block version. With the other blocks of its
/// mapchunk ([`complete_mapchunks`]) the server loads it as it is and never
/// runs the mapgen over it: the build stands in air where the world had
/// not been generated yet (light is fixed by the game when nodes change
/// nearby, or by WorldEdit's `//fixlight`).
pub(crate) fn new_block(version: u8) -> Block {
    Block::new_air(version)
}

/// Write `writes` into the blocks `fetch` gives. `new_version`: the block
/// version of created blocks.
pub(crate) fn apply_writes(
    writes: impl IntoIterator<Item = NodeWrite>,
    fetch: &mut dyn FnMut(BlockPos) -> Result<Option<Block>, String>,
    new_version: u8,
) -> Result<Placement, String> {
    let mut out = Placement::default();
    // Loaded blocks: (as read, as edited); None as read = not stored.
    let mut blocks: BTreeMap<BlockPos, (Option<Block>, Option<Block>)> = BTreeMap::new();
    for w in writes {
        let bp = block_of(w.pos).ok_or_else(|| {
            format!("node {},{},{} is outside the world (blocks -2048..2047)", w.pos[0], w.pos[1], w.pos[2])
        })?;
        let slot = match blocks.entry(bp) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                let b = fetch(bp)?;
                v.insert((b.clone(), b))
            }
        };
        let (ox, oy, oz) = bp.origin();
        let i = block_node(w.pos[0] - ox, w.pos[1] - oy, w.pos[2] - oz);
        if w.only_into_air
            && let Some(b) = &slot.1
        {
            let here = b.name_of(b.param0[i]).unwrap_or(b"");
            if here != b"air" && here != b"ignore" {
                out.blocked += 1;
                continue;
            }
        }
        let b = slot.1.get_or_insert_with(|| new_block(new_version));
        let id = crate::view::parse::id_for(b, &w.name).map_err(|e| format!("block {bp}: {}", e.message))?;
        b.param0[i] = id;
        b.param1[i] = w.param1;
        b.param2[i] = w.param2;
        let p16 = i as u16;
        if w.clear_meta {
            b.metadata.entries.retain(|e| e.pos != p16);
        } else if b.metadata.get(p16).is_some() {
            out.metadata_kept += 1;
        }
        if let Some(mut m) = w.meta {
            m.pos = p16;
            b.metadata.entries.retain(|e| e.pos != p16);
            b.metadata.entries.push(m);
        }
        out.placed += 1;
    }
    for (bp, (before, after)) in blocks {
        let Some(mut after) = after else { continue };
        crate::view::parse::drop_unused_names(&mut after);
        normalize(&mut after);
        if before.as_ref() != Some(&after) {
            out.blocks.insert(bp, (before, after));
        }
    }
    Ok(out)
}

/// What the engine writes for an edited block: versions below 24 become
/// 25, content ids that do not fit one byte widen the ids, the metadata
/// list version follows the block version.
fn normalize(b: &mut Block) {
    if b.version < worldfs_codec::luanti::block::MIN_WRITE_VERSION {
        b.version = 25;
    }
    if !b.fits_content_width() {
        b.content_width = 2;
    }
    b.metadata.version = b.metadata.version_for(b.version);
}

/// How to place a schematic.
#[derive(Clone, Debug)]
pub struct PlaceOptions {
    pub rotation: Rotation,
    /// Replace whatever is in the world (place_schematic's
    /// `force_placement`); otherwise only nodes with their own force flag
    /// replace non-air nodes.
    pub force: bool,
    /// paramtype2 of the game's nodes, to turn param2. Without it a
    /// rotation keeps every param2 as it is.
    pub defs: Option<NodeDefs>,
}

/// The node writes of placing `s` with its minimum corner at `origin`.
pub(crate) fn schematic_writes(s: &Schematic, origin: [i32; 3], opts: &PlaceOptions) -> Vec<NodeWrite> {
    let size = s.size.map(|v| v as usize);
    let [tx, sy, tz] = opts.rotation.turned_size(size);
    let mut out = Vec::new();
    let mut y_out = origin[1];
    for y in 0..sy {
        if s.slices[y] == 0 {
            continue;
        }
        for z in 0..tz {
            for x in 0..tx {
                let (sx_, sz_) = opts.rotation.source(size, x, z);
                let i = s.index(sx_, y, sz_);
                let p1 = s.param1[i];
                if p1 & PROB_MASK == 0 {
                    continue;
                }
                let name = match s.name_at(i) {
                    b"ignore" => b"air".as_slice(),
                    n => n,
                };
                let kind = opts.defs.as_ref().map(|d| d.get(name)).unwrap_or(super::rotate::ParamType2::Other);
                out.push(NodeWrite {
                    pos: [origin[0] + x as i32, y_out, origin[2] + z as i32],
                    name: name.to_vec(),
                    param1: 0,
                    param2: rotate_param2(s.param2[i], kind, opts.rotation),
                    only_into_air: !opts.force && p1 & FORCE_PLACE == 0,
                    clear_meta: false,
                    meta: None,
                });
            }
        }
        y_out += 1;
    }
    out
}

/// Place `s` at `origin` into the blocks `fetch` gives.
pub fn place_schematic(
    s: &Schematic,
    origin: [i32; 3],
    opts: &PlaceOptions,
    fetch: &mut dyn FnMut(BlockPos) -> Result<Option<Block>, String>,
    new_version: u8,
) -> Result<Placement, String> {
    apply_writes(schematic_writes(s, origin, opts), fetch, new_version)
}

/// The mapchunk (the unit the mapgen generates: `chunksize` blocks along
/// each axis, 5 by default, offset by `-chunksize / 2` blocks as the
/// engine's `getContainingChunk`) holding block `b`: its low corner.
pub(crate) fn mapchunk_of(b: BlockPos, chunksize: i16) -> [i32; 3] {
    let cs = chunksize.max(1) as i32;
    let off = -(cs / 2);
    [b.x, b.y, b.z].map(|v| (v as i32 - off).div_euclid(cs) * cs + off)
}

/// The blocks an import must also create so that the mapgen never runs
/// over the new blocks `created`: the engine generates a whole mapchunk
/// when any of its blocks is missing (or not generated), and that would
/// run biomes, ores, caves and decorations over the build's nodes too. A
/// chunk whose blocks all exist and are generated is only loaded. So every
/// other missing block of each chunk that holds a created block is
/// created as well (air). `exists` says whether the world stores a block.
pub(crate) fn complete_mapchunks(
    created: &[BlockPos],
    chunksize: i16,
    exists: &mut dyn FnMut(BlockPos) -> Result<bool, String>,
) -> Result<Vec<BlockPos>, String> {
    let cs = chunksize.max(1) as i32;
    let mut chunks: Vec<[i32; 3]> = created.iter().map(|&b| mapchunk_of(b, chunksize)).collect();
    chunks.sort();
    chunks.dedup();
    let mut out = Vec::new();
    for c in chunks {
        for z in c[2]..c[2] + cs {
            for y in c[1]..c[1] + cs {
                for x in c[0]..c[0] + cs {
                    let b = BlockPos::new(x as i16, y as i16, z as i16);
                    if !b.in_range() || created.contains(&b) {
                        continue;
                    }
                    if !exists(b)? {
                        out.push(b);
                    }
                }
            }
        }
    }
    Ok(out)
}
