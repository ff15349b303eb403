//! The PostgreSQL map (`backend = postgresql`; Luanti's
//! `MapDatabasePostgreSQL`, src/database/database-postgresql.cpp of
//! <https://github.com/luanti-org/luanti>): table
//! `blocks(posX, posY, posZ, data BYTEA)`, the coordinates int4 before
//! engine 5.12 and smallint since (both read and written). Keyset-paged
//! listing, every change one transaction. The connection string is
//! world.mt's `pgsql_connection` (libpq keyword form).
//!
//! The undo journal stays the world's SQLite journal file: an entry is
//! committed just before the PostgreSQL transaction and taken back if that
//! transaction fails; a crash between the two leaves an entry that
//! `worldfs undo` reports as a conflict (the block does not hold what the
//! entry says), never a silent loss (docs/reliability.md).

mod consistent;

use super::journal;
use super::{BlockPos, Change, MapStore, Note, Result, StoreError};
use parking_lot::Mutex;
use postgres::{Client, NoTls};
use std::path::PathBuf;

/// The map in a PostgreSQL database (the `postgresql` backend).
pub struct PgStore {
    conninfo: String,
    read_only: bool,
    journal: Option<PathBuf>,
    /// None after a lost connection: the next call connects again.
    client: Mutex<Option<Client>>,
    /// Whether the coordinate columns are smallint (5.12+) or int4.
    small: bool,
    /// The data version at the start of this store's last commit and just
    /// after it (`last_commit_versions`).
    last_commit: Mutex<Option<(u64, u64)>>,
}

/// The cluster's MVCC snapshot (lowest running transaction, next
/// transaction id, the ones running): two equal snapshots see the same
/// rows, and any commit in between changes it. The WAL position, used
/// before, also moves when a read prunes a page or vacuum runs, so a
/// mount took its own reads for another process's commit and built its
/// name index again on almost every write (issue 28).
const SNAPSHOT: &str = "SELECT txid_current_snapshot()::text";

/// The data version: a 64-bit FNV-1a hash of the snapshot's text (stable
/// across builds: the name index keeps it in its file).
fn snapshot_version(c: &mut impl postgres::GenericClient) -> std::result::Result<u64, postgres::Error> {
    let text: String = c.query_one(SNAPSHOT, &[])?.get(0);
    Ok(text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)))
}

/// A connection string for messages: the password left out.
fn redacted(conninfo: &str) -> String {
    conninfo
        .split_whitespace()
        .map(|kv| if kv.starts_with("password=") { "password=***" } else { kv })
        .collect::<Vec<_>>()
        .join(" ")
}

fn classify(e: postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error().filter(|_| !e.is_closed()) else {
        // I/O, a closed connection, a refused connect: nothing was committed
        return StoreError::Unreachable(e.to_string());
    };
    let code = db.code().code();
    match code {
        "25006" => StoreError::ReadOnly,
        "53100" => StoreError::Full(db.message().to_string()),
        "55P03" | "40P01" | "40001" => StoreError::Busy(db.message().to_string()),
        _ => StoreError::Backend(format!("{} ({code})", db.message())),
    }
}

/// The name our sessions carry in `pg_stat_activity`, so that the server
/// guard can tell worldfs's own connections (from any machine) from a
/// Luanti server's (the engine sets no application_name).
pub const APPLICATION_NAME: &str = "worldfs";

/// Connect as `conninfo` says, naming the session as ours.
fn connect(conninfo: &str) -> Result<Client> {
    let mut config: postgres::Config =
        conninfo.parse().map_err(|e| StoreError::Backend(format!("pgsql_connection: {e} ({})", redacted(conninfo))))?;
    config.application_name(APPLICATION_NAME);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    probe_tcp_hosts(&config).map_err(|e| StoreError::Unreachable(format!("{e} ({})", redacted(conninfo))))?;
    config.connect(NoTls).map_err(|e| StoreError::Unreachable(format!("{} ({})", e, redacted(conninfo))))
}

/// How long a connect to an unanswering host may take (libpq's
/// `connect_timeout` when the connection string names none).
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Check that some TCP host of `config` has a server listening, before the
/// PostgreSQL handshake. When nothing listens on a port of the kernel's
/// ephemeral range (a container's mapped port, say), a connect to it can be
/// given that same port as its own and connect to itself; the handshake
/// would then wait for ever for its own echo, hanging every request of the
/// mount. Unix sockets cannot do that and are not probed.
fn probe_tcp_hosts(config: &postgres::Config) -> std::result::Result<(), String> {
    use postgres::config::Host;
    use std::net::{TcpStream, ToSocketAddrs};
    let ports = config.get_ports();
    let mut failures = Vec::new();
    for (i, host) in config.get_hosts().iter().enumerate() {
        let Host::Tcp(name) = host else { return Ok(()) };
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let addrs = match (name.as_str(), port).to_socket_addrs() {
            Ok(addrs) => addrs,
            Err(e) => {
                failures.push(format!("{name}:{port}: {e}"));
                continue;
            }
        };
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(s) if connected_to_itself(&s) => {
                    failures.push(format!("{addr}: no server listens (the connect reached itself)"))
                }
                Ok(_) => return Ok(()),
                Err(e) => failures.push(format!("{addr}: {e}")),
            }
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(format!("cannot connect to {}", failures.join("; "))) }
}

