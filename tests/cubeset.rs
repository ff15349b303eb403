//! Cuberite cubesets: every real sample read and shown, edits that rewrite
//! only what they change, and Debian's Lua as the oracle: it loads every
//! file we write (as Cuberite does, by running it) and its tables differ
//! from the original's exactly by the edit.

use crate::common;

use common::mount::Mounted;
use std::path::{Path, PathBuf};
use std::process::Command;
use worldfs::documents::cubeset::Cubeset;
use worldfs::documents::{Context, Document};

/// The real prefab sets (tests/data/formats/cubeset).
fn samples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(common::real_formats("cubeset"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cubeset"))
        .collect();
    v.sort();
    assert!(v.len() >= 4);
    v
}

fn lua() -> Option<&'static str> {
    ["lua5.1", "lua5.4"].into_iter().find(|l| common::mount::which(l).is_some())
}

/// Lua's view of a cubeset file (tests/fixtures/cubeset_dump.lua).
fn lua_dump(lua: &str, file: &Path) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cubeset_dump.lua");
    let out = Command::new(lua).arg(script).arg(file).output().unwrap();
    assert!(out.status.success(), "{lua} refused {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect()
}

fn decode(b: &[u8]) -> Cubeset {
    Cubeset::decode(b, &Context::default()).unwrap()
}

#[test]
fn every_sample_reads_and_every_file_writes_back_unchanged() {
    let files = samples();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(Cubeset::sniff(&f, &bytes[..bytes.len().min(8192)]));
        let mut doc = decode(&bytes);
        assert_eq!(doc.encode().unwrap(), bytes);
        for e in doc.entries().into_iter().filter(|e| !e.dir && e.writable) {
            let content = doc.render(&e.path).unwrap();
            doc.apply(&e.path, &content).unwrap_or_else(|err| panic!("{}: {}: {err}", f.display(), e.path));
        }
        // Re-emitted fields may be formatted differently, but mean the same.
        let again = decode(&doc.encode().unwrap());
        for e in again.entries().into_iter().filter(|e| !e.dir) {
            assert_eq!(again.render(&e.path).unwrap(), decode(&bytes).render(&e.path).unwrap(), "{}", e.path);
        }
    }
}

#[test]
fn edits_change_only_their_part_and_lua_agrees() {
    let Some(lua) = lua() else {
        common::skip("edits_change_only_their_part_and_lua_agrees", "lua", "no lua5.1/lua5.4 (apt install lua5.1)");
        return;
    };
    let files = samples();
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let orig = dir.path().join("orig.cubeset");
        std::fs::write(&orig, &bytes).unwrap();
        let before = lua_dump(lua, &orig);
        let mut doc = decode(&bytes);
        let piece = doc.entries().into_iter().find(|e| e.path.ends_with("/layers")).unwrap().path;
        let dirname = piece.trim_end_matches("/layers").to_string();
        // Layers: the first block of the bottom level becomes the last
        // definition's character.
        let legend = String::from_utf8(doc.render(&format!("{dirname}/legend")).unwrap()).unwrap();
        let last = legend.lines().last().unwrap().chars().next().unwrap();
        let layers = String::from_utf8(doc.render(&piece).unwrap()).unwrap();
        let mut lines: Vec<String> = layers.lines().map(String::from).collect();
        let row = lines.iter().position(|l| !l.starts_with("y=") && !l.is_empty()).unwrap();
        let old = lines[row].chars().next().unwrap();
        lines[row] = std::iter::once(last).chain(lines[row].chars().skip(1)).collect();
        doc.apply(&piece, (lines.join("\n") + "\n").as_bytes()).unwrap();
        // Hitbox and a connector-free metadata edit.
        doc.apply(&format!("{dirname}/hitbox"), b"min -1 0 -1\nmax 20 20 20\n").unwrap();
        let meta = String::from_utf8(doc.render(&format!("{dirname}/metadata")).unwrap()).unwrap();
        doc.apply(&format!("{dirname}/metadata"), format!("{meta}WorldfsNote = hello \"there\"\n").as_bytes()).unwrap();
        let written = doc.encode().unwrap();
        let out = dir.path().join("edited.cubeset");
        std::fs::write(&out, &written).unwrap();
        let after = lua_dump(lua, &out);
        // Lua sees exactly the edits.
        let mut expect = before.clone();
        let first = |e: &[String], k: &str| e.iter().position(|l| l.starts_with(&format!("{k}\t1\t"))).unwrap();
        let d = first(&expect, "data");
        let data = expect[d].clone();
        let prefix = "data\t1\t";
        assert_eq!(data[prefix.len()..].chars().next(), Some(old));
        expect[d] = format!("{prefix}{last}{}", data[prefix.len()..].chars().skip(1).collect::<String>());
        let h = first(&expect, "hitbox");
        expect[h] = "hitbox\t1\t-1\t0\t-1\t20\t20\t20".into();
        let at = expect.iter().rposition(|l| l.starts_with("meta\t1\t")).map_or(expect.len(), |i| i + 1);
        expect.insert(at, "meta\t1\tWorldfsNote\thello \"there\"".into());
        let mut a = after.clone();
        let mut e = expect.clone();
        a.sort();
        e.sort();
        assert_eq!(a, e, "{}", f.display());
        // Every byte before the first piece's table and after the last edit
        // is kept: the other pieces, comments and the set's metadata.
        let text = String::from_utf8(bytes.clone()).unwrap();
        let start = text.find("Pieces").unwrap();
        assert_eq!(&written[..start], &bytes[..start], "{}: the head of the file changed", f.display());
        let tail = text.rfind("},  -- Pieces").unwrap_or(text.len() - 10);
        assert!(written.ends_with(&bytes[tail..]), "{}: the tail of the file changed", f.display());
    }
}

