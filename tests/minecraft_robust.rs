//! Minecraft Java worlds used as a careless or hostile admin would (issue
//! 39): another program changing a chunk while its file is open for
//! writing, region files whose header or chunks are damaged, undo of a
//! region file byte for byte, a BSD `flock` on `session.lock`, a region
//! file rewritten in place with its size and time kept. The worlds are the
//! game-written ones of tests/data/minecraft (prismarine-1.13: 189 chunks
//! of 1.13.2 in one region file, laid out by the game).
//! The other program and the reader are amulet-nbt
//! (tests/scripts/mc_region_edit.py) and anvil-parser2
//! (tests/scripts/mc_oracle.py), Python, never linked.

use crate::common;
use crate::common::minecraft::data;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts").join(name)
}

/// `mc_region_edit.py ARGS`: the other program; the SHA-256 of the NBT it wrote.
fn other_program(args: &[&str]) -> String {
    let out = Command::new("python3").arg(script("mc_region_edit.py")).args(args).output().unwrap();
    assert!(out.status.success(), "mc_region_edit.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// anvil-parser2's reading of some chunks: per chunk its NBT's SHA-256,
/// and per (chunk, section Y) its 4096 block labels.
#[derive(Default, Debug)]
struct Read {
    sha: BTreeMap<String, String>,
    sections: BTreeMap<(String, i64), Vec<String>>,
}

fn oracle(world: &Path, only: &[&str]) -> Read {
    let out = Command::new("python3").arg(script("mc_oracle.py")).arg(world).args(only).output().unwrap();
    assert!(out.status.success(), "mc_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    let mut read = Read::default();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let mut parts = l.splitn(4, ' ');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("chunk"), Some(key), Some(sha), None) => drop(read.sha.insert(key.into(), sha.into())),
            (Some("section"), Some(key), Some(y), Some(labels)) => {
                let labels = labels.split(' ').map(String::from).collect();
                read.sections.insert((key.into(), y.parse().unwrap()), labels);
            }
            _ => {}
        }
    }
    read
}

fn worldfs(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The header entries of a region file: (header index, sector, count).
fn entries(file: &[u8]) -> Vec<(usize, usize, usize)> {
    (0..1024)
        .map(|i| (i, u32::from_be_bytes([0, file[4 * i], file[4 * i + 1], file[4 * i + 2]]) as usize, file[4 * i + 3]))
        .filter(|e| e.1 != 0)
        .map(|(i, s, c)| (i, s, c as usize))
        .collect()
}

const R13: &str = "region/r.-1.-1.mca";

/// Chunk `X,Z` of r.-1.-1.mca at header index `i`.
fn name13(i: usize) -> String {
    format!("{},{}", -32 + (i % 32) as i64, -32 + (i / 32) as i64)
}

/// Issue 39, item 6: `chunks/X,Z/sections/Y/blocks` opened for writing
/// (truncating, as `open(path, "w")` and `>` do), another program renames
/// a region file with section Y's bedrock turned to diamond blocks over
/// the old one, then the old text with one character changed is written:
/// close() fails with ESTALE, write-errors says why, and anvil-parser2
/// finds the other program's diamond blocks, none lost. The same holds for
/// a file opened for reading and writing. (Before the fix the truncating
/// writer's close returned 0 and every diamond block was bedrock again.)
#[test]
fn a_section_changed_on_disk_while_open_for_writing_is_refused_with_estale() {
    require_fuse_and_mc_oracle!("minecraft_robust::a_section_changed_on_disk_while_open_for_writing");
    let w = common::copy_world(&data("prismarine-1.13"));
    let region = w.path().join(R13);
    let m = common::mount::Mounted::new(w.path(), &[]);
    let bedrock = |read: &Read, name: &str| {
        let labels = &read.sections[&("-1,-10".to_string(), 0)];
        labels.iter().filter(|l| *l == name).count()
    };
    let n = bedrock(&oracle(w.path(), &["-1,-10"]), "minecraft:bedrock");
    assert!(n > 100, "section 0 of chunk -1,-10 holds bedrock: {n}");
    // The writer, in Python: read the text, open the file for writing,
    // let the other program change the section, write the old text with
    // one block changed, close.
    let writer = r##"
import os, subprocess, sys
path, mode, region, edit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
old = open(path).read()
f = open(path, mode)
subprocess.run(["python3", *edit], check=True, stdout=subprocess.DEVNULL)
lines = old.split("\n")
row = next(k for k, l in enumerate(lines) if l and l[0] != "#" and not l.startswith("y=") and " " not in l)
lines[row] = ("." if lines[row][0] != "." else "b") + lines[row][1:]
if mode == "r+":
    f.seek(0)
    f.truncate()
f.write("\n".join(lines))
try:
    f.close()
    print("closed")
except OSError as e:
    print("refused", e.errno)
"##;
    let file = m.path("chunks/-1,-10/sections/0/blocks");
    let region_s = region.to_str().unwrap();
    for (mode, from, to) in [
        ("w", "minecraft:bedrock", "minecraft:diamond_block"),
        ("r+", "minecraft:diamond_block", "minecraft:gold_block"),
    ] {
        let edit = [
            script("mc_region_edit.py").to_str().unwrap().to_string(),
            "palette".into(),
            region_s.into(),
            "-1".into(),
            "-10".into(),
            "0".into(),
            from.into(),
            to.into(),
        ];
        let out = Command::new("python3")
            .args(["-c", writer])
            .arg(&file)
            .arg(mode)
            .arg(region_s)
            .args(&edit)
            .output()
            .unwrap();
        assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(said.trim(), format!("refused {}", libc::ESTALE), "{mode}: close() of a stale write");
        let errors = m.refusals();
        assert!(
            errors.contains("chunks/-1,-10/sections/0/blocks") && errors.contains("changed by someone else"),
            "{mode}: {errors}"
        );
        let after = oracle(w.path(), &["-1,-10"]);
        assert_eq!(bedrock(&after, to), n, "{mode}: the other program's {to} are all there");
        assert_eq!(bedrock(&after, from), 0, "{mode}: no {from} came back");
    }
    // Read again, the same edit is taken.
    m.ok("sed -i 's/ minecraft:gold_block$/ minecraft:obsidian/' $MNT/chunks/-1,-10/sections/0/blocks");
    m.unmount();
    assert_eq!(bedrock(&oracle(w.path(), &["-1,-10"]), "minecraft:obsidian"), n);
}

/// Damage r.-1.-1.mca of a copy of prismarine-1.13: the entry of the
/// first chunk points past the end of the file, the second chunk's entry
/// is the third's (two entries on the same sectors). Returns the three
/// chunks' header entries as they were.
fn damage_header(region: &Path) -> [(usize, usize, usize); 3] {
    let mut file = std::fs::read(region).unwrap();
    let e = entries(&file);
    let (a, c, b) = (e[0], e[1], e[2]);
    let past = (file.len() / 4096 + 10) as u32;
    file[4 * a.0..4 * a.0 + 4].copy_from_slice(&(past << 8 | 2).to_be_bytes());
    let b_entry: [u8; 4] = file[4 * b.0..4 * b.0 + 4].try_into().unwrap();
    file[4 * c.0..4 * c.0 + 4].copy_from_slice(&b_entry);
    std::fs::write(region, &file).unwrap();
    [a, b, c]
}

/// Issue 39, item 8: one bad header entry hid the whole region. An entry
/// pointing past the end of the file, two entries on the same sectors,
/// and the region file cut to 3,000 bytes: `mount -o ro` shows every good
/// chunk as anvil-parser2 reads it, and each bad one as a directory
/// holding only `raw` (its bytes in the file) and `error` (why); `worldfs
/// check` names each bad chunk and exits 1. (Before the fix the mount
/// exited 2 and check counted 0 chunks for the region.)
#[test]
fn bad_header_entries_hide_no_good_chunk() {
    require_fuse_and_mc_oracle!("minecraft_robust::bad_header_entries_hide_no_good_chunk");
    let w = common::copy_world(&data("prismarine-1.13"));
    let region = w.path().join(R13);
    let original = std::fs::read(&region).unwrap();
    let [a, b, c] = damage_header(&region);
    let (a_name, b_name, c_name) = (name13(a.0), name13(b.0), name13(c.0));
    let good: Vec<String> =
        entries(&original).iter().map(|e| name13(e.0)).filter(|n| *n != a_name && *n != c_name).collect();
    assert_eq!(good.len(), 187);
    let m = common::mount::Mounted::new(w.path(), &["ro"]);
    let listed = m.ok("ls $MNT/chunks");
    assert_eq!(listed.lines().count(), 189, "every chunk the header lists: {listed}");
    // Every good chunk reads as anvil-parser2 reads it (section 0's blocks).
    let read = oracle(w.path(), &good.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(read.sha.len(), 187);
    for name in &good {
        let info = m.ok(&format!("cat $MNT/chunks/{name}/info"));
        let (x, z) = name.split_once(',').unwrap();
        assert!(info.starts_with(&format!("x = {x}\nz = {z}\n")), "{name}: {info}");
    }
    let shown = m.ok(&format!("cat $MNT/chunks/{b_name}/sections/0/palette"));
    assert!(shown.contains("minecraft:bedrock"), "{b_name}: {shown}");
    // The bad ones: raw and error only.
    // The first points past the end: nothing of it is in the file. The
    // second holds the third's sectors, whose data says it is the third.
    let shared = &original[b.1 * 4096..(b.1 + b.2) * 4096];
    let shares = format!("with chunk {b_name}, and its data is chunk {b_name}'s");
    for (name, why, raw) in [(&a_name, "not in the file", &[][..]), (&c_name, &shares[..], shared)] {
        assert_eq!(m.ok(&format!("ls $MNT/chunks/{name}")), "error\nraw\n", "{name}");
        let error = m.ok(&format!("cat $MNT/chunks/{name}/error"));
        assert!(error.contains(why), "{name}: {error}");
        common::same_bytes(&std::fs::read(m.path(&format!("chunks/{name}/raw"))).unwrap(), raw, name);
    }
    m.unmount();
    let (code, text) = worldfs(&["check", w.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    for name in [&a_name, &c_name] {
        assert!(text.contains(&format!("region/r.-1.-1.mca: chunk {name}: ")), "{name}: {text}");
    }
    assert!(text.contains(&format!("chunk {b_name}: shares sectors")), "{text}");

    // A region file cut to 3,000 bytes: the entries in its first 3,000
    // bytes are shown, each as a bad chunk; check names the file and each.
    let w = common::copy_world(&data("prismarine-1.13"));
    let cut = w.path().join(R13);
    std::fs::write(&cut, &original[..3000]).unwrap();
    let listed: Vec<String> = (0..750).filter(|i| original[4 * i..4 * i + 4] != [0; 4]).map(name13).collect();
    assert!(listed.len() > 50, "{}", listed.len());
    let m = common::mount::Mounted::new(w.path(), &["ro"]);
    let mut shown: Vec<String> = m.ok("ls $MNT/chunks").lines().map(String::from).collect();
    let mut expected = listed.clone();
    shown.sort();
    expected.sort();
    assert_eq!(shown, expected);
    let error = m.ok(&format!("cat $MNT/chunks/{}/error", listed[0]));
    assert!(error.contains("3000 bytes") && error.contains("header"), "{error}");
    m.unmount();
    let (code, text) = worldfs(&["check", w.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("region/r.-1.-1.mca: 3000 bytes"), "{text}");
    assert_eq!(text.matches("region/r.-1.-1.mca: chunk ").count(), listed.len(), "{text}");
}

/// Make two chunks of r.-1.-1.mca unreadable: the first one's zlib stream
/// is overwritten with garbage, the second one's compression byte is 9
/// (no such compression). Returns their header entries.
fn break_two_chunks(region: &Path) -> [(usize, usize, usize); 2] {
    let mut file = std::fs::read(region).unwrap();
    let e = entries(&file);
    let (d, f) = (e[10], e[20]);
    for b in &mut file[d.1 * 4096 + 5..d.1 * 4096 + 69] {
        *b = 0xA5;
    }
    file[f.1 * 4096 + 4] = 9;
    std::fs::write(region, &file).unwrap();
    [d, f]
}

/// Issue 39, item 9: one corrupt chunk broke names, find/ and every edit
/// of its region file. With two broken chunks, `names` and `find/` show
/// the others' blocks, each broken chunk is `raw` and `error` where it is,
/// and an edit of another chunk of the same region file is taken: the
/// broken chunks' bytes are carried over unchanged, anvil-parser2 reads
/// the edit, and every other chunk is as it was. (Before the fix `cat
/// names` and `ls find/` gave EIO and the edit was refused at close: "the
/// region file is unchanged".)
#[test]
fn a_corrupt_chunk_leaves_names_find_and_other_edits_working() {
    require_fuse_and_mc_oracle!("minecraft_robust::a_corrupt_chunk_leaves_names_find_and_other_edits_working");
    let w = common::copy_world(&data("prismarine-1.13"));
    let region = w.path().join(R13);
    let [d, f] = break_two_chunks(&region);
    let broken_file = std::fs::read(&region).unwrap();
    let bytes_of = |file: &[u8], (_, s, c): (usize, usize, usize)| file[s * 4096..(s + c) * 4096].to_vec();
    let all: Vec<String> = entries(&broken_file).iter().map(|e| name13(e.0)).collect();
    let (d_name, f_name) = (name13(d.0), name13(f.0));
    let good: Vec<&str> = all.iter().map(String::as_str).filter(|n| *n != d_name && *n != f_name).collect();
    let before = oracle(w.path(), &good);
    let m = common::mount::Mounted::new(w.path(), &[]);
    let names = m.ok("cat $MNT/names");
    assert!(names.contains("\nminecraft:bedrock ") && names.contains("\nminecraft:stone "), "{names}");
    let with_bedrock = m.ok("ls $MNT/find/minecraft:bedrock");
    assert!(with_bedrock.lines().count() > 100, "{with_bedrock}");
    assert!(!with_bedrock.lines().any(|l| l == d_name || l == f_name), "{with_bedrock}");
    for (name, why) in [(&d_name, "zlib"), (&f_name, "compression 9")] {
        assert_eq!(m.ok(&format!("ls $MNT/chunks/{name}")), "error\nraw\n");
        let error = m.ok(&format!("cat $MNT/chunks/{name}/error"));
        assert!(error.contains(why), "{name}: {error}");
    }
    // Edits of another chunk of the region: cave air to glass in section
    // 2, one block of it to gold.
    let edited = "-1,-10";
    assert!(good.contains(&edited));
    m.ok(&format!("sed -i 's/ minecraft:cave_air$/ minecraft:glass/' $MNT/chunks/{edited}/sections/2/blocks"));
    m.ok("echo minecraft:gold_block > $MNT/block/-13,40,-155");
    m.unmount();
    let after_file = std::fs::read(&region).unwrap();
    let after_entries = entries(&after_file);
    for (e, name) in [(d, &d_name), (f, &f_name)] {
        let now = after_entries.iter().find(|x| x.0 == e.0).copied().expect("still listed");
        common::same_bytes(&bytes_of(&after_file, now), &bytes_of(&broken_file, e), &format!("broken chunk {name}"));
    }
    let after = oracle(w.path(), &good);
    for name in &good {
        if *name == edited {
            assert_ne!(after.sha[*name], before.sha[*name]);
            let glass = after.sections[&(name.to_string(), 2)].iter().filter(|l| *l == "minecraft:glass").count();
            assert!(glass > 0, "{name}: no glass in section 2");
            assert!(after.sections[&(name.to_string(), 2)].iter().any(|l| l == "minecraft:gold_block"));
        } else {
            assert_eq!(after.sha[*name], before.sha[*name], "{name} is unchanged");
        }
    }
    let (code, text) = worldfs(&["check", w.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("\ncorrupt: 2\n"), "{text}");
}

/// Issue 39, item 12: `worldfs undo` gives back a region file byte for
/// byte (the game's layout, compression and timestamps), not only its
/// chunks' NBT: three edits of two chunks of prismarine-1.13, then `undo
/// --last 1` brings back the file as it was after the second edit and
/// `undo --since` the file the game wrote. (Before the fix the chunks came
/// back recompressed, stamped with the time of the undo and laid out
/// again.)
#[test]
fn an_undo_gives_back_the_region_file_byte_for_byte() {
    require_fuse_and_mc_oracle!("minecraft_robust::an_undo_gives_back_the_region_file_byte_for_byte");
    let w = common::copy_world(&data("prismarine-1.13"));
    let world = w.path().to_str().unwrap();
    let region = w.path().join(R13);
    let original = std::fs::read(&region).unwrap();
    let m = common::mount::Mounted::new(w.path(), &[]);
    m.ok("echo minecraft:gold_block > $MNT/block/-13,40,-155");
    m.ok("sed -i 's/ minecraft:air$/ minecraft:glass/' $MNT/chunks/-3,-12/sections/3/blocks");
    let after_two = std::fs::read(&region).unwrap();
    m.ok("echo minecraft:diamond_block > $MNT/block/-14,41,-155");
    m.unmount();
    assert_ne!(std::fs::read(&region).unwrap(), after_two);
    let (code, out) = worldfs(&["undo", world, "--last", "1"]);
    assert_eq!(code, 0, "{out}");
    common::same_bytes(&std::fs::read(&region).unwrap(), &after_two, "after undo --last 1");
    let (code, out) = worldfs(&["undo", world, "--since", "1970-01-01"]);
    assert_eq!(code, 0, "{out}");
    common::same_bytes(&std::fs::read(&region).unwrap(), &original, "after undo --since");
    let read = oracle(w.path(), &["-1,-10"]);
    assert_eq!(read.sha.len(), 1, "anvil-parser2 reads the file");
}

/// Issue 39, item 13: a BSD `flock` on session.lock (what a tool or a
/// server wrapper may hold; the game's own lock is fcntl) refuses writes
/// as the game's lock does, naming the file; the region file is
/// unchanged; once it is released the write is taken. (Before the fix the
/// write went through.)
#[test]
fn a_bsd_flock_on_session_lock_refuses_writes() {
    require_fuse!("minecraft_robust::a_bsd_flock_on_session_lock_refuses_writes");
    let w = common::copy_world(&data("prismarine-1.13"));
    let lock = w.path().join("session.lock");
    std::fs::write(&lock, "☃").unwrap();
    let region = w.path().join(R13);
    let before = std::fs::read(&region).unwrap();
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'r'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
        ])
        .arg(&lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line, "held\n");
    let m = common::mount::Mounted::new(w.path(), &[]);
    let (code, _, err) = m.sh("echo minecraft:gold_block > $MNT/block/-13,40,-155");
    assert!(code != 0 && err.contains("Device or resource busy"), "a write while a flock is held: {err}");
    let said = format!("session.lock is locked by process {} (flock)", holder.id());
    assert!(m.log_text().contains(&said), "{}", m.log_text());
    common::same_bytes(&std::fs::read(&region).unwrap(), &before, "the region file while the lock is held");
    holder.kill().unwrap();
    holder.wait().unwrap();
    m.ok("echo minecraft:gold_block > $MNT/block/-13,40,-155");
    m.unmount();
    assert_ne!(std::fs::read(&region).unwrap(), before, "written once the lock is gone");
}

/// Issue 39, item 13: a region file rewritten in place by another program
/// with its size and modification time kept (a backup restored with its
/// times; two saves within one tick of a coarse file system clock):
/// `chunks/X,Z/info` shows the new `inhabited_time` once the TTL (1 s)
/// has passed. (Before the fix it showed the old one for as long as the
/// mount ran: the cache trusted the file's identity, size and time.)
#[test]
fn a_chunk_rewritten_in_place_shows_its_new_info_after_the_ttl() {
    require_fuse_and_mc_oracle!("minecraft_robust::a_chunk_rewritten_in_place_shows_its_new_info_after_the_ttl");
    let w = common::copy_world(&data("prismarine-1.13"));
    let region = w.path().join(R13);
    let m = common::mount::Mounted::new(w.path(), &[]);
    assert!(m.ok("cat $MNT/chunks/-1,-10/info").contains("\ninhabited_time = 0\n"));
    let size = std::fs::metadata(&region).unwrap().len();
    other_program(&["inhabited", region.to_str().unwrap(), "-1", "-10", "4242"]);
    assert_eq!(std::fs::metadata(&region).unwrap().len(), size);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let info = m.ok("cat $MNT/chunks/-1,-10/info");
    assert!(info.contains("\ninhabited_time = 4242\n"), "{info}");
    m.unmount();
}
