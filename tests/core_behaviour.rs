//! Behaviour of the write path checked on the core, without a mount: the
//! tests that drove FUSE only to open, write and close files (moved here
//! from tests/mount_write.rs, where the kernel added nothing to what they
//! check), and regression tests of defects the reference model
//! (tests/core_reference.rs) found.

use crate::common;

use common::core_fs::{Source, open_core};
use std::ffi::OsStr;
use worldfs::fs::{ErrorKind, FsError, Options, ROOT, WorldFs};
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

const PID: u32 = 4242;
const ORIGIN: BlockPos = BlockPos::new(0, 0, 0);
const CHEST: &str = "blocks/0,0,0/meta/3,1,3";
const SIGN: &str = "blocks/0,0,0/meta/3,2,8";

fn writable() -> Options {
    Options { read_only: false, ..Options::default() }
}

/// A writable core over a fresh demo world (its own SQLite map).
fn demo() -> (tempfile::TempDir, WorldFs) {
    let world = common::demo_world();
    let fs = open_core(Source::Directory(world.path()), writable());
    (world, fs)
}

fn ino_of(fs: &WorldFs, path: &str) -> Result<u64, FsError> {
    path.split('/')
        .filter(|p| !p.is_empty())
        .try_fold(ROOT, |dir, name| fs.lookup(dir, OsStr::new(name)).map(|a| a.ino))
}

fn read(fs: &WorldFs, path: &str) -> Vec<u8> {
    let o = fs.open(ino_of(fs, path).unwrap(), libc::O_RDONLY, PID).unwrap();
    let data = fs.read(o.fh, 0, u32::MAX).unwrap();
    fs.release(o.fh).unwrap();
    data
}

/// `open(O_WRONLY | flags)`, write `data` at 0, close, release: the first
/// error (as a program that checks each call sees it).
fn write(fs: &WorldFs, path: &str, flags: i32, data: &[u8]) -> Result<(), FsError> {
    let o = fs.open(ino_of(fs, path)?, libc::O_WRONLY | flags, PID)?;
    let written = if data.is_empty() { Ok(()) } else { fs.write(o.fh, 0, data).map(|_| ()) };
    let closed = fs.flush(o.fh, PID);
    let released = fs.release(o.fh);
    written.and(closed).and(released)
}

/// The stored blob of a block, read straight from the database.
fn db_blob(world: &std::path::Path, pos: BlockPos) -> Option<Vec<u8>> {
    SqliteStore::open(&world.join("map.sqlite"), true).unwrap().get(pos).unwrap()
}