#[test]
fn bad_edits_are_refused_and_change_nothing() {
    let files = samples();
    let bytes = std::fs::read(&files[0]).unwrap();
    let mut doc = decode(&bytes);
    let layers = doc.entries().into_iter().find(|e| e.path.ends_with("/layers")).unwrap().path;
    let dirname = layers.trim_end_matches("/layers").to_string();
    let text = String::from_utf8(doc.render(&layers).unwrap()).unwrap();
    let bad = text.replacen(|c: char| c != 'y' && c != '=' && !c.is_ascii_digit() && c != '\n', "\u{2603}", 1);
    let e = doc.apply(&layers, bad.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("line") && e.to_string().contains("legend"), "{e}");
    assert!(doc.apply(&format!("{dirname}/hitbox"), b"min 5 0 0\n").is_err());
    assert!(doc.apply(&format!("{dirname}/hitbox"), b"min 5 0 x\nmax 1 1 1\n").is_err());
    assert!(doc.apply(&format!("{dirname}/legend"), b"z 1:0\n").unwrap_err().to_string().contains("still used"));
    assert!(doc.apply(&format!("{dirname}/connectors"), b"1 2 3 4 sideways\n").is_err());
    assert!(doc.apply("metadata", b"IntendedUse = x\n").unwrap_err().to_string().contains("CubesetFormatVersion"));
    assert!(doc.apply(&format!("{dirname}/size"), b"1 1 1\n").is_err());
    assert_eq!(doc.encode().unwrap(), bytes);
    for bad in [
        &b"Cubeset = { Metadata = { CubesetFormatVersion = 2 }, Pieces = {} }"[..],
        b"Cubeset = os.execute('x')",
        b"x = 1",
    ] {
        assert!(Cubeset::decode(bad, &Context::default()).is_err());
    }
}

#[test]
fn a_cubeset_mounted_and_edited_with_shell_tools() {
    require_fuse!("a_cubeset_mounted_and_edited_with_shell_tools");
    let files = samples();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("DesertWell.cubeset");
    std::fs::copy(files.iter().find(|f| f.ends_with("DesertWell.cubeset")).unwrap(), &file).unwrap();
    let m = Mounted::new(&file, &[]);
    assert_eq!(m.ok("ls $MNT/pieces"), "01_DesertWell\n");
    assert_eq!(m.ok("cat $MNT/pieces/01_DesertWell/size"), "5 6 5\n");
    assert!(m.ok("cat $MNT/pieces/01_DesertWell/legend").contains("m 19:0\n"));
    // Fill the well's water level with sandstone: layer y=1, middle row.
    m.ok("sed -i '/^y=1$/,/^$/ s/^aabaa$/aaaaa/' $MNT/pieces/01_DesertWell/layers");
    assert!(!m.ok("cat $MNT/pieces/01_DesertWell/layers").contains("aabaa"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("-- DesertWell.cubeset") && !text.contains("\"aabaa\""), "{text}");
    // A bad edit: EINVAL at close, the reason in write-errors, the file as it was.
    let (code, _, _) = m.sh("printf 'y=0\\nzzzzz\\n' > $MNT/pieces/01_DesertWell/layers; /bin/true");
    assert_eq!(code, 0);
    assert!(m.refusals().contains("layers"), "{}", m.refusals());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// The text of the field `key` of the first piece (its table, up to the
/// line closing it).
fn field<'a>(text: &'a str, key: &str) -> &'a str {
    let start = text.find(&format!("{key} =")).unwrap();
    let indent = text[..start].rsplit('\n').next().unwrap();
    let close = format!("\n{indent}}},");
    let end = text[start..].find(&close).unwrap() + start + close.len();
    &text[start..end]
}

