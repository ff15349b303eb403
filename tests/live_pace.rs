//! The worldfs_live mod's pace (contrib/worldfs_live/pace.lua): how many
//! blocks it may change per map save interval. A pure Lua function, run
//! here under lua5.1 with sequences of what the mod sees at each save (the
//! save step's length, whether a step was late, the blocks changed,
//! whether the pace held the mod back): no server, no timing.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

const PACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/worldfs_live/pace.lua");
const MOD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/worldfs_live");

fn lua() -> Option<&'static str> {
    ["lua5.1", "lua5.4"].into_iter().find(|l| common::mount::which(l).is_some())
}

/// One interval as the mod sees it at the save that ends it.
#[derive(Clone, Copy)]
struct Seen {
    save_ms: f64,
    late: bool,
    changed: u32,
    held: bool,
    /// The typical step without a save (ms); None: one server step.
    typical_ms: Option<f64>,
}

/// A short save step after an interval in which the pace held the mod back.
const BUSY_SHORT: Seen = Seen { save_ms: 90.0, late: false, changed: 100, held: true, typical_ms: None };
/// A save step of two server steps (the server step is 90 ms) after 100
/// blocks changed: 1.8 ms a block, so 40 fit in 0.8 of a step.
const LATE_SAVE: Seen = Seen { save_ms: 180.0, ..BUSY_SHORT };
/// A late step of the mod's in the interval; the save step itself short.
const LATE_STEP: Seen = Seen { late: true, ..BUSY_SHORT };

/// The pace after each interval of `seq`, from limits (start, floor, cap)
/// and a 90 ms server step: (blocks, what happened).
fn run(limits: (u32, u32, u32), seq: &[Seen]) -> Vec<(u32, String)> {
    let lua = lua().expect("lua");
    let mut script = format!(
        "local pace = dofile({PACE:?})\nlocal limits = pace.limits({}, {}, {}, 90)\nlocal s = pace.new(limits)\n\
         print(s.blocks .. ' start')\nlocal what\n",
        limits.0, limits.1, limits.2
    );
    for s in seq {
        script += &format!(
            "s, what = pace.after_save(s, limits, {{save_ms = {}, late = {}, changed = {}, held = {}, typical_ms = {}}})\n\
             print(s.blocks .. ' ' .. what)\n",
            s.save_ms,
            s.late,
            s.changed,
            s.held,
            s.typical_ms.map_or("nil".to_string(), |t| t.to_string())
        );
    }
    let mut child =
        Command::new(lua).arg("-").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{lua}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, what) = l.split_once(' ').unwrap();
            (n.parse().unwrap(), what.to_string())
        })
        .collect()
}

fn blocks(steps: &[(u32, String)]) -> Vec<u32> {
    steps.iter().map(|s| s.0).collect()
}

macro_rules! require_lua {
    ($test:expr) => {
        if lua().is_none() {
            common::skip($test, "lua", "no lua5.1/lua5.4 (apt install lua5.1)");
            return;
        }
    };
}

#[test]
fn the_pace_doubles_while_saves_are_short_and_stops_at_the_cap() {
    require_lua!("the_pace_doubles_while_saves_are_short_and_stops_at_the_cap");
    let steps = run((128, 16, 1024), &[BUSY_SHORT; 5]);
    assert_eq!(blocks(&steps), [128, 256, 512, 1024, 1024, 1024]);
    assert_eq!(steps[3].1, "grow");
    assert_eq!(steps[4].1, "keep", "at the cap it stays");
}

#[test]
fn the_pace_halves_after_a_late_step_down_to_the_floor() {
    require_lua!("the_pace_halves_after_a_late_step_down_to_the_floor");
    let steps = run((128, 16, 1024), &[LATE_STEP; 5]);
    assert_eq!(blocks(&steps), [128, 64, 32, 16, 16, 16]);
    assert!(steps[1..].iter().all(|s| s.1 == "halve"), "{steps:?}");
    // Halving a pace that is not a power of two rounds down, to the floor at least.
    assert_eq!(blocks(&run((100, 30, 1024), &[LATE_STEP, LATE_STEP])), [100, 50, 30]);
}

