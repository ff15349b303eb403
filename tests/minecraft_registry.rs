//! Block states and item ids of 1.13+ chunks and players are checked
//! against the game's own registry of the chunk's DataVersion
//! (src/worlds/minecraft/registry.txt, from minecraft-data): a name, a
//! property or a value the game does not know is refused where it is
//! written, with why; names of other namespaces (mods) are taken as they
//! are, and so are names the chunk already holds. The worlds are real
//! (tests/data/minecraft/querz: chunks of 1.15, 1.17.1 and 1.18; made/: a
//! 1.17.1 player), read back by anvil-parser2 (tests/scripts/mc_oracle.py)
//! and amulet-nbt.

use crate::common;
use crate::common::minecraft::data;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// anvil-parser2's lines for the world (`section`, `be`, `chunk` ...).
fn oracle(world: &Path) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_oracle.py");
    let out = Command::new("python3").arg(script).arg(world).output().unwrap();
    assert!(out.status.success(), "mc_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

/// Each chunk's NBT hash, by `X,Z`.
fn hashes(lines: &[String]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("chunk "))
        .map(|l| {
            let (k, h) = l.split_once(' ').unwrap();
            (k.to_string(), h.to_string())
        })
        .collect()
}

/// The block anvil-parser2 reads at index `i` of section `y` of chunk `key`.
fn block(lines: &[String], key: &str, y: i64, i: usize) -> String {
    let l = lines.iter().find(|l| l.starts_with(&format!("section {key} {y} "))).unwrap();
    l.splitn(4, ' ').nth(3).unwrap().split(' ').nth(i).unwrap().to_string()
}

/// Write `text` into `file` of the mount with `echo`; the refusal it gave
/// (write-errors), or None when it was taken.
fn refused(m: &common::mount::Mounted, text: &str, file: &str) -> Option<String> {
    let before = m.refusals();
    let (code, _, err) = m.sh(&format!("echo '{text}' > $MNT/{file}"));
    let after = m.refusals();
    match code {
        0 => {
            assert_eq!(after, before, "{text} into {file}: taken, but write-errors grew");
            None
        }
        _ => Some(format!("{err}{}", after.strip_prefix(before.as_str()).unwrap_or(&after))),
    }
}

#[test]
fn unknown_block_states_and_items_are_refused_and_the_world_is_unchanged() {
    require_fuse_and_mc_oracle!("minecraft_registry::unknown_block_states_and_items_are_refused");
    let w = common::copy_world(&data("querz"));
    let before = oracle(w.path());
    let chest = before.iter().find(|l| l.starts_with("be ") && l.contains(" minecraft:chest ")).expect("a chest");
    let f: Vec<&str> = chest.split(' ').collect();
    let items = format!("chunks/{}/block_entities/{}/items", f[1], f[2]);
    let m = common::mount::Mounted::new(w.path(), &[]);
    // Chunk -8,-12 is DataVersion 2845 (a 1.18 pre-release: the 1.17
    // registry is the last at or below it); chunk 1,3 is 2230 (1.15.2).
    let why = refused(&m, "minecraft:not_a_block", "block/-128,-64,-192").expect("an unknown block");
    assert!(why.contains("minecraft:not_a_block is no block in 1.17 (DataVersion 2845)"), "{why}");
    let why = refused(&m, "minecraft:stone[foo=bar]", "block/-128,-64,-192").expect("an unknown property");
    assert!(
        why.contains("minecraft:stone has no property foo in 1.17 (DataVersion 2845); it has no properties"),
        "{why}"
    );
    let why = refused(&m, "minecraft:oak_stairs[facing=up]", "block/17,40,53").expect("an unknown value");
    assert!(
        why.contains(
            "minecraft:oak_stairs has no facing=up in 1.15 (DataVersion 2230); facing is one of north, south, west, east"
        ),
        "{why}"
    );
    let long = format!("minecraft:{}", "a".repeat(4990));
    let why = refused(&m, &long, "block/17,40,53").expect("a 5,000-character name");
    assert!(why.contains("(5000 characters) is no block in 1.15"), "{why}");
    // A block the game only knows from 1.20.3 on, into a 1.15 chunk.
    let why = refused(&m, "minecraft:short_grass", "block/17,40,53").expect("a later version's block");
    assert!(why.contains("the game knows it from 1.20.3 on"), "{why}");
    // In a drawing: refused naming its legend line.
    let sed = "sed -i 's/ minecraft:air$/ minecraft:not_a_block/' $MNT/chunks/1,3/sections/2/blocks";
    let (code, _, err) = m.sh(sed);
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("minecraft:not_a_block is no block in 1.15 (DataVersion 2230)"), "{}", m.refusals());
    // An item the game does not know, into a 1.17.1 chest.
    let (code, _, err) = m.sh(&format!("sed -i '$a 20 1 minecraft:not_an_item' $MNT/{items}"));
    assert_ne!(code, 0, "{err}");
    assert!(
        m.refusals().contains(
            "minecraft:not_an_item is no item in 1.17 (DataVersion 2730); the game would drop it when it loads"
        ),
        "{}",
        m.refusals()
    );
    // What the game knows, and other namespaces, are taken.
    assert_eq!(refused(&m, "minecraft:oak_stairs[facing=east,half=top]", "block/17,40,53"), None);
    assert_eq!(refused(&m, "mymod:crystal[glow=bright]", "block/-128,-64,-192"), None);
    m.ok(&format!("sed -i '$a 20 1 mymod:wand' $MNT/{items}"));
    m.unmount();
    let after = oracle(w.path());
    let (hb, ha) = (hashes(&before), hashes(&after));
    let changed: Vec<&String> = hb.keys().filter(|k| hb[*k] != ha[*k]).collect();
    assert_eq!(changed, vec!["-65,-42", "-8,-12", "1,3"], "only the accepted edits changed chunks");
    assert_eq!(block(&after, "1,3", 2, 8 * 256 + 5 * 16 + 1), "minecraft:oak_stairs[facing=east,half=top]");
    assert_eq!(block(&after, "-8,-12", -4, 0), "mymod:crystal[glow=bright]");
    let chest = after.iter().find(|l| l.starts_with(&format!("be {} {} ", f[1], f[2]))).unwrap();
    assert!(chest.ends_with(";20:1:mymod:wand") || chest.ends_with(" 20:1:mymod:wand"), "{chest}");
    assert!(!after.iter().any(|l| l.contains("not_a_block") || l.contains("not_an_item") || l.contains("aaaa")));
}

