//! The write path of the core without a mount (issue 26): scratch files
//! renamed over files of the world, refusals that reach the call that ends
//! the change, the memory of write buffers, sizes while writing, and the
//! errno of a refusal.

use crate::common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use worldfs::fs::{Caller, ErrorKind, FsError, Options, WorldFs};
use worldfs::worlds::luanti::inode;

fn writable(world: &std::path::Path) -> WorldFs {
    worldfs::open::open_world(world, Options { read_only: false, ..Options::default() }).unwrap()
}

/// The inode of a path like "blocks/0,0,0/nodes".
fn ino_of(fs: &WorldFs, path: &str) -> u64 {
    path.split('/').fold(inode::ROOT, |dir, name| fs.lookup(dir, OsStr::new(name)).unwrap().ino)
}

/// The content of `ino` as process `pid` reads it (open, read, release).
fn read_as(fs: &WorldFs, ino: u64, pid: u32) -> Vec<u8> {
    let o = fs.open(ino, libc::O_RDONLY, pid).unwrap();
    let data = fs.read(o.fh, 0, u32::MAX).unwrap();
    fs.release(o.fh).unwrap();
    data
}

/// Write `data` to `ino` as process `pid` would with `>` (open O_TRUNC,
/// write, close); the result of close.
fn write_as(fs: &WorldFs, ino: u64, data: &[u8], pid: u32) -> Result<(), FsError> {
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid)?;
    let w = fs.write(o.fh, 0, data).map(|_| ());
    let r = w.and_then(|()| fs.flush(o.fh, pid));
    let _ = fs.release(o.fh);
    r
}

/// Make scratch file `name` in directory `dir` with `data`, as process
/// `pid` does (sed's mkstemp, cp's create).
fn make_scratch(fs: &WorldFs, dir: u64, name: &str, data: &[u8], pid: u32) {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
    let (_, o) = fs.create(dir, OsStr::new(name), 0o100600, flags, pid).unwrap();
    fs.write(o.fh, 0, data).unwrap();
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
}

