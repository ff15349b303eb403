//! Live mounts: a writable mount of a world whose running server runs the
//! worldfs_live mod hands every change to the server (docs/layout.md,
//! "Live mounts"). The real server (Debian's 5.6.1, headless) is the
//! oracle: a probe mod answers what the game has right after close()
//! returns, and the map database has it after the server's clean shutdown.
//! One server process per test; it never restarts.

mod common;

use common::live::{LiveServer, worldfs};
use common::mount::Mounted;
use std::time::Duration;
use worldfs::codec::Block;
use worldfs::store::sqlite::SqliteStore;
use worldfs::store::{BlockPos, MapStore};

const CHEST: [i32; 3] = worldfs::demo::CHEST;
const SIGN: [i32; 3] = worldfs::demo::SIGN;

fn stored_block(world: &std::path::Path, pos: BlockPos) -> Option<Block> {
    let store = SqliteStore::open(&world.join("map.sqlite"), true).unwrap();
    store.get(pos).unwrap().map(|b| Block::decode(&b).unwrap())
}

fn stored_name(b: &Block, [x, y, z]: [i32; 3]) -> String {
    let i = worldfs::codec::block::node_index(
        x.rem_euclid(16) as usize,
        y.rem_euclid(16) as usize,
        z.rem_euclid(16) as usize,
    );
    String::from_utf8_lossy(b.name_of(b.param0[i]).unwrap()).into_owned()
}

