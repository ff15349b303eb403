//! Players and accounts through a live mount (docs/layout.md, "Live
//! mounts"), against the real server (Debian's 5.6.1, headless). No client
//! is installed, and 5.6.1 has no way to put a player in the game without
//! one: the player API path of the mod (a player in the game) cannot run
//! here. What is tested is what the server lets a test reach: an offline
//! player's edit, the hold the mod puts on that player's joins while the
//! mount writes, accounts the server reads again at once, and that the
//! server's clean shutdown keeps all of it.

mod common;

use common::live::{self, LiveServer};
use std::time::Duration;
use worldfs::codec::auth::AuthEntry;
use worldfs::codec::player::Player;
use worldfs::store::Note;
use worldfs::store::records::{Collection, RecordStore};

const INVENTORY: &[u8] = b"List main 4\nWidth 0\nItem default:apple 5\nEmpty\nItem default:torch 20\nEmpty\n\
EndInventoryList\nList craft 9\nWidth 3\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\n\
EndInventoryList\nEndInventory\n";

fn records(world: &std::path::Path, c: Collection) -> Box<dyn RecordStore> {
    worldfs::world::World::open(world).unwrap().open_records(c, false, false).unwrap()
}

/// Player alice (offline: no client) and her account, before the server starts.
fn add_alice(world: &std::path::Path) {
    let alice = Player {
        hp: 20,
        breath: 10,
        pos: [100.0, 85.0, 50.0],
        pitch: 0.0,
        yaw: 90.0,
        meta: Default::default(),
        inventory: INVENTORY.to_vec(),
    };
    records(world, Collection::Players).put("alice", None, Some(&alice.encode()), &Note::default()).unwrap();
    let account =
        AuthEntry { password: String::new(), privileges: vec!["interact".into(), "shout".into()], last_login: 1 };
    records(world, Collection::Auth).put("alice", None, Some(&account.encode()), &Note::default()).unwrap();
}

fn stored_player(world: &std::path::Path, name: &str) -> Player {
    let store = worldfs::world::World::open(world).unwrap().open_records(Collection::Players, true, false).unwrap();
    Player::decode(&store.get(name).unwrap().expect("the player is stored")).unwrap()
}

/// An offline player's inventory, hp and position, and an account's
/// privileges, edited through a live mount: the server sees the privileges
/// at once (it reads the account at every check), and after its clean
/// shutdown the database holds every edit (a running server writes only
/// players in the game, so it did not overwrite them).
#[test]
fn offline_players_and_accounts_change_alongside_a_live_server() {
    require_fuse!("offline_players_and_accounts_change_alongside_a_live_server");
    require_minetestserver!("offline_players_and_accounts_change_alongside_a_live_server");
    let world = common::demo_world();
    add_alice(world.path());
    let (mut server, m) = live::start(world.path(), "");
    assert_eq!(server.ask(&["privs alice".into()], Duration::from_secs(10)), ["privs alice interact,shout"]);

    m.ok("sed -i 's/default:apple 5/default:apple 9/' $MNT/players/alice/inventory");
    m.ok("echo 7 > $MNT/players/alice/hp && echo '-3 12.5 4' > $MNT/players/alice/position");
    m.ok("printf 'live note' > $MNT/players/alice/meta/note");
    assert_eq!(m.refusals(), "");
    assert!(m.ok("cat $MNT/players/alice/inventory").contains("Item default:apple 9\n"));
    assert_eq!(m.ok("cat $MNT/players/alice/hp"), "7\n");
    // The hold on alice's joins ends once the mount wrote.
    assert_eq!(server.ask(&["prejoin alice".into()], Duration::from_secs(10)), ["prejoin alice ok"]);

    m.ok("echo fly >> $MNT/auth/alice/privileges");
    assert_eq!(
        server.ask(&["privs alice".into()], Duration::from_secs(10)),
        ["privs alice fly,interact,shout"],
        "the server reads the account again"
    );
    m.ok("sed -i '/^shout$/d' $MNT/auth/alice/privileges");
    assert_eq!(server.ask(&["privs alice".into()], Duration::from_secs(10)), ["privs alice fly,interact"]);

    // Mod storage is read by the server once: refused, with the reason.
    let (code, _, err) = m.sh("mkdir -p $MNT/mod_storage/x && echo v | tee $MNT/mod_storage/x/k >/dev/null");
    assert_ne!(code, 0, "mod storage cannot change live: {err}");
    assert!(m.refusals().contains("read mod storage when the mods loaded"), "{}", m.refusals());
    m.unmount();

    // Wait past a map save (5.3 s), where the server saves the players it has.
    std::thread::sleep(Duration::from_secs(6));
    assert!(server.stop().success());
    let alice = stored_player(world.path(), "alice");
    assert_eq!((alice.hp, alice.pos), (7, [-30.0, 125.0, 40.0]));
    let inv = String::from_utf8(alice.inventory.clone()).unwrap();
    assert!(inv.contains("Item default:apple 9\n") && inv.contains("Item default:torch 20\n"), "{inv}");
    assert_eq!(alice.meta.get(&b"note"[..]).map(Vec::as_slice), Some(&b"live note"[..]));
    let store = worldfs::world::World::open(world.path()).unwrap().open_records(Collection::Auth, true, false).unwrap();
    let account = AuthEntry::decode(&store.get("alice").unwrap().unwrap()).unwrap();
    let mut privs = account.privileges.clone();
    privs.sort();
    assert_eq!(privs, ["fly", "interact"]);
}

