//! Every dimension of both folder layouts of Java worlds, and `worldfs
//! check` refusing what the mount refuses. The worlds are real region
//! files moved into each layout (no world of 26.1 with a permissive
//! licence was found): tests/data/minecraft/layout-26/ (made by
//! contrib/mc-make-layout-world.py: a 1.21.5 region of
//! Toy-Tank-Royale-Dev, MIT, in `dimensions/minecraft/overworld/`, Querz's
//! chunks as the Nether and the End, players in `players/data/`), and
//! querz/ given a `DIM-1/` and a `DIM1/` (the layout before 26.1). What
//! the mount shows is compared with anvil-parser2 (tests/scripts/
//! mc_oracle.py) reading each dimension's folder.

use crate::common;
use crate::common::minecraft::data;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// anvil-parser2's lines for the region files of `dir/region`.
fn oracle(dir: &Path) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_oracle.py");
    let out = Command::new("python3").arg(script).arg(dir).output().unwrap();
    assert!(out.status.success(), "mc_oracle.py {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
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

/// The block states of a drawing of a section, y*256 + z*16 + x, each
/// with its properties sorted (as the reader prints them).
fn drawn(text: &str, cx: i64, y: i64, cz: i64) -> Vec<String> {
    use worldfs::view::layers::{self, Frame, Rows};
    let frame = Frame { size: [16, 16, 16], origin: [16 * cx, 16 * y, 16 * cz], rows: Rows::ZAscending };
    let d = layers::parse(&frame, text).unwrap();
    let canonical = |label: &str| match label.split_once('[') {
        Some((name, rest)) => {
            let mut props: Vec<&str> = rest.trim_end_matches(']').split(',').collect();
            props.sort();
            format!("{name}[{}]", props.join(","))
        }
        None => label.to_string(),
    };
    (0..4096).map(|i| canonical(&d.legend[d.at(i % 16, i / 256, i / 16 % 16)].label)).collect()
}

/// Every chunk and section the reader finds in `disk` (a dimension's
/// folder) is what `shown` (its place in the mount) shows; the number of
/// sections compared.
fn same_as_reader(m: &common::mount::Mounted, disk: &Path, shown: &str) -> usize {
    let lines = oracle(disk);
    let mut want: Vec<&str> = hashes_keys(&lines);
    want.sort();
    let listed = m.ok(&format!("ls $MNT/{shown}chunks | sort"));
    assert_eq!(listed.lines().collect::<Vec<_>>(), want, "{shown}chunks");
    let mut sections = 0;
    for l in lines.iter().filter(|l| l.starts_with("section ")) {
        let f: Vec<&str> = l.splitn(4, ' ').collect();
        let (cx, cz) = f[1].split_once(',').unwrap();
        let (cx, cz, y): (i64, i64, i64) = (cx.parse().unwrap(), cz.parse().unwrap(), f[2].parse().unwrap());
        let text = std::fs::read_to_string(m.path(&format!("{shown}chunks/{}/sections/{y}/blocks", f[1]))).unwrap();
        let want: Vec<&str> = f[3].split(' ').collect();
        assert!(drawn(&text, cx, y, cz).iter().zip(&want).all(|(a, b)| a == b), "{shown}chunks/{} section {y}", f[1]);
        sections += 1;
    }
    sections
}

fn hashes_keys(lines: &[String]) -> Vec<&str> {
    lines.iter().filter_map(|l| l.strip_prefix("chunk ")).map(|l| l.split(' ').next().unwrap()).collect()
}

fn worldfs(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn check_json(world: &Path) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).arg("check").arg("--json").arg(world).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), serde_json::from_str(&text).unwrap_or(serde_json::Value::Null), format!("{text}{err}"))
}

const NETHER: &str = "dimensions/minecraft/the_nether/";
const END: &str = "dimensions/minecraft/the_end/";