/// Each kind of edit through a live mount is in the game when close()
/// returns, reads back through the mount at once, and is in the database
/// after the server's clean shutdown.
#[test]
fn edits_through_a_live_mount_are_in_the_game_at_close() {
    require_fuse!("edits_through_a_live_mount_are_in_the_game_at_close");
    require_minetestserver!("edits_through_a_live_mount_are_in_the_game_at_close");
    let world = common::demo_world();
    let mut server = LiveServer::start(world.path(), "", true);
    let m = Mounted::new(world.path(), &[]);
    assert!(m.log_text().contains("changes go through the server"), "{}", m.log_text());

    // node/
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    assert!(server.node([5, 3, 5]).starts_with("default:mese "), "{}", server.node([5, 3, 5]));
    assert_eq!(m.ok("cat $MNT/node/5,3,5").split(' ').next().unwrap(), "default:mese");
    // sed -i on a block's names: every cobble of the walls.
    m.ok("sed -i 's/ default:cobble$/ default:stonebrick/' $MNT/blocks/0,0,0/names");
    assert!(server.node([2, 1, 1]).starts_with("default:stonebrick "), "{}", server.node([2, 1, 1]));
    assert!(server.node([9, 4, 4]).starts_with("default:stonebrick "));
    // An inventory, edited with vim when there is one.
    let chest = "blocks/0,0,0/meta/3,1,3";
    if common::mount::which("vim").is_some() {
        m.ok(&format!("cd $MNT/{chest} && vim -es -c '%s/apple 12/apple 13/' -c wq inventory"));
    } else {
        m.ok(&format!("sed -i 's/apple 12/apple 13/' $MNT/{chest}/inventory"));
    }
    let items = server.meta(CHEST);
    assert!(items.contains(&"item 3 1 3 main 1 default:apple 13".to_string()), "{items:?}");
    assert!(items.contains(&"item 3 1 3 main 3 default:torch 20".to_string()), "{items:?}");
    // A metadata field.
    m.ok("printf 'Hello live' > $MNT/blocks/0,0,0/meta/3,2,8/fields/text");
    assert!(server.meta(SIGN).contains(&"field 3 2 8 text Hello live".to_string()), "{:?}", server.meta(SIGN));
    // A node timer.
    m.ok("echo '5 3 5 300 1.5' >> $MNT/blocks/0,0,0/timers");
    let timer = server.ask(&["timer 5 3 5".into()], Duration::from_secs(10));
    assert!(timer[0].starts_with("timer 5 3 5 300 "), "{timer:?}");
    // rmdir of a block.
    assert!(server.node([-10, -10, -10]).starts_with("default:stone "));
    m.ok("rmdir $MNT/blocks/-1,-1,-1");
    let peek = server.ask(&["peek -10 -10 -10".into()], Duration::from_secs(10));
    assert_eq!(peek, ["peek -10 -10 -10 none"], "the deleted block is gone from the game");
    assert!(!m.ok("ls $MNT/blocks").lines().any(|l| l == "-1,-1,-1"));
    assert_eq!(m.refusals(), "");
    // A change made in the game shows through the mount within the map
    // save interval (5.3 s) plus the TTL (1 s); a little more for a loaded machine.
    assert_eq!(server.ask(&["set 8 3 5 default:dirt".into()], Duration::from_secs(10)), ["set 8 3 5"]);
    let start = std::time::Instant::now();
    while !m.ok("cat $MNT/node/8,3,5").starts_with("default:dirt ") {
        assert!(start.elapsed() < Duration::from_millis(5300 + 1000 + 3000), "the in-game change does not show");
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("an in-game change showed through the live mount after {:?}", start.elapsed());
    m.unmount();

    let status = server.stop();
    assert!(status.success(), "server exit {status}");
    let b = stored_block(world.path(), BlockPos::new(0, 0, 0)).unwrap();
    assert_eq!(stored_name(&b, [5, 3, 5]), "default:mese");
    assert_eq!(stored_name(&b, [2, 1, 1]), "default:stonebrick");
    let inv = &b.metadata.get(worldfs::codec::block::node_index(3, 1, 3) as u16).unwrap().inventory;
    assert!(String::from_utf8_lossy(inv).contains("Item default:apple 13\n"), "{}", String::from_utf8_lossy(inv));
    let sign = b.metadata.get(worldfs::codec::block::node_index(3, 2, 8) as u16).unwrap();
    assert_eq!(sign.get(b"text").unwrap().value, b"Hello live");
    assert!(
        b.timers.iter().any(|t| t.pos == worldfs::codec::block::node_index(5, 3, 5) as u16 && t.timeout == 300_000)
    );
    assert!(stored_block(world.path(), BlockPos::new(-1, -1, -1)).is_none(), "the deleted block stays deleted");
}

/// A change made in the game between the mount's read and its write is
/// not overwritten: ESTALE, the reason in write-errors, the game keeps its
/// change. A stopped server gives a clear error at close.
#[test]
fn an_in_game_change_since_the_read_gives_estale_and_a_stopped_server_an_error() {
    require_fuse!("an_in_game_change_since_the_read_gives_estale_and_a_stopped_server_an_error");
    require_minetestserver!("an_in_game_change_since_the_read_gives_estale_and_a_stopped_server_an_error");
    let world = common::demo_world();
    // No save while the test runs: the database keeps showing the old node.
    let mut server = LiveServer::start(world.path(), "server_map_save_interval = 600", true);
    let m = Mounted::new(world.path(), &[]);
    assert!(m.ok("cat $MNT/node/6,3,5").starts_with("air "));
    let set = server.ask(&["set 6 3 5 default:dirt".into()], Duration::from_secs(10));
    assert_eq!(set, ["set 6 3 5"]);
    let (code, _, err) = m.sh("echo 'default:mese' | tee $MNT/node/6,3,5 >/dev/null");
    assert_ne!(code, 0, "the write is refused");
    assert!(err.contains("Stale file handle"), "{err}");
    let refusals = m.refusals();
    assert!(refusals.contains("node 6,3,5 is now default:dirt"), "{refusals}");
    assert!(server.node([6, 3, 5]).starts_with("default:dirt "), "the game keeps its change");
    // What the server cannot be given is refused with the reason (EINVAL),
    // and the game is unchanged.
    let (code, _, err) = m.sh("echo 'nosuch:node' | tee $MNT/node/7,3,5 >/dev/null");
    assert!(code != 0 && err.contains("Invalid argument"), "{err}");
    assert!(m.refusals().contains("'nosuch:node' is not a registered node on this server"), "{}", m.refusals());
    let (code, _, err) = m.sh("sed -i 's/^timestamp = .*/timestamp = 0/' $MNT/blocks/0,0,0/info");
    assert!(code != 0 && err.contains("Invalid argument"), "{err}");
    assert!(m.refusals().contains("its timestamp (info) cannot be changed while the server runs"), "{}", m.refusals());
    assert!(server.node([7, 3, 5]).starts_with("air "));

    let status = server.stop();
    assert!(status.success(), "server exit {status}");
    let (code, _, err) = m.sh("echo 'default:mese' | tee $MNT/node/7,3,5 >/dev/null");
    assert_ne!(code, 0, "a stopped server takes no change");
    assert!(err.contains("Input/output error"), "{err}");
    assert!(m.refusals().contains("the server has shut down; nothing written"), "{}", m.refusals());
    m.unmount();
    let b = stored_block(world.path(), BlockPos::new(0, 0, 0)).unwrap();
    assert_eq!(stored_name(&b, [6, 3, 5]), "default:dirt");
    assert_eq!(stored_name(&b, [7, 3, 5]), "air");
}

/// A server that does not run the mod: the writable mount is refused as
/// before, and the message says how to install the mod.
#[test]
fn without_the_mod_the_mount_is_refused_and_says_how_to_install_it() {
    require_fuse!("without_the_mod_the_mount_is_refused_and_says_how_to_install_it");
    require_minetestserver!("without_the_mod_the_mount_is_refused_and_says_how_to_install_it");
    let world = common::demo_world();
    let _server = LiveServer::start(world.path(), "", false);
    let mnt = tempfile::tempdir().unwrap();
    let (code, _, err) = worldfs(&["mount".as_ref(), world.path().as_os_str(), mnt.path().as_os_str(), "-f".as_ref()]);
    assert_ne!(code, 0);
    assert!(err.contains("is open in pid") && err.contains("does not run the worldfs_live mod"), "{err}");
    assert!(err.contains(&format!("worldfs live install {}", world.path().display())), "{err}");
}

/// SIGKILL of the daemon leaves the server running and its world intact:
/// what the mount applied stays, the spool holds nothing, and the server
/// saves and stops cleanly.
#[test]
fn sigkill_of_the_daemon_leaves_the_server_running() {
    require_fuse!("sigkill_of_the_daemon_leaves_the_server_running");
    require_minetestserver!("sigkill_of_the_daemon_leaves_the_server_running");
    let world = common::demo_world();
    let mut server = LiveServer::start(world.path(), "", true);
    let m = Mounted::new(world.path(), &[]);
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    m.kill9();
    assert!(server.node([5, 3, 5]).starts_with("default:mese "), "the server runs on with the change");
    let spool = std::fs::read_dir(world.path().join("worldfs-live/requests")).unwrap().count();
    assert_eq!(spool, 0, "no request left behind");
    let status = server.stop();
    assert!(status.success(), "server exit {status}");
    let b = stored_block(world.path(), BlockPos::new(0, 0, 0)).unwrap();
    assert_eq!(stored_name(&b, [5, 3, 5]), "default:mese");
}
