//! A box of nodes in world coordinates, and where its nodes are in blocks:
//! what an export captures and an import places (the WorldEdit kind uses it
//! too).

use worldfs_codec::luanti::block::node_index;
use worldfs_codec::mts::{MAX_AXIS, MAX_NODES};
use worldfs_store::BlockPos;

/// A box of nodes, corners included, in world coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeBox {
    pub min: [i32; 3],
    pub(crate) max: [i32; 3],
}

/// The block holding a node, if it is inside the world.
pub(crate) fn block_of(p: [i32; 3]) -> Option<BlockPos> {
    BlockPos::of_node(p[0], p[1], p[2])
}

/// The in-block index of a node given relative to its block's origin.
pub(crate) fn block_node(x: i32, y: i32, z: i32) -> usize {
    node_index(x as usize, y as usize, z as usize)
}

impl NodeBox {
    /// The box between two corners (in any order). At most 32767 nodes
    /// along an axis and [`MAX_NODES`] (16 777 216) in all, inside the world.
    pub fn new(a: [i32; 3], b: [i32; 3]) -> Result<NodeBox, String> {
        let min = [a[0].min(b[0]), a[1].min(b[1]), a[2].min(b[2])];
        let max = [a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])];
        for p in [min, max] {
            if block_of(p).is_none() {
                return Err(format!("node {},{},{} is outside the world (-32768..32767)", p[0], p[1], p[2]));
            }
        }
        let size: Vec<i64> = (0..3).map(|i| max[i] as i64 - min[i] as i64 + 1).collect();
        if size.iter().any(|&s| s > MAX_AXIS as i64) || size.iter().product::<i64>() > MAX_NODES as i64 {
            return Err(format!(
                "the box is {} x {} x {} = {} nodes; at most {MAX_NODES} (256 x 256 x 256) and {MAX_AXIS} along \
                 an axis",
                size[0],
                size[1],
                size[2],
                size.iter().product::<i64>()
            ));
        }
        Ok(NodeBox { min, max })
    }

    pub(crate) fn size(&self) -> [usize; 3] {
        [0, 1, 2].map(|i| (self.max[i] - self.min[i] + 1) as usize)
    }

    pub(crate) fn contains(&self, p: [i32; 3]) -> bool {
        (0..3).all(|i| (self.min[i]..=self.max[i]).contains(&p[i]))
    }

    /// The schematic index of a node of the box (x fastest, then y, z).
    pub(crate) fn index(&self, p: [i32; 3]) -> usize {
        let [sx, sy, _] = self.size();
        let d = [0, 1, 2].map(|i| (p[i] - self.min[i]) as usize);
        (d[2] * sy + d[1]) * sx + d[0]
    }

    /// The blocks the box touches.
    #[allow(clippy::expect_used, reason = "NodeBox::new checked that both corners are on the map")]
    pub fn blocks(&self) -> Vec<BlockPos> {
        let lo = block_of(self.min).expect("checked");
        let hi = block_of(self.max).expect("checked");
        let mut v = Vec::new();
        for z in lo.z..=hi.z {
            for y in lo.y..=hi.y {
                for x in lo.x..=hi.x {
                    v.push(BlockPos::new(x, y, z));
                }
            }
        }
        v
    }

    /// The nodes of the box inside block `b`.
    pub fn nodes_in_block(&self, b: BlockPos) -> impl Iterator<Item = [i32; 3]> + use<> {
        let (ox, oy, oz) = b.origin();
        let lo = [self.min[0].max(ox), self.min[1].max(oy), self.min[2].max(oz)];
        let hi = [self.max[0].min(ox + 15), self.max[1].min(oy + 15), self.max[2].min(oz + 15)];
        (lo[2]..=hi[2]).flat_map(move |z| (lo[1]..=hi[1]).flat_map(move |y| (lo[0]..=hi[0]).map(move |x| [x, y, z])))
    }
}
