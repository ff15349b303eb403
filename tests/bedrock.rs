//! Minecraft Bedrock worlds (tests/data/bedrock/, README there): every
//! chunk, subchunk and block entity the mount shows agrees with an
//! independent reader (bedrock-provider's prismarine-chunk and Mojang's
//! LevelDB through leveldb-zlib, tests/scripts/bedrock_oracle.js); edits
//! through the mount are read back by that reader, change nothing else and
//! are undone exactly.

use crate::common;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/bedrock");

/// The test worlds, each unpacked (or copied) into a directory of its own.
pub fn worlds() -> Vec<(String, tempfile::TempDir)> {
    let mut out = Vec::new();
    for n in ["example1", "example2", "example3"] {
        let d = tempfile::tempdir().unwrap();
        let zip = format!("{DATA}/{n}.mcworld");
        let st = Command::new("python3").args(["-m", "zipfile", "-e", &zip]).arg(d.path()).status().unwrap();
        assert!(st.success(), "unpacking {zip}");
        out.push((n.to_string(), d));
    }
    out.push(("prismarine".into(), common::copy_world(Path::new(&format!("{DATA}/prismarine")))));
    out
}

pub fn oracle_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WORLDFS_NPM_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-oracle"));
    let ok = dir.join("node_modules/bedrock-provider").is_dir()
        && dir.join("node_modules/leveldb-zlib").is_dir()
        && common::mount::which("node").is_some();
    ok.then_some(dir)
}

