//! What changed between two snapshots, or between a snapshot and the world
//! now (`worldfs diff`, `snapshots/NAME/changed/`): the blocks whose stored
//! bytes differ are found from the indexes (blob hashes), and only those
//! are decoded. A block counts as changed when a node's name or param2,
//! or a node's metadata (fields, inventory) differs; blocks whose bytes
//! differ only in light, timestamps, objects or timers (the server saving
//! what it loaded) are counted apart. Changed blocks that touch, edges and
//! corners included, form one area, reported with the bounding box of its
//! changed nodes, the change in count of each node name, and each changed
//! inventory.

use std::collections::{BTreeMap, HashMap};
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::index_xyz;
use worldfs_codec::luanti::nodemeta::MetaEntry;
use worldfs_store::snapshots::{SnapshotInfo, Snapshots, hash_of};
use worldfs_store::{BlockPos, MapStore};

/// A block whose stored bytes differ (None: absent on that side).
pub(crate) struct BlockChange {
    pub(crate) pos: BlockPos,
    pub(crate) before: Option<Vec<u8>>,
    pub(crate) after: Option<Vec<u8>>,
}

/// A box of nodes, both corners included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeBox {
    pub min: [i32; 3],
    pub(crate) max: [i32; 3],
}

impl NodeBox {
    pub(crate) fn new(a: [i32; 3], b: [i32; 3]) -> NodeBox {
        NodeBox { min: [0, 1, 2].map(|i| a[i].min(b[i])), max: [0, 1, 2].map(|i| a[i].max(b[i])) }
    }

    pub(crate) fn contains(&self, p: [i32; 3]) -> bool {
        (0..3).all(|i| self.min[i] <= p[i] && p[i] <= self.max[i])
    }

    /// Whether any node of block `b` is inside.
    pub(crate) fn touches(&self, b: BlockPos) -> bool {
        let (x, y, z) = b.origin();
        let o = [x, y, z];
        (0..3).all(|i| o[i] <= self.max[i] && self.min[i] <= o[i] + 15)
    }

    /// Whether every node of block `b` is inside.
    pub(crate) fn covers(&self, b: BlockPos) -> bool {
        let (x, y, z) = b.origin();
        let o = [x, y, z];
        (0..3).all(|i| self.min[i] <= o[i] && o[i] + 15 <= self.max[i])
    }

    /// The blocks it touches.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = BlockPos> + use<> {
        let lo = BlockPos::of_node(self.min[0], self.min[1], self.min[2]);
        let hi = BlockPos::of_node(self.max[0], self.max[1], self.max[2]);
        let (lo, hi) = match (lo, hi) {
            (Some(l), Some(h)) => (l, h),
            _ => (BlockPos::new(1, 1, 1), BlockPos::new(0, 0, 0)),
        };
        (lo.x..=hi.x)
            .flat_map(move |x| (lo.y..=hi.y).flat_map(move |y| (lo.z..=hi.z).map(move |z| BlockPos::new(x, y, z))))
    }

    pub(crate) fn block_count(&self) -> u64 {
        let n = |i: usize| (self.max[i].div_euclid(16) - self.min[i].div_euclid(16) + 1) as u64;
        n(0) * n(1) * n(2)
    }
}

/// The blocks that differ from snapshot `a` to snapshot `b` (either may
/// be the older).
pub(crate) fn between(store: &Snapshots, a: &SnapshotInfo, b: &SnapshotInfo) -> Result<Vec<BlockChange>, String> {
    let blob = |id: Option<i64>| id.map(|id| store.blob(id)).transpose();
    store
        .changed_blocks(a.id, b.id)?
        .into_iter()
        .map(|c| {
            let (then, now) = if a.id <= b.id { (c.before, c.after) } else { (c.after, c.before) };
            Ok(BlockChange { pos: c.pos, before: blob(then)?, after: blob(now)? })
        })
        .collect()
}

