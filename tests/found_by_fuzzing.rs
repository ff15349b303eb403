//! Problems the fuzz targets (fuzz/) found, kept as tests that run in CI.
//! The inputs themselves are in fuzz/regressions/ for the fuzz harness.

use worldfs::view::{parse, render};
use worldfs_codec::luanti::block::Block;
use worldfs_codec::luanti::itemstring::ItemStack;
use worldfs_codec::luanti::nodemeta::{MetaEntry, MetaList, MetaVar};
use worldfs_codec::luanti::objects::{LUA_ENTITY, LuaEntity, StaticObject};
use worldfs_store::BlockPos;

/// `\u0001\u0002\u0003` is an empty item metadata pair: the engine drops it
/// when it writes the item, so accepting it would not read back the same.
#[test]
fn empty_item_metadata_pair_is_refused() {
    let e = ItemStack::parse_strict(b"default:pick_stone 1 7 \"\\u0001\\u0002\\u0003\"").unwrap_err();
    assert!(e.message.contains("empty item metadata pair"), "{}", e.message);
    assert!(ItemStack::parse_strict(b"default:pick_stone 1 7 \"\\u0001a\\u0002\\u0003\"").is_ok());
}

/// Coordinates near the ends of i32 used to overflow in the subtraction
/// that finds the node inside the block.
#[test]
fn extreme_coordinates_are_an_error_not_an_overflow() {
    let pos = BlockPos::new(0, 0, 0);
    let mut b = Block::new_air(29);
    let e = parse::apply_nodes(pos, &mut b, b"2147483647 -2147483648 0 air 0 0\n").unwrap_err();
    assert!(e.message.contains("is not in block"), "{}", e.message);
    let e = parse::apply_timers(pos, &mut b, b"-2147483648 2147483647 0 1 0\n").unwrap_err();
    assert!(e.message.contains("is not in block"), "{}", e.message);
}

/// A 32-byte guid of non-ASCII text used to panic on a char boundary.
#[test]
fn non_ascii_guid_is_an_error_not_a_panic() {
    let mut b = Block::new_air(29);
    let line = "lua_entity 0,0,0 a hp=1 velocity=0,0,0 yaw=0 pitch=0 roll=0 guid=éééééééééééééééé staticdata=\"\"\n";
    let e = parse::apply_objects(&mut b, line.as_bytes()).unwrap_err();
    assert!(e.message.contains("guid"), "{}", e.message);
}

/// A node literally named `?5` must be written quoted, since plain `?5`
/// stands for "content id 5 without a name".
#[test]
fn question_mark_names_read_back() {
    // (Not a name a mod can register, so only a block that holds it
    // already can be edited with it.)
    let mut b = Block::new_air(29);
    assert!(parse::apply_names(&mut b.clone(), b"0 \"?5\"\n").is_err());
    b.mapping[0].name = b"?5".to_vec();
    let names = render::render_names(&b);
    assert_eq!(names, b"0 \"?5\"\n");
    let mut c = b.clone();
    parse::apply_names(&mut c, &names).unwrap();
    assert_eq!(b, c);
    let node = render::render_node(&b, 0);
    parse::apply_node(&mut c, 0, &node).unwrap();
    assert_eq!(b, c);
}

/// An entity with an empty name (a mod can store one) renders as `""` and
/// reads back.
#[test]
fn entity_with_empty_name_reads_back() {
    let e = LuaEntity {
        name: Vec::new(),
        staticdata: Vec::new(),
        hp: 1,
        velocity: [0; 3],
        yaw: 0,
        pitch_roll: None,
        guid: None,
    };
    let mut b = Block::new_air(29);
    b.objects.objects.push(StaticObject { kind: LUA_ENTITY, pos: [1000, 2000, 3000], data: e.encode() });
    let text = render::render_objects(&b);
    assert!(text.windows(4).any(|w| w == b" \"\" "), "{}", String::from_utf8_lossy(&text));
    let mut c = b.clone();
    parse::apply_objects(&mut c, &text).unwrap();
    assert_eq!(b.objects, c.objects);
}

