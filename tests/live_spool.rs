//! The worldfs_live mod never trusts its spool: requests put straight into
//! `worldfs-live/requests/` (not by a mount) that are cut short, garbled,
//! out of range, name what the server lacks, or disagree with the game are
//! answered "invalid" or "stale" and change nothing, however much of them
//! was good; the server keeps running and stops cleanly, and the database
//! holds only what was accepted. The real server (Debian's 5.6.1,
//! headless) runs the mod; the probe mod (tests/fixtures/live/probe.lua)
//! says what the game has. The good request every case starts from is made
//! by the mount's own request builder and is applied at the end, so each
//! refusal is the damage's doing.

use crate::common;

use common::live::{LiveServer, stored_block, stored_node};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worldfs_codec::luanti::Block;
use worldfs_codec::luanti::block::node_index;
use worldfs_store::BlockPos;
use worldfs_store::live::request;

const CHEST: [i32; 3] = worldfs::worlds::luanti::demo::CHEST;
const SIGN: [i32; 3] = worldfs::worlds::luanti::demo::SIGN;
/// A node of the demo's origin block that is air.
const AIR: [i32; 3] = [5, 3, 5];
/// A wall node of the demo's house (cobblestone).
const WALL: [i32; 3] = [2, 1, 1];

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Requests written into the spool as a mount writes them (a temporary
/// file renamed to `ID.req`), and the mod's replies.
struct Spool {
    dir: PathBuf,
    sent: std::cell::Cell<u32>,
}

impl Spool {
    fn new(world: &Path) -> Spool {
        Spool { dir: world.join("worldfs-live"), sent: 0.into() }
    }

    /// The mod's reply to `text` (its first line), waiting at most 10 s.
    fn send(&self, text: &[u8]) -> String {
        self.sent.set(self.sent.get() + 1);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let id = format!("{nanos:020}-spooltest-{}", self.sent.get());
        let tmp = self.dir.join("requests").join(format!(".{id}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, self.dir.join("requests").join(format!("{id}.req"))).unwrap();
        let reply = self.dir.join("replies").join(&id);
        let start = Instant::now();
        loop {
            if let Ok(r) = std::fs::read_to_string(&reply) {
                std::fs::remove_file(&reply).unwrap();
                let first = r.lines().next().unwrap_or_default();
                // "ok N": the request's number in this server run.
                if first.strip_prefix("ok ").is_some_and(|n| n.parse::<u64>().is_ok()) {
                    return "ok".into();
                }
                return first.to_string();
            }
            let shown = String::from_utf8_lossy(&text[..text.len().min(300)]);
            assert!(start.elapsed() < Duration::from_secs(10), "no reply to {shown:?} ({} bytes)", text.len());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// What the game has of everything the good request touches, asked in
/// one probe step: the nodes ("node X Y Z NAME PARAM2"), the chest's and
/// the sign's metadata, the timer.
fn game_state(server: &LiveServer) -> Vec<String> {
    let mut ask: Vec<String> =
        [AIR, WALL, [9, 4, 4], [-10, -10, -10]].iter().map(|[x, y, z]| format!("node {x} {y} {z}")).collect();
    for [x, y, z] in [CHEST, SIGN] {
        ask.push(format!("meta {x} {y} {z}"));
    }
    ask.push(format!("timer {} {} {}", AIR[0], AIR[1], AIR[2]));
    let mut lines = server.ask(&ask, Duration::from_secs(10));
    // Without param1: the server computes the light of air and the like
    // when it likes (the mod does not compare it either).
    for l in &mut lines[..4] {
        let w: Vec<&str> = l.split(' ').collect();
        *l = format!("{} {}", w[..5].join(" "), w[6]);
    }
    // The probe lists fields in Lua's pairs() order.
    lines[4..].sort();
    lines
}

/// The name a `game_state` node line gives.
fn name_in(line: &str) -> &str {
    line.split(' ').nth(4).unwrap_or_default()
}

/// The good request: block 0,0,0 as stored, changed by what users do
/// through a mount (a node, the walls' name, a sign's text, a chest's
/// items, a timer), as the mount's request builder writes it; and the
/// request that changes it back.
fn good_request(world: &Path) -> (String, String) {
    let pos = BlockPos::new(0, 0, 0);
    let old = stored_block(world, pos).expect("the demo's origin block");
    let mut new: Block = old.clone();
    let at = |[x, y, z]: [i32; 3]| node_index(x as usize, y as usize, z as usize);
    worldfs::view::parse::apply_node(&mut new, at(AIR), b"default:mese 0 0\n").unwrap();
    let renamed = worldfs::view::render::render_names(&new);
    let renamed = String::from_utf8(renamed).unwrap().replace(" default:cobble\n", " default:stonebrick\n");
    worldfs::view::parse::apply_names(&mut new, renamed.as_bytes()).unwrap();
    for e in &mut new.metadata.entries {
        if e.pos as usize == at(SIGN) {
            worldfs::view::parse::set_field(e, b"text", b"Hostile spool".to_vec()).unwrap();
        }
        if e.pos as usize == at(CHEST) {
            let inv = String::from_utf8(e.inventory.clone()).unwrap().replace("apple 12", "apple 13");
            worldfs::view::parse::apply_inventory(e, inv.as_bytes()).unwrap();
        }
    }
    worldfs::view::parse::apply_timers(pos, &mut new, b"5 3 5 300 1.5\n").unwrap();
    let text = |from: &Block, to: &Block| {
        let mut body = String::new();
        request::block_change(&mut body, pos, from, to).unwrap();
        for kind in ["node ", "meta ", "timer "] {
            assert!(body.lines().any(|l| l.starts_with(kind)), "the request has {kind}lines:\n{body}");
        }
        format!("{}{body}end\n", request::HEADER)
    };
    (text(&old, &new), text(&new, &old))
}

/// A small deterministic generator (xorshift), so a failing case can be
/// found again from its number.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `good` damaged at random in one of the ways a torn or tampered file
/// is: a byte changed, removed or doubled, a line dropped, doubled or
/// moved, the file cut.
fn damaged(good: &str, rng: &mut Rng) -> Vec<u8> {
    let mut b = good.as_bytes().to_vec();
    let mut lines: Vec<&str> = good.lines().collect();
    // A line between the header and the end line.
    let inner = |rng: &mut Rng| 1 + rng.below(lines.len() - 2);
    match rng.below(7) {
        0 => {
            let i = rng.below(b.len());
            b[i] = b"0123456789abcdefgz -*\n\x00\xff"[rng.below(23)];
        }
        1 => {
            b.remove(rng.below(b.len()));
        }
        2 => {
            let i = rng.below(b.len());
            b.insert(i, b[i]);
        }
        3 => {
            let i = inner(rng);
            lines.remove(i);
        }
        4 => {
            let i = inner(rng);
            lines.insert(i, lines[i]);
        }
        5 => {
            let (i, j) = (inner(rng), inner(rng));
            lines.swap(i, j);
        }
        _ => b.truncate(rng.below(b.len())),
    }
    if lines.len() != good.lines().count() || lines.iter().zip(good.lines()).any(|(a, b)| *a != b) {
        return lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes();
    }
    b
}

#[test]
fn requests_put_in_the_spool_by_others_are_checked_and_all_or_nothing() {
    require_minetestserver!("requests_put_in_the_spool_by_others_are_checked_and_all_or_nothing");
    let world = common::demo_world();
    let mut server = LiveServer::start(world.path(), "", true);
    let spool = Spool::new(world.path());
    let (good, back) = good_request(world.path());
    let before = game_state(&server);
    // The good request goes through and back, so what is refused below is
    // the damage's doing.
    assert_eq!(spool.send(good.as_bytes()), "ok");
    let after = game_state(&server);
    assert_eq!(name_in(&after[0]), "default:mese", "{after:?}");
    assert_eq!(name_in(&after[1]), "default:stonebrick", "{after:?}");
    assert!(after.iter().any(|l| l.contains("default:apple 13")), "{after:?}");
    assert!(after.iter().any(|l| l == "field 3 2 8 text Hostile spool"), "{after:?}");
    assert!(after.iter().any(|l| l.starts_with("timer 5 3 5 300 ")), "{after:?}");
    assert_eq!(spool.send(back.as_bytes()), "ok");
    assert_eq!(game_state(&server), before, "the way back restores the game");
    let body = good.strip_suffix("end\n").unwrap();
    let air = server.node(AIR);
    let air: Vec<&str> = air.split(' ').collect();
    assert_eq!(air[0], "air", "the demo's node {AIR:?}");
    let node = |x: &str, old: &str, new: &str| format!("node {x} {old} {new}\n");
    let air_old = format!("{} {} {}", hex(air[0]), air[1], air[2]);
    let mese = format!("{} 0 0", hex("default:mese"));
    let ids = |n: usize| vec!["0"; n].join(" ");
    // (what is wrong, the request, the reply's first word)
    let cases: Vec<(&str, String, &str)> = vec![
        ("an empty file", String::new(), "invalid"),
        ("no header", "hello\nend\n".into(), "invalid"),
        ("another protocol", good.replacen("worldfs-live 1", "worldfs-live 2", 1), "invalid"),
        ("no end line", body.to_string(), "invalid"),
        ("CRLF line ends", good.replace('\n', "\r\n"), "invalid"),
        ("a node off the map", format!("{body}{}end\n", node("99999 3 5", &air_old, &mese)), "invalid"),
        (
            "param2 over 255",
            format!("{body}{}end\n", node("6 3 5", &air_old, &format!("{} 0 256", hex("default:mese")))),
            "invalid",
        ),
        ("a name not in hex", format!("{body}{}end\n", node("6 3 5", &air_old, "default:mese 0 0")), "invalid"),
        (
            "a name the server lacks",
            format!("{body}{}end\n", node("6 3 5", &air_old, &format!("{} 0 0", hex("nosuchmod:thing")))),
            "invalid",
        ),
        (
            "a node the game holds otherwise",
            format!("{body}{}end\n", node("6 3 5", &format!("{} 0 0", hex("default:stone")), &mese)),
            "stale",
        ),
        ("meta without endmeta", format!("{body}meta 6 3 5\nnew field {} {} 0\nend\n", hex("a"), hex("b")), "invalid"),
        (
            "an item of an undeclared list",
            format!("{body}meta 6 3 5\nnew item {} 1 {}\nendmeta\nend\n", hex("main"), hex("default:dirt")),
            "invalid",
        ),
        (
            "an item past its list",
            format!(
                "{body}meta 6 3 5\nnew list {m} 2 0\nnew item {m} 3 {}\nendmeta\nend\n",
                hex("default:dirt"),
                m = hex("main")
            ),
            "invalid",
        ),
        ("a timer of NaN", format!("{body}timer 6 3 5 nan 0\nend\n"), "invalid"),
        ("a negative timer", format!("{body}timer 6 3 5 -1 0\nend\n"), "invalid"),
        (
            "a block of 4095 ids",
            format!(
                "{body}block 0 0 0\nbname old 0 {a}\nbname new 0 {a}\nbold 0*4095\nbnew 0*4096\nend\n",
                a = hex("air")
            ),
            "invalid",
        ),
        (
            "a run of 0",
            format!(
                "{body}block 0 0 0\nbname old 0 {a}\nbname new 0 {a}\nbold 0*0 0*4096\nbnew 0*4096\nend\n",
                a = hex("air")
            ),
            "invalid",
        ),
        (
            "a block id with no name",
            format!(
                "{body}block 0 0 0\nbname old 0 {a}\nbname new 0 {a}\nbold 0*4096\nbnew 7*4096\nend\n",
                a = hex("air")
            ),
            "invalid",
        ),
        ("a huge run", format!("{body}block 0 0 0\nbold 0*99999999999999999999\nend\n"), "invalid"),
        (
            "a delete of 10 ids",
            format!("{body}delete -1 -1 -1\ndname 0 {}\ndids {}\nend\n", hex("default:stone"), ids(10)),
            "invalid",
        ),
        ("a delete without ids", format!("{body}delete -1 -1 -1\ndname 0 {}\nend\n", hex("default:stone")), "invalid"),
        (
            "a delete of a block the game holds otherwise",
            format!("{body}delete -1 -1 -1\ndname 0 {}\ndids {}\nend\n", hex("air"), ids(4096)),
            "stale",
        ),
        ("a player beside blocks", format!("{body}player {}\npnew hp 5\nendplayer\nend\n", hex("bob")), "invalid"),
        ("privileges beside blocks", format!("{body}privs {} {} -\nend\n", hex("bob"), hex("fly")), "invalid"),
        ("a release beside blocks", format!("{body}release {}\nend\n", hex("bob")), "invalid"),
        ("a player without endplayer", format!("worldfs-live 1\nplayer {}\npnew hp 5\nend\n", hex("bob")), "invalid"),
        ("an unknown line", format!("{body}teleport 1 2 3\nend\n"), "invalid"),
        ("a NUL in a word", good.replacen(" 0 0\n", " 0\x000\n", 1), "invalid"),
        ("a megabyte line", format!("{body}bold {}\nend\n", ids(300_000)), "invalid"),
    ];
    for (what, text, kind) in &cases {
        let reply = spool.send(text.as_bytes());
        assert!(reply.starts_with(&format!("{kind} ")), "{what}: {reply}");
        assert_eq!(game_state(&server), before, "{what} ({reply}) changed the game");
    }
    // Damaged copies of the good request: each is answered, and one that
    // is refused changes nothing. One that is still a good request (a
    // doubled line) may be applied; later ones then find the game changed.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut state = before.clone();
    let mut applied = 0;
    for case in 0..60 {
        let text = damaged(&good, &mut rng);
        let reply = spool.send(&text);
        let now = game_state(&server);
        if reply == "ok" {
            applied += 1;
        } else {
            assert!(
                ["invalid ", "stale "].iter().any(|k| reply.starts_with(k)),
                "case {case}: {reply}\n{}",
                String::from_utf8_lossy(&text)
            );
            assert_eq!(now, state, "case {case} ({reply}) changed the game:\n{}", String::from_utf8_lossy(&text));
        }
        state = now;
    }
    eprintln!("{applied} of 60 damaged requests were still good ones");
    // Still serving and stopping cleanly; the database holds what the game
    // ended with.
    let heartbeat = std::fs::metadata(world.path().join("worldfs-live/server.json")).unwrap().modified().unwrap();
    assert!(heartbeat.elapsed().unwrap_or_default() < Duration::from_secs(3), "the heartbeat goes on");
    assert!(server.stop().success());
    for (i, p) in [AIR, WALL].into_iter().enumerate() {
        assert_eq!(stored_node(world.path(), p), name_in(&state[i]), "node {p:?} in the database");
    }
}

/// The latest window time in the mod's steps.txt (see `LiveServer::steps`).
fn last_window(server: &LiveServer) -> f64 {
    server.steps().last().map_or(0.0, |s| s.0)
}

/// The longest server step (ms) of the windows steps.txt logged after
/// `since`, once a window after `until` is logged.
fn worst_step_between(server: &LiveServer, since: f64, until: f64) -> f64 {
    let start = Instant::now();
    while last_window(server) <= until {
        assert!(start.elapsed() < Duration::from_secs(10), "steps.txt stopped: {:?}", server.steps());
        std::thread::sleep(Duration::from_millis(50));
    }
    server.steps().iter().filter(|s| s.0 > since).map(|s| s.1).fold(0.0, f64::max)
}

/// Requests the mod must not read whole or parse for long: 60 KB without
/// a newline (a pattern looking for one from every position froze the
/// server for minutes), 30 MB (read only up to its limit: never), a
/// request of more blocks or inventory slots than one step may take.
/// Each is answered "invalid" with the reason, the server keeps stepping
/// (no step over 2 s, a bound for a loaded machine, while they are
/// answered) and the good request after them is applied.
#[test]
fn oversized_and_newline_free_requests_are_answered_invalid_without_stalling() {
    require_minetestserver!("oversized_and_newline_free_requests_are_answered_invalid_without_stalling");
    let world = common::demo_world();
    let server = LiveServer::start(world.path(), "worldfs_live.log_ms = 0", true);
    let spool = Spool::new(world.path());
    let (good, back) = good_request(world.path());
    let before = game_state(&server);
    // A window logged after the server settled, to compare with.
    let start = Instant::now();
    while server.steps().len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(10), "no steps.txt");
        std::thread::sleep(Duration::from_millis(50));
    }
    let since = last_window(&server);
    let mese = format!("{} 0 0", hex("default:mese"));
    let air = format!("{} 0 0", hex("air"));
    let far_nodes: String = (0..20).map(|i| format!("node {} 3 5 {air} {mese}\n", i * 16)).collect();
    let chest = hex("main");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("60 KB without a newline", vec![b'a'; 60_000], "not a worldfs-live 1 request"),
        ("30 MB", vec![b'a'; 30 << 20], "over the limit of 1048576 (worldfs_live.max_request_bytes)"),
        (
            "a header and 2 MB without a newline",
            [b"worldfs-live 1\n".as_slice(), &[b'7'; 2 << 20]].concat(),
            "over the limit",
        ),
        (
            "a header and 900 KB without a newline",
            [b"worldfs-live 1\n".as_slice(), &[b'7'; 900_000]].concat(),
            "cut short",
        ),
        ("nodes in 20 blocks", format!("worldfs-live 1\n{far_nodes}end\n").into_bytes(), "it changes 20 blocks"),
        (
            "an inventory of 5000 slots",
            format!("worldfs-live 1\nmeta 6 3 5\nnew list {chest} 5000 0\nendmeta\nend\n").into_bytes(),
            "5000 slots in all, over the limit of 4096 (worldfs_live.max_inventory_slots)",
        ),
    ];
    for (what, text, why) in &cases {
        let reply = spool.send(text);
        assert!(reply.starts_with("invalid ") && reply.contains(why), "{what}: {reply}");
    }
    assert_eq!(game_state(&server), before, "nothing changed");
    assert_eq!(spool.send(good.as_bytes()), "ok", "the server still applies a good request");
    assert_eq!(spool.send(back.as_bytes()), "ok");
    // The most a request within the limit holds: a line for every node
    // of three blocks (param2 changed, so not the whole-block form), about
    // 1 MB; the mod logs what it took (log_ms = 0).
    let mut text = request::HEADER.to_string();
    for x in -1..=1 {
        let pos = BlockPos::new(x, -1, -1);
        let old = stored_block(world.path(), pos).expect("a demo block");
        let mut new = old.clone();
        new.param2.iter_mut().for_each(|p| *p = 1);
        request::block_change(&mut text, pos, &old, &new).unwrap();
    }
    text.push_str("end\n");
    assert!(text.len() <= 1 << 20, "{} bytes", text.len());
    assert_eq!(spool.send(text.as_bytes()), "ok", "a request within the limits");
    let log = std::fs::read_to_string(&server.log).unwrap();
    let took: Vec<&str> =
        log.lines().filter(|l| l.contains("[worldfs_live] a request of ") && l.contains(" 12288 nodes")).collect();
    eprintln!("{} bytes of node lines: {took:?}", text.len());
    let until = last_window(&server);
    let worst = worst_step_between(&server, since, until);
    eprintln!("the longest server step while the bad requests were answered: {worst:.0} ms");
    assert!(worst < 2000.0, "a step of {worst} ms: {:?}", server.steps());
    let left: Vec<_> = std::fs::read_dir(world.path().join("worldfs-live/requests")).unwrap().collect();
    assert!(left.is_empty(), "every request was taken: {left:?}");
}

/// What no live mount leaves in the spool is removed by the mod, never
/// applied: a reply and a request whose ID time lies an hour ahead, a
/// request and a reply whose names are no mount's IDs, and directories
/// named like requests (once kept forever: their time never passed, or
/// the mod never listed them).
#[test]
fn foreign_and_future_files_in_the_spool_are_removed_unapplied() {
    require_minetestserver!("foreign_and_future_files_in_the_spool_are_removed_unapplied");
    let world = common::demo_world();
    let server = LiveServer::start(world.path(), "", true);
    let dir = world.path().join("worldfs-live");
    let (good, _) = good_request(world.path());
    let ahead =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() + 3600 * 1_000_000_000;
    let future = format!("{ahead:020}-spooltest-1");
    let before = game_state(&server);
    std::fs::write(dir.join("replies").join(&future), "ok\n").unwrap();
    std::fs::write(dir.join("replies").join("junk"), "ok\n").unwrap();
    std::fs::create_dir_all(dir.join("replies/adir/inner")).unwrap();
    std::fs::create_dir_all(dir.join("requests/x.req/inner")).unwrap();
    std::fs::write(dir.join("requests/x.req/inner/f"), "x").unwrap();
    for name in [format!("{future}.req"), "notanid.req".to_string()] {
        let tmp = dir.join("requests").join(format!(".{name}.tmp"));
        std::fs::write(&tmp, &good).unwrap();
        std::fs::rename(&tmp, dir.join("requests").join(name)).unwrap();
    }
    let start = Instant::now();
    let listing = |d: &str| -> Vec<String> {
        std::fs::read_dir(dir.join(d)).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    };
    while !(listing("requests").is_empty() && listing("replies").is_empty()) {
        assert!(start.elapsed() < Duration::from_secs(10), "left: {:?} {:?}", listing("requests"), listing("replies"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(game_state(&server), before, "neither request was applied");
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("removed the directory x.req"), "{log}");
    assert!(log.contains(&format!("request {future} expired")), "{log}");
}
