//! Players and accounts through a live mount (docs/layout.md, "Live
//! mounts"), against the real server (Debian's 5.6.1, headless): an
//! offline player's edit, the hold the mod puts on that player's joins
//! while the mount writes, accounts the server reads again at once, a
//! player in the game (Debian's 5.6.1 client under xvfb-run) changed
//! through the mod's player API, and that the server's clean shutdown
//! keeps all of it.

use crate::common;

use common::live::{self, Client, LiveServer};
use std::time::Duration;
use worldfs_codec::luanti::auth::AuthEntry;
use worldfs_codec::luanti::player::Player;
use worldfs_store::Note;
use worldfs_store::records::{Collection, RecordStore};

const INVENTORY: &[u8] = b"List main 4\nWidth 0\nItem default:apple 5\nEmpty\nItem default:torch 20\nEmpty\n\
EndInventoryList\nList craft 9\nWidth 3\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\n\
EndInventoryList\nEndInventory\n";

fn records(world: &std::path::Path, c: Collection) -> Box<dyn RecordStore> {
    worldfs_store::world::World::open(world).unwrap().open_records(c, false, false).unwrap()
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
    let store =
        worldfs_store::world::World::open(world).unwrap().open_records(Collection::Players, true, false).unwrap();
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

    // Wait past a map save (5.3 s), where the server saves the players it
    // has: a sleep, not a poll, since what is checked is that the save does
    // NOT change alice (nothing to poll for).
    std::thread::sleep(Duration::from_secs(6));
    assert!(server.stop().success());
    let alice = stored_player(world.path(), "alice");
    assert_eq!((alice.hp, alice.pos), (7, [-30.0, 125.0, 40.0]));
    let inv = String::from_utf8(alice.inventory.clone()).unwrap();
    assert!(inv.contains("Item default:apple 9\n") && inv.contains("Item default:torch 20\n"), "{inv}");
    assert_eq!(alice.meta.get(&b"note"[..]).map(Vec::as_slice), Some(&b"live note"[..]));
    let store =
        worldfs_store::world::World::open(world.path()).unwrap().open_records(Collection::Auth, true, false).unwrap();
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
    use worldfs_store::live::{request, spool::Spool};
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

/// The probe's "player NAME ..." answer: (hp, position in nodes), None
/// when the player is not in the game, and the items it holds ("LIST
/// INDEX ITEM").
fn in_game(server: &LiveServer, name: &str) -> (Option<(u32, [f64; 3])>, Vec<String>) {
    let said = server.ask(&[format!("player {name}")], Duration::from_secs(10));
    let w: Vec<&str> = said[0].split(' ').collect();
    let items = said[1..].iter().map(|l| l.splitn(3, ' ').nth(2).unwrap_or_default().to_string()).collect();
    if w[2] == "offline" {
        return (None, items);
    }
    let f = |i: usize| w[i].parse::<f64>().unwrap();
    (Some((w[2].parse().unwrap(), [f(3), f(4), f(5)])), items)
}

/// Waits until `what` holds for what the game shows of `name` (a change
/// through the mod is applied in one server step; the client's own moves
/// come on top), panicking with the last answer after 30 s.
fn wait_in_game(server: &LiveServer, name: &str, what: impl Fn(Option<(u32, [f64; 3])>, &[String]) -> bool) {
    let start = std::time::Instant::now();
    loop {
        let (player, items) = in_game(server, name);
        if what(player, &items) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the game shows {player:?} {items:?}\n{}",
            common::server::tail(&server.log, 30)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A player in the game (a real client joined) edited through a live
/// mount as a user does: the inventory in vim, hp and position with echo,
/// a privilege appended to the account. The game shows each change while
/// the player plays (the mod applies it through the player API: the
/// server would otherwise save its own copy over the database), and after
/// the player quits and the server stops cleanly, the database holds them.
#[test]
fn an_online_players_inventory_hp_position_and_privileges_change_in_the_game() {
    require_fuse!("an_online_players_inventory_hp_position_and_privileges_change_in_the_game");
    require_minetestserver!("an_online_players_inventory_hp_position_and_privileges_change_in_the_game");
    require_client!("an_online_players_inventory_hp_position_and_privileges_change_in_the_game");
    if common::mount::which("vim").is_none() {
        common::skip("an_online_players_inventory_hp_position_and_privileges_change_in_the_game", "vim", "no vim");
        return;
    }
    let world = common::demo_world();
    // Damage on: with it off players are immortal and the game ignores a
    // lower hp. Bob arrives on the grass outside the demo house.
    let mt = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    std::fs::write(world.path().join("world.mt"), mt.replace("enable_damage = false", "enable_damage = true")).unwrap();
    let (mut server, m) =
        live::start(world.path(), "server_map_save_interval = 1\nstatic_spawnpoint = 20,1,20\nenable_damage = true");
    let mut client = Client::join(&server, "bob", "bobs secret");
    let start = std::time::Instant::now();
    // Joined, landed (the spawn point is half a node above the grass) and
    // saved (every second here), so the mount reads what the game has.
    while in_game(&server, "bob").0.is_none_or(|(_, p)| (p[1] - 0.5).abs() > 0.01) {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "bob did not join\n{}",
            common::server::tail(&client.log, 40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Until the server's save wrote bob (before it, players/bob does not exist).
    common::wait_until("the mount shows where bob landed", || {
        let (code, out, _) = m.sh("cat $MNT/players/bob/position");
        code == 0 && out.starts_with("20 0.5 20")
    });

    m.ok("vim -es -c '/^List main/+2s/^Empty$/Item default:apple 7/' -c wq $MNT/players/bob/inventory");
    assert_eq!(m.refusals(), "");
    wait_in_game(&server, "bob", |_, items| items.iter().any(|i| i == "main 1 default:apple 7"));

    m.ok("echo 13 > $MNT/players/bob/hp");
    wait_in_game(&server, "bob", |p, _| p.is_some_and(|(hp, _)| hp == 13));

    m.ok("echo '25 1 12' > $MNT/players/bob/position");
    // Set half a node above the grass: bob lands at 25 0.5 12.
    wait_in_game(&server, "bob", |p, _| {
        p.is_some_and(|(_, p)| {
            (p[0] - 25.0).abs() < 0.01 && (p[2] - 12.0).abs() < 0.01 && (0.49..=1.01).contains(&p[1])
        })
    });

    m.ok("echo fly >> $MNT/auth/bob/privileges");
    let privs = server.ask(&["privs bob".into()], Duration::from_secs(10));
    assert!(privs[0].split(' ').nth(2).unwrap().split(',').any(|p| p == "fly"), "{privs:?}");
    assert_eq!(m.refusals(), "");
    m.unmount();

    client.quit();
    wait_in_game(&server, "bob", |p, _| p.is_none());
    assert!(server.stop().success());
    let bob = stored_player(world.path(), "bob");
    assert_eq!(bob.hp, 13);
    assert_eq!((bob.pos[0], bob.pos[2]), (250.0, 120.0), "{:?}", bob.pos);
    let inv = String::from_utf8(bob.inventory.clone()).unwrap();
    assert!(inv.contains("List main 32\nWidth 0\nItem default:apple 7\n"), "{inv}");
    let store =
        worldfs_store::world::World::open(world.path()).unwrap().open_records(Collection::Auth, true, false).unwrap();
    let account = AuthEntry::decode(&store.get("bob").unwrap().unwrap()).unwrap();
    assert!(account.privileges.iter().any(|p| p == "fly"), "{:?}", account.privileges);
}
