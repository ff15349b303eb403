//! Minecraft Java worlds, the parts beyond blocks and chests: signs,
//! entities (in-chunk before 1.17, `entities/` region files after) and
//! heightmaps, checked against a second independent reader, amulet-nbt
//! (tests/scripts/mc_nbt_oracle.py, Python, never linked). The world is
//! tests/data/minecraft/made/ (made by contrib/mc-make-test-world.py with
//! amulet-nbt from Querz/NBT's real chunks) and prismarine/ (1.11.2).

use crate::common;
use crate::common::minecraft::data;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn world_copy(name: &str) -> tempfile::TempDir {
    common::copy_world(&data(name))
}

/// The reader's lines, by kind: `sign`, `rest`, `entity`, `heightmap`.
fn oracle(world: &Path) -> BTreeMap<String, Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_nbt_oracle.py");
    let out = Command::new("python3").arg(script).arg(world).output().unwrap();
    assert!(out.status.success(), "mc_nbt_oracle.py: {}", String::from_utf8_lossy(&out.stderr));
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let (kind, rest) = l.split_once(' ').unwrap();
        by_kind.entry(kind.to_string()).or_default().push(rest.to_string());
    }
    by_kind
}

const OLD: &str = "chunks/-65,-42/block_entities/-1036,70,-666";
const STYLED: &str = "chunks/-65,-42/block_entities/-1035,70,-666";
const NEW: &str = "chunks/-8,-12/block_entities/-120,70,-188";

#[test]
fn sign_edits_with_echo_and_sed_are_what_amulet_reads_and_nothing_else_changes() {
    require_fuse_and_mc_oracle!("minecraft_more::sign_edits");
    let w = world_copy("made");
    let before = oracle(w.path());
    let m = common::mount::Mounted::new(w.path(), &[]);
    assert_eq!(m.ok(&format!("cat $MNT/{OLD}/text")), "Welcome\nto the\nspawn\n\n");
    assert_eq!(m.ok(&format!("cat $MNT/{STYLED}/text")), "Keep out\n\nby order\n\n");
    assert_eq!(m.ok(&format!("cat $MNT/{NEW}/text")), "North\n\n\n\n");
    assert_eq!(m.ok(&format!("cat $MNT/{NEW}/back_text")), "\nSouth\n\n\n");
    m.ok(&format!("echo Hello > $MNT/{OLD}/text"));
    m.ok(&format!("sed -i 's/by order/by decree/' $MNT/{STYLED}/text"));
    m.ok(&format!("sed -i '2s/.*/Hello south/' $MNT/{NEW}/back_text"));
    // Refused at close (cp reports it), naming the line; the sign unchanged.
    let five = m.dir.path().join("five");
    std::fs::write(&five, "1\n2\n3\n4\n5\n").unwrap();
    let (code, _, err) = m.sh(&format!("cp {} $MNT/{NEW}/text", five.display()));
    assert_ne!(code, 0, "five lines on a sign: {err}");
    let said = format!("{err}{}", m.log_text());
    assert!(said.contains("a sign has 4 lines"), "{said}");
    m.unmount();
    let after = oracle(w.path());
    let signs: Vec<&str> = after["sign"].iter().map(String::as_str).collect();
    let want = [
        r#"-8,-12 -120,70,-188 front 1 {"text":"North"}"#,
        r#"-8,-12 -120,70,-188 front 2 """#,
        r#"-8,-12 -120,70,-188 front 3 """#,
        r#"-8,-12 -120,70,-188 front 4 """#,
        r#"-8,-12 -120,70,-188 back 1 """#,
        r#"-8,-12 -120,70,-188 back 2 {"text":"Hello south"}"#,
        r#"-8,-12 -120,70,-188 back 3 """#,
        r#"-8,-12 -120,70,-188 back 4 """#,
        r#"-65,-42 -1036,70,-666 old 1 {"text":"Hello"}"#,
        r#"-65,-42 -1036,70,-666 old 2 {"text":""}"#,
        r#"-65,-42 -1036,70,-666 old 3 {"text":""}"#,
        r#"-65,-42 -1036,70,-666 old 4 {"text":""}"#,
        r#"-65,-42 -1035,70,-666 old 1 {"text":"Keep ","extra":[{"text":"out","color":"red"}]}"#,
        r#"-65,-42 -1035,70,-666 old 2 """#,
        r#"-65,-42 -1035,70,-666 old 3 {"text":"by decree"}"#,
        r#"-65,-42 -1035,70,-666 old 4 {"text":""}"#,
    ];
    assert_eq!(signs, want);
    assert_eq!(after["rest"], before["rest"], "something besides the sign texts changed");
}

