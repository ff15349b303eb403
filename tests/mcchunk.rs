//! Minecraft chunk data: every real dump round trips byte for byte, and
//! prismarine-chunk (PrismarineJS, from npm) is the oracle: it reads every
//! chunk we write and sees the same block states, light and biomes as we
//! meant, the 13-bit direct form included.

use crate::common;

use common::mount::Mounted;
use std::path::{Path, PathBuf};
use std::process::Command;
use worldfs::documents::mcchunk::McChunk;
use worldfs::documents::{Context, Document};
use worldfs_codec::minecraft::packet::{Chunk, Layout, Shape, nibble};

struct Sample {
    dump: PathBuf,
    shape: Shape,
    options: Vec<(String, Option<String>)>,
}

/// The real chunk dumps (tests/data/formats/mc_chunk_section).
fn samples() -> Vec<Sample> {
    let dir = common::real_formats("mc_chunk_section");
    let s = |name: &str, bitmap: u32, layout: Layout, biomes: bool| Sample {
        dump: dir.join(format!("{name}.dump")),
        shape: Shape { layout, bitmap, sky_light: layout == Layout::Spanning, biomes },
        options: if layout == Layout::Padded { vec![("version".into(), Some("1.16".into()))] } else { vec![] },
    };
    vec![
        s("prismarine_1.9_chunk", 63, Layout::Spanning, true),
        s("prismarine_1.12_chunk", 31, Layout::Spanning, true),
        s("prismarine_1.12_chunk_hypixel", 28, Layout::Spanning, true),
        s("prismarine_1.16.1_chunk_1_-1", 31, Layout::Padded, false),
    ]
}

fn ctx(s: &Sample) -> Context {
    let meta = s.dump.with_extension("meta");
    Context {
        path: s.dump.clone(),
        companions: vec![(meta.clone(), std::fs::read(&meta).unwrap())],
        options: s.options.clone(),
    }
}

#[test]
fn every_dump_round_trips_and_every_file_applies_to_itself() {
    let all = samples();
    for s in all {
        let bytes = std::fs::read(&s.dump).unwrap();
        let doc = McChunk::decode(&bytes, &ctx(&s)).unwrap_or_else(|e| panic!("{}: {e}", s.dump.display()));
        assert_eq!(doc.encode().unwrap(), bytes, "{}", s.dump.display());
        let chunk = Chunk::decode(&bytes, s.shape).unwrap();
        assert_eq!(chunk.sections.len() as u32, s.shape.bitmap.count_ones());
        let mut d = McChunk::decode(&bytes, &ctx(&s)).unwrap();
        for e in doc.entries().into_iter().filter(|e| !e.dir && e.writable) {
            d.apply(&e.path, &doc.render(&e.path).unwrap()).unwrap_or_else(|err| panic!("{}: {err}", e.path));
        }
        assert_eq!(d.encode().unwrap(), bytes, "{}: a file applied to itself changed the chunk", s.dump.display());
    }
    // The 1.9 capture's 177 lava blocks all have block light 15 when
    // the light is read as plain nibbles (as the client reads it).
    let all = samples();
    let c = Chunk::decode(&std::fs::read(&all[0].dump).unwrap(), all[0].shape).unwrap();
    let (mut lava, mut lit) = (0, 0);
    for s in &c.sections {
        for (i, st) in s.states.iter().enumerate() {
            if matches!(st >> 4, 10 | 11) {
                lava += 1;
                lit += (nibble(&s.block_light, i) == 15) as usize;
            }
        }
    }
    assert_eq!((lava, lit), (177, 177));
    let mut bits: Vec<u8> = c.sections.iter().map(|s| s.bits).collect();
    bits.sort();
    assert_eq!(bits, [4, 4, 4, 4, 5, 5]); // "4-bit x4, 5-bit x2"
    // The wrong layout is refused with a hint, not misread.
    let all = samples();
    let e = Chunk::decode(&std::fs::read(&all[3].dump).unwrap(), Shape { layout: Layout::Spanning, ..all[3].shape })
        .unwrap_err();
    assert!(e.contains("1.16") || e.contains("longs"), "{e}");
}

fn oracle_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WORLDFS_NPM_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/npm-oracle"));
    (dir.join("node_modules/prismarine-chunk").is_dir() && common::mount::which("node").is_some()).then_some(dir)
}

