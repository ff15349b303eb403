//! A map held by a running server that runs the worldfs_live mod: reads
//! come from the database, opened read-only; every change is handed to the
//! server as a request (`request.rs`, `spool.rs`), which the mod applies in
//! one server step after checking that what it replaces is still what the
//! mount showed.
//!
//! The server writes changed blocks to the database only every
//! `server_map_save_interval`. So that a read after a write shows the
//! write, a block this store changed is shown as written until the
//! database's copy of it changes (the server saved it, with this change
//! and any made in the game since); then the database is shown again.

pub mod direct;
pub mod journal;
pub mod records;
mod reply_watch;
pub mod request;
pub mod settle;
pub mod spool;
pub mod timing;

use crate::journal::Fingerprint;
use crate::{BlockPos, Change, MapStore, Note, Result, StoreError, unmet_expectation};
use parking_lot::Mutex;
use spool::Spool;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use worldfs_codec::luanti::Block;

pub use spool::{ServerState, check_spool, server_state};

/// About how many bytes of request one batch holds: the server applies a
/// request in one step, so a big change (a world-wide rename, many blocks)
/// goes as many requests of about this size, one after the other (a single
/// block that needs more is one request of its own: a block is never
/// split). 64 KiB is about a quarter of a block whose every node changes,
/// which the mod applies in well under 50 ms.
pub const BATCH_BYTES: usize = 64 * 1024;

/// What a block's request lines cost in a batch: their bytes, but at
/// least a quarter batch, so a batch holds four blocks at most (the mod
/// loads each block the request touches, from the database when the
/// server does not hold it: on the 2.8M-block world a request of a dozen
/// blocks with a few renamed nodes each took up to 1.2 s). A whole block
/// (`request::WHOLE_FROM`) is a few hundred bytes in runs, and the mod's
/// work on one about a millisecond (the block's ids by content id: median
/// 0.6 ms a request of one at load 8), so four go in a request too: one
/// a request, the spool's `IN_FLIGHT` requests a step made the most a
/// rename could go, about 44 blocks a second, whatever the mod's pace.
fn batch_cost(bytes: usize) -> usize {
    bytes.max(BATCH_BYTES / 4)
}

/// How many batches of one change may wait in the spool at once, so that
/// the server applies several in a step while the next are written (the
/// mod takes what its step budget holds and leaves the rest for the next
/// step). With 4, a rename went at 4 requests a step at most, whatever the mod's
/// budget: on the augsburg-50k world with a 0.05 s step and saves every
/// second, 17,464 blocks took 61 s live; with 16, 20.5 s, the steps no
/// longer (50 ms) and the pace's cap of blocks per save reached; 32 was
/// no faster (22.6 s, one step of 100 ms). Load 1-1.5, 2026-11-28.
pub const IN_FLIGHT: usize = 16;

/// How often changes settle the undo journal (`settle_now_and_then`).
const SETTLE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The most bytes of changed blocks the mount holds to show until the
/// server saves them (`Shown`), unless `with_shown_bytes` says otherwise:
/// a big change waits for the server's next map save before it sends
/// more. The server saves every few seconds, and a save prunes what it
/// wrote (by the request numbers the mod publishes), so this bounds a live
/// world-wide change's memory whatever the world's size; it stays above
/// what the mod's pace lets through in one save interval (1024 blocks of
/// a few KB at most by default).
pub const SHOWN_BYTES: usize = 24 << 20;

/// How long a change over its `shown_bytes` waits for a map save at most, in
/// save intervals, before it goes on anyway (a server that applies
/// requests but does not save is hung or shutting down; the change is not
/// failed for the mount's memory).
const SHOWN_WAIT_INTERVALS: f64 = 4.0;

/// A block as this mount changed it, until the database shows a save.
struct Shown {
    /// What the mount wrote (None: deleted).
    blob: Option<Vec<u8>>,
    /// The database's copy just after the server applied the change.
    db_after: Option<Fingerprint>,
    /// The server run that applied it: another run (the server restarted)
    /// or none (it stopped or went silent) no longer has it unless it saved it.
    run: String,
    /// The request's number in that run: once the run's saves have
    /// written it, the database shows the change (`prune_saved`).
    seq: Option<u64>,
}

/// The blocks shown as written, and the bytes of their blobs.
#[derive(Default)]
struct ShownBlocks {
    blocks: HashMap<BlockPos, Shown>,
    bytes: usize,
    /// Blocks whose change was lost (the run that applied it ended before
    /// it saved them): they show the database again although no row was
    /// written, and `written_after` tells so; `lost_too_many` once more
    /// than `LOST_MOST` were.
    lost: Vec<BlockPos>,
    lost_too_many: bool,
}

/// How many lost blocks `ShownBlocks` lists before it only knows that
/// there were many (then `written_after` cannot tell what changed).
const LOST_MOST: usize = 10_000;

impl ShownBlocks {
    fn insert(&mut self, pos: BlockPos, s: Shown) {
        self.bytes += s.blob.as_ref().map_or(0, Vec::len);
        if let Some(old) = self.blocks.insert(pos, s) {
            self.bytes -= old.blob.as_ref().map_or(0, Vec::len);
        }
    }

