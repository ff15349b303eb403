//! Minecraft Java worlds (level.dat + region/): real chunks of 1.15, 1.17.1
//! and 1.18 (tests/data/minecraft/README.md) mounted and read back by an
//! independent reader, anvil-parser2 (tests/scripts/mc_oracle.py, Python,
//! never linked): every section's blocks and every block entity agree,
//! chunks decode and encode back byte for byte, and edits through the
//! mount (`echo`, `sed -i`) are what the reader then finds, with every
//! other chunk unchanged; a game holding session.lock refuses them. The
//! 1.11.2 world (prismarine/) is written too: as numeric ids and data,
//! checked by anvil-parser2's legacy table and byte-wise by amulet-nbt
//! (tests/scripts/mc_legacy_oracle.py), its HeightMap against the rule
//! computed in Python; the 1.11.2 and 1.12.2 worlds are the oracle of that
//! rule, and the 1.13.2 world (prismarine-1.13/) mounts as anvil-parser2
//! reads it.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use worldfs::documents::Document;
use worldfs::view::layers::{self, Frame, Rows};
use worldfs::worlds::minecraft::chunk::ChunkDoc;
use worldfs_codec::minecraft::{nbt, region};

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft/querz")
}

fn world_copy() -> tempfile::TempDir {
    common::copy_world(&sample())
}

/// Every stored chunk's decompressed NBT, by `X,Z`.
fn all_chunks(world: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(world.join("region")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        // Not a region file: a rewrite's temporary file that a SIGKILL left
        // (the game ignores it; the next mount removes it).
        let Some((rx, rz)) =
            name.strip_prefix("r.").and_then(|n| n.strip_suffix(".mca")).and_then(|n| n.split_once('.'))
        else {
            continue;
        };
        let (rx, rz): (i64, i64) = (rx.parse().unwrap(), rz.parse().unwrap());
        let file = std::fs::read(&p).unwrap();
        for (i, raw) in region::all_chunks(&file).unwrap() {
            let key = format!("{},{}", rx * 32 + (i % 32) as i64, rz * 32 + (i / 32) as i64);
            out.insert(key, region::decompress(&raw).unwrap());
        }
    }
    out
}

#[test]
fn every_chunk_decodes_and_encodes_back_byte_for_byte() {
    let chunks = all_chunks(&sample());
    assert_eq!(chunks.len(), 4, "the sample's chunks: {:?}", chunks.keys());
    for (key, bytes) in &chunks {
        let (name, root) = nbt::decode(bytes).unwrap();
        assert_eq!(&nbt::encode(&name, &root).unwrap(), bytes, "chunk {key}");
        // Every writable file written back as shown changes nothing.
        let mut doc = ChunkDoc::decode(bytes, &Default::default()).unwrap();
        let writable: Vec<String> =
            doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
        assert!(writable.iter().any(|p| p.ends_with("/blocks")), "chunk {key}: {writable:?}");
        for path in &writable {
            let shown = doc.render(path).unwrap();
            doc.apply(path, &shown).unwrap_or_else(|e| panic!("chunk {key} {path}: {e}"));
        }
        assert_eq!(&doc.encode().unwrap(), bytes, "chunk {key} after writing every file back");
    }
}

/// A chunk of 1.17 or older keeps its data in `Level`, which ChunkDoc
/// holds apart from the root (issue 41: no `unreachable!` to reach it):
/// its data is read from there, and written back `Level` is in its place
/// among the root's entries, between those before and after it.
#[test]
fn a_chunk_with_level_between_other_entries_writes_back_in_that_order() {
    use worldfs_codec::minecraft::nbt::{Compound, List, Tag};
    let section = Compound(vec![("Y".into(), Tag::Byte(0))]);
    let level = Compound(vec![
        ("xPos".into(), Tag::Int(2)),
        ("zPos".into(), Tag::Int(-3)),
        ("Sections".into(), Tag::List(List { elem: 10, items: vec![Tag::Compound(section)] })),
        ("isLightOn".into(), Tag::Byte(1)),
    ]);
    let root = Compound(vec![
        ("DataVersion".into(), Tag::Int(2230)),
        ("Level".into(), Tag::Compound(level)),
        ("After".into(), Tag::Int(7)),
    ]);
    let bytes = nbt::encode("", &root).unwrap();
    let doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
    assert_eq!(doc.encode().unwrap(), bytes, "written back unchanged");
    let paths: Vec<String> = doc.entries().into_iter().map(|e| e.path).collect();
    assert!(paths.iter().any(|p| p.starts_with("sections/0")), "Level's section is read: {paths:?}");
    let keys = |b: &[u8]| nbt::decode(b).unwrap().1.0.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(&doc.encode().unwrap()), ["DataVersion", "Level", "After"]);
}

#[test]
fn a_changed_block_is_packed_as_the_format_wants() {
    // Each format's chunk: set a block to a state new to its palette, so
    // that the palette grows and the section is packed again.
    for (key, bytes) in all_chunks(&sample()) {
        let mut doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
        let (cx, cz): (i64, i64) = {
            let (x, z) = key.split_once(',').unwrap();
            (x.parse().unwrap(), z.parse().unwrap())
        };
        let (x, y, z) = (16 * cx + 3, 17, 16 * cz + 5);
        let state = worldfs::worlds::minecraft::section::parse_state("minecraft:chest[facing=west]").unwrap();
        doc.set_block(x, y, z, state.clone()).unwrap();
        let written = doc.encode().unwrap();
        let again = ChunkDoc::decode(&written, &Default::default()).unwrap();
        assert_eq!(again.block_at(x, y, z).unwrap(), Some(state), "chunk {key}");
        // The heightmaps are left for the game to compute (every sample
        // chunk is 1.15 or later and stores some).
        let maps = |b: &[u8]| {
            let (_, root) = nbt::decode(b).unwrap();
            let level = root.compound("Level").unwrap_or(&root).clone();
            level.compound("Heightmaps").map(|m| m.0.len())
        };
        assert!(maps(&bytes).unwrap() > 0, "chunk {key} stores heightmaps");
        assert_eq!(maps(&written), Some(0), "chunk {key}: heightmaps left for the game");
        assert_eq!(
            again.block_at(x + 1, y, z).unwrap(),
            ChunkDoc::decode(&bytes, &Default::default()).unwrap().block_at(x + 1, y, z).unwrap(),
            "chunk {key}: the neighbour"
        );
    }
}