#[test]
fn a_26_1_world_is_checked_and_mounted_with_every_dimension() {
    require_fuse_and_mc_oracle!("minecraft_dimensions::a_26_1_world");
    let w = common::copy_world(&data("layout-26"));
    let (ok, report, text) = check_json(w.path());
    assert!(ok, "{text}");
    let dims: Vec<&str> = report["dimensions"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(dims, ["minecraft:overworld", "minecraft:the_end", "minecraft:the_nether"], "{text}");
    assert_eq!(report["chunks"], 40, "38 overworld chunks, one each in the Nether and the End: {text}");
    assert_eq!((report["entity_chunks"].as_u64(), report["poi_chunks"].as_u64()), (Some(4), Some(1)), "{text}");
    assert_eq!(report["players"], 1, "{text}");
    let overworld = w.path().join("dimensions/minecraft/overworld");
    let before = (hashes(&oracle(&overworld)), hashes(&oracle(&w.path().join(END))));
    let nether_before = hashes(&oracle(&w.path().join(NETHER)));
    let m = common::mount::Mounted::new(w.path(), &[]);
    let mut sections = same_as_reader(&m, &overworld, "");
    sections += same_as_reader(&m, &w.path().join(NETHER), NETHER);
    sections += same_as_reader(&m, &w.path().join(END), END);
    assert!(sections > 100, "only {sections} sections compared");
    assert_eq!(m.ok("ls $MNT/dimensions/minecraft"), "the_end\nthe_nether\n");
    assert_eq!(m.ok("ls $MNT/entities | wc -l").trim(), "4");
    let records = m.ok("cat $MNT/poi/-50,-50/records");
    assert_eq!(records, "# x,y,z type free_tickets\n-795,70,-790 minecraft:home 1\n-793,81,-789 minecraft:meeting 1\n");
    let inventory = m.ok("cat $MNT/players/0000000b-0000-0016-0000-00210000002c/inventory");
    assert!(inventory.contains("0 64 minecraft:stone"), "{inventory}");
    // An edit in the Nether: only that dimension's region file changes;
    // a refusal there names the dimension's path.
    m.ok(&format!("echo minecraft:gold_block > $MNT/{NETHER}block/-128,-64,-192"));
    let (code, _, _) = m.sh(&format!("echo minecraft:not_a_block > $MNT/{NETHER}block/-128,-64,-191"));
    assert_ne!(code, 0);
    assert!(m.refusals().contains(&format!("{NETHER}block/-128,-64,-191")), "{}", m.refusals());
    m.unmount();
    let nether = oracle(&w.path().join(NETHER));
    let gold = nether.iter().find(|l| l.starts_with("section -8,-12 -4 ")).unwrap();
    assert_eq!(gold.split(' ').nth(3), Some("minecraft:gold_block"));
    assert_eq!((hashes(&oracle(&overworld)), hashes(&oracle(&w.path().join(END)))), before);
    // worldfs undo takes it back in the Nether's region file.
    let world = w.path().to_str().unwrap();
    let (ok, list) = worldfs(&["undo", world]);
    assert!(ok && list.contains("write block/-128,-64,-192 in minecraft:the_nether"), "{list}");
    let (ok, out) = worldfs(&["undo", world, "--last", "1"]);
    assert!(ok, "{out}");
    assert_eq!(hashes(&oracle(&w.path().join(NETHER))), nether_before);
}

/// `worldfs undo` in the Nether gives back its region file byte for byte,
/// as in the overworld (minecraft_robust's
/// `an_undo_gives_back_the_region_file_byte_for_byte`): two edits, `undo
/// --last 1` brings back the file as the first edit left it, and `undo
/// --since` (which walks back over that revert too) the file as it was.
/// (Before the fix another dimension's chunks were put back one by one,
/// recompressed and stamped with the time of the undo, and the revert
/// journaled no patch of the file.)
#[test]
fn an_undo_in_the_nether_gives_back_its_region_file_byte_for_byte() {
    require_fuse_and_mc_oracle!("minecraft_dimensions::an_undo_in_the_nether_gives_back_its_region_file_byte_for_byte");
    let w = common::copy_world(&data("layout-26"));
    let world = w.path().to_str().unwrap();
    let region = w.path().join(NETHER).join("region/r.-1.-1.mca");
    let overworld = w.path().join("dimensions/minecraft/overworld/region");
    let overworld_files = |dir: &Path| {
        let mut files: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
        files.sort();
        files
    };
    let (original, overworld_before) = (std::fs::read(&region).unwrap(), overworld_files(&overworld));
    let m = common::mount::Mounted::new(w.path(), &[]);
    m.ok(&format!("echo minecraft:gold_block > $MNT/{NETHER}block/-128,-64,-192"));
    let after_one = std::fs::read(&region).unwrap();
    m.ok(&format!("echo minecraft:diamond_block > $MNT/{NETHER}block/-127,-64,-192"));
    m.unmount();
    assert_ne!(std::fs::read(&region).unwrap(), after_one);
    // A second later, so that a chunk written again by the undo would
    // carry another timestamp than the edit's.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (ok, out) = worldfs(&["undo", world, "--last", "1"]);
    assert!(ok, "{out}");
    common::same_bytes(&std::fs::read(&region).unwrap(), &after_one, "the Nether's region file after undo --last 1");
    let (ok, out) = worldfs(&["undo", world, "--since", "1970-01-01"]);
    assert!(ok, "{out}");
    common::same_bytes(&std::fs::read(&region).unwrap(), &original, "the Nether's region file after undo --since");
    assert!(overworld_files(&overworld) == overworld_before, "the overworld's region files changed");
    let nether = oracle(&w.path().join(NETHER));
    assert!(nether.iter().any(|l| l.starts_with("section -8,-12 -4 ")), "anvil-parser2 reads the file: {nether:?}");
}

/// querz/ with a Nether (DIM-1/) and an End (DIM1/, with entities/).
fn old_layout_world() -> tempfile::TempDir {
    let w = common::copy_world(&data("querz"));
    let copy = |from: &str, to: &str| {
        std::fs::create_dir_all(w.path().join(to).parent().unwrap()).unwrap();
        std::fs::copy(data(from), w.path().join(to)).unwrap();
    };
    copy("made/region/r.-1.-1.mca", "DIM-1/region/r.-1.-1.mca");
    copy("made/region/r.-3.-2.mca", "DIM1/region/r.-3.-2.mca");
    copy("made/entities/r.-3.-2.mca", "DIM1/entities/r.-3.-2.mca");
    w
}

#[test]
fn the_nether_and_the_end_of_the_older_layout_are_mounted_and_checked() {
    require_fuse_and_mc_oracle!("minecraft_dimensions::the_nether_and_the_end_of_the_older_layout");
    let w = old_layout_world();
    let (ok, report, text) = check_json(w.path());
    assert!(ok, "{text}");
    let folders: Vec<String> = report["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} {}", d["id"].as_str().unwrap(), d["folder"].as_str().unwrap()))
        .collect();
    assert_eq!(folders, ["minecraft:overworld ./", "minecraft:the_end DIM1/", "minecraft:the_nether DIM-1/"]);
    assert_eq!((report["chunks"].as_u64(), report["entity_chunks"].as_u64()), (Some(6), Some(1)), "{text}");
    let overworld = hashes(&oracle(w.path()));
    let m = common::mount::Mounted::new(w.path(), &[]);
    same_as_reader(&m, w.path(), "");
    same_as_reader(&m, &w.path().join("DIM-1"), NETHER);
    same_as_reader(&m, &w.path().join("DIM1"), END);
    assert_eq!(m.ok(&format!("ls $MNT/{END}entities")), "-65,-42\n");
    assert!(m.ok(&format!("cat $MNT/{END}entities/-65,-42/0")).contains("minecraft:pig"));
    assert!(m.ok(&format!("cat $MNT/{END}names")).contains("minecraft:"));
    m.ok(&format!("sed -i 's/ minecraft:air$/ minecraft:glass/' $MNT/{END}chunks/-65,-42/sections/5/blocks"));
    m.unmount();
    let end = oracle(&w.path().join("DIM1"));
    assert!(end.iter().any(|l| l.starts_with("section -65,-42 5 ") && l.contains("minecraft:glass")));
    assert_eq!(hashes(&oracle(w.path())), overworld, "the overworld is unchanged");
}