/// prismarine-chunk's reading of a dump: one line per block and biome.
fn prismarine(dir: &Path, dump: &Path, shape: Shape) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcchunk_check.js");
    let out = Command::new("node")
        .arg(script)
        .arg(dir)
        .arg("1.12")
        .arg(dump)
        .arg(shape.bitmap.to_string())
        .arg(if shape.sky_light { "1" } else { "0" })
        .arg(if shape.biomes { "1" } else { "0" })
        .output()
        .unwrap();
    assert!(out.status.success(), "prismarine-chunk: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

/// The first line where two readings differ, if any.
fn same(a: &[String], b: &[String], what: &str) {
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "{what}: line {i}: prismarine-chunk {:?}, worldfs {:?} ({} and {} lines)",
            a.get(i),
            b.get(i),
            a.len(),
            b.len()
        );
    }
}

/// Where prismarine-chunk looks for light value `i`: it reads the 2048
/// bytes as 256 big-endian longs holding 16 nibbles each from the low bits,
/// not as the plain nibble array the client uses (177 of 177 lava blocks of
/// the 1.9 capture have light 15 only when read as nibbles: the test above). Comparing through this order checks the bytes, which is
/// what worldfs writes.
fn prismarine_light_index(i: usize) -> usize {
    let (long, j) = (i / 16, i % 16);
    2 * (long * 8 + 7 - j / 2) + j % 2
}

/// Our reading, in the same form.
fn ours(bytes: &[u8], shape: Shape) -> Vec<String> {
    let c = Chunk::decode(bytes, shape).unwrap();
    let mut out = Vec::new();
    for s in &c.sections {
        for i in 0..4096 {
            let (x, z, y) = (i % 16, (i / 16) % 16, i / 256 + 16 * s.y as usize);
            let li = prismarine_light_index(i);
            let sky = if shape.sky_light { nibble(&s.sky_light, li) } else { 0 };
            out.push(format!("{x} {y} {z} {} {} {sky}", s.states[i], nibble(&s.block_light, li)));
        }
    }
    if shape.biomes {
        for (i, b) in c.biomes.iter().enumerate() {
            out.push(format!("biome {} {} {b}", i % 16, i / 16));
        }
    }
    out
}

