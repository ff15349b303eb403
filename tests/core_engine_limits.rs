//! What the engine keeps (issue 26): writes the Luanti server would drop,
//! clamp or never read are refused with the reason, and the world is left
//! as it was. Driven through the core (no mount) over demo worlds.

use crate::common;

use std::ffi::OsStr;
use worldfs::fs::{ErrorKind, FsError, Options, WorldFs};
use worldfs::worlds::luanti::inode;

fn writable(world: &std::path::Path, opts: Options) -> WorldFs {
    worldfs::open::open_world(world, Options { read_only: false, ..opts }).unwrap()
}

/// Write `data` to the file `ino` as a program would (open, write, close).
fn write_file(fs: &WorldFs, ino: u64, data: &[u8]) -> Result<(), FsError> {
    let pid = std::process::id();
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid)?;
    fs.write(o.fh, 0, data)?;
    let r = fs.flush(o.fh, pid);
    fs.release(o.fh)?;
    r
}

fn read_file(fs: &WorldFs, ino: u64) -> Vec<u8> {
    fs.read_unopened(ino, 0, 1 << 24).unwrap()
}

fn write_errors(fs: &WorldFs) -> String {
    fs.write_errors().concat()
}

fn map_bytes(world: &std::path::Path) -> Vec<u8> {
    std::fs::read(world.join("map.sqlite")).unwrap()
}

/// The inode of `blocks/POS/FILE`.
fn block_file(fs: &WorldFs, pos: &str, file: &str) -> u64 {
    let dir = fs.lookup(inode::BLOCKS, OsStr::new(pos)).unwrap().ino;
    fs.lookup(dir, OsStr::new(file)).unwrap().ino
}

fn entities(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("lua_entity 1,2,3 mobs:sheep hp={} staticdata=\"\"\n", i % 20)).collect::<String>().into()
}

/// Give block 0,0,0 a defined timestamp, so that objects written there
/// would survive activation (an undefined one is refused for its own reason).
fn defined_timestamp(fs: &WorldFs) {
    let info = block_file(fs, "0,0,0", "info");
    let text = String::from_utf8(read_file(fs, info)).unwrap().replace("timestamp = 4294967295", "timestamp = 1");
    write_file(fs, info, text.as_bytes()).unwrap();
}

/// 300 entities in one block: Luanti deletes every object of a block that
/// holds more than max_objects_per_block (256 by default) when it
/// activates it. Refused, with the setting named; 256 are accepted.
#[test]
fn more_static_objects_than_max_objects_per_block_are_refused() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    defined_timestamp(&fs);
    let objects = block_file(&fs, "0,0,0", "objects");
    let before = map_bytes(world.path());
    let e = write_file(&fs, objects, &entities(300)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("300 static objects") && e.message.contains("max_objects_per_block = 256"), "{e:?}");
    assert!(write_errors(&fs).contains("max_objects_per_block = 256"), "{}", write_errors(&fs));
    assert_eq!(map_bytes(world.path()), before, "nothing written");
    write_file(&fs, objects, &entities(256)).unwrap();
    assert_eq!(read_file(&fs, objects).iter().filter(|&&c| c == b'\n').count(), 256);
}

/// The server's own setting is used when it is given: from the mount
/// option, or its minetest.conf beside the worlds directory.
#[test]
fn max_objects_per_block_follows_the_servers_setting() {
    let home = tempfile::tempdir().unwrap();
    let world = home.path().join("worlds").join("w");
    std::fs::create_dir_all(&world).unwrap();
    worldfs::worlds::luanti::demo::write_demo(&world).unwrap();
    std::fs::write(home.path().join("minetest.conf"), "max_objects_per_block = 10\n").unwrap();
    let fs = writable(&world, Options::default());
    defined_timestamp(&fs);
    let objects = block_file(&fs, "0,0,0", "objects");
    let e = write_file(&fs, objects, &entities(11)).unwrap_err();
    assert!(e.message.contains("max_objects_per_block = 10"), "{e:?}");
    write_file(&fs, objects, &entities(10)).unwrap();
    drop(fs);
    let fs = writable(&world, Options { max_objects_per_block: Some(300), ..Options::default() });
    write_file(&fs, block_file(&fs, "0,0,0", "objects"), &entities(300)).unwrap();
}

