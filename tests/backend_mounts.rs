//! PostgreSQL and Redis worlds mounted and edited through the mount, with
//! the real server as the oracle where it can be: the Debian 5.6.1 server
//! migrates a world into PostgreSQL (its own writer), worldfs edits it, and
//! the server running on the PostgreSQL world reads our edits back. The
//! Debian server is built without Redis, so a Redis world is filled by the
//! test (HSET of every block of a sqlite world, the engine's layout) and
//! checked block for block against the sqlite world it came from.

use crate::common;

use common::mount::Mounted;
use common::server::server_dump;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

fn set_world_mt(world: &std::path::Path, extra: &str) {
    let mt = std::fs::read_to_string(world.join("world.mt")).unwrap();
    std::fs::write(world.join("world.mt"), format!("{mt}{extra}")).unwrap();
}

#[test]
fn a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it() {
    require_fuse!("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it");
    require_minetestserver!("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it");
    let Some(pg) = common::pg::start_or_skip("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it")
    else {
        return;
    };
    pg.create_db("mt");
    let world = common::demo_world();
    let w = world.path();
    set_world_mt(w, &format!("pgsql_connection = {}\n", pg.conninfo("mt")));
    // The engine's own migration fills PostgreSQL (int4 columns, 5.6.1).
    common::server::migrate(w, "--migrate", "postgresql");
    assert!(std::fs::read_to_string(w.join("world.mt")).unwrap().contains("backend = postgresql"));
    let sqlite_count = SqliteStore::open(&w.join("map.sqlite"), true).unwrap().count().unwrap();
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    assert_eq!(pg.sql("mt", "SELECT count(*) FROM blocks").trim(), sqlite_count.to_string());

    let m = Mounted::new(w, &[]);
    assert!(m.log_text().contains("postgresql"), "the log names the backend:\n{}", m.log_text());
    assert_eq!(m.ok("ls $MNT/blocks | wc -l").trim(), sqlite_count.to_string());
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    m.ok("sed -i 's/^\\([0-9]*\\) default:dirt$/\\1 default:sand/' $MNT/blocks/*/names");
    m.ok("mkdir $MNT/blocks/3,0,3 && rmdir $MNT/blocks/-1,-1,-1");
    assert_eq!(m.refusals(), "");
    m.unmount();
    assert!(pg.sql("mt", "SELECT count(*) FROM blocks WHERE posX = 3 AND posY = 0 AND posZ = 3").trim() == "1");

    // The engine's migration reads every block back from PostgreSQL (its
    // own reader), and the real server then reads our edits.
    common::server::migrate(w, "--migrate", "sqlite3");
    let facts = server_dump(w, &[[5, 3, 5], [50, 3, 50], [-10, -10, -10]]);
    let name = |p: [i32; 3]| facts.nodes[&p].clone().map(|n| String::from_utf8(n.0).unwrap());
    assert_eq!(name([5, 3, 5]).as_deref(), Some("default:mese"));
    assert_eq!(name([50, 3, 50]).as_deref(), Some("air"), "the new block is air");
    assert!(facts.blocks.contains(&BlockPos::new(3, 0, 3)));
    // No dirt is left anywhere.
    let back = SqliteStore::open(&w.join("map.sqlite"), true).unwrap();
    let mut after = None;
    loop {
        let page = back.scan_after(after, 256).unwrap();
        let Some(last) = page.last() else { break };
        after = Some(last.0);
        for (pos, blob) in &page {
            let b = worldfs_codec::luanti::Block::decode(blob).unwrap();
            assert!(!b.mapping.iter().any(|e| e.name == b"default:dirt"), "block {pos} still has dirt");
        }
    }
}