/// A player's inventory (amulet-nbt reads the file).
fn player_items(world: &Path) -> String {
    let file = world.join("playerdata/0000000b-0000-0016-0000-00210000002c.dat");
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, amulet_nbt as n; t = n.load(sys.argv[1]).compound\n\
                for i in t['Inventory']: print(i['Slot'].py_int, i['Count'].py_int, i['id'].py_str)",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_unknown_item_in_a_players_inventory_or_data_is_refused() {
    require_fuse_and_mc_oracle!("minecraft_registry::an_unknown_item_in_a_players_inventory");
    let w = common::copy_world(&data("made"));
    let before = player_items(w.path());
    let m = common::mount::Mounted::new(w.path(), &[]);
    let player = "players/0000000b-0000-0016-0000-00210000002c";
    let (code, _, err) = m.sh(&format!("sed -i '$a 7 1 minecraft:not_an_item' $MNT/{player}/inventory"));
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("minecraft:not_an_item is no item in 1.17 (DataVersion 2730)"), "{}", m.refusals());
    // The whole record as SNBT: an item added to the inventory there too.
    let sed = format!("sed -i 's/id: \"minecraft:[a-z_]*\"/id: \"minecraft:not_an_item\"/' $MNT/{player}/data");
    let (code, _, err) = m.sh(&sed);
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("Inventory: slot"), "{}", m.refusals());
    m.ok(&format!("sed -i '$a 7 1 minecraft:spyglass' $MNT/{player}/inventory"));
    m.unmount();
    assert_eq!(player_items(w.path()), format!("{before}7 1 minecraft:spyglass\n"));
}

/// A chunk's palette holding a name the game does not know (another
/// program put it there) is written back as it is: a no-op rewrite is
/// never refused, and an edit elsewhere in the section keeps it.
#[test]
fn names_a_chunk_already_holds_are_taken_back_as_they_are() {
    require_fuse_and_mc_oracle!("minecraft_registry::names_a_chunk_already_holds");
    use worldfs_codec::minecraft::nbt::Tag;
    let w = common::copy_world(&data("querz"));
    // Another program renames one palette entry of chunk 1,3's section 2.
    let regions = worldfs::worlds::minecraft::regions::Regions::new(w.path(), "region", None);
    let old = regions.read_chunk(1, 3).unwrap().unwrap();
    let (name, mut root) = worldfs_codec::minecraft::nbt::decode(&old).unwrap();
    let level = root.compound_mut("Level").unwrap();
    let Some(Tag::List(sections)) = level.get_mut("Sections") else { panic!("no Sections") };
    let section = sections.items.iter_mut().find_map(|t| match t {
        Tag::Compound(c) if c.int("Y") == Some(2) => Some(c),
        _ => None,
    });
    let Some(Tag::List(palette)) = section.unwrap().get_mut("Palette") else { panic!("no Palette") };
    let Some(Tag::Compound(entry)) =
        palette.items.iter_mut().find(|t| matches!(t, Tag::Compound(c) if c.string("Name") == Some("minecraft:stone")))
    else {
        panic!("no stone in the palette")
    };
    entry.insert("Name", Tag::String("minecraft:old_stone".into()));
    let new = worldfs_codec::minecraft::nbt::encode(&name, &root).unwrap();
    let note = worldfs_store::Note::new("another program");
    regions.write_chunk(1, 3, &old, &new, &note).unwrap();
    let before = oracle(w.path());
    let odd = before.iter().find(|l| l.starts_with("section 1,3 2 ")).unwrap();
    let at = odd.splitn(4, ' ').nth(3).unwrap().split(' ').position(|b| b == "minecraft:old_stone").unwrap();
    let place = format!("{},{},{}", 16 + at % 16, 32 + at / 256, 48 + at / 16 % 16);
    let m = common::mount::Mounted::new(w.path(), &[]);
    let blocks = "chunks/1,3/sections/2/blocks";
    m.ok(&format!("cat $MNT/{blocks} > /tmp/$$.b && cat /tmp/$$.b > $MNT/{blocks}; rm -f /tmp/$$.b"));
    m.ok(&format!("echo minecraft:old_stone > $MNT/block/{place}"));
    // An edit of another block of the section: the odd entry stays.
    m.ok("echo minecraft:gold_block > $MNT/block/17,40,53");
    // Into another section of the chunk: the chunk holds the name.
    m.ok("echo minecraft:old_stone > $MNT/block/16,0,48");
    m.unmount();
    let after = oracle(w.path());
    assert_eq!(block(&after, "1,3", 2, at), "minecraft:old_stone");
    assert_eq!(block(&after, "1,3", 2, 8 * 256 + 5 * 16 + 1), "minecraft:gold_block");
    assert_eq!(block(&after, "1,3", 0, 0), "minecraft:old_stone");
}
