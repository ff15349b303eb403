//! A box of the world as a schematic, the way `minetest.create_schematic`
//! makes one (`Schematic::getSchematicFromMap`): nodes in x, y, z order,
//! every probability 127 (light is dropped), every slice 127, names in
//! order of first appearance. One difference, on purpose: where the engine
//! would write `ignore` (a block that is not stored, or nodes the mapgen
//! never filled) with probability 127, which a reload turns into "always
//! place air", the schematic gets `air` with probability 0: placing it
//! leaves the world as it is there. Pure: blocks come from a closure.

use super::node_box::{NodeBox, block_node};
use std::collections::HashMap;
use worldfs_codec::luanti::Block;
use worldfs_codec::mts::{PROB_ALWAYS, Schematic};
use worldfs_store::BlockPos;

/// Changes to the plain capture, as `create_schematic`'s lists make them.
#[derive(Clone, Debug, Default)]
pub struct CaptureOptions {
    /// Store air with probability 0 ("leave as is"), as decorations are
    /// made; otherwise air is placed (probability 127), carving the space.
    pub(crate) sparse_air: bool,
    /// (world position, raw param1 0..255): probability and force bit.
    /// Probability 0 also turns the node into air, as the engine does.
    pub(crate) probabilities: Vec<([i32; 3], u8)>,
    /// (slice index from the bottom, probability).
    pub(crate) slices: Vec<(usize, u8)>,
}

/// A captured box and what the caller should say about it.
#[derive(Clone, Debug)]
pub struct Capture {
    pub schematic: Schematic,
    /// Nodes in the box that have metadata (inventories, texts): a
    /// schematic cannot hold it.
    pub(crate) metadata_nodes: usize,
    /// Blocks of the box that are not stored (their nodes became air
    /// with probability 0).
    pub(crate) missing_blocks: usize,
    /// Nodes whose content id has no name in their block (exported as
    /// `unknown`).
    pub(crate) unnamed_nodes: usize,
}

/// Capture `bx`, reading each block it touches once through `fetch`.
pub fn capture(
    bx: &NodeBox,
    fetch: &mut dyn FnMut(BlockPos) -> Result<Option<Block>, String>,
    opts: &CaptureOptions,
) -> Result<Capture, String> {
    let size = bx.size();
    let mut s = Schematic::new_air(size.map(|v| v as u16))?;
    s.names.clear();
    let mut ids: HashMap<Vec<u8>, u16> = HashMap::new();
    let (mut metadata_nodes, mut missing_blocks, mut unnamed_nodes) = (0, 0, 0);
    // Ids are given in node order below, so fill a temporary name per node
    // first: blocks are read one at a time, but names must be numbered in
    // x, y, z order of the whole box.
    let mut node_names: Vec<u32> = vec![0; s.volume()];
    let mut table: Vec<Vec<u8>> = Vec::new();
    let mut table_ids: HashMap<Vec<u8>, u32> = HashMap::new();
    const LEAVE: u32 = u32::MAX;
    for bp in bx.blocks() {
        let block = fetch(bp)?;
        let (ox, oy, oz) = bp.origin();
        let Some(block) = block else {
            missing_blocks += 1;
            for p in bx.nodes_in_block(bp) {
                node_names[bx.index(p)] = LEAVE;
            }
            continue;
        };
        let mut local: HashMap<u16, u32> = HashMap::new();
        for p in bx.nodes_in_block(bp) {
            let i = block_node(p[0] - ox, p[1] - oy, p[2] - oz);
            let id = block.param0[i];
            let t = *local.entry(id).or_insert_with(|| {
                let name = match block.name_of(id) {
                    Some(n) => n.to_vec(),
                    None => b"unknown".to_vec(),
                };
                if name == b"ignore" {
                    return LEAVE;
                }
                *table_ids.entry(name.clone()).or_insert_with(|| {
                    table.push(name);
                    (table.len() - 1) as u32
                })
            });
            if block.name_of(id).is_none() {
                unnamed_nodes += 1;
            }
            node_names[bx.index(p)] = t;
            s.param2[bx.index(p)] = block.param2[i];
        }
        metadata_nodes += block
            .metadata
            .entries
            .iter()
            .filter(|e| {
                let (x, y, z) = worldfs_codec::luanti::block::index_xyz(e.pos as usize);
                bx.contains([ox + x as i32, oy + y as i32, oz + z as i32])
            })
            .count();
    }
    for (i, t) in node_names.iter().enumerate() {
        let (name, p1): (&[u8], u8) = match *t {
            LEAVE => (b"air", 0),
            t => {
                let n = &table[t as usize];
                (n, if opts.sparse_air && n == b"air" { 0 } else { PROB_ALWAYS })
            }
        };
        let next = ids.len() as u16;
        let id = *ids.entry(name.to_vec()).or_insert_with(|| {
            s.names.push(name.to_vec());
            next
        });
        s.param0[i] = id;
        s.param1[i] = p1;
        if *t == LEAVE {
            s.param2[i] = 0;
        }
    }
    for &(p, prob) in &opts.probabilities {
        if bx.contains(p) {
            let i = bx.index(p);
            s.param1[i] = prob;
            if prob == 0 {
                s.param0[i] = s.id_for(b"air")?;
            }
        }
    }
    for &(y, prob) in &opts.slices {
        if let Some(v) = s.slices.get_mut(y) {
            *v = prob;
        }
    }
    if !opts.probabilities.is_empty() {
        s.condense();
    }
    Ok(Capture { schematic: s, metadata_nodes, missing_blocks, unnamed_nodes })
}

/// One block as a schematic (16 x 16 x 16, the same node order), encoded:
/// what `schematic.mts` in a block directory holds. Probabilities 127;
/// `ignore` nodes become air with probability 0.
#[allow(clippy::expect_used, reason = "one whole block is a valid box, fits a schematic and encodes")]
pub fn block_to_mts(block: &Block) -> Vec<u8> {
    let bx = NodeBox::new([0, 0, 0], [15, 15, 15]).expect("a block is a valid box");
    let mut fetch = |_| Ok(Some(block.clone()));
    let c = capture(&bx, &mut fetch, &CaptureOptions::default()).expect("one block always fits");
    c.schematic.encode().expect("a captured block encodes")
}
