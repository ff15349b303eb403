//! Writing through the mount with real tools (vim, nano, sed -i, perl -pi,
//! python3, > and >>, truncate, cp, tee, dd), checked in the database; the
//! guard against a running server. (Bad inputs, unchanged content, copies
//! of `raw` and the world's text files are checked on the core, in
//! tests/core_behaviour.rs.)

use crate::common;

use common::mount::Mounted;
use std::path::Path;
use worldfs_codec::luanti::Block;
use worldfs_store::sqlite::SqliteStore;
use worldfs_store::{BlockPos, MapStore};

const ORIGIN: BlockPos = BlockPos::new(0, 0, 0);
const CHEST: &str = "blocks/0,0,0/meta/3,1,3";
const SIGN: &str = "blocks/0,0,0/meta/3,2,8";

/// The stored blob of a block, read straight from the database.
fn db_blob(world: &Path, pos: BlockPos) -> Option<Vec<u8>> {
    SqliteStore::open(&world.join("map.sqlite"), true).unwrap().get(pos).unwrap()
}

fn db_block(world: &Path, pos: BlockPos) -> Block {
    Block::decode(&db_blob(world, pos).expect("block exists")).unwrap()
}

fn field(b: &Block, p16: usize, key: &str) -> Option<Vec<u8>> {
    b.metadata.get(p16 as u16)?.get(key.as_bytes()).map(|v| v.value.clone())
}

fn inventory(b: &Block, p16: usize) -> String {
    String::from_utf8(b.metadata.get(p16 as u16).unwrap().inventory.clone()).unwrap()
}

const CHEST_P16: usize = 3 * 256 + 16 + 3; // (3,1,3)
const SIGN_P16: usize = 8 * 256 + 2 * 16 + 3; // (3,2,8)

fn has_tool(t: &str) -> bool {
    common::mount::which(t).is_some()
}

fn write_py(m: &Mounted, rel: &str, content: &[u8]) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/write_file.py");
    let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = m.dir.path().join("content");
    std::fs::write(&tmp, hex.as_bytes()).unwrap();
    // Large contents go through a file, small ones on the command line.
    let arg = if content.len() > 50_000 {
        std::fs::write(&tmp, content).unwrap();
        format!("@{}", tmp.display())
    } else {
        hex
    };
    m.ok(&format!("python3 {script} \"$MNT/{rel}\" {arg}")).trim().to_string()
}

#[test]
fn sed_i_on_names_replaces_a_node_type_in_every_block() {
    require_fuse!("sed_i_on_names_replaces_a_node_type_in_every_block");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let before: Vec<String> = m.ok("grep -l default:dirt $MNT/blocks/*/names").lines().map(String::from).collect();
    assert!(before.len() >= 9, "{before:?}");
    m.ok("sed -i 's/^\\([0-9]*\\) default:dirt$/\\1 default:sand/' $MNT/blocks/*/names");
    assert_eq!(m.ok("grep -l '^[0-9]* default:dirt$' $MNT/blocks/*/names || true"), "");
    // Every file of the block shows the new state at once.
    let n: usize = m.ok("grep -c ' default:sand ' $MNT/blocks/0,-1,0/nodes").trim().parse().unwrap();
    assert_eq!(n, 16 * 16 * 3);
    let b = db_block(world.path(), BlockPos::new(0, -1, 0));
    assert!(
        b.mapping.iter().any(|e| e.name == b"default:sand") && !b.mapping.iter().any(|e| e.name == b"default:dirt")
    );
    assert_eq!(b.version, 29);
}

