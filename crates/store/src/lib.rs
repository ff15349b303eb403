//! worldfs-store: the databases behind a Luanti world, behind one small
//! trait ([`MapStore`]) so that SQLite (both schemas), PostgreSQL, LevelDB,
//! Redis and a running server ([`live`]) fit the same place; the records
//! beside the map (players, accounts, mod storage) behind another
//! ([`records`]); a Bedrock world's LevelDB database
//! (`leveldb::bedrock`, with the `leveldb` feature). Also worldfs's own
//! files: the undo journal ([`journal`]), the name index ([`name_index`])
//! and the snapshots ([`snapshots`]). No database client outside this
//! crate.

#![warn(missing_docs)]

pub mod guard;
pub mod holders;
pub mod journal;
#[cfg(feature = "leveldb")]
pub mod leveldb;
pub mod live;
pub mod memory;
pub mod name_index;
mod pos;
#[cfg(feature = "postgresql")]
pub mod postgres;
pub mod records;
#[cfg(feature = "redis")]
pub mod redis;
pub mod snapshots;
pub mod sqlite;
mod sqlite_pool;
pub mod world;

pub use pos::{BlockPos, parse_triple};
use std::fmt;

/// One change inside a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Store this blob for the block (replacing what it held).
    Put(BlockPos, Vec<u8>),
    /// Remove the block.
    Delete(BlockPos),
    /// A precondition, not a change: when the transaction starts, the block
    /// must hold these bytes (None: be absent), or the whole transaction is
    /// refused with [`StoreError::Conflict`]. This is how a write based on
    /// what was read earlier never silently overwrites what another process
    /// (another mount, a server, a second machine) committed meanwhile.
    Expect(BlockPos, Option<Vec<u8>>),
}

impl Change {
    /// The block a change (or expectation) concerns.
    pub fn pos(&self) -> BlockPos {
        match self {
            Change::Put(p, _) | Change::Delete(p) | Change::Expect(p, _) => *p,
        }
    }
}

/// Length and CRC-32 of a blob: enough to tell whether a block still holds
/// what a journaled change wrote (the journal keeps one for each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// Length in bytes.
    pub len: u64,
    /// CRC-32 (zlib's).
    pub crc: u32,
}

impl Fingerprint {
    /// The fingerprint of `data`.
    pub fn of(data: &[u8]) -> Fingerprint {
        let mut c = flate2::Crc::new();
        c.update(data);
        Fingerprint { len: data.len() as u64, crc: c.sum() }
    }
}

/// The expectations of a transaction that do not hold, given a way to read
/// a block inside it (for stores to share).
pub fn unmet_expectation(
    changes: &[Change],
    mut current: impl FnMut(BlockPos) -> Result<Option<Vec<u8>>>,
) -> Result<Option<StoreError>> {
    for c in changes {
        if let Change::Expect(p, want) = c {
            let now = current(*p)?;
            if now != *want {
                let said = |b: &Option<Vec<u8>>| match b {
                    None => "absent".to_string(),
                    Some(b) => format!("{} bytes, CRC-32 {:08x}", b.len(), Fingerprint::of(b).crc),
                };
                return Ok(Some(StoreError::Conflict(format!(
                    "block {p} was changed by someone else since it was read (it was {}, it is now {}); \
                     nothing written: read it again and redo the change",
                    said(want),
                    said(&now)
                ))));
            }
        }
    }
    Ok(None)
}

/// What a transaction does, for the undo journal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Note {
    /// A short description, e.g. "write blocks/1,2,3/names".
    pub what: String,
    /// Journal entries this transaction reverts (for `worldfs undo`).
    pub reverts: Vec<i64>,
    /// The writer's word that every `Put` changes node types only, from
    /// the bytes its `Expect` gives (a rename in `find/`: the same nodes,
    /// params, metadata, timers and block fields): a store that must know
    /// (a live mount's writes beside the server) need not decode each
    /// block to learn it.
    pub nodes_only: bool,
}