/// A save step over 1.5 server steps shows what a block costs to save; the
/// pace drops to what fits in 0.8 of a step at that cost (one overflow,
/// not one at every growth), grows back by an eighth while the saves at
/// that bound stay within one server step, and starts over after a reset.
#[test]
fn a_long_save_fits_the_pace_to_its_cost_until_a_reset() {
    require_lua!("a_long_save_fits_the_pace_to_its_cost_until_a_reset");
    let long = Seen { save_ms: 180.0, changed: 500, ..BUSY_SHORT };
    let idle = Seen { changed: 0, held: false, ..BUSY_SHORT };
    let seq = [BUSY_SHORT, BUSY_SHORT, long, BUSY_SHORT, BUSY_SHORT, idle, BUSY_SHORT, BUSY_SHORT];
    let steps = run((128, 16, 1024), &seq);
    // 500 blocks in 180 ms: 72 ms hold 200; saves within a step: +1/8.
    assert_eq!(blocks(&steps), [128, 256, 512, 200, 225, 254, 128, 256, 512]);
    assert_eq!(steps[3].1, "fit");
    assert_eq!(steps[4].1, "grow");
    assert_eq!(steps[6].1, "reset");
    // At the bound, a save step over one server step (but short) keeps it.
    let over_one = Seen { save_ms: 100.0, ..BUSY_SHORT };
    let steps = run((512, 16, 1024), &[long, over_one, over_one]);
    assert_eq!(blocks(&steps), [512, 200, 200, 200]);
    assert_eq!(steps[2].1, "keep", "no growth past what the cost allows");
    let dear = Seen { save_ms: 1000.0, changed: 10, ..BUSY_SHORT };
    assert_eq!(blocks(&run((128, 16, 1024), &[dear, BUSY_SHORT])), [128, 16, 18]);
    // A long save never raises the pace at once, however cheap its blocks.
    let many = Seen { save_ms: 140.0, changed: 5000, ..BUSY_SHORT };
    assert_eq!(blocks(&run((128, 16, 1024), &[many])), [128, 128]);
    assert_eq!(blocks(&run((128, 16, 1024), &[LATE_SAVE])), [128, 40]);
}

/// Each long save sets the bound from its own cost: a cheaper one later
/// (the load went) lets the pace grow back by quarters up to it.
#[test]
fn a_later_cheaper_save_lets_the_pace_grow_back() {
    require_lua!("a_later_cheaper_save_lets_the_pace_grow_back");
    let long = Seen { save_ms: 180.0, changed: 500, ..BUSY_SHORT };
    let cheap_long = Seen { save_ms: 140.0, changed: 1000, ..BUSY_SHORT };
    let middling = Seen { save_ms: 100.0, ..BUSY_SHORT };
    // 200 after the first; 1000 in 140 ms: 514 fit; quarters up to it.
    let seq = [long, cheap_long, middling, middling, middling, middling, middling];
    let steps = run((512, 16, 1024), &seq);
    assert_eq!(blocks(&steps), [512, 200, 200, 250, 313, 392, 490, 514]);
    assert_eq!(steps[2].1, "fit");
}

/// A loaded machine makes every step long: the typical step without a
/// save, over one server step, is the load's and is taken off the save
/// step before it is judged. A save step of 180 ms for 500 blocks is a
/// long one on a quiet server (200 fit) but, where every step takes 130
/// ms, a save of 140 ms (257 fit); one of 170 ms there is neither long nor
/// short (kept), and one of 135 ms short (growth).
#[test]
fn the_typical_step_is_taken_off_the_save_step_before_fitting() {
    require_lua!("the_typical_step_is_taken_off_the_save_step_before_fitting");
    let long = Seen { save_ms: 180.0, changed: 500, ..BUSY_SHORT };
    let loaded = |save_ms| Seen { save_ms, changed: 500, typical_ms: Some(130.0), ..BUSY_SHORT };
    assert_eq!(run((512, 16, 1024), &[long]).last().unwrap(), &(200, "fit".to_string()));
    assert_eq!(run((512, 16, 1024), &[loaded(180.0)]).last().unwrap(), &(257, "fit".to_string()));
    assert_eq!(run((512, 16, 1024), &[loaded(170.0)]).last().unwrap(), &(512, "keep".to_string()));
    assert_eq!(run((128, 16, 1024), &[loaded(135.0)]).last().unwrap(), &(256, "grow".to_string()));
    // A typical step under one server step takes nothing off.
    let quick = Seen { typical_ms: Some(40.0), ..long };
    assert_eq!(run((512, 16, 1024), &[quick]).last().unwrap(), &(200, "fit".to_string()));
}

