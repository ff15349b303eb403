//! Properties of schematics and WorldEdit files, on random inputs.

use proptest::prelude::*;
use std::collections::BTreeMap;
use worldfs::documents::mts::{MtsDocument, Schematic};
use worldfs::documents::{Context, Document};
use worldfs::transfer::capture::{CaptureOptions, capture};
use worldfs::transfer::node_box::NodeBox;
use worldfs::transfer::place::{PlaceOptions, place_schematic};
use worldfs::transfer::rotate::{NodeDefs, Rotation};
use worldfs_codec::luanti::Block;
use worldfs_codec::we::codec::{self as we, WeFile, WeMeta, WeNode};
use worldfs_store::BlockPos;

const NAMES: [&str; 6] = ["air", "default:stone", "default:chest", "default:torch_wall", "stairs:stair_wood", "x:y"];

fn schematic() -> impl Strategy<Value = Schematic> {
    ([1u16..6, 1u16..5, 1u16..6], any::<u64>()).prop_map(|(size, seed)| {
        let mut s = Schematic::new_air(size).unwrap();
        s.names = NAMES.iter().map(|n| n.as_bytes().to_vec()).collect();
        let mut r = seed;
        let mut next = || {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (r >> 33) as u32
        };
        for i in 0..s.volume() {
            s.param0[i] = (next() % 6) as u16;
            s.param1[i] = next() as u8;
            s.param2[i] = next() as u8;
        }
        for y in 0..s.slices.len() {
            s.slices[y] = (next() % 128) as u8;
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn mts_round_trips(s in schematic()) {
        let f = s.encode().unwrap();
        prop_assert_eq!(Schematic::decode(&f).unwrap(), s);
    }

    #[test]
    fn every_document_file_applies_to_itself(s in schematic()) {
        let bytes = s.encode().unwrap();
        let mut d = MtsDocument::decode(&bytes, &Context::default()).unwrap();
        for e in d.entries().into_iter().filter(|e| e.writable) {
            let c = d.render(&e.path).unwrap();
            d.apply(&e.path, &c).unwrap();
            prop_assert_eq!(d.encode().unwrap(), bytes.clone(), "{}", e.path);
        }
    }

    /// Placing turned by r, then capturing and placing the capture turned by
    /// the remaining quarter turns, gives back the schematic's nodes (every
    /// probability 127 when captured), param2 included.
    #[test]
    fn four_quarter_turns_are_the_identity(mut s in schematic(), r in 0u8..4) {
        s.param1.iter_mut().for_each(|p| *p = 127);
        s.slices.iter_mut().for_each(|p| *p = 127);
        let defs = NodeDefs::parse(
            "default:chest facedir\ndefault:torch_wall wallmounted\nstairs:stair_wood colorfacedir\nx:y degrotate\n",
        ).unwrap();
        // Values each kind keeps through turns: facedir < 24, wallmounted 0..5, degrotate < 240.
        for i in 0..s.volume() {
            s.param2[i] = match s.name_at(i) {
                b"default:chest" => s.param2[i] % 24,
                b"stairs:stair_wood" => (s.param2[i] & 0xe0) | ((s.param2[i] & 31) % 24),
                b"default:torch_wall" => s.param2[i] % 6,
                b"x:y" => s.param2[i] % 240,
                _ => s.param2[i],
            };
        }
        let place = |s: &Schematic, rot: u8, world: &BTreeMap<BlockPos, Block>| {
            let opts = PlaceOptions { rotation: Rotation(rot), force: true, defs: Some(defs.clone()) };
            let p = place_schematic(s, [0, 0, 0], &opts, &mut |b| Ok(world.get(&b).cloned()), 29).unwrap();
            let mut w = world.clone();
            for (b, (_, after)) in p.blocks {
                w.insert(b, after);
            }
            let t = Rotation(rot).turned_size(s.size.map(|v| v as usize));
            let bx = NodeBox::new([0, 0, 0], [t[0] as i32 - 1, t[1] as i32 - 1, t[2] as i32 - 1]).unwrap();
            capture(&bx, &mut |b| Ok(w.get(&b).cloned()), &CaptureOptions::default()).unwrap().schematic
        };
        let empty = BTreeMap::new();
        let once = place(&s, r, &empty);
        let back = place(&once, (4 - r) % 4, &empty);
        let mut want = s.clone();
        want.condense();
        prop_assert_eq!(back, want);
    }

    #[test]
    fn we_round_trips_any_bytes(
        nodes in proptest::collection::vec(
            ((-70000i32..70000, -5i32..5, 0i32..3), proptest::collection::vec(any::<u8>(), 1..12), any::<u8>(), any::<u8>(),
             proptest::option::of((proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..8), proptest::collection::vec(any::<u8>(), 0..20)), 0..4),
                                   proptest::collection::vec(0usize..3, 0..4)))),
            0..6)
    ) {
        let items = ["", "default:dirt 5", "default:apple 3 0 \"\\u0001a\\u0002b\\u0003\""];
        let mut seen = std::collections::HashSet::new();
        let nodes: Vec<WeNode> = nodes
            .into_iter()
            .filter(|((x, y, z), ..)| seen.insert((*x, *y, *z)) && x.abs() <= 65535)
            .map(|((x, y, z), name, p1, p2, meta)| {
                let meta = meta.map(|(fields, list)| {
                    let mut f: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
                    for (k, v) in fields {
                        if !f.iter().any(|(kk, _)| *kk == k) { f.push((k, v)); }
                    }
                    WeMeta { fields: f, inventory: vec![(b"main".to_vec(), list.into_iter().map(|i| items[i].as_bytes().to_vec()).collect())] }
                }).filter(|m| !m.is_empty());
                WeNode { pos: [x, y, z], name, param1: p1, param2: p2, meta }
            })
            .collect();
        let f = WeFile { version: 5, nodes };
        let back = we::decode(&we::encode(&f)).unwrap();
        prop_assert_eq!(back, f);
    }
}

/// Found by `we_round_trips_any_bytes`: a metadata field named `_` (written
/// `_=''`, as minetest.serialize writes any identifier key) was read as the
/// start of a reference `_[N]`; `inf` and `nan` as keys likewise.
#[test]
fn fields_named_like_references_or_numbers_round_trip() {
    for key in ["_", "inf", "nan", "_1"] {
        let meta = WeMeta { fields: vec![(key.as_bytes().to_vec(), b"v".to_vec())], inventory: vec![] };
        let f = WeFile {
            version: 5,
            nodes: vec![WeNode { pos: [0, 0, 0], name: vec![0], param1: 0, param2: 0, meta: Some(meta) }],
        };
        let back = we::decode(&we::encode(&f)).unwrap_or_else(|e| panic!("{key}: {e:?}"));
        assert_eq!(back, f, "{key}");
    }
}