/// Each bad input is refused with EINVAL (at the write or the close),
/// recorded in write-errors, and the stored block keeps its exact bytes.
/// (Moved from tests/mount_write.rs, where python wrote each file.)
#[test]
fn bad_inputs_are_refused_and_change_nothing() {
    let (world, fs) = demo();
    let inv = format!("{CHEST}/inventory");
    let good_inv = String::from_utf8(read(&fs, &inv)).unwrap();
    let nodes = String::from_utf8(read(&fs, "blocks/0,0,0/nodes")).unwrap();
    let names = String::from_utf8(read(&fs, "blocks/0,0,0/names")).unwrap();
    let raw = read(&fs, "blocks/0,0,0/raw");
    let cases: Vec<(&str, String, Vec<u8>)> = vec![
        (
            "inventory without EndInventory",
            inv.clone(),
            good_inv.replace("EndInventory\n", "").replace("EndInventoryList", "EndInventoryList\n").into(),
        ),
        ("item count 0", inv.clone(), good_inv.replace("apple 12", "apple 0").into()),
        ("item count 70000", inv.clone(), good_inv.replace("apple 12", "apple 70000").into()),
        ("too many slots", inv.clone(), good_inv.replace("Empty\n", "Empty\nEmpty\n").into()),
        ("too few slots", inv.clone(), good_inv.replacen("Empty\n", "", 1).into()),
        ("no Width", inv.clone(), good_inv.replace("Width 0\n", "").into()),
        ("unknown keyword", inv.clone(), good_inv.replacen("Empty", "Nothing", 1).into()),
        ("bad escape", inv.clone(), good_inv.replace("\\u0002Demo", "\\qDemo").into()),
        ("CRLF line ends", inv.clone(), good_inv.replace('\n', "\r\n").into()),
        ("unterminated quote", inv.clone(), good_inv.replace("blade\\u0003\"", "blade").into()),
        ("text after item metadata", inv.clone(), good_inv.replace("blade\\u0003\"", "blade\\u0003\" extra").into()),
        (
            "unnamed id",
            "blocks/0,0,0/names".into(),
            names.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>().into(),
        ),
        ("duplicate id", "blocks/0,0,0/names".into(), format!("{names}0 default:stone\n").into()),
        ("non-UTF-8 name", "blocks/0,0,0/names".into(), [names.as_bytes(), b"9 caf\xe9\n"].concat()),
        ("duplicate node", "blocks/0,0,0/nodes".into(), nodes.replacen("1 0 0 ", "0 0 0 ", 1).into()),
        ("missing nodes", "blocks/0,0,0/nodes".into(), nodes[..nodes.len() / 2].to_string().into()),
        ("node outside the block", "blocks/0,0,0/nodes".into(), nodes.replacen("0 0 0 ", "99 0 0 ", 1).into()),
        ("param2 300", "blocks/0,0,0/nodes".into(), nodes.replacen(" 0 0\n", " 0 300\n", 1).into()),
        ("param0 wrong size", "blocks/0,0,0/param0".into(), vec![0; 100]),
        ("param0 unknown id", "blocks/0,0,0/param0".into(), vec![0x7f; 8192]),
        ("param1 wrong size", "blocks/0,0,0/param1".into(), vec![0; 4095]),
        ("info key twice", "blocks/0,0,0/info".into(), b"timestamp = 1\ntimestamp = 2\n".to_vec()),
        ("unknown info key", "blocks/0,0,0/info".into(), b"colour = blue\n".to_vec()),
        ("unwritable version", "blocks/0,0,0/info".into(), b"version = 21\n".to_vec()),
        ("timer timeout 0", "blocks/0,0,0/timers".into(), b"1 1 1 0 0\n".to_vec()),
        ("duplicate timer", "blocks/0,0,0/timers".into(), b"1 1 1 5 0\n1 1 1 6 0\n".to_vec()),
        ("garbage object", "blocks/0,0,0/objects".into(), b"a cow at 1,2,3\n".to_vec()),
        (
            "object in a never-activated block",
            "blocks/0,0,0/objects".into(),
            b"object type=1 1,1,1 data=\"x\"\n".to_vec(),
        ),
        ("truncated raw blob", "blocks/0,0,0/raw".into(), raw[..raw.len() - 10].to_vec()),
        ("private names no field", format!("{CHEST}/private"), b"nosuchfield\n".to_vec()),
        ("unmapped placeholder", "node/1,1,1".into(), b"?77\n".to_vec()),
        ("oversized value", format!("{SIGN}/fields/text"), vec![b'x'; (64 << 20) + 2]),
    ];
    let before = db_blob(world.path(), ORIGIN).unwrap();
    for (what, rel, content) in &cases {
        let e = write(&fs, rel, libc::O_TRUNC, content).expect_err(what);
        assert_eq!(e.kind, ErrorKind::Invalid, "{what}: {rel}: {e:?}");
        assert_eq!(db_blob(world.path(), ORIGIN).unwrap(), before, "{what}: the block changed");
    }
    let errors = fs.write_errors().concat();
    assert_eq!(errors.lines().count(), cases.len(), "{errors}");
    assert!(errors.contains("blocks/0,0,0/meta/3,1,3/inventory: line 3: bad item at column"), "{errors}");
    // The files still show the stored state.
    assert_eq!(String::from_utf8(read(&fs, &inv)).unwrap(), good_inv);
}

