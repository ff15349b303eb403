//! What the daemon did since it started: how many requests of each kind
//! the kernel sent and how long each took in the daemon (from its arrival
//! to the end of its reply), and the parts of that work that matter for a
//! walk (reading a block from the store, decoding it, rendering a file,
//! pushing a page into the kernel's cache, writing a reply). Counters
//! only, updated with one atomic add each, and shown in the hidden file
//! `MNT/.worldfs-stats` (`WorldFs::stats_text`), which benchmarks read
//! before and after a command to know its requests per file.
//!
//! The counters are the process's (one mount per daemon): cores built in
//! one process (the in-process tests) share them, so those compare
//! differences only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A kind of FUSE request, named as in the kernel's protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lookup,
    Forget,
    Getattr,
    Setattr,
    Readlink,
    Mknod,
    Mkdir,
    Unlink,
    Rmdir,
    Rename,
    Open,
    Read,
    Write,
    Statfs,
    Release,
    Fsync,
    Xattr,
    Flush,
    Opendir,
    Readdir,
    Fsyncdir,
    Create,
    Ioctl,
    Readdirplus,
    Symlink,
}

impl Op {
    pub(crate) const ALL: [Op; 25] = [
        Op::Lookup,
        Op::Forget,
        Op::Getattr,
        Op::Setattr,
        Op::Readlink,
        Op::Mknod,
        Op::Mkdir,
        Op::Unlink,
        Op::Rmdir,
        Op::Rename,
        Op::Open,
        Op::Read,
        Op::Write,
        Op::Statfs,
        Op::Release,
        Op::Fsync,
        Op::Xattr,
        Op::Flush,
        Op::Opendir,
        Op::Readdir,
        Op::Fsyncdir,
        Op::Create,
        Op::Ioctl,
        Op::Readdirplus,
        Op::Symlink,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::Lookup => "LOOKUP",
            Op::Forget => "FORGET",
            Op::Getattr => "GETATTR",
            Op::Setattr => "SETATTR",
            Op::Readlink => "READLINK",
            Op::Mknod => "MKNOD",
            Op::Mkdir => "MKDIR",
            Op::Unlink => "UNLINK",
            Op::Rmdir => "RMDIR",
            Op::Rename => "RENAME",
            Op::Open => "OPEN",
            Op::Read => "READ",
            Op::Write => "WRITE",
            Op::Statfs => "STATFS",
            Op::Release => "RELEASE",
            Op::Fsync => "FSYNC",
            Op::Xattr => "XATTR",
            Op::Flush => "FLUSH",
            Op::Opendir => "OPENDIR",
            Op::Readdir => "READDIR",
            Op::Fsyncdir => "FSYNCDIR",
            Op::Create => "CREATE",
            Op::Ioctl => "IOCTL",
            Op::Readdirplus => "READDIRPLUS",
            Op::Symlink => "SYMLINK",
        }
    }
}

/// A part of the work of requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading blocks from the store (with their neighbours where the
    /// store reads ahead).
    Fetch,
    /// Decoding a block's blob.
    Decode,
    /// Rendering a file from a decoded block.
    Render,
    /// Storing a looked-up file's content in the kernel's page cache
    /// (done by a thread of its own, after the reply).
    Push,
    /// Writing a reply to the kernel (part of the request's time).
    Reply,
}

impl Phase {
    pub(crate) const ALL: [Phase; 5] = [Phase::Fetch, Phase::Decode, Phase::Render, Phase::Push, Phase::Reply];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Fetch => "fetch",
            Phase::Decode => "decode",
            Phase::Render => "render",
            Phase::Push => "push",
            Phase::Reply => "reply",
        }
    }
}

#[derive(Default)]
struct Counter {
    count: AtomicU64,
    nanos: AtomicU64,
}

impl Counter {
    fn add(&self, took: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (self.count.load(Ordering::Relaxed), self.nanos.load(Ordering::Relaxed))
    }
}

pub struct Stats {
    ops: [Counter; Op::ALL.len()],
    phases: [Counter; Phase::ALL.len()],
    started: Instant,
}

static STATS: std::sync::LazyLock<Stats> =
    std::sync::LazyLock::new(|| Stats { ops: Default::default(), phases: Default::default(), started: Instant::now() });

/// The process's counters.
pub fn stats() -> &'static Stats {
    &STATS
}

/// Count a request of kind `op` that arrived at `since`.
pub fn request(op: Op, since: Instant) {
    STATS.ops[op as usize].add(since.elapsed());
}