/// A metadata list of version 2 inside a block older than 28 (the engine
/// reads it) must encode back as it was, private flags included.
#[test]
fn metadata_list_v2_in_old_block_round_trips() {
    let mut m = MetaList { version: 2, entries: vec![MetaEntry::new(7)] };
    m.entries[0].vars.push(MetaVar { key: b"k".to_vec(), value: b"v".to_vec(), private: false });
    assert_eq!(m.version_for(25), 2);
    let mut b = Block::new_air(25);
    b.metadata = m;
    let back = Block::decode(&b.encode().unwrap()).unwrap();
    assert_eq!(back.metadata, b.metadata);
}

/// A block older than 27 has no lighting_complete field: setting it in
/// `info` alone would give a block that cannot be written.
#[test]
fn lighting_complete_refused_in_old_versions() {
    let mut b = Block::new_air(25);
    let e = parse::apply_info(&mut b, b"lighting_complete = 0x1234\n").unwrap_err();
    assert!(e.message.contains("does not store lighting_complete"), "{}", e.message);
    assert_eq!(b.lighting_complete, 0xffff);
    parse::apply_info(&mut b, b"lighting_complete = 0xffff\n").unwrap();
}

/// `records`: a LevelDB player value with the metadata key "" twice decoded
/// to one key and was written back two entries shorter. Repeated keys are
/// refused; keys in any other order (the engine writes its unordered map as
/// it iterates) come back in the order stored.
#[test]
fn player_value_with_repeated_metadata_key_is_refused() {
    use worldfs_codec::luanti::player::Player;
    let value =
        hex("01f72b008000f701f33b0000000b7a080c0000000201000000000000020000000000000000000000000000000001f72b00");
    let e = Player::decode(&value).unwrap_err();
    assert!(e.contains("appears twice"), "{e}");
    // Two different keys, "b" before "a": decoded and written back as stored.
    let mut unsorted = value[..25].to_vec();
    unsorted.extend_from_slice(&[0, 0, 0, 2, 0, 1, b'b', 0, 0, 0, 1, b'1', 0, 1, b'a', 0, 0, 0, 0]);
    unsorted.extend_from_slice(b"EndInventory\n");
    let p = Player::decode(&unsorted).unwrap();
    assert_eq!(p.meta.keys().collect::<Vec<_>>(), [b"b", b"a"]);
    assert_eq!(p.encode(), unsorted);
}

/// The same property for mod storage's canonical form, which worldfs
/// writes sorted: a repeated or out-of-order key is refused.
#[test]
fn mod_storage_value_with_repeated_key_is_refused() {
    use worldfs_codec::luanti::mod_storage::ModStorage;
    let entry = |k: &[u8]| [&(k.len() as u32).to_be_bytes()[..], k, &0u32.to_be_bytes()].concat();
    let repeated = [&2u32.to_be_bytes()[..], &entry(b"k"), &entry(b"k")].concat();
    assert!(ModStorage::decode(&repeated).unwrap_err().contains("out of order or repeated"));
    let unsorted = [&2u32.to_be_bytes()[..], &entry(b"b"), &entry(b"a")].concat();
    assert!(ModStorage::decode(&unsorted).is_err());
    let sorted = [&2u32.to_be_bytes()[..], &entry(b"a"), &entry(b"b")].concat();
    assert_eq!(ModStorage::decode(&sorted).unwrap().encode(), sorted);
}