/// The heights a `heightmaps` file shows for `name`, z*16 + x.
fn shown_heights(text: &str, name: &str) -> Vec<i64> {
    let mut lines = text.lines().skip_while(|l| *l != name).skip(1);
    (0..16).flat_map(|_| lines.next().unwrap().split(' ').map(|v| v.parse::<i64>().unwrap())).collect()
}

#[test]
fn entities_and_heightmaps_are_what_amulet_reads() {
    require_fuse_and_mc_oracle!("minecraft_more::entities_and_heightmaps");
    for world in ["made", "prismarine"] {
        let w = world_copy(world);
        let lines = oracle(w.path());
        let m = common::mount::Mounted::new(w.path(), &[]);
        let in_chunks = world == "prismarine"; // 1.11: in the chunk; 1.17+: entities/
        for e in &lines["entity"] {
            let f: Vec<&str> = e.split(' ').collect();
            let path = if in_chunks {
                format!("chunks/{}/entities/{}", f[0], f[1])
            } else {
                format!("entities/{}/{}", f[0], f[1])
            };
            let text = std::fs::read_to_string(m.path(&path)).unwrap_or_else(|err| panic!("{path}: {err}"));
            assert!(text.contains(&format!("id: \"{}\"", f[2])), "{path}: {text}");
            let pos = format!("Pos: [{}d, {}d, {}d]", f[3], f[4], f[5]);
            assert!(text.contains(&pos), "{path} lacks {pos}: {text}");
        }
        let mut checked = 0;
        for h in &lines["heightmap"] {
            let f: Vec<&str> = h.splitn(3, ' ').collect();
            let text = std::fs::read_to_string(m.path(&format!("chunks/{}/heightmaps", f[0]))).unwrap();
            // 1.18+ count from the world's bottom, y -64 here.
            let bottom = if f[0] == "-8,-12" { -64 } else { 0 };
            let want: Vec<i64> = f[2].split(' ').map(|v| v.parse::<i64>().unwrap() + bottom).collect();
            assert_eq!(shown_heights(&text, f[1]), want, "chunk {} {}", f[0], f[1]);
            checked += 1;
        }
        assert!(checked >= if in_chunks { 28 } else { 8 }, "{world}: only {checked} heightmaps compared");
        assert_ne!(m.sh("echo 1 > $MNT/chunks/*/heightmaps").0, 0, "heightmaps are read-only");
        let n = lines["entity"].len();
        assert!(n >= 2, "{world}: {n} entities");
        m.unmount();
    }
}

/// Every chunk of the made world, its sign texts among its files, written
/// back as shown changes no byte.
#[test]
fn every_file_written_back_as_shown_changes_no_chunk() {
    use worldfs::documents::Document;
    use worldfs::worlds::minecraft::chunk::ChunkDoc;
    use worldfs_codec::minecraft::region;
    let mut texts = 0;
    for e in std::fs::read_dir(data("made").join("region")).unwrap() {
        let file = std::fs::read(e.unwrap().path()).unwrap();
        for (i, raw) in region::all_chunks(&file).unwrap() {
            let bytes = region::decompress(&raw).unwrap();
            let mut doc = ChunkDoc::decode(&bytes, &Default::default()).unwrap();
            for e in doc.entries().into_iter().filter(|e| e.writable && !e.dir) {
                texts += e.path.ends_with("text") as usize;
                let shown = doc.render(&e.path).unwrap();
                doc.apply(&e.path, &shown).unwrap_or_else(|err| panic!("chunk {i} {}: {err}", e.path));
            }
            assert_eq!(doc.encode().unwrap(), bytes, "chunk {i}");
        }
    }
    assert_eq!(texts, 4, "two old signs, one 1.20 sign with two sides");
}

