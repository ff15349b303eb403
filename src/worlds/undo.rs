//! `worldfs undo`: revert journaled changes by putting back the bytes each
//! block had before. The revert is one transaction, itself journaled (so it
//! can be reverted in turn), and it marks the changes it reverts.
//!
//! Before touching a block, the plan checks that the block still holds what
//! the journal says the change left; a block changed since by something
//! that did not go through worldfs (a server, another tool) is a conflict,
//! and the undo is refused unless forced.

use std::collections::{BTreeMap, HashSet};
use worldfs_store::journal::{BlockRecord, ChangeInfo, Fingerprint, Journal, RecordDates};
use worldfs_store::{BlockPos, Change, MapStore, Note};

/// Which changes to revert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    /// The newest N changes not yet reverted (reverts themselves excluded).
    Last(usize),
    /// Everything from this time on (milliseconds since 1970 UTC): every
    /// block goes back to what it was then.
    Since(i64),
    /// One change by its number (a revert too: that re-applies what it
    /// reverted).
    Id(i64),
}

/// What an undo will do.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The changes that become marked as reverted.
    pub(crate) reverts: Vec<ChangeInfo>,
    /// The writes that restore the blocks.
    pub(crate) changes: Vec<Change>,
    /// The records (players, accounts, mod storage) to restore: collection,
    /// name, what it holds now, what it gets back (None: absent).
    pub(crate) records: Vec<RecordRestore>,
    /// Blocks that were changed since, outside the journal.
    pub(crate) conflicts: Vec<String>,
    /// For the journal entry of the revert.
    pub(crate) what: String,
    /// The changes stepped back, newest first (with `Since`, also those
    /// already reverted and the reverts): what the world was before the
    /// oldest of them is what the undo gives back.
    pub(crate) walked: Vec<i64>,
}

#[derive(Debug)]
pub(crate) struct RecordRestore {
    pub(crate) collection: String,
    pub(crate) name: String,
    pub(crate) now: Option<Vec<u8>>,
    pub(crate) back: Option<Vec<u8>>,
    /// The dates its table held beside `back` (players on sqlite3 and
    /// PostgreSQL), restored with it.
    pub(crate) dates: Option<RecordDates>,
}

/// Reads a record's canonical bytes now: (collection, name).
pub(crate) type RecordReader<'a> = &'a dyn Fn(&str, &str) -> Result<Option<Vec<u8>>, String>;