fn oracle(world: &Path, only: &[&str]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_oracle.py");
    let out = Command::new("python3").arg(script).arg(world).args(only).output().unwrap();
    assert!(out.status.success(), "mc_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

/// A block state with its properties sorted (the reader sorts them).
fn canonical(label: &str) -> String {
    match label.split_once('[') {
        Some((name, rest)) => {
            let mut props: Vec<&str> = rest.trim_end_matches(']').split(',').collect();
            props.sort();
            format!("{name}[{}]", props.join(","))
        }
        None => label.to_string(),
    }
}

/// A section's blocks as the mount shows them, y*256 + z*16 + x.
fn mounted_blocks(text: &str, cx: i64, y: i64, cz: i64) -> Vec<String> {
    let frame = Frame { size: [16, 16, 16], origin: [16 * cx, 16 * y, 16 * cz], rows: Rows::ZAscending };
    let d = layers::parse(&frame, text).unwrap();
    (0..4096).map(|i| canonical(&d.legend[d.at(i % 16, i / 256, i / 16 % 16)].label)).collect()
}

/// Items text as the reader prints them: `slot:count:id;...`.
fn items_as_oracle(text: &str) -> String {
    let items: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(":"))
        .collect();
    if items.is_empty() { "(none)".into() } else { items.join(";") }
}

fn check_mount_against_oracle(m: &common::mount::Mounted, lines: &[String]) -> usize {
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        match f[0] {
            "chunk" => assert!(m.path(&format!("chunks/{}/info", f[1])).is_file(), "{line}"),
            "section" => {
                let (cx, cz) = f[1].split_once(',').unwrap();
                let (cx, cz, y): (i64, i64, i64) = (cx.parse().unwrap(), cz.parse().unwrap(), f[2].parse().unwrap());
                let text = std::fs::read_to_string(m.path(&format!("chunks/{}/sections/{y}/blocks", f[1]))).unwrap();
                let want: Vec<&str> = f[3].split(' ').collect();
                let got = mounted_blocks(&text, cx, y, cz);
                assert_eq!(got.len(), want.len());
                for i in 0..4096 {
                    assert_eq!(got[i], want[i], "chunk {} section {y} block {i}", f[1]);
                }
                checked += 1;
            }
            "be" => {
                let rest: Vec<&str> = f[3].split(' ').collect();
                let dir = format!("chunks/{}/block_entities/{}", f[1], f[2]);
                assert_eq!(std::fs::read_to_string(m.path(&format!("{dir}/id"))).unwrap().trim(), rest[0], "{line}");
                let items = std::fs::read_to_string(m.path(&format!("{dir}/items")));
                match rest[1] {
                    "-" => assert!(
                        items.map_or(true, |t| items_as_oracle(&t) == "(none)"),
                        "{line}: the mount shows items"
                    ),
                    want => assert_eq!(items_as_oracle(&items.unwrap()), want, "{line}"),
                }
                checked += 1;
            }
            _ => panic!("unknown oracle line {line}"),
        }
    }
    checked
}

#[test]
fn the_mount_agrees_with_anvil_parser_on_every_section_and_block_entity() {
    require_fuse_and_mc_oracle!("minecraft::the_mount_agrees_with_anvil_parser");
    let w = world_copy();
    let lines = oracle(w.path(), &[]);
    let m = common::mount::Mounted::new(w.path(), &[]);
    let listed = m.ok("ls $MNT/chunks | sort");
    let mut want: Vec<&str> =
        lines.iter().filter_map(|l| l.strip_prefix("chunk ")).map(|l| l.split(' ').next().unwrap()).collect();
    want.sort();
    assert_eq!(listed.lines().collect::<Vec<_>>(), want);
    let checked = check_mount_against_oracle(&m, &lines);
    assert!(checked > 60, "only {checked} sections and block entities compared");
    assert!(m.ok("cat $MNT/level").contains("LevelName: "), "level as SNBT");
    // Every writable file written back as it reads: no chunk changes.
    m.ok("for f in $MNT/level $MNT/chunks/*/sections/*/* $MNT/chunks/*/block_entities/*/*; do \
          [ -w \"$f\" ] || continue; cat \"$f\" > /tmp/$$.mc; cat /tmp/$$.mc > \"$f\"; done; rm -f /tmp/$$.mc");
    m.unmount();
    assert_eq!(hashes(&oracle(w.path(), &[])), hashes(&lines), "a no-op rewrite changed a chunk");
}

/// The reader's blocks of section `y` of chunk `key`, y*256 + z*16 + x.
fn section_row(lines: &[String], key: &str, y: i64) -> Vec<String> {
    let l = lines.iter().find(|l| l.starts_with(&format!("section {key} {y} "))).unwrap();
    l.splitn(4, ' ').nth(3).unwrap().split(' ').map(String::from).collect()
}

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