#[test]
fn a_redis_world_reads_like_its_sqlite_original_and_takes_writes() {
    require_fuse!("a_redis_world_reads_like_its_sqlite_original_and_takes_writes");
    if let Some(why) = common::redis::unavailable() {
        common::skip("a_redis_world_reads_like_its_sqlite_original_and_takes_writes", "redis", &why);
        return;
    }
    let r = common::redis::Redis::start(None);
    let world = common::demo_world();
    let w = world.path();
    // HSET every block as the engine's Redis backend keeps them.
    let sqlite = SqliteStore::open(&w.join("map.sqlite"), true).unwrap();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", r.port)).unwrap();
    let mut c = client.get_connection().unwrap();
    let all = sqlite.scan_after(None, 100_000).unwrap();
    for (pos, blob) in &all {
        let _: () =
            redis::cmd("HSET").arg("mt").arg(pos.legacy_key().to_string()).arg(blob.as_slice()).query(&mut c).unwrap();
    }
    drop(sqlite);
    // The loader's connection is a client like a running server: gone
    // before a writable mount (the guard is shown with undo below).
    drop(c);
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    set_world_mt(w, &format!("backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\n", r.port));

    let m = Mounted::new(w, &[]);
    assert!(m.ok("head -c 2000 $MNT/README").len() > 10);
    assert_eq!(m.ok("ls $MNT/blocks | wc -l").trim(), all.len().to_string());
    for (pos, blob) in all.iter().take(20) {
        assert_eq!(&std::fs::read(m.path(&format!("blocks/{pos}/raw"))).unwrap(), blob, "block {pos}");
    }
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    assert!(m.ok("cat $MNT/node/5,3,5").starts_with("default:mese "));
    m.unmount();
    let mut c = client.get_connection().unwrap();
    let blob: Vec<u8> =
        redis::cmd("HGET").arg("mt").arg(BlockPos::new(0, 0, 0).legacy_key().to_string()).query(&mut c).unwrap();
    let b = worldfs_codec::luanti::Block::decode(&blob).unwrap();
    assert!(b.mapping.iter().any(|e| e.name == b"default:mese"));
    // worldfs undo takes it back (the journal beside the world), but not
    // while another client (as a running server would be) is connected.
    let undo = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("undo")
            .arg(w)
            .args(["--last", "1"])
            .output()
            .unwrap()
    };
    let out = undo();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("has other clients (Redis client "), "{err}");
    drop(c);
    let out = undo();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut c = client.get_connection().unwrap();
    let blob: Vec<u8> =
        redis::cmd("HGET").arg("mt").arg(BlockPos::new(0, 0, 0).legacy_key().to_string()).query(&mut c).unwrap();
    assert_eq!(blob, all.iter().find(|(p, _)| *p == BlockPos::new(0, 0, 0)).unwrap().1);
}

/// A PostgreSQL world made from the demo world by our own store, in the
/// engine's int4 table (for the tests that need no server oracle).
fn pg_world(pg: &common::pg::Pg) -> (tempfile::TempDir, Vec<(BlockPos, Vec<u8>)>) {
    use worldfs_store::{Change, Note};
    pg.create_db("mt");
    pg.sql(
        "mt",
        "CREATE TABLE blocks (posX INT NOT NULL, posY INT NOT NULL, posZ INT NOT NULL, data BYTEA, \
         PRIMARY KEY (posX, posY, posZ))",
    );
    let world = common::demo_world();
    let w = world.path();
    let all = SqliteStore::open(&w.join("map.sqlite"), true).unwrap().scan_after(None, 100_000).unwrap();
    let store = worldfs_store::postgres::PgStore::open(&pg.conninfo("mt"), false).unwrap();
    let puts: Vec<Change> = all.iter().map(|(p, b)| Change::Put(*p, b.clone())).collect();
    store.apply(&puts, &Note::new("fill")).unwrap();
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    set_world_mt(w, &format!("backend = postgresql\npgsql_connection = {}\n", pg.conninfo("mt")));
    (world, all)
}

/// What the editing loop of [`edit_while`] did: the numbers of the writes
/// that were acknowledged (`/bin/echo` exited 0: it reports a failed
/// close, which bash's built-in echo does not) and of those that failed,
/// and what the failures said. Write `i` sets node `i % 40`,3,5 to
/// default:mese with param2 `i / 40 % 256`, so each write of a node leaves
/// a value of its own.
struct EditLog {
    acknowledged: Vec<u64>,
    failed: Vec<u64>,
    errors: String,
}

/// Keep writing nodes through the mount while `down` makes the database
/// unreachable and, once a write has failed, `up` brings it back.
fn edit_while(m: &Mounted, down: impl FnOnce(), up: impl FnOnce()) -> EditLog {
    let dir = tempfile::tempdir().unwrap();
    let (stop, fails, ok) = (dir.path().join("stop"), dir.path().join("fails"), dir.path().join("ok"));
    let editor = std::process::Command::new("bash")
        .arg("-c")
        .arg(
            "i=0; while [ ! -e \"$STOP\" ]; do i=$((i+1)); \
               if /bin/echo \"default:mese 0 $(( i / 40 % 256 ))\" 2>>\"$FAILS\" > $MNT/node/$((i % 40)),3,5; \
               then echo $i >> \"$OK\"; else echo $i >> \"$FAILS.list\"; fi; \
             done",
        )
        .env("MNT", m.path(""))
        .env("STOP", &stop)
        .env("FAILS", &fails)
        .env("OK", &ok)
        .spawn()
        .unwrap();
    // If `down` or `up` panics, the loop must not outlive the test (it
    // would write into a removed directory for ever and hide the failure).
    let mut editor = KillOnDrop(Some(editor));
    down();
    let list = dir.path().join("fails.list");
    let waited = std::time::Instant::now();
    while !list.exists() && waited.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    up();
    // Some writes after the database is back, so that they are checked too.
    let acked = || std::fs::read_to_string(&ok).unwrap_or_default().lines().count();
    let before = acked();
    let waited = std::time::Instant::now();
    while acked() < before + 80 && waited.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(&stop, "").unwrap();
    editor.0.take().unwrap().wait().unwrap();
    let numbers = |p: &std::path::Path| -> Vec<u64> {
        std::fs::read_to_string(p).unwrap_or_default().lines().map(|l| l.parse().unwrap()).collect()
    };
    EditLog {
        acknowledged: numbers(&ok),
        failed: numbers(&list),
        errors: std::fs::read_to_string(&fails).unwrap_or_default(),
    }
}