#[test]
fn legend_and_connector_edits_keep_galexport_comments_and_line_ends() {
    let test = "legend_and_connector_edits_keep_galexport_comments_and_line_ends";
    let Some(lua) = lua() else {
        common::skip(test, "lua", "no lua5.1/lua5.4 (apt install lua5.1)");
        return;
    };
    let files = samples();
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let lf = std::fs::read_to_string(&f).unwrap();
        for crlf in [false, true] {
            let text = if crlf { lf.replace('\n', "\r\n") } else { lf.clone() };
            let mut doc = decode(text.as_bytes());
            let entries = doc.entries();
            let Some(legend) = entries.iter().find(|e| e.path.ends_with("/legend")).map(|e| e.path.clone()) else {
                continue;
            };
            let connectors = legend.replace("/legend", "/connectors");
            // A new definition (an id the piece does not have) and a
            // connector with a numbered direction.
            let mut l = doc.render(&legend).unwrap();
            l.extend_from_slice(b"~ 57:0\n");
            doc.apply(&legend, &l).unwrap();
            let mut c = doc.render(&connectors).unwrap();
            c.extend_from_slice(b"7 1 2 3 4\n7 1 2 3 y+x-z+\n");
            doc.apply(&connectors, &c).unwrap();
            let written = String::from_utf8(doc.encode().unwrap()).unwrap();
            let name = format!("{} ({})", f.display(), if crlf { "CRLF" } else { "LF" });
            // Every comment of the old definitions is kept, none invented.
            let (old_defs, new_defs) = (field(&text, "BlockDefinitions"), field(&written, "BlockDefinitions"));
            for line in old_defs.lines().filter(|l| l.contains("--")) {
                assert!(new_defs.contains(line.trim_end_matches('\r').trim()), "{name}: lost {line:?} in\n{new_defs}");
            }
            assert!(
                new_defs.contains("\"~: 57: 0\",\r\n") || new_defs.contains("\"~: 57: 0\",\n"),
                "{name}: {new_defs}"
            );
            // Numbered directions are named as GalExport names them.
            let new_conns = field(&written, "Connectors");
            let old_named = field(&text, "Connectors").matches("  -- ").count();
            assert_eq!(new_conns.matches("  -- ").count(), old_named + 1, "{name}: {new_conns}");
            assert!(new_conns.contains("Direction = 4,  -- X-"), "{name}: {new_conns}");
            // The line ends are the file's.
            let lone_lf = written
                .bytes()
                .enumerate()
                .filter(|&(i, b)| b == b'\n' && (i == 0 || written.as_bytes()[i - 1] != b'\r'))
                .count();
            assert_eq!((lone_lf == 0, written.matches("\r\n").count() == 0), (crlf, !crlf), "{name}: mixed line ends");
            // Lua loads it, with the edits.
            let out = dir.path().join("edited.cubeset");
            std::fs::write(&out, &written).unwrap();
            let after = lua_dump(lua, &out);
            assert!(after.iter().any(|l| l.ends_with("\t~:57:0")), "{name}: lua does not see the new definition");
            assert!(after.iter().any(|l| l.ends_with("\t7\t1\t2\t3\t4")), "{name}: lua does not see the connector");
            assert!(
                after.iter().any(|l| l.ends_with("\t7\t1\t2\t3\ty+x-z+")),
                "{name}: lua does not see the connector"
            );
        }
    }
}