    fn remove(&mut self, pos: &BlockPos) {
        if let Some(old) = self.blocks.remove(pos) {
            self.bytes -= old.blob.as_ref().map_or(0, Vec::len);
        }
    }

    /// Forget a block: saved by the server, or (`lost`) its change lost
    /// with the run that applied it.
    fn forget(&mut self, pos: &BlockPos, lost: bool) {
        self.remove(pos);
        if !lost {
            return;
        }
        self.lost.push(*pos);
        if self.lost.len() > LOST_MOST {
            self.lost.clear();
            self.lost_too_many = true;
        }
    }
}

/// The map of a world whose running server runs the worldfs_live mod (see
/// the module doc).
pub struct LiveStore {
    world: std::path::PathBuf,
    /// The map's file, when it is one (SQLite): whether a silent server
    /// still holds it tells a hung server from a killed one (`settle`).
    map_file: Option<std::path::PathBuf>,
    /// The map database, read-only.
    db: Box<dyn MapStore>,
    spool: Spool,
    shown: Mutex<ShownBlocks>,
    /// Changes applied through the server, and overlays dropped (part of
    /// `data_version`).
    applied: AtomicU64,
    /// The server's run as last read, and when (read at most every 250 ms).
    run_seen: Mutex<Option<(std::time::Instant, Option<String>)>>,
    /// The undo journal's file (`journal.rs`), if changes are journaled.
    journal: Option<std::path::PathBuf>,
    /// One journal transaction at a time: changes of several writers are
    /// answered at once, and SQLite refuses (rather than waits for) a
    /// second connection's write that starts as a read.
    journal_lock: Mutex<()>,
    /// When a change last settled the journal (`settle_now_and_then`).
    settled: Mutex<Option<std::time::Instant>>,
    /// Journal entries waiting for `journal_lock` (`journal_entry`).
    journal_queue: Mutex<JournalQueue>,
    /// The most bytes `shown` holds before a change waits for a save.
    shown_bytes: usize,
    /// The map database opened for writing, when the server shares it
    /// (not LevelDB): the blocks of a big change the server does not hold
    /// are written there (`direct.rs`).
    direct: Option<Box<dyn MapStore>>,
    /// From how many such blocks a change is written so (`direct::DIRECT_FROM`).
    direct_from: usize,
}

/// Journal entries waiting to be written, and the outcome of those an
/// other thread wrote (`LiveStore::journal_entry`).
#[derive(Default)]
struct JournalQueue {
    next: u64,
    waiting: Vec<(u64, journal::Entry<'static>)>,
    done: HashMap<u64, Result<()>>,
}

/// The most bytes of request text one change holds at once. A block's
/// lines can be many times its blob (a node line is about 95 bytes, so a
/// block with 500 renamed nodes among others is 47 KB of text for a blob of
/// 1-2 KB): a world-wide rename on the 2.8M-block world held 800 MB of
/// them. Every block's text is made (and checked) before anything is sent,
/// but only the first blocks' up to this bound are kept; the others' is
/// made again when their batch goes.
const TEXT_HELD: usize = 4 << 20;

/// The request lines of one block: their size and inventory slots (for
/// the batches), and the text itself unless it was dropped to bound the
/// change's memory (`TEXT_HELD`): then it is made again when sent.
struct Line {
    pos: BlockPos,
    bytes: usize,
    slots: usize,
    /// Whether the lines change nodes only (`request::only_nodes`).
    nodes_only: bool,
    text: Option<String>,
    /// Whether `bytes`, `slots` and `text` were made (else see `later`).
    made: bool,
}

impl Line {
    fn new(pos: BlockPos, text: String) -> Line {
        Line {
            pos,
            bytes: text.len(),
            slots: request::inventory_slots(&text),
            nodes_only: request::only_nodes(&text),
            text: Some(text),
            made: true,
        }
    }

    /// The lines of a block that changes in its nodes only, not made yet:
    /// it may be written to the database directly (`make_later_lines`).
    fn later(pos: BlockPos) -> Line {
        Line { pos, bytes: 0, slots: 0, nodes_only: true, text: None, made: false }
    }
}

/// The blocks of one change: their request lines, in order, and the bytes
/// each held before (for the journal and for lines made again; borrowed
/// from the change's `Expect`s, read when it has none).
struct Requests<'c> {
    lines: Vec<Line>,
    before: HashMap<BlockPos, Option<Cow<'c, [u8]>>>,
    /// Blocks of the change were written to the database directly
    /// (`direct.rs`): the requests say so (`request::WRITTEN`).
    written: bool,
}

