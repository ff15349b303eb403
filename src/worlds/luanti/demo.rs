//! `worldfs demo DIR`: a small world written with our own encoder, so that a
//! new user can try the tool without a world of their own. A grass field
//! of 3x3 blocks with a cobblestone house holding a chest, a sign and a
//! lit furnace. The real server (minetest_game) loads it.

use std::path::Path;
use worldfs_codec::luanti::block::{Block, FLAG_DAY_NIGHT_DIFFERS, FLAG_UNDERGROUND, MappingEntry, node_index};
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaVar};
use worldfs_codec::luanti::objects::NodeTimer;
use worldfs_store::sqlite::{Schema, SqliteStore};
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// Where the demo's furnishings are (world node coordinates).
pub const CHEST: [i32; 3] = [3, 1, 3];
pub const SIGN: [i32; 3] = [3, 2, 8];
pub const FURNACE: [i32; 3] = [7, 1, 3];

const CHEST_INVENTORY: &str = "List main 32\nWidth 0\nItem default:apple 12\nItem default:pick_steel 1 3000\nItem default:torch 20\nItem default:sword_steel 1 0 \"\\u0001description\\u0002Demo blade\\u0003\"\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEndInventoryList\nEndInventory\n";
const FURNACE_INVENTORY: &str = "List fuel 1\nWidth 0\nItem default:coal_lump 5\nEndInventoryList\nList src 1\nWidth 0\nItem default:iron_lump 3\nEndInventoryList\nList dst 4\nWidth 0\nEmpty\nEmpty\nEmpty\nEmpty\nEndInventoryList\nEndInventory\n";

/// The node at world coordinates (x, y, z) of the demo, with its param2.
fn node_at(x: i32, y: i32, z: i32) -> (&'static str, u8) {
    let in_house = (1..=9).contains(&x) && (1..=9).contains(&z);
    let wall = in_house && (x == 1 || x == 9 || z == 1 || z == 9);
    match y {
        ..=-4 => ("default:stone", 0),
        -3..=-1 => ("default:dirt", 0),
        0 if in_house => ("default:wood", 0),
        0 => ("default:dirt_with_grass", 0),
        1..=4 if wall => {
            let door = x == 5 && z == 1 && y <= 2;
            let window = y == 2 && (x == 9 || x == 1) && z == 5;
            if door {
                ("air", 0)
            } else if window {
                ("default:glass", 0)
            } else if (x == 1 || x == 9) && (z == 1 || z == 9) {
                ("default:tree", 0)
            } else {
                ("default:cobble", 0)
            }
        }
        5 if in_house => ("default:wood", 0),
        _ if [x, y, z] == CHEST => ("default:chest", 0),
        _ if [x, y, z] == FURNACE => ("default:furnace_active", 0),
        // wallmounted on the wall at z + 1 (param2 4)
        _ if [x, y, z] == SIGN => ("default:sign_wall_wood", 4),
        _ => ("air", 0),
    }
}

fn var(k: &str, v: &str) -> MetaVar {
    MetaVar { key: k.as_bytes().to_vec(), value: v.as_bytes().to_vec(), private: false }
}