/// Whether a TCP connection's two ends are one socket (a self-connect).
fn connected_to_itself(s: &std::net::TcpStream) -> bool {
    matches!((s.local_addr(), s.peer_addr()), (Ok(a), Ok(b)) if a == b)
}

impl PgStore {
    /// Connect to the map named by `conninfo`; the `blocks` table must
    /// exist (a server makes it).
    pub fn open(conninfo: &str, read_only: bool) -> Result<PgStore> {
        let mut client = connect(conninfo)?;
        let types: Vec<String> = client
            .query(
                "SELECT data_type FROM information_schema.columns \
                 WHERE table_name = 'blocks' AND column_name IN ('posx', 'posy', 'posz')",
                &[],
            )
            .map_err(classify)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if types.len() != 3 {
            return Err(StoreError::Backend(format!(
                "no blocks(posX, posY, posZ, data) table in {} (has a server used this database?)",
                redacted(conninfo)
            )));
        }
        let small = types.iter().all(|t| t == "smallint");
        if read_only {
            client.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY").map_err(classify)?;
        }
        Ok(PgStore {
            conninfo: conninfo.to_string(),
            read_only,
            journal: None,
            client: Mutex::new(Some(client)),
            small,
            last_commit: Mutex::new(None),
        })
    }

    /// Keep the undo journal in `path` (the world's SQLite journal file).
    pub fn enable_journal(&mut self, path: &std::path::Path) -> Result<()> {
        journal::attached(path)?;
        self.journal = Some(path.to_path_buf());
        Ok(())
    }

    /// Run `f` on the connection, connecting first when needed; a lost
    /// connection is dropped so that the next call connects again.
    fn with<T>(&self, f: impl FnOnce(&mut Client, bool) -> std::result::Result<T, postgres::Error>) -> Result<T> {
        let mut guard = self.client.lock();
        if guard.as_ref().is_none_or(|c| c.is_closed()) {
            let mut c = connect(&self.conninfo)?;
            if self.read_only {
                c.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY").map_err(classify)?;
            }
            *guard = Some(c);
        }
        let Some(client) = guard.as_mut() else {
            return Err(StoreError::Unreachable("the connection was lost before its first request".into()));
        };
        let r = f(client, self.small);
        if let Err(e) = &r
            && (e.is_closed() || e.as_db_error().is_none())
        {
            *guard = None;
        }
        r.map_err(classify)
    }
}

/// The coordinates as the columns want them.
fn key(p: BlockPos, small: bool) -> [Box<dyn postgres::types::ToSql + Sync>; 3] {
    if small {
        [Box::new(p.x), Box::new(p.y), Box::new(p.z)]
    } else {
        [Box::new(p.x as i32), Box::new(p.y as i32), Box::new(p.z as i32)]
    }
}

fn row_pos(r: &postgres::Row, small: bool) -> BlockPos {
    if small {
        BlockPos::new(r.get(0), r.get(1), r.get(2))
    } else {
        let c = |i: usize| r.get::<_, i32>(i) as i16;
        BlockPos::new(c(0), c(1), c(2))
    }
}

fn refs(k: &[Box<dyn postgres::types::ToSql + Sync>]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    k.iter().map(|b| b.as_ref()).collect()
}

/// Where a page of blocks starts.
#[derive(Clone, Copy)]
enum PageStart {
    First,
    After(BlockPos),
    AtOrAfter(BlockPos),
}

/// Blocks from `from` in (x, y, z) order, with or without their data.
fn page(
    c: &mut Client,
    small: bool,
    from: PageStart,
    limit: usize,
    data: bool,
) -> std::result::Result<Vec<postgres::Row>, postgres::Error> {
    let cols = if data { "posX, posY, posZ, data" } else { "posX, posY, posZ" };
    let limit = limit.min(i64::MAX as usize) as i64;
    let (p, op) = match from {
        PageStart::First => {
            return c.query(&format!("SELECT {cols} FROM blocks ORDER BY posX, posY, posZ LIMIT $1"), &[&limit]);
        }
        PageStart::After(p) => (p, ">"),
        PageStart::AtOrAfter(p) => (p, ">="),
    };
    let k = key(p, small);
    let mut args = refs(&k);
    args.push(&limit);
    c.query(
        &format!(
            "SELECT {cols} FROM blocks WHERE (posX, posY, posZ) {op} ($1, $2, $3) \
             ORDER BY posX, posY, posZ LIMIT $4"
        ),
        &args,
    )
}