#[test]
fn prismarine_chunk_reads_what_we_write() {
    let Some(npm) = oracle_dir() else {
        common::skip(
            "prismarine_chunk_reads_what_we_write",
            "prismarine",
            "no prismarine-chunk (contrib/test.sh installs it: npm install --prefix target/npm-oracle prismarine-chunk@1 vec3)",
        );
        return;
    };
    let all = samples();
    let tmp = tempfile::tempdir().unwrap();
    for s in all.iter().filter(|s| s.shape.layout == Layout::Spanning) {
        let bytes = std::fs::read(&s.dump).unwrap();
        same(
            &prismarine(&npm, &s.dump, s.shape),
            &ours(&bytes, s.shape),
            &format!("{}: the readings differ", s.dump.display()),
        );
        // Edits: a block changed to a state new to the palette (it grows),
        // light levels, a biome.
        let mut doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
        let first = doc.entries().into_iter().find(|e| e.path.ends_with("/blocks")).unwrap().path;
        let blocks = String::from_utf8(doc.render(&first).unwrap()).unwrap();
        let legend_end = blocks.find("\ny=").unwrap();
        let mut text = format!("{}\u{263a} 57:0\n{}", &blocks[..legend_end], &blocks[legend_end..]); // diamond block
        let row = text.find("\ny=").map(|i| text[i + 1..].find('\n').unwrap() + i + 2).unwrap();
        text.replace_range(row..row + text[row..].chars().next().unwrap().len_utf8(), "\u{263a}");
        doc.apply(&first, text.as_bytes()).unwrap();
        let light = first.replace("/blocks", "/block_light");
        // Light: the first row of every level set to 7.
        let lt = String::from_utf8(doc.render(&light).unwrap()).unwrap();
        let lt: String = lt
            .lines()
            .enumerate()
            .map(|(i, line)| if i % 18 == 1 { "7777777777777777\n".to_string() } else { format!("{line}\n") })
            .collect();
        doc.apply(&light, lt.as_bytes()).unwrap();
        doc.apply("biomes", "1 ".repeat(256).trim_end().as_bytes()).unwrap_err(); // one row of 256: refused
        let b: String = (0..16).map(|_| "2 ".repeat(16).trim_end().to_string() + "\n").collect();
        doc.apply("biomes", b.as_bytes()).unwrap();
        let out = tmp.path().join("edited.dump");
        let written = doc.encode().unwrap();
        std::fs::write(&out, &written).unwrap();
        let theirs = prismarine(&npm, &out, s.shape);
        same(
            &theirs,
            &ours(&written, s.shape),
            &format!("{}: prismarine reads our edit differently", s.dump.display()),
        );
        let y0 = first.split('/').nth(1).unwrap();
        assert!(
            theirs.contains(&format!(
                "0 {} 0 {} 7 {}",
                y0.parse::<usize>().unwrap() * 16,
                57 * 16,
                theirs
                    .iter()
                    .find(|l| l.starts_with(&format!("0 {} 0 ", y0.parse::<usize>().unwrap() * 16)))
                    .unwrap()
                    .split(' ')
                    .nth(5)
                    .unwrap()
            )),
            "the edited block"
        );
        assert!(theirs.iter().filter(|l| l.starts_with("biome")).all(|l| l.ends_with(" 2")));
    }
    // The 13-bit direct form: a section with 300 different states.
    let s = &all[1];
    let bytes = std::fs::read(&s.dump).unwrap();
    let mut doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
    let first = doc.entries().into_iter().find(|e| e.path.ends_with("/blocks")).unwrap().path;
    let mut legend = String::new();
    let chars: Vec<char> = (0x4e00u32..0x4e00 + 300).filter_map(char::from_u32).collect();
    for (i, c) in chars.iter().enumerate() {
        legend.push_str(&format!("{c} {}:{}\n", 1 + i / 16, i % 16));
    }
    let y0: i64 = first.split('/').nth(1).unwrap().parse::<i64>().unwrap() * 16;
    let mut levels = String::new();
    for y in 0..16 {
        levels.push_str(&format!("\ny={}\n", y0 + y));
        for z in 0..16 {
            let row: String = (0..16).map(|x| chars[((y * 256 + z * 16 + x) % 300) as usize]).collect();
            levels.push_str(&row);
            levels.push('\n');
        }
    }
    doc.apply(&first, format!("{legend}{levels}").as_bytes()).unwrap();
    assert!(
        String::from_utf8(doc.render(&first.replace("blocks", "palette")).unwrap())
            .unwrap()
            .contains("direct: 13 bits")
    );
    let out = tmp.path().join("direct.dump");
    let written = doc.encode().unwrap();
    std::fs::write(&out, &written).unwrap();
    same(&prismarine(&npm, &out, s.shape), &ours(&written, s.shape), "the direct form is read differently");
}

#[test]
fn a_chunk_mounted_and_edited_with_shell_tools() {
    require_fuse!("a_chunk_mounted_and_edited_with_shell_tools");
    let all = samples();
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("c.dump");
    std::fs::copy(&all[1].dump, &dump).unwrap();
    std::fs::copy(all[1].dump.with_extension("meta"), dir.path().join("c.meta")).unwrap();
    let m = Mounted::new(&dump, &[]);
    assert_eq!(m.ok("ls $MNT/sections"), "0\n1\n2\n3\n4\n");
    assert!(m.ok("cat $MNT/sections/0/palette").contains(" 7:0 bedrock\n"));
    assert!(m.ok("cat $MNT/info").contains("bitmap = 31"));
    // The bedrock floor (y=0) becomes stone: its legend line relabelled.
    let blocks = m.ok("cat $MNT/sections/0/blocks");
    let bedrock = blocks.lines().find(|l| l.ends_with(" 7:0")).unwrap().chars().next().unwrap();
    m.ok(&format!("sed -i 's/^{bedrock} 7:0$/{bedrock} 1:0/' $MNT/sections/0/blocks"));
    // No block is bedrock now; the palette keeps its entry, as the game's does.
    let c = Chunk::decode(&std::fs::read(&dump).unwrap(), all[1].shape).unwrap();
    assert!(c.sections[0].states.iter().all(|&s| s != 7 * 16));
    assert!(m.ok("cat $MNT/sections/0/palette").contains(" 7:0 bedrock\n"));
    // Bad edits: refused, the reason in write-errors, the file as it was.
    let before = std::fs::read(&dump).unwrap();
    m.sh("printf 'y=0\\n' > $MNT/sections/0/block_light");
    m.sh("sed -i 's/^\\(.\\) 1:0$/\\1 99999:0/' $MNT/sections/0/blocks");
    let r = m.refusals();
    assert!(r.contains("block_light") && r.contains("blocks"), "{r}");
    assert_eq!(std::fs::read(&dump).unwrap(), before);
}