#[test]
fn a_folder_that_is_no_world_says_what_each_kind_lacks() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().to_str().unwrap();
    let (ok, out) = worldfs(&["check", path]);
    assert!(!ok);
    assert!(out.contains("A Luanti world has world.mt and its map"), "{out}");
    assert!(out.contains("here: no level.dat and no region/"), "{out}");
    std::fs::write(d.path().join("level.dat"), b"x").unwrap();
    let (ok, out) = worldfs(&["check", path]);
    assert!(!ok && out.contains("here: level.dat, but no region/"), "{out}");
    assert!(!out.contains("is this a Luanti world?"), "{out}");
    let mnt = tempfile::tempdir().unwrap();
    let (ok, out) = worldfs(&["mount", path, mnt.path().to_str().unwrap(), "-f"]);
    assert!(!ok && out.contains("from 26.1 dimensions/minecraft/overworld/region/"), "{out}");
}

/// `worldfs check` finds what the mount refuses: a level.dat that is not
/// gzip (the mount does not start), a player's file that is cut short (its
/// directory gives EIO), in either layout, and a bad chunk in the Nether.
#[test]
fn check_reports_level_dat_players_and_every_dimension_as_the_mount_refuses_them() {
    require_fuse_and_mc_oracle!("minecraft_dimensions::check_reports_level_dat_players");
    for (name, players) in [("made", "playerdata"), ("layout-26", "players/data")] {
        let w = common::copy_world(&data(name));
        let player = w.path().join(players).join("0000000b-0000-0016-0000-00210000002c.dat");
        let bytes = std::fs::read(&player).unwrap();
        std::fs::write(&player, &bytes[..bytes.len() / 2]).unwrap();
        let (ok, report, text) = check_json(w.path());
        assert!(!ok, "{name}: check passed a cut player file: {text}");
        let corrupt = report["corrupt"].as_array().unwrap();
        assert_eq!(corrupt.len(), 1, "{text}");
        assert_eq!(corrupt[0]["file"], format!("{players}/0000000b-0000-0016-0000-00210000002c.dat"));
        let m = common::mount::Mounted::new(w.path(), &[]);
        let (code, _, err) = m.sh("cat $MNT/players/0000000b-0000-0016-0000-00210000002c/inventory");
        assert_ne!(code, 0, "{name}: the mount read the cut player: {err}");
        m.unmount();
        std::fs::write(&player, &bytes).unwrap();
        std::fs::write(w.path().join("level.dat"), b"not gzip at all").unwrap();
        let (ok, report, text) = check_json(w.path());
        assert!(!ok, "{name}: check passed a level.dat that is not gzip: {text}");
        assert_eq!(report["corrupt"][0]["file"], "level.dat", "{text}");
        assert!(report["corrupt"][0]["reason"].as_str().unwrap().contains("not gzip-compressed NBT"), "{text}");
        let mnt = tempfile::tempdir().unwrap();
        let (ok, out) = worldfs(&["mount", w.path().to_str().unwrap(), mnt.path().to_str().unwrap(), "-f"]);
        assert!(!ok && out.contains("not gzip-compressed NBT"), "{name}: the mount took it: {out}");
    }
    // A chunk of the Nether whose NBT is cut short.
    let w = common::copy_world(&data("layout-26"));
    let file = w.path().join(NETHER).join("region/r.-1.-1.mca");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = 8192 + 5 + 100; // inside the chunk's zlib stream
    bytes[at..at + 64].fill(0);
    std::fs::write(&file, &bytes).unwrap();
    let (ok, report, text) = check_json(w.path());
    assert!(!ok, "{text}");
    assert_eq!(report["corrupt"][0]["file"], format!("{NETHER}region/r.-1.-1.mca"), "{text}");
}