/// `names` and `find/ID/` against anvil-parser2's reading of every section
/// (tests/scripts/mc_oracle.py): the same ids, chunks and block counts.
#[test]
fn names_and_find_agree_with_anvil_parser() {
    require_fuse!("minecraft_more::names_and_find");
    let has = Command::new("python3").args(["-c", "import anvil"]).output().is_ok_and(|o| o.status.success());
    if !has {
        common::skip("minecraft_more::names_and_find", "python3", "anvil-parser2 is missing");
        return;
    }
    let w = world_copy("querz");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/mc_oracle.py");
    let out = Command::new("python3").arg(script).arg(w.path()).output().unwrap();
    let mut want: BTreeMap<String, (std::collections::BTreeSet<String>, u64)> = BTreeMap::new();
    for l in String::from_utf8(out.stdout).unwrap().lines().filter(|l| l.starts_with("section ")) {
        let f: Vec<&str> = l.splitn(4, ' ').collect();
        for label in f[3].split(' ') {
            let e = want.entry(label.split('[').next().unwrap().to_string()).or_default();
            e.0.insert(f[1].to_string());
            e.1 += 1;
        }
    }
    assert!(want.len() > 20, "{} ids", want.len());
    let m = common::mount::Mounted::new(w.path(), &[]);
    let names = m.ok("cat $MNT/names");
    let got: Vec<String> = names.lines().filter(|l| !l.starts_with('#')).map(String::from).collect();
    let expect: Vec<String> = want.iter().map(|(id, (chunks, n))| format!("{id} {} {n}", chunks.len())).collect();
    assert_eq!(got, expect);
    assert!(m.ok("ls -l $MNT").contains("-r--r--r--"), "names is a file in the root listing");
    for (id, (chunks, _)) in &want {
        let listed = m.ok(&format!("ls $MNT/find/{id} | sort -t, -k1,1n -k2,2n"));
        let mut chunks: Vec<&String> = chunks.iter().collect();
        chunks.sort_by_key(|c| {
            let (x, z) = c.split_once(',').unwrap();
            (x.parse::<i64>().unwrap(), z.parse::<i64>().unwrap())
        });
        assert_eq!(listed.lines().collect::<Vec<_>>(), chunks, "find/{id}");
    }
    // Each link leads to its chunk; an edit shows at once.
    assert!(m.ok("cat $MNT/find/minecraft:bedrock/-8,-12/info").contains("x = -8"));
    assert_eq!(m.sh("ls $MNT/find/minecraft:gold_block").0, 2, "no gold yet");
    m.ok("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    assert_eq!(m.ok("ls $MNT/find/minecraft:gold_block"), "-8,-12\n");
    assert!(m.ok("cat $MNT/names").contains("\nminecraft:gold_block 1 1\n"));
    assert_ne!(m.sh("touch $MNT/find/minecraft:stone/0,0").0, 0, "find/ is read-only");
    m.unmount();
}

/// A crash can leave a rewrite's temporary file (`.r.X.Z.mca.worldfs-PID-N`)
/// in region/: a mount removes those whose process is gone or no worldfs,
/// and keeps a live daemon's.
#[test]
fn a_mount_removes_temporary_files_no_live_worldfs_owns() {
    require_fuse!("minecraft_more::temporary_files");
    let a = world_copy("querz");
    let first = common::mount::Mounted::new(a.path(), &[]);
    let w = world_copy("querz");
    let region = w.path().join("region");
    let dead = region.join(".r.0.0.mca.worldfs-2147483646-0"); // above any pid_max
    let not_ours = region.join(format!(".r.0.0.mca.worldfs-{}-3", std::process::id()));
    let live = region.join(format!(".r.-1.-1.mca.worldfs-{}-1", first.pid()));
    let other = region.join(".r.0.0.mca.worldfs-x-1"); // not our name form
    for f in [&dead, &not_ours, &live, &other] {
        std::fs::write(f, b"partial").unwrap();
    }
    let m = common::mount::Mounted::new(w.path(), &[]);
    assert!(m.ok("ls $MNT/chunks").contains("1,3"));
    assert!(!dead.exists() && !not_ours.exists(), "stale temporary files are removed");
    assert!(live.exists(), "a live worldfs's temporary file is kept");
    assert!(other.exists(), "a file of another form is kept");
    m.unmount();
    first.unmount();
}

/// A player's inventory edited with `sed -i`, vim and `echo >>` is what
/// amulet-nbt reads (the off hand too), an item in a slot the game does not
/// keep is refused, and `worldfs undo --last N` puts the player's file back
/// byte for byte.
#[test]
fn a_player_edit_is_read_by_amulet_and_undone() {
    require_fuse_and_mc_oracle!("minecraft_more::a_player_edit");
    let w = world_copy("made");
    let uuid = "0000000b-0000-0016-0000-00210000002c";
    let file = w.path().join(format!("playerdata/{uuid}.dat"));
    let before = std::fs::read(&file).unwrap();
    let m = common::mount::Mounted::new(w.path(), &[]);
    let inv = format!("$MNT/players/{uuid}/inventory");
    assert!(m.ok(&format!("cat {inv}")).contains("\n1 12 minecraft:torch\n"));
    // Slot 36 is not one the game keeps (it would drop the item when it
    // loads the player): refused, the file as it was.
    let (code, _, err) = m.sh(&format!("sed -i '$a 36 1 minecraft:dirt' {inv}"));
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("slot 36: a player's inventory keeps slots 0 to 35"), "{}", m.refusals());
    assert_eq!(std::fs::read(&file).unwrap(), before, "a refused edit leaves the file as it was");
    m.ok(&format!("sed -i '$a 5 3 minecraft:apple' {inv}"));
    m.ok(&format!("sed -i '$a -106 1 minecraft:shield' {inv}"));
    // vim changes a count in place; echo appends an item.
    let mut edits = 3;
    let apples = if common::mount::which("vim").is_some() {
        let home = tempfile::tempdir().unwrap();
        m.ok(&format!(
            "HOME={} TERM=dumb vim -es -c '%s/^5 3 /5 4 /' -c wq {inv} </dev/null >/dev/null 2>&1; true",
            home.path().display()
        ));
        edits += 1;
        4
    } else {
        common::skip("minecraft_more::a_player_edit (vim part)", "vim", "vim not installed");
        3
    };
    m.ok(&format!("echo '7 2 minecraft:bread' >> {inv}"));
    m.unmount();
    let read = |f: &Path| {
        let code = "import amulet_nbt,sys; t=amulet_nbt.load(sys.argv[1]).compound; \
                    print(';'.join(f\"{i['Slot'].py_int}:{i['Count'].py_int}:{i['id'].py_str}\" for i in t['Inventory']))";
        let out = Command::new("python3").args(["-c", code]).arg(f).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        read(&file),
        format!(
            "0:64:minecraft:stone;1:12:minecraft:torch;5:{apples}:minecraft:apple;-106:1:minecraft:shield;7:2:minecraft:bread\n"
        )
    );
    let undo = Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .arg("undo")
        .arg(w.path())
        .args(["--last", &edits.to_string()])
        .output();
    let undo = undo.unwrap();
    assert!(undo.status.success(), "{}", String::from_utf8_lossy(&undo.stderr));
    assert_eq!(std::fs::read(&file).unwrap(), before, "the player's file is back byte for byte");
}