/// The reader's output for world `dir` in `mode` ("keys" or "world"), run
/// on a copy of its db/ (opening a LevelDB database may write to it).
pub fn oracle(npm: &Path, dir: &Path, mode: &str) -> String {
    let copy = tempfile::tempdir().unwrap();
    common::copy_dir(&dir.join("db"), copy.path());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/bedrock_oracle.js");
    let out = Command::new("node").arg(script).arg(npm).arg(mode).arg(copy.path()).output().unwrap();
    assert!(out.status.success(), "bedrock_oracle.js: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

macro_rules! need_oracle {
    ($test:expr) => {
        match oracle_dir() {
            Some(d) => d,
            None => {
                common::skip(
                    $test,
                    "bedrock",
                    "no bedrock-provider/leveldb-zlib (contrib/test.sh installs them into target/npm-oracle)",
                );
                return;
            }
        }
    };
}

/// Every key and value, hex, as the reader gives them.
fn reader_keys(npm: &Path, dir: &Path) -> BTreeMap<String, String> {
    oracle(npm, dir, "keys")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every key and value as the store reads them.
fn store_keys(dir: &Path) -> BTreeMap<String, String> {
    let db = worldfs_store::leveldb::bedrock::BedrockDb::open(&dir.join("db"), true).unwrap();
    db.page(None, usize::MAX, true).unwrap().into_iter().map(|(k, v)| (hex(&k), hex(&v))).collect()
}

#[test]
fn the_store_reads_every_key_and_value_the_reader_does() {
    let npm = need_oracle!("the_store_reads_every_key_and_value_the_reader_does");
    for (name, w) in worlds() {
        let ours = store_keys(w.path());
        let theirs = reader_keys(&npm, w.path());
        assert!(ours.len() > 100, "{name}: {} keys", ours.len());
        assert_eq!(ours.len(), theirs.len(), "{name}: key counts");
        for (k, v) in &theirs {
            assert_eq!(ours.get(k), Some(v), "{name}: key {k}");
        }
    }
}

/// The directory of chunk `dim:x,z` in a mount.
pub fn chunk_dir(mnt: &Path, chunk: &str) -> PathBuf {
    let (dim, xz) = chunk.split_once(':').unwrap();
    match dim {
        "0" => mnt.join("chunks").join(xz),
        "1" => mnt.join("dimensions/nether/chunks").join(xz),
        "2" => mnt.join("dimensions/end/chunks").join(xz),
        d => panic!("dimension {d}"),
    }
}

/// A drawn layer's label of each block, x * 256 + z * 16 + y.
fn drawn_labels(text: &str, cx: i64, y: i64, cz: i64) -> Vec<String> {
    use worldfs::view::layers::{Frame, Rows, parse};
    let frame = Frame { size: [16, 16, 16], origin: [16 * cx, 16 * y, 16 * cz], rows: Rows::ZAscending };
    let d = parse(&frame, text).unwrap();
    (0..4096).map(|i| d.legend[d.at(i >> 8, i & 15, (i >> 4) & 15)].label.clone()).collect()
}

/// The reader's labels of a layer, x * 256 + z * 16 + y.
fn reader_labels(layer: &Value) -> Vec<String> {
    let palette: Vec<&str> = layer["palette"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    layer["indices"].as_str().unwrap().split(',').map(|i| palette[i.parse::<usize>().unwrap()].to_string()).collect()
}

#[test]
fn every_chunk_subchunk_and_block_entity_agrees_with_the_reader() {
    let npm = need_oracle!("every_chunk_subchunk_and_block_entity_agrees_with_the_reader");
    require_fuse!("every_chunk_subchunk_and_block_entity_agrees_with_the_reader");
    for (name, w) in worlds() {
        let reader: Value = serde_json::from_str(&oracle(&npm, w.path(), "world")).unwrap();
        let m = common::mount::Mounted::new(w.path(), &["ro"]);
        // Every chunk with a version key is listed.
        for c in reader["chunks"].as_array().unwrap() {
            assert!(chunk_dir(&m.mnt, c.as_str().unwrap()).is_dir(), "{name}: chunk {c}");
        }
        let mut layers = 0;
        for (key, sub) in reader["subchunks"].as_object().unwrap() {
            let (chunk, y) = key.rsplit_once(':').unwrap();
            let (cx, cz) = chunk.split_once(':').unwrap().1.split_once(',').unwrap();
            let (cx, cz, y): (i64, i64, i64) = (cx.parse().unwrap(), cz.parse().unwrap(), y.parse().unwrap());
            let dir = chunk_dir(&m.mnt, chunk).join(format!("sections/{y}"));
            for (l, layer) in sub["layers"].as_array().unwrap().iter().enumerate() {
                let file = dir.join(if l == 0 { "blocks" } else { "waterlog" });
                let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {}: {e}", file.display()));
                assert_eq!(drawn_labels(&text, cx, y, cz), reader_labels(layer), "{name}: {}", file.display());
                layers += 1;
            }
        }
        assert!(layers > 50, "{name}: {layers} layers compared");
        let mut entities = 0;
        for (chunk, list) in reader["block_entities"].as_object().unwrap() {
            let dir = chunk_dir(&m.mnt, chunk).join("block_entities");
            for be in list.as_array().unwrap() {
                let v = &be["value"];
                let pos = format!("{},{},{}", v["x"]["value"], v["y"]["value"], v["z"]["value"]);
                let id = std::fs::read_to_string(dir.join(&pos).join("id")).unwrap();
                assert_eq!(id.trim_end(), v["id"]["value"].as_str().unwrap(), "{name}: {chunk} {pos}");
                let data = std::fs::read_to_string(dir.join(&pos).join("data")).unwrap();
                let shown = worldfs_codec::minecraft::snbt::parse(&data).unwrap();
                let mut expected = reader_compound(be);
                expected.0.retain(|(k, _)| !["id", "x", "y", "z", "Items"].contains(&k.as_str()));
                assert_eq!(shown, expected, "{name}: {chunk} {pos} data");
                entities += 1;
            }
        }
        if name != "prismarine" {
            assert!(entities > 0, "{name}: no block entities compared");
        }
    }
}

/// prismarine-nbt's typed JSON of a compound as worldfs's NBT tree.
pub fn reader_compound(v: &Value) -> worldfs_codec::minecraft::nbt::Compound {
    match reader_tag(v) {
        worldfs_codec::minecraft::nbt::Tag::Compound(c) => c,
        other => panic!("not a compound: {other:?}"),
    }
}

fn reader_tag(v: &Value) -> worldfs_codec::minecraft::nbt::Tag {
    use worldfs_codec::minecraft::nbt::{Compound, List, Tag};
    let val = &v["value"];
    let long = |x: &Value| {
        let a = x.as_array().unwrap();
        (a[0].as_i64().unwrap() << 32) | (a[1].as_i64().unwrap() & 0xffff_ffff)
    };
    match v["type"].as_str().unwrap() {
        "byte" => Tag::Byte(val.as_i64().unwrap() as i8),
        "short" => Tag::Short(val.as_i64().unwrap() as i16),
        "int" => Tag::Int(val.as_i64().unwrap() as i32),
        "long" => Tag::Long(long(val)),
        "float" => Tag::Float(val.as_f64().unwrap() as f32),
        "double" => Tag::Double(val.as_f64().unwrap()),
        "string" => Tag::String(val.as_str().unwrap().to_string()),
        "byteArray" => Tag::ByteArray(val.as_array().unwrap().iter().map(|b| b.as_i64().unwrap() as i8).collect()),
        "intArray" => Tag::IntArray(val.as_array().unwrap().iter().map(|b| b.as_i64().unwrap() as i32).collect()),
        "longArray" => Tag::LongArray(val.as_array().unwrap().iter().map(long).collect()),
        "compound" => {
            Tag::Compound(Compound(val.as_object().unwrap().iter().map(|(k, t)| (k.clone(), reader_tag(t))).collect()))
        }
        "list" => {
            let ty = val["type"].as_str().unwrap();
            let items: Vec<Tag> = match &val["value"] {
                Value::Array(a) => a.iter().map(|x| reader_tag(&serde_json::json!({"type": ty, "value": x}))).collect(),
                _ => Vec::new(),
            };
            let elem = match ty {
                "end" => 0,
                "byte" => 1,
                "short" => 2,
                "int" => 3,
                "long" => 4,
                "float" => 5,
                "double" => 6,
                "byteArray" => 7,
                "string" => 8,
                "list" => 9,
                "compound" => 10,
                "intArray" => 11,
                _ => 12,
            };
            Tag::List(List { elem, items })
        }
        t => panic!("type {t}"),
    }
}

/// The first block entity of kind `id` in a mount's overworld, and its
/// chunk's name.
fn first_block_entity(mnt: &Path, id: &str) -> (String, PathBuf) {
    let mut chunks: Vec<_> = std::fs::read_dir(mnt.join("chunks")).unwrap().map(|e| e.unwrap().path()).collect();
    chunks.sort();
    for c in chunks {
        let Ok(rd) = std::fs::read_dir(c.join("block_entities")) else { continue };
        let mut bes: Vec<_> = rd.map(|e| e.unwrap().path()).collect();
        bes.sort();
        if let Some(be) = bes.into_iter().find(|b| std::fs::read_to_string(b.join("id")).unwrap().trim() == id) {
            return (c.file_name().unwrap().to_string_lossy().into_owned(), be);
        }
    }
    panic!("no {id} in {}", mnt.display());
}

/// Write a file of the mount and fsync it, so that a refusal (which the
/// mount reports at fsync or close, and Rust ignores at close) is seen.
fn write(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path)?;
    f.write_all(content.as_bytes())?;
    f.sync_all()
}

fn worldfs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_worldfs"))
}

/// The keys whose values differ between two readings (or that one lacks).
fn changed_keys(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut keys: Vec<String> = a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).cloned().collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The reader's Data of a block entity at `pos` ("x,y,z") of chunk `chunk`.
fn reader_block_entity(reader: &Value, chunk: &str, pos: &str) -> worldfs_codec::minecraft::nbt::Compound {
    let list = reader["block_entities"][format!("0:{chunk}")].as_array().unwrap();
    let be = list
        .iter()
        .find(|b| {
            format!("{},{},{}", b["value"]["x"]["value"], b["value"]["y"]["value"], b["value"]["z"]["value"]) == pos
        })
        .unwrap();
    reader_compound(be)
}

#[test]
fn edits_through_the_mount_are_read_back_by_the_reader_and_undone_exactly() {
    use worldfs_codec::minecraft::nbt::Tag;
    let test = "edits_through_the_mount_are_read_back_by_the_reader_and_undone_exactly";
    let npm = need_oracle!(test);
    require_fuse!(test);
    let (_, w) = worlds().into_iter().next().unwrap(); // example1: chests and signs
    let before = reader_keys(&npm, w.path());
    let level_before = std::fs::read(w.path().join("level.dat")).unwrap();
    let m = common::mount::Mounted::new(w.path(), &[]);
    // A block: the lowest block of chunk 31,10's lowest subchunk.
    let sections = m.mnt.join("chunks/31,10/sections");
    let y: i64 = std::fs::read_dir(&sections)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
        .min()
        .unwrap();
    let (bx, by, bz) = (31 * 16 + 3, 16 * y + 2, 10 * 16 + 5);
    write(&m.mnt.join(format!("block/{bx},{by},{bz}")), "minecraft:gold_block\n").unwrap();
    assert_eq!(std::fs::read_to_string(m.mnt.join(format!("block/{bx},{by},{bz}"))).unwrap(), "minecraft:gold_block\n");
    // A chest, a sign, a player's inventory.
    let (chest_chunk, chest) = first_block_entity(&m.mnt, "Chest");
    write(&chest.join("items"), "0 5 minecraft:diamond\n13 64 minecraft:cobblestone\n").unwrap();
    let (sign_chunk, sign) = first_block_entity(&m.mnt, "Sign");
    write(&sign.join("text"), "Hello\nworld\n").unwrap();
    write(&m.mnt.join("players/~local_player/inventory"), "0 3 minecraft:apple\n").unwrap();
    // A bad edit is refused and changes nothing.
    assert!(write(&chest.join("items"), "0 5 minecraft:no_such_item\n").is_err());
    assert!(write(&m.mnt.join(format!("block/{bx},{by},{bz}")), "minecraft:no_such_block\n").is_err());
    assert!(m.refusals().contains("no item of the game"), "{}", m.refusals());
    drop(m);

    let after = reader_keys(&npm, w.path());
    let reader: Value = serde_json::from_str(&oracle(&npm, w.path(), "world")).unwrap();
    // The block, read back by prismarine-chunk.
    let sub = &reader["subchunks"][format!("0:31,10:{y}")]["layers"][0];
    let i = ((bx - 31 * 16) * 256 + (bz - 160) * 16 + (by - 16 * y)) as usize;
    assert_eq!(reader_labels(sub)[i], "minecraft:gold_block");
    // The chest and the sign.
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let c = reader_block_entity(&reader, &chest_chunk, &name(&chest));
    let Some(Tag::List(items)) = c.get("Items") else { panic!("no Items: {c:?}") };
    let first = match &items.items[0] {
        Tag::Compound(i) => (i.int("Slot"), i.int("Count"), i.string("Name").map(String::from)),
        _ => panic!(),
    };
    assert_eq!(first, (Some(0), Some(5), Some("minecraft:diamond".into())));
    let s = reader_block_entity(&reader, &sign_chunk, &name(&sign));
    let text = s.compound("FrontText").and_then(|f| f.string("Text")).or(s.string("Text"));
    assert_eq!(text, Some("Hello\nworld"));
    let player = reader_compound(&reader["players"]["~local_player"]);
    let inv = player.list("Inventory").unwrap();
    let apple = inv.items.iter().any(|t| matches!(t, Tag::Compound(c) if c.string("Name") == Some("minecraft:apple") && c.int("Count") == Some(3) && c.int("Slot") == Some(0)));
    assert!(apple, "the apple in slot 0");
    // Nothing else changed: the block's subchunk, the block entities of the
    // chest's and sign's chunks, the player.
    let be_key = |chunk: &str| {
        let (x, z) = chunk.split_once(',').unwrap();
        let (x, z): (i32, i32) = (x.parse().unwrap(), z.parse().unwrap());
        hex(&[&x.to_le_bytes()[..], &z.to_le_bytes()[..], &[49]].concat())
    };
    let mut expected = vec![
        hex(&[&31i32.to_le_bytes()[..], &10i32.to_le_bytes()[..], &[47, y as i8 as u8]].concat()),
        be_key(&chest_chunk),
        be_key(&sign_chunk),
        hex(b"~local_player"),
    ];
    expected.sort();
    expected.dedup();
    assert_eq!(changed_keys(&before, &after), expected);
    assert_eq!(std::fs::read(w.path().join("level.dat")).unwrap(), level_before);

    // worldfs undo puts every value back.
    let out = worldfs().arg("undo").arg(w.path()).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("write block/") && listing.contains("items"), "{listing}");
    let out = worldfs().arg("undo").arg(w.path()).args(["--last", "4"]).output().unwrap();
    assert!(out.status.success(), "undo: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(changed_keys(&before, &reader_keys(&npm, w.path())), Vec::<String>::new());
}

#[test]
fn a_no_op_rewrite_of_every_file_changes_no_byte() {
    let test = "a_no_op_rewrite_of_every_file_changes_no_byte";
    let npm = need_oracle!(test);
    require_fuse!(test);
    for (name, w) in worlds() {
        let before = reader_keys(&npm, w.path());
        let level = std::fs::read(w.path().join("level.dat")).unwrap();
        let m = common::mount::Mounted::new(w.path(), &[]);
        let mut files = Vec::new();
        let mut dirs = vec![m.mnt.join("chunks"), m.mnt.join("players"), m.mnt.join("dimensions")];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    dirs.push(e.path());
                } else if e.metadata().unwrap().permissions().readonly() {
                    continue;
                } else {
                    files.push(e.path());
                }
            }
        }
        files.push(m.mnt.join("level"));
        assert!(files.len() > 50, "{name}: {} writable files", files.len());
        for f in &files {
            let content = std::fs::read(f).unwrap();
            let text = String::from_utf8(content).unwrap_or_default();
            write(f, &text).unwrap_or_else(|e| panic!("{name}: {}: {e}", f.display()));
        }
        drop(m);
        assert_eq!(changed_keys(&before, &reader_keys(&npm, w.path())), Vec::<String>::new(), "{name}");
        assert_eq!(std::fs::read(w.path().join("level.dat")).unwrap(), level, "{name}: level.dat");
        assert!(
            !w.path().join(worldfs_store::journal::FILE_NAME).exists() || {
                let j = worldfs_store::journal::Journal::open(&w.path().join(worldfs_store::journal::FILE_NAME))
                    .unwrap()
                    .unwrap();
                j.changes(None, None).unwrap().is_empty()
            },
            "{name}: a no-op journaled a change"
        );
    }
}

