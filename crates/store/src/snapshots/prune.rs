//! `worldfs snapshot prune`: which snapshots a retention policy keeps
//! (restic's `forget --keep-*` rules), and their removal with the blobs no
//! snapshot left needs, in one transaction (a pack of which only some
//! blobs go is written again without them).
//!
//! Restic's rules: the snapshots are visited newest first; `--keep-last N`
//! keeps the N newest; `--keep-hourly N` keeps the newest snapshot of each
//! of the N newest hours that have one, and so for days and weeks (weeks
//! start on Monday). A snapshot kept by any rule is kept. Times are UTC.

use super::packs::{self, REMOVED};
use super::{SnapshotInfo, Snapshots, index, varint};
use rusqlite::{Connection, params};
use std::collections::HashSet;

/// Which snapshots a prune keeps (restic's rules): the newest `last`, and
/// the newest of each of the last `hourly` hours, `daily` days and
/// `weekly` weeks that have one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// The newest snapshots to keep.
    pub last: usize,
    /// Hours whose newest snapshot is kept.
    pub hourly: usize,
    /// Days whose newest snapshot is kept.
    pub daily: usize,
    /// Weeks (from Monday) whose newest snapshot is kept.
    pub weekly: usize,
}

/// What a prune kept (with the rules that kept each) and removed.
#[derive(Debug, Default, serde::Serialize)]
pub struct Pruned {
    /// The snapshots kept, each with the rules that kept it.
    pub kept: Vec<(String, Vec<&'static str>)>,
    /// The snapshots removed.
    pub removed: Vec<String>,
    /// Blobs no snapshot held any more, removed.
    pub blobs_removed: u64,
    /// Their bytes.
    pub bytes_removed: u64,
}

/// The bucket a snapshot taken at `secs` falls in for a rule.
fn bucket(rule: &str, secs: i64) -> i64 {
    match rule {
        "hourly" => secs.div_euclid(3600),
        "daily" => secs.div_euclid(86_400),
        // Day 0 (1970-01-01) was a Thursday: +3 starts weeks on Monday.
        "weekly" => (secs.div_euclid(86_400) + 3).div_euclid(7),
        _ => secs,
    }
}

impl Policy {
    /// Whether it names no rule.
    pub fn is_empty(&self) -> bool {
        *self == Policy::default()
    }

    /// For each snapshot (oldest first, as listed), the rules that keep it
    /// (none: it goes).
    pub fn apply(&self, snapshots: &[SnapshotInfo]) -> Vec<Vec<&'static str>> {
        let mut rules: [(&'static str, usize, Option<i64>); 4] = [
            ("last", self.last, None),
            ("hourly", self.hourly, None),
            ("daily", self.daily, None),
            ("weekly", self.weekly, None),
        ];
        let mut keep = vec![Vec::new(); snapshots.len()];
        // Newest first; a tie in time keeps the later-taken one.
        let mut order: Vec<usize> = (0..snapshots.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse((snapshots[i].taken, snapshots[i].id)));
        for i in order {
            for (name, left, last) in rules.iter_mut() {
                let b = if *name == "last" { snapshots[i].id } else { bucket(name, snapshots[i].taken) };
                if *left > 0 && *last != Some(b) {
                    keep[i].push(*name);
                    *left -= 1;
                    *last = Some(b);
                }
            }
        }
        keep
    }
}

/// Remove snapshot `gone`: its index rows move to the next snapshot where
/// that one has none of its own (so it holds what it held), else go.
fn fold(conn: &Connection, gone: i64, next: Option<i64>) -> rusqlite::Result<()> {
    if let Some(next) = next {
        conn.execute(
            "INSERT OR IGNORE INTO block_index (part, snap, entries) \
             SELECT part, ?2, entries FROM block_index WHERE snap = ?1",
            params![gone, next],
        )?;
        conn.execute(
            "INSERT OR IGNORE INTO record_index (collection, name, snap, blob) \
             SELECT collection, name, ?2, blob FROM record_index WHERE snap = ?1",
            params![gone, next],
        )?;
    }
    conn.execute("DELETE FROM block_index WHERE snap = ?1", [gone])?;
    conn.execute("DELETE FROM record_index WHERE snap = ?1", [gone])?;
    conn.execute("DELETE FROM snapshots WHERE id = ?1", [gone])?;
    Ok(())
}

/// The blob ids some index row names.
fn live_blobs(conn: &Connection) -> Result<HashSet<i64>, String> {
    let mut live = HashSet::new();
    let mut stmt = conn.prepare("SELECT part, entries FROM block_index").map_err(|e| e.to_string())?;
    let mut rows = stmt.query([]).map_err(|e| e.to_string())?;
    while let Some(r) = rows.next().map_err(|e| e.to_string())? {
        let part: i64 = r.get(0).map_err(|e| e.to_string())?;
        let bytes = r.get_ref(1).and_then(|v| Ok(v.as_blob()?)).map_err(|e| e.to_string())?;
        // A part that does not decode would lose its blobs here: refused.
        live.extend(index::decode(part, bytes)?.into_iter().map(|(_, id)| id));
    }
    let mut stmt = conn.prepare("SELECT blob FROM record_index WHERE blob IS NOT NULL").map_err(|e| e.to_string())?;
    for id in stmt.query_map([], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string())? {
        live.insert(id.map_err(|e| e.to_string())?);
    }
    Ok(live)
}

/// Blobs no index row names any more: removed (a pack left with none is
/// removed, one left with some written again); gives their count and bytes.
fn collect_garbage(conn: &Connection) -> Result<(u64, u64), String> {
    let live = live_blobs(conn)?;
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut stmt = conn.prepare("SELECT first, count, hashes, sizes, data FROM packs").map_err(|e| e.to_string())?;
    let all: Vec<packs::PackRow> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| e.to_string())?;
    for (first, count, hashes, sizes, data) in all {
        let pack = packs::unpack(first, count, hashes, &sizes, &data)?;
        let dead: Vec<usize> =
            (0..pack.count()).filter(|&i| !pack.removed(i) && !live.contains(&(first + i as i64))).collect();
        if dead.is_empty() {
            continue;
        }
        n += dead.len() as u64;
        bytes += dead.iter().map(|&i| pack.bytes(i).len() as u64).sum::<u64>();
        let kept = (0..pack.count()).filter(|&i| !pack.removed(i) && !dead.contains(&i)).count();
        if kept == 0 {
            conn.execute("DELETE FROM packs WHERE first = ?1", [first]).map_err(|e| e.to_string())?;
            continue;
        }
        let (mut hashes, mut sizes, mut raw) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..pack.count() {
            let gone = pack.removed(i) || dead.binary_search(&i).is_ok();
            hashes.extend_from_slice(if gone { &REMOVED[..] } else { pack.hash(i) });
            let b = if gone { &[][..] } else { pack.bytes(i) };
            varint::write(b.len() as u64, &mut sizes);
            raw.extend_from_slice(b);
        }
        packs::write_pack(conn, first, &hashes, &sizes, &raw).map_err(|e| e.to_string())?;
    }
    Ok((n, bytes))
}

