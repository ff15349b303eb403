//! Loading blocks ahead of a walk over `blocks/`. A program that reads the
//! same file of block after block (`ls blocks | xargs grep`, a glob,
//! `grep -r`) looks each up in turn, and each LOOKUP waits for its block to
//! be fetched and decoded. When the blocks looked up follow one another in
//! the order of their names (as `ls` and globs sort them, byte by byte) or
//! in the store's key order (the listing's, as `find` and `grep -r` see
//! it), a thread of its own loads the next `DEPTH` blocks of that order
//! into the cache, on another core, so that the LOOKUP finds the block
//! decoded and its `names` rendered.
//!
//! Nothing is shown that the cache would not show: a block loaded ahead is
//! an ordinary cache entry, checked against the store when it is older
//! than the TTL, and held within the cache's budget. The orders are kept
//! for worlds of at most `MAX_BLOCKS` blocks (about 40 bytes a block);
//! larger worlds are not followed.

use crate::fs::stats::{Phase, timed};
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};
use worldfs_store::BlockPos;

/// How many blocks are loaded ahead of the one looked up.
pub const DEPTH: usize = 32;
/// Worlds of more blocks are not followed (their orders would take memory
/// that grows with the world).
pub const MAX_BLOCKS: u64 = 100_000;
/// A look-up this many places or fewer after the one before, in an order,
/// follows it (a few may be served by other threads meanwhile).
const STRIDE: usize = 4;
/// The orders are listed again when older than this (blocks come and go).
const RELIST: Duration = Duration::from_secs(60);

/// The two orders a walk may follow, of every block of the world.
struct Orders {
    /// Positions by name, then by key.
    seq: [Vec<BlockPos>; 2],
    /// Each position's place in each order.
    at: HashMap<BlockPos, [u32; 2]>,
    listed: Instant,
}

impl Orders {
    /// The orders of the blocks `by_key` lists (in the listing's order).
    fn new(by_key: Vec<BlockPos>) -> Orders {
        let mut named: Vec<(String, BlockPos)> = by_key.iter().map(|p| (p.to_string(), *p)).collect();
        named.sort_unstable();
        let by_name: Vec<BlockPos> = named.into_iter().map(|(_, p)| p).collect();
        let mut at: HashMap<BlockPos, [u32; 2]> = HashMap::with_capacity(by_key.len());
        for (i, p) in by_name.iter().enumerate() {
            at.entry(*p).or_default()[0] = i as u32;
        }
        for (i, p) in by_key.iter().enumerate() {
            at.entry(*p).or_default()[1] = i as u32;
        }
        Orders { seq: [by_name, by_key], at, listed: Instant::now() }
    }
}

/// What the thread knows of the walk.
#[derive(Default)]
struct Follower {
    orders: Option<Orders>,
    /// When the world was found too large to follow (looked at again after `RELIST`).
    too_large: Option<Instant>,
    last: Option<BlockPos>,
    /// Per order, the place up to which blocks were loaded.
    loaded_to: [usize; 2],
}

impl Follower {
    /// A block was looked up: load what follows it, if the walk follows an
    /// order. `list` gives every block (None: more than `MAX_BLOCKS`).
    fn step(&mut self, pos: BlockPos, list: &dyn Fn() -> Option<Vec<BlockPos>>, load: &dyn Fn(BlockPos)) {
        let last = self.last.replace(pos);
        if self.orders.as_ref().is_none_or(|o| o.listed.elapsed() > RELIST)
            && self.too_large.is_none_or(|t| t.elapsed() > RELIST)
        {
            self.orders = list().map(Orders::new);
            self.too_large = self.orders.is_none().then(Instant::now);
        }
        let (Some(orders), Some(last)) = (&self.orders, last) else { return };
        let (Some(now), Some(before)) = (orders.at.get(&pos), orders.at.get(&last)) else { return };
        for o in 0..2 {
            let (i, b) = (now[o] as usize, before[o] as usize);
            if i <= b || i - b > STRIDE {
                continue;
            }
            let end = (i + 1 + DEPTH).min(orders.seq[o].len());
            let from = if (i + 1..end).contains(&self.loaded_to[o]) { self.loaded_to[o] } else { i + 1 };
            for p in &orders.seq[o][from..end] {
                load(*p);
            }
            self.loaded_to[o] = end;
            return;
        }
    }
}

/// The sending side, told of each block looked up; the thread ends with it.
#[derive(Default)]
pub struct DecodeAhead {
    tx: OnceLock<parking_lot::Mutex<SyncSender<BlockPos>>>,
}

