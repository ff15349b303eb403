//! The SQLite connections of one map, shared by the FUSE threads, with read
//! transactions held open for a few milliseconds.
//!
//! A query outside a transaction makes SQLite take and drop its shared lock
//! on the file: several `fcntl` calls, a `stat` of the journal and a read
//! of the header each time, 40 % of the CPU of reading one block. A walk
//! reads thousands of blocks a second, so reads run inside a transaction
//! that stays open on the pooled connection for up to `READ_HOLD` and is
//! reused by the next read. While it is open:
//!
//! * nobody can commit to the map (a writer needs every shared lock gone),
//!   so the snapshot is not stale, and the header's change counter
//!   (`data_version`) still describes it;
//! * another process that writes (a running server) waits at most
//!   `READ_HOLD`: a thread of its own ends transactions that old on idle
//!   connections, and a write of ours ends them all before it begins;
//! * a read after one of our writes starts a new transaction, so it sees
//!   the write.

use super::{Result, StoreError};
use parking_lot::{Condvar, Mutex, MutexGuard};
use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A SQLite error as a store's error: busy and locked, read-only and a
/// full disk keep their meaning.
pub(super) fn backend(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, ref m) = e {
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) {
            return StoreError::Busy(m.clone().unwrap_or_else(|| f.to_string()));
        }
        if f.code == rusqlite::ErrorCode::ReadOnly {
            return StoreError::ReadOnly;
        }
        if f.code == rusqlite::ErrorCode::DiskFull {
            return StoreError::Full(m.clone().unwrap_or_else(|| f.to_string()));
        }
    }
    StoreError::Backend(e.to_string())
}

/// How long a read transaction may stay open.
pub const READ_HOLD: Duration = Duration::from_millis(5);

/// Idle connections kept (more are closed when returned).
const MAX_IDLE: usize = 8;

struct Pooled {
    conn: Connection,
    /// When its open read transaction began, and the write count then.
    reading: Option<(Instant, u64)>,
}

impl Pooled {
    /// End the read transaction, if one is open. False if the connection
    /// is in a state to be thrown away.
    fn end_read(&mut self) -> bool {
        if self.reading.take().is_none() || self.conn.is_autocommit() {
            return true;
        }
        self.conn.execute_batch("COMMIT").is_ok()
    }
}

#[derive(Default)]
struct Idle {
    conns: Vec<Pooled>,
    closing: bool,
    /// The janitor waits without a deadline (nothing held): wake it.
    janitor_asleep: bool,
}

struct Shared {
    idle: Mutex<Idle>,
    wake: Condvar,
    /// Writes committed through this pool.
    writes: AtomicU64,
    /// How long a read transaction may stay open.
    hold: Duration,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Idle> {
        self.idle.lock()
    }
}

pub struct Pool {
    shared: Arc<Shared>,
    /// Started with the first read transaction left open.
    /// None when the thread could not be started (said in the log).
    janitor: OnceLock<Option<JoinHandle<()>>>,
}

impl Pool {
    pub fn new() -> Pool {
        Pool::with_hold(READ_HOLD)
    }

    pub fn with_hold(hold: Duration) -> Pool {
        let shared = Shared { idle: Mutex::default(), wake: Condvar::new(), writes: AtomicU64::new(0), hold };
        Pool { shared: Arc::new(shared), janitor: OnceLock::new() }
    }

    /// Add a fresh connection.
    pub fn add(&self, conn: Connection) {
        self.shared.lock().conns.push(Pooled { conn, reading: None });
    }

    /// Close every idle connection.
    pub fn clear(&self) {
        self.shared.lock().conns.clear();
    }

    fn take(&self, connect: impl FnOnce() -> Result<Connection>) -> Result<Pooled> {
        match self.shared.lock().conns.pop() {
            Some(p) => Ok(p),
            None => Ok(Pooled { conn: connect()?, reading: None }),
        }
    }

    fn give_back(&self, p: Pooled) {
        let holds = p.reading.is_some();
        let mut idle = self.shared.lock();
        if idle.conns.len() < MAX_IDLE {
            idle.conns.push(p);
        }
        if holds && idle.janitor_asleep {
            idle.janitor_asleep = false;
            self.shared.wake.notify_one();
        }
        drop(idle);
        if holds {
            self.start_janitor();
        }
    }

    /// Run reads inside a read transaction (see the module comment).
    pub fn read<T>(
        &self,
        connect: impl FnOnce() -> Result<Connection>,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let mut p = self.take(connect)?;
        let writes = self.shared.writes.load(Ordering::SeqCst);
        if let Some((since, w)) = p.reading
            && (since.elapsed() >= self.shared.hold || w != writes)
            && !p.end_read()
        {
            return Err(StoreError::Backend("could not end a read transaction".into()));
        }
        if p.reading.is_none() {
            p.conn.execute_batch("BEGIN").map_err(backend)?;
            p.reading = Some((Instant::now(), writes));
        }
        let r = f(&p.conn);
        // A failed read (the map busy, say) may leave the transaction
        // without its lock: start the next one afresh.
        if r.is_err() && !p.end_read() {
            return r;
        }
        self.give_back(p);
        r
    }