impl Snapshots {
    /// Keep what `policy` keeps, remove the rest and the blobs only they
    /// needed; `dry_run`: only say what would go.
    pub fn prune(&mut self, policy: &Policy, dry_run: bool) -> Result<Pruned, String> {
        if policy.is_empty() {
            return Err("say what to keep: --keep-last, --keep-hourly, --keep-daily or --keep-weekly \
                        (removing every snapshot is not a prune)"
                .into());
        }
        let err = self.err();
        let path = self.path();
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(&err)?;
        let all = super::list(&tx).map_err(&err)?;
        let keep = policy.apply(&all);
        let mut out = Pruned::default();
        for (s, rules) in all.iter().zip(&keep) {
            if rules.is_empty() {
                out.removed.push(s.name.clone());
            } else {
                out.kept.push((s.name.clone(), rules.clone()));
            }
        }
        if dry_run || out.removed.is_empty() {
            return Ok(out);
        }
        for (i, s) in all.iter().enumerate() {
            if keep[i].is_empty() {
                let next = all[i + 1..].first().map(|n| n.id);
                fold(&tx, s.id, next).map_err(&err)?;
            }
        }
        // The oldest snapshot left holds everything itself: a row saying a
        // block is gone says nothing there.
        tx.execute("DELETE FROM block_index WHERE length(entries) = 0 AND snap = (SELECT min(id) FROM snapshots)", [])
            .map_err(&err)?;
        tx.execute("DELETE FROM record_index WHERE blob IS NULL AND snap = (SELECT min(id) FROM snapshots)", [])
            .map_err(&err)?;
        (out.blobs_removed, out.bytes_removed) =
            collect_garbage(&tx).map_err(|e| format!("{}: {e}", path.display()))?;
        tx.commit().map_err(&err)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(id: i64, taken: i64) -> SnapshotInfo {
        SnapshotInfo {
            id,
            name: format!("s{id}"),
            taken,
            world: String::new(),
            map: String::new(),
            blocks: 0,
            records: 0,
            one_instant: true,
            consistency: String::new(),
            new_blobs: 0,
            new_bytes: 0,
            index_rows: 0,
        }
    }

    /// Snapshots every 20 minutes for three days, starting on a Sunday.
    fn every_20_minutes() -> Vec<SnapshotInfo> {
        let sunday = 1_763_856_000; // 2025-11-23T00:00:00Z, a Sunday
        (0..216).map(|i| snap(i + 1, sunday + i * 1200)).collect()
    }

    fn kept(p: Policy, all: &[SnapshotInfo]) -> Vec<i64> {
        p.apply(all).iter().zip(all).filter(|(k, _)| !k.is_empty()).map(|(_, s)| s.id).collect()
    }

    #[test]
    fn rules_keep_what_restic_keeps() {
        let all = every_20_minutes();
        assert_eq!(kept(Policy { last: 3, ..Policy::default() }, &all), [214, 215, 216]);
        // The newest of each of the 4 newest hours: minute 40 of each.
        assert_eq!(kept(Policy { hourly: 4, ..Policy::default() }, &all), [207, 210, 213, 216]);
        // The newest of each day: 23:40 of Sunday, Monday, Tuesday.
        assert_eq!(kept(Policy { daily: 7, ..Policy::default() }, &all), [72, 144, 216]);
        // Sunday ends a week; Monday and Tuesday are the next one.
        assert_eq!(kept(Policy { weekly: 5, ..Policy::default() }, &all), [72, 216]);
        let both = Policy { last: 2, daily: 2, ..Policy::default() };
        let keep = both.apply(&all);
        assert_eq!(kept(both, &all), [144, 215, 216]);
        assert_eq!(keep[215], ["last", "daily"], "every rule that keeps it is named");
        assert!(Policy::default().is_empty());
    }
}
