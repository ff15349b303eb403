//! What the engine (Luanti 5.6.1) keeps: limits it enforces when it loads
//! or activates a block, where content past them is silently deleted or
//! never read. A write that would cross one is refused here instead, with
//! the engine's rule in the reason. (The list of limits checked, and those
//! left alone with why, is in docs/reliability.md, "Issue 26: what the
//! engine keeps".)

use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::objects::StaticObject;
use worldfs_store::BlockPos;

/// `MAX_MAP_GENERATION_LIMIT` (src/constants.h): the map's edge in nodes.
pub(crate) const MAP_LIMIT_NODES: i32 = 31007;

/// `blockpos_over_max_limit` (src/mapblock.h): blocks past ±1937 on any
/// axis are never loaded, generated or saved by the engine.
pub(crate) const BLOCK_LIMIT: i16 = (MAP_LIMIT_NODES / 16) as i16;

/// `max_objects_per_block`'s default (src/defaultsettings.cpp).
pub(crate) const DEFAULT_MAX_OBJECTS_PER_BLOCK: u16 = 256;

/// `objectpos_over_limit` (src/mapblock.h): an object past
/// (31007 + 0.5) nodes x BS (10) is deleted when it is activated.
const OBJECT_LIMIT_WORLD_UNITS: f32 = (MAP_LIMIT_NODES as f32 + 0.5) * 10.0;

/// Whether the engine loads a block at `pos` at all.
pub(crate) fn block_in_map(pos: BlockPos) -> bool {
    [pos.x, pos.y, pos.z].iter().all(|c| (-BLOCK_LIMIT..=BLOCK_LIMIT).contains(c))
}

/// The refusal of a new block the engine would never load.
pub(crate) fn check_new_block(pos: BlockPos) -> Result<(), String> {
    if block_in_map(pos) {
        return Ok(());
    }
    Err(format!(
        "block {pos} is outside the map: the engine loads blocks -{BLOCK_LIMIT}..{BLOCK_LIMIT} on each axis \
         (nodes ±{MAP_LIMIT_NODES}) and never reads one past that"
    ))
}

/// Whether the engine keeps a static object at its stored position
/// (world units x 1000, read as the engine reads them: f32 / 1000).
fn object_in_map(o: &StaticObject) -> bool {
    o.pos.iter().all(|&c| ((c as f32) / 1000.0).abs() <= OBJECT_LIMIT_WORLD_UNITS)
}

/// The static objects of `new` against the limits the server applies when
/// it activates the block; only checked when they changed, so that an
/// edit of something else in an odd block is not refused.
pub(crate) fn check_objects(orig: &Block, new: &Block, max_per_block: u16) -> Result<(), String> {
    let objects = &new.objects.objects;
    if *objects == orig.objects.objects {
        return Ok(());
    }
    if objects.len() > max_per_block as usize {
        return Err(format!(
            "{} static objects; the server keeps at most max_objects_per_block = {max_per_block} per block and \
             deletes all of them when there are more (\"suspiciously large amount of objects detected\")",
            objects.len()
        ));
    }
    if let Some((i, o)) =
        objects.iter().enumerate().find(|(_, o)| !object_in_map(o) && !orig.objects.objects.contains(o))
    {
        let [x, y, z] = o.pos.map(|c| c as f64 / 10_000.0);
        return Err(format!(
            "object {} at {x},{y},{z} is outside the map (±{}.5 nodes); the server deletes it when it activates \
             the block",
            i + 1,
            MAP_LIMIT_NODES
        ));
    }
    Ok(())
}

/// The server's `max_objects_per_block`: `-o max_objects_per_block=N`
/// when given, else the value in the server's minetest.conf next to the
/// worlds directory (WORLD/../../minetest.conf, where a user install keeps
/// it), else the engine's default.
pub(crate) fn max_objects_per_block(world_dir: &std::path::Path, option: Option<u16>) -> u16 {
    if let Some(n) = option {
        return n;
    }
    let conf = world_dir.parent().and_then(|p| p.parent()).map(|p| p.join("minetest.conf"));
    let from_conf = conf.and_then(|c| std::fs::read_to_string(c).ok()).and_then(|text| {
        worldfs_store::world::parse_settings(&text)
            .into_iter()
            .rev()
            .find(|(k, _)| k == "max_objects_per_block")
            .and_then(|(_, v)| v.parse::<u16>().ok())
    });
    from_conf.unwrap_or(DEFAULT_MAX_OBJECTS_PER_BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_codec::luanti::objects::LUA_ENTITY;

    fn with_objects(n: usize, pos: [i32; 3]) -> Block {
        let mut b = Block::new_air(29);
        b.objects.objects = (0..n).map(|_| StaticObject { kind: LUA_ENTITY, pos, data: vec![1, 0, 0] }).collect();
        b
    }

    #[test]
    fn block_limit_is_the_engines() {
        assert!(block_in_map(BlockPos::new(1937, -1937, 0)));
        assert!(!block_in_map(BlockPos::new(1938, 0, 0)));
        assert!(!block_in_map(BlockPos::new(0, -1938, 0)));
        assert!(check_new_block(BlockPos::new(2047, 2047, 2047)).unwrap_err().contains("outside the map"));
    }

    #[test]
    fn objects_past_the_servers_limits_are_refused_only_when_changed() {
        let orig = Block::new_air(29);
        assert!(check_objects(&orig, &with_objects(256, [0; 3]), 256).is_ok());
        let e = check_objects(&orig, &with_objects(257, [0; 3]), 256).unwrap_err();
        assert!(e.contains("max_objects_per_block = 256"), "{e}");
        assert!(check_objects(&orig, &with_objects(257, [0; 3]), 300).is_ok());
        // Unchanged objects are not judged again.
        let many = with_objects(300, [0; 3]);
        assert!(check_objects(&many, &many, 256).is_ok());
        // 31007.5 nodes is the edge; one node unit (1/10000) past it is out.
        assert!(check_objects(&orig, &with_objects(1, [310_075_000, 0, 0]), 256).is_ok());
        let e = check_objects(&orig, &with_objects(1, [0, -310_100_000, 0]), 256).unwrap_err();
        assert!(e.contains("outside the map"), "{e}");
    }

    #[test]
    fn max_objects_comes_from_the_option_then_minetest_conf() {
        let tmp = tempfile::tempdir().unwrap();
        let world = tmp.path().join("worlds").join("w");
        std::fs::create_dir_all(&world).unwrap();
        assert_eq!(max_objects_per_block(&world, None), 256);
        std::fs::write(tmp.path().join("minetest.conf"), "name = x\nmax_objects_per_block = 64\n").unwrap();
        assert_eq!(max_objects_per_block(&world, None), 64);
        assert_eq!(max_objects_per_block(&world, Some(500)), 500);
    }
}
