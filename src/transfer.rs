//! Moving builds between a world and files: a box of the world exported as
//! a schematic (`.mts`) or a WorldEdit file (`.we`), and such a file
//! imported into the world (`worldfs export`, `worldfs import`).
//!
//! The pure parts are in the submodules: [`capture`] (world -> schematic),
//! [`place`] (schematic or node list -> edited blocks), [`rotate`]. This
//! file reads and writes the store: an import is one transaction with a
//! journal note, so `worldfs undo` takes it back.

pub mod capture;
pub mod place;
pub mod rotate;

use crate::codec::block::node_index;
use crate::kinds::mts::codec::{MAX_AXIS, MAX_NODES};
use crate::store::BlockPos;

/// A box of nodes, corners included, in world coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeBox {
    pub min: [i32; 3],
    pub max: [i32; 3],
}

/// The block holding a node, if it is inside the world.
pub fn block_of(p: [i32; 3]) -> Option<BlockPos> {
    BlockPos::of_node(p[0], p[1], p[2])
}

/// The in-block index of a node given relative to its block's origin.
pub fn block_node(x: i32, y: i32, z: i32) -> usize {
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

    pub fn size(&self) -> [usize; 3] {
        [0, 1, 2].map(|i| (self.max[i] - self.min[i] + 1) as usize)
    }

    pub fn contains(&self, p: [i32; 3]) -> bool {
        (0..3).all(|i| (self.min[i]..=self.max[i]).contains(&p[i]))
    }

    /// The schematic index of a node of the box (x fastest, then y, z).
    pub fn index(&self, p: [i32; 3]) -> usize {
        let [sx, sy, _] = self.size();
        let d = [0, 1, 2].map(|i| (p[i] - self.min[i]) as usize);
        (d[2] * sy + d[1]) * sx + d[0]
    }

    /// The blocks the box touches.
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

#[cfg(test)]
mod tests {
    use super::capture::{CaptureOptions, block_to_mts, capture};
    use super::place::{PlaceOptions, place_schematic};
    use super::rotate::{NodeDefs, Rotation};
    use super::*;
    use crate::codec::Block;
    use crate::kinds::mts::Schematic;
    use std::collections::BTreeMap;

    type World = BTreeMap<BlockPos, Block>;

    fn fetcher(w: &World) -> impl FnMut(BlockPos) -> Result<Option<Block>, String> + '_ {
        move |p| Ok(w.get(&p).cloned())
    }

    fn set(w: &mut World, p: [i32; 3], name: &str, p2: u8) {
        let bp = block_of(p).unwrap();
        let b = w.entry(bp).or_insert_with(|| Block::new_air(29));
        let (ox, oy, oz) = bp.origin();
        let i = block_node(p[0] - ox, p[1] - oy, p[2] - oz);
        b.param0[i] = crate::view::parse::id_for(b, name.as_bytes()).unwrap();
        b.param2[i] = p2;
    }

    fn get(w: &World, p: [i32; 3]) -> (String, u8) {
        let bp = block_of(p).unwrap();
        let Some(b) = w.get(&bp) else { return ("(none)".into(), 0) };
        let (ox, oy, oz) = bp.origin();
        let i = block_node(p[0] - ox, p[1] - oy, p[2] - oz);
        (String::from_utf8_lossy(b.name_of(b.param0[i]).unwrap()).into_owned(), b.param2[i])
    }

    /// A small build spanning four blocks: stone floor, a chest facing
    /// somewhere, a torch on a wall.
    fn world() -> World {
        let mut w = World::new();
        for x in -2..3 {
            for z in 14..18 {
                set(&mut w, [x, 0, z], "default:stone", 0);
            }
        }
        set(&mut w, [-1, 1, 15], "default:chest", 1);
        set(&mut w, [1, 1, 16], "default:torch_wall", 2);
        w
    }

    #[test]
    fn capture_numbers_names_in_node_order_and_leaves_missing_blocks_alone() {
        let w = world();
        let bx = NodeBox::new([2, 1, 17], [-2, -1, 14]).unwrap();
        let c = capture(&bx, &mut fetcher(&w), &CaptureOptions::default()).unwrap();
        let s = &c.schematic;
        assert_eq!(s.size, [5, 3, 4]);
        // y = -1 lies in blocks that are not stored: air, never placed.
        assert_eq!(c.missing_blocks, 4);
        assert_eq!((s.name_at(0), s.param1[0]), (&b"air"[..], 0));
        assert_eq!(
            s.names,
            vec![b"air".to_vec(), b"default:stone".to_vec(), b"default:chest".to_vec(), b"default:torch_wall".to_vec()]
        );
        let i = s.index(1, 2, 1);
        assert_eq!((s.name_at(i), s.param1[i], s.param2[i]), (&b"default:chest"[..], 127, 1));
        assert!(s.slices.iter().all(|&p| p == 127));
        let sparse =
            capture(&bx, &mut fetcher(&w), &CaptureOptions { sparse_air: true, ..Default::default() }).unwrap();
        assert!(sparse.schematic.param1.iter().zip(&sparse.schematic.param0).all(|(&p, &id)| (id == 0) == (p == 0)));
        assert!(NodeBox::new([0, 0, 0], [300, 300, 300]).unwrap_err().contains("at most 16777216"));
    }

    #[test]
    fn place_then_capture_gives_the_build_back_in_every_rotation() {
        let w = world();
        let bx = NodeBox::new([-2, 0, 14], [2, 1, 17]).unwrap();
        let s = capture(&bx, &mut fetcher(&w), &CaptureOptions::default()).unwrap().schematic;
        let defs = NodeDefs::parse("default:chest facedir\ndefault:torch_wall wallmounted\n").unwrap();
        for deg in [0, 90, 180, 270] {
            let rotation = Rotation::from_degrees(deg).unwrap();
            let opts = PlaceOptions { rotation, force: true, defs: Some(defs.clone()) };
            let mut empty = World::new();
            let origin = [100, 50, -40];
            let p = place_schematic(&s, origin, &opts, &mut fetcher(&empty), 29).unwrap();
            assert_eq!(p.placed, s.volume());
            for (bp, (before, after)) in p.blocks {
                assert!(before.is_none());
                assert!(after.is_generated());
                empty.insert(bp, after);
            }
            let t = rotation.turned_size(s.size.map(|v| v as usize));
            let back_box =
                NodeBox::new(origin, [origin[0] + t[0] as i32 - 1, origin[1] + 1, origin[2] + t[2] as i32 - 1])
                    .unwrap();
            let back = capture(&back_box, &mut fetcher(&empty), &CaptureOptions::default()).unwrap().schematic;
            // Turning back by the remaining quarter turns gives the original.
            let undo = Rotation((4 - rotation.0) % 4);
            let mut again = World::new();
            let opts = PlaceOptions { rotation: undo, force: true, defs: Some(defs.clone()) };
            let placed = place_schematic(&back, [0, 0, 0], &opts, &mut fetcher(&again), 29).unwrap();
            for (bp, (_, after)) in placed.blocks {
                again.insert(bp, after);
            }
            let round =
                capture(&NodeBox::new([0, 0, 0], [4, 1, 3]).unwrap(), &mut fetcher(&again), &CaptureOptions::default())
                    .unwrap()
                    .schematic;
            assert_eq!(round, s, "rotation {deg}");
        }
        // 90: the chest (facedir 1) turns to 2, the torch (wallmounted +Z=4 ... here 2 = +X) to -Z (5).
        let mut one = World::new();
        let opts = PlaceOptions { rotation: Rotation(1), force: true, defs: Some(defs) };
        let placed = place_schematic(&s, [0, 0, 0], &opts, &mut fetcher(&one), 29).unwrap();
        for (bp, (_, after)) in placed.blocks {
            one.insert(bp, after);
        }
        // chest at source (1, 1, 1) -> turned (x, z) with source (X-1-z, x): x = 1, z = 3.
        assert_eq!(get(&one, [1, 1, 3]), ("default:chest".into(), 2));
        // torch at source (3, 1, 2) -> x = 2, z = 1, wallmounted 2 -> 5.
        assert_eq!(get(&one, [2, 1, 1]), ("default:torch_wall".into(), 5));
    }

    #[test]
    fn probability_zero_force_and_slices_follow_the_engine() {
        let mut s = Schematic::new_air([2, 3, 1]).unwrap();
        s.names.push(b"default:wood".to_vec());
        s.param0.iter_mut().for_each(|p| *p = 1);
        s.param1[0] = 0; // never
        s.param1[1] = 127; // not forced
        s.param1[2] = 127 | 0x80; // forced
        s.slices[1] = 0; // y = 1 skipped: y = 2 comes down to y = 1
        let mut w = World::new();
        set(&mut w, [0, 0, 0], "default:dirt", 0);
        set(&mut w, [1, 0, 0], "default:dirt", 0);
        let opts = PlaceOptions { rotation: Rotation(0), force: false, defs: None };
        let p = place_schematic(&s, [0, 0, 0], &opts, &mut fetcher(&w), 29).unwrap();
        assert_eq!((p.placed, p.blocked), (2, 1));
        for (bp, (_, after)) in p.blocks {
            w.insert(bp, after);
        }
        assert_eq!(get(&w, [0, 0, 0]).0, "default:dirt", "probability 0 leaves it");
        assert_eq!(get(&w, [1, 0, 0]).0, "default:dirt", "not forced: only into air");
        assert_eq!(get(&w, [0, 1, 0]).0, "default:wood", "slice 2 moved down");
        assert_eq!(get(&w, [0, 2, 0]).0, "air");
    }

    #[test]
    fn one_block_as_a_schematic() {
        let w = world();
        let b = &w[&BlockPos::new(0, 0, 0)];
        let s = Schematic::decode(&block_to_mts(b)).unwrap();
        assert_eq!(s.size, [16, 16, 16]);
        for i in 0..4096 {
            assert_eq!(s.name_at(i), b.name_of(b.param0[i]).unwrap());
            assert_eq!((s.param1[i], s.param2[i]), (127, b.param2[i]));
        }
    }
}
