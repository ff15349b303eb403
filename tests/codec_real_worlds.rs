//! Decode then encode every block of every real world: the decompressed
//! body must be byte-identical, and decoding our own blob must give the
//! same block.

use crate::common;

use worldfs_codec::jsonish::HighBytes;
use worldfs_codec::luanti::block::{self, Block};
use worldfs_codec::luanti::inventory::Inventory;
use worldfs_store::MapStore;
use worldfs_store::sqlite::SqliteStore;

#[test]
fn every_block_of_every_real_world_round_trips() {
    let worlds = common::real_sqlite_worlds("every_block_of_every_real_world_round_trips");
    assert!(!worlds.is_empty());
    for world in worlds {
        let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
        let mut after = None;
        let (mut n, mut versions) = (0usize, std::collections::BTreeMap::new());
        let mut inventories = 0;
        let mut names = std::collections::BTreeSet::new();
        loop {
            let page = store.scan_after(after, 2000).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.0);
            for (pos, blob) in page {
                let b = Block::decode(&blob).unwrap_or_else(|e| panic!("{} {pos}: {e}", world.display()));
                let expect = block::uncompressed(&blob).unwrap();
                let got = b.encode_uncompressed().unwrap();
                assert!(expect == got, "{} {pos}: re-encoded body differs", world.display());
                let again = Block::decode(&b.encode().unwrap()).unwrap();
                assert!(again == b, "{} {pos}: decode(encode(b)) != b", world.display());
                // The name index's partial read counts what the decode holds.
                let counts = worldfs_codec::luanti::NodeCounts::of(&blob).unwrap();
                assert_eq!(counts.mapping, b.mapping, "{} {pos}", world.display());
                let mut by_id = vec![0u32; counts.by_id.len()];
                b.param0.iter().for_each(|&id| by_id[id as usize] += 1);
                assert_eq!(counts.by_id, by_id, "{} {pos}: node counts", world.display());
                let ids = worldfs_codec::luanti::NodeIds::of(&blob).unwrap();
                assert!(ids.mapping == b.mapping && ids.param0 == b.param0, "{} {pos}: node ids", world.display());
                for e in &b.metadata.entries {
                    let inv = Inventory::parse_strict(&e.inventory)
                        .unwrap_or_else(|err| panic!("{} {pos}: inventory: {err}", world.display()));
                    let ok = [HighBytes::Raw, HighBytes::Escaped].iter().any(|&h| inv.serialize(h) == e.inventory);
                    assert!(ok, "{} {pos}: inventory not re-serialized exactly", world.display());
                    inventories += 1;
                }
                names.extend(b.mapping.iter().map(|m| m.name.clone()));
                // The layers drawing of every real block reads back to the block.
                let layers = worldfs::view::render_layers(pos, &b);
                let mut again = b.clone();
                worldfs::view::parse::apply_layers(pos, &mut again, &layers)
                    .unwrap_or_else(|e| panic!("{} {pos}: layers: {e:?}", world.display()));
                assert!(again == b, "{} {pos}: layers do not read back", world.display());
                *versions.entry(b.version).or_insert(0) += 1;
                n += 1;
            }
        }
        eprintln!("{}: {n} blocks round-trip, versions {versions:?}, {inventories} inventories", world.display());
        assert_eq!(n as u64, store.count().unwrap());
        // Every name real worlds hold follows the rule new names are held
        // to, so the rule refuses typos, not names of real mods.
        for name in &names {
            if let Err(e) = worldfs::view::parse::check_node_name(name) {
                panic!("{}: {e}", world.display());
            }
        }
    }
}