#[test]
fn editors_and_shell_tools_edit_metadata() {
    require_fuse!("editors_and_shell_tools_edit_metadata");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    // vim in Ex mode, default settings (swap file, write backup).
    if has_tool("vim") {
        m.ok(&format!("cd $MNT/{CHEST} && vim -es -c '%s/apple 12/apple 13/' -c wq inventory"));
        assert!(inventory(&db_block(world.path(), ORIGIN), CHEST_P16).contains("Item default:apple 13\n"));
        // full vim with Debian's defaults.vim (no vimrc in a fresh HOME)
        let home = tempfile::tempdir().unwrap();
        m.ok(&format!(
            "cd $MNT/{CHEST} && HOME={} TERM=dumb vim -c '%s/apple 13/apple 14/' -c wq inventory </dev/null >/dev/null 2>&1",
            home.path().display()
        ));
        assert!(inventory(&db_block(world.path(), ORIGIN), CHEST_P16).contains("Item default:apple 14\n"));
        // no swap file or backup left behind, in the mount or the world
        assert_eq!(m.ok(&format!("ls -A $MNT/{CHEST}")), "fields\ninventory\nprivate\n");
    } else {
        common::skip("vim part", "vim", "vim not installed");
    }
    // sed -i (a temporary file renamed over the original)
    m.ok(&format!("sed -i 's/default:torch 20/default:torch 99/' $MNT/{CHEST}/inventory"));
    assert!(inventory(&db_block(world.path(), ORIGIN), CHEST_P16).contains("Item default:torch 99\n"));
    // perl -pi
    m.ok(&format!("perl -pi -e 's/pick_steel 1 3000/pick_steel 1 4000/' $MNT/{CHEST}/inventory"));
    assert!(inventory(&db_block(world.path(), ORIGIN), CHEST_P16).contains("Item default:pick_steel 1 4000\n"));
    // python3 open(..., 'w')
    m.ok(&format!(
        "python3 -c \"p='$MNT/{CHEST}/inventory'; t=open(p).read().replace('Empty', 'Item default:cobble 7', 1); f=open(p, 'w'); f.write(t); f.close()\""
    ));
    assert!(inventory(&db_block(world.path(), ORIGIN), CHEST_P16).contains("Item default:cobble 7\n"));
    // shell > on a sign's text, >> on a field
    m.ok(&format!("printf 'Hello\\nfrom the shell\\n' > $MNT/{SIGN}/fields/text"));
    m.ok(&format!("echo ' (edited)' >> $MNT/{SIGN}/fields/infotext"));
    let b = db_block(world.path(), ORIGIN);
    assert_eq!(field(&b, SIGN_P16, "text").unwrap(), b"Hello\nfrom the shell");
    assert_eq!(field(&b, SIGN_P16, "infotext").unwrap(), b"\"Welcome to worldfs!\"\n (edited)");
    // tee, cp onto a file, dd
    m.ok(&format!("echo 'by tee' | tee $MNT/{SIGN}/fields/infotext > /dev/null"));
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t"), "from cp\n").unwrap();
    m.ok(&format!("cp {} $MNT/{SIGN}/fields/text", tmp.path().join("t").display()));
    let b = db_block(world.path(), ORIGIN);
    assert_eq!(field(&b, SIGN_P16, "infotext").unwrap(), b"by tee");
    assert_eq!(field(&b, SIGN_P16, "text").unwrap(), b"from cp");
    let mut p2 = b.param2.clone();
    p2[0] = 7;
    std::fs::write(tmp.path().join("p2"), &p2).unwrap();
    m.ok(&format!("dd if={} of=$MNT/blocks/0,0,0/param2 status=none", tmp.path().join("p2").display()));
    assert_eq!(db_block(world.path(), ORIGIN).param2[0], 7);
    // nano, driven through a terminal
    if has_tool("nano") && has_tool("tmux") {
        let session = format!("worldfs-nano-{}", std::process::id());
        m.ok(&format!(
            "cd $MNT/{SIGN}/fields && tmux new-session -d -s {session} -x 100 -y 30 'nano text' && sleep 1 && \
             tmux send-keys -t {session} C-k 'typed in nano' && sleep 0.3 && tmux send-keys -t {session} C-o && \
             sleep 0.3 && tmux send-keys -t {session} Enter && sleep 0.5 && tmux send-keys -t {session} C-x && sleep 0.5; \
             tmux kill-session -t {session} 2>/dev/null; true"
        ));
        assert_eq!(field(&db_block(world.path(), ORIGIN), SIGN_P16, "text").unwrap(), b"typed in nano");
        assert_eq!(m.ok(&format!("ls -A $MNT/{SIGN}/fields")), "infotext\ntext\n", "nano's lock file is gone");
    } else {
        common::skip("nano part", "nano", "nano or tmux not installed");
    }
    assert_eq!(m.refusals(), "");
}