/// Make the first chunk stored in `region` undecodable: its compressed
/// bytes (after the length and the compression byte) become garbage.
fn break_first_chunk(region: &Path) {
    let mut bytes = std::fs::read(region).unwrap();
    let slot = (0..1024).find(|i| bytes[i * 4..i * 4 + 4] != [0; 4]).expect("a stored chunk");
    let sector = u32::from_be_bytes([0, bytes[slot * 4], bytes[slot * 4 + 1], bytes[slot * 4 + 2]]) as usize;
    let start = sector * 4096 + 5;
    for b in &mut bytes[start..start + 64] {
        *b = 0xA5;
    }
    std::fs::write(region, bytes).unwrap();
}

/// A `stat` or a listing of the root reads no chunk: `names`, whose content
/// needs every chunk, shows a size of 0. Observed on a world with one chunk
/// that cannot be decoded: `ls -l MNT` and `stat MNT/names` succeed and
/// log nothing of it, and only reading `names` (which decodes every chunk)
/// finds it: the log names it, left out of `names` (since issue 39 it
/// hides no other chunk's blocks). On a good world `names` reads whole
/// through the size 0, with `-o ro` too.
#[test]
fn a_root_listing_reads_no_chunk() {
    require_fuse!("minecraft_more::a_root_listing_reads_no_chunk");
    let w = world_copy("querz");
    break_first_chunk(&w.path().join("region/r.0.0.mca"));
    let m = common::mount::Mounted::new(w.path(), &[]);
    let listing = m.ok("ls -l $MNT");
    let names_line = listing.lines().find(|l| l.ends_with(" names")).expect("names in the root listing");
    assert!(names_line.starts_with("-r--r--r--"), "{names_line}");
    assert_eq!(names_line.split_whitespace().nth(4), Some("0"), "{names_line}");
    assert_eq!(m.ok("stat -c %s $MNT/names"), "0\n");
    assert!(m.ok("ls $MNT/chunks").contains("1,3\n"), "a listing reads headers only");
    assert!(!m.log_text().contains("chunk 1,3"), "nothing read the chunk yet: {}", m.log_text());
    let names = m.ok("cat $MNT/names");
    assert!(names.contains("\nminecraft:stone "), "the other chunks' blocks: {names}");
    let log = m.log_text();
    assert!(log.contains("names and find/ leave out") && log.contains("chunk 1,3"), "the log names it: {log}");
    m.unmount();

    for options in [&[][..], &["ro"][..]] {
        let w = world_copy("querz");
        let m = common::mount::Mounted::new(w.path(), options);
        m.ok("ls -l $MNT");
        let names = m.ok("cat $MNT/names");
        assert!(names.len() > 100 && names.contains("\nminecraft:bedrock "), "{options:?}: {names}");
        assert_eq!(m.ok("wc -c < $MNT/names").trim(), names.len().to_string(), "{options:?}");
        assert_eq!(m.ok("grep -c . $MNT/names").trim(), names.lines().count().to_string());
        m.unmount();
    }
}

