//! `worldfs export` and `worldfs import` on a demo world: a round trip
//! through both formats, undo, and the refusals (exact messages).

use crate::common;

use std::path::Path;
use std::process::Command;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

/// Held while this process has a map open or starts a process: a child
/// forked meanwhile would hold the other test's map open until it execs,
/// and an import rightly refuses while the map is open elsewhere.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn worldfs(args: &[&str]) -> (bool, String, String) {
    let _g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_worldfs")).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every block of the world with its bytes.
fn all_blocks(world: &Path) -> Vec<(BlockPos, Vec<u8>)> {
    let _g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.scan_after(None, 1_000_000).unwrap()
}

#[test]
fn export_import_round_trip_and_undo() {
    let d = common::demo_world();
    let w = d.path().to_str().unwrap();
    let before = all_blocks(d.path());
    let out = tempfile::tempdir().unwrap();
    for ext in ["mts", "we"] {
        let file = out.path().join(format!("house.{ext}"));
        let f = file.to_str().unwrap();
        let (ok, stdout, err) = worldfs(&["export", w, "-5,-2,-5", "20,12,20", f]);
        assert!(ok, "{err}");
        assert!(stdout.contains("26 x 15 x 26 nodes from -5,-2,-5 to 20,12,20"), "{stdout}");
        let (ok, stdout, err) = worldfs(&["import", w, f, "-3000,40,500"]);
        assert!(ok, "{err}");
        assert!(stdout.contains(&format!("import house.{ext} at -3000,40,500:")), "{stdout}");
        // The copy exports to the same file (the .mts: same schematic).
        let copy = out.path().join(format!("copy.{ext}"));
        let (ok, _, err) = worldfs(&["export", w, "-3000,40,500", "-2975,54,525", copy.to_str().unwrap()]);
        assert!(ok, "{err}");
        let (a, b) = (std::fs::read(&file).unwrap(), std::fs::read(&copy).unwrap());
        if ext == "mts" {
            // Where the source had no blocks the copy has air that was
            // placed: compare the nodes that the source really had.
            let sa = worldfs::documents::mts::Schematic::decode(&a).unwrap();
            let sb = worldfs::documents::mts::Schematic::decode(&b).unwrap();
            for i in 0..sa.volume() {
                if sa.param1[i] != 0 {
                    assert_eq!((sa.name_at(i), sa.param2[i]), (sb.name_at(i), sb.param2[i]), "node {i}");
                }
            }
        } else {
            assert_eq!(a, b, "the .we copy");
        }
        // Undo takes the import back exactly.
        let (ok, _, err) = worldfs(&["undo", w, "--last", "1"]);
        assert!(ok, "{err}");
        assert_eq!(all_blocks(d.path()), before, "undo of the {ext} import");
    }
}

#[test]
fn refusals_say_why_and_change_nothing() {
    let d = common::demo_world();
    let w = d.path().to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mts = out.path().join("a.mts");
    let (ok, _, err) = worldfs(&["export", w, "0,0,0", "3,3,3", mts.to_str().unwrap()]);
    assert!(ok, "{err}");
    let before = all_blocks(d.path());
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["import".into(), w.into(), mts.to_str().unwrap().into(), "0,0,0".into(), "--rotate".into(), "45".into()], "worldfs: rotation 45 is not 0, 90, 180 or 270".into()),
        (vec!["import".into(), w.into(), mts.to_str().unwrap().into(), "0,0".into()], "worldfs: '0,0' is not a node position X,Y,Z (whole numbers, no spaces)".into()),
        (vec!["import".into(), w.into(), mts.to_str().unwrap().into(), "40000,0,0".into()], "worldfs: node 40000,0,0 is outside the world (blocks -2048..2047)".into()),
        (vec!["export".into(), w.into(), "0,0,0".into(), "300,300,300".into(), out.path().join("b.mts").to_str().unwrap().into()], "worldfs: the box is 301 x 301 x 301 = 27270901 nodes; at most 16777216 (256 x 256 x 256) and 32767 along an axis".into()),
        (vec!["export".into(), w.into(), "0,0,0".into(), "1,1,1".into(), out.path().join("b.txt").to_str().unwrap().into()], format!("worldfs: {}: the file name must end in .mts (schematic) or .we (WorldEdit)", out.path().join("b.txt").display())),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, _, err) = worldfs(&args);
        assert!(!ok);
        assert_eq!(err.trim_end(), want);
    }
    // A truncated schematic: cut inside its deflate data (a cut of only
    // the 4-byte adler32 after it is read, as the engine reads it).
    let bytes = std::fs::read(&mts).unwrap();
    let cut = out.path().join("cut.mts");
    std::fs::write(&cut, &bytes[..bytes.len() - 8]).unwrap();
    let (ok, _, err) = worldfs(&["import", w, cut.to_str().unwrap(), "0,0,0"]);
    assert!(!ok);
    assert!(err.contains("cut.mts: truncated: the compressed node data ends early (at byte"), "{err}");
    // A process holding the map open (as a server does).
    let map = d.path().join("map.sqlite");
    let g = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut holder = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 3<>'{}'; echo open; sleep 30", map.display()))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
    drop(g);
    let (ok, _, err) = worldfs(&["import", w, mts.to_str().unwrap(), "0,0,0"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!ok);
    assert!(err.contains("is open in pid") && err.contains("stop the server (or unmount) before importing"), "{err}");
    assert_eq!(all_blocks(d.path()), before);
}