/// An object past the map's edge (31007.5 nodes) is deleted by the server
/// when it is activated.
#[test]
fn static_object_outside_the_map_is_refused() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    defined_timestamp(&fs);
    let objects = block_file(&fs, "0,0,0", "objects");
    let before = map_bytes(world.path());
    let e = write_file(&fs, objects, b"lua_entity 31008,0,0 mobs:sheep hp=1 staticdata=\"\"\n").unwrap_err();
    assert!(e.message.contains("outside the map"), "{e:?}");
    assert_eq!(map_bytes(world.path()), before);
    write_file(&fs, objects, b"lua_entity 31007.5,0,0 mobs:sheep hp=1 staticdata=\"\"\n").unwrap();
}

/// `mkdir blocks/2047,2047,2047` made a block the engine never loads
/// (its map ends at block ±1937, node ±31007).
#[test]
fn blocks_outside_the_engines_map_are_not_made() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    let before = map_bytes(world.path());
    for name in ["2047,2047,2047", "1938,0,0", "0,-1938,0", "0,0,-2048"] {
        let e = fs.mkdir(inode::BLOCKS, OsStr::new(name)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{name}");
        assert!(e.message.contains("outside the map"), "{name}: {e:?}");
    }
    assert_eq!(map_bytes(world.path()), before);
    assert!(write_errors(&fs).contains("outside the map"), "{}", write_errors(&fs));
    fs.mkdir(inode::BLOCKS, OsStr::new("1937,-1937,1937")).unwrap();
}

/// `mv find/air find/default:nothing_here` renamed every air node to a
/// name no block holds, without the warning `node/` gives for a typo.
#[test]
fn renaming_a_node_type_to_an_unseen_name_warns() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    fs.lookup(inode::FIND_DIR, OsStr::new("air")).unwrap();
    fs.rename(inode::FIND_DIR, OsStr::new("air"), inode::FIND_DIR, OsStr::new("default:nothing_here"), 0).unwrap();
    let errors = write_errors(&fs);
    assert!(
        errors.contains(
            "mv find/air find/default:nothing_here: warning: written, but 'default:nothing_here' appears \
                         nowhere else"
        ),
        "{errors}"
    );
    // A name the world has: no warning.
    let fs2 = writable(world.path(), Options::default());
    fs2.rename(inode::FIND_DIR, OsStr::new("default:nothing_here"), inode::FIND_DIR, OsStr::new("default:stone"), 0)
        .unwrap();
    assert!(!write_errors(&fs2).contains("warning"), "{}", write_errors(&fs2));
}

/// A player's yaw of 1e30 was accepted; the server keeps yaw within a turn.
#[test]
fn player_yaw_past_a_turn_is_refused() {
    use worldfs::documents::Document;
    use worldfs_codec::luanti::player::Player;
    let mut p = Player {
        hp: 20,
        breath: 10,
        pos: [0.0; 3],
        pitch: 0.0,
        yaw: 0.0,
        meta: Default::default(),
        inventory: b"EndInventory\n".to_vec(),
    };
    for bad in ["0 1e30\n", "0 360.5\n", "0 -361\n"] {
        let e = p.apply("look", bad.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("is not between -360 and 360"), "{bad}: {e}");
        assert_eq!(p.yaw, 0.0);
    }
    p.apply("look", b"10 359.5\n").unwrap();
    assert_eq!((p.pitch, p.yaw), (10.0, 359.5));
}

/// Create `dir/name`, write `data` and close it, as `echo data > name` does.
fn create_file(fs: &WorldFs, dir: u64, name: &str, data: &[u8]) -> Result<(), FsError> {
    let pid = std::process::id();
    let (_, o) = fs.create(dir, OsStr::new(name), 0o644, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, pid)?;
    fs.write(o.fh, 0, data)?;
    let r = fs.flush(o.fh, pid);
    fs.release(o.fh)?;
    r
}

fn lookup_path(fs: &WorldFs, path: &str) -> Result<u64, FsError> {
    path.split('/').try_fold(inode::ROOT, |dir, name| fs.lookup(dir, OsStr::new(name)).map(|a| a.ino))
}

