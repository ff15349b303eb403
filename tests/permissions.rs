//! Permissions (issue 4): files carry sensible modes and the mounting
//! user's ownership, the kernel enforces them (default_permissions), other
//! users get in only with `-o allow_other`, and auth data is never
//! writable. The tests that switch users run as root (they use setpriv to
//! act as nobody) and are skipped otherwise.

use crate::common;

use common::mount::Mounted;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

fn demo_world() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(d.path()).unwrap();
    d
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o7777
}

/// The options the kernel shows for a mount point in /proc/mounts.
fn mount_options(mnt: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    let mnt = mnt.to_str().unwrap();
    mounts
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.get(1) == Some(&mnt)).then(|| f[3].to_string())
        })
        .unwrap_or_else(|| panic!("{mnt} is not in /proc/mounts"))
}

/// Run a shell command as nobody; returns (status code, stdout + stderr).
fn as_nobody(m: &Mounted, script: &str) -> (i32, String) {
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", script])
        .env("MNT", &m.mnt)
        .current_dir("/")
        .output()
        .expect("setpriv");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// Let others reach the mount point (test temporary directories are 0700).
fn open_path_to(m: &Mounted) {
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn can_switch_users(test: &str) -> bool {
    if !common::is_root() {
        common::skip(test, "root", "needs root (to act as another user)");
        return false;
    }
    if common::mount::which("setpriv").is_none() {
        common::skip(test, "setpriv", "setpriv is not installed");
        return false;
    }
    true
}

const FILES: [&str; 5] = [
    "blocks/0,0,0/nodes",
    "blocks/0,0,0/names",
    "blocks/0,0,0/meta/3,1,3/inventory",
    "blocks/0,0,0/meta/3,2,8/fields/text",
    "world.mt",
];
const DIRS: [&str; 6] =
    ["", "blocks", "blocks/0,0,0", "blocks/0,0,0/meta/3,1,3", "blocks/0,0,0/meta/3,2,8/fields", "node"];

#[test]
fn modes_owner_and_default_permissions() {
    require_fuse!("modes_owner_and_default_permissions");
    let world = demo_world();
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    for ro in [false, true] {
        let m = Mounted::new(world.path(), if ro { &["ro"] } else { &[] });
        let opts = mount_options(&m.mnt);
        assert!(opts.split(',').any(|o| o == "default_permissions"), "{opts}");
        assert!(!opts.split(',').any(|o| o == "allow_other"), "allow_other only when asked: {opts}");
        assert!(opts.split(',').any(|o| o == if ro { "ro" } else { "rw" }), "{opts}");
        let (file_mode, dir_mode) = if ro { (0o444, 0o555) } else { (0o644, 0o755) };
        for f in FILES.iter().chain(&["node/3,1,3"]) {
            let p = m.path(f);
            assert_eq!(mode(&p), file_mode, "{f} (ro: {ro})");
            let md = std::fs::metadata(&p).unwrap();
            assert_eq!((md.uid(), md.gid()), (uid, gid), "{f}");
        }
        for d in DIRS {
            let p = m.path(d);
            assert_eq!(mode(&p), dir_mode, "{d}/ (ro: {ro})");
            let md = std::fs::metadata(&p).unwrap();
            assert!(md.is_dir());
            assert_eq!((md.uid(), md.gid()), (uid, gid), "{d}/");
        }
        // Files worldfs generates are never writable.
        assert_eq!(mode(&m.path("README")), 0o444);
        if !ro {
            assert_eq!(mode(&m.path("write-errors")), 0o444);
            let (code, _, err) = m.sh("echo x > $MNT/README");
            assert_ne!(code, 0, "README written");
            assert!(err.contains("Operation not permitted") || err.contains("Permission denied"), "{err}");
        } else {
            // Even root cannot write on a read-only mount.
            let (code, _, err) = m.sh("echo 'default:mese' > $MNT/node/3,1,3");
            assert_ne!(code, 0);
            assert!(err.contains("Read-only file system"), "{err}");
        }
        // A scratch file keeps the mode it was created with.
        if !ro {
            m.ok("umask 077; echo hi > $MNT/blocks/0,0,0/notes.txt");
            assert_eq!(mode(&m.path("blocks/0,0,0/notes.txt")), 0o600);
            m.ok("chmod 640 $MNT/blocks/0,0,0/notes.txt");
            assert_eq!(mode(&m.path("blocks/0,0,0/notes.txt")), 0o640);
        }
    }
}

/// chmod and chown of decoded files are accepted and change nothing: the
/// mode and owner stay what worldfs shows, and the world is untouched.
/// (Refusing them would break `cp -p`, `rsync -a` and editors that restore
/// a file's mode after writing it.)
#[test]
fn chmod_and_chown_of_decoded_files_change_nothing() {
    require_fuse!("chmod_and_chown_of_decoded_files_change_nothing");
    let world = demo_world();
    let m = Mounted::new(world.path(), &[]);
    let map_before = std::fs::read(world.path().join("map.sqlite")).unwrap();
    for f in FILES {
        let p = m.path(f);
        let (uid, gid) = (std::fs::metadata(&p).unwrap().uid(), std::fs::metadata(&p).unwrap().gid());
        let before = std::fs::read(&p).unwrap();
        m.ok(&format!("chmod 600 '{}' && chmod +x '{}'", p.display(), p.display()));
        assert_eq!(mode(&p), 0o644, "{f} after chmod");
        if common::is_root() {
            m.ok(&format!("chown 65534:65534 '{}'", p.display()));
            let md = std::fs::metadata(&p).unwrap();
            assert_eq!((md.uid(), md.gid()), (uid, gid), "{f} after chown");
        }
        assert_eq!(std::fs::read(&p).unwrap(), before, "{f}");
    }
    m.ok("chmod 700 $MNT/blocks/0,0,0 && chmod 700 $MNT/blocks");
    assert_eq!(mode(&m.path("blocks/0,0,0")), 0o755);
    drop(m);
    assert_eq!(std::fs::read(world.path().join("map.sqlite")).unwrap(), map_before, "the map changed");
}

#[test]
fn other_users_are_kept_out_without_allow_other() {
    require_fuse!("other_users_are_kept_out_without_allow_other");
    if !can_switch_users("other_users_are_kept_out_without_allow_other") {
        return;
    }
    let world = demo_world();
    for opts in [&[][..], &["allow_root"][..]] {
        let m = Mounted::new(world.path(), opts);
        open_path_to(&m);
        let (code, out) = as_nobody(&m, "ls $MNT");
        assert_ne!(code, 0, "nobody listed the mount ({opts:?}): {out}");
        assert!(out.contains("Permission denied"), "{out}");
        let (code, out) = as_nobody(&m, "cat $MNT/blocks/0,0,0/info");
        assert_ne!(code, 0, "nobody read a file ({opts:?}): {out}");
        // The owner (root) still can.
        m.ok("cat $MNT/blocks/0,0,0/info >/dev/null && ls $MNT >/dev/null");
    }
}

#[test]
fn allow_other_lets_others_read_but_not_write() {
    require_fuse!("allow_other_lets_others_read_but_not_write");
    if !can_switch_users("allow_other_lets_others_read_but_not_write") {
        return;
    }
    let world = demo_world();
    let m = Mounted::new(world.path(), &["allow_other"]);
    open_path_to(&m);
    assert!(mount_options(&m.mnt).split(',').any(|o| o == "default_permissions"));
    let map_before = std::fs::read(world.path().join("map.sqlite")).unwrap();
    let info = m.ok("cat $MNT/blocks/0,0,0/info");
    let (code, out) = as_nobody(&m, "cat $MNT/blocks/0,0,0/info");
    assert_eq!((code, out.as_str()), (0, info.as_str()));
    let (code, out) = as_nobody(&m, "ls $MNT/blocks/0,0,0/meta/3,1,3 && cat $MNT/node/3,1,3");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("inventory") && out.contains("default:chest 0 0"), "{out}");
    // Every kind of write is refused by the kernel (0644/0755, owned by
    // root), before it reaches worldfs.
    for script in [
        "echo default:mese > $MNT/node/3,1,3",
        "echo 'Item default:dirt 1' >> $MNT/blocks/0,0,0/meta/3,1,3/inventory",
        "sed -i s/default:stone/default:sand/ $MNT/blocks/0,0,0/names",
        "printf x > $MNT/blocks/0,0,0/meta/3,2,8/fields/newkey",
        "truncate -s 0 $MNT/blocks/0,0,0/timers",
        "mkdir $MNT/blocks/40,0,0",
        "rmdir $MNT/blocks/0,-1,0",
        "touch $MNT/blocks/0,0,0/scratch",
        "chmod 777 $MNT/blocks/0,0,0/names",
        "echo x > $MNT/world.mt",
    ] {
        let (code, out) = as_nobody(&m, script);
        assert_ne!(code, 0, "nobody could `{script}`: {out}");
        assert!(out.contains("Permission denied") || out.contains("Operation not permitted"), "{script}: {out}");
    }
    assert_eq!(m.ok("cat $MNT/blocks/0,0,0/info"), info);
    drop(m);
    assert_eq!(std::fs::read(world.path().join("map.sqlite")).unwrap(), map_before, "the map changed");
}

/// `auth.txt` (the "files" auth backend: names, password hashes,
/// privileges) is shown to the mounting user only and never written, not
/// even by root.
#[test]
fn auth_data_is_never_writable() {
    require_fuse!("auth_data_is_never_writable");
    let world = demo_world();
    let auth = "singleplayer:#1#c2FsdA#aGFzaA:interact,shout:1700000000\n";
    std::fs::write(world.path().join("auth.txt"), auth).unwrap();
    let m = Mounted::new(world.path(), &["allow_other"]);
    assert_eq!(mode(&m.path("auth.txt")), 0o400);
    assert_eq!(std::fs::read_to_string(m.path("auth.txt")).unwrap(), auth);
    for script in [
        "echo 'singleplayer:#1#x#y:privs:0' > $MNT/auth.txt",
        "echo x >> $MNT/auth.txt",
        "truncate -s 0 $MNT/auth.txt",
        "sed -i s/shout/server/ $MNT/auth.txt",
        "rm $MNT/auth.txt",
        "echo x > $MNT/auth.tmp && mv $MNT/auth.tmp $MNT/auth.txt",
    ] {
        let (code, _, err) = m.sh(script);
        assert_ne!(code, 0, "`{script}` succeeded");
        assert!(err.contains("Operation not permitted") || err.contains("Permission denied"), "{script}: {err}");
    }
    assert_eq!(std::fs::read_to_string(m.path("auth.txt")).unwrap(), auth);
    if can_switch_users("auth_data_is_never_writable (as nobody)") {
        open_path_to(&m);
        let (code, out) = as_nobody(&m, "cat $MNT/auth.txt");
        assert_ne!(code, 0, "nobody read the password hashes: {out}");
    }
    drop(m);
    assert_eq!(std::fs::read_to_string(world.path().join("auth.txt")).unwrap(), auth);
}