/// prismarine-chunk's reading of a 1.16 dump: "x y z state name" per block,
/// then "count Y N" per section (blocks other than air, cave_air, void_air).
fn prismarine_116(dir: &Path, dump: &Path, bitmap: u32) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcchunk_check_116.js");
    let out =
        Command::new("node").arg(script).arg(dir).arg("1.16.1").arg(dump).arg(bitmap.to_string()).output().unwrap();
    assert!(out.status.success(), "prismarine-chunk: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

/// Our reading in the same form: the names are those of each section's
/// `palette` file, the counts those stored in the encoded chunk.
fn ours_116(doc: &McChunk, shape: Shape) -> Vec<String> {
    let c = Chunk::decode(&doc.encode().unwrap(), shape).unwrap();
    let (mut out, mut counts) = (Vec::new(), Vec::new());
    for s in &c.sections {
        let palette = String::from_utf8(doc.render(&format!("sections/{}/palette", s.y)).unwrap()).unwrap();
        let name = |st: u32| {
            palette
                .lines()
                .find_map(|l| {
                    let f: Vec<&str> = l.split(' ').collect();
                    (f[1] == st.to_string()).then(|| f.get(2).unwrap_or(&"").to_string())
                })
                .unwrap_or_else(|| panic!("state {st} is not in the palette file:\n{palette}"))
        };
        for i in 0..4096 {
            let (x, z, y) = (i % 16, (i / 16) % 16, i / 256 + 16 * s.y as usize);
            out.push(format!("{x} {y} {z} {} {}", s.states[i], name(s.states[i])));
        }
        counts.push(format!("count {} {}", s.y, s.block_count));
    }
    out.extend(counts);
    out
}

fn npm_or_skip(test: &str) -> Option<PathBuf> {
    let dir = oracle_dir();
    if dir.is_none() {
        common::skip(test, "prismarine", "no prismarine-chunk (contrib/test.sh installs it)");
    }
    dir
}

/// `blocks` of a section with the legend line of `from` labelled `to`.
fn relabelled(blocks: &str, from: &str, to: &str) -> String {
    let mut done = false;
    let out: String = blocks
        .lines()
        .map(|l| {
            if !done && !l.starts_with('#') && l.split_once(' ').is_some_and(|(_, label)| label == from) {
                done = true;
                format!("{} {to}\n", l.split_once(' ').unwrap().0)
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(done, "no legend line '{from}' in\n{blocks}");
    out
}

#[test]
fn a_1_16_chunk_names_its_states_by_the_1_16_table() {
    let test = "a_1_16_chunk_names_its_states_by_the_1_16_table";
    let Some(npm) = npm_or_skip(test) else { return };
    let all = samples();
    let s = &all[3];
    let bytes = std::fs::read(&s.dump).unwrap();
    let mut doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
    // State 33 is bedrock in 1.16, not 2:1 (the pre-1.13 id:meta of 33).
    let palette = String::from_utf8(doc.render("sections/0/palette").unwrap()).unwrap();
    assert!(palette.lines().any(|l| l.ends_with(" 33 bedrock")), "{palette}");
    assert!(palette.lines().any(|l| l.ends_with(" 1 stone")), "{palette}");
    assert!(!palette.contains(':'), "{palette}");
    same(&prismarine_116(&npm, &s.dump, s.shape.bitmap), &ours_116(&doc, s.shape), "the palettes' names");
    let info = String::from_utf8(doc.render("info").unwrap()).unwrap();
    assert!(info.contains("block_states = 1.16.1"), "{info}");
    // The legend of `blocks` says the names too, and takes them back.
    let blocks = String::from_utf8(doc.render("sections/0/blocks").unwrap()).unwrap();
    assert!(blocks.lines().any(|l| l.ends_with(" bedrock")) && !blocks.contains(" 2:1"), "{blocks}");
    let edited = relabelled(&blocks, "bedrock", "minecraft:oak_leaves[persistent=true]");
    doc.apply("sections/0/blocks", edited.as_bytes()).unwrap();
    let after = String::from_utf8(doc.render("sections/0/blocks").unwrap()).unwrap();
    assert!(after.lines().any(|l| l.ends_with(" oak_leaves[distance=7,persistent=true]")), "{after}");
    for (bad, why) in [
        ("bedrock[axis=x]", "no property 'axis'"),
        ("oak_log[axis=w]", "axis is one of x, y, z"),
        ("2:1", "has no block '2:1'"),
        ("99999", "states 0 to 17103"),
    ] {
        let e = doc.apply("sections/0/blocks", relabelled(&blocks, "bedrock", bad).as_bytes()).unwrap_err();
        assert!(e.to_string().contains(why), "{bad}: {e}");
    }
    // Another version's table is another numbering: 1.16.2 gave chains an axis.
    let opts = vec![("version".to_string(), Some("1.16.2".to_string()))];
    let d2 = McChunk::decode(&bytes, &Context { options: opts, ..ctx(s) }).unwrap();
    assert!(String::from_utf8(d2.render("info").unwrap()).unwrap().contains("block_states = 1.16.2"));
}

#[test]
fn a_1_16_edit_counts_blocks_as_the_game_does() {
    let test = "a_1_16_edit_counts_blocks_as_the_game_does";
    let Some(npm) = npm_or_skip(test) else { return };
    let all = samples();
    let s = &all[3];
    let bytes = std::fs::read(&s.dump).unwrap();
    // The game's own counts are those of the oracle's rule.
    let theirs = prismarine_116(&npm, &s.dump, s.shape.bitmap);
    let doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
    same(&theirs, &ours_116(&doc, s.shape), "the stored counts");
    // Section 4 has air and cave_air: stone for the air there, then
    // cave_air for the stone, then a new state (lava).
    let mut doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
    let blocks = String::from_utf8(doc.render("sections/4/blocks").unwrap()).unwrap();
    assert!(blocks.lines().any(|l| l.ends_with(" cave_air")), "{blocks}");
    doc.apply("sections/4/blocks", relabelled(&blocks, "air", "stone").as_bytes()).unwrap();
    let blocks = String::from_utf8(doc.render("sections/4/blocks").unwrap()).unwrap();
    doc.apply("sections/4/blocks", relabelled(&blocks, "stone", "void_air").as_bytes()).unwrap();
    let blocks = String::from_utf8(doc.render("sections/4/blocks").unwrap()).unwrap();
    doc.apply("sections/4/blocks", relabelled(&blocks, "dirt", "lava[level=0]").as_bytes()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("edited.dump");
    std::fs::write(&out, doc.encode().unwrap()).unwrap();
    let theirs = prismarine_116(&npm, &out, s.shape.bitmap);
    assert!(theirs.iter().any(|l| l.ends_with(" lava[level=0]")));
    same(&theirs, &ours_116(&doc, s.shape), "the counts after edits");
}

#[test]
fn an_edit_with_states_already_in_the_palette_keeps_it() {
    let all = samples();
    for s in &all {
        let bytes = std::fs::read(&s.dump).unwrap();
        let mut doc = McChunk::decode(&bytes, &ctx(s)).unwrap();
        let c = Chunk::decode(&bytes, s.shape).unwrap();
        for sec in c.sections.iter().filter(|sec| sec.palette.len() >= 3) {
            let path = format!("sections/{}/blocks", sec.y);
            let palette_path = format!("sections/{}/palette", sec.y);
            let palette = doc.render(&palette_path).unwrap();
            // The second legend entry's blocks become the third's: a state
            // drops out of use, none is new. The palette stays as it was.
            let blocks = String::from_utf8(doc.render(&path).unwrap()).unwrap();
            let labels: Vec<&str> = blocks
                .lines()
                .take_while(|l| !l.starts_with("y="))
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.split_once(' ').map(|p| p.1))
                .collect();
            doc.apply(&path, relabelled(&blocks, labels[1], labels[2]).as_bytes()).unwrap();
            let after = Chunk::decode(&doc.encode().unwrap(), s.shape).unwrap();
            let edited = after.sections.iter().find(|a| a.y == sec.y).unwrap();
            assert_eq!(doc.render(&palette_path).unwrap(), palette, "{} section {}", s.dump.display(), sec.y);
            assert_eq!((&edited.palette, edited.bits), (&sec.palette, sec.bits));
            assert!(
                edited.states != sec.states,
                "{} section {}: {:?} -> {:?}",
                s.dump.display(),
                sec.y,
                labels[1],
                labels[2]
            );
        }
    }
}