/// `nodes` with the line of node (x, y, z) set to `name`.
fn with_node(nodes: &[u8], [x, y, z]: [i32; 3], name: &str) -> Vec<u8> {
    let text = String::from_utf8(nodes.to_vec()).unwrap();
    let prefix = format!("{x} {y} {z} ");
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with(&prefix) {
            out.push_str(&format!("{prefix}{name} 0 0\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.into_bytes()
}

fn node_name(fs: &WorldFs, [x, y, z]: [i32; 3]) -> String {
    let ino = ino_of(fs, &format!("node/{x},{y},{z}"));
    let text = String::from_utf8(read_as(fs, ino, 1)).unwrap();
    text.split(' ').next().unwrap().to_string()
}

/// `cp B/nodes B/.t; echo 'default:goldblock 0 0' > node/X,Y,Z; mv B/.t
/// B/nodes` used to exit 0 and undo the node write: the scratch file was
/// made from `nodes` as it was before that write.
#[test]
fn renaming_a_copy_over_a_file_changed_since_it_was_read_is_refused() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let block = ino_of(&fs, "blocks/0,0,0");
    let nodes = ino_of(&fs, "blocks/0,0,0/nodes");
    let (cp, echo, mv) = (1001, 1002, 1003);

    let copy = read_as(&fs, nodes, cp);
    make_scratch(&fs, block, ".t", &copy, cp);
    let node = ino_of(&fs, "node/5,3,5");
    write_as(&fs, node, b"default:goldblock 0 0\n", echo).unwrap();
    let after_echo = read_as(&fs, nodes, 1);

    let e = fs.rename(block, OsStr::new(".t"), block, OsStr::new("nodes"), 0).unwrap_err();
    let _ = mv;
    assert_eq!(e.kind, ErrorKind::Stale, "{e}");
    assert_eq!(read_as(&fs, nodes, 1), after_echo, "the node write stands");
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:goldblock");
    let errors = fs.write_errors().concat();
    assert!(errors.contains("blocks/0,0,0/nodes") && errors.contains(".t"), "{errors}");
    assert!(fs.lookup(block, OsStr::new(".t")).is_ok(), "the refused scratch file is kept");
}

/// The ordinary `sed -i` (read, scratch, rename with nothing in between)
/// is accepted, and so is a copy of something its writer never read from
/// that file (a deliberate overwrite); a `sed -i` on the copy carries the
/// copy's base along, so its rename is checked too.
#[test]
fn renames_of_copies_made_from_the_current_file_or_from_elsewhere_are_accepted() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let block = ino_of(&fs, "blocks/0,0,0");
    let nodes = ino_of(&fs, "blocks/0,0,0/nodes");

    // sed -i
    let sed = 2001;
    let edited = with_node(&read_as(&fs, nodes, sed), [5, 3, 5], "default:mese");
    make_scratch(&fs, block, "sedAAAA", &edited, sed);
    fs.rename(block, OsStr::new("sedAAAA"), block, OsStr::new("nodes"), 0).unwrap();
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:mese");

    // cp unrelated.txt B/.u; mv B/.u B/nodes: the writer read no `nodes`.
    let other = with_node(&read_as(&fs, nodes, 2002), [6, 3, 5], "default:glass");
    write_as(&fs, ino_of(&fs, "node/5,3,5"), b"default:goldblock\n", 2003).unwrap();
    make_scratch(&fs, block, ".u", &with_node(&other, [5, 3, 5], "default:goldblock"), 2004);
    fs.rename(block, OsStr::new(".u"), block, OsStr::new("nodes"), 0).unwrap();
    assert_eq!(node_name(&fs, [6, 3, 5]), "default:glass");

    // cp B/nodes B/.v; sed -i ... B/.v (another process, from the copy);
    // a node write; mv B/.v B/nodes: refused, the copy's base followed.
    let copy = read_as(&fs, nodes, 2005);
    make_scratch(&fs, block, ".v", &copy, 2005);
    let v = ino_of(&fs, "blocks/0,0,0/.v");
    let sed2 = 2006;
    let edited = with_node(&read_as(&fs, v, sed2), [7, 3, 5], "default:obsidian");
    make_scratch(&fs, block, "sedBBBB", &edited, sed2);
    fs.rename(block, OsStr::new("sedBBBB"), block, OsStr::new(".v"), 0).unwrap();
    write_as(&fs, ino_of(&fs, "node/8,3,5"), b"default:goldblock\n", 2007).unwrap();
    let e = fs.rename(block, OsStr::new(".v"), block, OsStr::new("nodes"), 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stale, "{e}");
    assert_eq!(node_name(&fs, [8, 3, 5]), "default:goldblock");
    assert_ne!(node_name(&fs, [7, 3, 5]), "default:obsidian");
}

/// `cat B/nodes | sed ... > B/.t; echo ... > node/X,Y,Z; mv B/.t B/nodes`:
/// the reader (cat) and the writer of the scratch file (the shell that
/// becomes sed) are two processes of one pipeline, one process group. The
/// rename used to be accepted (its writer read nothing) and undid the node
/// write. The shell starts both at once, so the writer may make its file
/// before the reader opens `nodes`.
#[test]
fn a_pipelines_output_renamed_over_a_file_changed_since_its_reader_read_it_is_refused() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let block = ino_of(&fs, "blocks/0,0,0");
    let nodes = ino_of(&fs, "blocks/0,0,0/nodes");
    let pipeline = |cat: u32, sed: u32, tmp: &str, at: [i32; 3]| {
        let (cat, sed) = (Caller { pid: cat, group: Some(cat) }, Caller { pid: sed, group: Some(cat) });
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let (_, out) = fs.create_by(block, OsStr::new(tmp), 0o100644, flags, sed).unwrap();
        fs.flush(out.fh, sed.pid).unwrap(); // bash's close of the descriptor it dup2'ed
        let o = fs.open_by(nodes, libc::O_RDONLY, cat).unwrap();
        let read = fs.read(o.fh, 0, u32::MAX).unwrap();
        fs.release(o.fh).unwrap();
        fs.write(out.fh, 0, &with_node(&read, at, "default:mese")).unwrap();
        fs.flush(out.fh, sed.pid).unwrap();
        fs.release(out.fh).unwrap();
    };

    pipeline(5001, 5002, ".t", [6, 3, 5]);
    write_as(&fs, ino_of(&fs, "node/5,3,5"), b"default:goldblock 0 0\n", 5003).unwrap();
    let e = fs.rename(block, OsStr::new(".t"), block, OsStr::new("nodes"), 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stale, "{e}");
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:goldblock", "the node write stands");
    assert_ne!(node_name(&fs, [6, 3, 5]), "default:mese");
    assert!(fs.write_errors().concat().contains(".t was made from the file as it was"), "{:?}", fs.write_errors());

    // The same pipeline with nothing in between is accepted.
    pipeline(5011, 5012, ".u", [6, 3, 5]);
    fs.rename(block, OsStr::new(".u"), block, OsStr::new("nodes"), 0).unwrap();
    assert_eq!(node_name(&fs, [6, 3, 5]), "default:mese");
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:goldblock");

    // A writer of another group that read nothing overwrites on purpose,
    // whatever that pipeline read.
    let elsewhere = with_node(&read_as(&fs, nodes, 5021), [7, 3, 5], "default:glass");
    write_as(&fs, ino_of(&fs, "node/8,3,5"), b"default:goldblock 0 0\n", 5022).unwrap();
    let other = Caller { pid: 5023, group: Some(5023) };
    let (_, o) = fs.create_by(block, OsStr::new(".v"), 0o100644, libc::O_WRONLY | libc::O_CREAT, other).unwrap();
    fs.write(o.fh, 0, &elsewhere).unwrap();
    fs.flush(o.fh, other.pid).unwrap();
    fs.release(o.fh).unwrap();
    fs.rename(block, OsStr::new(".v"), block, OsStr::new("nodes"), 0).unwrap();
    assert_eq!(node_name(&fs, [7, 3, 5]), "default:glass");
}

