//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod alloc;
pub mod core_fs;
pub mod leveldb;
#[macro_use]
pub mod live;
#[macro_use]
pub mod mount;
pub mod pg;
pub mod redis;
#[macro_use]
pub mod server;

use std::path::PathBuf;

/// Skip (the caller then returns) because `what` is missing: prints why,
/// unless the environment variable WORLDFS_REQUIRE names `what` (a comma
/// separated list, or `all`), in which case the test fails: CI sets it so
/// that a machine that lost a tool goes red instead of passing silently.
/// Names in use: fuse, server, shared, root, python3, vim, nano, tmux,
/// setpriv, twmap (the Python package), pg (a PostgreSQL server), redis
/// (redis-server), chromium, minetestmapper, lua (lua5.1 or lua5.4),
/// prismarine (prismarine-chunk from npm, in target/npm-oracle), bedrock
/// (bedrock-provider and leveldb-zlib from npm, the same place), systemd
/// (systemd-analyze), worldedit (the mod), man, java (a JDK with
/// /usr/share/java/lz4-java.jar), client (the minetest client and
/// xvfb-run).
pub fn skip(test: &str, what: &str, why: &str) {
    if required(what) {
        panic!("{test}: {why}, and WORLDFS_REQUIRE includes {what}");
    }
    eprintln!("SKIP {test}: {why}");
}

/// Whether WORLDFS_REQUIRE names `what` (or `all`).
pub fn required(what: &str) -> bool {
    std::env::var("WORLDFS_REQUIRE")
        .map(|v| v.split(',').map(str::trim).any(|r| r == what || r == "all"))
        .unwrap_or(false)
}

/// A fresh demo world (`worldfs demo`) in a temporary directory.
pub fn demo_world() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(d.path()).unwrap();
    d
}

/// `../shared` next to the checkout (or $WORLDFS_SHARED), if present.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WORLDFS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    dir.is_dir().then_some(dir)
}

/// The real sqlite worlds under shared/realdata/worlds (never an empty
/// list), or None after `skip` when the shared data is absent, or present
/// without its worlds.
pub fn real_sqlite_worlds(test: &str) -> Option<Vec<PathBuf>> {
    let Some(shared) = shared_dir() else {
        skip(test, "shared", "../shared is absent (set WORLDFS_SHARED to run it)");
        return None;
    };
    let root = shared.join("realdata/worlds");
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) => {
            skip(test, "shared", &format!("{} cannot be read: {e}", root.display()));
            return None;
        }
    };
    let mut worlds: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("map.sqlite").is_file()).collect();
    worlds.sort();
    if worlds.is_empty() {
        skip(test, "shared", &format!("{} holds no world with a map.sqlite", root.display()));
        return None;
    }
    Some(worlds)
}

/// Copy a world directory (everything under it) to a fresh temporary
/// directory; the copy is writable.
pub fn copy_world(src: &std::path::Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(src, dir.path());
    dir
}

/// Copy directory `src` with everything under it to `dst` (made if
/// missing); the copies are writable.
pub fn copy_dir(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
            let mut perm = std::fs::metadata(&to).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&to, perm).unwrap();
        }
    }
}

/// Wait (up to 15 s) until `f` holds.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !f() {
        assert!(t.elapsed().as_secs() < 15, "timed out waiting: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