#[test]
fn keys_metadata_nodes_timers_objects_and_blocks() {
    require_fuse!("keys_metadata_nodes_timers_objects_and_blocks");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    // a new key, a private key, deleting and renaming keys
    m.ok(&format!("echo alice > $MNT/{CHEST}/fields/owner && echo owner > $MNT/{CHEST}/private"));
    m.ok(&format!("mv $MNT/{CHEST}/fields/infotext $MNT/{CHEST}/fields/label"));
    let b = db_block(world.path(), ORIGIN);
    let e = b.metadata.get(CHEST_P16 as u16).unwrap();
    assert!(e.get(b"owner").unwrap().private && e.get(b"owner").unwrap().value == b"alice");
    assert!(e.get(b"infotext").is_none() && e.get(b"label").unwrap().value == b"Demo chest");
    m.ok(&format!("rm $MNT/{CHEST}/fields/label"));
    assert!(db_block(world.path(), ORIGIN).metadata.get(CHEST_P16 as u16).unwrap().get(b"label").is_none());
    // touch makes no key until something is written
    m.ok(&format!("touch $MNT/{CHEST}/fields/empty"));
    assert!(field(&db_block(world.path(), ORIGIN), CHEST_P16, "empty").is_none());
    // single nodes through node/
    m.ok("echo 'default:mese' > $MNT/node/5,3,5 && echo 'default:torch 14 1' > $MNT/node/6,3,5");
    assert_eq!(m.ok("cat $MNT/node/5,3,5 $MNT/node/6,3,5"), "default:mese 15 0\ndefault:torch 14 1\n");
    let b = db_block(world.path(), ORIGIN);
    let i = 5 * 256 + 3 * 16 + 5;
    assert_eq!(b.name_of(b.param0[i]), Some(&b"default:mese"[..]));
    // timers: add one with >>, then clear all with truncate
    m.ok("echo '5 3 5 30 1.5' >> $MNT/blocks/0,0,0/timers");
    assert_eq!(m.ok("cat $MNT/blocks/0,0,0/timers"), "7 1 3 1 0\n5 3 5 30 1.5\n");
    assert_eq!(db_block(world.path(), ORIGIN).timers.len(), 2);
    m.ok("truncate -s 0 $MNT/blocks/0,0,0/timers");
    assert!(db_block(world.path(), ORIGIN).timers.is_empty());
    // objects: refused while the block's timestamp is undefined (the server
    // would drop them); once it is set, add two and remove one
    let obj = "lua_entity 5,1,5 mobs:sheep hp=8 velocity=0,0,0 yaw=90 staticdata=\"{}\"";
    assert_eq!(write_py(&m, "blocks/0,0,0/objects", format!("{obj}\n").as_bytes()), "ERR EINVAL");
    assert!(m.ok("cat $MNT/write-errors").contains("timestamp is undefined"));
    m.ok("sed -i 's/^timestamp = .*/timestamp = 100/' $MNT/blocks/0,0,0/info");
    m.ok(
        "printf 'lua_entity 5,1,5 mobs:sheep hp=8 velocity=0,0,0 yaw=90 staticdata=\"{}\"\\nobject type=1 4,1,4 data=\"ab\"\\n' > $MNT/blocks/0,0,0/objects",
    );
    assert_eq!(db_block(world.path(), ORIGIN).objects.objects.len(), 2);
    m.ok("sed -i '/mobs:sheep/d' $MNT/blocks/0,0,0/objects");
    let b = db_block(world.path(), ORIGIN);
    assert_eq!(b.objects.objects.len(), 1);
    assert_eq!(b.objects.objects[0].data, b"ab");
    // `: >` empties a file: committed by the shell's final close
    m.ok(": > $MNT/blocks/0,0,0/objects");
    assert!(db_block(world.path(), ORIGIN).objects.objects.is_empty());
    // metadata directories
    m.ok("mkdir $MNT/blocks/0,0,0/meta/1,1,1 && echo hi > $MNT/blocks/0,0,0/meta/1,1,1/fields/note");
    assert_eq!(field(&db_block(world.path(), ORIGIN), 256 + 16 + 1, "note").unwrap(), b"hi");
    m.ok("rmdir $MNT/blocks/0,0,0/meta/1,1,1");
    assert!(db_block(world.path(), ORIGIN).metadata.get(256 + 16 + 1).is_none());
    // blocks: create and delete
    m.ok("mkdir $MNT/blocks/10,2,-7");
    let b = db_block(world.path(), BlockPos::new(10, 2, -7));
    assert!(b.is_generated() && b.mapping.len() == 1 && b.mapping[0].name == b"air" && b.version == 29);
    assert!(m.ok("ls $MNT/blocks").lines().any(|l| l == "10,2,-7"));
    m.ok("rmdir $MNT/blocks/10,2,-7 && rmdir $MNT/blocks/1,-1,1");
    assert!(db_blob(world.path(), BlockPos::new(10, 2, -7)).is_none());
    assert!(db_blob(world.path(), BlockPos::new(1, -1, 1)).is_none());
    assert!(!m.ok("ls $MNT/blocks").lines().any(|l| l == "1,-1,1"));
    // info: flags, and a version change re-encodes the block. Version 25
    // cannot hold the private field made above: refused.
    let (code, _, err) = m.sh("sed -i 's/^version = 29/version = 25/' $MNT/blocks/0,0,0/info");
    assert_ne!(code, 0);
    assert!(err.contains("Invalid argument"), "{err}");
    assert!(m.ok("cat $MNT/write-errors").contains("version 25 cannot store private metadata fields"));
    m.ok("sed -i 's/^underground = false/underground = true/; s/^version = 29/version = 28/' $MNT/blocks/0,0,0/info");
    let blob = db_blob(world.path(), ORIGIN).unwrap();
    assert_eq!(blob[0], 28);
    let b = Block::decode(&blob).unwrap();
    assert!(b.is_underground() && b.metadata.get(CHEST_P16 as u16).unwrap().get(b"owner").unwrap().private);
    assert!(m.ok("cat $MNT/blocks/0,0,0/info").starts_with("version = 28\nunderground = true\n"));
    let errors = m.ok("cat $MNT/write-errors");
    assert_eq!(errors.lines().filter(|l| !l.contains(": warning: ")).count(), 2, "{errors}");
}