/// The blocks that differ between snapshot `a` and `map` now (read as
/// one instant, as a snapshot reads it; `scratch` as for that read).
pub(crate) fn since(
    store: &Snapshots,
    a: &SnapshotInfo,
    map: &dyn MapStore,
    scratch: &std::path::Path,
) -> Result<Vec<BlockChange>, String> {
    let mut then: HashMap<BlockPos, i64> = HashMap::new();
    let mut hashes = HashMap::new();
    for (pos, id, hash) in store.block_hashes(a.id)? {
        then.insert(pos, id);
        hashes.insert(id, hash);
    }
    let mut out = Vec::new();
    let mut failed = None;
    map.read_consistent(scratch, &mut |pos, blob| {
        let before = match then.remove(&pos) {
            Some(id) if hashes.get(&id) == Some(&hash_of(blob)) => return Ok(()),
            Some(id) => match store.blob(id) {
                Ok(b) => Some(b),
                Err(e) => {
                    failed = Some(e);
                    return Err(worldfs_store::StoreError::Backend("the snapshot store failed".into()));
                }
            },
            None => None,
        };
        out.push(BlockChange { pos, before, after: Some(blob.to_vec()) });
        Ok(())
    })
    .map_err(|e| failed.take().unwrap_or_else(|| e.to_string()))?;
    for (pos, id) in then {
        out.push(BlockChange { pos, before: Some(store.blob(id)?), after: None });
    }
    out.sort_by_key(|c| c.pos);
    Ok(out)
}

/// How an inventory's items changed: item name -> count now minus then.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct InventoryChange {
    pub(crate) node: [i32; 3],
    /// The node holding it ("then, now NAME" when it was replaced).
    pub(crate) node_name: String,
    pub(crate) items: BTreeMap<String, i64>,
}

/// One area of changed blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct AreaDiff {
    /// The box of its changed nodes.
    pub(crate) min: [i32; 3],
    pub(crate) max: [i32; 3],
    pub(crate) blocks: Vec<String>,
    pub(crate) nodes_changed: u64,
    /// Node name -> count now minus then (names whose count changed).
    pub(crate) counts: BTreeMap<String, i64>,
    pub(crate) inventories: Vec<InventoryChange>,
    pub(crate) blocks_added: u32,
    pub(crate) blocks_removed: u32,
}

/// Everything that changed.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct Diff {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) areas: Vec<AreaDiff>,
    /// Blocks whose bytes differ without a change of their nodes or
    /// metadata (light, timestamps, objects, timers).
    pub(crate) resaved: u64,
    /// Blocks that do not decode on one side (position and why).
    pub(crate) undecodable: Vec<String>,
}

/// Items of an inventory by name (tolerant: lines that are not items are
/// passed over).
fn item_counts(inv: &[u8]) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for line in inv.split(|&c| c == b'\n') {
        if let Some(rest) = line.strip_prefix(b"Item ")
            && let Ok(item) = worldfs_codec::luanti::itemstring::ItemStack::parse_strict(rest)
        {
            *out.entry(String::from_utf8_lossy(&item.name).into_owned()).or_insert(0) += i64::from(item.count.max(1));
        }
    }
    out
}

/// The difference `now - then` of two counts, zeros left out.
fn net(then: &BTreeMap<String, i64>, now: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    let mut out = now.clone();
    for (k, v) in then {
        *out.entry(k.clone()).or_insert(0) -= v;
    }
    out.retain(|_, v| *v != 0);
    out
}

/// The changes inside one block (within `area` when given).
#[derive(Default)]
struct BlockDiff {
    nodes: Vec<[i32; 3]>,
    counts: BTreeMap<String, i64>,
    inventories: Vec<InventoryChange>,
}

fn name_at(b: &Block, i: usize) -> String {
    b.param0.get(i).and_then(|&id| b.name_of(id)).map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default()
}