#[test]
fn block_and_chest_edits_are_what_anvil_parser_reads_and_nothing_else_changes() {
    require_fuse_and_mc_oracle!("minecraft::block_and_chest_edits");
    let w = world_copy();
    let before = oracle(w.path(), &[]);
    let chest =
        before.iter().find(|l| l.starts_with("be ") && l.contains(" minecraft:chest ")).expect("a chest").clone();
    let f: Vec<&str> = chest.split(' ').collect();
    let (chest_chunk, chest_pos, old_items) = (f[1], f[2], f[4]);
    let m = common::mount::Mounted::new(w.path(), &[]);
    // A 1.18 block below y 0, a 1.15 block; a chest gains an item.
    m.ok("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    m.ok("echo 'minecraft:oak_stairs[facing=east,half=top]' > $MNT/block/17,40,53");
    let items = format!("$MNT/chunks/{chest_chunk}/block_entities/{chest_pos}/items");
    // A chest has slots 0-26: the game would drop an item in slot 27.
    let (code, _, err) = m.sh(&format!("sed -i '$a 27 7 minecraft:diamond' {items}"));
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("slot 27: a minecraft:chest has slots 0 to 26"), "{}", m.refusals());
    m.ok(&format!("sed -i '$a 26 7 minecraft:diamond' {items}"));
    // vim then changes the count (as a user would, in place).
    let count = if common::mount::which("vim").is_some() {
        let home = tempfile::tempdir().unwrap();
        m.ok(&format!(
            "HOME={} TERM=dumb vim -es -c '%s/^26 7 /26 9 /' -c wq {items} </dev/null >/dev/null 2>&1; true",
            home.path().display()
        ));
        9
    } else {
        common::skip("minecraft::block_and_chest_edits (vim part)", "vim", "vim not installed");
        7
    };
    assert_eq!(m.ok("cat $MNT/block/-128,-64,-192"), "minecraft:gold_block\n");
    let (code, _, _) = m.sh("echo minecraft:Not-A-Block > $MNT/block/17,41,53");
    assert_ne!(code, 0, "a bad block state is refused");
    m.unmount();
    let after = oracle(w.path(), &[]);
    let (hb, ha) = (hashes(&before), hashes(&after));
    let changed: Vec<&String> = hb.keys().filter(|k| hb[*k] != ha[*k]).collect();
    assert_eq!(changed, vec!["-65,-42", "-8,-12", "1,3"], "only the edited chunks change");
    let block = |lines: &[String], key: &str, y: i64, i: usize| section_row(lines, key, y)[i].clone();
    assert_eq!(block(&after, "-8,-12", -4, 0), "minecraft:gold_block");
    assert_eq!(block(&after, "1,3", 2, 8 * 256 + 5 * 16 + 1), "minecraft:oak_stairs[facing=east,half=top]");
    let new_chest = after.iter().find(|l| l.starts_with(&format!("be {chest_chunk} {chest_pos} "))).unwrap();
    let want = match old_items {
        "-" | "(none)" => format!("26:{count}:minecraft:diamond"),
        old => format!("{old};26:{count}:minecraft:diamond"),
    };
    assert_eq!(new_chest.split(' ').nth(4).unwrap(), want);
    // Every other block of the edited sections is as it was.
    for (key, y, i) in [("-8,-12", -4, 0usize), ("1,3", 2, 8 * 256 + 5 * 16 + 1)] {
        let (b, a) = (section_row(&before, key, y), section_row(&after, key, y));
        assert_eq!((0..4096).filter(|k| *k != i && b[*k] != a[*k]).count(), 0, "chunk {key} section {y}");
    }
}

