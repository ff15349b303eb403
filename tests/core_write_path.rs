//! The write path of the core without a mount (issue 26): scratch files
//! renamed over files of the world, refusals that reach the call that ends
//! the change, the memory of write buffers, sizes while writing, and the
//! errno of a refusal.

mod common;

use std::ffi::OsStr;
use worldfs::fs::{FsError, Options, WorldFs};
use worldfs::luanti::inode;

fn writable(world: &std::path::Path) -> WorldFs {
    WorldFs::open_world(world, Options { read_only: false, ..Options::default() }).unwrap()
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
    assert_eq!(e.errno, libc::ESTALE, "{e}");
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
    assert_eq!(e.errno, libc::ESTALE, "{e}");
    assert_eq!(node_name(&fs, [8, 3, 5]), "default:goldblock");
    assert_ne!(node_name(&fs, [7, 3, 5]), "default:obsidian");
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
                        assert_eq!(e.errno, libc::ESTALE, "{e}");
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