/// Whether two metadata entries hold the same: the same fields (in any
/// order: the engine writes them in the order of its hash map) and the
/// same inventory.
fn same_meta(a: &MetaEntry, b: &MetaEntry) -> bool {
    fn sorted(e: &MetaEntry) -> Vec<(&[u8], &[u8], bool)> {
        let mut v: Vec<_> = e.vars.iter().map(|v| (v.key.as_slice(), v.value.as_slice(), v.private)).collect();
        v.sort();
        v
    }
    a.inventory == b.inventory && sorted(a) == sorted(b)
}

/// A block's metadata by position (none for an absent block).
fn metas(b: Option<&Block>) -> BTreeMap<u16, &MetaEntry> {
    b.map(|b| b.metadata.entries.iter().map(|e| (e.pos, e)).collect()).unwrap_or_default()
}

/// What changed in one block's nodes and metadata.
fn block_diff(pos: BlockPos, then: Option<&Block>, now: Option<&Block>, area: Option<NodeBox>) -> BlockDiff {
    let (ox, oy, oz) = pos.origin();
    let mut d = BlockDiff::default();
    let node = |i: usize| {
        let (x, y, z) = index_xyz(i);
        [ox + x as i32, oy + y as i32, oz + z as i32]
    };
    for i in 0..4096 {
        let p = node(i);
        if area.is_some_and(|a| !a.contains(p)) {
            continue;
        }
        let a = then.map(|b| (name_at(b, i), b.param2.get(i).copied()));
        let b = now.map(|b| (name_at(b, i), b.param2.get(i).copied()));
        if a == b {
            continue;
        }
        d.nodes.push(p);
        if a.as_ref().map(|x| &x.0) != b.as_ref().map(|x| &x.0) {
            if let Some((n, _)) = a {
                *d.counts.entry(n).or_insert(0) -= 1;
            }
            if let Some((n, _)) = b {
                *d.counts.entry(n).or_insert(0) += 1;
            }
        }
    }
    let (ma, mb) = (metas(then), metas(now));
    let keys: std::collections::BTreeSet<u16> = ma.keys().chain(mb.keys()).copied().collect();
    for k in keys {
        let p = node(k as usize);
        let same = match (ma.get(&k), mb.get(&k)) {
            (Some(a), Some(b)) => same_meta(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        if area.is_some_and(|a| !a.contains(p)) || same {
            continue;
        }
        if !d.nodes.contains(&p) {
            d.nodes.push(p);
        }
        let inv = |m: &BTreeMap<u16, &MetaEntry>| m.get(&k).map(|e| item_counts(&e.inventory)).unwrap_or_default();
        let items = net(&inv(&ma), &inv(&mb));
        if !items.is_empty() {
            let (was, is) = (then.map(|b| name_at(b, k as usize)), now.map(|b| name_at(b, k as usize)));
            let node_name = match (was, is) {
                (Some(a), Some(b)) if a != b => format!("{a}, now {b}"),
                (_, Some(n)) | (Some(n), None) => n,
                (None, None) => String::new(),
            };
            d.inventories.push(InventoryChange { node: p, node_name, items });
        }
    }
    d.counts.retain(|_, v| *v != 0);
    d
}

/// Blocks that touch (faces, edges or corners) in one area each.
fn group(blocks: &BTreeMap<BlockPos, BlockDiff>) -> Vec<Vec<BlockPos>> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for &start in blocks.keys() {
        if !seen.insert(start) {
            continue;
        }
        let (mut area, mut todo) = (Vec::new(), vec![start]);
        while let Some(p) = todo.pop() {
            area.push(p);
            for (dx, dy, dz) in (-1..=1).flat_map(|x| (-1..=1).flat_map(move |y| (-1..=1).map(move |z| (x, y, z)))) {
                let n = BlockPos::new(p.x.wrapping_add(dx), p.y.wrapping_add(dy), p.z.wrapping_add(dz));
                if blocks.contains_key(&n) && seen.insert(n) {
                    todo.push(n);
                }
            }
        }
        area.sort();
        out.push(area);
    }
    out
}

/// The areas `changes` make (inside `area` when given), from `from` to `to`.
pub(crate) fn analyze(changes: &[BlockChange], area: Option<NodeBox>, from: &str, to: &str) -> Diff {
    let mut diff = Diff { from: from.into(), to: to.into(), ..Diff::default() };
    let mut blocks = BTreeMap::new();
    let mut sides = HashMap::new();
    for c in changes {
        if area.is_some_and(|a| !a.touches(c.pos)) {
            continue;
        }
        let decode = |b: &Option<Vec<u8>>, side: &str| -> Result<Option<Block>, String> {
            b.as_deref().map(Block::decode).transpose().map_err(|e| format!("{} ({side}): {e}", c.pos))
        };
        let (then, now) = match (decode(&c.before, from), decode(&c.after, to)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                diff.undecodable.push(e);
                continue;
            }
        };
        let d = block_diff(c.pos, then.as_ref(), now.as_ref(), area);
        if d.nodes.is_empty() {
            diff.resaved += 1;
            continue;
        }
        sides.insert(c.pos, (c.before.is_none(), c.after.is_none()));
        blocks.insert(c.pos, d);
    }
    for group in group(&blocks) {
        let mut a = AreaDiff { min: [i32::MAX; 3], max: [i32::MIN; 3], ..AreaDiff::default() };
        for pos in group {
            let d = &blocks[&pos];
            for p in &d.nodes {
                a.min = [0, 1, 2].map(|i| a.min[i].min(p[i]));
                a.max = [0, 1, 2].map(|i| a.max[i].max(p[i]));
            }
            a.nodes_changed += d.nodes.len() as u64;
            for (k, v) in &d.counts {
                *a.counts.entry(k.clone()).or_insert(0) += v;
            }
            a.inventories.extend(d.inventories.iter().cloned());
            let (added, removed) = sides[&pos];
            a.blocks_added += added as u32;
            a.blocks_removed += removed as u32;
            a.blocks.push(pos.to_string());
        }
        a.counts.retain(|_, v| *v != 0);
        diff.areas.push(a);
    }
    diff
}

