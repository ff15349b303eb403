//! One-file kinds of world through a real mount, with real tools: a
//! kind is found from the file (or `-t`), files are read with cat and grep,
//! edited with sed -i, cp and echo >>, and the file on disk is rewritten
//! atomically; a bad edit is refused with the reason in write-errors and
//! the file unchanged.

use crate::common;

use common::mount::Mounted;
use std::path::{Path, PathBuf};

/// A copy of a real sample (`KIND/FILE` under tests/data/formats) in a
/// directory of its own.
fn sample(rel: &str) -> (tempfile::TempDir, PathBuf) {
    let (kind, file) = rel.split_once('/').unwrap();
    let src = common::real_formats(kind).join(file);
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join(src.file_name().unwrap());
    std::fs::copy(&src, &dst).unwrap();
    let mut perm = std::fs::metadata(&dst).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&dst, perm).unwrap();
    (dir, dst)
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn a_ddnet_map_is_edited_with_shell_tools() {
    const TEST: &str = "a_ddnet_map_is_edited_with_shell_tools";
    require_fuse!(TEST);
    let (dir, map) = sample("twmap/ddnet_dm1.map");
    let before = std::fs::read(&map).unwrap();
    let m = Mounted::new(&map, &[]);
    assert!(m.ok("cat $MNT/README").contains("map"));
    let game = "groups/06_Game/layers/02_Game/tiles";
    let first = m.ok(&format!("head -1 $MNT/{game}"));
    assert!(first.starts_with("1 1 1"), "{first}");
    // sed -i: the first tile of the game layer becomes air.
    m.ok(&format!("sed -i '1s/^1 /0 /' $MNT/{game}"));
    assert!(m.ok(&format!("head -1 $MNT/{game}")).starts_with("0 1 1"));
    // a setting appended to info
    m.ok("sed -i 's/^\\[settings\\]$/[settings]\\nsv_gravity 0.5/' $MNT/info");
    assert!(m.ok("cat $MNT/info").contains("sv_gravity 0.5"));
    // a bad grid is refused with line and column, and changes nothing
    let now = std::fs::read(&map).unwrap();
    let (code, _, _) = m.sh(&format!("sed -i '2s/^1 /x /' $MNT/{game}"));
    assert_ne!(code, 0);
    assert!(m.refusals().contains("tiles: line 2"), "{}", m.refusals());
    assert_eq!(std::fs::read(&map).unwrap(), now);
    drop(m);
    // Written back atomically, nothing left beside it; the file decodes.
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    let after = std::fs::read(&map).unwrap();
    assert_ne!(after, before);
    let doc = <worldfs::documents::twmap::TwMap as worldfs::documents::Document>::decode(
        &after,
        &worldfs::documents::Context::default(),
    )
    .unwrap();
    let tiles = worldfs::documents::Document::render(&doc, game).unwrap();
    assert!(String::from_utf8(tiles).unwrap().starts_with("0 1 1"));
}