/// `mts_decode`: a schematic whose name table holds one name twice
/// ("mcl_walls:stonebrick_0" as ids 7 and 19; the engine reads it, both
/// ids becoming the same node). Its `nodes` and `layers` files name nodes,
/// and applying them unchanged moved the nodes of id 19 to id 7 and
/// renumbered the table. A name that is the node's own keeps its id now.
#[test]
fn mts_with_a_repeated_name_applies_to_itself() {
    use worldfs::documents::mts::{MtsDocument, view};
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/mts_decode/names-repeated-good-checksum");
    let mut d = MtsDocument::decode(data, &Context::default()).unwrap();
    let s = d.schematic.clone();
    assert_eq!((&s.names[7], &s.names[19]), (&s.names[19], &b"mcl_walls:stonebrick_0".to_vec()));
    assert!(s.param0.contains(&7) && s.param0.contains(&19), "both ids are used");
    for (file, _) in view::FILES.iter().filter(|(_, writable)| *writable) {
        let content = d.render(file).unwrap();
        d.apply(file, &content).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(d.schematic, s, "{file} applied to itself changed the schematic");
        assert_eq!(d.encode().unwrap(), data, "{file}");
    }
    // A real edit renumbers as the engine writes a loaded schematic: the
    // two ids are one node there, so they become one.
    let nodes = String::from_utf8(d.render("nodes").unwrap()).unwrap();
    let edited = nodes.replacen("\n0 5 0 air 0 0\n", "\n0 5 0 mcl_core:cobble 127 0\n", 1);
    assert!(edited != nodes, "the edit applies");
    d.apply("nodes", edited.as_bytes()).unwrap();
    let t = &d.schematic;
    assert_eq!(t.names.iter().filter(|n| *n == b"mcl_walls:stonebrick_0").count(), 1);
    let walls = |x: &worldfs::documents::mts::Schematic| {
        (0..x.volume()).filter(|&i| x.name_at(i) == b"mcl_walls:stonebrick_0").count()
    };
    assert_eq!(walls(t), walls(&s));
}

/// `mts_decode`: the same file as the fuzzer wrote it has a wrong adler32
/// after its node data. The engine's zlib refuses it ("incorrect data
/// check", decompressZlib throws), so worldfs must refuse it too. (Under
/// `cargo fuzz` miniz_oxide skips the check, which is how the fuzzer got
/// past it.)
#[test]
fn mts_with_a_bad_zlib_checksum_is_refused() {
    use worldfs::documents::mts::Schematic;
    let data = include_bytes!("../fuzz/regressions/mts_decode/crash-9663621edbefbb1ddfa70c98a23df666d9182f52");
    let e = Schematic::decode(data).unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
}

/// `mts_decode`: a schematic whose name table holds an empty name decoded
/// (the engine reads it and places air for the name it cannot resolve),
/// and its `names` file showed it as `""` but refused `""` when written
/// back ("empty node name"). A name the table already holds is now taken
/// back as it is; a new empty name is still refused.
#[test]
fn mts_with_an_empty_name_applies_to_itself() {
    use worldfs::documents::mts::{MtsDocument, view};
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/mts_decode/empty-name-good-checksum");
    let mut d = MtsDocument::decode(data, &Context::default()).unwrap();
    let s = d.schematic.clone();
    let empty = s.names.iter().position(|n| n.is_empty()).expect("the table holds an empty name");
    let names = String::from_utf8(d.render("names").unwrap()).unwrap();
    assert!(names.contains(&format!("\n{empty} \"\"\n")), "{names}");
    let mut checked = 0;
    for (file, _) in view::FILES.iter().filter(|(_, writable)| *writable) {
        let content = d.render(file).unwrap();
        d.apply(file, &content).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(d.schematic, s, "{file} applied to itself changed the schematic");
        assert_eq!(d.encode().unwrap(), data, "{file}");
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} writable files");
    // In a table without an empty name, naming a node "" is still refused.
    let mut plain = MtsDocument::decode(&d.encode().unwrap(), &Context::default()).unwrap();
    plain.schematic = worldfs::documents::mts::Schematic::new_air([1, 1, 1]).unwrap();
    let e = plain.apply("names", b"0 \"\"\n").unwrap_err();
    assert!(e.to_string().contains("empty node name"), "{e}");
}