impl Plan {
    pub(crate) fn note(&self) -> Note {
        Note { what: self.what.clone(), reverts: self.reverts.iter().map(|c| c.id).collect(), nodes_only: false }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Whether every block of a change holds what it held before the change
/// (and not what the change left): the change never reached the map.
fn never_applied(recs: &[BlockRecord], state: &BTreeMap<BlockPos, Option<Vec<u8>>>) -> bool {
    let distinct: HashSet<BlockPos> = recs.iter().map(|r| r.pos).collect();
    !recs.is_empty()
        && distinct.len() == recs.len()
        && recs.iter().all(|r| {
            state.get(&r.pos).is_some_and(|cur| *cur == r.before && cur.as_deref().map(Fingerprint::of) != r.after)
        })
}

/// Work out the writes that revert `sel`.
#[cfg(test)]
pub(crate) fn plan(journal: &Journal, store: &dyn MapStore, sel: Selection) -> Result<Plan, String> {
    plan_all(journal, store, None, sel)
}

/// Like [`plan`], with the records of the world's other databases, read
/// through `records` (None: a journal with record changes is refused).
pub(crate) fn plan_all(
    journal: &Journal,
    store: &dyn MapStore,
    records: Option<RecordReader<'_>>,
    sel: Selection,
) -> Result<Plan, String> {
    plan_with(journal, Some(store), records, sel)
}

/// Like [`plan_all`] for a world that has records only (a Minecraft
/// world's chunks and files): a change of map blocks is refused.
pub(crate) fn plan_records(journal: &Journal, records: RecordReader<'_>, sel: Selection) -> Result<Plan, String> {
    plan_with(journal, None, Some(records), sel)
}

fn plan_with(
    journal: &Journal,
    store: Option<&dyn MapStore>,
    records: Option<RecordReader<'_>>,
    sel: Selection,
) -> Result<Plan, String> {
    let all = journal.changes(None, None).map_err(err)?;
    let (walk, reverts) = select(&all, sel)?;
    if reverts.is_empty() {
        return Err("nothing to undo: no matching change in the journal that is not already reverted".into());
    }
    let mut conflicts = Vec::new();
    let changes = step_blocks_back(journal, store, &walk, &mut conflicts)?;
    // Without a map, records are all there is: their files are written
    // after their entry (Minecraft), so an entry a crash kept from its
    // file is one that never happened, not a conflict.
    let skip_unapplied = store.is_none();
    let record_restores = step_records_back(journal, records, &walk, skip_unapplied, &mut conflicts)?;
    let ids: Vec<String> = reverts.iter().map(|c| format!("#{}", c.id)).collect();
    let what = match sel {
        Selection::Since(t) => {
            if changes.is_empty() && record_restores.is_empty() {
                return Err("nothing to undo: every block is already as it was then".into());
            }
            format!("undo since {} ({} changes)", crate::sys::time::format_utc(t.div_euclid(1000)), ids.len())
        }
        _ if ids.len() <= 6 => format!("undo {}", ids.join(", ")),
        _ => format!("undo {} changes, {} .. {}", ids.len(), ids[ids.len() - 1], ids[0]),
    };
    let walked = walk.iter().map(|c| c.id).collect();
    Ok(Plan { reverts, changes, records: record_restores, conflicts, what, walked })
}

/// The changes whose blocks are stepped back (`walk`, newest first) and
/// the ones that become marked as reverted, out of `all` (newest first).
fn select(all: &[ChangeInfo], sel: Selection) -> Result<(Vec<ChangeInfo>, Vec<ChangeInfo>), String> {
    let is_revert: HashSet<i64> = all.iter().filter_map(|c| c.reverted_by).collect();
    Ok(match sel {
        Selection::Last(n) => {
            let pick: Vec<ChangeInfo> =
                all.iter().filter(|c| c.reverted_by.is_none() && !is_revert.contains(&c.id)).take(n).cloned().collect();
            (pick.clone(), pick)
        }
        Selection::Id(id) => {
            let c = all.iter().find(|c| c.id == id).ok_or_else(|| format!("the journal has no change #{id}"))?;
            if let Some(by) = c.reverted_by {
                return Err(format!("change #{id} was already reverted by #{by}; revert #{by} to bring it back"));
            }
            (vec![c.clone()], vec![c.clone()])
        }
        Selection::Since(t) => {
            let walk: Vec<ChangeInfo> = match all.iter().filter(|c| c.time_ms >= t).map(|c| c.id).min() {
                Some(first) => all.iter().filter(|c| c.id >= first).cloned().collect(),
                None => Vec::new(),
            };
            let reverts = walk.iter().filter(|c| c.reverted_by.is_none()).cloned().collect();
            (walk, reverts)
        }
    })
}

/// Step every block back, newest change first, checking it holds what
/// the change left (a block that does not is a conflict). The writes that
/// put back what differs from now.
fn step_blocks_back(
    journal: &Journal,
    store: Option<&dyn MapStore>,
    walk: &[ChangeInfo],
    conflicts: &mut Vec<String>,
) -> Result<Vec<Change>, String> {
    let mut now: BTreeMap<BlockPos, Option<Vec<u8>>> = BTreeMap::new();
    let mut state: BTreeMap<BlockPos, Option<Vec<u8>>> = BTreeMap::new();
    for c in walk {
        let recs = journal.blocks(c.id).map_err(err)?;
        let store = match store {
            Some(s) => s,
            None if recs.is_empty() => continue,
            None => return Err(format!("change #{} concerns map blocks, and this world has no map", c.id)),
        };
        for rec in &recs {
            if let std::collections::btree_map::Entry::Vacant(v) = now.entry(rec.pos) {
                let current = store.get(rec.pos).map_err(err)?;
                v.insert(current.clone());
                state.insert(rec.pos, current);
            }
        }
        if never_applied(&recs, &state) {
            // Stores whose journal lives outside the database (PostgreSQL,
            // Redis) record a change just before committing it: a crash
            // in between leaves an entry whose blocks still hold what was
            // there before. Undoing it changes nothing.
            continue;
        }
        for rec in recs.into_iter().rev() {
            // Every position of the entry was loaded into `state` above.
            let found = state.get(&rec.pos).and_then(|cur| cur.as_deref()).map(Fingerprint::of);
            if found != rec.after {
                let show = |f: Option<Fingerprint>| f.map_or("no block".to_string(), |f| format!("{} bytes", f.len));
                conflicts.push(format!(
                    "block {}: changed outside the journal after #{} (it holds {}, #{} left {})",
                    rec.pos,
                    c.id,
                    show(found),
                    c.id,
                    show(rec.after)
                ));
            }
            state.insert(rec.pos, rec.before);
        }
    }
    Ok(state
        .into_iter()
        .filter(|(p, v)| now.get(p) != Some(v))
        .map(|(p, v)| match v {
            Some(bytes) => Change::Put(p, bytes),
            None => Change::Delete(p),
        })
        .collect())
}

/// The same as [`step_blocks_back`] for records (read through `records`).
fn step_records_back(
    journal: &Journal,
    records: Option<RecordReader<'_>>,
    walk: &[ChangeInfo],
    skip_unapplied: bool,
    conflicts: &mut Vec<String>,
) -> Result<Vec<RecordRestore>, String> {
    type Key = (String, String);
    let mut rec_now: BTreeMap<Key, Option<Vec<u8>>> = BTreeMap::new();
    let mut rec_state: BTreeMap<Key, Option<Vec<u8>>> = BTreeMap::new();
    let mut rec_dates: BTreeMap<Key, Option<RecordDates>> = BTreeMap::new();
    for c in walk {
        let recs = journal.records(c.id).map_err(err)?;
        for rec in &recs {
            let key = (rec.collection.clone(), rec.name.clone());
            if !rec_now.contains_key(&key) {
                let read = records.ok_or_else(|| {
                    format!("change #{} concerns {}/{}, which cannot be read here", c.id, key.0, key.1)
                })?;
                let current = read(&key.0, &key.1)?;
                rec_now.insert(key.clone(), current.clone());
                rec_state.insert(key, current);
            }
        }
        let unapplied = |r: &worldfs_store::journal::RecordEntry| {
            let cur = &rec_state[&(r.collection.clone(), r.name.clone())];
            *cur == r.before && cur.as_deref().map(Fingerprint::of) != r.after
        };
        if skip_unapplied && !recs.is_empty() && recs.iter().all(unapplied) {
            continue;
        }
        for rec in recs.into_iter().rev() {
            let key = (rec.collection.clone(), rec.name.clone());
            let found = rec_state[&key].as_deref().map(Fingerprint::of);
            if found != rec.after {
                conflicts.push(format!("{}/{}: changed outside the journal after #{}", key.0, key.1, c.id));
            }
            rec_dates.insert(key.clone(), rec.dates);
            rec_state.insert(key, rec.before);
        }
    }
    Ok(rec_state
        .into_iter()
        .filter(|(k, v)| rec_now.get(k) != Some(v))
        .map(|((collection, name), back)| {
            let key = (collection.clone(), name.clone());
            let now = rec_now[&key].clone();
            let dates = rec_dates.remove(&key).flatten();
            RecordRestore { collection, name, now, back, dates }
        })
        .collect())
}

/// The journal's changes as a table, newest first (`limit` of them).
pub(crate) fn listing(journal: &Journal, limit: Option<usize>) -> worldfs_store::Result<String> {
    use std::fmt::Write;
    let list = journal.changes(None, limit.map(|l| l + 1))?;
    let mut out = String::new();
    if list.is_empty() {
        out.push_str("the journal is empty\n");
        return Ok(out);
    }
    let _ = writeln!(out, "{:>7}  {:<20}  {:>6}  what", "change", "time (UTC)", "blocks");
    for c in list.iter().take(limit.unwrap_or(usize::MAX)) {
        let time = crate::sys::time::format_utc(c.time_ms.div_euclid(1000));
        let note = c.reverted_by.map(|by| format!("  (reverted by #{by})")).unwrap_or_default();
        let _ = writeln!(out, "{:>7}  {:<20}  {:>6}  {}{note}", format!("#{}", c.id), time, c.blocks, c.what);
    }
    if limit.is_some_and(|l| list.len() > l) {
        let _ = writeln!(out, "(older changes not shown; --all lists every one)");
    }
    Ok(out)
}

/// The journal's changes for scripts, newest first (`limit` of them):
/// id, time (UTC text and milliseconds), what, blocks, reverted_by.
pub(crate) fn listing_json(journal: &Journal, limit: Option<usize>) -> worldfs_store::Result<serde_json::Value> {
    let list = journal.changes(None, limit)?;
    Ok(serde_json::Value::Array(
        list.iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id,
                    "time": crate::sys::time::format_utc(c.time_ms.div_euclid(1000)),
                    "time_ms": c.time_ms,
                    "what": c.what,
                    "blocks": c.blocks,
                    "reverted_by": c.reverted_by,
                })
            })
            .collect(),
    ))
}

