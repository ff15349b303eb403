//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod alloc;
pub mod core_fs;
pub mod leveldb;
#[macro_use]
pub mod live;
#[macro_use]
pub mod minecraft;
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
/// xvfb-run), sqlite3, luacheck, gdb.
///
/// Also for a part of a test left out (the test then goes on): every skip
/// is written to the file named by WORLDFS_TEST_LOG too, which
/// contrib/test.sh lists at the end of the run (a passing test's stderr is
/// hidden).
pub fn skip(test: &str, what: &str, why: &str) {
    if required(what) {
        panic!("{test}: {why}, and WORLDFS_REQUIRE includes {what}");
    }
    eprintln!("SKIP {test}: {why}");
    log_line(&format!("SKIP {} [{what}]: {why}", test_id(test)));
}

/// Mark the running test as one that checks real data (`what`: which);
/// contrib/test.sh counts such tests at the end of the run.
pub fn real_data(what: &str) {
    eprintln!("REAL-DATA {}: {what}", test_id(""));
    log_line(&format!("REAL {}: {what}", test_id("")));
}

/// `binary::test` of the running test (libtest names each test's thread
/// after it), with `label` added when it says more.
fn test_id(label: &str) -> String {
    let thread = std::thread::current().name().unwrap_or("main").to_string();
    let krate = env!("CARGO_CRATE_NAME");
    match label {
        "" => format!("{krate}::{thread}"),
        // "TEST (what part)": the label says it all.
        _ if label.starts_with(thread.as_str()) => format!("{krate}::{label}"),
        _ => format!("{krate}::{thread} ({label})"),
    }
}

/// Append `line` to the file WORLDFS_TEST_LOG names, if any: one write of
/// a whole line to a file opened for appending, so that lines of tests
/// running at once (threads, binaries) never mix.
fn log_line(line: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("WORLDFS_TEST_LOG") else { return };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path);
    if let Err(e) = file.and_then(|mut f| f.write_all(format!("{line}\n").as_bytes())) {
        panic!("WORLDFS_TEST_LOG {}: {e}", std::path::Path::new(&path).display());
    }
}

/// Whether WORLDFS_REQUIRE names `what` (or `all`).
pub fn required(what: &str) -> bool {
    std::env::var("WORLDFS_REQUIRE")
        .map(|v| v.split(',').map(str::trim).any(|r| r == what || r == "all"))
        .unwrap_or(false)
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Send signal `sig` to process `pid`; a process already gone is no error.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: kill takes no memory; a wrong pid only makes it fail.
    unsafe { libc::kill(pid, sig) };
}

/// A fresh demo world (`worldfs demo`) in a temporary directory.
pub fn demo_world() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    worldfs::worlds::luanti::demo::write_demo(d.path()).unwrap();
    d
}

/// `../shared` next to the checkout (or $WORLDFS_SHARED), if present: the
/// team's large and unlicensed samples, which only add to the real data in
/// the repository (tests/data).
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WORLDFS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    dir.is_dir().then_some(dir)
}

/// tests/data: the real data in the repository (tests/data/SOURCES.md).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The real sample files of one side format (`mts`, `cubeset`, `twmap`,
/// `mc_chunk_section`), in tests/data/formats; marks the test as one on
/// real data.
pub fn real_formats(kind: &str) -> PathBuf {
    let dir = data_dir().join("formats").join(kind);
    assert!(dir.is_dir(), "{} is missing from the checkout", dir.display());
    real_data(&format!("tests/data/formats/{kind}"));
    dir
}

/// The real sqlite worlds: the two in tests/data/luanti, plus those of
/// shared/realdata/worlds when ../shared is there; marks the test as one
/// on real data.
pub fn real_sqlite_worlds(test: &str) -> Vec<PathBuf> {
    let with_map = |root: &std::path::Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.retain(|p| p.join("map.sqlite").is_file());
        v.sort();
        v
    };
    let mut worlds = with_map(&data_dir().join("luanti"));
    assert!(worlds.len() >= 2, "{test}: tests/data/luanti lacks its worlds: {worlds:?}");
    let mut from_shared = 0;
    if let Some(shared) = shared_dir() {
        for w in with_map(&shared.join("realdata/worlds")) {
            // The repository's worlds are in the shared directory too.
            if !worlds.iter().any(|r| r.file_name() == w.file_name()) {
                worlds.push(w);
                from_shared += 1;
            }
        }
    }
    let names: Vec<String> = worlds.iter().map(|w| w.file_name().unwrap().to_string_lossy().into_owned()).collect();
    real_data(&format!("{} sqlite worlds ({from_shared} from ../shared): {}", worlds.len(), names.join(", ")));
    worlds
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

/// Panics unless `a` and `b` are the same bytes, saying where they part
/// (not the bytes: region files and databases are large).
pub fn same_bytes(a: &[u8], b: &[u8], what: &str) {
    if a != b {
        let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
        panic!("{what}: {} bytes against {}, first difference at byte {at}", a.len(), b.len());
    }
}