/// `worldfs check WORLD` with its exit status and standard output.
fn worldfs_check(world: &Path, json: bool) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldfs"));
    cmd.arg("check").arg(world);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `worldfs check` of good worlds of every format: every chunk counted,
/// nothing corrupt, exit status 0; the counts agree with the header's
/// chunks (`ls chunks` of a mount is not needed: the JSON says).
#[test]
fn check_reads_every_chunk_of_good_worlds() {
    for (name, chunks, entity_chunks) in [("querz", 4, 0), ("made", 2, 1), ("prismarine", 28, 0)] {
        let w = world_copy(name);
        let (code, text) = worldfs_check(w.path(), false);
        assert_eq!(code, 0, "{name}: {text}");
        assert!(text.contains(&format!("\nchunks: {chunks}\n")), "{name}: {text}");
        assert!(text.contains("\ncorrupt: 0\n"), "{name}: {text}");
        let (code, json) = worldfs_check(w.path(), true);
        assert_eq!(code, 0);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["chunks"], chunks, "{name}");
        assert_eq!(v["entity_chunks"], entity_chunks, "{name}");
        assert!(v["sections"].as_u64().unwrap() >= chunks, "{name}");
    }
}

/// Rewrite chunk (x, z) of region file `path` (zlib, as the game does)
/// after `change` edits its NBT.
fn edit_chunk(path: &Path, (x, z): (i64, i64), change: impl FnOnce(&mut worldfs_codec::minecraft::nbt::Compound)) {
    use worldfs_codec::minecraft::{nbt, region};
    let file = std::fs::read(path).unwrap();
    let i = (x.rem_euclid(32) + 32 * z.rem_euclid(32)) as usize;
    let mut chunks = region::all_chunks(&file).unwrap();
    let c = &mut chunks.iter_mut().find(|c| c.0 == i).expect("the chunk").1;
    let (name, mut root) = nbt::decode(&region::decompress(c).unwrap()).unwrap();
    change(&mut root);
    *c = region::compress(&nbt::encode(&name, &root).unwrap(), c.timestamp);
    std::fs::write(path, region::build(&chunks).0).unwrap();
}