/// Positions per query: three parameters each, and a statement takes at
/// most 65 535.
const POSITIONS_PER_QUERY: usize = 1000;

/// The stored blocks among `positions` (one query per thousand), with row
/// locks for a transaction's change when `lock`.
fn select_blocks(
    c: &mut impl postgres::GenericClient,
    small: bool,
    positions: &[BlockPos],
    lock: bool,
) -> std::result::Result<std::collections::HashMap<BlockPos, Vec<u8>>, postgres::Error> {
    let mut found = std::collections::HashMap::new();
    for chunk in positions.chunks(POSITIONS_PER_QUERY) {
        let keys: Vec<_> = chunk.iter().map(|p| key(*p, small)).collect();
        let args: Vec<_> = keys.iter().flat_map(|k| refs(k)).collect();
        let tuples: Vec<String> =
            (0..chunk.len()).map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect();
        let sql = format!(
            "SELECT posX, posY, posZ, data FROM blocks WHERE (posX, posY, posZ) IN ({}){}",
            tuples.join(", "),
            if lock { " FOR UPDATE" } else { "" }
        );
        for r in c.query(&sql, &args)? {
            let data: Vec<u8> = r.get(3);
            if !data.is_empty() {
                found.insert(row_pos(&r, small), data);
            }
        }
    }
    Ok(found)
}

fn after(p: Option<BlockPos>) -> PageStart {
    p.map_or(PageStart::First, PageStart::After)
}

impl MapStore for PgStore {
    fn describe(&self) -> String {
        format!(
            "postgresql ({}), {} coordinates",
            redacted(&self.conninfo),
            if self.small { "smallint" } else { "int4" }
        )
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        self.with(|c, small| {
            let k = key(pos, small);
            let row = c.query_opt("SELECT data FROM blocks WHERE posX = $1 AND posY = $2 AND posZ = $3", &refs(&k))?;
            Ok(row.map(|r| r.get::<_, Vec<u8>>(0)).filter(|d| !d.is_empty()))
        })
    }

    fn list_after(&self, a: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        self.with(|c, small| Ok(page(c, small, after(a), limit, false)?.iter().map(|r| row_pos(r, small)).collect()))
    }