impl Note {
    /// A note saying `what`, reverting nothing.
    pub fn new(what: impl Into<String>) -> Note {
        Note { what: what.into(), reverts: Vec::new(), nodes_only: false }
    }

    /// This note with the writer's word that its change is of node types
    /// only (`Note::nodes_only`).
    pub fn of_nodes_only(mut self) -> Note {
        self.nodes_only = true;
        self
    }
}

/// Why a store call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// Another process holds a lock longer than our busy timeout.
    Busy(String),
    /// The store is open read-only.
    ReadOnly,
    /// The disk (or a quota) is full.
    Full(String),
    /// A block was changed by someone else since it was read (an unmet
    /// [`Change::Expect`]); nothing was written.
    Conflict(String),
    /// The database cannot be reached (connection refused or lost); nothing
    /// was written. The store reconnects on the next call.
    Unreachable(String),
    /// Anything else the database reports.
    Backend(String),
    /// The change is not one this store can make (a running server
    /// refusing it, say); nothing was written. The message says why.
    Refused(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Busy(m) => write!(f, "map database is locked by another process: {m}"),
            StoreError::ReadOnly => write!(f, "map database is open read-only"),
            StoreError::Full(m) => write!(f, "no space left for the map database: {m}"),
            StoreError::Conflict(m) => f.write_str(m),
            StoreError::Unreachable(m) => write!(f, "map database unreachable: {m}"),
            StoreError::Backend(m) => write!(f, "map database error: {m}"),
            StoreError::Refused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for StoreError {}

/// A result whose error is a [`StoreError`].
pub type Result<T> = std::result::Result<T, StoreError>;

/// How a whole-map read (`MapStore::read_consistent`) saw the map: as one
/// instant or not, and how, in words for `worldfs snapshot` and its list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consistency {
    /// Every block as of one moment: no save of the server is seen in part.
    pub one_instant: bool,
    /// How the read was made, in words (the transaction or lock used).
    pub how: String,
}

/// The default `read_consistent`: every block, page by page. Each page is
/// one read; a change between pages may be seen in part.
pub fn read_by_pages<S: MapStore + ?Sized>(
    store: &S,
    each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
) -> Result<Consistency> {
    let mut after = None;
    loop {
        let page = store.scan_after(after, 4096)?;
        let Some((last, _)) = page.last() else { break };
        after = Some(*last);
        for (pos, blob) in &page {
            if !blob.is_empty() {
                each(*pos, blob)?;
            }
        }
    }
    Ok(Consistency { one_instant: false, how: "read page by page (a save meanwhile may be seen in part)".into() })
}

/// A map database. Implementations must be usable from several threads and
/// must not hold a transaction (or a lock) between two calls.
pub trait MapStore: Send + Sync {
    /// For messages: backend and schema, e.g. "sqlite3, legacy pos schema".
    fn describe(&self) -> String;

    /// The stored blob of a block, if the block exists. An empty blob is
    /// treated as absent, as the engine does.
    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>>;

    /// Whether a block exists (cheaper than `get`).
    fn contains(&self, pos: BlockPos) -> Result<bool> {
        Ok(self.get(pos)?.is_some())
    }

    /// Up to `limit` positions in the store's own key order, strictly after
    /// `after` (from the start when None). Resumable from any position.
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>>;

    /// Like `list_after`, with the blobs.
    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>>;

