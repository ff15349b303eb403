//! `worldfs check WORLD`: decode every block and report.

use crate::codec::Block;
use crate::store::{BlockPos, MapStore};
use std::collections::BTreeMap;
use std::io::Write;

#[derive(Default, Debug)]
pub struct Report {
    pub blocks: u64,
    pub per_version: BTreeMap<u8, u64>,
    pub not_generated: u64,
    pub with_metadata: u64,
    pub corrupt: Vec<(BlockPos, String)>,
}

impl Report {
    /// The report for scripts (`worldfs check --json`).
    pub fn json(&self, store: &dyn MapStore) -> serde_json::Value {
        serde_json::json!({
            "map_database": store.describe(),
            "blocks": self.blocks,
            "per_version": self.per_version.iter().map(|(v, n)| (v.to_string(), *n)).collect::<BTreeMap<String, u64>>(),
            "not_generated": self.not_generated,
            "with_metadata": self.with_metadata,
            "corrupt": self.corrupt.iter().map(|(p, why)| serde_json::json!({"block": p.to_string(), "reason": why})).collect::<Vec<_>>(),
        })
    }

    pub fn print(&self, store: &dyn MapStore, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "map database: {}", store.describe())?;
        writeln!(out, "blocks: {}", self.blocks)?;
        for (v, n) in &self.per_version {
            writeln!(out, "  version {v}: {n}")?;
        }
        writeln!(out, "not generated: {}", self.not_generated)?;
        writeln!(out, "with node metadata: {}", self.with_metadata)?;
        writeln!(out, "corrupt: {}", self.corrupt.len())?;
        for (pos, why) in &self.corrupt {
            writeln!(out, "  {pos}: {why}")?;
        }
        Ok(())
    }
}

/// Decode every block of `store`. `progress` is called now and then with
/// (blocks done, total).
pub fn check(store: &dyn MapStore, progress: &mut dyn FnMut(u64, u64)) -> Result<Report, String> {
    let total = store.count().map_err(|e| e.to_string())?;
    let mut r = Report::default();
    crate::scan::scan(
        store,
        decode_all,
        |part| {
            r.merge(part);
            Ok(())
        },
        &mut |done| progress(done, total),
    )?;
    Ok(r)
}

fn decode_all(blocks: &[(BlockPos, Vec<u8>)]) -> Report {
    let mut r = Report::default();
    for (pos, blob) in blocks {
        r.blocks += 1;
        if blob.is_empty() {
            r.corrupt.push((*pos, "empty blob".into()));
            continue;
        }
        *r.per_version.entry(blob[0]).or_insert(0) += 1;
        match Block::decode(blob) {
            Ok(b) => {
                r.not_generated += !b.is_generated() as u64;
                r.with_metadata += !b.metadata.entries.is_empty() as u64;
            }
            Err(e) => r.corrupt.push((*pos, e.to_string())),
        }
    }
    r
}

impl Report {
    /// Add the counts of a later part (corrupt blocks stay in key order).
    fn merge(&mut self, other: Report) {
        self.blocks += other.blocks;
        self.not_generated += other.not_generated;
        self.with_metadata += other.with_metadata;
        for (v, n) in other.per_version {
            *self.per_version.entry(v).or_insert(0) += n;
        }
        self.corrupt.extend(other.corrupt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Change;
    use crate::store::sqlite::{Schema, SqliteStore};

    #[test]
    fn reports_exactly_the_truncated_block() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Split).unwrap();
        let good = Block::new_air(29).encode().unwrap();
        let bad = good[..good.len() - 5].to_vec();
        let mut changes: Vec<Change> = (0..10).map(|i| Change::Put(BlockPos::new(i, 0, 0), good.clone())).collect();
        changes.push(Change::Put(BlockPos::new(-4, 2, 9), bad));
        store.apply(&changes, &crate::store::Note::default()).unwrap();
        let r = check(&store, &mut |_, _| {}).unwrap();
        assert_eq!(r.blocks, 11);
        assert_eq!(r.per_version[&29], 11);
        assert_eq!(r.corrupt.len(), 1);
        assert_eq!(r.corrupt[0].0, BlockPos::new(-4, 2, 9));
        let mut out = Vec::new();
        r.print(&store, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("corrupt: 1\n  -4,2,9: "), "{text}");
    }
}