#[test]
fn writes_are_refused_while_a_game_holds_session_lock() {
    require_fuse!("minecraft::writes_are_refused_while_a_game_holds_session_lock");
    let w = world_copy();
    let lock = w.path().join("session.lock");
    std::fs::write(&lock, "☃").unwrap();
    let region = w.path().join("region/r.-1.-1.mca");
    let before = std::fs::read(&region).unwrap();
    // What the game does: hold an fcntl lock on session.lock (flock's
    // `-o`-less form would be BSD locks; Java's tryLock is fcntl).
    let mut holder = Command::new("python3")
        .args(["-c", "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"])
        .arg(&lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line, "held\n");
    let m = common::mount::Mounted::new(w.path(), &[]);
    let (code, _, err) = m.sh("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    assert_ne!(code, 0, "a write while the lock is held: {err}");
    assert_eq!(std::fs::read(&region).unwrap(), before, "the region file is unchanged");
    let level = std::fs::read(w.path().join("level.dat")).unwrap();
    let rename = "sed -i 's/^        LevelName: .*/        LevelName: \"renamed\",/' $MNT/level";
    assert_ne!(m.sh(rename).0, 0, "level while the lock is held");
    assert_eq!(std::fs::read(w.path().join("level.dat")).unwrap(), level, "level.dat is unchanged");
    holder.kill().unwrap();
    holder.wait().unwrap();
    m.ok("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    assert_ne!(std::fs::read(&region).unwrap(), before, "written once the game is gone");
    m.ok(rename);
    m.unmount();
    // The independent reader finds the new name (amulet-nbt, when there).
    let read = Command::new("python3")
        .args(["-c", "import amulet_nbt,sys; print(amulet_nbt.load(sys.argv[1]).compound['Data']['LevelName'].py_str)"])
        .arg(w.path().join("level.dat"))
        .output()
        .unwrap();
    if read.status.success() {
        assert_eq!(String::from_utf8_lossy(&read.stdout), "renamed\n");
    } else {
        common::skip(
            "minecraft::writes_are_refused_while_a_game_holds_session_lock",
            "python3",
            "amulet-nbt is missing",
        );
    }
}

#[test]
fn a_damaged_chunk_is_refused_and_the_others_still_read() {
    require_fuse!("minecraft::a_damaged_chunk_is_refused_and_the_others_still_read");
    let w = world_copy();
    // Damage the zlib stream of chunk 1,3 (r.0.0.mca): its checksum fails.
    let path = w.path().join("region/r.0.0.mca");
    let mut file = std::fs::read(&path).unwrap();
    let offset = 4096 * u32::from_be_bytes([0, file[4 * 97], file[4 * 97 + 1], file[4 * 97 + 2]]) as usize;
    for b in &mut file[offset + 100..offset + 140] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, &file).unwrap();
    let m = common::mount::Mounted::new(w.path(), &[]);
    // Shown as a corrupt Luanti block is: its bytes and why (issue 39).
    assert_eq!(m.ok("ls $MNT/chunks/1,3"), "error\nraw\n");
    let error = m.ok("cat $MNT/chunks/1,3/error");
    assert!(error.starts_with("chunk 1,3 of ") && error.contains("zlib"), "{error}");
    assert!(m.ok("cat $MNT/chunks/-8,-12/info").contains("data_version = 2845"));
    let (code, _, _) = m.sh("echo minecraft:stone > $MNT/block/17,40,53");
    assert_ne!(code, 0, "a block of the damaged chunk cannot be written");
    m.unmount();
    assert_eq!(std::fs::read(&path).unwrap(), file, "the damaged file is left as it was");
}

fn worldfs(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn undo_takes_back_chunk_and_level_changes_as_anvil_parser_reads_them() {
    require_fuse_and_mc_oracle!("minecraft::undo_takes_back_chunk_and_level_changes");
    let w = world_copy();
    let world = w.path().to_str().unwrap();
    let (before, level) = (hashes(&oracle(w.path(), &[])), std::fs::read(w.path().join("level.dat")).unwrap());
    let m = common::mount::Mounted::new(w.path(), &[]);
    m.ok("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    m.ok("echo minecraft:diamond_block > $MNT/block/17,40,53");
    m.ok("sed -i 's/^        LevelName: .*/        LevelName: \"undone\",/' $MNT/level");
    m.unmount();
    let (ok, list) = worldfs(&["undo", world]);
    assert!(ok, "{list}");
    assert!(list.contains("write block/17,40,53") && list.contains("write level"), "{list}");
    // The newest change (level.dat) first, alone.
    let (ok, out) = worldfs(&["undo", world, "--last", "1"]);
    assert!(ok, "{out}");
    assert_eq!(std::fs::read(w.path().join("level.dat")).unwrap(), level, "level.dat is back");
    let now = hashes(&oracle(w.path(), &[]));
    assert_ne!(now, before, "the chunk edits are still there");
    // A chunk changed outside worldfs since is a conflict: nothing reverted.
    let saved = std::fs::read(w.path().join("region/r.0.0.mca")).unwrap();
    let mut file = saved.clone();
    let i = 1 + 32 * 3;
    let mut raw = region::raw_chunk(&file, i).unwrap().unwrap();
    let (name, mut root) = nbt::decode(&region::decompress(&raw).unwrap()).unwrap();
    root.0.push(("worldfs_test".into(), nbt::Tag::Byte(1)));
    raw = region::compress(&nbt::encode(&name, &root).unwrap(), raw.timestamp);
    let (rebuilt, _) = region::build(&[(i, raw)]);
    file = rebuilt;
    std::fs::write(w.path().join("region/r.0.0.mca"), &file).unwrap();
    let (ok, out) = worldfs(&["undo", world, "--since", "1970-01-01"]);
    assert!(!ok && out.contains("conflict: minecraft chunks/1,3"), "{out}");
    assert_eq!(std::fs::read(w.path().join("region/r.0.0.mca")).unwrap(), file, "refused undo changed nothing");
    std::fs::write(w.path().join("region/r.0.0.mca"), &saved).unwrap();
    let (ok, out) = worldfs(&["undo", world, "--since", "1970-01-01"]);
    assert!(ok, "{out}");
    assert_eq!(hashes(&oracle(w.path(), &[])), before, "every chunk as it was");
    assert_eq!(std::fs::read(w.path().join("level.dat")).unwrap(), level);
    // The revert is journaled in turn and can itself be reverted.
    let (ok, list) = worldfs(&["undo", world]);
    assert!(ok && list.contains("(reverted by #"), "{list}");
}

#[test]
fn sigkill_during_a_bulk_edit_leaves_every_chunk_readable_and_undoable() {
    require_fuse_and_mc_oracle!("minecraft::sigkill_during_a_bulk_edit");
    let w = world_copy();
    let before = hashes(&oracle(w.path(), &[]));
    let m = common::mount::Mounted::new(w.path(), &[]);
    // Kept apart: the mount's own directory goes with it.
    let (logs, mnt) = (tempfile::tempdir().unwrap(), m.mnt.clone());
    let log = logs.path().join("edits.log");
    // Many `sed -i` over every section's blocks, air to glass and back.
    let script = "i=0; while true; do for f in \"$MNT\"/chunks/*/sections/*/blocks; do \
                  if [ $((i % 2)) = 0 ]; then sed -i 's/ minecraft:air$/ minecraft:glass/' \"$f\"; \
                  else sed -i 's/ minecraft:glass$/ minecraft:air/' \"$f\"; fi && echo \"$f\" >> \"$LOG\"; \
                  done; i=$((i + 1)); done";
    let mut editor = Command::new("sh")
        .args(["-c", script])
        .env("MNT", &m.mnt)
        .env("LOG", &log)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let edits = || std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
    while edits() < 40 {
        assert!(start.elapsed().as_secs() < 120, "the bulk edit does not progress:\n{}", m.log_text());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Somewhere in the middle of a region file's rewrite, likely enough.
    std::thread::sleep(std::time::Duration::from_millis(37));
    m.kill9();
    let _ = editor.kill();
    let _ = editor.wait();
    // The independent reader reads every chunk and every section.
    let after = oracle(w.path(), &[]);
    assert_eq!(hashes(&after).keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    for l in after.iter().filter(|l| l.starts_with("section ")) {
        assert_eq!(l.splitn(4, ' ').nth(3).unwrap().split(' ').count(), 4096, "{}", &l[..40]);
    }
    for (key, bytes) in all_chunks(w.path()) {
        ChunkDoc::decode(&bytes, &Default::default()).unwrap_or_else(|e| panic!("chunk {key}: {e}"));
    }
    logged_edits_are_kept(&after, &mnt, &std::fs::read_to_string(&log).unwrap());
    // The journal knows every change that landed: undo brings the world back.
    let (ok, list) = worldfs(&["undo", w.path().to_str().unwrap(), "--all"]);
    assert!(ok && list.matches("write chunks/").count() >= 10, "{list}");
    let (ok, out) = worldfs(&["undo", w.path().to_str().unwrap(), "--since", "1970-01-01"]);
    assert!(ok, "{out}");
    assert_eq!(hashes(&oracle(w.path(), &[])), before, "undo after the crash: every chunk as it was");
}

/// Every edit `log` lists (a `sed -i` of a section's blocks that
/// returned success, one line each, its path under the mount `mnt` of the
/// killed daemon) is in the world, as the independent reader reads it
/// (`after`: its lines): a section edited an odd number of times holds no
/// air (its last edit turned air into glass), an even number of times no
/// glass. One section may be an edit further: the one whose `sed -i` the
/// kill cut short.
fn logged_edits_are_kept(after: &[String], mnt: &Path, log: &str) {
    let mut edits: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines() {
        let rel = Path::new(line).strip_prefix(mnt).unwrap_or_else(|_| panic!("{line}: not under {}", mnt.display()));
        // chunks/X,Z/sections/Y/blocks -> "X,Z Y", as the reader names a section.
        let parts: Vec<&str> = rel.to_str().unwrap().split('/').collect();
        *edits.entry(format!("{} {}", parts[1], parts[3])).or_default() += 1;
    }
    assert!(edits.len() >= 10, "too few sections edited to tell: {edits:?}");
    let sections: BTreeMap<String, Vec<&str>> = after
        .iter()
        .filter_map(|l| {
            let mut f = l.splitn(4, ' ');
            (f.next()? == "section").then_some(())?;
            Some((format!("{} {}", f.next()?, f.next()?), f.next()?.split(' ').collect()))
        })
        .collect();
    let mut further = Vec::new();
    for (section, n) in &edits {
        let labels =
            sections.get(section).unwrap_or_else(|| panic!("section {section}: the reader has no such section"));
        let has = |name: &str| labels.contains(&name);
        let (gone, other) =
            if n % 2 == 1 { ("minecraft:air", "minecraft:glass") } else { ("minecraft:glass", "minecraft:air") };
        if has(gone) {
            // The next edit's state: all its blocks turned back.
            assert!(!has(other), "section {section}: {n} logged edits, and neither state: lost in part");
            further.push(section.clone());
        }
    }
    assert!(further.len() <= 1, "sections without their last logged edit: {further:?} (of {} edited)", edits.len());
}

/// `legacy_blocks.txt` read here on its own: (id, data) to the label.
fn legacy_table() -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/worlds/minecraft/legacy_blocks.txt");
    let (mut states, mut names) = (BTreeMap::new(), BTreeMap::new());
    for line in std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.starts_with('#')) {
        let (key, label) = line.split_once(' ').unwrap();
        if key.contains(':') {
            states.insert(key.to_string(), label.to_string())
        } else {
            names.insert(key.to_string(), label.to_string())
        };
    }
    (states, names)
}

#[test]
fn a_1_11_world_shows_its_blocks_by_name_as_anvil_parser_reads_their_ids() {
    require_fuse_and_mc_oracle!("minecraft::a_1_11_world_shows_its_blocks");
    let d = common::copy_world(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft/prismarine"));
    let lines = oracle(d.path(), &[]);
    let (states, names) = legacy_table();
    let m = common::mount::Mounted::new(d.path(), &[]);
    let mut checked = 0;
    for l in lines.iter().filter(|l| l.starts_with("legacy ")) {
        let f: Vec<&str> = l.splitn(4, ' ').collect();
        let (cx, cz) = f[1].split_once(',').unwrap();
        let (cx, cz, y): (i64, i64, i64) = (cx.parse().unwrap(), cz.parse().unwrap(), f[2].parse().unwrap());
        let dir = format!("chunks/{}/sections/{y}", f[1]);
        let got = mounted_blocks(&std::fs::read_to_string(m.path(&format!("{dir}/blocks"))).unwrap(), cx, y, cz);
        // The palette names each entry's stored id:data beside its state.
        let palette = std::fs::read_to_string(m.path(&format!("{dir}/palette"))).unwrap();
        let by_label: BTreeMap<String, Vec<String>> = palette.lines().fold(BTreeMap::new(), |mut acc, p| {
            let p: Vec<&str> = p.split(' ').collect();
            acc.entry(canonical(p[1])).or_default().push(p[2].to_string());
            acc
        });
        for (i, id) in f[3].split(' ').enumerate() {
            let (n, data) = id.split_once(':').unwrap();
            let want = states.get(id).cloned().unwrap_or_else(|| format!("{}[data={data}]", names[n]));
            assert_eq!(got[i], canonical(&want), "chunk {} section {y} block {i} ({id})", f[1]);
            assert!(by_label[&got[i]].contains(&id.to_string()), "{dir}/palette: {id} for {}", got[i]);
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} sections compared");
    assert!(m.ok("cat $MNT/chunks/-1,3/info").contains("1.12 or older"));
    m.unmount();
}

/// A 1.12 section's arrays as hex, by chunk, Y and key (`Blocks`, `Data`, `Add`).
type Arrays = BTreeMap<(String, i64, String), String>;

/// What amulet-nbt reads of each 1.12-or-older section's arrays and a
/// digest of the rest of each chunk (`rest X,Z`, `light X,Z`).
/// Each chunk's HeightMap ("heightmap X,Z") and, where minecraft-data is
/// found, the one its blocks give in Python ("computed X,Z").
type Heights = BTreeMap<String, Vec<i32>>;

fn legacy_oracle(world: &Path) -> (Arrays, BTreeMap<String, String>, Heights) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_legacy_oracle.py");
    let out = Command::new("python3").arg(script).arg(world).output().unwrap();
    assert!(out.status.success(), "mc_legacy_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    let (mut arrays, mut rest, mut heights) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f[0] {
            "arrays" => {
                drop(arrays.insert((f[1].to_string(), f[2].parse().unwrap(), f[3].to_string()), f[4].to_string()))
            }
            "rest" | "light" => drop(rest.insert(format!("{} {}", f[0], f[1]), f[2].to_string())),
            "heightmap" | "computed" => {
                let h: Vec<i32> = f[2..].iter().map(|v| v.parse().unwrap()).collect();
                drop(heights.insert(format!("{} {}", f[0], f[1]), h))
            }
            _ => panic!("{l}"),
        }
    }
    (arrays, rest, heights)
}

/// The arrays a 1.12 section of these ids ("ID:DATA", y*256 + z*16 + x)
/// holds, as hex: Blocks, Data, and Add if an id needs it.
fn arrays_of(ids: &[String]) -> Vec<(&'static str, String)> {
    let ids: Vec<(u16, u8)> = ids
        .iter()
        .map(|s| {
            let (i, d) = s.split_once(':').unwrap();
            (i.parse().unwrap(), d.parse().unwrap())
        })
        .collect();
    let nibbles = |f: &dyn Fn(&(u16, u8)) -> u8| -> String {
        ids.chunks(2).map(|p| format!("{:02x}", f(&p[0]) | (f(&p[1]) << 4))).collect()
    };
    let mut out = vec![
        ("Blocks", ids.iter().map(|(i, _)| format!("{:02x}", *i as u8)).collect()),
        ("Data", nibbles(&|(_, d)| *d)),
    ];
    if ids.iter().any(|(i, _)| *i > 255) {
        out.push(("Add", nibbles(&|(i, _)| (*i >> 8) as u8)));
    }
    out
}

fn legacy_sections(lines: &[String]) -> BTreeMap<(String, i64), Vec<String>> {
    lines
        .iter()
        .filter(|l| l.starts_with("legacy "))
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, ' ').collect();
            ((f[1].to_string(), f[2].parse().unwrap()), f[3].split(' ').map(String::from).collect())
        })
        .collect()
}