/// A process holding the map database (a running server) blocks writable
/// mounts, and blocks writes made after it appears.
#[test]
fn a_running_server_blocks_writes() {
    require_fuse!("a_running_server_blocks_writes");
    let world = common::demo_world();
    let map = world.path().join("map.sqlite");
    // Open for writing, as a server does (a read-only opener is no holder).
    let rw = || std::fs::OpenOptions::new().read(true).write(true).open(&map).unwrap();
    let holder = || std::process::Command::new("sleep").arg("123").stdin(rw()).spawn().unwrap();
    let wait_seen = || {
        let t = std::time::Instant::now();
        while !worldfs_store::holders::openers(&map).iter().any(|s| s.contains("sleep 123")) {
            assert!(t.elapsed().as_secs() < 5);
        }
    };
    let mut h = holder();
    wait_seen();
    let mnt = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldfs"))
        .args(["mount", "-f"])
        .arg(world.path())
        .arg(mnt.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("pid {} (sleep 123)", h.id())), "{err}");
    // read-only always works; --force overrides
    let ro = Mounted::new(world.path(), &["ro"]);
    assert!(ro.ok("cat $MNT/blocks/0,0,0/info").contains("version = 29"));
    drop(ro);
    h.kill().unwrap();
    h.wait().unwrap();
    // A server that appears while mounted: writes fail with EROFS. With
    // guard_ms=0 the guard looks before every write, so no waiting.
    let m = Mounted::new(world.path(), &["guard_ms=0"]);
    let before = db_blob(world.path(), ORIGIN).unwrap();
    let mut h = holder();
    wait_seen();
    assert_eq!(write_py(&m, &format!("{SIGN}/fields/text"), b"while running\n"), "ERR EROFS");
    assert_eq!(db_blob(world.path(), ORIGIN).unwrap(), before);
    assert!(m.ok("cat $MNT/write-errors").contains("sleep 123"));
    h.kill().unwrap();
    h.wait().unwrap();
    assert_eq!(write_py(&m, &format!("{SIGN}/fields/text"), b"after\n"), "OK");
}

