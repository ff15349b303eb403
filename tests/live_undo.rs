//! `worldfs undo` on a running server (docs/layout.md, "Live mounts"):
//! what a live mount changed is journaled as the server applied it, and
//! undo sends the inverse through the mod, which refuses it where the game
//! changed a node since. Against the real server (Debian's 5.6.1).

use crate::common;

use common::live::{self, LiveServer, worldfs};
use std::time::Duration;

fn undo(world: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["undo".as_ref(), world.as_os_str()];
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    worldfs(&all)
}

/// Live changes (a node, an inventory, a world-wide rename) are undone
/// through the running server, newest first; an undo whose nodes the game
/// changed since is refused as a conflict and changes nothing; the undo
/// itself can be undone; after the server's clean shutdown the database
/// holds the result.
#[test]
fn undo_of_live_changes_goes_through_the_server() {
    require_fuse!("undo_of_live_changes_goes_through_the_server");
    require_minetestserver!("undo_of_live_changes_goes_through_the_server");
    let (world, mut server, m) = live::demo("");
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    m.ok("sed -i 's/apple 12/apple 13/' $MNT/blocks/0,0,0/meta/3,1,3/inventory");
    m.ok("mv $MNT/find/default:stone $MNT/find/default:desert_stone");
    assert!(server.node([-10, -10, -10]).starts_with("default:desert_stone "));
    let listing = undo(world.path(), &[]).1;
    assert!(listing.contains("find/default:stone"), "{listing}");

    // The rename back, through the server.
    let (code, out, err) = undo(world.path(), &["--last", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("through the running server"), "{out}");
    assert!(server.node([-10, -10, -10]).starts_with("default:stone "), "{}", server.node([-10, -10, -10]));
    assert!(server.node([5, 3, 5]).starts_with("default:mese "), "older changes stay");

    // The game changes the node of the next change: its undo is refused.
    assert_eq!(server.ask(&["set 5 3 5 default:dirt".into()], Duration::from_secs(10)), ["set 5 3 5"]);
    let (code, out, err) = undo(world.path(), &["--last", "2"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("node 5,3,5 is now default:dirt"), "{err}");
    assert!(server.node([5, 3, 5]).starts_with("default:dirt "), "the game keeps its change");
    let items = server.meta(worldfs::worlds::luanti::demo::CHEST);
    assert!(items.contains(&"item 3 1 3 main 1 default:apple 13".to_string()), "nothing reverted: {items:?}");

    // The inventory alone goes back; then its undo is undone.
    let id = undo(world.path(), &[])
        .1
        .lines()
        .find(|l| l.contains("meta/3,1,3/inventory"))
        .and_then(|l| l.trim_start().trim_start_matches('#').split_whitespace().next().map(String::from))
        .expect("the inventory change is listed");
    let (code, out, err) = undo(world.path(), &["--id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let items = server.meta(worldfs::worlds::luanti::demo::CHEST);
    assert!(items.contains(&"item 3 1 3 main 1 default:apple 12".to_string()), "{items:?}");
    let newest =
        undo(world.path(), &[]).1.lines().nth(1).and_then(|l| l.split_whitespace().next()).unwrap().to_string();
    let (code, out, err) = undo(world.path(), &["--id", newest.trim_start_matches('#')]);
    assert_eq!(code, 0, "the undo is undone: {out}{err}");
    let items = server.meta(worldfs::worlds::luanti::demo::CHEST);
    assert!(items.contains(&"item 3 1 3 main 1 default:apple 13".to_string()), "{items:?}");
    m.unmount();
    assert!(server.stop().success());
    let store = worldfs_store::sqlite::SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
    use worldfs_store::MapStore;
    let b =
        worldfs_codec::luanti::Block::decode(&store.get(worldfs_store::BlockPos::new(-1, -1, -1)).unwrap().unwrap())
            .unwrap();
    let names: Vec<&[u8]> = b.mapping.iter().map(|m| m.name.as_slice()).collect();
    assert!(names.contains(&&b"default:stone"[..]) && !names.contains(&&b"default:desert_stone"[..]), "{names:?}");
}

/// `worldfs import` on a running server goes through the mod, as a live
/// mount's change: in the game at once, journaled, undone through the
/// server, and in the database after the server's clean shutdown; a file
/// that reaches blocks the map does not have is refused (the server makes
/// new blocks) and nothing changes.
#[test]
fn import_goes_through_a_running_server() {
    require_fuse!("import_goes_through_a_running_server");
    require_minetestserver!("import_goes_through_a_running_server");
    let world = common::demo_world();
    let dir = tempfile::tempdir().unwrap();
    let we = dir.path().join("wall.we");
    let arg = |p: &std::path::Path| p.as_os_str().to_owned();
    let (code, out, err) =
        worldfs(&["export".as_ref(), &arg(world.path()), "2,1,1".as_ref(), "2,2,1".as_ref(), &arg(&we)]);
    assert_eq!(code, 0, "{out}{err}");
    let mut server = LiveServer::start(world.path(), "", true);
    assert!(server.node([7, 7, 7]).starts_with("air "));
    let (code, out, err) = worldfs(&["import".as_ref(), &arg(world.path()), &arg(&we), "7,7,7".as_ref()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(server.node([7, 7, 7]).starts_with("default:cobble "), "{}", server.node([7, 7, 7]));
    assert!(server.node([7, 8, 7]).starts_with("default:cobble "), "{}", server.node([7, 8, 7]));
    let (code, out, err) = undo(world.path(), &["--last", "1"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(server.node([7, 7, 7]).starts_with("air "), "undone through the server");
    let (code, out, err) = worldfs(&["import".as_ref(), &arg(world.path()), &arg(&we), "500,500,500".as_ref()]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("new blocks cannot be made while the server runs"), "{err}");
    assert!(server.ask(&["peek 500 500 500".into()], Duration::from_secs(10))[0].ends_with(" none"));
    // Imported again, it is in the database after the server's clean shutdown.
    let (code, out, err) = worldfs(&["import".as_ref(), &arg(world.path()), &arg(&we), "7,7,7".as_ref()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(server.stop().success());
    for p in [[7, 7, 7], [7, 8, 7]] {
        assert_eq!(common::live::stored_node(world.path(), p), "default:cobble", "node {p:?} in the database");
    }
}

/// The id of the newest change whose listing line contains `what`.
fn change_id(world: &std::path::Path, what: &str) -> String {
    undo(world, &[])
        .1
        .lines()
        .find(|l| l.contains(what))
        .and_then(|l| l.trim_start().trim_start_matches('#').split_whitespace().next().map(String::from))
        .unwrap_or_else(|| panic!("no change of {what} listed: {}", undo(world, &[]).1))
}

/// After the server's clean shutdown, `worldfs undo` (the server stopped:
/// undo writes the map itself) takes a block the server saved with a live
/// change, in its own serialization, as that change: the old content comes
/// back and no conflict is reported. A block the game changed after the
/// live change is still a conflict, and that undo changes nothing.
#[test]
fn undo_after_the_server_stopped_takes_what_it_applied_as_ours() {
    require_fuse!("undo_after_the_server_stopped_takes_what_it_applied_as_ours");
    require_minetestserver!("undo_after_the_server_stopped_takes_what_it_applied_as_ours");
    let (world, mut server, m) = live::demo("");
    let w = world.path();
    let (was_a, was_b) = (live::stored_node(w, [5, 3, 5]), live::stored_node(w, [-10, -10, -10]));
    assert_ne!(was_a, "default:mese");
    m.ok("echo 'default:mese' > $MNT/node/5,3,5");
    m.ok("echo 'default:mese' > $MNT/node/-10,-10,-10");
    // The game changes a node of the second block after the live change.
    assert_eq!(server.ask(&["set -11 -10 -10 default:dirt".into()], Duration::from_secs(10)), ["set -11 -10 -10"]);
    m.unmount();
    assert!(server.stop().success());
    assert_eq!(live::stored_node(w, [5, 3, 5]), "default:mese", "the server saved the change");
    assert_eq!(worldfs_store::live::server_state(w), worldfs_store::live::ServerState::Stopped);

    let (code, out, err) = undo(w, &["--last", "1"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("conflict: block -1,-1,-1") && err.contains("changed outside worldfs"), "{err}");
    assert_eq!(live::stored_node(w, [-10, -10, -10]), "default:mese", "nothing reverted");
    assert_eq!(live::stored_node(w, [-11, -10, -10]), "default:dirt");

    let (code, out, err) = undo(w, &["--id", &change_id(w, "5,3,5")]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("conflict"), "{err}");
    assert_eq!(live::stored_node(w, [5, 3, 5]), was_a, "the old content is back");
    assert_eq!(live::stored_node(w, [-10, -10, -10]), "default:mese", "the other change stays");
    assert_ne!(was_b, "default:mese");
}
