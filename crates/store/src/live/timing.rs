//! Where the time of live changes goes (docs/performance.md, "the
//! breakdown of a live close()"): counters of this process (one mount per
//! daemon), a count and a total each, shown in the hidden file
//! `MNT/.worldfs-stats` as "NAME COUNT MICROSECONDS" lines (the fs core
//! writes them, fixed-width as its own), which
//! contrib/bench-live.sh reads before and after its edits. The parts the
//! mod does are measured by the mod (its answer's "took" line, see
//! contrib/worldfs_live/init.lua) and placed on this process's clock by
//! the answer file's time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// A part of a live change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// A whole change through the server (`LiveStore::apply`), from the
    /// check of what it replaces to its journal entry.
    Change,
    /// Settling the undo journal and making the request's text.
    Build,
    /// Writing the blocks of a big change the server does not hold to the
    /// database (`direct.rs`), until the question which it holds.
    Direct,
    /// Writing the request file and renaming it into the spool.
    Spool,
    /// From the rename until the mod's step began taking requests: the
    /// wait for the server's next step.
    Step,
    /// From then until the mod took this request: the requests it took
    /// before in the same step.
    Queue,
    /// The mod reading, checking and applying the request.
    Apply,
    /// From the answer file's writing until this process read it.
    Reply,
    /// After the answer: what the mount shows, the saves' state, the
    /// undo journal's entry.
    After,
}

impl Part {
    /// Every part, in the order of a change.
    pub const ALL: [Part; 9] = [
        Part::Change,
        Part::Build,
        Part::Direct,
        Part::Spool,
        Part::Step,
        Part::Queue,
        Part::Apply,
        Part::Reply,
        Part::After,
    ];

    /// Its name in `MNT/.worldfs-stats`.
    pub fn name(self) -> &'static str {
        match self {
            Part::Change => "live-change",
            Part::Build => "live-build",
            Part::Direct => "live-direct",
            Part::Spool => "live-spool",
            Part::Step => "live-step",
            Part::Queue => "live-queue",
            Part::Apply => "live-apply",
            Part::Reply => "live-reply",
            Part::After => "live-after",
        }
    }
}

struct Counter {
    count: AtomicU64,
    nanos: AtomicU64,
}

static COUNTERS: [Counter; Part::ALL.len()] =
    [const { Counter { count: AtomicU64::new(0), nanos: AtomicU64::new(0) } }; Part::ALL.len()];

/// Count `took` as part `p`.
pub fn add(p: Part, took: Duration) {
    let c = &COUNTERS[p as usize];
    c.count.fetch_add(1, Ordering::Relaxed);
    c.nanos.fetch_add(took.as_nanos().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
}

/// How many of part `p` so far, and their total time in nanoseconds.
pub fn get(p: Part) -> (u64, u64) {
    let c = &COUNTERS[p as usize];
    (c.count.load(Ordering::Relaxed), c.nanos.load(Ordering::Relaxed))
}

/// Every part's counters, counted or not (the stats file has a line for
/// each, so that its length does not change): name, count, nanoseconds.
pub fn counters() -> Vec<(&'static str, (u64, u64))> {
    Part::ALL.into_iter().map(|p| (p.name(), get(p))).collect()
}

/// The mod's times of a request whose answer was written at `written`
/// and read at `read`, renamed into the spool at `renamed`: `queued_us`
/// after its step began taking requests, the mod took it and spent
/// `handled_us` on it (its "took" line). Counted as `Step`, `Queue`,
/// `Apply` and `Reply`.
pub fn answered(renamed: SystemTime, written: SystemTime, read: SystemTime, queued_us: u64, handled_us: u64) {
    let since = |later: SystemTime, earlier: SystemTime| later.duration_since(earlier).unwrap_or_default();
    let (queued, handled) = (Duration::from_micros(queued_us), Duration::from_micros(handled_us));
    // `written`: when the reply watch saw the answer written, else its
    // file's time (the kernel's coarse clock: a few ms early, which then
    // counts as pickup).
    let taken = since(written, renamed).saturating_sub(handled);
    add(Part::Step, taken.saturating_sub(queued));
    add(Part::Queue, queued.min(taken));
    add(Part::Apply, handled);
    add(Part::Reply, since(read, written));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_split_into_its_parts() {
        let before = |p| get(p);
        let (step, queue, apply, reply) =
            (before(Part::Step), before(Part::Queue), before(Part::Apply), before(Part::Reply));
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ms = Duration::from_millis;
        // Renamed at t, the step began taking at t+60 ms, took it 5 ms
        // later, handled it in 2 ms, answered at t+67; read at t+70.
        answered(t, t + ms(67), t + ms(70), 5_000, 2_000);
        let grew = |p, (n, ns): (u64, u64)| {
            let (n2, ns2) = get(p);
            (n2 - n, (ns2 - ns) / 1_000_000)
        };
        // Other tests of this process may count too: at least ours.
        assert!(grew(Part::Step, step).0 >= 1 && grew(Part::Step, step).1 >= 60);
        assert!(grew(Part::Queue, queue).1 >= 5);
        assert!(grew(Part::Apply, apply).1 >= 2);
        assert!(grew(Part::Reply, reply).1 >= 3);
        assert!(counters().iter().any(|(name, (n, _))| *name == "live-step" && *n >= 1));
        assert_eq!(counters().len(), Part::ALL.len(), "every part has its line, counted or not");
    }
}