/// Every acknowledged write is in the database: each node holds what its
/// last acknowledged write left, or what a later write that failed left
/// (a write whose commit reached the database just as it went away may
/// report failure), never an older value; and every block still decodes.
fn check_nothing_lost(store: &dyn MapStore, all: &[(BlockPos, Vec<u8>)], log: &EditLog) {
    assert!(log.acknowledged.len() > 80, "too few writes were acknowledged to tell: {}", log.acknowledged.len());
    assert_eq!(store.count().unwrap(), all.len() as u64, "blocks lost or added");
    for (pos, _) in all {
        let blob = store.get(*pos).unwrap().expect("block kept");
        worldfs_codec::luanti::Block::decode(&blob).unwrap_or_else(|e| panic!("block {pos}: {e}"));
    }
    let param2 = |i: u64| (i / 40 % 256) as u8;
    for x in 0..40i32 {
        let of_node = |list: &[u64]| list.iter().copied().filter(|i| i % 40 == x as u64).collect::<Vec<_>>();
        let Some(&last) = of_node(&log.acknowledged).iter().max() else { continue };
        let mut allowed: Vec<u8> = vec![param2(last)];
        allowed.extend(of_node(&log.failed).into_iter().filter(|&i| i > last).map(param2));
        let pos = BlockPos::of_node(x, 3, 5).unwrap();
        let block = worldfs_codec::luanti::Block::decode(&store.get(pos).unwrap().unwrap()).unwrap();
        let (ox, oy, oz) = pos.origin();
        let i = worldfs_codec::luanti::block::node_index((x - ox) as usize, (3 - oy) as usize, (5 - oz) as usize);
        let held = block.param2[i];
        assert!(
            allowed.contains(&held) && block.name_of(block.param0[i]) == Some(&b"default:mese"[..]),
            "node {x},3,5 holds param2 {held}; its last acknowledged write (#{last}) left {} (later failed writes: {:?})",
            param2(last),
            &allowed[1..]
        );
    }
}