/// A damaged copy: a chunk whose compressed bytes are broken and a 1.18
/// section whose palette lost entries its indices use are each named by
/// region file, chunk (and section); exit status 1; the good chunks are
/// still counted.
#[test]
fn check_names_each_broken_chunk_and_section() {
    use worldfs_codec::minecraft::nbt::{Compound, Tag};
    let w = world_copy("querz");
    break_first_chunk(&w.path().join("region/r.0.0.mca"));
    let mut cut = None;
    edit_chunk(&w.path().join("region/r.-1.-1.mca"), (-8, -12), |root: &mut Compound| {
        let Some(Tag::List(sections)) = root.get_mut("sections") else { panic!("1.18 sections") };
        for s in &mut sections.items {
            let Tag::Compound(s) = s else { continue };
            let y = s.int("Y").unwrap();
            let states = s.compound_mut("block_states").unwrap();
            let Some(Tag::List(palette)) = states.get_mut("palette") else { continue };
            if (3..=16).contains(&palette.items.len()) && cut.is_none() {
                palette.items.truncate(2);
                cut = Some(y);
            }
        }
    });
    let y = cut.expect("a section with 3 to 16 palette entries");
    let (code, text) = worldfs_check(w.path(), false);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("\ncorrupt: 2\n"), "{text}");
    assert!(text.contains("  region/r.0.0.mca: chunk 1,3: "), "{text}");
    let line = text.lines().find(|l| l.contains("region/r.-1.-1.mca: chunk -8,-12:")).expect("the section's line");
    assert!(line.contains(&format!("section {y}: entry ")) && line.ends_with("the palette has 2"), "{line}");
    assert!(text.contains("\nchunks: 3\n"), "the three decodable chunks: {text}");
}

/// The NBT of chunk (x, z) of `world`, through worldfs's region codec (an
/// external chunk's bytes from its `c.X.Z.mcc`), and its compression byte.
fn stored_chunk(world: &Path, (x, z): (i64, i64)) -> (u8, bool, Vec<u8>) {
    use worldfs_codec::minecraft::region;
    let path = world.join(format!("region/r.{}.{}.mca", x.div_euclid(32), z.div_euclid(32)));
    let file = std::fs::read(path).unwrap();
    let i = (x.rem_euclid(32) + 32 * z.rem_euclid(32)) as usize;
    let mut raw = region::raw_chunk(&file, i).unwrap().expect("the chunk");
    if raw.external {
        raw.data = std::fs::read(world.join(format!("region/c.{x}.{z}.mcc"))).unwrap();
    }
    (raw.compression, raw.external, region::decompress(&raw).unwrap())
}

/// LZ4 chunks written by lz4-java's LZ4BlockOutputStream (the class the
/// game uses; contrib/mc-make-lz4-world.java made tests/data/minecraft/lz4/
/// from querz/'s chunks): one in its region file, one outside it in
/// `c.483.-263.mcc` (the 0x80 flag), and a two-block stream, all read back
/// to the NBT querz/ stores with zlib; ours round-trip.
#[test]
fn lz4_chunks_written_by_lz4_java_read_back_as_the_originals() {
    use worldfs_codec::minecraft::lz4block;
    let lz4 = data("lz4");
    let querz = data("querz");
    let (kind, external, a) = stored_chunk(&lz4, (-8, -12));
    assert_eq!((kind, external), (4, false));
    assert_eq!(a, stored_chunk(&querz, (-8, -12)).2);
    let (kind, external, b) = stored_chunk(&lz4, (483, -263));
    assert_eq!((kind, external), (4, true));
    assert_eq!(b, stored_chunk(&querz, (483, -263)).2);
    let stream = std::fs::read(lz4.join("two-chunks.lz4")).unwrap();
    let both = lz4block::decode(&stream, usize::MAX).unwrap();
    assert_eq!(both, [a.clone(), b].concat(), "a stream of two blocks");
    assert_eq!(lz4block::decode(&lz4block::encode(&both), usize::MAX).unwrap(), both);
    // lz4-java's checksum is XXH32 with its seed, the top 4 bits cleared:
    // the first block's header holds it for the first 64 KiB.
    let stored = u32::from_le_bytes(stream[17..21].try_into().unwrap());
    assert_eq!(stored, lz4block::checksum(&both[..65536]));
}

