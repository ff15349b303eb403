//! The whole map as one instant, for `worldfs snapshot`. The engine saves
//! a Redis map in MULTI/EXEC transactions (one per save), but a scan of a
//! hash (HSCAN) is no transaction: a save during it may be seen in part.
//! So the hash is WATCHed while it is scanned: if anything wrote it
//! meanwhile, an empty MULTI/EXEC afterwards fails, and the scan is done
//! again. After `SCANS` tries the hash is read with one HGETALL, which
//! Redis answers as one command (no other client is served meanwhile).
//! Either way the blocks are held in memory until the read is known to be
//! one instant (a Redis map is in memory on the Redis server too).

use super::RedisStore;
use crate::{BlockPos, Consistency, Result};

/// Scans tried before the one HGETALL.
const SCANS: u32 = 3;

/// Fields asked for per HSCAN call.
const FIELDS_PER_SCAN: usize = 1000;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Every field of the hash by HSCAN, and whether nothing wrote the hash
/// meanwhile.
fn scan_watched(c: &mut redis::Connection, hash: &str) -> redis::RedisResult<(Fields, bool)> {
    redis::cmd("WATCH").arg(hash).query::<()>(c)?;
    let mut out = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, flat): (String, Vec<Vec<u8>>) =
            redis::cmd("HSCAN").arg(hash).arg(&cursor).arg("COUNT").arg(FIELDS_PER_SCAN).query(c)?;
        let mut it = flat.into_iter();
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            out.push((f, v));
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let done: Option<()> = redis::pipe().atomic().cmd("PING").ignore().query(c)?;
    Ok((out, done.is_some()))
}

/// The block position of a field the engine would read (the decimal
/// legacy key), else None.
fn pos_of(field: &[u8]) -> Option<BlockPos> {
    let s = std::str::from_utf8(field).ok()?;
    let k: i64 = s.parse().ok()?;
    let p = BlockPos::from_legacy_key(k);
    (p.legacy_key() == k && k.to_string() == s).then_some(p)
}

pub(super) fn read_consistent(
    store: &RedisStore,
    each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
) -> Result<Consistency> {
    let mut how = None;
    let mut fields = Vec::new();
    for attempt in 1..=SCANS {
        let (got, unchanged) = store.with(|c| scan_watched(c, &store.hash))?;
        if unchanged {
            how = Some(format!(
                "HSCAN of the hash with no write to it meanwhile (WATCH; {attempt} scan(s)): one instant"
            ));
            fields = got;
            break;
        }
    }
    let how = match how {
        Some(h) => h,
        None => {
            fields = store.with(|c| redis::cmd("HGETALL").arg(&store.hash).query::<Fields>(c))?;
            format!("one HGETALL (the hash was written during each of {SCANS} scans): one instant")
        }
    };
    let mut odd = 0u64;
    for (f, v) in &fields {
        match pos_of(f) {
            Some(p) if !v.is_empty() => each(p, v)?,
            Some(_) => {}
            None => odd += 1,
        }
    }
    if odd > 0 {
        log::warn!("redis hash {}: {odd} field(s) that are not block positions were left out", store.hash);
    }
    Ok(Consistency { one_instant: true, how })
}