    /// The blobs of several blocks (None: absent), in the order asked; on
    /// a database server in one round trip.
    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        positions.iter().map(|p| self.get(*p)).collect()
    }

    /// The block at `pos` (absent from the answer if it does not exist)
    /// and up to `limit` stored blocks near it, read together: on a
    /// database server one round trip, so that a walk over `blocks/` (in
    /// name order, which is not the key order) costs one query per run of
    /// neighbours, not one per block. Empty blobs are left out, as by
    /// `get`. Stores on local files answer the block alone (the default).
    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let _ = limit;
        Ok(self.get(pos)?.map(|blob| vec![(pos, blob)]).unwrap_or_default())
    }

    /// Apply all changes in one transaction: all or nothing. Expectations
    /// ([`Change::Expect`]) are checked first, inside the transaction. When
    /// the store keeps an undo journal, the previous bytes of every changed
    /// block are recorded in that same transaction, under `note`.
    fn apply(&self, changes: &[Change], note: &Note) -> Result<()>;

    /// Number of stored blocks (may scan the whole index).
    fn count(&self) -> Result<u64>;

    /// Whether the store was opened read-only (every `apply` is then refused
    /// with [`StoreError::ReadOnly`]).
    fn is_read_only(&self) -> bool;

    /// A number that changes whenever a transaction that changed the map
    /// ends, by this process or any other; None if the store cannot tell
    /// cheaply. Read before a block, it tells later whether that block can
    /// still be trusted without reading it again.
    fn data_version(&self) -> Option<u64> {
        None
    }

    /// A number that changes whenever a block is added or deleted, by this
    /// process or any other (what a listing of the map's blocks shows):
    /// the data version where there is one; None if the store cannot tell
    /// cheaply.
    fn listing_version(&self) -> Option<u64> {
        self.data_version()
    }

    /// The data version at the start of this store's last commit and just
    /// after it, for stores whose version moves by an amount no one can
    /// foretell (PostgreSQL's, a hash of its snapshot): how a mount tells its own
    /// commit from another process's. None: a commit moves `data_version`
    /// by exactly one (SQLite's change counter, LevelDB's).
    fn last_commit_versions(&self) -> Option<(u64, u64)> {
        None
    }

    /// Where the map's writes stand now, to ask later which blocks were
    /// written since (`written_after`, `each_written_since`). None: the store cannot tell.
    fn write_mark(&self) -> Result<Option<WriteMark>> {
        Ok(None)
    }

    /// One page of the blocks written (added or replaced) since `mark`:
    /// those written after row `after` (at first the mark's own), at most
    /// `limit`, in the order written, each with its row and bytes. A page
    /// shorter than `limit` is the last and tells how the map stands as of
    /// it (`Written::end`). Deleted blocks are not listed: the count tells
    /// of them. None: the store keeps no order of writes. Each page is one
    /// short read (a server's save waits for none); `each_written_since`
    /// reads them all.
    fn written_after(&self, mark: &WriteMark, after: i64, limit: usize) -> Result<Option<Written>> {
        let _ = (mark, after, limit);
        Ok(None)
    }

    /// Whether `apply` hands the change to another process that applies
    /// it (a running server: `live::LiveStore`) instead of writing the
    /// database here: such applies of different blocks may run at once
    /// (they wait for the server's step, and it applies them together),
    /// and this process's reads need not wait for them.
    fn applies_through_server(&self) -> bool {
        false
    }

    /// For database servers: the other clients of this map that are not
    /// worldfs (a running Luanti server among them), described for a
    /// message. Files are guarded by [`guard`] instead: empty here.
    fn other_users(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Run `gate` before every write, inside the write's transaction while
    /// no other process can read the map (SQLite's exclusive lock), so
    /// that what it checks holds until the write is in: an error refuses
    /// the write. Backends that cannot keep readers out ignore it.
    fn set_write_gate(&mut self, _gate: WriteGate) {}

    /// Every stored block (empty blobs left out), each given to `each`
    /// once in any order, read as one instant as far as the backend allows
    /// (the answer says how): what `worldfs snapshot` records. `scratch`:
    /// a directory the read may keep a temporary copy of the map in.
    fn read_consistent(
        &self,
        scratch: &std::path::Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<Consistency> {
        let _ = scratch;
        read_by_pages(self, each)
    }
}

/// A point in a map's writes (`MapStore::write_mark`): the last row
/// written, the block it holds and a checksum of its key and bytes, by
/// which a store tells that row still holds what it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteMark {
    /// The store's number of the row (SQLite's row id; 0: none).
    pub row: i64,
    /// The block that row holds.
    pub block: Option<BlockPos>,
    /// A checksum of the row's key and bytes.
    pub check: u32,
}

