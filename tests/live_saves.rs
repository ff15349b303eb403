//! More saves, not bigger ones (issue 42): the worldfs_live mod shortens
//! the server's map save interval for the run when
//! `worldfs_live.map_save_interval` asks for it (the 5.6.1 server reads
//! `server_map_save_interval` once, at its first step, after the mods
//! load: docs/design.md, "Live mounts: more saves"), and the admin's
//! minetest.conf is left as it was. The real server is the oracle: its map
//! database shows when a save happened.

use crate::common;

use common::live::{self, stored_node};
use std::time::{Duration, Instant};

/// How long until node `p` of `world`'s map database is `name`, at most `within`.
fn saved_after(world: &std::path::Path, p: [i32; 3], name: &str, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if stored_node(world, p) == name {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// The lines of the server's config file that set `key`.
fn conf_lines(world: &std::path::Path, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(world.join("worldfs_live_test.conf")).unwrap();
    text.lines().filter(|l| l.split('=').next().map(str::trim) == Some(key)).map(String::from).collect()
}

/// With server_map_save_interval = 600 and worldfs_live.map_save_interval
/// = 1, a change through the mount is in the map database within a few
/// seconds (not ten minutes), and again for a second change (every second,
/// not once); after the server's clean shutdown (which writes its settings
/// back to the config file) the file still says 600.
#[test]
fn the_mod_shortens_the_map_save_interval_and_the_config_keeps_the_admins() {
    require_fuse!("the_mod_shortens_the_map_save_interval_and_the_config_keeps_the_admins");
    require_minetestserver!("the_mod_shortens_the_map_save_interval_and_the_config_keeps_the_admins");
    let (world, mut server, m) = live::demo("server_map_save_interval = 600\nworldfs_live.map_save_interval = 1");
    assert_ne!(stored_node(world.path(), [5, 3, 5]), "default:mese");
    for (p, name) in [([5, 3, 5], "default:mese"), ([6, 3, 5], "default:goldblock")] {
        m.ok(&format!("echo '{name}' > $MNT/node/{},{},{}", p[0], p[1], p[2]));
        let took = saved_after(world.path(), p, name, Duration::from_secs(8));
        assert!(took.is_some(), "{p:?} not saved within 8 s: the server kept its 600 s interval");
        eprintln!("{name} at {p:?} was in the map database {took:?} after close()");
    }
    m.unmount();
    assert!(server.stop().success());
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(
        log.contains("[worldfs_live] the map is saved every 1 s in this run"),
        "{}",
        common::server::tail(&server.log, 30)
    );
    assert_eq!(conf_lines(world.path(), "server_map_save_interval"), ["server_map_save_interval = 600"]);
}

/// A server_map_save_interval the admin did not set stays unset in the
/// config file after the clean shutdown (the engine's default, not a value
/// written in); one the mod would lengthen is left alone.
#[test]
fn an_unset_save_interval_stays_unset_and_a_shorter_one_is_kept() {
    require_fuse!("an_unset_save_interval_stays_unset_and_a_shorter_one_is_kept");
    require_minetestserver!("an_unset_save_interval_stays_unset_and_a_shorter_one_is_kept");
    let world = common::demo_world();
    let log = started_and_stopped(world.path(), "worldfs_live.map_save_interval = 1");
    assert_eq!(conf_lines(world.path(), "server_map_save_interval"), Vec::<String>::new());
    assert!(log.contains("the map is saved every 1 s in this run"), "{log}");
    let log = started_and_stopped(world.path(), "server_map_save_interval = 0.5\nworldfs_live.map_save_interval = 2");
    assert!(!log.contains("the map is saved every 2 s"), "a longer interval is never set: {log}");
    assert_eq!(conf_lines(world.path(), "server_map_save_interval"), ["server_map_save_interval = 0.5"]);
}

/// The log of a server run on `world` with `conf` that started and
/// stopped cleanly.
fn started_and_stopped(world: &std::path::Path, conf: &str) -> String {
    let mut server = live::LiveServer::start(world, conf, true);
    assert!(server.stop().success());
    std::fs::read_to_string(&server.log).unwrap()
}

/// The server's steps a second, as the probe mod counts its globalsteps
/// on the server's clock over about three seconds.
fn steps_per_second(server: &live::LiveServer) -> f64 {
    let count = || {
        let got = server.ask(&["steps".into()], Duration::from_secs(10));
        let w: Vec<f64> = got[0].split(' ').skip(1).map(|v| v.parse().unwrap()).collect();
        (w[0], w[1])
    };
    let (n0, t0) = count();
    std::thread::sleep(Duration::from_secs(3));
    let (n1, t1) = count();
    (n1 - n0) / ((t1 - t0) / 1e6)
}

/// With dedicated_server_step = 0.09 and worldfs_live.server_step = 0.04,
/// the server steps over 1.6 times as often as with the first alone (2.25
/// times at best), its log says so, and after its clean shutdown the
/// config file still says 0.09.
#[test]
fn the_mod_shortens_the_server_step_and_the_config_keeps_the_admins() {
    require_minetestserver!("the_mod_shortens_the_server_step_and_the_config_keeps_the_admins");
    let world = common::demo_world();
    let mut server = live::LiveServer::start(world.path(), "dedicated_server_step = 0.09", true);
    let admins = steps_per_second(&server);
    assert!(server.stop().success());
    let conf = "dedicated_server_step = 0.09\nworldfs_live.server_step = 0.04";
    let mut server = live::LiveServer::start(world.path(), conf, true);
    let shorter = steps_per_second(&server);
    assert!(server.stop().success());
    eprintln!("steps a second: {admins:.1} with a 0.09 s step, {shorter:.1} with worldfs_live.server_step = 0.04");
    assert!(shorter > 1.6 * admins, "{shorter:.1} steps/s is not 1.6 times {admins:.1}");
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(
        log.contains("[worldfs_live] the server steps every 0.04 s in this run"),
        "{}",
        common::server::tail(&server.log, 30)
    );
    assert_eq!(conf_lines(world.path(), "dedicated_server_step"), ["dedicated_server_step = 0.09"]);
}

/// A dedicated_server_step the admin did not set stays unset after the
/// clean shutdown; a server_step below 0.04 is raised to 0.04 with a
/// warning in the server's log.
#[test]
fn an_unset_server_step_stays_unset_and_a_too_short_one_is_raised() {
    require_minetestserver!("an_unset_server_step_stays_unset_and_a_too_short_one_is_raised");
    let world = common::demo_world();
    let log = started_and_stopped(world.path(), "worldfs_live.server_step = 0.01");
    assert!(log.contains("worldfs_live.server_step = 0.01 is below 0.04 s"), "{log}");
    assert!(log.contains("the server steps every 0.04 s in this run"), "{log}");
    assert_eq!(conf_lines(world.path(), "dedicated_server_step"), Vec::<String>::new());
}