/// Blocks of the real worlds in their old versions (25, 27, 28) are edited
/// and keep their version and everything not edited.
#[test]
fn real_world_blocks_of_old_versions_are_edited_in_place() {
    require_fuse!("real_world_blocks_of_old_versions_are_edited_in_place");
    let worlds = common::real_sqlite_worlds("real_world_blocks_of_old_versions_are_edited_in_place");
    for src in worlds {
        let world = common::copy_world(&src);
        let store = SqliteStore::open(&world.path().join("map.sqlite"), true).unwrap();
        // A generated block with more than one node type, and one with metadata.
        let all = store.scan_after(None, 1 << 30).unwrap();
        drop(store);
        let pick = |want_meta: bool| {
            all.iter().find(|(_, blob)| {
                let b = Block::decode(blob).unwrap();
                b.is_generated() && b.mapping.len() > 1 && (!want_meta || !b.metadata.entries.is_empty())
            })
        };
        let m = Mounted::new(world.path(), &[]);
        for (pos, blob) in [pick(false), pick(true)].into_iter().flatten() {
            let orig = Block::decode(blob).unwrap();
            let last = orig.mapping.last().unwrap();
            let name = String::from_utf8_lossy(&last.name).into_owned();
            m.ok(&format!("sed -i 's/^{} .*/{} worldfs:renamed/' $MNT/blocks/{pos}/names", last.id, last.id));
            let new = db_block(world.path(), *pos);
            assert_eq!(new.version, orig.version, "{} {pos}", src.display());
            assert_eq!(new.mapping.last().unwrap().name, b"worldfs:renamed", "{} {pos} renaming {name}", src.display());
            let mut expect = orig.clone();
            expect.mapping.last_mut().unwrap().name = b"worldfs:renamed".to_vec();
            assert_eq!(new, expect, "{} {pos}: more than the name changed", src.display());
            if let Some(e) = orig.metadata.entries.first() {
                let dir = worldfs::view::meta_dir_name(*pos, e.pos);
                m.ok(&format!("echo 'set by worldfs' > $MNT/blocks/{pos}/meta/{dir}/fields/worldfs_note"));
                let new = db_block(world.path(), *pos);
                assert_eq!(new.version, orig.version);
                let ne = new.metadata.get(e.pos).unwrap();
                assert_eq!(ne.get(b"worldfs_note").unwrap().value, b"set by worldfs");
                assert_eq!(ne.vars.len(), e.vars.len() + 1);
                assert_eq!(new.metadata.entries.len(), orig.metadata.entries.len());
            }
            eprintln!("{}: edited block {pos} (version {})", src.display(), orig.version);
        }
        // Only warnings: the made-up name is in no block of the real world.
        let errors = m.ok("cat $MNT/write-errors");
        assert!(
            errors.lines().all(|l| l.contains("warning: written, but 'worldfs:renamed' appears nowhere")),
            "{errors}"
        );
    }
}