/// Count a part of the work that took `took`.
pub(crate) fn phase(p: Phase, took: Duration) {
    STATS.phases[p as usize].add(took);
}

/// Run `f`, counting its time as `p`.
pub fn timed<T>(p: Phase, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let r = f();
    phase(p, t0.elapsed());
    r
}

impl Stats {
    /// Requests of kind `op` so far and their total time in nanoseconds.
    pub(crate) fn op(&self, op: Op) -> (u64, u64) {
        self.ops[op as usize].get()
    }

    /// Parts of kind `p` so far and their total time in nanoseconds.
    pub(crate) fn phase(&self, p: Phase) -> (u64, u64) {
        self.phases[p as usize].get()
    }

    /// The file `MNT/.worldfs-stats`: a line per kind of request and per
    /// part of the work, "NAME COUNT MICROSECONDS" (the total time, so
    /// that the difference of two readings is the work between). Every
    /// line is there, with numbers of a fixed width, so that the text is
    /// always as long: the kernel learns its size from a GETATTR and cuts
    /// the READ that follows to it, and the requests between the two
    /// (that GETATTR's own reply) change the counters; a text that grew
    /// meanwhile lost its last digits (a total ten times too small).
    pub fn text(&self) -> String {
        self.text_with(&[])
    }

    /// `text` and then a line for each of the tree's own counters
    /// (`extra`: name, (count, nanoseconds)), as fixed-width as the rest.
    pub fn text_with(&self, extra: &[(&str, (u64, u64))]) -> String {
        let mut s = format!(
            "# worldfs: requests since start ({:>12} s): kind, count, total microseconds in the daemon\n",
            self.started.elapsed().as_secs()
        );
        let mut line = |name: &str, (n, ns): (u64, u64)| {
            s.push_str(&format!("{name} {n:>20} {:>20}\n", ns / 1000));
        };
        for op in Op::ALL {
            line(op.name(), self.op(op));
        }
        for p in Phase::ALL {
            line(p.name(), self.phase(p));
        }
        for &(name, counts) in extra {
            line(name, counts);
        }
        s
    }
}

/// Reads a stats text back: name → (count, microseconds).
pub fn parse(text: &str) -> std::collections::HashMap<String, (u64, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let n = w.next()?.parse().ok()?;
            let us = w.next()?.parse().ok()?;
            Some((name, (n, us)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_counted_under_its_own_name() {
        let before = parse(&stats().text());
        for op in Op::ALL {
            request(op, Instant::now());
        }
        timed(Phase::Render, || ());
        let text = stats().text();
        let after = parse(&text);
        let mut names = std::collections::HashSet::new();
        for op in Op::ALL {
            assert!(names.insert(op.name()), "{op:?} shares its name");
            let was = before.get(op.name()).map_or(0, |c| c.0);
            assert!(after[op.name()].0 > was, "{op:?} not counted");
        }
        assert!(after["render"].0 > before.get("render").map_or(0, |c| c.0));
        // Whatever the counters say, the text is as long (a reader's size
        // from a GETATTR before the counters grew still fits it).
        STATS.ops[Op::Lookup as usize].add(Duration::from_secs(1 << 30));
        phase(Phase::Reply, Duration::from_secs(1 << 30));
        assert_eq!(stats().text().len(), text.len(), "the text's length changed with the counters");
    }

    /// The tree's own counters (a live mount's `live-*`) get lines as
    /// fixed-width as the core's: the text's length does not move when
    /// they grow from nothing to the most they can hold.
    #[test]
    fn the_trees_counters_keep_the_length_fixed() {
        let none = [("live-change", (0, 0)), ("live-step", (0, 0))];
        let most = [("live-change", (u64::MAX / 2, u64::MAX / 2)), ("live-step", (7, 1_500_000))];
        let (before, after) = (stats().text_with(&none), stats().text_with(&most));
        assert_eq!(before.len(), after.len(), "{before}\n{after}");
        assert!(after.ends_with(&format!("live-step {:>20} {:>20}\n", 7, 1_500)), "{after}");
        // Each line of the tree's is as wide as the core's line of a name as long.
        let width = |name: &str, text: &str| text.lines().find(|l| l.starts_with(&format!("{name} "))).map(str::len);
        assert_eq!(width("live-step", &after), width("LOOKUP", &after).map(|w| w - "LOOKUP".len() + "live-step".len()));
        assert_eq!(parse(&after)["live-step"], (7, 1_500));
    }
}