/// A field file named `50%`, `%zz`, `a%2fb` or `%2E%2E` was accepted at
/// close, listed, never written, and gone after a remount. Such names are
/// refused at create, naming the file that is the key; that one is kept.
#[test]
fn field_names_that_are_no_key_are_refused_at_create() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    let fields = lookup_path(&fs, "blocks/0,0,0/meta/3,1,3/fields").unwrap();
    let before = map_bytes(world.path());
    for (name, canonical) in [("50%", "50%25"), ("%zz", "%25zz"), ("a%2fb", "a%2Fb"), ("%2E%2E", "%2E.")] {
        let e = create_file(&fs, fields, name, b"v").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "{name}");
        assert!(e.message.contains(&format!("the file '{canonical}'")), "{name}: {e:?}");
        assert!(fs.lookup(fields, OsStr::new(name)).is_err(), "{name} is not listed");
        // Renaming a field to such a name is refused the same way.
        let e = fs.rename(fields, OsStr::new("infotext"), fields, OsStr::new(name), 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid, "mv infotext {name}");
    }
    assert!(write_errors(&fs).contains("'50%' is not the name of a key"), "{}", write_errors(&fs));
    assert_eq!(map_bytes(world.path()), before, "nothing written");
    create_file(&fs, fields, "50%25", b"half").unwrap();
    // Editors' own files (a leading dot) are still scratch files.
    create_file(&fs, fields, ".50%.swp", b"x").unwrap();
    drop(fs);
    let fs = writable(world.path(), Options::default());
    let key = lookup_path(&fs, "blocks/0,0,0/meta/3,1,3/fields/50%25").unwrap();
    assert_eq!(read_file(&fs, key), b"half\n", "a field is shown with its line end");
}

/// The same for a mod's storage (and a player's meta/, which shares the rule).
#[test]
fn record_key_names_that_are_no_key_are_refused_at_create() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    let storage = lookup_path(&fs, "mod_storage").unwrap();
    fs.mkdir(storage, OsStr::new("mymod")).unwrap();
    let dir = lookup_path(&fs, "mod_storage/mymod").unwrap();
    let e = create_file(&fs, dir, "50%", b"v").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(e.message.contains("the file '50%25'"), "{e:?}");
    create_file(&fs, dir, "50%25", b"v").unwrap();
    drop(fs);
    let fs = writable(world.path(), Options::default());
    assert_eq!(read_file(&fs, lookup_path(&fs, "mod_storage/mymod/50%25").unwrap()), b"v");
}

/// The names in a directory as `ls` gets them (READDIRPLUS).
fn list(fs: &WorldFs, dir: u64) -> Result<Vec<String>, FsError> {
    let mut names = Vec::new();
    fs.readdir(dir, 0, true, &mut |e, _| {
        names.push(e.name.to_string_lossy().into_owned());
        false
    })?;
    Ok(names.into_iter().filter(|n| n != "." && n != "..").collect())
}

/// A world whose players and accounts are files (auth.txt, players/).
fn files_backend_world() -> tempfile::TempDir {
    let world = common::demo_world();
    let mt = std::fs::read_to_string(world.path().join("world.mt")).unwrap();
    let mt = mt.replace("player_backend = sqlite3", "player_backend = files");
    std::fs::write(world.path().join("world.mt"), mt.replace("auth_backend = sqlite3", "auth_backend = files"))
        .unwrap();
    world
}

fn player_file(name: &str) -> String {
    format!("name = {name}\nhp = 20\nposition = (0,0,0)\nPlayerArgsEnd\nEndInventory\n")
}

/// auth.txt's `../evil:...` and a players/ file with `name = ../../x` made
/// the whole listing empty or fail; `grep -rl fly MNT/auth` then missed
/// every account. Such records are shown under an escaped name, with a
/// warning, and the others are listed and read as ever.
#[test]
fn records_with_a_slash_or_empty_name_are_shown_escaped() {
    let world = files_backend_world();
    std::fs::write(world.path().join("auth.txt"), "alice::interact,fly:1\n../evil::fly:2\n:x::3\nbob::shout:4\n")
        .unwrap();
    std::fs::create_dir_all(world.path().join("players")).unwrap();
    std::fs::write(world.path().join("players/alice"), player_file("alice")).unwrap();
    std::fs::write(world.path().join("players/x"), player_file("../../x")).unwrap();
    // A file the engine cannot read as a player is skipped, as the engine does.
    std::fs::write(world.path().join("players/broken"), "name = broken\nposition = junk\nPlayerArgsEnd\n").unwrap();
    let fs = writable(world.path(), Options::default());
    let auth = lookup_path(&fs, "auth").unwrap();
    assert_eq!(list(&fs, auth).unwrap(), ["%", "%2E.%2Fevil", "alice", "bob"]);
    let privs = |name: &str| read_file(&fs, lookup_path(&fs, &format!("auth/{name}/privileges")).unwrap());
    assert_eq!(privs("alice"), b"interact\nfly\n");
    assert_eq!(privs("%2E.%2Fevil"), b"fly\n");
    let players = lookup_path(&fs, "players").unwrap();
    assert_eq!(list(&fs, players).unwrap(), ["%2E.%2F..%2Fx", "alice"]);
    assert_eq!(read_file(&fs, lookup_path(&fs, "players/alice/hp").unwrap()), b"20\n");
    assert!(lookup_path(&fs, "players/broken/hp").is_err());
    assert_eq!(read_file(&fs, lookup_path(&fs, "players/%2E.%2F..%2Fx/hp").unwrap()), b"20\n");
    let errors = write_errors(&fs);
    assert_eq!(errors.matches("\"../evil\"").count(), 1, "warned once: {errors}");
    list(&fs, auth).unwrap();
    assert_eq!(write_errors(&fs).matches("\"../evil\"").count(), 1, "still once");
    // The escaped record is edited in place, under its stored name.
    write_file(&fs, lookup_path(&fs, "auth/%2E.%2Fevil/privileges").unwrap(), b"shout\n").unwrap();
    let text = std::fs::read_to_string(world.path().join("auth.txt")).unwrap();
    assert!(text.contains("../evil::shout:2\n") && text.contains("alice::interact,fly:1\n"), "{text}");
}