    /// Run a write; every idle read transaction is ended first, since the
    /// commit needs all shared locks gone, ours included.
    pub fn write<T>(
        &self,
        connect: impl FnOnce() -> Result<Connection>,
        f: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Result<T> {
        let mut p = self.take(connect)?;
        self.shared.lock().conns.retain_mut(Pooled::end_read);
        if !p.end_read() {
            return Err(StoreError::Backend("could not end a read transaction".into()));
        }
        let r = f(&mut p.conn);
        self.shared.writes.fetch_add(1, Ordering::SeqCst);
        self.give_back(p);
        r
    }

    fn start_janitor(&self) {
        self.janitor.get_or_init(|| {
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("worldfs-sqlite".into())
                .spawn(move || janitor(&shared))
                .inspect_err(|e| {
                    log::error!(
                        "cannot start the thread that ends idle read transactions ({e}): \
                         they stay open until this mount writes"
                    )
                })
                .ok()
        });
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new()
    }
}

/// End read transactions held longer than the hold on idle connections.
fn janitor(shared: &Shared) {
    let mut idle = shared.lock();
    while !idle.closing {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        idle.conns.retain_mut(|p| match p.reading {
            Some((since, _)) if now >= since + shared.hold => p.end_read(),
            Some((since, _)) => {
                let due = since + shared.hold;
                next = Some(next.map_or(due, |n| n.min(due)));
                true
            }
            None => true,
        });
        match next {
            Some(due) => {
                shared.wake.wait_for(&mut idle, due.saturating_duration_since(now));
            }
            None => {
                idle.janitor_asleep = true;
                shared.wake.wait(&mut idle);
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_all();
        if let Some(Some(j)) = self.janitor.take() {
            let _ = j.join();
        }
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{OptionalExtension, params};
    use std::path::{Path, PathBuf};

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.sqlite");
        Connection::open(&path).unwrap().execute_batch("CREATE TABLE t (k INT PRIMARY KEY, v INT)").unwrap();
        (d, path)
    }

    fn connect(path: &Path) -> impl FnOnce() -> Result<Connection> + '_ {
        move || {
            let c = Connection::open(path).map_err(backend)?;
            c.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
            Ok(c)
        }
    }

    fn read_v(pool: &Pool, path: &Path) -> Option<i64> {
        pool.read(connect(path), |c| {
            c.query_row("SELECT v FROM t WHERE k = 1", [], |r| r.get(0)).optional().map_err(backend)
        })
        .unwrap()
    }

    fn write_v(pool: &Pool, path: &Path, v: i64) -> Result<usize> {
        pool.write(connect(path), |c| c.execute("INSERT OR REPLACE INTO t VALUES (1, ?1)", params![v]).map_err(backend))
    }

    fn holds_read(pool: &Pool) -> bool {
        pool.shared.lock().conns.iter().any(|p| p.reading.is_some() && !p.conn.is_autocommit())
    }

    #[test]
    fn reads_share_a_transaction_and_our_writes_end_it() {
        let (_d, path) = setup();
        let pool = Pool::with_hold(Duration::from_secs(600));
        // Two reads at once: two connections, each left holding a read.
        pool.read(connect(&path), |_| Ok(read_v(&pool, &path))).unwrap();
        let held = pool.shared.lock().conns.iter().filter(|p| !p.conn.is_autocommit()).count();
        assert_eq!(held, 2, "a read leaves its transaction open");
        for v in 1..=3 {
            write_v(&pool, &path, v).expect("our own held reads do not block our writes");
            assert_eq!(read_v(&pool, &path), Some(v), "a read after a write sees it");
        }
    }

    #[test]
    fn another_process_writes_once_the_hold_is_over() {
        let (_d, path) = setup();
        let hold = Duration::from_millis(300);
        let pool = Pool::with_hold(hold);
        let t = Instant::now();
        read_v(&pool, &path);
        let other = Connection::open(&path).unwrap();
        // A writer that does not wait is refused while the snapshot is held.
        let refused = other.execute("INSERT INTO t VALUES (1, 7)", []);
        if t.elapsed() < hold {
            let e = refused.expect_err("the read transaction holds a shared lock");
            assert!(e.to_string().contains("locked"), "{e}");
        }
        while holds_read(&pool) {
            assert!(t.elapsed() < Duration::from_secs(10), "the janitor never ended the read transaction");
            std::thread::sleep(Duration::from_millis(5));
        }
        other.execute("INSERT OR REPLACE INTO t VALUES (1, 8)", []).expect("no lock is left once idle");
        assert_eq!(read_v(&pool, &path), Some(8));
    }

    #[test]
    fn a_waiting_writer_gets_in_while_reads_go_on() {
        let (_d, path) = setup();
        let pool = Pool::new();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    read_v(&pool, &path);
                    n += 1;
                }
                n
            });
            std::thread::sleep(Duration::from_millis(20));
            let other = Connection::open(&path).unwrap();
            other.busy_timeout(Duration::from_secs(5)).unwrap();
            other.execute("INSERT INTO t VALUES (1, 9)", []).expect("the writer waits about one hold");
            std::thread::sleep(Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
            assert!(reader.join().unwrap() > 0);
        });
        assert_eq!(read_v(&pool, &path), Some(9));
    }
}