impl DecodeAhead {
    /// Start the thread. `list` gives every block of the world (None when
    /// there are more than `MAX_BLOCKS`); `load` puts one in the cache
    /// (false: the tree is gone, the thread ends).
    pub fn start(
        &self,
        list: impl Fn() -> Option<Vec<BlockPos>> + Send + 'static,
        load: impl Fn(BlockPos) -> bool + Send + 'static,
    ) -> std::io::Result<()> {
        // Look-ups waiting: the thread takes the latest; more are dropped.
        let (tx, rx) = std::sync::mpsc::sync_channel::<BlockPos>(64);
        std::thread::Builder::new().name("worldfs-ahead".into()).spawn(move || follow(rx, list, load))?;
        let _ = self.tx.set(parking_lot::Mutex::new(tx));
        Ok(())
    }

    /// Block `pos` (or a file of it) was looked up.
    pub fn looked_up(&self, pos: BlockPos) {
        if let Some(tx) = self.tx.get() {
            let _ = tx.lock().try_send(pos);
        }
    }
}

fn follow(rx: Receiver<BlockPos>, list: impl Fn() -> Option<Vec<BlockPos>>, load: impl Fn(BlockPos) -> bool) {
    let mut follower = Follower::default();
    let gone = std::cell::Cell::new(false);
    let load_one = |p: BlockPos| {
        if !gone.get() {
            gone.set(!timed(Phase::Ahead, || load(p)));
        }
    };
    while let Ok(mut pos) = rx.recv() {
        // Only the latest matters: the walk is past the others.
        while let Ok(p) = rx.try_recv() {
            pos = p;
        }
        follower.step(pos, &list, &load_one);
        if gone.get() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn world(n: i16) -> Vec<BlockPos> {
        (0..n).flat_map(|x| (0..n).map(move |z| BlockPos::new(x, 0, z))).collect()
    }

    fn by_name(all: &[BlockPos]) -> Vec<BlockPos> {
        let mut v: Vec<(String, BlockPos)> = all.iter().map(|p| (p.to_string(), *p)).collect();
        v.sort();
        v.into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn a_walk_in_name_order_has_the_next_blocks_loaded() {
        let all = world(12);
        let names = by_name(&all);
        let loaded = RefCell::new(Vec::new());
        let mut f = Follower::default();
        let list = || Some(all.clone());
        for p in &names[..10] {
            f.step(*p, &list, &|p| loaded.borrow_mut().push(p));
        }
        let loaded = loaded.into_inner();
        // From the second look-up on: DEPTH ahead of each, each block once.
        let want: Vec<BlockPos> = names[2..10 + DEPTH].to_vec();
        assert_eq!(loaded, want);
    }

    #[test]
    fn a_walk_in_key_order_is_followed_too() {
        let all = world(12);
        let mut keys = all.clone();
        keys.sort_by_key(|p| p.legacy_key());
        let loaded = RefCell::new(Vec::new());
        let mut f = Follower::default();
        let list = || Some(keys.clone());
        for p in &keys[..3] {
            f.step(*p, &list, &|p| loaded.borrow_mut().push(p));
        }
        assert_eq!(loaded.into_inner(), keys[2..3 + DEPTH].to_vec());
    }

    #[test]
    fn look_ups_in_no_order_load_nothing() {
        let all = world(12);
        let names = by_name(&all);
        let loaded = RefCell::new(Vec::new());
        let mut f = Follower::default();
        let list = || Some(all.clone());
        // Backwards, and far apart.
        for i in [100usize, 90, 80, 3, 60, 20, 140] {
            f.step(names[i], &list, &|p| loaded.borrow_mut().push(p));
        }
        assert!(loaded.into_inner().is_empty());
    }

    #[test]
    fn a_world_too_large_is_not_followed_nor_listed_again_at_once() {
        let all = world(12);
        let names = by_name(&all);
        let listed = std::cell::Cell::new(0);
        let loaded = RefCell::new(Vec::new());
        let mut f = Follower::default();
        let list = || {
            listed.set(listed.get() + 1);
            None
        };
        for p in &names[..10] {
            f.step(*p, &list, &|p| loaded.borrow_mut().push(p));
        }
        assert!(loaded.into_inner().is_empty());
        assert_eq!(listed.get(), 1, "listed once per RELIST");
        assert!(f.orders.is_none());
    }

    #[test]
    fn the_thread_loads_ahead_and_ends_with_its_sender() {
        let all = world(6);
        let names = by_name(&all);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let (listed_tx, listed_rx) = std::sync::mpsc::channel();
        let ahead = DecodeAhead::default();
        let listed = all.clone();
        ahead
            .start(
                move || {
                    let _ = listed_tx.send(());
                    Some(listed.clone())
                },
                move |p| {
                    let _ = done_tx.send(p);
                    true
                },
            )
            .unwrap();
        ahead.looked_up(names[0]);
        // The first look-up is being taken (the orders are listed for it).
        listed_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        ahead.looked_up(names[1]);
        let first = done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(names[2..].contains(&first), "{first} loaded");
        drop(ahead);
        // The sender gone, the thread ends and drops `load` (its sender).
        let rest: Vec<BlockPos> = done_rx.iter().collect();
        assert!(rest.len() < names.len());
    }
}
