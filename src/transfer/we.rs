//! A box of the world as a WorldEdit file, and a WorldEdit file as node
//! writes, the way `worldedit.serialize` and `worldedit.deserialize` do
//! them. Pure: blocks come from a closure.
//!
//! Export (`worldedit.serialize`): every node that is not `air` or
//! `ignore`, x outermost, then y, then z, at its offset from the box's low
//! corner; param1 and param2 when not 0; the metadata of nodes that have
//! some, as `to_table()` gives it (fields, private ones included, and
//! inventory lists as item strings; list widths are lost, as in
//! WorldEdit).
//!
//! Import (`worldedit.deserialize`): each node set as `minetest.add_node`
//! sets it (its old metadata removed), then its metadata from the file.
//! What cannot be done offline: WorldEdit skips nodes whose name the game
//! does not register (here every node is written), and `add_node` runs
//! the node's `on_construct` (a chest without `meta` in the file gets the
//! game's empty inventory in the game, no metadata here).

use crate::transfer::node_box::{NodeBox, block_node};
use crate::transfer::place::NodeWrite;
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::inventory::{Inventory, InventoryList};
use worldfs_codec::luanti::itemstring::ItemStack;
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaVar};
use worldfs_codec::we::codec::{WeFile, WeMeta, WeNode};
use worldfs_store::BlockPos;

/// An exported box and what the caller should say about it.
#[derive(Clone, Debug)]
pub(crate) struct WeCapture {
    pub(crate) file: WeFile,
    pub(crate) metadata_nodes: usize,
    /// Inventory lists whose width (not 0) the format cannot keep.
    pub(crate) widths_lost: usize,
}

/// Metadata of a block as WorldEdit's `to_table` shows it.
pub(crate) fn meta_to_we(e: &MetaEntry) -> Result<(WeMeta, usize), String> {
    let mut m = WeMeta::default();
    for v in &e.vars {
        match m.fields.iter_mut().find(|(k, _)| *k == v.key) {
            Some(slot) => slot.1 = v.value.clone(),
            None => m.fields.push((v.key.clone(), v.value.clone())),
        }
    }
    let inv = Inventory::parse_strict(&e.inventory).map_err(|err| format!("inventory: {err}"))?;
    let mut widths = 0;
    for l in inv.lists {
        widths += (l.width != 0) as usize;
        let items =
            l.slots.iter().map(|s| s.as_ref().map(|i| i.serialize(HighBytes::Raw)).unwrap_or_default()).collect();
        m.inventory.push((l.name, items));
    }
    Ok((m, widths))
}