/// The work a block adds to the pace: one the first time it changes in an
/// interval, nothing after, and one more for each 16 KiB of metadata the
/// request writes in it; the typical step is the median of the recent
/// steps without a save.
#[test]
fn the_pace_counts_work_not_blocks() {
    require_lua!("the_pace_counts_work_not_blocks");
    let lua = lua().expect("lua");
    let script = format!(
        "local pace = dofile({PACE:?})\n\
         print(pace.block_work(true, 0), pace.block_work(false, 0), pace.block_work(true, 16383), \
         pace.block_work(true, 16384), pace.block_work(false, 10 * 1024 * 1024), pace.block_work(true, nil))\n\
         print(pace.typical({{}}), pace.typical({{90}}), pace.typical({{95, 300, 88, 91, 90}}), \
         pace.typical({{100, 90, 80, 120}}))\n"
    );
    let mut child =
        Command::new(lua).arg("-").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{lua}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["1", "0", "1", "2", "640", "1"], "{text}");
    assert_eq!(lines[1], ["nil", "90", "91", "90"], "{text}");
}

#[test]
fn after_a_drop_the_pace_grows_by_a_quarter() {
    require_lua!("after_a_drop_the_pace_grows_by_a_quarter");
    let seq = [BUSY_SHORT, BUSY_SHORT, LATE_STEP, BUSY_SHORT, BUSY_SHORT, BUSY_SHORT];
    // 128 → 256 → 512, a late step: 256, then 320, 400, 500 (not 512 again at once).
    assert_eq!(blocks(&run((128, 16, 1024), &seq)), [128, 256, 512, 256, 320, 400, 500]);
    // The quarter steps stop at the cap too.
    let seq = [LATE_STEP, BUSY_SHORT, BUSY_SHORT, BUSY_SHORT, BUSY_SHORT];
    assert_eq!(blocks(&run((512, 16, 600), &seq)), [512, 256, 320, 400, 500, 600]);
    assert_eq!(blocks(&run((512, 16, 450), &seq)), [450, 225, 282, 353, 442, 450]);
}

#[test]
fn the_pace_is_kept_when_it_did_not_hold_the_mod_back_or_the_save_step_was_neither_short_nor_long() {
    require_lua!("the_pace_is_kept_when_it_did_not_hold_the_mod_back_or_the_save_step_was_neither_short_nor_long");
    let not_held = Seen { held: false, ..BUSY_SHORT };
    // Up to 1.2 server steps (108 ms) is short; over 1.5 (135 ms) is long.
    let middling = Seen { save_ms: 120.0, ..BUSY_SHORT };
    let edge_short = Seen { save_ms: 108.0, ..BUSY_SHORT };
    let edge_long = Seen { save_ms: 135.0, ..BUSY_SHORT };
    let steps = run((128, 16, 1024), &[not_held, middling, edge_long, edge_short]);
    assert_eq!(blocks(&steps), [128, 128, 128, 128, 256]);
    assert_eq!(steps[1].1, "keep");
    assert_eq!(steps[3].1, "keep");
    // A late step halves even when the pace did not hold the mod back.
    assert_eq!(blocks(&run((128, 16, 1024), &[Seen { held: false, ..LATE_STEP }])), [128, 64]);
}

#[test]
fn an_interval_without_changes_puts_the_pace_back_to_its_start() {
    require_lua!("an_interval_without_changes_puts_the_pace_back_to_its_start");
    let idle = Seen { changed: 0, held: false, ..BUSY_SHORT };
    let seq = [BUSY_SHORT, BUSY_SHORT, idle, BUSY_SHORT, LATE_STEP, idle, BUSY_SHORT, BUSY_SHORT];
    let steps = run((128, 16, 1024), &seq);
    // After the reset it doubles again: the halving before it is forgotten.
    assert_eq!(blocks(&steps), [128, 256, 512, 128, 256, 128, 128, 256, 512]);
    assert_eq!(steps[3].1, "reset");
    // Even a late save step of an idle interval (the server's own) is no reason to drop.
    assert_eq!(blocks(&run((128, 16, 1024), &[Seen { save_ms: 500.0, ..idle }])), [128, 128]);
}

#[test]
fn the_limits_keep_start_between_floor_and_cap() {
    require_lua!("the_limits_keep_start_between_floor_and_cap");
    assert_eq!(blocks(&run((4, 16, 1024), &[])), [16]);
    assert_eq!(blocks(&run((5000, 16, 1024), &[BUSY_SHORT])), [1024, 1024]);
    // A cap under the floor is the floor: the pace is then fixed.
    assert_eq!(blocks(&run((128, 64, 8), &[BUSY_SHORT, LATE_SAVE, LATE_STEP])), [64, 64, 64, 64]);
}

