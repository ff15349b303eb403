//! Moving nodes between map blocks and schematics, pure: a box of nodes
//! ([`node_box`]), blocks to a schematic ([`capture`]), a schematic or a
//! WorldEdit file's nodes into blocks ([`place`], [`we`]), and turning a
//! build ([`rotate`]). `worldfs export` and `worldfs import` use them on a
//! world (`crate::worlds::luanti::import_export`), and every block's
//! `schematic.mts` file is a capture of its block.

pub mod capture;
pub mod node_box;
pub mod place;
pub mod rotate;
pub(crate) mod we;

#[cfg(test)]
mod tests {
    use super::capture::{CaptureOptions, block_to_mts, capture};
    use super::node_box::{NodeBox, block_node, block_of};
    use super::place::{PlaceOptions, place_schematic};
    use super::rotate::{NodeDefs, Rotation};
    use std::collections::BTreeMap;
    use worldfs_codec::luanti::Block;
    use worldfs_codec::mts::Schematic;
    use worldfs_store::BlockPos;

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