/// Every decoded file written back with the content it has (a copy out and
/// back in, a rename of a copy over it, an append of nothing) leaves the
/// stored bytes as they were. (Moved from tests/mount_write.rs.)
#[test]
fn unchanged_content_is_never_rewritten() {
    let (world, fs) = demo();
    let before = db_blob(world.path(), ORIGIN).unwrap();
    let files = ["info", "names", "nodes", "param0", "param1", "param2", "timers", "objects", "raw"]
        .map(|f| format!("blocks/0,0,0/{f}"))
        .into_iter()
        .chain([format!("{CHEST}/inventory"), format!("{CHEST}/private"), format!("{SIGN}/fields/text")]);
    for path in files {
        let content = read(&fs, &path);
        write(&fs, &path, libc::O_TRUNC, &content).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    }
    // `sed -i 's/x/x/' names`: a copy renamed over the file.
    let dir = ino_of(&fs, "blocks/0,0,0").unwrap();
    let names = read(&fs, "blocks/0,0,0/names");
    let (_, o) = fs.create(dir, OsStr::new(".sedX"), 0o100600, libc::O_WRONLY | libc::O_CREAT, PID).unwrap();
    fs.write(o.fh, 0, &names).unwrap();
    fs.flush(o.fh, PID).unwrap();
    fs.release(o.fh).unwrap();
    fs.rename(dir, OsStr::new(".sedX"), dir, OsStr::new("names"), 0).unwrap();
    // `: >> timers`
    write(&fs, "blocks/0,0,0/timers", libc::O_APPEND, b"").unwrap();
    assert_eq!(db_blob(world.path(), ORIGIN).unwrap(), before, "stored bytes changed");
    assert_eq!(fs.write_errors(), Vec::<String>::new());
}

/// Copying a build: a block's raw blob does not hold its position, so
/// copying `raw` into a new block copies everything. (Moved from
/// tests/mount_write.rs.)
#[test]
fn copying_blocks_through_raw() {
    let (world, fs) = demo();
    let blocks = ino_of(&fs, "blocks").unwrap();
    for x in [0, 1] {
        fs.mkdir(blocks, OsStr::new(&format!("{},0,0", x + 5))).unwrap();
        let raw = read(&fs, &format!("blocks/{x},0,0/raw"));
        write(&fs, &format!("blocks/{},0,0/raw", x + 5), libc::O_TRUNC, &raw).unwrap();
    }
    for x in [0, 1] {
        let src = db_blob(world.path(), BlockPos::new(x, 0, 0)).unwrap();
        assert_eq!(db_blob(world.path(), BlockPos::new(x + 5, 0, 0)).unwrap(), src);
    }
    // The copied chest is at the same place inside its block.
    assert_eq!(read(&fs, "node/83,1,3"), b"default:chest 0 0\n");
    let inventory = String::from_utf8(read(&fs, "blocks/5,0,0/meta/83,1,3/inventory")).unwrap();
    assert!(inventory.contains("default:apple 12"), "{inventory}");
    assert_eq!(fs.write_errors(), Vec::<String>::new());
}