/// `mts_decode`: a 5 x 16 x 5 pine tree with 80 node kinds (probabilities
/// and param2 values) draws its `layers` with 'y', '=' and '2' in the
/// legend, so a row read "y=2Wf" and was taken for a level line ("level
/// y=12 has 2 rows; it needs 5"). A level short of rows now takes a line
/// of legend characters as a row. The file's node data is also longer than
/// the size needs, which the engine reads (the fuzzer's copy had a wrong
/// adler32; this one has it right).
#[test]
fn mts_layers_with_a_row_like_a_level_line_apply_to_themselves() {
    use worldfs::documents::mts::{MtsDocument, view};
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/mts_decode/layers-row-like-a-level-line-good-checksum");
    let mut d = MtsDocument::decode(data, &Context::default()).unwrap();
    let s = d.schematic.clone();
    let layers = String::from_utf8(d.render("layers").unwrap()).unwrap();
    let at = layers.find("\ny=12\n").expect("level 12");
    assert!(layers[at..].lines().nth(4) == Some("y=2Wf"), "{}", &layers[at..at + 40]);
    for (file, _) in view::FILES.iter().filter(|(_, writable)| *writable) {
        let content = d.render(file).unwrap();
        d.apply(file, &content).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(d.schematic, s, "{file} applied to itself changed the schematic");
        assert_eq!(d.encode().unwrap(), data, "{file}");
    }
}

/// A cubeset connector with `Direction = 41` decoded, and the piece's
/// `connectors` file then refused its own content ("direction 41 is not 0
/// to 13"). Cuberite refuses such a piece, and so does the decode now,
/// naming the connector.
#[test]
fn a_cubeset_connector_direction_out_of_range_is_refused_at_decode() {
    use worldfs::documents::cubeset::Cubeset;
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/cubeset/cubeset-crash-3268255b3cac95e53365a2bcd675cdd8a957cc80");
    let Err(e) = Cubeset::decode(data, &Context::default()) else { panic!("direction 41 decoded") };
    assert!(e.to_string().contains("direction 41 is not 0 to 13"), "{e}");
    assert!(e.to_string().contains("connector "), "the connector is named: {e}");
}

/// A cubeset connector with `Type = .1` decoded (a Lua number), and the
/// piece's `connectors` file, which takes whole numbers, refused its own
/// content. Cuberite would cut it to 0 silently; the decode now refuses
/// it, naming the connector and the value.
#[test]
fn a_cubeset_connector_type_that_is_not_whole_is_refused_at_decode() {
    use worldfs::documents::cubeset::Cubeset;
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/cubeset/cubeset-crash-f39b2b90197783fcc25c51af2a62bbce23a2fda2");
    let Err(e) = Cubeset::decode(data, &Context::default()) else { panic!("Type = .1 decoded") };
    assert!(e.to_string().contains("connector 10: Type '.1' is not a whole number"), "{e}");
}