/// `worldfs check` reads LZ4 and external chunks; a stream whose checksum
/// does not match its data is refused, naming the region file and chunk.
#[test]
fn check_reads_lz4_chunks_and_names_a_broken_stream() {
    let w = world_copy("lz4");
    let (code, text) = worldfs_check(w.path(), false);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("\nchunks: 2\n") && text.contains("\ncorrupt: 0\n"), "{text}");
    let mcc = w.path().join("region/c.483.-263.mcc");
    let mut bytes = std::fs::read(&mcc).unwrap();
    bytes[17] ^= 0x01; // the first block's checksum
    std::fs::write(&mcc, bytes).unwrap();
    let (code, text) = worldfs_check(w.path(), false);
    assert_eq!(code, 1, "{text}");
    let line = text.lines().find(|l| l.contains("region/r.15.-9.mca: chunk 483,-263: ")).expect("the chunk named");
    assert!(line.contains("LZ4 block at byte 0: checksum"), "{line}");
}

/// Decode an LZ4 stream with lz4-java's LZ4BlockInputStream (the game's
/// reader, checksums checked), if Java and the jar are here.
fn lz4_java_reads(stream: &[u8]) -> Option<Vec<u8>> {
    let jar = Path::new("/usr/share/java/lz4-java.jar");
    if !jar.is_file() || common::mount::which("java").is_none() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.lz4"), stream).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/Lz4Read.java");
    let out = Command::new("java").arg("-cp").arg(jar).arg(script).arg(dir.path().join("in.lz4")).output().unwrap();
    assert!(out.status.success(), "lz4-java refused the stream: {}", String::from_utf8_lossy(&out.stderr));
    Some(out.stdout)
}

/// A block edited through the mount in an LZ4 chunk and in an external
/// one: each chunk stays LZ4 (the external one comes back into its region
/// file and its `.mcc` goes, as the game does when a chunk fits again),
/// lz4-java's reader accepts what was written and reads the new block.
#[test]
fn lz4_chunks_are_written_back_as_lz4_that_lz4_java_reads() {
    require_fuse!("minecraft_more::lz4_written");
    let w = world_copy("lz4");
    let before = stored_chunk(w.path(), (-8, -12)).2;
    let m = common::mount::Mounted::new(w.path(), &[]);
    m.ok("echo minecraft:gold_block > $MNT/block/-128,-64,-192");
    m.ok("echo minecraft:gold_block > $MNT/block/7728,-64,-4208");
    assert_eq!(m.ok("cat $MNT/block/7728,-64,-4208"), "minecraft:gold_block\n");
    m.unmount();
    for (x, z) in [(-8, -12), (483, -263)] {
        let (kind, external, nbt) = stored_chunk(w.path(), (x, z));
        assert_eq!((kind, external), (4, false), "chunk {x},{z}");
        assert!(nbt.windows(20).any(|s| s == b"minecraft:gold_block"), "chunk {x},{z} holds the new block");
        let path = w.path().join(format!("region/r.{}.{}.mca", x.div_euclid(32), z.div_euclid(32)));
        let file = std::fs::read(path).unwrap();
        let i = (x.rem_euclid(32) + 32 * z.rem_euclid(32)) as usize;
        let raw = worldfs_codec::minecraft::region::raw_chunk(&file, i).unwrap().unwrap();
        match lz4_java_reads(&raw.data) {
            Some(read) => assert_eq!(read, nbt, "lz4-java reads what worldfs reads"),
            None => {
                common::skip("minecraft_more::lz4_written", "java", "java or /usr/share/java/lz4-java.jar is missing")
            }
        }
    }
    assert!(!w.path().join("region/c.483.-263.mcc").exists(), "the chunk is back in its region file");
    assert_ne!(stored_chunk(w.path(), (-8, -12)).2, before);
}