/// WorldEdit metadata as a block's metadata entry (position 0; the
/// caller places it). Fields are not private; lists have width 0.
pub(crate) fn we_to_meta(m: &WeMeta) -> Result<MetaEntry, String> {
    let mut e = MetaEntry::new(0);
    for (k, v) in &m.fields {
        if k.len() > u16::MAX as usize {
            return Err("a field key is longer than 65535 bytes".into());
        }
        e.vars.push(MetaVar { key: k.clone(), value: v.clone(), private: false });
    }
    let mut inv = Inventory { lists: Vec::new() };
    for (name, items) in &m.inventory {
        let slots =
            items
                .iter()
                .map(|s| {
                    if s.is_empty() {
                        Ok(None)
                    } else {
                        ItemStack::parse_strict(s).map(Some).map_err(|err| err.message)
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
        inv.lists.push(InventoryList { name: name.clone(), width: 0, slots });
    }
    e.inventory = inv.serialize(HighBytes::Raw);
    Ok(e)
}

/// Export `bx` as WorldEdit would.
pub(crate) fn capture(
    bx: &NodeBox,
    fetch: &mut dyn FnMut(BlockPos) -> Result<Option<Block>, String>,
) -> Result<WeCapture, String> {
    let mut nodes: Vec<WeNode> = Vec::new();
    let (mut metadata_nodes, mut widths_lost) = (0, 0);
    for bp in bx.blocks() {
        let Some(block) = fetch(bp)? else { continue };
        let (ox, oy, oz) = bp.origin();
        for p in bx.nodes_in_block(bp) {
            let i = block_node(p[0] - ox, p[1] - oy, p[2] - oz);
            let name = block.name_of(block.param0[i]).unwrap_or(b"unknown");
            if name == b"air" || name == b"ignore" {
                continue;
            }
            let meta = match block.metadata.get(i as u16) {
                Some(e) => {
                    let (m, w) = meta_to_we(e).map_err(|err| format!("node {},{},{}: {err}", p[0], p[1], p[2]))?;
                    widths_lost += w;
                    metadata_nodes += 1;
                    Some(m).filter(|m| !m.is_empty())
                }
                None => None,
            };
            nodes.push(WeNode {
                pos: [p[0] - bx.min[0], p[1] - bx.min[1], p[2] - bx.min[2]],
                name: name.to_vec(),
                param1: block.param1[i],
                param2: block.param2[i],
                meta,
            });
        }
    }
    // WorldEdit's order: x outermost, then y, then z.
    nodes.sort_by_key(|n| (n.pos[0], n.pos[1], n.pos[2]));
    Ok(WeCapture { file: WeFile { version: 5, nodes }, metadata_nodes, widths_lost })
}

/// The node writes of loading `f` with its offsets counted from `at`.
pub(crate) fn writes(f: &WeFile, at: [i32; 3]) -> Result<Vec<NodeWrite>, String> {
    f.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let meta = match &n.meta {
                Some(m) if !m.is_empty() => Some(we_to_meta(m).map_err(|e| format!("node {}: {e}", i + 1))?),
                _ => None,
            };
            Ok(NodeWrite {
                pos: [at[0] + n.pos[0], at[1] + n.pos[1], at[2] + n.pos[2]],
                name: n.name.clone(),
                param1: n.param1,
                param2: n.param2,
                only_into_air: false,
                clear_meta: true,
                meta,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::place::apply_writes;
    use std::collections::BTreeMap;

    #[test]
    fn export_then_import_gives_nodes_and_metadata_back() {
        let mut b = Block::new_air(29);
        let chest = crate::view::parse::id_for(&mut b, b"default:chest").unwrap();
        let i = worldfs_codec::luanti::block::node_index(3, 4, 5);
        b.param0[i] = chest;
        b.param2[i] = 2;
        b.param1[i] = 0;
        let mut e = MetaEntry::new(i as u16);
        e.vars.push(MetaVar { key: b"infotext".to_vec(), value: b"Chest\n\x01".to_vec(), private: false });
        e.inventory = b"List main 2\nWidth 0\nItem default:dirt 5\nEmpty\nEndInventoryList\nEndInventory\n".to_vec();
        b.metadata.entries.push(e.clone());
        b.metadata.version = 2;
        let world: BTreeMap<BlockPos, Block> = [(BlockPos::new(0, 0, 0), b)].into();
        let bx = NodeBox::new([0, 0, 0], [15, 15, 15]).unwrap();
        let c = capture(&bx, &mut |p| Ok(world.get(&p).cloned())).unwrap();
        assert_eq!(c.file.nodes.len(), 1);
        assert_eq!(c.metadata_nodes, 1);
        let bytes = worldfs_codec::we::codec::encode(&c.file);
        let f = worldfs_codec::we::codec::decode(&bytes).unwrap();
        let empty: BTreeMap<BlockPos, Block> = BTreeMap::new();
        let p = apply_writes(writes(&f, [100, 0, 0]).unwrap(), &mut |p| Ok(empty.get(&p).cloned()), 29).unwrap();
        let (_, nb) = &p.blocks[&BlockPos::new(6, 0, 0)];
        let j = worldfs_codec::luanti::block::node_index(3 + 100 - 96, 4, 5);
        assert_eq!(nb.name_of(nb.param0[j]), Some(&b"default:chest"[..]));
        assert_eq!(nb.param2[j], 2);
        let m = nb.metadata.get(j as u16).unwrap();
        assert_eq!(m.vars, e.vars);
        assert_eq!(m.inventory, e.inventory);
    }
}