impl Requests<'_> {
    /// The text of `line`: kept, or made again from the bytes the block
    /// held before and `change` (as `block_requests` made it first).
    fn text<'l>(&self, line: &'l Line, change: Option<&&Change>) -> Result<Cow<'l, str>> {
        if let Some(t) = &line.text {
            return Ok(Cow::Borrowed(t));
        }
        let (pos, old) = (line.pos, self.before.get(&line.pos).and_then(|b| b.as_deref()));
        let (Some(change), Some(old)) = (change, old) else {
            return Err(StoreError::Backend(format!("block {pos}: its request lines cannot be made again")));
        };
        block_text(change, &decode_block(pos, old)?).map(Cow::Owned)
    }
}

/// `text` as the line of block `pos`, refused when it is over the server's
/// `limits`; its text kept while what the change keeps (`held`) is within
/// `TEXT_HELD`.
fn checked_line(limits: &spool::Limits, pos: BlockPos, text: String, held: &mut usize) -> Result<Line> {
    if let Some(why) = limits.refusal(&format!("block {pos}"), &format!("{}{text}end\n", request::HEADER)) {
        return Err(StoreError::Refused(why));
    }
    let mut line = Line::new(pos, text);
    *held += line.bytes;
    if *held > TEXT_HELD {
        line.text = None;
    }
    Ok(line)
}

fn decode_block(pos: BlockPos, blob: &[u8]) -> Result<Block> {
    Block::decode(blob).map_err(|e| StoreError::Backend(format!("block {pos} does not decode: {e}")))
}

/// The request lines of a `Put` or `Delete` of a block that held `old`.
fn block_text(change: &Change, old: &Block) -> Result<String> {
    let pos = change.pos();
    let mut text = String::new();
    match change {
        Change::Put(_, blob) => {
            request::block_change(&mut text, pos, old, &decode_block(pos, blob)?).map_err(StoreError::Refused)?
        }
        _ => request::block_delete(&mut text, pos, old),
    }
    Ok(text)
}

/// What `changes` writes at `pos` (None: a deletion).
fn new_blob<'c>(changes: &HashMap<BlockPos, &'c Change>, pos: &BlockPos) -> Option<&'c [u8]> {
    match changes.get(pos) {
        Some(Change::Put(_, b)) => Some(b.as_slice()),
        _ => None,
    }
}

fn fingerprint(blob: &Option<Vec<u8>>) -> Option<Fingerprint> {
    blob.as_deref().map(Fingerprint::of)
}

impl LiveStore {
    /// The map of the world at `world`, read from `db` (opened read-only),
    /// changed through the server.
    pub fn new(world: &Path, db: Box<dyn MapStore>) -> LiveStore {
        let sqlite = world.join("map.sqlite");
        let map_file = (db.describe().starts_with("sqlite3") && sqlite.is_file()).then_some(sqlite);
        LiveStore {
            world: world.to_path_buf(),
            map_file,
            db,
            spool: Spool::new(world),
            shown: Mutex::new(ShownBlocks::default()),
            applied: AtomicU64::new(0),
            run_seen: Mutex::new(None),
            journal: None,
            journal_lock: Mutex::new(()),
            journal_queue: Mutex::new(JournalQueue::default()),
            settled: Mutex::new(None),
            shown_bytes: SHOWN_BYTES,
            direct: None,
            direct_from: direct::DIRECT_FROM,
        }
    }

    /// Write the blocks of a big change the server does not hold to
    /// `store`, the map database opened for writing (`direct.rs`), from
    /// `from` blocks a change (`direct::DIRECT_FROM` unless a test says).
    pub fn with_direct(mut self, store: Box<dyn MapStore>, from: usize) -> LiveStore {
        self.direct = Some(store);
        self.direct_from = from.max(1);
        self
    }

    /// Hold at most `bytes` of changed blocks the server has not saved
    /// (see `SHOWN_BYTES`; at least 1 MiB).
    pub fn with_shown_bytes(mut self, bytes: usize) -> LiveStore {
        self.shown_bytes = bytes.max(1 << 20);
        self
    }

    /// Journal every change the server applies in the undo journal at
    /// `path` (`journal.rs`).
    pub fn with_journal(mut self, path: Option<std::path::PathBuf>) -> LiveStore {
        self.journal = path;
        self
    }

    /// The run of the server now, None when it does not run (stopped,
    /// silent: killed or hung). Read at most every 250 ms.
    fn current_run(&self) -> Option<String> {
        let mut seen = self.run_seen.lock();
        if let Some((at, run)) = &*seen
            && at.elapsed() < std::time::Duration::from_millis(250)
        {
            return run.clone();
        }
        let run = match server_state(&self.world) {
            ServerState::Running { run, .. } => Some(run),
            _ => None,
        };
        *seen = Some((std::time::Instant::now(), run.clone()));
        run
    }

    /// What a block shows: this mount's change, until the server saved it,
    /// and while the run of the server that applied it still runs (a
    /// server killed before it saved lost the change: the database is
    /// what the world is).
    fn shown(&self, pos: BlockPos, db: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let mut shown = self.shown.lock();
        if let Some(s) = shown.blocks.get(&pos) {
            let unwritten = fingerprint(&db) == s.db_after;
            if unwritten && self.current_run().as_deref() == Some(s.run.as_str()) {
                return s.blob.clone();
            }
            // Written since: the server saved it (a row the index reads).
            shown.forget(&pos, unwritten);
            self.applied.fetch_add(1, Ordering::SeqCst);
        }
        db
    }