/// Build one block of the demo.
pub fn demo_block(pos: BlockPos) -> Block {
    let mut b = Block::new_air(29);
    b.mapping.clear();
    let (ox, oy, oz) = pos.origin();
    for z in 0..16 {
        for y in 0..16 {
            for x in 0..16 {
                let (name, p2) = node_at(ox + x as i32, oy + y as i32, oz + z as i32);
                let id = match b.mapping.iter().position(|m| m.name == name.as_bytes()) {
                    Some(i) => b.mapping[i].id,
                    None => {
                        let id = b.mapping.len() as u16;
                        b.mapping.push(MappingEntry { id, name: name.as_bytes().to_vec() });
                        id
                    }
                };
                let i = node_index(x, y, z);
                b.param0[i] = id;
                b.param2[i] = p2;
                // Sunlight above ground, dark below.
                b.param1[i] = if name == "air" || name == "default:glass" { 0x0f } else { 0 };
            }
        }
    }
    if pos.y < 0 {
        b.flags |= FLAG_UNDERGROUND;
    }
    // Sunlit air is bright by day and dark at night.
    if b.param1.iter().any(|&l| l & 0x0f != l >> 4) {
        b.flags |= FLAG_DAY_NIGHT_DIFFERS;
    }
    let local = |c: [i32; 3]| {
        (BlockPos::of_node(c[0], c[1], c[2]) == Some(pos)).then(|| {
            node_index(c[0].rem_euclid(16) as usize, c[1].rem_euclid(16) as usize, c[2].rem_euclid(16) as usize) as u16
        })
    };
    if let Some(p) = local(CHEST) {
        let mut e = MetaEntry::new(p);
        e.vars.push(var("infotext", "Demo chest"));
        e.inventory = CHEST_INVENTORY.as_bytes().to_vec();
        b.metadata.entries.push(e);
    }
    if let Some(p) = local(FURNACE) {
        let mut e = MetaEntry::new(p);
        e.vars.push(var("infotext", "Furnace active"));
        e.vars.push(var("fuel_totaltime", "40"));
        e.vars.push(var("fuel_time", "2"));
        e.vars.push(var("src_time", "1"));
        e.inventory = FURNACE_INVENTORY.as_bytes().to_vec();
        b.metadata.entries.push(e);
        b.timers.push(NodeTimer { pos: p, timeout: 1000, elapsed: 0 });
    }
    if let Some(p) = local(SIGN) {
        let mut e = MetaEntry::new(p);
        e.vars.push(var("text", "Welcome to worldfs!\nEdit me in MNT/blocks/0,0,0/meta/3,2,8/fields/text"));
        e.vars.push(var("infotext", "\"Welcome to worldfs!\""));
        b.metadata.entries.push(e);
    }
    b.metadata.entries.sort_by_key(|e| {
        let (x, y, z) = worldfs_codec::luanti::block::index_xyz(e.pos as usize);
        (x, y, z)
    });
    b.metadata.version = b.metadata.version_for(b.version);
    b
}

/// The block positions of the demo: x and z in -1..=1, y in -1..=0.
pub fn demo_positions() -> Vec<BlockPos> {
    let mut v = Vec::new();
    for z in -1..=1 {
        for y in -1..=0 {
            for x in -1..=1 {
                v.push(BlockPos::new(x, y, z));
            }
        }
    }
    v
}

/// Write the demo world into `dir` (which must not hold a world yet).
pub fn write_demo(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let map = dir.join("map.sqlite");
    if map.exists() || dir.join("world.mt").exists() {
        return Err(format!("{}: a world is already there; choose an empty directory", dir.display()));
    }
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    write(
        "world.mt",
        "gameid = minetest\nworld_name = worldfs demo\nbackend = sqlite3\nplayer_backend = sqlite3\n\
         auth_backend = sqlite3\nmod_storage_backend = sqlite3\ncreative_mode = true\nenable_damage = false\n",
    )?;
    write("map_meta.txt", "mg_name = singlenode\nseed = 1\nchunksize = 5\nwater_level = 1\n[end_of_params]\n")?;
    // The legacy schema: every server version reads it.
    let store = SqliteStore::create(&map, Schema::Legacy).map_err(|e| e.to_string())?;
    let mut changes = Vec::new();
    for pos in demo_positions() {
        let blob = demo_block(pos).encode().map_err(|e| e.to_string())?;
        changes.push(Change::Put(pos, blob));
    }
    store.apply(&changes, &Note::new("demo world")).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::inventory::Inventory;

    #[test]
    fn demo_blocks_decode_and_inventories_are_valid() {
        for pos in demo_positions() {
            let b = demo_block(pos);
            assert_eq!(Block::decode(&b.encode().unwrap()).unwrap(), b);
            for e in &b.metadata.entries {
                Inventory::parse_strict(&e.inventory).unwrap();
            }
        }
        let origin = demo_block(BlockPos::new(0, 0, 0));
        assert_eq!(origin.metadata.entries.len(), 3);
        assert_eq!(origin.timers.len(), 1);
    }

    #[test]
    fn write_demo_refuses_an_existing_world() {
        let d = tempfile::tempdir().unwrap();
        write_demo(d.path()).unwrap();
        assert!(write_demo(d.path()).unwrap_err().contains("already"));
        let store = SqliteStore::open(&d.path().join("map.sqlite"), true).unwrap();
        assert_eq!(store.count().unwrap(), 18);
    }
}