#[test]
fn a_file_that_is_no_kind_of_world_is_refused_and_t_forces_one() {
    const TEST: &str = "a_file_that_is_no_kind_of_world_is_refused_and_t_forces_one";
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.txt");
    std::fs::write(&f, "hello\n").unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("mount")
            .arg(&f)
            .arg(&mnt)
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a kind of world worldfs knows"), "{err}");
    let (code, err) = run(&["-t", "twmap"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("notes.txt"), "{err}");
    let (code, err) = run(&["-t", "nosuchkind"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("-t nosuchkind: no such kind of world"), "{err}");
    let _ = TEST;
}

#[test]
fn a_schematic_is_edited_with_vim_sed_and_cp() {
    const TEST: &str = "a_schematic_is_edited_with_vim_sed_and_cp";
    require_fuse!(TEST);
    let (dir, mts) = sample("mts/mtg_apple_tree.mts");
    let read = |p: &Path| -> worldfs::documents::mts::MtsDocument {
        <worldfs::documents::mts::MtsDocument as worldfs::documents::Document>::decode(
            &std::fs::read(p).unwrap(),
            &worldfs::documents::Context::default(),
        )
        .unwrap()
    };
    let render = |d: &worldfs::documents::mts::MtsDocument, f: &str| {
        String::from_utf8(worldfs::documents::Document::render(d, f).unwrap()).unwrap()
    };
    let m = Mounted::new(&mts, &[]);
    assert_eq!(m.ok("cat $MNT/size"), "7 8 7\n");
    // sed -i on names: the tree's apples become golden apples.
    m.ok("sed -i 's/ default:apple$/ default:goldapple/' $MNT/names");
    assert!(render(&read(&mts), "names").contains("default:goldapple"));
    // vim on layers: the trunk at the bottom level becomes an apple tree
    // trunk of another wood (a new legend line, one character changed).
    if common::mount::which("vim").is_some() {
        let home = tempfile::tempdir().unwrap();
        m.ok(&format!(
            "cd $MNT && HOME={} TERM=dumb vim -es -c '/^t default:tree force$/a|J default:jungletree force' \
             -c '/^y=0$/+4s/t/J/' -c wq layers </dev/null >/dev/null 2>&1; true",
            home.path().display()
        ));
        let nodes = render(&read(&mts), "nodes");
        assert!(nodes.lines().any(|l| l.starts_with("3 0 3 default:jungletree")), "{}", m.refusals());
    } else {
        common::skip("vim part", "vim", "vim not installed");
    }
    // cp: the schematic copied out is a schematic the codec reads.
    let copy = dir.path().join("copy.mts");
    m.ok(&format!("cp $MNT/nodes {}", dir.path().join("nodes.txt").display()));
    std::fs::copy(&mts, &copy).unwrap();
    assert_eq!(render(&read(&copy), "size"), "7 8 7\n");
    // A row of the wrong width in layers: refused, file unchanged.
    let now = std::fs::read(&mts).unwrap();
    let (code, _, _) = m.sh("sed -i '/^y=2$/{n;s/^.//}' $MNT/layers");
    assert_ne!(code, 0);
    assert!(m.refusals().contains("layers: line"), "{}", m.refusals());
    assert_eq!(std::fs::read(&mts).unwrap(), now);
}

/// bash ignores close() for redirections: `echo 0 7 7 > MNT/size` of a
/// schematic exited 0 although the size was refused at close. The write of
/// a one-line file's whole line is judged at once; a good one still works.
#[test]
fn echo_of_a_bad_line_into_a_schematic_fails_in_bash() {
    const TEST: &str = "echo_of_a_bad_line_into_a_schematic_fails_in_bash";
    require_fuse!(TEST);
    let (_dir, mts) = sample("mts/mtg_apple_tree.mts");
    let before = std::fs::read(&mts).unwrap();
    let m = Mounted::new(&mts, &[]);
    let (code, _, err) = m.sh("echo 0 7 7 > $MNT/size");
    assert_ne!(code, 0, "bash reports the refused write");
    assert!(err.contains("write error: Invalid argument"), "{err}");
    assert_eq!(std::fs::read(&mts).unwrap(), before, "the file is unchanged");
    assert!(m.refusals().contains("size"), "{}", m.refusals());
    let size = m.ok("cat $MNT/size");
    let bigger: Vec<u32> = size.split_whitespace().map(|v| v.parse::<u32>().unwrap() + 1).collect();
    m.ok(&format!("echo {} {} {} > $MNT/size", bigger[0], bigger[1], bigger[2]));
    assert_eq!(m.ok("cat $MNT/size"), format!("{} {} {}\n", bigger[0], bigger[1], bigger[2]));
}

/// `cp MNT/blocks/X,Y,Z/schematic.mts .` gives the block as a schematic:
/// mounted in turn, it shows the same nodes.
#[test]
fn a_block_is_copied_out_as_a_schematic() {
    require_fuse!("a_block_is_copied_out_as_a_schematic");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &["ro"]);
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("house.mts");
    m.ok(&format!("cp $MNT/blocks/0,0,0/schematic.mts {}", file.display()));
    let (code, _, err) = m.sh("echo x > $MNT/blocks/0,0,0/schematic.mts");
    assert_ne!(code, 0, "read-only: {err}");
    let block_nodes = m.ok("cat $MNT/blocks/0,0,0/nodes");
    drop(m);
    let s = Mounted::new(&file, &["ro"]);
    assert_eq!(s.ok("cat $MNT/size"), "16 16 16\n");
    // Same names at the same places (the schematic's coordinates start at 0).
    let names = |text: &str| -> Vec<String> {
        text.lines().map(|l| l.split(' ').nth(3).unwrap().to_string()).collect::<Vec<_>>()
    };
    let mut from_block = names(&block_nodes);
    let mut from_schematic = names(&s.ok("cat $MNT/nodes"));
    from_block.sort();
    from_schematic.sort();
    assert_eq!(from_block, from_schematic);
}