/// Each setting in the mod's settingtypes.txt has the default init.lua
/// uses when minetest.conf does not set it.
#[test]
fn the_settings_documented_are_the_ones_the_mod_reads() {
    let types = std::fs::read_to_string(format!("{MOD_DIR}/settingtypes.txt")).unwrap();
    let init = std::fs::read_to_string(format!("{MOD_DIR}/init.lua")).unwrap();
    let mut n = 0;
    for line in types.lines().filter(|l| l.starts_with("worldfs_live.")) {
        let name = line.split(' ').next().unwrap();
        let (_, typed) = line.split_once(") int ").or_else(|| line.split_once(") float ")).unwrap();
        let default = typed.split(' ').next().unwrap();
        let read = format!("core.settings:get(\"{name}\")) or {default}");
        assert!(init.contains(&read), "init.lua does not read {name} with default {default}");
        n += 1;
    }
    assert_eq!(n, 9);
    assert_eq!(init.matches("core.settings:get(\"worldfs_live.").count(), n, "a setting settingtypes.txt lacks");
}

const SAVES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/contrib/worldfs_live/saves.lua");

/// The steps (1-based) after which the server saves, as 5.6.1's
/// Server::AsyncRunStep counts: a float timer, each step's dtime added,
/// compared with the interval read as a float, set to 0 when it reaches it.
fn server_saves(interval: &str, dtimes: &[f32]) -> Vec<usize> {
    let interval: f32 = interval.parse().unwrap();
    let mut counter = 0.0f32;
    let mut out = Vec::new();
    for (i, d) in dtimes.iter().enumerate() {
        counter += d;
        if counter >= interval {
            counter = 0.0;
            out.push(i + 1);
        }
    }
    out
}

/// The same as saves.lua follows them, fed each dtime as the engine hands
/// it to Lua (the float's exact value as a double): the steps it says end
/// with a save, and after each step the number of the last request the
/// saves wrote (step i applies request i).
fn mod_saves(interval: &str, dtimes: &[f32]) -> (Vec<usize>, Vec<u64>) {
    let lua = lua().expect("lua");
    let list: Vec<String> = dtimes.iter().map(|d| format!("{:?}", f64::from(*d))).collect();
    let script = format!(
        "local saves = dofile({SAVES:?})\nlocal s = saves.new({interval})\nlocal dt = {{{}}}\n\
         for i, d in ipairs(dt) do\n  saves.step(s, d)\n  saves.applied(s, i)\n  \
         print((s.saving and 'save ' or 'step ') .. s.saved)\nend\n",
        list.join(",")
    );
    let mut child =
        Command::new(lua).arg("-").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{lua}: {}", String::from_utf8_lossy(&out.stderr));
    let mut saves = Vec::new();
    let mut saved = Vec::new();
    for (i, line) in String::from_utf8(out.stdout).unwrap().lines().enumerate() {
        let (what, n) = line.split_once(' ').unwrap();
        if what == "save" {
            saves.push(i + 1);
        }
        saved.push(n.parse().unwrap());
    }
    (saves, saved)
}

/// The mod knows which step ends with a map save exactly as the server
/// counts (single precision: with 0.1 s steps and a 0.3 s interval the
/// float timer reaches it at the third step, a double one only at the
/// fourth), over long runs of uneven steps; and the number of the last
/// request a save wrote is known from the step after it.
#[test]
fn the_mod_counts_the_map_saves_as_the_server_does() {
    if lua().is_none() {
        common::skip("the_mod_counts_the_map_saves_as_the_server_does", "lua", "lua5.1 is not installed");
        return;
    }
    let tenth = vec![0.1f32; 12];
    assert_eq!(server_saves("0.3", &tenth), [3, 6, 9, 12], "the float timer");
    assert_eq!(mod_saves("0.3", &tenth).0, [3, 6, 9, 12]);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut uneven = Vec::new();
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Mostly the 90 ms step with jitter, at times a long or a tiny one.
        let d = match x % 50 {
            0 => 0.5 + (x >> 20) as f32 % 1000.0 / 1000.0,
            1 => 0.001,
            _ => 0.09 + ((x >> 8) % 2000) as f32 / 100_000.0,
        };
        uneven.push(d);
    }
    for interval in ["5.3", "1", "0.3", "0.09"] {
        let want = server_saves(interval, &uneven);
        let (got, saved) = mod_saves(interval, &uneven);
        assert_eq!(got, want, "interval {interval}");
        // After the step following a save, the requests of the saving
        // step and before it are known written.
        for &s in &want {
            if s < uneven.len() {
                assert_eq!(saved[s], s as u64, "interval {interval}: after the save at step {s}");
            }
        }
    }
}