/// A cubeset whose BlockDefinitions define one character twice decoded,
/// and the piece's `legend` then refused its own content ("'e' is defined
/// twice"). Cuberite asserts each character is defined once; the decode
/// now refuses it, naming the definition.
#[test]
fn a_cubeset_character_defined_twice_is_refused_at_decode() {
    use worldfs::documents::cubeset::Cubeset;
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/cubeset/cubeset-crash-8881db1b4df55dd9cfc39ed2d5f271a20f8a5b0c");
    let Err(e) = Cubeset::decode(data, &Context::default()) else { panic!("a character defined twice decoded") };
    assert!(e.to_string().contains("'e' is defined twice"), "{e}");
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A cubeset whose BlockDefinitions give a meta of 16 decoded, and its
/// piece's `legend` then refused its own content ("meta '16' is not a
/// number 0 to 15"): what is shown could not be written back. The
/// definitions are now held to the legend's ranges at decode, with the
/// line named.
#[test]
fn a_cubeset_meta_out_of_range_is_refused_at_decode() {
    use worldfs::documents::cubeset::Cubeset;
    use worldfs::documents::{Context, Document};
    let data = include_bytes!("../fuzz/regressions/cubeset/cubeset-crash-0f58d1e0dad9ceea6d0f9ed3a401dd6e92147aa5");
    let Err(e) = Cubeset::decode(data, &Context::default()) else { panic!("meta 16 decoded") };
    assert!(e.to_string().contains("meta 16 is not 0 to 15"), "{e}");
    // The same set with the meta in range decodes, and every file takes
    // its own content back.
    let fixed = String::from_utf8_lossy(data).replace("g:171:16", "g:171:15");
    let doc = Cubeset::decode(fixed.as_bytes(), &Context::default()).expect("meta 15 decodes");
    let mut d = Cubeset::decode(fixed.as_bytes(), &Context::default()).unwrap();
    for e in doc.entries().into_iter().filter(|e| !e.dir && e.writable) {
        let c = doc.render(&e.path).unwrap();
        d.apply(&e.path, &c).unwrap_or_else(|err| panic!("{}: its own content refused: {err}", e.path));
    }
}

/// Chunk data whose palette held a state twice (real servers' chunks do:
/// a Hypixel chunk among the samples) re-encoded with every block pointing
/// at the state's first copy, so the bytes changed. Which copy each block
/// points at is now kept. A VarInt not in its shortest form (`80 00` for
/// 0), which would re-encode shorter, is refused, naming the byte.
#[test]
fn a_chunk_re_encodes_to_its_bytes_when_its_palette_repeats_a_state() {
    use worldfs_codec::minecraft::packet::{Chunk, Layout, Shape};
    let data = include_bytes!("../fuzz/regressions/mcchunk/mcchunk-crash-42e1675064b2cec1ad3fe148347756f4efaacd35");
    let [l, mask, rest @ ..] = &data[..] else { unreachable!() };
    let layout = if l & 1 == 0 { Layout::Spanning } else { Layout::Padded };
    let shape = Shape { layout, bitmap: *mask as u32 & 0x3f, sky_light: l & 2 == 0, biomes: l & 4 == 0 };
    let chunk = Chunk::decode(rest, shape).expect("it decodes");
    let palette = &chunk.sections[0].palette;
    assert!((1..palette.len()).any(|i| palette[..i].contains(&palette[i])), "the sample repeats a state");
    assert!(chunk.encode(shape).unwrap() == rest, "re-encoding changed the bytes");
    // One padded section: block count, 4 bits, a palette length of `80 00`.
    let padded = [0u8, 0, 4, 0x80, 0x00];
    let e = Chunk::decode(&padded, Shape { layout: Layout::Padded, bitmap: 1, sky_light: false, biomes: false })
        .unwrap_err();
    assert!(e.contains("shortest form"), "{e}");
}

/// Decode a Java chunk the fuzzer made, write every writable file back as
/// it is shown and check that the chunk did not change; `at_least` files
/// must have been written.
fn java_chunk_writes_back_unchanged(data: &[u8], at_least: usize) -> worldfs::worlds::minecraft::chunk::ChunkDoc {
    use worldfs::documents::{Context, Document};
    use worldfs::worlds::minecraft::chunk::ChunkDoc;
    let mut doc = ChunkDoc::decode(data, &Context::default()).expect("the chunk decodes");
    let mut written = 0;
    for e in doc.entries().into_iter().filter(|e| e.writable && !e.dir) {
        if let Ok(content) = doc.render(&e.path) {
            doc.apply(&e.path, &content).unwrap_or_else(|err| panic!("{}: {err}", e.path));
            written += 1;
        }
    }
    assert!(written >= at_least, "only {written} files written back");
    assert_eq!(doc.encode().unwrap(), data, "writing the files back changed the chunk");
    doc
}

/// `mc_nbt`: a Java chunk whose palette names `mine)raft:bedrock` (not an
/// id the game writes) decoded, and its section's `blocks` file showed the
/// name but refused it when written back ("is not a block id"). A state the
/// palette already holds is now taken back as it is; a new such name is
/// still refused.
#[test]
fn a_java_chunk_takes_back_its_own_odd_palette_names() {
    use worldfs::documents::Document;
    let data = include_bytes!("../fuzz/regressions/mc_nbt/mc_nbt-crash-65890d61e47cddc39db5b13b8e784e22ca59161b");
    let mut doc = java_chunk_writes_back_unchanged(data, 10);
    let blocks = "sections/-4/blocks";
    let shown = String::from_utf8(doc.render(blocks).unwrap()).unwrap();
    assert!(shown.contains("mine)raft:bedrock"), "{shown}");
    let new_odd = shown.replacen("mine)raft:bedrock", "mine)raft:stone", 1);
    let e = doc.apply(blocks, new_odd.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("is not a block id"), "{e}");
}

/// `mc_nbt` again: the same for a biome (`miSpawnYt:stony_shore` in a
/// section's biome palette): `biomes` takes back what it shows.
#[test]
fn a_java_chunk_takes_back_its_own_odd_biome_names() {
    use worldfs::documents::Document;
    let data = include_bytes!("../fuzz/regressions/mc_nbt/mc_nbt-crash-3eec18ee818b0167606b4f2c215013453a510677");
    let mut doc = java_chunk_writes_back_unchanged(data, 1);
    let biomes = "sections/6/biomes";
    let shown = String::from_utf8(doc.render(biomes).unwrap()).unwrap();
    assert!(shown.contains("miSpawnYt:stony_shore"), "{shown}");
    let new_odd = shown.replacen("miSpawnYt:stony_shore", "miSpawnYt:plains", 1);
    let e = doc.apply(biomes, new_odd.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("is not a biome id"), "{e}");
}

/// `mc_nbt`, third: a palette state named `minecraft:diamond_` newline
/// `re`. Its legend line broke in two, and the `blocks` file was refused
/// when written back ("a legend line is one character, a space, ...").
/// A name, key or value a line cannot carry is now quoted with SNBT's
/// escapes, in `blocks` and in `palette`, and taken back as it is.
#[test]
fn a_java_chunk_takes_back_a_palette_name_holding_a_newline() {
    use worldfs::documents::Document;
    let data = include_bytes!("../fuzz/regressions/mc_nbt/mc_nbt-crash-6c0fe9fec3969c05a0a88374914cfcb4d4ea1211");
    let mut doc = java_chunk_writes_back_unchanged(data, 10);
    let quoted = r#""minecraft:diamond_\nre""#;
    for file in ["blocks", "palette"] {
        let shown = String::from_utf8(doc.render(&format!("sections/0/{file}")).unwrap()).unwrap();
        assert!(shown.lines().any(|l| l.ends_with(&format!(" {quoted}"))), "{file}: {shown}");
    }
    // A quoted name that the palette does not hold is not a new block id.
    let shown = String::from_utf8(doc.render("sections/0/blocks").unwrap()).unwrap();
    let e = doc.apply("sections/0/blocks", shown.replacen("diamond_", "emerald_", 1).as_bytes()).unwrap_err();
    assert!(e.to_string().contains("is not a block id"), "{e}");
}

/// `mc_nbt`: a chunk whose compound held the key `Sections` twice decoded
/// (NBT files can hold that; the game reads a compound into a map and
/// keeps only the last), and its SNBT text, which cannot hold a key twice,
/// did not read back. Such a compound is now refused at decode, naming
/// the key.
#[test]
fn an_nbt_compound_with_a_key_twice_is_refused() {
    use worldfs_codec::minecraft::nbt;
    let data = include_bytes!("../fuzz/regressions/mc_nbt/mc_nbt-crash-8fde077ba0831cdb5f3527bd4b3633abdf45eb1d");
    let e = nbt::decode(data).unwrap_err();
    assert!(e.contains("holds the key 'Sections' twice"), "{e}");
    // Two different keys are fine; the same key twice is not.
    let two = |a: &str, b: &str| {
        let mut f = vec![10u8, 0, 0];
        for k in [a, b] {
            f.extend_from_slice(&[1, 0, k.len() as u8]);
            f.extend_from_slice(k.as_bytes());
            f.push(7);
        }
        f.push(0);
        f
    };
    assert!(nbt::decode(&two("a", "b")).is_ok());
    assert!(nbt::decode(&two("a", "a")).unwrap_err().contains("'a' twice"));
}
