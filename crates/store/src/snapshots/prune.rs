//! `worldfs snapshot prune`: which snapshots a retention policy keeps
//! (restic's `forget --keep-*` rules), and their removal with the blobs no
//! snapshot left needs, in one transaction.
//!
//! Restic's rules: the snapshots are visited newest first; `--keep-last N`
//! keeps the N newest; `--keep-hourly N` keeps the newest snapshot of each
//! of the N newest hours that have one, and so for days and weeks (weeks
//! start on Monday). A snapshot kept by any rule is kept. Times are UTC.

use super::{SnapshotInfo, Snapshots};
use rusqlite::{Connection, params};

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
            "INSERT OR IGNORE INTO block_index (pos, snap, blob) SELECT pos, ?2, blob FROM block_index WHERE snap = ?1",
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

/// Blobs no index row names any more: removed; gives their count and bytes.
fn collect_garbage(conn: &Connection) -> rusqlite::Result<(u64, u64)> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS live_blobs (id INTEGER PRIMARY KEY);
         DELETE FROM live_blobs;
         INSERT OR IGNORE INTO live_blobs SELECT blob FROM block_index WHERE blob IS NOT NULL;
         INSERT OR IGNORE INTO live_blobs SELECT blob FROM record_index WHERE blob IS NOT NULL;",
    )?;
    let (n, bytes): (i64, i64) = conn.query_row(
        "SELECT count(*), coalesce(sum(size), 0) FROM blobs WHERE id NOT IN (SELECT id FROM live_blobs)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    conn.execute("DELETE FROM blobs WHERE id NOT IN (SELECT id FROM live_blobs)", [])?;
    conn.execute_batch("DROP TABLE live_blobs")?;
    Ok((n as u64, bytes as u64))
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
        tx.execute("DELETE FROM block_index WHERE blob IS NULL AND snap = (SELECT min(id) FROM snapshots)", [])
            .map_err(&err)?;
        tx.execute("DELETE FROM record_index WHERE blob IS NULL AND snap = (SELECT min(id) FROM snapshots)", [])
            .map_err(&err)?;
        (out.blobs_removed, out.bytes_removed) = collect_garbage(&tx).map_err(&err)?;
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
