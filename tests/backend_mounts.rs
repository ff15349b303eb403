//! PostgreSQL and Redis worlds mounted and edited through the mount, with
//! the real server as the oracle where it can be: the Debian 5.6.1 server
//! migrates a world into PostgreSQL (its own writer), worldfs edits it, and
//! the server running on the PostgreSQL world reads our edits back. The
//! Debian server is built without Redis, so a Redis world is filled by the
//! test (HSET of every block of a sqlite world, the engine's layout) and
//! checked block for block against the sqlite world it came from.

mod common;

use common::mount::Mounted;
use common::server::server_dump;
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, MapStore};

fn set_world_mt(world: &std::path::Path, extra: &str) {
    let mt = std::fs::read_to_string(world.join("world.mt")).unwrap();
    std::fs::write(world.join("world.mt"), format!("{mt}{extra}")).unwrap();
}

#[test]
fn a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it() {
    require_fuse!("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it");
    require_minetestserver!("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it");
    if let Some(why) = common::pg::unavailable() {
        common::skip("a_postgresql_world_is_edited_through_the_mount_and_the_server_sees_it", "pg", &why);
        return;
    }
    let pg = common::pg::Pg::start();
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
            let b = worldfs::codec::Block::decode(blob).unwrap();
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
    let b = worldfs::codec::Block::decode(&blob).unwrap();
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