#[test]
fn sigkill_during_a_bulk_edit_leaves_every_chunk_readable_and_undoable() {
    let test = "sigkill_during_a_bulk_edit_leaves_every_chunk_readable_and_undoable";
    let npm = need_oracle!(test);
    require_fuse!(test);
    let (_, w) = worlds().into_iter().nth(2).unwrap(); // example3: 22 chunks
    let before = reader_keys(&npm, w.path());
    let m = common::mount::Mounted::new(w.path(), &[]);
    // The lowest block of each chunk's lowest subchunk, one write each.
    let mut targets = Vec::new();
    for e in std::fs::read_dir(m.mnt.join("chunks")).unwrap() {
        let e = e.unwrap();
        let (x, z) = e
            .file_name()
            .to_string_lossy()
            .split_once(',')
            .map(|(x, z)| (x.parse::<i64>().unwrap(), z.parse::<i64>().unwrap()))
            .unwrap();
        let ys: Vec<i64> = std::fs::read_dir(e.path().join("sections"))
            .unwrap()
            .map(|s| s.unwrap().file_name().to_string_lossy().parse().unwrap())
            .collect();
        if let Some(y) = ys.into_iter().min() {
            targets.push(m.mnt.join(format!("block/{},{},{}", 16 * x, 16 * y, 16 * z)));
        }
    }
    assert!(targets.len() > 10);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            for round in 0.. {
                for t in &targets {
                    let block = if round % 2 == 0 { "minecraft:gold_block\n" } else { "minecraft:diamond_block\n" };
                    if std::fs::write(t, block).is_err() {
                        return;
                    }
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
    };
    common::wait_until("some writes", || done.load(std::sync::atomic::Ordering::SeqCst) >= 15);
    m.kill9();
    writer.join().unwrap();
    // The reader decodes every chunk, subchunk and block entity.
    let reader: Value = serde_json::from_str(&oracle(&npm, w.path(), "world")).unwrap();
    assert!(
        reader["subchunks"]
            .as_object()
            .unwrap()
            .values()
            .all(|s| s["layers"].as_array().is_some_and(|l| !l.is_empty()))
    );
    // worldfs check finds nothing wrong, and undo of every journaled change
    // gives back every value.
    let out = worldfs().arg("check").arg(w.path()).output().unwrap();
    assert!(out.status.success(), "check: {}", String::from_utf8_lossy(&out.stdout));
    let journal =
        worldfs_store::journal::Journal::open(&w.path().join(worldfs_store::journal::FILE_NAME)).unwrap().unwrap();
    let n = journal.changes(None, None).unwrap().len();
    assert!(n >= 15, "{n} changes journaled");
    let out = worldfs().arg("undo").arg(w.path()).args(["--last", &n.to_string()]).output().unwrap();
    assert!(
        out.status.success(),
        "undo: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(changed_keys(&before, &reader_keys(&npm, w.path())), Vec::<String>::new());
}

#[test]
fn check_counts_a_world_and_names_a_broken_subchunk() {
    let (_, w) = worlds().into_iter().nth(1).unwrap(); // example2
    let out = worldfs().arg("check").arg(w.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Minecraft Bedrock world") && text.contains("version 9: 617") && text.contains("corrupt: 0"),
        "{text}"
    );
    // Cut one subchunk short, through the store.
    let db = worldfs_store::leveldb::bedrock::BedrockDb::open(&w.path().join("db"), false).unwrap();
    let (k, v) =
        db.page(None, usize::MAX, true).unwrap().into_iter().find(|(k, _)| k.len() == 10 && k[8] == 47).unwrap();
    let change = worldfs_store::leveldb::bedrock::KeyChange {
        key: k.clone(),
        old: Some(v.clone()),
        new: Some(v[..v.len() - 1].to_vec()),
    };
    db.write(vec![change], &worldfs_store::Note::new("cut"), None).unwrap();
    drop(db);
    let out = worldfs().arg("check").arg(w.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let (x, z, y) =
        (i32::from_le_bytes(k[..4].try_into().unwrap()), i32::from_le_bytes(k[4..8].try_into().unwrap()), k[9] as i8);
    assert!(text.contains(&format!("0:{x},{z}: subchunk {y}: ")) && text.contains("corrupt: 1"), "{text}");
}

#[test]
fn a_mcworld_mounts_read_only_and_unpacks_as_python_does() {
    require_fuse!("a_mcworld_mounts_read_only_and_unpacks_as_python_does");
    let zip = format!("{DATA}/example3.mcworld");
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let out = worldfs().arg("mount").arg(&zip).arg(&mnt).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("worldfs unpack"));
    let m = common::mount::Mounted::with_args(Path::new(&zip), &["-o", "ro"]);
    assert_eq!(std::fs::read_dir(m.mnt.join("chunks")).unwrap().count(), 24);
    assert!(std::fs::read_to_string(m.mnt.join("level")).unwrap().contains("LevelName: \"Example 3 World\""));
    drop(m);
    // Unpacked to a chosen place: the same files as Python's zipfile gives.
    let ours = d.path().join("ours");
    let out = worldfs().arg("unpack").arg(&zip).arg(&ours).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs = &worlds()[2].1;
    for f in ["level.dat", "db/CURRENT", "db/000005.ldb", "db/MANIFEST-000004", "levelname.txt"] {
        assert_eq!(std::fs::read(ours.join(f)).unwrap(), std::fs::read(theirs.path().join(f)).unwrap(), "{f}");
    }
    let again = worldfs().arg("unpack").arg(&zip).arg(&ours).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

#[test]
fn the_nether_and_the_end_show_under_dimensions_and_take_edits() {
    use worldfs_codec::bedrock::key::{ChunkPos, Key};
    require_fuse!("the_nether_and_the_end_show_under_dimensions_and_take_edits");
    let (_, w) = worlds().into_iter().nth(2).unwrap();
    // A copy of an overworld chunk's keys as the nether's (the test worlds
    // never went there).
    let db = worldfs_store::leveldb::bedrock::BedrockDb::open(&w.path().join("db"), false).unwrap();
    let all = db.page(None, usize::MAX, true).unwrap();
    let pos = all.iter().find_map(|(k, _)| match Key::parse(k) {
        Key::Chunk { pos, tag: 47, .. } => Some(pos),
        _ => None,
    });
    let pos = pos.unwrap();
    let mut changes = Vec::new();
    for (k, v) in &all {
        if let Key::Chunk { pos: p, tag, sub } = Key::parse(k)
            && p == pos
        {
            let nether = Key::Chunk { pos: ChunkPos { dim: 1, ..pos }, tag, sub }.bytes();
            changes.push(worldfs_store::leveldb::bedrock::KeyChange { key: nether, old: None, new: Some(v.clone()) });
        }
    }
    db.write(changes, &worldfs_store::Note::new("a nether chunk"), None).unwrap();
    drop(db);
    let m = common::mount::Mounted::new(w.path(), &[]);
    let names = |d: &Path| {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&m.mnt.join("dimensions")), ["end", "nether"]);
    assert_eq!(names(&m.mnt.join("dimensions/nether")), ["chunks"]);
    let xz = format!("{},{}", pos.x, pos.z);
    assert_eq!(names(&m.mnt.join("dimensions/nether/chunks")), std::slice::from_ref(&xz));
    assert!(names(&m.mnt.join("dimensions/end/chunks")).is_empty());
    let over = m.mnt.join("chunks").join(&xz).join("sections");
    let nether = m.mnt.join("dimensions/nether/chunks").join(&xz).join("sections");
    let y = names(&over).into_iter().next().unwrap();
    let text = std::fs::read_to_string(over.join(&y).join("blocks")).unwrap();
    assert_eq!(std::fs::read_to_string(nether.join(&y).join("blocks")).unwrap(), text);
    // An edit of the nether's copy changes it, and not the overworld's.
    let legend_line = text
        .lines()
        .find(|l| l.len() > 2 && l.as_bytes()[1] == b' ' && !l.starts_with('#') && !l.starts_with(". "))
        .unwrap();
    let edited =
        text.replacen(&format!("{legend_line}\n"), &format!("{} minecraft:gold_block\n", &legend_line[..1]), 1);
    write(&nether.join(&y).join("blocks"), &edited).unwrap();
    assert!(std::fs::read_to_string(nether.join(&y).join("blocks")).unwrap().contains("minecraft:gold_block"));
    assert_eq!(std::fs::read_to_string(over.join(&y).join("blocks")).unwrap(), text);
    // find/ and names count the overworld's blocks; each chunk has a top.png.
    let found = std::fs::read_to_string(m.mnt.join("names")).unwrap();
    assert!(found.lines().any(|l| l.starts_with("minecraft:chest ")), "{found}");
    let link = std::fs::read_dir(m.mnt.join("find/minecraft:chest")).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_link(&link).unwrap().to_string_lossy().starts_with("../../chunks/"));
    assert!(std::fs::read(m.mnt.join("chunks").join(&xz).join("top.png")).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn worldfs_map_draws_the_overworld() {
    let (_, w) = worlds().into_iter().nth(2).unwrap();
    let out = tempfile::tempdir().unwrap();
    let png = out.path().join("map.png");
    let r = worldfs().arg("map").arg(w.path()).arg(&png).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let bytes = std::fs::read(&png).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert!(info.width >= 64 && info.height >= 64, "{}x{}", info.width, info.height);
    // Most of the drawn chunks' pixels are opaque (the ground seen from above).
    let opaque = buf.chunks(4).filter(|p| p[3] == 255).count();
    assert!(opaque > 22 * 256 / 2, "{opaque} opaque pixels");
}