    fn scan_after(&self, a: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        self.with(|c, small| {
            Ok(page(c, small, after(a), limit, true)?
                .iter()
                .map(|r| (row_pos(r, small), r.get::<_, Vec<u8>>(3)))
                .collect())
        })
    }

    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.with(|c, small| select_blocks(c, small, positions, false))?;
        Ok(positions.iter().map(|p| found.get(p).cloned()).collect())
    }

    /// One key-ordered page that starts a little before `pos` in its
    /// column (x, y): a walk in name order reads a column's blocks out of
    /// key order, from either side of the first one read. At most
    /// `limit / 2` positions lie between the start and `pos`, so `pos` is
    /// always within the page.
    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let back = (limit / 2).min(i16::MAX as usize) as i16;
        let from = BlockPos::new(pos.x, pos.y, pos.z.saturating_sub(back));
        self.with(|c, small| {
            Ok(page(c, small, PageStart::AtOrAfter(from), limit.max(1), true)?
                .iter()
                .map(|r| (row_pos(r, small), r.get::<_, Vec<u8>>(3)))
                .filter(|(_, d)| !d.is_empty())
                .collect())
        })
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        // Read what the blocks hold (for expectations and the journal),
        // journal, then change them, all under row locks.
        let mut pending: Option<journal::Pending> = None;
        let r = self.with(|c, small| {
            let mut tx = c.transaction()?;
            // Taken before the row locks, which give the transaction its id.
            let start = snapshot_version(&mut tx)?;
            let mut positions: Vec<BlockPos> = changes.iter().map(|ch| ch.pos()).collect();
            positions.sort();
            positions.dedup();
            let before = select_blocks(&mut tx, small, &positions, true)?;
            let now = |p: BlockPos| before.get(&p).cloned();
            if let Ok(Some(refusal)) | Err(refusal) = super::unmet_expectation(changes, |p| Ok(now(p))) {
                return Ok(Err(refusal));
            }
            for ch in changes {
                let k = key(ch.pos(), small);
                match ch {
                    Change::Put(_, data) => {
                        let mut args = refs(&k);
                        args.push(data);
                        tx.execute(
                            "INSERT INTO blocks (posX, posY, posZ, data) VALUES ($1, $2, $3, $4) \
                             ON CONFLICT (posX, posY, posZ) DO UPDATE SET data = EXCLUDED.data",
                            &args,
                        )?;
                    }
                    Change::Delete(_) => {
                        tx.execute("DELETE FROM blocks WHERE posX = $1 AND posY = $2 AND posZ = $3", &refs(&k))?;
                    }
                    Change::Expect(..) => {}
                }
            }
            if let Some(j) = &self.journal {
                let steps: Vec<journal::Step<'_>> = changes
                    .iter()
                    .filter_map(|ch| match ch {
                        Change::Put(p, d) => Some((*p, now(*p), Some(d.as_slice()))),
                        Change::Delete(p) => Some((*p, now(*p), None)),
                        Change::Expect(..) => None,
                    })
                    .collect();
                match journal::Pending::blocks(j, note, &steps) {
                    Ok(p) => pending = Some(p),
                    Err(e) => return Ok(Err(e)),
                }
            }
            tx.commit()?;
            let end = snapshot_version(c)?;
            *self.last_commit.lock() = Some((start, end));
            Ok(Ok(()))
        });
        let r = match r {
            Ok(inner) => inner,
            Err(e) => Err(e),
        };
        // The change did not happen: neither may its journal entry (the
        // guard takes it back when dropped).
        if r.is_ok()
            && let Some(p) = pending
        {
            p.kept();
        }
        r
    }

    fn count(&self) -> Result<u64> {
        self.with(|c, _| Ok(c.query_one("SELECT count(*) FROM blocks", &[])?.get::<_, i64>(0) as u64))
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The hash of the cluster's snapshot (`SNAPSHOT`): every commit
    /// changes it (other databases' too, which only costs a re-read), reads
    /// and vacuum do not. None without access.
    fn data_version(&self) -> Option<u64> {
        self.with(|c, _| snapshot_version(c)).ok()
    }

    fn last_commit_versions(&self) -> Option<(u64, u64)> {
        *self.last_commit.lock()
    }

    /// Sessions on this database that are not worldfs's: a Luanti server
    /// keeps its connections open while it runs, from whatever machine.
    fn other_users(&self) -> Result<Vec<String>> {
        self.with(|c, _| {
            let rows = c.query(
                "SELECT pid, coalesce(usename, '?'), coalesce(host(client_addr), 'local socket'), \
                        coalesce(application_name, '') \
                 FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid() \
                   AND backend_type = 'client backend' AND coalesce(application_name, '') <> $1",
                &[&APPLICATION_NAME],
            )?;
            Ok(rows
                .iter()
                .map(|r| {
                    let app: String = r.get(3);
                    format!(
                        "PostgreSQL session {} (user {} from {}{})",
                        r.get::<_, i32>(0),
                        r.get::<_, String>(1),
                        r.get::<_, String>(2),
                        if app.is_empty() { String::new() } else { format!(", {app}") }
                    )
                })
                .collect())
        })
    }

    fn read_consistent(
        &self,
        _scratch: &std::path::Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<super::Consistency> {
        consistent::read_consistent(self, each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
    use std::os::fd::FromRawFd;

    /// A port nothing listens on (taken from the kernel, then let go).
    fn closed_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// What a client gets when it connects to a stopped server's port and
    /// the kernel picks that same port as the client's own: a socket bound
    /// to the port and connected to it (TCP simultaneous open).
    fn self_connected() -> TcpStream {
        let port = closed_port();
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be() },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: `sa` points at `addr`, a sockaddr_in of `len` bytes that
        // outlives the calls; the descriptor is checked, then owned by the
        // TcpStream alone.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            assert!(fd >= 0);
            let sa = &addr as *const libc::sockaddr_in as *const libc::sockaddr;
            assert_eq!(libc::bind(fd, sa, len), 0, "bind: {}", std::io::Error::last_os_error());
            assert_eq!(libc::connect(fd, sa, len), 0, "connect: {}", std::io::Error::last_os_error());
            TcpStream::from_raw_fd(fd)
        }
    }

    #[test]
    fn a_connection_to_itself_is_told_from_one_to_a_server() {
        let me = self_connected();
        assert!(connected_to_itself(&me), "{:?} -> {:?}", me.local_addr(), me.peer_addr());
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        assert!(!connected_to_itself(&client));
    }

    #[test]
    fn a_stopped_server_is_unreachable_at_once_with_its_address() {
        let port = closed_port();
        let err = connect(&format!("host=127.0.0.1 port={port} user=x dbname=y password=secret")).err().unwrap();
        let StoreError::Unreachable(why) = err else { panic!("{err:?}") };
        assert!(why.contains(&SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).to_string()), "{why}");
        assert!(why.contains("password=***") && !why.contains("secret"), "{why}");
    }
}