/// A child process killed when the test unwinds past it.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `worldfs mount` that is expected to refuse: its exit code and stderr.
fn refused_mount(world: &std::path::Path) -> (Option<i32>, String) {
    let mnt = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("timeout")
        .arg("20")
        .arg(env!("CARGO_BIN_EXE_worldfs"))
        .arg("mount")
        .arg(world)
        .arg(mnt.path())
        .arg("-f")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn two_mounts_of_one_postgresql_world_see_each_other_and_a_running_server_blocks_writing() {
    require_fuse!("two_mounts_of_one_postgresql_world_see_each_other_and_a_running_server_blocks_writing");
    let Some(pg) = common::pg::start_or_skip(
        "two_mounts_of_one_postgresql_world_see_each_other_and_a_running_server_blocks_writing",
    ) else {
        return;
    };
    let (world, _) = pg_world(&pg);
    let w = world.path();
    // Another client (as a Luanti server keeps while it runs): a writable
    // mount is refused with the session named; read-only is fine.
    let server = postgres::Client::connect(&pg.conninfo("mt"), postgres::NoTls).unwrap();
    let (code, err) = refused_mount(w);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has other clients (PostgreSQL session "), "{err}");
    let ro = Mounted::new(w, &["ro"]);
    assert!(ro.ok("cat $MNT/README").contains("postgresql"), "README names the backend");
    drop(ro);
    drop(server);
    // Two mounts (think: two machines): each sees what the other commits
    // (at once with ttl=0: the data version tells them to read again).
    let a = Mounted::new(w, &["ttl=0"]);
    let b = Mounted::new(w, &["ttl=0"]);
    let before = b.ok("cat $MNT/node/5,3,5");
    assert!(!before.starts_with("default:mese "), "{before}");
    a.ok("echo 'default:mese' > $MNT/node/5,3,5");
    assert!(b.ok("cat $MNT/node/5,3,5").starts_with("default:mese "), "b did not see a's write");
    b.ok("echo 'default:wood' > $MNT/node/6,3,6");
    assert!(a.ok("cat $MNT/node/6,3,6").starts_with("default:wood "), "a did not see b's write");
    assert_eq!(a.refusals(), "");
    assert_eq!(b.refusals(), "");
}

#[test]
fn killing_postgresql_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed() {
    require_fuse!("killing_postgresql_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed");
    let Some(pg) =
        common::pg::start_or_skip("killing_postgresql_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed")
    else {
        return;
    };
    let (world, all) = pg_world(&pg);
    let m = Mounted::new(world.path(), &[]);
    let log = edit_while(&m, || pg.stop(), || pg.restart());
    let failed = &log.errors;
    assert!(failed.contains("Input/output error"), "no EIO while the server was down: {failed}");
    let errors = m.ok("cat $MNT/write-errors");
    assert!(errors.contains("unreachable"), "write-errors gives no reason: {errors}\n{failed}\n{}", m.log_text());
    m.unmount();
    let store = worldfs_store::postgres::PgStore::open(&pg.conninfo("mt"), true).unwrap();
    check_nothing_lost(&store, &all, &log);
}

#[test]
fn killing_redis_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed() {
    require_fuse!("killing_redis_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed");
    if let Some(why) = common::redis::unavailable() {
        common::skip("killing_redis_mid_edit_gives_eio_with_a_reason_and_loses_nothing_committed", "redis", &why);
        return;
    }
    use worldfs_store::{Change, Note};
    let mut r = common::redis::Redis::start_with(Some("pw"), true);
    let world = common::demo_world();
    let w = world.path();
    let all = SqliteStore::open(&w.join("map.sqlite"), true).unwrap().scan_after(None, 100_000).unwrap();
    let fill = worldfs_store::redis::RedisStore::open("127.0.0.1", r.port, "mt", Some("pw"), false).unwrap();
    fill.apply(&all.iter().map(|(p, b)| Change::Put(*p, b.clone())).collect::<Vec<_>>(), &Note::new("fill")).unwrap();
    drop(fill);
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    set_world_mt(
        w,
        &format!(
            "backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\nredis_password = pw\n",
            r.port
        ),
    );
    let m = Mounted::new(w, &[]);
    let port = r.port;
    let r2 = std::cell::RefCell::new(&mut r);
    let log = edit_while(&m, || r2.borrow_mut().kill(), || r2.borrow_mut().restart());
    let failed = &log.errors;
    assert!(failed.contains("Input/output error"), "no EIO while the server was down: {failed}");
    let errors = m.ok("cat $MNT/write-errors");
    assert!(errors.contains("unreachable"), "write-errors gives no reason: {errors}");
    m.unmount();
    let store = worldfs_store::redis::RedisStore::open("127.0.0.1", port, "mt", Some("pw"), true).unwrap();
    check_nothing_lost(&store, &all, &log);
}

/// Redis keeps no change counter: a block another client (a running
/// server) adds still shows in `ls blocks` within the TTL (the kernel keeps
/// a listing until the directory's mtime moves, which follows the hash's
/// length here).
#[test]
fn a_block_another_redis_client_adds_shows_in_the_blocks_listing() {
    let test = "a_block_another_redis_client_adds_shows_in_the_blocks_listing";
    require_fuse!(test);
    if let Some(why) = common::redis::unavailable() {
        common::skip(test, "redis", &why);
        return;
    }
    let r = common::redis::Redis::start(None);
    let world = common::demo_world();
    let w = world.path();
    let sqlite = SqliteStore::open(&w.join("map.sqlite"), true).unwrap();
    let all = sqlite.scan_after(None, 100_000).unwrap();
    drop(sqlite);
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", r.port)).unwrap();
    let hset = |pos: BlockPos, blob: &[u8]| {
        let mut c = client.get_connection().unwrap();
        let _: () = redis::cmd("HSET").arg("mt").arg(pos.legacy_key().to_string()).arg(blob).query(&mut c).unwrap();
    };
    for (pos, blob) in &all {
        hset(*pos, blob);
    }
    std::fs::rename(w.join("map.sqlite"), w.join("old-map.sqlite.bak")).unwrap();
    set_world_mt(w, &format!("backend = redis\nredis_address = 127.0.0.1\nredis_port = {}\nredis_hash = mt\n", r.port));
    let m = Mounted::new(w, &["ro", "ttl=1"]);
    let before = m.ok("ls $MNT/blocks");
    assert_eq!(before.lines().count(), all.len());
    assert!(!before.lines().any(|l| l == "5,0,5"), "{before}");
    hset(BlockPos::new(5, 0, 5), &all[0].1);
    let start = std::time::Instant::now();
    while !m.ok("ls $MNT/blocks").lines().any(|l| l == "5,0,5") {
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "5,0,5 not listed after 20 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(m.ok("ls $MNT/blocks").lines().count(), all.len() + 1);
}