/// The mod's side of a player change, asked directly: a player not in the
/// game is answered "offline" and the player's joins are refused until
/// the mount says it wrote ("release") or 10 s pass; a player whose join
/// has begun (prejoin passed, not in the game yet) is refused as stale.
#[test]
fn a_player_change_holds_that_players_joins_until_released() {
    require_fuse!("a_player_change_holds_that_players_joins_until_released");
    require_minetestserver!("a_player_change_holds_that_players_joins_until_released");
    use worldfs::store::live::{request, spool::Spool};
    let world = common::demo_world();
    add_alice(world.path());
    let server = LiveServer::start(world.path(), "", true);
    let spool = Spool::new(world.path());
    let alice = stored_player(world.path(), "alice");
    let mut hurt = alice.clone();
    hurt.hp = 3;
    let change = request::player_change("alice", Some(&alice), Some(&hurt)).unwrap();
    assert_eq!(spool.ask(&change).unwrap(), "offline");
    let said = server.ask(&["prejoin alice".into(), "prejoin bob".into()], Duration::from_secs(10));
    assert!(said[0].starts_with("prejoin alice refused ") && said[0].contains("join again"), "{said:?}");
    assert_eq!(said[1], "prejoin bob ok", "only that player is held");
    assert_eq!(spool.ask(&request::player_release("alice")).unwrap(), "ok");
    assert_eq!(server.ask(&["prejoin alice".into()], Duration::from_secs(10)), ["prejoin alice ok"]);
    // Bob's join began above (his prejoin passed) and he is not in the game yet.
    let bob = request::player_change("bob", Some(&alice), Some(&hurt)).unwrap();
    let e = spool.ask(&bob).unwrap_err().to_string();
    assert!(e.contains("player bob is joining the game right now"), "{e}");
    // The hold ends by itself.
    let carol = request::player_change("carol", Some(&alice), Some(&hurt)).unwrap();
    assert_eq!(spool.ask(&carol).unwrap(), "offline");
    assert!(server.ask(&["prejoin carol".into()], Duration::from_secs(10))[0].contains(" refused "));
    std::thread::sleep(Duration::from_secs(11));
    assert_eq!(server.ask(&["prejoin carol".into()], Duration::from_secs(10)), ["prejoin carol ok"]);
}
