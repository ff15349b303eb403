//! Defects found by trying worldfs as a hostile or careless user would
//! (issue 21), each checked on the core without a mount.

use crate::common;

use std::ffi::OsStr;
use worldfs::fs::{ErrorKind, Options, WorldFs};
use worldfs::worlds::luanti::inode;

fn writable(world: &std::path::Path) -> WorldFs {
    worldfs::open::open_world(world, Options { read_only: false, ..Options::default() }).unwrap()
}

/// Write `data` to the file `ino` as a program would (open, write, close).
fn write_file(fs: &WorldFs, ino: u64, data: &[u8]) -> Result<(), worldfs::fs::FsError> {
    let pid = std::process::id();
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid)?;
    fs.write(o.fh, 0, data)?;
    let r = fs.flush(o.fh, pid);
    fs.release(o.fh)?;
    r
}

fn write_errors(fs: &WorldFs) -> String {
    fs.write_errors().concat()
}

/// Two closes of world.mt at once used to share one temporary file name and
/// race: the loser failed with EIO after its content was installed, or the
/// file was left torn.
#[test]
fn concurrent_writes_of_a_world_file_do_not_race() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let ino = fs.lookup(inode::ROOT, OsStr::new("world.mt")).unwrap().ino;
    let base = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    let contents: Vec<String> =
        (0..4).map(|t| format!("{base}worldfs_writer = {t}\n{}\n", "#".repeat(t * 5000))).collect();
    std::thread::scope(|s| {
        for c in &contents {
            let fs = &fs;
            s.spawn(move || {
                for _ in 0..50 {
                    write_file(fs, ino, c.as_bytes()).expect("every close succeeds");
                }
            });
        }
    });
    let now = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    assert!(contents.contains(&now), "world.mt is one of the written versions, whole");
    let leftovers: Vec<String> = std::fs::read_dir(world.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("worldfs-") && n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    assert_eq!(write_errors(&fs), "");
}

/// `echo 'nonsense:::' > MNT/node/0,0,0` used to store the name; a valid
/// name found nowhere in the world is written with a warning.
#[test]
fn node_names_are_checked_and_unknown_ones_warned_about() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let node = fs.lookup(inode::NODE_DIR, OsStr::new("0,0,0")).unwrap().ino;
    let before = std::fs::read(world.path().join("map.sqlite")).unwrap();
    let e = write_file(&fs, node, b"nonsense:::\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("'nonsense:::' is not a node name the engine accepts"), "{}", e.message);
    assert!(
        write_errors(&fs).contains("node/0,0,0: line 1: 'nonsense:::' is not a node name"),
        "{}",
        write_errors(&fs)
    );
    assert_eq!(std::fs::read(world.path().join("map.sqlite")).unwrap(), before, "nothing written");

    // A name of the world: no warning.
    write_file(&fs, node, b"default:stone\n").unwrap();
    assert!(!write_errors(&fs).contains("warning"), "{}", write_errors(&fs));
    // A valid name nowhere in the world: written, and warned about once.
    write_file(&fs, node, b"default:stnoe\n").unwrap();
    let errors = write_errors(&fs);
    assert!(
        errors
            .contains("node/0,0,0: warning: written, but 'default:stnoe' appears nowhere else in the world (a typo?)"),
        "{errors}"
    );
    let read = fs.open(node, libc::O_RDONLY, 0).unwrap();
    assert_eq!(String::from_utf8(fs.read(read.fh, 0, 100).unwrap()).unwrap().split(' ').next(), Some("default:stnoe"));
    fs.release(read.fh).unwrap();
    // Now it is in the world: written again elsewhere without a warning.
    let other = fs.lookup(inode::NODE_DIR, OsStr::new("3,0,3")).unwrap().ino;
    write_file(&fs, other, b"default:stnoe\n").unwrap();
    assert_eq!(write_errors(&fs).matches("warning").count(), 1);
}

/// mkdir/rmdir/unlink refusals used to reach only the log.
#[test]
fn refused_name_changes_are_shown_in_write_errors() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let e = fs.mkdir(inode::BLOCKS, OsStr::new("not-a-block")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    let e = fs.mkdir(inode::ROOT, OsStr::new("newdir")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotPermitted);
    let block = fs.lookup(inode::BLOCKS, OsStr::new("0,0,0")).unwrap().ino;
    let e = fs.unlink(block, OsStr::new("names")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotPermitted);
    let meta = fs.lookup(block, OsStr::new("meta")).unwrap().ino;
    let e = fs.mkdir(meta, OsStr::new("99,0,0")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    let errors = write_errors(&fs);
    for want in [
        "mkdir blocks/not-a-block: a block directory is named X,Y,Z",
        "mkdir newdir: directories can only be made in blocks/",
        "unlink blocks/0,0,0/names: decoded files cannot be deleted",
        "mkdir blocks/0,0,0/meta/99,0,0: node 99,0,0 is not in block 0,0,0",
    ] {
        assert!(errors.contains(want), "missing '{want}' in:\n{errors}");
    }
    // "exists" and "no such file" say all and are not recorded (mkdir -p).
    assert_eq!(fs.mkdir(inode::BLOCKS, OsStr::new("0,0,0")).unwrap_err().kind, ErrorKind::Exists);
    assert_eq!(fs.rmdir(inode::BLOCKS, OsStr::new("7,7,7")).unwrap_err().kind, ErrorKind::NotFound);
    assert_eq!(write_errors(&fs).lines().count(), 4, "{}", write_errors(&fs));
}

/// `worldfs mount W W` used to mount, and every access then hung: the
/// daemon reached the world's files through its own mount.
#[test]
fn mounting_a_world_where_it_would_reach_itself_is_refused() {
    let world = common::demo_world();
    let w = world.path().canonicalize().unwrap();
    std::fs::create_dir(w.join("mnt")).unwrap();
    let cases = [
        (w.clone(), "the mountpoint is the world directory itself"),
        (w.join("mnt"), "the mountpoint is inside the world directory"),
        (w.parent().unwrap().to_path_buf(), "the mountpoint contains the world"),
    ];
    for (mnt, want) in cases {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("mount")
            .arg(&w)
            .arg(&mnt)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed().as_secs() > 20 {
                child.kill().unwrap();
                let _ = std::process::Command::new("fusermount3").arg("-uz").arg(&mnt).status();
                panic!("mount on {} did not return", mnt.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{}: {err}", mnt.display());
        assert!(err.contains(want), "{}: {err}", mnt.display());
    }
}