/// The world's own text files are replaced atomically, and scratch files
/// at the top never reach the world directory. (Moved from
/// tests/mount_write.rs.)
#[test]
fn world_text_files_are_written_atomically() {
    let (world, fs) = demo();
    // `sed -i`: a copy with the change, renamed over world.mt.
    let text =
        String::from_utf8(read(&fs, "world.mt")).unwrap().replace("creative_mode = true", "creative_mode = false");
    let (_, o) = fs.create(ROOT, OsStr::new(".sedW"), 0o100600, libc::O_WRONLY | libc::O_CREAT, PID).unwrap();
    fs.write(o.fh, 0, text.as_bytes()).unwrap();
    fs.flush(o.fh, PID).unwrap();
    fs.release(o.fh).unwrap();
    fs.rename(ROOT, OsStr::new(".sedW"), ROOT, OsStr::new("world.mt"), 0).unwrap();
    // `echo ... >> world.mt`
    let o = fs.open(ino_of(&fs, "world.mt").unwrap(), libc::O_WRONLY | libc::O_APPEND, PID).unwrap();
    fs.write(o.fh, 0, b"server_announce = false\n").unwrap();
    fs.flush(o.fh, PID).unwrap();
    fs.release(o.fh).unwrap();
    let text = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    assert!(text.contains("creative_mode = false\n") && text.ends_with("server_announce = false\n"), "{text}");
    let names: Vec<String> =
        std::fs::read_dir(world.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| !n.contains("worldfs-") || n == "worldfs-journal.sqlite"), "{names:?}");
    let (_, o) = fs.create(ROOT, OsStr::new("notes.txt"), 0o100644, libc::O_WRONLY | libc::O_CREAT, PID).unwrap();
    fs.write(o.fh, 0, b"hi\n").unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(read(&fs, "notes.txt"), b"hi\n");
    fs.unlink(ROOT, OsStr::new("notes.txt")).unwrap();
    assert!(!world.path().join("notes.txt").exists());
}

/// Found by the reference model: a file of a document (here a schematic's
/// `param1`) opened with O_TRUNC and closed unwritten (`cp /dev/null
/// param1`) was refused only at release, which no program hears; the
/// close itself now fails, as it does for a world's files.
#[test]
fn a_document_file_truncated_and_closed_unwritten_fails_at_that_close() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("box.mts");
    let schematic = worldfs::documents::mts::Schematic::new_air([2, 2, 2]).unwrap();
    std::fs::write(&file, schematic.encode().unwrap()).unwrap();
    let before = std::fs::read(&file).unwrap();
    let fs = open_core(Source::Document { file: &file, kind: "mts" }, writable());
    let ino = ino_of(&fs, "param1").unwrap();
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, PID).unwrap();
    let e = fs.flush(o.fh, PID).expect_err("the first close of an empty param1");
    assert_eq!(e.kind, ErrorKind::Invalid, "{e:?}");
    assert!(fs.release(o.fh).is_err(), "release refuses the empty file too");
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file is as it was");
}

/// Found by the reference model: a mod storage key opened for writing,
/// then removed (`rm`), came back when the old handle was closed. A file
/// opened before its key was deleted does not bring it back (as a node's
/// metadata fields do not), whether the mod keeps other keys or has none
/// left.
#[test]
fn a_handle_opened_before_its_key_was_removed_does_not_bring_it_back() {
    for others in [&[][..], &["other"][..]] {
        let (world, fs) = demo();
        for key in others.iter().chain(["k"].iter()) {
            put_key(&fs, key, b"v1");
        }
        let o = fs.open(ino_of(&fs, "mod_storage/refmod/k").unwrap(), libc::O_WRONLY | libc::O_TRUNC, PID).unwrap();
        fs.unlink(ino_of(&fs, "mod_storage/refmod").unwrap(), OsStr::new("k")).unwrap();
        fs.write(o.fh, 0, b"v2").unwrap();
        let e = fs.flush(o.fh, PID).expect_err("the key is gone");
        assert_eq!(e.kind, ErrorKind::NotFound, "other keys {others:?}: {e:?}");
        let _ = fs.release(o.fh);
        let looked_up = ino_of(&fs, "mod_storage/refmod/k").map(|_| ()).map_err(|e| e.kind);
        assert_eq!(looked_up, Err(ErrorKind::NotFound), "other keys {others:?}");
        assert_eq!(stored_key(world.path(), "k"), None, "other keys {others:?}: no key k stored");
        for key in others {
            assert_eq!(stored_key(world.path(), key).as_deref(), Some(&b"v1"[..]), "{key} is kept");
        }
    }
}