/// A mod storage row with modname `x/y` or `` (sqlite3 backend): shown
/// escaped, and the other mods are listed.
#[test]
fn one_bad_mod_storage_row_hides_no_other_mod() {
    let world = common::demo_world();
    let fs = writable(world.path(), Options::default());
    let storage = lookup_path(&fs, "mod_storage").unwrap();
    fs.mkdir(storage, OsStr::new("good")).unwrap();
    create_file(&fs, lookup_path(&fs, "mod_storage/good").unwrap(), "k", b"v").unwrap();
    drop(fs);
    let db = rusqlite::Connection::open(world.path().join("mod_storage.sqlite")).unwrap();
    for m in ["x/y", ""] {
        db.execute("INSERT INTO entries (modname, key, value) VALUES (?1, 'k', 'w')", [m]).unwrap();
    }
    drop(db);
    let fs = writable(world.path(), Options::default());
    let storage = lookup_path(&fs, "mod_storage").unwrap();
    assert_eq!(list(&fs, storage).unwrap(), ["%", "good", "x%2Fy"]);
    assert_eq!(read_file(&fs, lookup_path(&fs, "mod_storage/x%2Fy/k").unwrap()), b"w");
    assert_eq!(read_file(&fs, lookup_path(&fs, "mod_storage/%/k").unwrap()), b"w");
    assert_eq!(read_file(&fs, lookup_path(&fs, "mod_storage/good/k").unwrap()), b"v");
}

/// A block whose `data` is TEXT instead of BLOB made `worldfs check` fail
/// ("Invalid column type Text", exit 2) and every `names`/`find/` read fail
/// with EIO. Its bytes are read as the engine reads them; a TEXT that is no
/// block is one corrupt block: reported with its position, its `error`
/// file says why, and the rest is served.
#[test]
fn a_block_stored_as_text_is_one_corrupt_block() {
    let world = common::demo_world();
    let db = rusqlite::Connection::open(world.path().join("map.sqlite")).unwrap();
    let cols: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('blocks')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let (bad, good) = if cols.iter().any(|c| c == "pos") {
        ("pos = 1", "pos = 0")
    } else {
        ("x = 1 AND y = 0 AND z = 0", "x = 0 AND y = 0 AND z = 0")
    };
    db.execute(&format!("UPDATE blocks SET data = 'not a block' WHERE {bad}"), []).unwrap();
    // A TEXT holding a block's bytes is that block to the engine.
    db.execute(&format!("UPDATE blocks SET data = CAST(data AS TEXT) WHERE {good}"), []).unwrap();
    drop(db);

    let store = worldfs_store::world::World::open(world.path()).unwrap().open_store(true, false).unwrap();
    let report = worldfs::worlds::luanti::check::check(store.as_ref(), &mut |_, _| {}).unwrap();
    assert_eq!(report.corrupt.len(), 1, "{:?}", report.corrupt);
    assert_eq!(report.corrupt[0].0, worldfs_store::BlockPos::new(1, 0, 0));

    let fs = worldfs::open::open_world(world.path(), Options::default()).unwrap();
    let error = read_file(&fs, lookup_path(&fs, "blocks/1,0,0/error").unwrap());
    assert!(!error.is_empty(), "the error file says why");
    assert!(
        String::from_utf8_lossy(&read_file(&fs, lookup_path(&fs, "blocks/0,0,0/names").unwrap())).contains("default:")
    );
    let find = lookup_path(&fs, "find").unwrap();
    assert!(list(&fs, find).unwrap().iter().any(|n| n == "default:stone"));
    assert!(!list(&fs, lookup_path(&fs, "find/default:stone").unwrap()).unwrap().is_empty());
}