/// A database that stays locked past the busy timeout: the commit fails
/// with EIO and changes nothing (mounted with --force, so that the guard
/// lets the locking process be).
#[test]
fn a_locked_database_gives_eio() {
    require_fuse!("a_locked_database_gives_eio");
    use std::os::fd::IntoRawFd;
    let world = common::demo_world();
    let before = db_blob(world.path(), ORIGIN).unwrap();
    let m = Mounted::with_args(world.path(), &["--force"]);
    // Open before the lock: lookups need the database too.
    let f =
        std::fs::OpenOptions::new().write(true).truncate(true).open(m.path(&format!("{SIGN}/fields/text"))).unwrap();
    let map = world.path().join("map.sqlite");
    let mut locker = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3,time; c=sqlite3.connect('{}', isolation_level=None); c.execute('BEGIN EXCLUSIVE'); \
             print('locked', flush=True); time.sleep(8)",
            map.display()
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(locker.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let fd = f.into_raw_fd();
    // SAFETY: `fd` is an open descriptor this test owns (closed here); the
    // buffer is a static of 7 bytes; errno is this thread's.
    let (w, c, errno) = unsafe {
        let w = libc::write(fd, b"locked\n".as_ptr().cast(), 7);
        let c = libc::close(fd);
        (w, c, *libc::__errno_location())
    };
    locker.kill().unwrap();
    locker.wait().unwrap();
    assert_eq!((w, c, errno), (7, -1, libc::EIO));
    assert_eq!(db_blob(world.path(), ORIGIN).unwrap(), before);
    let errors = m.ok("cat $MNT/write-errors");
    assert!(errors.contains("locked"), "{errors}");
}

/// `layers` drawn in an editor: vim replaces one character of a level and
/// adds a legend line; sed -i swaps a character for another everywhere.
#[test]
fn layers_are_drawn_with_vim_and_sed() {
    require_fuse!("layers_are_drawn_with_vim_and_sed");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let before = db_block(world.path(), ORIGIN);
    let layers = m.ok("cat $MNT/blocks/0,0,0/layers");
    assert!(layers.starts_with("# layers: 16 x 16 x 16 nodes"), "{layers}");
    assert!(layers.contains("\n. air\n"), "{layers}");
    // vim: a legend line for a new name, then the first character of the
    // bottom level's first row (node 0,0,15) drawn with it.
    if has_tool("vim") {
        let home = tempfile::tempdir().unwrap();
        m.ok(&format!(
            "cd $MNT/blocks/0,0,0 && HOME={} TERM=dumb vim -es -c '/^\\. air$/a|Q default:mese' \
             -c '/^y=0$/+1s/^./Q/' -c wq layers </dev/null >/dev/null 2>&1; true",
            home.path().display()
        ));
        let b = db_block(world.path(), ORIGIN);
        let i = worldfs_codec::luanti::block::node_index(0, 0, 15);
        assert_eq!(b.name_of(b.param0[i]), Some(&b"default:mese"[..]), "{}", m.refusals());
        let changed = (0..4096).filter(|&j| b.param0[j] != before.param0[j] || b.param2[j] != before.param2[j]).count();
        assert_eq!(changed, 1);
        assert_eq!(m.ok("ls -A $MNT/blocks/0,0,0 | grep -c layers"), "1\n", "no swap file left");
    } else {
        common::skip("vim part", "vim", "vim not installed");
    }
    // sed -i: every air node of the levels becomes the legend's new name.
    let legend_char = m.ok("grep -m1 ' default:cobble$' $MNT/blocks/0,0,0/layers || true");
    let c = legend_char.chars().next().expect("the demo block has cobble");
    let was = db_block(world.path(), ORIGIN);
    m.ok(&format!("sed -i '/^y=1$/,/^y=2$/ s/\\./{c}/g' $MNT/blocks/0,0,0/layers"));
    let b = db_block(world.path(), ORIGIN);
    let cobble = b.mapping.iter().find(|e| e.name == b"default:cobble").unwrap().id;
    let mut turned = 0;
    for i in 0..4096 {
        let (_, y, _) = worldfs_codec::luanti::block::index_xyz(i);
        if y == 1 && was.name_of(was.param0[i]) == Some(b"air") {
            assert_eq!(b.param0[i], cobble);
            turned += 1;
        } else {
            assert_eq!(b.name_of(b.param0[i]), was.name_of(was.param0[i]));
        }
    }
    assert!(turned > 0);
    // A drawing the legend does not cover is refused with line and column.
    let (code, _, _) = m.sh("sed -i '/^y=3$/{n;s/^./%/}' $MNT/blocks/0,0,0/layers");
    assert_ne!(code, 0);
    assert!(m.refusals().contains("blocks/0,0,0/layers: line"), "{}", m.refusals());
    assert!(m.refusals().contains("'%' is not in the legend"), "{}", m.refusals());
}