#[test]
fn a_1_11_world_is_written_as_ids_and_data_that_anvil_parser_and_amulet_read() {
    require_fuse_and_mc_oracle!("minecraft::a_1_11_world_is_written");
    let amulet = Command::new("python3").args(["-c", "import amulet_nbt"]).output().is_ok_and(|o| o.status.success());
    if !amulet {
        common::skip("minecraft::a_1_11_world_is_written", "python3", "amulet-nbt is missing");
        return;
    }
    let d = common::copy_world(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft/prismarine"));
    let region = d.path().join("region/r.-1.0.mca");
    let (file, before, (arrays, rest, heights_before)) =
        (std::fs::read(&region).unwrap(), oracle(d.path(), &[]), legacy_oracle(d.path()));
    let m = common::mount::Mounted::new(d.path(), &[]);
    // Every section's blocks written back as shown: not a byte changes
    // (leaves with and without the decay bit, 18:0 and 18:8, both read
    // oak_leaves[distance=1,persistent=false] and stay apart).
    m.ok("t=$(mktemp); for f in $MNT/chunks/*/sections/*/blocks; do cat \"$f\" > $t; cat $t > \"$f\"; done; rm $t");
    assert_eq!(std::fs::read(&region).unwrap(), file, "a no-op rewrite changed the region file");
    let leaves = legacy_sections(&before)[&("-1,3".to_string(), 4)].clone();
    assert!(leaves.iter().any(|v| v == "18:0") && leaves.iter().any(|v| v == "18:8"));
    // echo and sed -i; an id above 255 (shown as unknown_block) needs Add.
    m.ok("echo minecraft:granite > $MNT/block/-16,5,48");
    m.ok("echo 'minecraft:oak_log[axis=x]' > $MNT/block/-14,5,48");
    m.ok("echo minecraft:granite > $MNT/block/-16,70,48"); // beside those leaves
    m.ok("echo 'minecraft:unknown_block[id=300,data=3]' > $MNT/block/-15,5,48");
    m.ok("sed -i 's/ minecraft:stone$/ minecraft:gold_block/' $MNT/chunks/-1,3/sections/1/blocks");
    // Tree tops taken away (section 4's leaves, 18:0 and 18:8, become air):
    // those columns' HeightMap goes down to what is under them.
    m.ok("sed -i 's/ minecraft:[a-z_]*_leaves\\[[^]]*\\]$/ minecraft:air/' \
          $MNT/chunks/-1,3/sections/4/blocks");
    assert_eq!(m.ok("cat $MNT/block/-15,5,48"), "minecraft:unknown_block[data=3,id=300]\n");
    // States 1.12 cannot store: refused, named, the region file unchanged.
    let now = std::fs::read(&region).unwrap();
    assert_ne!(m.sh("echo minecraft:deepslate > $MNT/block/-13,5,48").0, 0, "deepslate in a 1.11 chunk");
    let sed = "sed -i 's/ minecraft:granite$/ minecraft:deepslate/' $MNT/chunks/-1,3/sections/0/blocks";
    assert_ne!(m.sh(sed).0, 0, "deepslate in a 1.11 section");
    assert_eq!(std::fs::read(&region).unwrap(), now, "a refused write changed the region file");
    let errors = m.refusals();
    for want in
        ["block/-13,5,48: minecraft:deepslate cannot be stored in a 1.12", "block -16,5,48: minecraft:deepslate"]
    {
        assert!(errors.contains(want), "write-errors lacks '{want}':\n{errors}");
    }
    // No world-wide rename of a block id through find/ (nor for newer chunks).
    assert_ne!(m.sh("mv $MNT/find/minecraft:stone $MNT/find/minecraft:granite").0, 0);
    assert!(m.refusals().contains("renames no block id world-wide"), "{}", m.refusals());
    m.unmount();
    // anvil-parser2 reads the new ids, and every other block as it was.
    let mut want = legacy_sections(&before);
    let sec = want.get_mut(&("-1,3".to_string(), 0)).unwrap();
    assert_eq!(sec[5 * 256], "1:0", "stone at -16,5,48 before");
    (sec[5 * 256], sec[5 * 256 + 1], sec[5 * 256 + 2]) = ("1:1".into(), "300:3".into(), "17:4".into());
    let leaves = want.get_mut(&("-1,3".to_string(), 4)).unwrap();
    leaves[6 * 256] = "1:1".into();
    leaves.iter_mut().filter(|v| v.starts_with("18:") || v.starts_with("161:")).for_each(|v| *v = "0:0".into());
    let sec = want.get_mut(&("-1,3".to_string(), 1)).unwrap();
    assert!(sec.iter().filter(|v| *v == "1:0").count() > 1000);
    sec.iter_mut().filter(|v| *v == "1:0").for_each(|v| *v = "41:0".into());
    let after = oracle(d.path(), &[]);
    assert_eq!(legacy_sections(&after), want);
    // amulet-nbt: Blocks, Data and Add byte for byte; the rest of every chunk unchanged.
    let (arrays_after, rest_after, heights_after) = legacy_oracle(d.path());
    assert_eq!(rest_after, rest, "something besides the blocks and HeightMap changed");
    check_heightmaps_after_edits(&heights_before, &heights_after);
    let mut want_arrays = arrays.clone();
    for ((chunk, y), ids) in &want {
        for (key, hex) in arrays_of(ids) {
            want_arrays.insert((chunk.clone(), *y, key.to_string()), hex);
        }
    }
    assert_eq!(arrays_after.len(), arrays.len() + 1, "Add only where id 300 needs it");
    assert!(arrays_after == want_arrays, "Blocks, Data or Add differ from the edits");
    // Undo puts every chunk back byte for byte.
    let world = d.path().to_str().unwrap();
    let (ok, list) = worldfs(&["undo", world]);
    assert!(ok && list.contains("write block/-15,5,48") && list.contains("write chunks/-1,3"), "{list}");
    let (ok, out) = worldfs(&["undo", world, "--since", "1970-01-01"]);
    assert!(ok, "{out}");
    assert_eq!(hashes(&oracle(d.path(), &[])), hashes(&before), "undo: every chunk as it was");
}

/// The 1.11 world's HeightMaps after the edits of
/// `a_1_11_world_is_written_...`, read by amulet-nbt: chunk -1,3's changed
/// where the edits moved a column's top (granite in the air at -16,70,48,
/// tree tops taken away) and each column is what the blocks give in
/// Python; every other chunk's as it was. Without minecraft-data (no
/// "computed" lines), the stored HeightMaps, which are what the blocks give
/// before the edits (`every_heightmap_a_1_12_game_wrote_...`), stand in
/// for the unchanged columns only.
fn check_heightmaps_after_edits(before: &Heights, after: &Heights) {
    let get = |m: &Heights, k: &str| m.get(k).cloned().unwrap_or_else(|| panic!("{k} missing"));
    let (old, new) = (get(before, "heightmap -1,3"), get(after, "heightmap -1,3"));
    let moved: Vec<usize> = (0..256).filter(|&c| old[c] != new[c]).collect();
    assert_eq!(new[0], 71, "granite at -16,70,48 is column 0's top");
    assert!(moved.len() > 5 && moved.iter().any(|&c| new[c] < old[c]), "tree tops taken away: {moved:?}");
    for (key, h) in before.iter().filter(|(k, _)| k.starts_with("heightmap ") && k.as_str() != "heightmap -1,3") {
        assert_eq!(&get(after, key), h, "{key} changed");
    }
    if before.keys().any(|k| k.starts_with("computed ")) {
        for (key, h) in after.iter().filter(|(k, _)| k.starts_with("heightmap ")) {
            assert_eq!(h, &get(after, &key.replace("heightmap", "computed")), "{key}: not what its blocks give");
        }
    } else {
        common::skip("minecraft::a_1_11_world_is_written", "minecraft-data", "HeightMaps not recomputed in Python");
    }
}

fn legacy_world(name: &str) -> Vec<(usize, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft").join(name).join("region");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let file = std::fs::read(e.unwrap().path()).unwrap();
        for (i, raw) in region::all_chunks(&file).unwrap() {
            out.push((i, region::decompress(&raw).unwrap()));
        }
    }
    out
}

