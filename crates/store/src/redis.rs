//! The Redis map (`backend = redis`; Luanti's `Database_Redis`,
//! src/database/database-redis.cpp of <https://github.com/luanti-org/luanti>):
//! one hash named by `redis_hash`, field = the block's position key in
//! decimal (the legacy `pos` integer), value = the blob. A change is one
//! MULTI/EXEC, WATCHing the blocks it expects, so a block changed by
//! someone else meanwhile makes the whole change fail (it is then refused
//! as a conflict).
//!
//! Listing: Redis keeps no order, so the sorted field list is read once
//! (HKEYS) and kept for the listing that asked for it, for a few seconds.
//! The undo journal is the world's SQLite journal file, written just
//! before EXEC and taken back if EXEC fails (as for PostgreSQL).

mod consistent;

use super::journal;
use super::{BlockPos, Change, MapStore, Note, Result, StoreError};
use parking_lot::Mutex;
use redis::Commands;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The map in a Redis hash (the `redis` backend).
pub struct RedisStore {
    url: String,
    described: String,
    hash: String,
    read_only: bool,
    journal: Option<PathBuf>,
    conn: Mutex<Option<redis::Connection>>,
    /// The sorted positions, and when they were read.
    keys: Mutex<Option<(Instant, Arc<Vec<BlockPos>>)>>,
    /// The last sorted positions read, kept past writes and the TTL: only
    /// a hint of which fields `get_near` asks for with the one it needs.
    near_hint: Mutex<Option<Arc<Vec<BlockPos>>>>,
    /// The hash's length `listing_version` last read.
    listed_len: Mutex<Option<u64>>,
}

/// The name our connections carry in `CLIENT LIST`.
pub const CLIENT_NAME: &str = "worldfs";

/// How long a listing may use the field list it read.
const KEYS_TTL: Duration = Duration::from_secs(5);

fn classify(e: redis::RedisError) -> StoreError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        return StoreError::Unreachable(e.to_string());
    }
    StoreError::Backend(e.to_string())
}

impl RedisStore {
    /// `address`: host name or a unix socket path (with a `/`), as the
    /// engine's `redis_address`.
    pub fn open(address: &str, port: u16, hash: &str, password: Option<&str>, read_only: bool) -> Result<RedisStore> {
        let auth = password.map(|p| format!(":{}@", urlencode(p))).unwrap_or_default();
        let url = if address.contains('/') {
            let pw = password.map(|p| format!("?pass={}", urlencode(p))).unwrap_or_default();
            format!("redis+unix://{address}{pw}")
        } else {
            format!("redis://{auth}{address}:{port}/")
        };
        let described = if address.contains('/') { address.to_string() } else { format!("{address}:{port}") };
        let s = RedisStore {
            url,
            described,
            hash: hash.to_string(),
            read_only,
            journal: None,
            conn: Mutex::new(None),
            keys: Mutex::new(None),
            near_hint: Mutex::new(None),
            listed_len: Mutex::new(None),
        };
        s.with(|c| redis::cmd("PING").query::<String>(c))?;
        Ok(s)
    }

    /// Keep the undo journal in the SQLite file at `path` (created if missing).
    pub fn enable_journal(&mut self, path: &std::path::Path) -> Result<()> {
        journal::attached(path)?;
        self.journal = Some(path.to_path_buf());
        Ok(())
    }