/// Eight `sed -i` at once on one file, each changing its own line: each
/// either gets its edit in or has its rename refused; none is lost.
#[test]
fn parallel_sed_i_on_one_file_never_loses_an_accepted_edit() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let block = ino_of(&fs, "blocks/0,0,0");
    let nodes = ino_of(&fs, "blocks/0,0,0/nodes");
    let names = ["default:mese", "default:glass", "default:obsidian", "default:goldblock"];
    let barrier = std::sync::Barrier::new(8);
    let accepted: Vec<([i32; 3], &str, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u32)
            .map(|i| {
                let (fs, barrier) = (&fs, &barrier);
                s.spawn(move || {
                    let pid = 3000 + i;
                    let at = [i as i32 + 4, 3, 5];
                    let name = names[i as usize % names.len()];
                    let read = read_as(fs, nodes, pid);
                    barrier.wait();
                    let tmp = format!("sed{i:04}");
                    make_scratch(fs, block, &tmp, &with_node(&read, at, name), pid);
                    let r = fs.rename(block, OsStr::new(&tmp), block, OsStr::new("nodes"), 0);
                    if let Err(e) = &r {
                        assert_eq!(e.kind, ErrorKind::Stale, "{e}");
                    }
                    (at, name, r.is_ok())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(accepted.iter().any(|a| a.2), "at least one sed gets in");
    for (at, name, ok) in accepted {
        if ok {
            assert_eq!(node_name(&fs, at), name, "an accepted edit at {at:?} is in the world");
        }
    }
}

/// `open(O_WRONLY|O_TRUNC)` then `close()` without a write (`cp /dev/null
/// names`) used to return 0 from close while the empty file was refused at
/// release. Its close now fails; the refusal is in write-errors; the world
/// is unchanged. Bash's pattern (a first close of a dup, then the write)
/// still works, without a line in write-errors.
#[test]
fn closing_a_truncated_file_unwritten_fails_when_an_empty_file_is_refused() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let files = [
        "blocks/0,0,0/names",
        "node/5,3,5",
        "blocks/0,0,0/param1",
        "blocks/0,0,0/raw",
        "blocks/0,0,0/meta/3,1,3/inventory",
    ];
    for (i, path) in files.iter().enumerate() {
        let ino = ino_of(&fs, path);
        let before = read_as(&fs, ino, 1);
        let pid = 4000 + i as u32;
        let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
        let e = fs.flush(o.fh, pid).expect_err(path);
        assert_eq!(e.kind, ErrorKind::Invalid, "{path}: {e}");
        assert!(fs.release(o.fh).is_err(), "{path}: refused at release too");
        assert_eq!(read_as(&fs, ino, 1), before, "{path} is unchanged");
        assert!(fs.write_errors().concat().contains(path), "{path} in write-errors");
    }
    // echo default:mese > node/5,3,5 in bash: open, close of the dup, write, close.
    let lines = fs.write_errors().len();
    let node = ino_of(&fs, "node/5,3,5");
    let o = fs.open(node, libc::O_WRONLY | libc::O_TRUNC, 4100).unwrap();
    let _ = fs.flush(o.fh, 4100);
    fs.write(o.fh, 0, b"default:stone\n").unwrap();
    fs.flush(o.fh, 4100).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:stone");
    assert_eq!(fs.write_errors().len(), lines, "{:?}", fs.write_errors());
}

/// `echo 'nonsense:::' > MNT/node/X,Y,Z` exits 0 in bash (it ignores
/// close()); a write that holds a one-line file's whole line is judged at
/// once, so the write fails. A line written in pieces, and a multi-line
/// file's first line, are judged at close as before.
#[test]
fn a_complete_invalid_line_is_refused_at_write_and_pieces_wait_for_close() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let node = ino_of(&fs, "node/5,3,5");
    let before = read_as(&fs, node, 1);
    let pid = 4200;
    let o = fs.open(node, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    let e = fs.write(o.fh, 0, b"nonsense:::\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid, "{e}");
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(read_as(&fs, node, 1), before, "nothing changed");
    let errors = fs.write_errors();
    assert_eq!(errors.len(), 1, "one line: {errors:?}");
    assert!(errors[0].contains("node/5,3,5"), "{errors:?}");

    // In pieces: the first has no newline yet.
    let o = fs.open(node, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    fs.write(o.fh, 0, b"default:").unwrap();
    fs.write(o.fh, 8, b"mese 0 0\n").unwrap();
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(node_name(&fs, [5, 3, 5]), "default:mese");

    // names: a first line alone proves nothing; refused at close.
    let names = ino_of(&fs, "blocks/0,0,0/names");
    let o = fs.open(names, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    fs.write(o.fh, 0, b"0 air\n").unwrap();
    assert_eq!(fs.flush(o.fh, pid).unwrap_err().kind, ErrorKind::Invalid);
    let _ = fs.release(o.fh);

    // A whole param0 with an id that has no name is refused at write.
    let param0 = ino_of(&fs, "blocks/0,0,0/param0");
    let o = fs.open(param0, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    assert_eq!(fs.write(o.fh, 0, &[0xff; 8192]).unwrap_err().kind, ErrorKind::Invalid);
    let _ = fs.release(o.fh);
}

/// Eight writers drove the daemon from 59 MB to 2.08 GB: each buffer was
/// capped, their total was not. Buffers of files being written and scratch
/// files now share one budget; past it a write fails with ENOSPC and a line
/// in write-errors, and the memory is given back at release.
#[test]
fn write_buffers_of_all_open_files_together_are_capped() {
    let world = common::demo_world();
    let opts = Options { read_only: false, write_buffers: 1 << 20, ..Options::default() };
    let fs = worldfs::open::open_world(world.path(), opts).unwrap();
    let chunk = vec![b'#'; 300 << 10];
    let files = ["blocks/0,0,0/nodes", "blocks/1,0,0/nodes", "blocks/0,0,1/nodes", "blocks/1,0,1/nodes"];
    let mut open = Vec::new();
    let mut refused = None;
    for (i, path) in files.iter().enumerate() {
        let o = fs.open(ino_of(&fs, path), libc::O_WRONLY | libc::O_TRUNC, 4300).unwrap();
        open.push(o.fh);
        if let Err(e) = fs.write(o.fh, 0, &chunk) {
            refused = Some((i, e));
            break;
        }
    }
    let (i, e) = refused.expect("the fourth 300 KiB buffer is past 1 MiB");
    assert_eq!((i, e.kind), (3, ErrorKind::NoSpace), "{e}");
    assert!(fs.write_errors().concat().contains("write_mb"), "{:?}", fs.write_errors());
    // A scratch file counts too.
    let block = ino_of(&fs, "blocks/0,0,0");
    let (_, s) = fs.create(block, OsStr::new("big"), 0o100600, libc::O_WRONLY | libc::O_CREAT, 4300).unwrap();
    assert_eq!(fs.write(s.fh, 0, &chunk).unwrap_err().kind, ErrorKind::NoSpace);
    for fh in open {
        let _ = fs.release(fh);
    }
    fs.write(s.fh, 0, &chunk).expect("room again once the buffers are released");
    fs.release(s.fh).unwrap();
}

/// fstat after O_TRUNC reported the old size until close.
#[test]
fn fstat_of_a_file_being_written_gives_the_size_written_so_far() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let nodes = ino_of(&fs, "blocks/0,0,0/nodes");
    assert!(fs.getattr(nodes).unwrap().size > 1000);
    let o = fs.open(nodes, libc::O_WRONLY | libc::O_TRUNC, 4400).unwrap();
    assert_eq!(fs.getattr_open(nodes, Some(o.fh)).unwrap().size, 0);
    fs.write(o.fh, 0, b"0 0 0 default:stone 0 0\n").unwrap();
    assert_eq!(fs.getattr_open(nodes, Some(o.fh)).unwrap().size, 24);
    assert_eq!(fs.getattr(nodes).unwrap().size, 24, "the kernel's fstat comes without a handle");
    let _ = fs.release(o.fh);
    assert!(fs.getattr(nodes).unwrap().size > 1000, "the refused content is gone with its handle");
}

/// Names a program chose were echoed raw into write-errors and the log: a
/// newline or NUL in a refused name started a line of its own.
#[test]
fn refused_names_cannot_forge_lines_of_write_errors() {
    let world = common::demo_world();
    let fs = writable(world.path());
    let blocks = ino_of(&fs, "blocks");
    // players/ quotes the name it refuses in its message.
    let players = ino_of(&fs, "players");
    let forged = "x\n2026-11-22T09:41:07Z blocks/0,0,0/names: forged\0\u{1b}[2J";
    assert!(fs.mkdir(players, OsStr::new(forged)).is_err());
    let bad = std::ffi::OsStr::from_bytes(b"y\n\xff");
    assert!(fs.mkdir(blocks, bad).is_err());
    let errors = fs.write_errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for line in &errors {
        assert_eq!(line.matches('\n').count(), 1, "one line each: {line:?}");
        assert!(!line.contains('\0') && !line.contains('\u{1b}'), "{line:?}");
    }
    assert!(errors[0].contains("x\\n2026") && errors[0].contains("\\0"), "{errors:?}");
    assert!(errors[1].contains("\\xff"), "{errors:?}");
}

/// world.mt on a full disk failed with EIO while write-errors said ENOSPC:
/// the kind of an I/O failure was lost on the way up.
#[test]
fn a_world_file_on_a_full_disk_fails_with_enospc() {
    if !common::is_root() {
        common::skip("a_world_file_on_a_full_disk_fails_with_enospc", "root", "needs root to mount a small tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mount =
        |args: &[&str]| assert!(std::process::Command::new(args[0]).args(&args[1..]).status().unwrap().success());
    mount(&["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small.to_str().unwrap()]);
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _guard = Unmount(small.clone());
    let world = small.join("world");
    worldfs::worlds::luanti::demo::write_demo(&world).unwrap();
    let fs = writable(&world);
    let ino = ino_of(&fs, "world.mt");
    let before = std::fs::read(world.join("world.mt")).unwrap();
    let filler = vec![0u8; 4 << 20];
    let _ = std::fs::write(small.join("filler"), &filler);
    let mut big = before.clone();
    big.extend(std::iter::repeat_n(b'#', 64 << 10));
    big.push(b'\n');
    let e = write_as(&fs, ino, &big, 4500).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NoSpace, "{e}");
    assert_eq!(std::fs::read(world.join("world.mt")).unwrap(), before);
    assert!(fs.write_errors().concat().to_lowercase().contains("no space left"), "{:?}", fs.write_errors());
}

/// The same through a player's one-line files (hp, breath, position,
/// look): a whole bad line fails at write; an empty file at the first
/// close.
#[test]
fn a_players_bad_one_line_file_is_refused_at_write_and_an_empty_one_at_close() {
    let world = common::demo_world();
    let d = world.path();
    let mt = std::fs::read_to_string(d.join("world.mt"))
        .unwrap()
        .replace("player_backend = sqlite3", "player_backend = files");
    std::fs::write(d.join("world.mt"), mt).unwrap();
    std::fs::create_dir_all(d.join("players")).unwrap();
    let alice = "breath = 10\nyaw = 270\npitch = -12.5\nposition = (105,85,-42.5)\nhp = 18\nname = alice\nversion = 1\n\
                 PlayerArgsEnd\nList main 1\nWidth 0\nEmpty\nEndInventoryList\nEndInventory\n";
    std::fs::write(d.join("players/alice"), alice).unwrap();
    let fs = writable(d);
    let hp = ino_of(&fs, "players/alice/hp");
    let pid = 4600;
    let o = fs.open(hp, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    assert_eq!(fs.write(o.fh, 0, b"lots\n").unwrap_err().kind, ErrorKind::Invalid);
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
    let o = fs.open(hp, libc::O_WRONLY | libc::O_TRUNC, pid).unwrap();
    assert_eq!(fs.flush(o.fh, pid).unwrap_err().kind, ErrorKind::Invalid);
    let _ = fs.release(o.fh);
    assert_eq!(read_as(&fs, hp, 1), b"18\n");
    assert_eq!(std::fs::read_to_string(d.join("players/alice")).unwrap(), alice, "the file is untouched");
    write_as(&fs, hp, b"20\n", pid).unwrap();
    assert_eq!(read_as(&fs, hp, 1), b"20\n");
}