/// A block written since a mark: its row, position and bytes now.
pub type WrittenBlock = (i64, BlockPos, Vec<u8>);

/// A page of `MapStore::written_after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Blocks written after the row asked for, in the order written: (row,
    /// block, its bytes now).
    pub blocks: Vec<WrittenBlock>,
    /// On the last page: the map as of it.
    pub end: Option<WrittenEnd>,
}

/// How the map stands as of the last page of `MapStore::written_after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenEnd {
    /// How many blocks the map holds.
    pub count: u64,
    /// The mark now.
    pub mark: WriteMark,
    /// Whether the mark's row still holds what it did; None: it is gone.
    pub mark_row_kept: Option<bool>,
}

/// Every block written since `mark`, a page at a time to `each` (a block
/// written twice may come twice: the later is what it holds), and how many
/// blocks the map holds and its mark as of the last page. None when the
/// store cannot tell, when more than `most` were written, and when a row
/// at or below the mark may have been given again: every write gives its
/// row a number above all others (SQLite's REPLACE picks the new row id
/// before it deletes the old row), so that happens only if the mark's row
/// was deleted while it was the last. The mark's row must thus still hold
/// what it did, or its block must have been written again since.
pub fn each_written_since(
    store: &dyn MapStore,
    mark: &WriteMark,
    most: usize,
    each: &mut dyn FnMut(&[WrittenBlock]),
) -> Result<Option<(u64, WriteMark)>> {
    const PAGE: usize = 1000;
    let (mut after, mut seen, mut mark_block_again) = (mark.row, 0usize, false);
    loop {
        let Some(page) = store.written_after(mark, after, PAGE)? else { return Ok(None) };
        seen += page.blocks.len();
        if seen > most {
            return Ok(None);
        }
        mark_block_again |= page.blocks.iter().any(|(_, p, _)| Some(*p) == mark.block);
        after = page.blocks.last().map_or(after, |b| b.0);
        each(&page.blocks);
        if let Some(end) = page.end {
            let kept = match end.mark_row_kept {
                Some(kept) => kept,
                None => mark.row == 0 || mark_block_again,
            };
            return Ok(kept.then_some((end.count, end.mark)));
        }
    }
}

/// A check run inside every write (`MapStore::set_write_gate`).
pub type WriteGate = Box<dyn Fn() -> Result<()> + Send + Sync>;

/// A shared store is a store (two handles on one in-memory map, say).
impl<T: MapStore + ?Sized> MapStore for std::sync::Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        (**self).get(pos)
    }
    fn contains(&self, pos: BlockPos) -> Result<bool> {
        (**self).contains(pos)
    }
    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        (**self).list_after(after, limit)
    }
    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        (**self).scan_after(after, limit)
    }
    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        (**self).get_many(positions)
    }
    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        (**self).get_near(pos, limit)
    }
    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        (**self).apply(changes, note)
    }
    fn count(&self) -> Result<u64> {
        (**self).count()
    }
    fn is_read_only(&self) -> bool {
        (**self).is_read_only()
    }
    fn data_version(&self) -> Option<u64> {
        (**self).data_version()
    }
    fn listing_version(&self) -> Option<u64> {
        (**self).listing_version()
    }
    fn last_commit_versions(&self) -> Option<(u64, u64)> {
        (**self).last_commit_versions()
    }
    fn write_mark(&self) -> Result<Option<WriteMark>> {
        (**self).write_mark()
    }
    fn written_after(&self, mark: &WriteMark, after: i64, limit: usize) -> Result<Option<Written>> {
        (**self).written_after(mark, after, limit)
    }
    fn applies_through_server(&self) -> bool {
        (**self).applies_through_server()
    }
    fn other_users(&self) -> Result<Vec<String>> {
        (**self).other_users()
    }
    fn read_consistent(
        &self,
        scratch: &std::path::Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<Consistency> {
        (**self).read_consistent(scratch, each)
    }
}
