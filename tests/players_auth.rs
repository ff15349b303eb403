//! Players, privileges and mod storage as files, in the `files` and
//! `sqlite3` backends, with the real server as the oracle: its own
//! `--migrate-players/-auth/-mod-storage` reads what worldfs wrote with the
//! engine's reader and writes it again with the engine's writer, so an
//! edit made through the mount in one backend must come out of the other.

use crate::common;

use common::mount::Mounted;
use std::path::Path;

const ALICE: &str = "breath = 10\nyaw = 270\npitch = -12.5\n\
extended_attributes = {\"stamina:level\":\"20\",\"xp\":\"7\"}\nposition = (105,85,-42.5)\nhp = 18\n\
name = alice\nversion = 1\nPlayerArgsEnd\nList main 32\nWidth 0\nItem default:pick_steel 1 1234\n\
Item default:dirt 42\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\n\
Empty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\n\
Empty\nEndInventoryList\nList craft 9\nWidth 3\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\nEmpty\n\
EndInventoryList\nList craftpreview 1\nWidth 0\nEmpty\nEndInventoryList\nList craftresult 1\nWidth 0\nEmpty\n\
EndInventoryList\nEndInventory\n";

/// A demo world whose players, accounts and mod storage use the files
/// backend, with two players, three accounts and one mod's storage.
fn files_world() -> tempfile::TempDir {
    let w = common::demo_world();
    let d = w.path();
    let mt = std::fs::read_to_string(d.join("world.mt")).unwrap();
    let mt: String = mt
        .lines()
        .filter(|l| !l.contains("player_backend") && !l.contains("auth_backend") && !l.contains("mod_storage_backend"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        d.join("world.mt"),
        format!("{mt}player_backend = files\nauth_backend = files\nmod_storage_backend = files\n"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("players")).unwrap();
    std::fs::write(d.join("players/alice"), ALICE).unwrap();
    std::fs::write(d.join("players/bob"), ALICE.replace("name = alice", "name = bob")).unwrap();
    std::fs::write(
        d.join("auth.txt"),
        "foo:#1#hPpy4O3IAn1hsNK00A6wNw#Kpu6rj7M6FgEA:shout:1700000001\n\
         singleplayer::fast,fly,interact,shout:1700000000\nalice::interact,shout:1700000002\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("mod_storage")).unwrap();
    std::fs::write(d.join("mod_storage/testmod"), "{\"counter\":\"42\",\"hello\":\"world\"}").unwrap();
    w
}

#[test]
fn players_accounts_and_mod_storage_read_and_edit_as_files() {
    require_fuse!("players_accounts_and_mod_storage_read_and_edit_as_files");
    let w = files_world();
    let m = Mounted::new(w.path(), &[]);
    assert_eq!(m.ok("ls $MNT/players"), "alice\nbob\n");
    assert_eq!(m.ok("cat $MNT/players/alice/position"), "10.5 8.5 -4.25\n");
    assert_eq!(m.ok("cat $MNT/players/alice/look"), "-12.5 270\n");
    assert_eq!(m.ok("cat $MNT/players/alice/hp $MNT/players/alice/breath"), "18\n10\n");
    assert_eq!(m.ok("cat $MNT/players/alice/meta/xp"), "7");
    assert!(m.ok("grep -c dirt $MNT/players/alice/inventory").starts_with('1'));
    assert_eq!(m.ok("ls $MNT/auth"), "alice\nfoo\nsingleplayer\n");
    assert_eq!(m.ok("cat $MNT/auth/singleplayer/privileges"), "fast\nfly\ninteract\nshout\n");
    assert_eq!(m.ok("cat $MNT/auth/foo/password"), "set (the hash is not shown)\n");
    assert!(m.ok("cat $MNT/auth/foo/last_login").ends_with("\n1700000001\n"));
    assert_eq!(m.ok("cat $MNT/mod_storage/testmod/hello"), "world");
    // Accounts are the mount owner's only (the kernel enforces the modes).
    assert_eq!(
        m.ok(
            "stat -c %a $MNT/auth $MNT/auth/foo $MNT/auth/foo/privileges $MNT/auth/foo/password $MNT/players/alice/hp"
        ),
        "700\n700\n600\n400\n644\n"
    );
    // `grep -r` over a whole collection works like over any directory.
    assert!(m.ok("grep -rl shout $MNT/auth").contains("auth/foo/privileges"));

    // Edits with the usual tools.
    m.ok("echo 20 > $MNT/players/alice/hp");
    m.ok("sed -i 's/default:dirt 42/default:dirt 99/' $MNT/players/alice/inventory");
    m.ok("echo '1.5 2 -3' > $MNT/players/alice/position");
    m.ok("printf 12 > $MNT/players/alice/meta/xp && printf yes > $MNT/players/alice/meta/worldfs:new");
    m.ok("echo fly >> $MNT/auth/foo/privileges");
    m.ok("mkdir $MNT/auth/newbie && echo interact > $MNT/auth/newbie/privileges");
    m.ok("rmdir $MNT/players/bob");
    m.ok("printf 'a b' > $MNT/mod_storage/testmod/spaced && rm $MNT/mod_storage/testmod/counter");
    m.ok("mkdir $MNT/mod_storage/othermod && printf 1 > $MNT/mod_storage/othermod/k");

    // Refusals: EINVAL/EPERM, the reason in write-errors, nothing changed.
    // (/bin/echo reports the error close(2) returns; bash's builtin ignores it.)
    let before = std::fs::read(w.path().join("players/alice")).unwrap();
    let (code, _, _) = m.sh("/bin/echo lots > $MNT/players/alice/hp");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("/bin/echo 'List main 1' > $MNT/players/alice/inventory");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("/bin/echo '1 2 99999' > $MNT/players/alice/position");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("/bin/echo 'a,b' >> $MNT/auth/foo/privileges");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("/bin/echo x > $MNT/auth/foo/password");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("mkdir $MNT/players/carol");
    assert_ne!(code, 0);
    let (code, _, _) = m.sh("mkdir '$MNT/auth/bad name'");
    assert_ne!(code, 0);
    let errors = m.refusals();
    assert!(errors.contains("players/alice/hp") && errors.contains("not a whole number"), "{errors}");
    assert!(errors.contains("players/alice/inventory"), "{errors}");
    assert!(errors.contains("outside the map"), "{errors}");
    assert!(errors.contains("auth/foo/privileges"), "{errors}");
    assert!(errors.contains("players/carol") && errors.contains("mkdir auth/carol"), "{errors}");
    assert_eq!(std::fs::read(w.path().join("players/alice")).unwrap(), before, "a refused write changed the file");
    drop(m);

    // The engine's files, as worldfs left them, read by our own codecs.
    let (_, alice) =
        worldfs_codec::luanti::player::Player::from_file(&std::fs::read(w.path().join("players/alice")).unwrap())
            .unwrap();
    assert_eq!((alice.hp, alice.pos), (20, [15.0, 20.0, -30.0]));
    assert!(!w.path().join("players/bob").exists());
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    assert!(auth.contains("foo:#1#hPpy4O3IAn1hsNK00A6wNw#Kpu6rj7M6FgEA:shout,fly:1700000001\n"), "{auth}");
    assert!(auth.contains("newbie:::-1\n") || auth.contains("newbie::interact:-1\n"), "{auth}");
    assert_eq!(
        std::fs::read_to_string(w.path().join("mod_storage/testmod")).unwrap(),
        "{\"hello\":\"world\",\"spaced\":\"a b\"}"
    );
}

/// What the engine wrote for a player, read back from its files backend.
fn engine_player(world: &Path, name: &str) -> worldfs_codec::luanti::player::Player {
    let dir = world.join("players");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        if let Ok((n, p)) = worldfs_codec::luanti::player::Player::from_file(&bytes)
            && n == name
        {
            return p;
        }
    }
    panic!("the engine wrote no player {name} in {}", dir.display());
}

#[test]
fn the_server_reads_what_worldfs_wrote_in_both_backends() {
    require_fuse!("the_server_reads_what_worldfs_wrote_in_both_backends");
    require_minetestserver!("the_server_reads_what_worldfs_wrote_in_both_backends");
    let w = files_world();
    // Files -> (worldfs edits) -> the engine migrates to sqlite3.
    let m = Mounted::new(w.path(), &[]);
    m.ok("echo 7 > $MNT/players/alice/hp && echo fly >> $MNT/auth/alice/privileges");
    m.ok("printf v1 > $MNT/mod_storage/testmod/fromfiles");
    drop(m);
    for (flag, to) in
        [("--migrate-players", "sqlite3"), ("--migrate-auth", "sqlite3"), ("--migrate-mod-storage", "sqlite3")]
    {
        common::server::migrate(w.path(), flag, to);
    }
    assert!(w.path().join("players.sqlite").is_file() && w.path().join("auth.sqlite").is_file());

    // The same edits seen through the sqlite3 backend, and more made there.
    let m = Mounted::new(w.path(), &[]);
    assert!(m.log_text().contains("players.sqlite") || m.ok("ls $MNT/players").contains("alice"));
    assert_eq!(m.ok("cat $MNT/players/alice/hp"), "7\n");
    assert!(m.ok("cat $MNT/auth/alice/privileges").contains("fly\n"));
    assert_eq!(m.ok("cat $MNT/mod_storage/testmod/fromfiles"), "v1");
    assert_eq!(m.ok("cat $MNT/players/alice/position"), "10.5 8.5 -4.25\n");
    m.ok("echo '-100.5 12 0.25' > $MNT/players/alice/position && echo 3 > $MNT/players/alice/breath");
    m.ok("sed -i 's/default:dirt 42/default:mese 5/' $MNT/players/alice/inventory");
    m.ok("printf 'sqlite edit' > $MNT/players/alice/meta/note");
    m.ok("printf 'shout\\n' > $MNT/auth/singleplayer/privileges");
    m.ok("mkdir $MNT/auth/carol && echo interact > $MNT/auth/carol/privileges");
    m.ok("printf v2 > $MNT/mod_storage/testmod/fromfiles");
    drop(m);

    // The engine reads them from sqlite and writes them as files again.
    for (flag, to) in [("--migrate-players", "files"), ("--migrate-auth", "files"), ("--migrate-mod-storage", "files")]
    {
        common::server::migrate(w.path(), flag, to);
    }
    let alice = engine_player(w.path(), "alice");
    assert_eq!((alice.hp, alice.breath, alice.pos), (7, 3, [-1005.0, 120.0, 2.5]));
    assert_eq!(alice.meta.get(&b"note"[..]).map(Vec::as_slice), Some(&b"sqlite edit"[..]));
    let inv = String::from_utf8(alice.inventory.clone()).unwrap();
    assert!(inv.contains("Item default:mese 5\n") && !inv.contains("default:dirt 42"), "{inv}");
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    let line = |n: &str| auth.lines().find(|l| l.starts_with(&format!("{n}:"))).unwrap_or_default().to_string();
    assert_eq!(line("singleplayer"), "singleplayer::shout:1700000000", "{auth}");
    assert!(line("alice").contains("fly"), "{auth}");
    assert!(line("carol").starts_with("carol::interact:"), "{auth}");
    let ms = std::fs::read_to_string(w.path().join("mod_storage/testmod")).unwrap();
    assert!(ms.contains("\"fromfiles\":\"v2\""), "{ms}");
}

#[test]
fn undo_takes_back_player_and_account_changes() {
    require_fuse!("undo_takes_back_player_and_account_changes");
    let w = files_world();
    let m = Mounted::new(w.path(), &[]);
    m.ok("echo 1 > $MNT/players/alice/hp && echo fly >> $MNT/auth/foo/privileges && rmdir $MNT/players/bob");
    drop(m);
    let undo = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
            .arg("undo")
            .arg(w.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "undo {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = undo(&[]);
    assert!(list.contains("rmdir players/bob") && list.contains("write players/alice/hp"), "{list}");
    undo(&["--last", "3"]);
    let (_, alice) =
        worldfs_codec::luanti::player::Player::from_file(&std::fs::read(w.path().join("players/alice")).unwrap())
            .unwrap();
    assert_eq!(alice.hp, 18);
    assert!(w.path().join("players/bob").is_file(), "bob is back");
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    assert!(auth.contains("foo:#1#hPpy4O3IAn1hsNK00A6wNw#Kpu6rj7M6FgEA:shout:1700000001"), "{auth}");
}

#[test]
fn no_player_edit_while_a_server_has_the_world_open() {
    require_fuse!("no_player_edit_while_a_server_has_the_world_open");
    let w = files_world();
    let m = Mounted::new(w.path(), &["guard_ms=0"]);
    // Something that holds the map open, as a running server does.
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .stdin(std::fs::OpenOptions::new().read(true).write(true).open(w.path().join("map.sqlite")).unwrap())
        .spawn()
        .unwrap();
    // Once it runs `sleep` (not the test's own copy before exec), it holds the map.
    let exe = format!("/proc/{}/exe", holder.id());
    common::wait_until("the holder runs sleep", || {
        std::fs::read_link(&exe).is_ok_and(|p| p.file_name().is_some_and(|n| n == "sleep"))
    });
    let (code, _, err) = m.sh("/bin/echo 1 > $MNT/players/alice/hp");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_ne!(code, 0, "{err}");
    assert!(m.refusals().contains("a server is running on this world"), "{}", m.refusals());
    assert_eq!(m.ok("cat $MNT/players/alice/hp"), "18\n");
}

#[test]
fn players_and_accounts_in_postgresql_round_trip_through_the_server() {
    require_fuse!("players_and_accounts_in_postgresql_round_trip_through_the_server");
    require_minetestserver!("players_and_accounts_in_postgresql_round_trip_through_the_server");
    let Some(pg) = common::pg::start_or_skip("players_and_accounts_in_postgresql_round_trip_through_the_server") else {
        return;
    };
    pg.create_db("mt");
    let w = files_world();
    let conn = pg.conninfo("mt");
    let mt = std::fs::read_to_string(w.path().join("world.mt")).unwrap();
    std::fs::write(
        w.path().join("world.mt"),
        format!(
            "{mt}pgsql_player_connection = {conn}\npgsql_auth_connection = {conn}\npgsql_mod_storage_connection = {conn}\n"
        ),
    )
    .unwrap();
    // The engine fills PostgreSQL with its own writer (5.6.1 has no
    // PostgreSQL mod storage: that one is filled through the mount).
    common::server::migrate(w.path(), "--migrate-players", "postgresql");
    common::server::migrate(w.path(), "--migrate-auth", "postgresql");
    std::fs::remove_dir_all(w.path().join("mod_storage")).unwrap();
    let mt = std::fs::read_to_string(w.path().join("world.mt")).unwrap();
    std::fs::write(
        w.path().join("world.mt"),
        mt.replace("mod_storage_backend = files", "mod_storage_backend = postgresql"),
    )
    .unwrap();

    let m = Mounted::new(w.path(), &[]);
    assert_eq!(m.ok("ls $MNT/players"), "alice\nbob\n");
    assert_eq!(m.ok("cat $MNT/players/alice/position"), "10.5 8.5 -4.25\n");
    assert_eq!(m.ok("cat $MNT/auth/singleplayer/privileges | sort"), "fast\nfly\ninteract\nshout\n");
    m.ok("echo 5 > $MNT/players/alice/hp && echo '3 4 5' > $MNT/players/alice/position");
    m.ok("sed -i 's/default:dirt 42/default:wood 7/' $MNT/players/alice/inventory");
    m.ok("echo kick >> $MNT/auth/foo/privileges && rmdir $MNT/players/bob");
    m.ok("mkdir $MNT/mod_storage/pgmod && printf 'bin\\001ary' > $MNT/mod_storage/pgmod/k");
    assert_eq!(m.refusals(), "");
    drop(m);
    assert_eq!(
        pg.sql("mt", "SELECT encode(value, 'hex') FROM mod_storage WHERE modname = 'pgmod'").trim(),
        "62696e01617279"
    );

    // The engine reads our rows and writes them as files.
    common::server::migrate(w.path(), "--migrate-players", "files");
    common::server::migrate(w.path(), "--migrate-auth", "files");
    let alice = engine_player(w.path(), "alice");
    assert_eq!((alice.hp, alice.pos), (5, [30.0, 40.0, 50.0]));
    assert!(String::from_utf8_lossy(&alice.inventory).contains("Item default:wood 7\n"));
    // bob was removed: no file of the engine's names him (a file it wrote
    // that cannot be read is a failure, not a removal).
    let names: Vec<String> = std::fs::read_dir(w.path().join("players"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let read = worldfs_codec::luanti::player::Player::from_file(&std::fs::read(&path).unwrap());
            read.unwrap_or_else(|err| panic!("{}: {err}", path.display())).0
        })
        .collect();
    assert!(names.contains(&"alice".to_string()) && !names.contains(&"bob".to_string()), "players: {names:?}");
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    let foo = auth.lines().find(|l| l.starts_with("foo:")).unwrap();
    assert!(foo.contains("kick") && foo.contains("#1#hPpy4O3IAn1hsNK00A6wNw#"), "{auth}");
}

#[test]
fn players_and_accounts_in_leveldb_round_trip_through_the_server() {
    require_fuse!("players_and_accounts_in_leveldb_round_trip_through_the_server");
    require_minetestserver!("players_and_accounts_in_leveldb_round_trip_through_the_server");
    let w = files_world();
    // The engine writes players.db and auth.db with its own LevelDB.
    common::server::migrate(w.path(), "--migrate-players", "leveldb");
    common::server::migrate(w.path(), "--migrate-auth", "leveldb");
    assert!(w.path().join("players.db/CURRENT").is_file() && w.path().join("auth.db/CURRENT").is_file());
    let m = Mounted::new(w.path(), &[]);
    assert_eq!(m.ok("ls $MNT/players"), "alice\nbob\n");
    assert_eq!(m.ok("cat $MNT/players/alice/position"), "10.5 8.5 -4.25\n");
    assert_eq!(m.ok("cat $MNT/players/alice/meta/xp"), "7");
    assert!(m.ok("cat $MNT/auth/foo/password").starts_with("set"));
    m.ok("echo 9 > $MNT/players/alice/hp && sed -i 's/default:dirt 42/default:gravel 3/' $MNT/players/alice/inventory");
    m.ok("echo fly >> $MNT/auth/foo/privileges && rmdir $MNT/players/bob");
    assert_eq!(m.refusals(), "");
    drop(m);
    // The engine reads our LevelDB records and writes them as files.
    common::server::migrate(w.path(), "--migrate-players", "files");
    common::server::migrate(w.path(), "--migrate-auth", "files");
    let alice = engine_player(w.path(), "alice");
    assert_eq!((alice.hp, alice.pos), (9, [105.0, 85.0, -42.5]));
    assert!(String::from_utf8_lossy(&alice.inventory).contains("Item default:gravel 3\n"));
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    assert!(auth.lines().any(|l| l.starts_with("foo:#1#hPpy4O3IAn1hsNK00A6wNw#") && l.contains("fly")), "{auth}");
    let names: Vec<String> = std::fs::read_dir(w.path().join("players"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            worldfs_codec::luanti::player::Player::from_file(&std::fs::read(e.path()).ok()?).ok().map(|(n, _)| n)
        })
        .collect();
    assert!(!names.contains(&"bob".to_string()), "{names:?}");
}

const PROBE: &str = r#"
local s = minetest.get_mod_storage() -- only at load time
minetest.register_on_mods_loaded(function()
  minetest.after(0, function()
    minetest.get_auth_handler().create_auth("builder", "")
    minetest.set_player_privs("builder", {interact = true, shout = true, fly = true})
    s:set_string("greeting", "hello")
    s:set_string("count", "3")
    minetest.request_shutdown()
  end)
end)
"#;

/// Real data: the mesecons world's own player file, and an account and a
/// mod's storage made by the real server through its Lua API; every record
/// round-trips, edits with vim, sed and echo are read back by the engine.
#[test]
fn real_records_made_by_the_server_round_trip_and_take_edits() {
    require_fuse!("real_records_made_by_the_server_round_trip_and_take_edits");
    require_minetestserver!("real_records_made_by_the_server_round_trip_and_take_edits");
    let worlds = common::real_sqlite_worlds("real_records_made_by_the_server_round_trip_and_take_edits");
    let src = worlds.iter().find(|w| w.ends_with("minetest-mesecons-circuits")).expect("the mesecons world");
    let w = common::copy_world(src);
    let (status, log) = common::server::run_with_mod(w.path(), "worldfs_probe", PROBE, "");
    assert!(status.success(), "{}", common::server::tail(&log, 30));
    // Every record the engine wrote decodes and encodes back to itself.
    let original = std::fs::read(w.path().join("players/singleplayer")).unwrap();
    let (name, p) = worldfs_codec::luanti::player::Player::from_file(&original).unwrap();
    assert_eq!(
        worldfs_codec::luanti::player::Player::from_file(&p.to_file(&name).unwrap()).unwrap(),
        (name.clone(), p.clone())
    );
    assert_eq!(worldfs_codec::luanti::player::Player::decode(&p.encode()).unwrap(), p);
    let auth = std::fs::read_to_string(w.path().join("auth.txt")).unwrap();
    for line in auth.lines() {
        let (n, e) = worldfs_codec::luanti::auth::AuthEntry::from_line(line).unwrap();
        assert_eq!(worldfs_codec::luanti::auth::AuthEntry::from_line(&e.to_line(&n)), Some((n, e)));
    }
    let ms = std::fs::read(w.path().join("mod_storage/worldfs_probe")).unwrap();
    let m = worldfs_codec::luanti::mod_storage::ModStorage::from_json(&ms).unwrap();
    assert_eq!(m.to_json().unwrap(), ms, "mod storage JSON as the engine wrote it");

    let mnt = Mounted::new(w.path(), &[]);
    assert_eq!(mnt.ok("cat $MNT/players/singleplayer/position"), "19.17 2.833 -28.733\n");
    assert!(mnt.ok("cat $MNT/auth/builder/privileges").contains("fly\n"));
    assert_eq!(mnt.ok("cat $MNT/mod_storage/worldfs_probe/greeting"), "hello");
    if common::mount::which("vim").is_some() {
        mnt.ok(
            "cd $MNT/players/singleplayer && vim -es -c '1,/^Empty$/s/^Empty$/Item default:apple 5/' -c wq inventory",
        );
    } else {
        common::skip("real_records_made_by_the_server_round_trip_and_take_edits", "vim", "no vim");
        return;
    }
    mnt.ok("sed -i 's/^19.17 /20 /' $MNT/players/singleplayer/position");
    mnt.ok("echo teleport >> $MNT/auth/builder/privileges && printf 4 > $MNT/mod_storage/worldfs_probe/count");
    assert_eq!(mnt.refusals(), "");
    drop(mnt);
    // The engine reads what we wrote (its own readers), into sqlite3.
    for flag in ["--migrate-players", "--migrate-auth", "--migrate-mod-storage"] {
        common::server::migrate(w.path(), flag, "sqlite3");
    }
    let mnt = Mounted::new(w.path(), &["ro"]);
    assert_eq!(mnt.ok("cat $MNT/players/singleplayer/position"), "20 2.833 -28.733\n");
    assert!(mnt.ok("cat $MNT/players/singleplayer/inventory").contains("Item default:apple 5\n"));
    assert!(mnt.ok("cat $MNT/auth/builder/privileges").contains("teleport\n"));
    assert_eq!(mnt.ok("cat $MNT/mod_storage/worldfs_probe/count"), "4");
}