fn signed(counts: &BTreeMap<String, i64>) -> String {
    // Losses first, then gains, each by size.
    let mut v: Vec<(&String, &i64)> = counts.iter().collect();
    v.sort_by_key(|(n, c)| (**c > 0, -c.abs(), (*n).clone()));
    v.iter().map(|(n, c)| format!("{c:+} {n}")).collect::<Vec<_>>().join(" ")
}

fn triple(p: [i32; 3]) -> String {
    format!("{},{},{}", p[0], p[1], p[2])
}

impl Diff {
    /// The report for people.
    pub(crate) fn text(&self) -> String {
        let mut out = format!(
            "{} area(s) changed from {} to {}{}\n",
            self.areas.len(),
            self.from,
            self.to,
            if self.resaved > 0 {
                format!(" ({} more block(s) saved again with no node or metadata change)", self.resaved)
            } else {
                String::new()
            }
        );
        for (i, a) in self.areas.iter().enumerate() {
            out.push_str(&format!(
                "area {}: {} {} ({} block(s){}{}): {} node(s) changed\n",
                i + 1,
                triple(a.min),
                triple(a.max),
                a.blocks.len(),
                if a.blocks_added > 0 { format!(", {} new", a.blocks_added) } else { String::new() },
                if a.blocks_removed > 0 { format!(", {} gone", a.blocks_removed) } else { String::new() },
                a.nodes_changed
            ));
            if !a.counts.is_empty() {
                out.push_str(&format!("  nodes: {}\n", signed(&a.counts)));
            }
            for inv in &a.inventories {
                out.push_str(&format!(
                    "  inventory {} ({}): {}\n",
                    triple(inv.node),
                    inv.node_name,
                    signed(&inv.items)
                ));
            }
        }
        for u in &self.undecodable {
            out.push_str(&format!("not compared, does not decode: {u}\n"));
        }
        out
    }
}
