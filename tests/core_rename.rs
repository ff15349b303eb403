//! The filesystem core without a mount: what the kernel does around
//! `sed -i` (a temporary file renamed over the original) and the requests
//! that follow it.

use crate::common;

use std::ffi::OsStr;
use worldfs::fs::Options;
use worldfs::worlds::luanti::inode;

/// Found by appending to world.mt right after `sed -i` on it (a few times
/// in a hundred): after the rename the kernel drops the inode world.mt had
/// and keeps using the temporary file's inode for the name; forgetting the
/// old one used to take away the entry the new one pointed to, and the
/// next open of world.mt failed with ENOENT.
#[test]
fn a_file_renamed_over_a_world_file_stays_usable_when_the_old_inode_is_forgotten() {
    let world = common::demo_world();
    let fs = worldfs::open::open_world(world.path(), Options { read_only: false, ..Options::default() }).unwrap();
    let pid = std::process::id();
    let old = fs.lookup(inode::ROOT, OsStr::new("world.mt")).unwrap().ino;
    let text = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    let edited = text.replace("creative_mode = true", "creative_mode = false");
    assert_ne!(edited, text, "the demo world.mt sets creative_mode");

    // sed -i: a temporary file, written, renamed over world.mt.
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
    let (tmp, o) = fs.create(inode::ROOT, OsStr::new("sedXYZ"), 0o100600, flags, pid).unwrap();
    fs.write(o.fh, 0, edited.as_bytes()).unwrap();
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
    fs.rename(inode::ROOT, OsStr::new("sedXYZ"), inode::ROOT, OsStr::new("world.mt"), 0).unwrap();
    assert_eq!(std::fs::read_to_string(world.path().join("world.mt")).unwrap(), edited);

    // The kernel forgets the inode world.mt had; the name now has tmp's.
    fs.forget(old, 1);
    let o = fs.open(tmp.ino, libc::O_WRONLY | libc::O_APPEND, pid).expect("world.mt through its new inode");
    fs.write(o.fh, 0, b"server_announce = false\n").unwrap();
    fs.flush(o.fh, pid).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(
        std::fs::read_to_string(world.path().join("world.mt")).unwrap(),
        format!("{edited}server_announce = false\n")
    );
    assert_eq!(fs.getattr(tmp.ino).unwrap().size as usize, edited.len() + 24);

    // Once the kernel forgets that inode too, the name is looked up afresh.
    fs.forget(tmp.ino, 1);
    let again = fs.lookup(inode::ROOT, OsStr::new("world.mt")).unwrap();
    assert_eq!(again.size as usize, edited.len() + 24);
    assert!(fs.getattr(tmp.ino).is_err(), "the temporary file's number is gone with its alias");
}