fn stored_heightmap(bytes: &[u8]) -> Vec<i32> {
    let (_, root) = nbt::decode(bytes).unwrap();
    match root.compound("Level").unwrap().get("HeightMap") {
        Some(nbt::Tag::IntArray(h)) => h.clone(),
        other => panic!("HeightMap: {other:?}"),
    }
}

/// The oracle of the 1.12 HeightMap: every chunk a 1.11.2 and a 1.12.2
/// game wrote (133 chunks, 34,048 columns) stores the HeightMap that
/// `legacy_heights_from_blocks` computes from its blocks, column for column.
#[test]
fn every_heightmap_a_1_12_game_wrote_is_what_its_blocks_give() {
    for (world, chunks) in [("prismarine", 28), ("prismarine-1.12", 105)] {
        let all = legacy_world(world);
        assert_eq!(all.len(), chunks, "{world}");
        for (i, bytes) in all {
            let doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
            assert_eq!(doc.legacy_heights_from_blocks(), stored_heightmap(&bytes), "{world} chunk {i}");
        }
    }
}

/// A block change that moves a column's top sets that column of the
/// HeightMap, through `block/` and through a section's blocks; one that
/// does not (a block under the top, glass above it) leaves it as stored.
#[test]
fn a_1_12_edit_that_moves_a_column_top_sets_its_heightmap() {
    let parse = |l: &str| worldfs::worlds::minecraft::section::parse_state(l).unwrap();
    let (_, bytes) =
        legacy_world("prismarine-1.12").into_iter().find(|(_, b)| (3..250).contains(&stored_heightmap(b)[0])).unwrap();
    let stored = stored_heightmap(&bytes);
    let mut doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
    let (cx, cz) = doc.pos();
    let (x, z) = (16 * cx, 16 * cz); // column 0
    let top = stored[0] as i64;
    let heights = |doc: &ChunkDoc| stored_heightmap(&doc.encode().unwrap());
    doc.set_block(x, top + 2, z, parse("minecraft:glass")).unwrap();
    doc.set_block(x, top - 2, z, parse("minecraft:granite")).unwrap();
    assert_eq!(heights(&doc), stored, "glass above the top, granite under it");
    doc.set_block(x, top + 1, z, parse("minecraft:oak_leaves[distance=1,persistent=false]")).unwrap();
    assert_eq!(heights(&doc)[0] as i64, top + 2, "leaves stop light");
    doc.set_block(x, top + 1, z, parse("minecraft:air")).unwrap();
    doc.set_block(x, top - 1, z, parse("minecraft:air")).unwrap();
    let lower = heights(&doc)[0] as i64;
    assert!(lower < top && lower > 0, "the top block gone: {lower}, was {top}");
    assert_eq!(heights(&doc)[1..], stored[1..], "other columns as stored");
    assert_eq!(heights(&doc), doc.legacy_heights_from_blocks());
    // A section's blocks: every block of the top section that stops light
    // becomes glass, so each column's top is lower (or gone).
    let sy = (stored.iter().max().unwrap() - 1) as i64 / 16;
    let path = format!("sections/{sy}/blocks");
    let text = String::from_utf8(doc.render(&path).unwrap()).unwrap();
    let glassy: String = text
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((c, s)) if c.chars().count() == 1 && s.starts_with("minecraft:") && s != "minecraft:air" => {
                format!("{c} minecraft:glass\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    doc.apply(&path, glassy.as_bytes()).unwrap();
    let after = heights(&doc);
    assert_eq!(after, doc.legacy_heights_from_blocks());
    assert!((0..256).all(|c| after[c] <= 16 * sy as i32 || stored[c] <= 16 * sy as i32), "{after:?}");
}

/// The 1.13.2 world (189 chunks written by the game, every generation
/// status): each writable file written back as shown changes no byte, and
/// a block change empties the chunk's `Heightmaps`, which 1.13's loader
/// computes again from the blocks.
#[test]
fn a_1_13_chunk_takes_back_what_it_shows_and_leaves_its_heightmaps_to_the_game() {
    let all = legacy_world("prismarine-1.13");
    assert_eq!(all.len(), 189);
    let mut changed = 0;
    for (i, bytes) in all {
        let mut doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
        let writable: Vec<String> =
            doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
        for path in &writable {
            let shown = doc.render(path).unwrap();
            doc.apply(path, &shown).unwrap_or_else(|e| panic!("chunk {i} {path}: {e}"));
        }
        assert_eq!(doc.encode().unwrap(), bytes, "chunk {i} after writing every file back");
        if doc.section_count() == 0 {
            continue;
        }
        let (cx, cz) = doc.pos();
        let chest = worldfs::worlds::minecraft::section::parse_state("minecraft:chest[facing=west]").unwrap();
        doc.set_block(16 * cx + 3, 17, 16 * cz + 5, chest.clone()).unwrap();
        let (_, root) = nbt::decode(&doc.encode().unwrap()).unwrap();
        let maps = root.compound("Level").unwrap().compound("Heightmaps").map(|m| m.0.len());
        assert_eq!(maps, Some(0), "chunk {i}: heightmaps left for the game");
        let again = ChunkDoc::decode(&doc.encode().unwrap(), &Default::default()).unwrap();
        assert_eq!(again.block_at(16 * cx + 3, 17, 16 * cz + 5).unwrap(), Some(chest));
        changed += 1;
    }
    assert!(changed > 150, "{changed}");
}

/// The 1.13.2 world mounted: anvil-parser2 agrees with every section's
/// blocks and every block entity of its 189 chunks (1.13's block states
/// spanning longs, every generation status), and a block set through
/// `block/` is what it then reads, the chunk's `Heightmaps` emptied for the
/// game (read by amulet-nbt) and every other chunk unchanged.
#[test]
fn a_1_13_world_mounts_as_anvil_parser_reads_it_and_an_edit_leaves_heightmaps_to_the_game() {
    require_fuse_and_mc_oracle!("minecraft::a_1_13_world_mounts");
    let d = common::copy_world(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft/prismarine-1.13"));
    let before = oracle(d.path(), &[]);
    let m = common::mount::Mounted::new(d.path(), &[]);
    let checked = check_mount_against_oracle(&m, &before);
    assert!(checked > 500, "only {checked} sections and block entities compared");
    let key = before.iter().find_map(|l| l.strip_prefix("section ")).map(|l| l.split(' ').next().unwrap()).unwrap();
    let (cx, cz) = key.split_once(',').unwrap();
    let (x, z) = (16 * cx.parse::<i64>().unwrap() + 2, 16 * cz.parse::<i64>().unwrap() + 9);
    m.ok(&format!("echo minecraft:gold_block > $MNT/block/{x},40,{z}"));
    m.unmount();
    let after = oracle(d.path(), &[]);
    let (mut want, got) = (hashes(&before), hashes(&after));
    want.insert(key.to_string(), got[key].clone());
    assert_ne!(hashes(&before)[key], got[key], "chunk {key} changed");
    assert_eq!(got, want, "only chunk {key} changed");
    let row = section_row(&after, key, 2);
    assert_eq!(row[8 * 256 + 9 * 16 + 2], "minecraft:gold_block");
    let script = "import sys; sys.path.insert(0, sys.argv[1]); from mc_region_read import chunks; \
                  print([len(t.compound['Level']['Heightmaps']) for k, t in chunks(sys.argv[2]) if k == sys.argv[3]])";
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(scripts)
        .arg(d.path().join("region"))
        .arg(key)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[0]", "{}", String::from_utf8_lossy(&out.stderr));
}

/// The 1.11 world's chunks without a mount: every writable file written
/// back as shown changes no byte; a block set is stored as its id and
/// data and marks the chunk for the game to light again; a state 1.12
/// cannot store is refused and leaves the chunk as it was.
#[test]
fn a_1_11_chunk_takes_back_what_it_shows_and_marks_an_edit_for_light() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minecraft/prismarine/region");
    let file = std::fs::read(dir.join("r.-1.0.mca")).unwrap();
    let mut chunks = 0;
    for (i, raw) in region::all_chunks(&file).unwrap() {
        let bytes = region::decompress(&raw).unwrap();
        let mut doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
        let writable: Vec<String> =
            doc.entries().into_iter().filter(|e| e.writable && !e.dir).map(|e| e.path).collect();
        assert!(writable.iter().any(|p| p.ends_with("/blocks")), "chunk {i}: {writable:?}");
        for path in &writable {
            let shown = doc.render(path).unwrap();
            doc.apply(path, &shown).unwrap_or_else(|e| panic!("chunk {i} {path}: {e}"));
        }
        assert_eq!(doc.encode().unwrap(), bytes, "chunk {i} after writing every file back");
        chunks += 1;
    }
    assert_eq!(chunks, 28);
    // Chunk -1,3 as if the game had lit it.
    let raw = region::raw_chunk(&file, 3 * 32 + 31).unwrap().unwrap();
    let (name, mut root) = nbt::decode(&region::decompress(&raw).unwrap()).unwrap();
    root.compound_mut("Level").unwrap().insert("LightPopulated", nbt::Tag::Byte(1));
    let lit = nbt::encode(&name, &root).unwrap();
    let mut doc = ChunkDoc::decode(&lit, &Default::default()).unwrap();
    let deepslate = worldfs::worlds::minecraft::section::parse_state("minecraft:deepslate").unwrap();
    let err = doc.set_block(-16, 5, 48, deepslate).unwrap_err().to_string();
    assert!(err.starts_with("minecraft:deepslate cannot be stored in a 1.12 or older chunk"), "{err}");
    assert_eq!(doc.encode().unwrap(), lit, "a refused block changed the chunk");
    let granite = worldfs::worlds::minecraft::section::parse_state("minecraft:granite").unwrap();
    doc.set_block(-16, 5, 48, granite.clone()).unwrap();
    let (_, new) = nbt::decode(&doc.encode().unwrap()).unwrap();
    let level = new.compound("Level").unwrap();
    assert_eq!(level.get("LightPopulated"), Some(&nbt::Tag::Byte(0)), "marked for the game to light again");
    assert_eq!(level.get("HeightMap"), root.compound("Level").unwrap().get("HeightMap"), "HeightMap as stored");
    let again = ChunkDoc::decode(&doc.encode().unwrap(), &Default::default()).unwrap();
    assert_eq!(again.block_at(-16, 5, 48).unwrap(), Some(granite));
}