    fn with<T>(&self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T> {
        let mut guard = self.conn.lock();
        if guard.is_none() {
            let client = redis::Client::open(self.url.as_str()).map_err(classify)?;
            let c = client
                .get_connection_with_timeout(Duration::from_secs(5))
                .map_err(|e| StoreError::Unreachable(format!("redis at {}: {e}", self.described)))?;
            let mut c = c;
            // Named, so that the server guard can tell our connections
            // from a Luanti server's (the engine names none).
            redis::cmd("CLIENT").arg("SETNAME").arg(CLIENT_NAME).query::<()>(&mut c).map_err(classify)?;
            *guard = Some(c);
        }
        // Out of its slot while it runs: a connection whose request panics
        // (perhaps still WATCHing the map) is dropped, not used again.
        let Some(mut conn) = guard.take() else {
            return Err(StoreError::Unreachable("the connection was lost before its first request".into()));
        };
        let r = f(&mut conn);
        if !matches!(&r, Err(e) if e.is_io_error() || e.is_connection_dropped()) {
            *guard = Some(conn);
        }
        r.map_err(classify)
    }

    /// Shared, not copied: a listing asks for it once a page.
    fn sorted_keys(&self, fresh: bool) -> Result<Arc<Vec<BlockPos>>> {
        let mut k = self.keys.lock();
        if !fresh
            && let Some((at, keys)) = &*k
            && at.elapsed() < KEYS_TTL
        {
            return Ok(keys.clone());
        }
        let fields: Vec<String> = self.with(|c| c.hkeys(&self.hash))?;
        let mut keys = Vec::with_capacity(fields.len());
        let mut odd = Vec::new();
        for f in &fields {
            // The engine writes the legacy position key in decimal; anything
            // else is not a block it would ever read.
            match f
                .parse::<i64>()
                .ok()
                .filter(|k| BlockPos::from_legacy_key(*k).legacy_key() == *k && k.to_string() == *f)
            {
                Some(k) => keys.push(BlockPos::from_legacy_key(k)),
                None => odd.push(f.as_str()),
            }
        }
        if !odd.is_empty() {
            log::warn!(
                "redis hash {}: {} field(s) are not block positions and are not shown (the engine never reads them): {}",
                self.hash,
                odd.len(),
                odd.iter().take(5).map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ")
            );
        }
        keys.sort();
        let keys = Arc::new(keys);
        *k = Some((Instant::now(), keys.clone()));
        *self.near_hint.lock() = Some(keys.clone());
        Ok(keys)
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn field(p: BlockPos) -> String {
    p.legacy_key().to_string()
}

impl MapStore for RedisStore {
    fn describe(&self) -> String {
        format!("redis ({}, hash {})", self.described, self.hash)
    }

    fn get(&self, pos: BlockPos) -> Result<Option<Vec<u8>>> {
        let v: Option<Vec<u8>> = self.with(|c| c.hget(&self.hash, field(pos)))?;
        Ok(v.filter(|d| !d.is_empty()))
    }

    fn list_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<BlockPos>> {
        // A listing from the start reads the fields afresh.
        let keys = self.sorted_keys(after.is_none())?;
        let from = match after {
            None => 0,
            Some(p) => keys.partition_point(|k| *k <= p),
        };
        Ok(keys[from..].iter().take(limit).copied().collect())
    }

    fn scan_after(&self, after: Option<BlockPos>, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let positions = self.list_after(after, limit)?;
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let fields: Vec<String> = positions.iter().map(|p| field(*p)).collect();
        let values: Vec<Option<Vec<u8>>> = self.with(|c| redis::cmd("HMGET").arg(&self.hash).arg(&fields).query(c))?;
        Ok(positions.into_iter().zip(values).filter_map(|(p, v)| v.filter(|d| !d.is_empty()).map(|d| (p, d))).collect())
    }

    /// With the positions of the last listing as a hint (the hash has no
    /// order to ask by), the fields around `pos` in one HMGET; without
    /// one, `pos` alone. Whatever the hint misses is only not read ahead.
    fn get_near(&self, pos: BlockPos, limit: usize) -> Result<Vec<(BlockPos, Vec<u8>)>> {
        let hint = self.near_hint.lock().clone();
        let mut positions = match hint {
            Some(keys) => {
                let at = keys.partition_point(|k| *k < pos);
                let from = at.saturating_sub(limit / 2);
                keys[from..].iter().take(limit).copied().collect()
            }
            None => Vec::new(),
        };
        if !positions.contains(&pos) {
            positions.push(pos);
        }
        let values = self.get_many(&positions)?;
        Ok(positions.into_iter().zip(values).filter_map(|(p, v)| v.map(|d| (p, d))).collect())
    }

    fn get_many(&self, positions: &[BlockPos]) -> Result<Vec<Option<Vec<u8>>>> {
        if positions.is_empty() {
            return Ok(Vec::new());
        }
        let fields: Vec<String> = positions.iter().map(|p| field(*p)).collect();
        let values: Vec<Option<Vec<u8>>> = self.with(|c| redis::cmd("HMGET").arg(&self.hash).arg(&fields).query(c))?;
        Ok(values.into_iter().map(|v| v.filter(|d| !d.is_empty())).collect())
    }

    fn apply(&self, changes: &[Change], note: &Note) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly);
        }
        let fields: Vec<String> = changes.iter().map(|c| field(c.pos())).collect();
        let hash = self.hash.clone();
        let journal = self.journal.clone();
        let r = self.with(|c| {
            // WATCH works on keys, not fields: the whole hash is watched,
            // so any concurrent write to the map retries nothing and is
            // refused as a conflict (safe, if coarse).
            redis::cmd("WATCH").arg(&hash).query::<()>(c)?;
            let now: Vec<Option<Vec<u8>>> =
                if fields.is_empty() { Vec::new() } else { redis::cmd("HMGET").arg(&hash).arg(&fields).query(c)? };
            let current = |p: BlockPos| {
                changes.iter().position(|ch| ch.pos() == p).and_then(|i| now[i].clone()).filter(|d| !d.is_empty())
            };
            if let Ok(Some(refusal)) | Err(refusal) = super::unmet_expectation(changes, |p| Ok(current(p))) {
                redis::cmd("UNWATCH").query::<()>(c)?;
                return Ok(Err(refusal));
            }
            let mut pending = None;
            if let Some(j) = &journal {
                let steps: Vec<journal::Step<'_>> = changes
                    .iter()
                    .filter_map(|ch| match ch {
                        Change::Put(p, d) => Some((*p, current(*p), Some(d.as_slice()))),
                        Change::Delete(p) => Some((*p, current(*p), None)),
                        Change::Expect(..) => None,
                    })
                    .collect();
                match journal::Pending::blocks(j, note, &steps) {
                    Ok(p) => pending = Some(p),
                    Err(e) => {
                        redis::cmd("UNWATCH").query::<()>(c)?;
                        return Ok(Err(e));
                    }
                }
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            for ch in changes {
                match ch {
                    Change::Put(p, d) => {
                        pipe.hset(&hash, field(*p), d.as_slice()).ignore();
                    }
                    Change::Delete(p) => {
                        pipe.hdel(&hash, field(*p)).ignore();
                    }
                    Change::Expect(..) => {}
                }
            }
            let done: redis::RedisResult<Option<()>> = pipe.query(c);
            // Not written: the journal entry is taken back (`pending` dropped).
            match done {
                Ok(Some(())) => {
                    if let Some(p) = pending {
                        p.kept();
                    }
                    Ok(Ok(()))
                }
                Ok(None) => Ok(Err(StoreError::Conflict(
                    "the map was changed by someone else during this change; nothing written: try again".into(),
                ))),
                Err(e) => Err(e),
            }
        });
        *self.keys.lock() = None;
        r?
    }

    /// The blocks listed (fields that are not block positions left out).
    fn count(&self) -> Result<u64> {
        Ok(self.sorted_keys(true)?.len() as u64)
    }

    /// The hash's number of fields (HLEN, one round trip): Redis keeps no
    /// change counter, but a block added or deleted changes this (unless
    /// another is deleted or added at once), and it is what moves a
    /// listing of `blocks/`. Changes in place are not seen: no
    /// `data_version`.
    /// When it moved, the kept field list is dropped, so that the listing
    /// the kernel then asks for has the new block.
    fn listing_version(&self) -> Option<u64> {
        let len: u64 = self.with(|c| c.hlen(&self.hash)).ok()?;
        let mut listed = self.listed_len.lock();
        if listed.is_some_and(|l| l != len) {
            *self.keys.lock() = None;
        }
        *listed = Some(len);
        Some(len)
    }

    /// Clients of this Redis server that are not worldfs: a Luanti server
    /// stays connected while it runs. Redis cannot tell which hash a client
    /// uses, so any other client counts.
    fn other_users(&self) -> Result<Vec<String>> {
        let list: String = self.with(|c| redis::cmd("CLIENT").arg("LIST").query(c))?;
        Ok(list
            .lines()
            .filter(|l| {
                let name = l.split(' ').find_map(|kv| kv.strip_prefix("name=")).unwrap_or("");
                name != CLIENT_NAME
            })
            .map(|l| {
                let get = |k: &str| l.split(' ').find_map(|kv| kv.strip_prefix(k)).unwrap_or("?").to_string();
                format!("Redis client {} from {}", get("id="), get("addr="))
            })
            .collect())
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn read_consistent(
        &self,
        _scratch: &std::path::Path,
        each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
    ) -> Result<super::Consistency> {
        consistent::read_consistent(self, each)
    }
}