    /// The request lines of each block `changes` change, in order, or why
    /// the server cannot be given them (then nothing is sent). Every
    /// block's lines are made and checked here; only the first
    /// `TEXT_HELD` bytes of them are kept. Of a change that may be written
    /// to the database directly (`direct.rs`), the blocks that change in
    /// their nodes only are checked without their lines, which are made
    /// only for those that go through the server after all
    /// (`make_later_lines`): most are not (on the 2.8M-block world their
    /// text took 11.7 s of a 13 s rename).
    fn block_requests<'c>(&self, changes: &'c [Change], note: &Note) -> Result<Requests<'c>> {
        let expected: HashMap<BlockPos, &'c Option<Vec<u8>>> =
            changes.iter().filter_map(|c| if let Change::Expect(p, b) = c { Some((*p, b)) } else { None }).collect();
        let mut out = Requests { lines: Vec::new(), before: HashMap::new(), written: false };
        let limits = self.limits();
        let puts = changes.iter().filter(|c| matches!(c, Change::Put(..))).count();
        let direct = self.direct.is_some() && puts >= self.direct_from;
        let mut held = 0;
        for c in changes {
            let pos = c.pos();
            if matches!(c, Change::Expect(..)) {
                continue;
            }
            let old: Option<Cow<'c, [u8]>> = match expected.get(&pos) {
                Some(b) => b.as_deref().map(Cow::Borrowed),
                None => self.get(pos)?.map(Cow::Owned),
            };
            let Some(old_bytes) = old.as_deref() else {
                return Err(StoreError::Refused(format!(
                    "block {pos} is not stored: new blocks cannot be made while the server runs \
                     (it generates them); stop the server to make it"
                )));
            };
            // A rename's blocks (the writer's word, `Note::nodes_only`) are
            // not decoded here: those that go through the server after all
            // are when their lines are made.
            if direct && note.nodes_only && expected.contains_key(&pos) && matches!(c, Change::Put(..)) {
                out.before.insert(pos, old);
                out.lines.push(Line::later(pos));
                continue;
            }
            let old_block = decode_block(pos, old_bytes)?;
            out.before.insert(pos, old);
            if direct
                && let Change::Put(_, blob) = c
                && request::nodes_only_change(pos, &old_block, &decode_block(pos, blob)?)
                    .map_err(StoreError::Refused)?
            {
                out.lines.push(Line::later(pos));
                continue;
            }
            out.lines.push(checked_line(&limits, pos, block_text(c, &old_block)?, &mut held)?);
        }
        Ok(out)
    }

    /// `unmet_expectation` with the blocks read a slice of the change at a
    /// time (`get_many`), not one by one.
    fn unmet(&self, changes: &[Change]) -> Result<Option<StoreError>> {
        for slice in changes.chunks(2048) {
            let expected: Vec<BlockPos> =
                slice.iter().filter(|c| matches!(c, Change::Expect(..))).map(Change::pos).collect();
            let now: HashMap<BlockPos, Option<Vec<u8>>> =
                expected.iter().copied().zip(self.db.get_many(&expected)?).collect();
            if let Some(e) = unmet_expectation(slice, |p| Ok(self.shown(p, now.get(&p).cloned().flatten())))? {
                return Ok(Some(e));
            }
        }
        Ok(None)
    }

    /// The running server's limits (the mod's defaults when none runs).
    fn limits(&self) -> spool::Limits {
        match server_state(&self.world) {
            ServerState::Running { limits, .. } => limits,
            _ => spool::Limits::default(),
        }
    }

    /// The lines `block_requests` left to make (`Line::later`), made, as
    /// far as `TEXT_HELD` allows kept, and checked against the server's
    /// limits.
    fn make_later_lines(&self, requests: &mut Requests<'_>, changes: &HashMap<BlockPos, &Change>) -> Result<()> {
        let limits = self.limits();
        let mut held: usize = requests.lines.iter().filter_map(|l| l.text.as_ref()).map(String::len).sum();
        for i in 0..requests.lines.len() {
            if requests.lines[i].made {
                continue;
            }
            let pos = requests.lines[i].pos;
            let text = requests.text(&requests.lines[i], changes.get(&pos))?.into_owned();
            requests.lines[i] = checked_line(&limits, pos, text, &mut held)?;
        }
        Ok(())
    }

    /// The blocks' request lines, in batches of about `BATCH_BYTES`, with
    /// up to `IN_FLIGHT` batches in the spool at once (the text of each
    /// made when it goes, if not kept); the blocks of every batch the
    /// server applied then show as written, and go to `applied` with what
    /// the server said of their request. Stops at the first batch that is
    /// not applied (withdrawing those not taken yet).
    fn send_batches(
        &self,
        requests: &Requests<'_>,
        changes: &HashMap<BlockPos, &Change>,
        applied: &mut Vec<(BlockPos, spool::Applied)>,
    ) -> Result<()> {
        let max_slots = self.limits().inventory_slots;
        let batches: Vec<_> =
            batches(&requests.lines, max_slots).into_iter().filter(|b| b.iter().any(|l| l.bytes > 0)).collect();
        let mut sent: std::collections::VecDeque<(&[Line], spool::Sent)> = Default::default();
        let (mut next, mut failed) = (0, None);
        while failed.is_none() && (next < batches.len() || !sent.is_empty()) {
            while failed.is_none() && next < batches.len() && sent.len() < IN_FLIGHT {
                self.make_room();
                let submitted = self.batch_text(requests, batches[next], changes).and_then(|t| self.spool.submit(&t));
                match submitted {
                    Ok(s) => sent.push_back((batches[next], s)),
                    Err(e) => failed = Some(e),
                }
                next += 1;
            }
            let Some((batch, s)) = sent.pop_front() else { break };
            match self.spool.wait(&s) {
                Ok(a) => {
                    self.show_applied(batch, changes, &a);
                    applied.extend(batch.iter().map(|l| (l.pos, a.clone())));
                }
                Err(e) => failed = Some(e),
            }
        }
        // What is still in the spool: withdrawn, or (taken meanwhile) its answer counted.
        for (batch, s) in sent {
            if let Ok(Some(a)) = self.spool.cancel(&s) {
                self.show_applied(batch, changes, &a);
                applied.extend(batch.iter().map(|l| (l.pos, a.clone())));
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// The request of one batch: its blocks' lines (kept or made again).
    fn batch_text(
        &self,
        requests: &Requests<'_>,
        batch: &[Line],
        changes: &HashMap<BlockPos, &Change>,
    ) -> Result<String> {
        let mut text = String::from(request::HEADER);
        if requests.written {
            text.push_str(request::WRITTEN);
        }
        for line in batch {
            text.push_str(&requests.text(line, changes.get(&line.pos))?);
        }
        text.push_str("end\n");
        Ok(text)
    }

    /// The blocks of a batch the server applied show as written.
    fn show_applied(&self, batch: &[Line], changes: &HashMap<BlockPos, &Change>, a: &spool::Applied) {
        for line in batch {
            let pos = &line.pos;
            let blob = match changes.get(pos) {
                Some(Change::Put(_, b)) => Some(b.clone()),
                Some(Change::Delete(_)) => None,
                _ => continue,
            };
            let db_after = fingerprint(&self.db.get(*pos).unwrap_or(None));
            self.shown.lock().insert(*pos, Shown { blob, db_after, run: a.run.clone(), seq: a.seq });
        }
        self.applied.fetch_add(1, Ordering::SeqCst);
    }

    /// Forget the shown blocks the database now holds: those of requests
    /// the server's saves have written (the heartbeat's "saved"), and
    /// those of a run that no longer runs (the database is what the world
    /// is then). Gives the bytes still shown.
    fn prune_saved(&self) -> usize {
        let run = self.current_run();
        let saved = match &run {
            Some(r) => match settle::run_fate(&self.world, r, self.map_file.as_deref(), true) {
                settle::RunFate::Running { saved } => saved,
                _ => 0,
            },
            None => 0,
        };
        let mut shown = self.shown.lock();
        let gone: Vec<(BlockPos, bool)> = shown
            .blocks
            .iter()
            .map(|(p, s)| (*p, run.as_deref() != Some(s.run.as_str()), s.seq.is_some_and(|q| q <= saved)))
            .filter(|(_, ended, saved)| *ended || *saved)
            .map(|(p, ended, saved)| (p, ended && !saved))
            .collect();
        for (p, lost) in &gone {
            shown.forget(p, *lost);
        }
        if !gone.is_empty() {
            self.applied.fetch_add(1, Ordering::SeqCst);
        }
        shown.bytes
    }

    /// Before a batch is sent: while the blocks shown hold over
    /// `shown_bytes`, wait for the server's next map save to write (and so
    /// free) some of them, up to `SHOWN_WAIT_INTERVALS` save intervals.
    fn make_room(&self) {
        if self.shown.lock().bytes <= self.shown_bytes || self.prune_saved() <= self.shown_bytes {
            return;
        }
        let interval = match server_state(&self.world) {
            ServerState::Running { save_interval, .. } => save_interval,
            _ => return,
        };
        let start = std::time::Instant::now();
        let most = std::time::Duration::from_secs_f64(interval.max(0.1) * SHOWN_WAIT_INTERVALS);
        while start.elapsed() < most {
            std::thread::sleep(std::time::Duration::from_millis(100));
            *self.run_seen.lock() = None;
            if self.prune_saved() <= self.shown_bytes {
                return;
            }
        }
        log::warn!(
            "the live change holds {} MB of blocks the server has not saved after {:.0} s (its map saves write \
             them): going on",
            self.shown.lock().bytes >> 20,
            most.as_secs_f64()
        );
    }
}

impl LiveStore {
    /// `changes` through the server: each `Expect` gives the bytes the
    /// request's old values come from (else what the mount shows), which
    /// the mod checks against the game. The blocks of a big change the
    /// server does not hold are written to the database first
    /// (`direct.rs`). Journaled as far as it was applied.
    fn send(&self, changes: &[Change], note: &Note) -> Result<()> {
        let start = std::time::Instant::now();
        self.settle_now_and_then();
        let mut requests = self.block_requests(changes, note)?;
        timing::add(timing::Part::Build, start.elapsed());
        let total = requests.lines.len();
        let by_pos: HashMap<BlockPos, &Change> =
            changes.iter().filter(|c| !matches!(c, Change::Expect(..))).map(|c| (c.pos(), c)).collect();
        let (direct, direct_failed) = match self.write_directly(&mut requests, &by_pos, note) {
            Ok(kept) => match self.make_later_lines(&mut requests, &by_pos) {
                Ok(()) => (kept, None),
                Err(e) => (kept, Some(e)),
            },
            Err((kept, e)) => (kept, Some(e)),
        };
        let mut applied = Vec::new();
        let sent = match direct_failed {
            Some(e) => Err(e),
            None => self.send_batches(&requests, &by_pos, &mut applied),
        };
        let answered = std::time::Instant::now();
        let fates = self.fates(&applied, &by_pos);
        self.journal_change(note, &requests, &by_pos, &direct, &applied, &fates);
        let count = |f: settle::Fate| fates.iter().filter(|x| **x == f).count();
        timing::add(timing::Part::After, answered.elapsed());
        match sent {
            Ok(()) => Ok(()),
            Err(e) if applied.is_empty() && direct.is_empty() => Err(e),
            Err(e) => Err(partly_applied(
                e,
                Outcome {
                    kept: count(settle::Fate::Kept) + direct.len(),
                    pending: count(settle::Fate::Pending),
                    lost: count(settle::Fate::Lost),
                    total,
                },
            )),
        }
    }

    /// Whether each block the server applied is in the database: a killed
    /// server lost what its saves had not written.
    fn fates(&self, applied: &[(BlockPos, spool::Applied)], changes: &HashMap<BlockPos, &Change>) -> Vec<settle::Fate> {
        let mut runs = HashMap::new();
        applied
            .iter()
            .map(|(p, a)| {
                let run = runs
                    .entry(a.run.clone())
                    .or_insert_with(|| settle::run_fate(&self.world, &a.run, self.map_file.as_deref(), true));
                settle::fate(run, a.seq, self.db.as_ref(), *p, new_blob(changes, p))
            })
            .collect()
    }

    /// The undo journal's entry of a change: the blocks written directly
    /// (in the database) and those the server applied and did not lose.
    fn journal_change(
        &self,
        note: &Note,
        requests: &Requests<'_>,
        changes: &HashMap<BlockPos, &Change>,
        direct: &[BlockPos],
        applied: &[(BlockPos, spool::Applied)],
        fates: &[settle::Fate],
    ) {
        let Some(path) = &self.journal else { return };
        let kept: Vec<_> = applied.iter().zip(fates).filter(|(_, f)| **f != settle::Fate::Lost).collect();
        let before = |p: &BlockPos| requests.before.get(p).and_then(|b| b.as_deref());
        let steps: Vec<_> = direct
            .iter()
            .chain(kept.iter().map(|((p, _), _)| p))
            .map(|p| (*p, before(p), new_blob(changes, p)))
            .collect();
        if steps.is_empty() {
            return;
        }
        let unsaved: Vec<_> = kept
            .iter()
            .filter(|(_, f)| **f == settle::Fate::Pending)
            .filter_map(|((p, a), _)| Some((*p, a.run.clone(), a.seq?)))
            .collect();
        let blocks = steps.len();
        if let Err(e) = self.journal_entry(path, journal::Entry::borrowed(note.clone(), &steps, unsaved)) {
            log::warn!("{blocks} block(s) were changed, but the undo journal could not record them: {e}");
        }
    }

    /// Journal `entry`, with the entries other writers add meanwhile, in
    /// one transaction: changes the server answered in the same step are
    /// journaled in one commit (the thread that gets the journal first
    /// writes all that wait). A writer that gets the journal at once
    /// writes its entry as it is, borrowed from the change; one that waits
    /// queues a copy (of one change's blocks, never a whole world-wide
    /// change: that one is sent a part at a time).
    fn journal_entry(&self, path: &Path, entry: journal::Entry<'_>) -> Result<()> {
        if let Some(_one) = self.journal_lock.try_lock() {
            let (tickets, mut entries): (Vec<u64>, Vec<journal::Entry<'_>>) =
                std::mem::take(&mut self.journal_queue.lock().waiting).into_iter().unzip();
            entries.push(entry);
            let written = journal::record_many(path, &entries);
            self.journal_done(tickets, None, &written);
            return written;
        }
        let ticket = {
            let mut q = self.journal_queue.lock();
            q.next += 1;
            let ticket = q.next;
            q.waiting.push((ticket, entry.into_owned()));
            ticket
        };
        let _one = self.journal_lock.lock();
        let batch = {
            let mut q = self.journal_queue.lock();
            if let Some(written) = q.done.remove(&ticket) {
                return written;
            }
            std::mem::take(&mut q.waiting)
        };
        let (tickets, entries): (Vec<u64>, Vec<journal::Entry<'_>>) = batch.into_iter().unzip();
        let written = journal::record_many(path, &entries);
        self.journal_done(tickets, Some(ticket), &written);
        written
    }

    /// Give the writers of `tickets` (but `mine`) the outcome of the
    /// journal commit that wrote their entries.
    fn journal_done(&self, tickets: Vec<u64>, mine: Option<u64>, written: &Result<()>) {
        let mut q = self.journal_queue.lock();
        for t in tickets.into_iter().filter(|t| Some(*t) != mine) {
            q.done.insert(t, written.clone());
        }
    }

    /// `settle`, at most every `SETTLE_EVERY`: before each change it read
    /// the journal's unsaved blocks, and what it learns (a map save, a run
    /// that ended) comes once a save interval (`worldfs undo` settles
    /// itself first).
    fn settle_now_and_then(&self) {
        {
            let mut last = self.settled.lock();
            if last.is_some_and(|t| t.elapsed() < SETTLE_EVERY) {
                return;
            }
            *last = Some(std::time::Instant::now());
        }
        self.settle();
    }

    /// Settle the journal's live blocks not known to be saved
    /// (`journal::settle`); a failure is logged.
    pub fn settle(&self) {
        let Some(path) = &self.journal else { return };
        let _one = self.journal_lock.lock();
        if let Err(e) = settle::settle_journal(path, &self.world, self.db.as_ref(), self.map_file.as_deref(), true) {
            log::warn!("the undo journal's live changes could not be checked against the map: {e}");
        }
    }

    /// Undo through the server: `changes` as `apply` takes them, each
    /// `Put`/`Delete` after an `Expect` holding what the change being
    /// undone wrote. Those bytes are not compared with the database (the
    /// server saves blocks in its own way): the mod compares the nodes the
    /// undo changes with the game, and refuses it (a conflict) where the
    /// game no longer holds what the change left.
    pub fn revert(&self, changes: &[Change], note: &Note) -> Result<()> {
        self.send(changes, note)
    }
}

/// Blocks' request lines in batches of about `BATCH_BYTES` (at least one
/// block each, see `batch_cost`), in order, each setting inventory lists
/// of at most `max_slots` slots in all unless one block alone does (the
/// mod's limit: `spool::Limits`).
fn batches(blocks: &[Line], max_slots: usize) -> Vec<&[Line]> {
    let mut out = Vec::new();
    let (mut start, mut cost, mut slots) = (0, 0, 0);
    for (i, line) in blocks.iter().enumerate() {
        let more = line.slots;
        if i > start && (cost + batch_cost(line.bytes) > BATCH_BYTES || slots + more > max_slots) {
            out.push(&blocks[start..i]);
            (start, cost, slots) = (i, 0, 0);
        }
        cost += batch_cost(line.bytes);
        slots += more;
    }
    if start < blocks.len() {
        out.push(&blocks[start..]);
    }
    out
}

/// How far a change that went in batches got: of its `total` blocks, the
/// server applied `kept` that are in the database, `pending` it had not
/// saved yet, and `lost` its run lost (killed before its save).
struct Outcome {
    kept: usize,
    pending: usize,
    lost: usize,
    total: usize,
}

/// A batch after the first was refused: the batches before it stay
/// applied (as far as the server kept them), and the error says how far
/// the change got.
fn partly_applied(e: StoreError, o: Outcome) -> StoreError {
    let (done, total) = (o.kept + o.pending, o.total);
    let lost = match o.lost {
        0 => String::new(),
        n => format!(
            "; the server had applied {n} more, but it stopped before its map save wrote them, so they were \
             lost with it"
        ),
    };
    // A refusal comes from a server that runs: it saves what it applied.
    let silent = !matches!(e, StoreError::Conflict(_) | StoreError::Refused(_));
    let pending = match o.pending {
        n if n > 0 && silent => format!(
            "; {n} of them are not in the map database yet: a server that still runs saves them with its next map \
             save, one that was killed lost them (`worldfs undo` tells once the server runs again)"
        ),
        _ => String::new(),
    };
    let say = |m: String| {
        format!(
            "the change went to the server in batches: {done} of {total} blocks were changed, then a batch \
             was not ({m}){lost}{pending}; those {done} blocks stay changed, the other {} are as they were. Once the cause \
             is dealt with, the same command again changes the rest (a `mv` in find/ then sees find/NEW, \
             which the changed blocks made, and moves find/OLD into it: `mv` may already have tried that \
             and said it cannot move find/OLD to find/NEW/OLD; that is this same refusal)",
            total - done
        )
    };
    match e {
        StoreError::Conflict(m) => StoreError::Conflict(say(m)),
        StoreError::Refused(m) => StoreError::Refused(say(m)),
        StoreError::Unreachable(m) => StoreError::Unreachable(say(m)),
        StoreError::Backend(m) => StoreError::Backend(say(m)),
        other => other,
    }
}

impl MapStore for LiveStore {
    fn describe(&self) -> String {
        format!("{}, changed through the running server (worldfs_live)", self.db.describe())
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let db = self.db.get(pos)?;
        Ok(self.shown(pos, db))
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        Ok(self.scan_after(after, limit)?.into_iter().map(|(p, _)| p).collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        // Blocks this mount deleted are skipped; a short page would end a
        // listing, so pages are read until `limit` is reached or the map ends.
        let mut out = Vec::new();
        let mut from = after;
        loop {
            let page = self.db.scan_after(from, limit)?;
            let ended = page.len() < limit;
            for (pos, blob) in page {
                from = Some(pos);
                if let Some(b) = self.shown(pos, Some(blob))
                    && out.len() < limit
                {
                    out.push((pos, b));
                }
            }
            if ended || out.len() >= limit {
                return Ok(out);
            }
        }
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        let start = std::time::Instant::now();
        if let Some(e) = self.unmet(changes)? {
            return Err(e);
        }
        let r = self.send(changes, note);
        timing::add(timing::Part::Change, start.elapsed());
        r
    }

    fn count(&self) -> Result<u64> {
        let deleted = self.shown.lock().blocks.values().filter(|s| s.blob.is_none()).count() as u64;
        Ok(self.db.count()?.saturating_sub(deleted))
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn applies_through_server(&self) -> bool {
        true
    }

    fn data_version(&self) -> Option<u64> {
        self.db.data_version().map(|v| v.wrapping_add(self.applied.load(Ordering::SeqCst)))
    }

    fn write_mark(&self) -> Result<Option<crate::WriteMark>> {
        self.db.write_mark()
    }

    /// The database's, as this mount shows them (its changes the server
    /// has not saved yet in their place), counted as `count` does.
    /// The last page also lists the blocks whose change the server lost
    /// (`ShownBlocks::lost`): they show the database again, no row written.
    fn written_after(&self, mark: &crate::WriteMark, after: i64, limit: usize) -> Result<Option<crate::Written>> {
        let Some(mut w) = self.db.written_after(mark, after, limit)? else { return Ok(None) };
        w.blocks = w.blocks.into_iter().filter_map(|(r, p, b)| Some((r, p, self.shown(p, Some(b))?))).collect();
        if let Some(end) = &mut w.end {
            self.prune_saved();
            let (lost, too_many) = {
                let mut shown = self.shown.lock();
                let deleted = shown.blocks.values().filter(|s| s.blob.is_none()).count() as u64;
                end.count = end.count.saturating_sub(deleted);
                (std::mem::take(&mut shown.lost), std::mem::take(&mut shown.lost_too_many))
            };
            if too_many {
                return Ok(None);
            }
            for (p, b) in lost.iter().zip(self.db.get_many(&lost)?) {
                w.blocks.extend(b.and_then(|b| Some((0, *p, self.shown(*p, Some(b))?))));
            }
        }
        Ok(Some(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small blocks and whole blocks share a batch up to `BATCH_BYTES`,
    /// four at most; a block bigger than a batch goes alone.
    #[test]
    fn blocks_go_four_a_batch_at_most() {
        let small = |x: i16| Line::new(BlockPos::new(x, 0, 0), format!("node {x} 0 0 61 0 0 62 0 0\n"));
        let whole =
            |x: i16| Line::new(BlockPos::new(x, 0, 0), format!("{}{x} 0 0\nbold 1\nbnew 2\n", request::WHOLE_BLOCK));
        let blocks = vec![small(0), small(1), whole(2), whole(3), small(4), small(5)];
        let sizes: Vec<usize> = batches(&blocks, 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [4, 2]);
        let wholes: Vec<_> = (0..6).map(whole).collect();
        let sizes: Vec<usize> = batches(&wholes, 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [4, 2], "whole blocks too");
        let big = |x: i16| Line::new(BlockPos::new(x, 0, 0), "x".repeat(BATCH_BYTES + 1));
        let sizes: Vec<usize> = batches(&[small(0), big(1), small(2)], 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [1, 1, 1], "a block over a batch alone");
        let smalls: Vec<_> = (0..9).map(small).collect();
        let sizes: Vec<usize> = batches(&smalls, 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [4, 4, 1], "at most four blocks a batch");
        let half = |x: i16| Line::new(BlockPos::new(x, 0, 0), "x".repeat(BATCH_BYTES / 2));
        let sizes: Vec<usize> = batches(&[half(8), small(0), half(9)], 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [2, 1], "node lines count by their bytes");
        let chest =
            |x: i16| Line::new(BlockPos::new(x, 0, 0), format!("meta {x} 0 0\nnew list 6d61696e 3000 0\nendmeta\n"));
        let sizes: Vec<usize> =
            batches(&[chest(0), chest(1), small(2), chest(3)], 4096).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [1, 2, 1], "inventory slots within the mod's limit a batch");
    }
}