/// Apply a plan in one journaled transaction.
#[cfg(test)]
pub(crate) fn execute(store: &dyn MapStore, plan: &Plan) -> Result<(), String> {
    execute_all(store, &[], plan)
}

/// Apply a plan: the blocks in one journaled transaction, then each record
/// in one of its own (they live in other databases), each refused if it
/// changed since the plan was made.
pub(crate) fn execute_all(
    store: &dyn MapStore,
    records: &[(&str, Box<dyn worldfs_store::records::RecordStore>)],
    plan: &Plan,
) -> Result<(), String> {
    if !plan.changes.is_empty() || plan.records.is_empty() {
        store.apply(&plan.changes, &plan.note()).map_err(err)?;
    }
    for r in &plan.records {
        let rs = records
            .iter()
            .find(|(n, _)| *n == r.collection)
            .map(|(_, s)| s)
            .ok_or_else(|| format!("{}: cannot be written here", r.collection))?;
        rs.restore(&r.name, r.now.as_deref(), r.back.as_deref(), r.dates.as_ref(), &plan.note())
            .map_err(|e| format!("{}/{}: {e}", r.collection, r.name))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldfs_store::sqlite::{Schema, SqliteStore};

    fn setup() -> (tempfile::TempDir, SqliteStore, Journal) {
        let d = tempfile::tempdir().unwrap();
        let mut st = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Split).unwrap();
        st.apply(&[Change::Put(BlockPos::new(0, 0, 0), b"A".to_vec())], &Note::default()).unwrap();
        let jp = d.path().join(worldfs_store::journal::FILE_NAME);
        st.enable_journal(&jp).unwrap();
        let j = Journal::open(&jp).unwrap().unwrap();
        (d, st, j)
    }

    fn put(st: &SqliteStore, x: i16, v: &[u8]) {
        st.apply(&[Change::Put(BlockPos::new(x, 0, 0), v.to_vec())], &Note::new(format!("put {x}"))).unwrap();
    }

    fn get(st: &SqliteStore, x: i16) -> Option<Vec<u8>> {
        st.get(BlockPos::new(x, 0, 0)).unwrap()
    }

    #[test]
    fn an_entry_that_never_reached_the_map_is_no_conflict() {
        let (d, st, j) = setup();
        put(&st, 1, b"B");
        // Journaled just before a commit that a crash prevented (stores
        // whose journal is outside their database).
        let journal = d.path().join(worldfs_store::journal::FILE_NAME);
        let steps = [(BlockPos::new(1, 0, 0), Some(b"B".to_vec()), Some(&b"C"[..]))];
        worldfs_store::journal::Pending::blocks(&journal, &Note::new("lost"), &steps).unwrap().kept();
        let p = plan(&j, &st, Selection::Last(2)).unwrap();
        assert!(p.conflicts.is_empty(), "{:?}", p.conflicts);
        assert_eq!(p.changes, vec![Change::Delete(BlockPos::new(1, 0, 0))]);
        // A change that did happen and was then changed again outside
        // stays a conflict.
        put(&st, 2, b"X");
        st.apply(&[Change::Put(BlockPos::new(2, 0, 0), b"Y".to_vec())], &Note::new("put 2 again")).unwrap();
        let other = SqliteStore::open(&d.path().join("map.sqlite"), false).unwrap();
        other.apply(&[Change::Put(BlockPos::new(2, 0, 0), b"Z".to_vec())], &Note::default()).unwrap();
        assert!(!plan(&j, &st, Selection::Last(1)).unwrap().conflicts.is_empty());
    }

    #[test]
    fn last_reverts_newest_first_and_skips_reverts() {
        let (_d, st, j) = setup();
        put(&st, 0, b"B");
        put(&st, 0, b"C");
        put(&st, 1, b"new");
        execute(&st, &plan(&j, &st, Selection::Last(1)).unwrap()).unwrap();
        assert_eq!(get(&st, 1), None);
        assert_eq!(get(&st, 0).as_deref(), Some(&b"C"[..]));
        // The next undo takes the change before, not the revert.
        execute(&st, &plan(&j, &st, Selection::Last(1)).unwrap()).unwrap();
        assert_eq!(get(&st, 0).as_deref(), Some(&b"B"[..]));
        let list = j.changes(None, None).unwrap();
        assert_eq!(list.len(), 5);
        assert_eq!(list[0].what, "undo #2");
        assert_eq!(list[1].what, "undo #3");
        // Reverting the revert brings C back.
        execute(&st, &plan(&j, &st, Selection::Id(list[0].id)).unwrap()).unwrap();
        assert_eq!(get(&st, 0).as_deref(), Some(&b"C"[..]));
        assert!(plan(&j, &st, Selection::Id(2)).unwrap_err().contains("already reverted"));
    }

    #[test]
    fn since_restores_the_state_at_that_time() {
        let (_d, st, j) = setup();
        put(&st, 0, b"B");
        put(&st, 2, b"x");
        execute(&st, &plan(&j, &st, Selection::Last(1)).unwrap()).unwrap();
        put(&st, 0, b"C");
        let p = plan(&j, &st, Selection::Since(0)).unwrap();
        assert!(p.conflicts.is_empty(), "{:?}", p.conflicts);
        execute(&st, &p).unwrap();
        assert_eq!(get(&st, 0).as_deref(), Some(&b"A"[..]));
        assert_eq!(get(&st, 2), None);
        assert!(plan(&j, &st, Selection::Since(0)).unwrap_err().contains("already as it was"));
        // The revert itself can be reverted: C and x come back.
        let newest = j.changes(None, Some(1)).unwrap()[0].id;
        execute(&st, &plan(&j, &st, Selection::Id(newest)).unwrap()).unwrap();
        assert_eq!(get(&st, 0).as_deref(), Some(&b"C"[..]));
        assert_eq!(get(&st, 2), None, "x was reverted before C was written");
    }

    #[test]
    fn changes_outside_the_journal_are_conflicts() {
        let (d, st, j) = setup();
        put(&st, 0, b"B");
        // Someone else writes the block (no journal).
        let other = SqliteStore::open(&d.path().join("map.sqlite"), false).unwrap();
        other.apply(&[Change::Put(BlockPos::new(0, 0, 0), b"server".to_vec())], &Note::default()).unwrap();
        let p = plan(&j, &st, Selection::Last(1)).unwrap();
        assert_eq!(p.conflicts.len(), 1);
        assert!(p.conflicts[0].contains("block 0,0,0"), "{}", p.conflicts[0]);
    }

    #[test]
    fn journal_and_change_commit_together() {
        let (d, st, j) = setup();
        // The journal row is written first; a map write failing after it
        // (here a trigger) must take the journal row with it.
        let other = rusqlite::Connection::open(d.path().join("map.sqlite")).unwrap();
        other
            .execute_batch("CREATE TRIGGER no_new BEFORE INSERT ON blocks BEGIN SELECT RAISE(ABORT, 'no'); END")
            .unwrap();
        let e = st.apply(&[Change::Put(BlockPos::new(5, 0, 0), b"z".to_vec())], &Note::new("x")).unwrap_err();
        assert!(e.to_string().contains("no"), "{e}");
        assert!(j.changes(None, None).unwrap().is_empty());
        assert_eq!(get(&st, 5), None);
        other.execute_batch("DROP TRIGGER no_new").unwrap();
        put(&st, 5, b"z");
        assert_eq!(j.changes(None, None).unwrap().len(), 1);
    }

    #[test]
    fn prune_drops_oldest() {
        let (_d, st, j) = setup();
        for i in 0..10 {
            put(&st, 0, &vec![i as u8; 10_000]);
        }
        let r = j.prune(None, Some(35_000)).unwrap();
        assert_eq!(r.changes, 7);
        let left = j.changes(None, None).unwrap();
        assert_eq!(left.len(), 3);
        assert_eq!(left[2].id, 8);
        let r = j.prune(Some(i64::MAX), None).unwrap();
        assert_eq!(r.changes, 3);
    }
}