/// `printf VALUE > mod_storage/refmod/KEY` (the mod's directory made
/// first when it is missing).
fn put_key(fs: &WorldFs, key: &str, value: &[u8]) {
    if ino_of(fs, "mod_storage/refmod").is_err() {
        fs.mkdir(ino_of(fs, "mod_storage").unwrap(), OsStr::new("refmod")).unwrap();
    }
    let dir = ino_of(fs, "mod_storage/refmod").unwrap();
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
    let (_, o) = fs.create(dir, OsStr::new(key), 0o100644, flags, PID).unwrap();
    fs.write(o.fh, 0, value).unwrap();
    fs.flush(o.fh, PID).unwrap();
    fs.release(o.fh).unwrap();
}

/// Key `key` of mod `refmod` as mod_storage.sqlite holds it (read here,
/// not by the core).
fn stored_key(world: &std::path::Path, key: &str) -> Option<Vec<u8>> {
    let conn = rusqlite::Connection::open(world.join("mod_storage.sqlite")).unwrap();
    let sql = "SELECT value FROM entries WHERE modname = 'refmod' AND key = CAST(?1 AS BLOB)";
    conn.query_row(sql, [key], |r| r.get(0)).ok()
}

/// A key's handle refused as stale at a close (the key was changed by
/// someone else since the handle read it) stays refused: what it is given
/// afterwards (a write, an ftruncate) is not committed at its release over
/// the other change. (The reference model checked this sequence: ModPut,
/// Open, Write, another writer, Flush, Write, Truncate, Release.)
#[test]
fn a_key_handle_refused_as_stale_never_commits_over_the_other_change() {
    let (world, fs) = demo();
    put_key(&fs, "k", b"x y");
    let ino = ino_of(&fs, "mod_storage/refmod/k").unwrap();
    let o = fs.open(ino, libc::O_WRONLY, PID).unwrap();
    fs.write(o.fh, 0, b"mine").unwrap();
    write(&fs, "mod_storage/refmod/k", libc::O_TRUNC, b"theirs").unwrap();
    let e = fs.flush(o.fh, PID).expect_err("the key changed since the handle read it");
    assert_eq!(e.kind, ErrorKind::Stale, "{e:?}");
    fs.write(o.fh, 0, b"v1").unwrap();
    fs.setattr(ino, Some(o.fh), Some(2), None).unwrap();
    let e = fs.release(o.fh).expect_err("still made from the key as it was");
    assert_eq!(e.kind, ErrorKind::Stale, "{e:?}");
    assert_eq!(stored_key(world.path(), "k").as_deref(), Some(&b"theirs"[..]));
    assert_eq!(read(&fs, "mod_storage/refmod/k"), b"theirs");
}

/// A key's handle whose content someone else stored meanwhile has nothing
/// to write at its close, and goes on from the key as it is then (as a
/// world's files do): a later change through it is committed. This is the
/// sequence the reference model first took for a stale commit.
#[test]
fn a_key_handle_whose_content_was_stored_meanwhile_goes_on_from_the_key() {
    let (world, fs) = demo();
    put_key(&fs, "k", b"x y");
    let ino = ino_of(&fs, "mod_storage/refmod/k").unwrap();
    let o = fs.open(ino, libc::O_WRONLY, PID).unwrap();
    fs.write(o.fh, 0, b"hello\n").unwrap();
    write(&fs, "mod_storage/refmod/k", libc::O_TRUNC, b"hello\n").unwrap();
    fs.flush(o.fh, PID).expect("the key holds what the handle holds");
    fs.write(o.fh, 0, b"v1").unwrap();
    fs.setattr(ino, Some(o.fh), Some(2), None).unwrap();
    fs.release(o.fh).expect("made from the key as it is");
    assert_eq!(stored_key(world.path(), "k").as_deref(), Some(&b"v1"[..]));
}
