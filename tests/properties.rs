//! Property tests: random blocks, inventories and files survive the round
//! trips the mount relies on.

use proptest::prelude::*;
use worldfs::view::{parse, render};
use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::block::{Block, MappingEntry, NODE_COUNT};
use worldfs_codec::luanti::inventory::{Inventory, InventoryList};
use worldfs_codec::luanti::itemstring::ItemStack;
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaVar};
use worldfs_codec::luanti::objects::{LuaEntity, NodeTimer, StaticObject};
use worldfs_store::BlockPos;

/// Node and item names: usual ones, and any bytes but NUL, CR and LF
/// (which the strict parsers refuse in names on purpose).
fn name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z_]{1,8}:[a-z_0-9]{1,12}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>().prop_filter("no NUL/CR/LF", |c| ![0, b'\n', b'\r'].contains(c)), 1..12),
    ]
}

fn item() -> impl Strategy<Value = ItemStack> {
    (
        name(),
        1u16..=65535,
        any::<u16>(),
        proptest::collection::vec(
            (proptest::collection::vec(4u8..=255, 0..6), proptest::collection::vec(4u8..=255, 0..10)),
            0..3,
        ),
    )
        .prop_map(|(name, count, wear, meta)| {
            let mut m: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (k, v) in meta {
                let duplicate = m.iter().any(|(mk, _)| *mk == k);
                let blank = k.is_empty() && v.is_empty();
                if !duplicate && !blank {
                    m.push((k, v));
                }
            }
            ItemStack { name, count, wear, meta: m }
        })
}

fn inventory() -> impl Strategy<Value = Inventory> {
    proptest::collection::vec(
        ("[a-z]{1,6}", 0u32..16, proptest::collection::vec(proptest::option::of(item()), 0..6)),
        0..3,
    )
    .prop_map(|lists| {
        let mut inv = Inventory { lists: Vec::new() };
        for (n, width, slots) in lists {
            if !inv.lists.iter().any(|l| l.name == n.as_bytes()) {
                inv.lists.push(InventoryList { name: n.into_bytes(), width, slots });
            }
        }
        inv
    })
}

fn block(version: u8) -> impl Strategy<Value = Block> {
    (
        proptest::collection::vec(name(), 1..6),
        proptest::collection::vec(any::<u8>(), NODE_COUNT),
        proptest::collection::vec(any::<u8>(), NODE_COUNT),
        proptest::collection::vec(any::<u8>(), NODE_COUNT),
        proptest::collection::btree_map(
            0u16..4096,
            (
                proptest::collection::vec(
                    ("[a-z]{0,6}", proptest::collection::vec(any::<u8>(), 0..20), any::<bool>()),
                    0..4,
                ),
                inventory(),
            ),
            0..4,
        ),
        proptest::collection::vec((0u16..4096, 1i32..100_000, 0i32..100_000), 0..4),
        proptest::collection::vec(
            (any::<[i32; 3]>(), name(), proptest::collection::vec(any::<u8>(), 0..20), any::<u16>()),
            0..3,
        ),
        (any::<u8>(), any::<u16>(), any::<u32>()),
    )
        .prop_map(move |(mut names, p0, param1, param2, meta, timers, objects, (flags, light, ts))| {
            // The engine maps each name to one id: a block naming one twice
            // is not one it writes, and its files show the two ids as one.
            let mut seen = std::collections::HashSet::new();
            names.retain(|n| seen.insert(n.clone()));
            let mut b = Block::new_air(version);
            b.mapping =
                names.iter().enumerate().map(|(i, n)| MappingEntry { id: i as u16 * 3, name: n.clone() }).collect();
            b.param0 = p0.iter().map(|&v| (v as usize % names.len()) as u16 * 3).collect();
            b.param1 = param1;
            b.param2 = param2;
            b.flags = flags & 0x0b;
            b.lighting_complete = if version >= 27 { light } else { 0xffff };
            b.timestamp = ts;
            for (pos, (vars, inv)) in meta {
                let mut e = MetaEntry::new(pos);
                for (k, v, private) in vars {
                    if !e.vars.iter().any(|x| x.key == k.as_bytes()) {
                        e.vars.push(MetaVar { key: k.into_bytes(), value: v, private: private && version >= 28 });
                    }
                }
                e.inventory = inv.serialize(HighBytes::Raw);
                b.metadata.entries.push(e);
            }
            b.metadata.version = b.metadata.version_for(version);
            let mut seen = std::collections::HashSet::new();
            b.timers = timers
                .into_iter()
                .filter(|t| seen.insert(t.0))
                .map(|(pos, timeout, elapsed)| NodeTimer { pos, timeout, elapsed })
                .collect();
            b.objects.objects = objects
                .into_iter()
                .map(|(pos, name, staticdata, hp)| {
                    let e =
                        LuaEntity { name, staticdata, hp, velocity: [1, -2, 3], yaw: 45, pitch_roll: None, guid: None };
                    StaticObject { kind: 7, pos, data: e.encode() }
                })
                .collect();
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn blocks_round_trip_in_every_writable_version(b in (24u8..=29).prop_flat_map(block)) {
        let v = b.version;
        let blob = b.encode().unwrap();
        prop_assert_eq!(blob[0], v);
        prop_assert_eq!(Block::decode(&blob).unwrap(), b.clone());
        prop_assert_eq!(worldfs_codec::luanti::block::uncompressed(&blob).unwrap(), b.encode_uncompressed().unwrap());
    }

    #[test]
    fn inventories_parse_back(inv in inventory()) {
        for high in [HighBytes::Raw, HighBytes::Escaped] {
            let text = inv.serialize(high);
            prop_assert_eq!(Inventory::parse_strict(&text).unwrap(), inv.clone());
        }
    }

    #[test]
    fn rendered_files_parse_back_to_the_same_block(b in block(29), x in -100i16..100, y in -100i16..100, z in -100i16..100) {
        let pos = BlockPos::new(x, y, z);
        let mut c = b.clone();
        parse::apply_nodes(pos, &mut c, &render::render_nodes(pos, &b)).unwrap();
        parse::apply_names(&mut c, &render::render_names(&b)).unwrap();
        parse::apply_timers(pos, &mut c, &render::render_timers(pos, &b)).unwrap();
        parse::apply_objects(&mut c, &render::render_objects(&b)).unwrap();
        for e in c.metadata.entries.iter_mut() {
            let orig = e.clone();
            parse::apply_inventory(e, &orig.inventory).unwrap();
            parse::apply_private(e, &render::render_meta_file(&orig, worldfs::view::MetaFile::Private), 29).unwrap();
        }
        parse::apply_info(&mut c, &render::render_info(&b, 1)).unwrap();
        prop_assert_eq!(c, b);
    }
}
