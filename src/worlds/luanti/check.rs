//! `worldfs check WORLD`: decode every block and report.

use std::collections::BTreeMap;
use std::io::Write;
use worldfs_codec::luanti::Block;
use worldfs_store::{BlockPos, MapStore};

#[derive(Default, Debug)]
pub struct Report {
    pub(crate) blocks: u64,
    pub(crate) per_version: BTreeMap<u8, u64>,
    pub(crate) not_generated: u64,
    pub(crate) with_metadata: u64,
    pub corrupt: Vec<(BlockPos, String)>,
}

impl Report {
    /// The report for scripts (`worldfs check --json`).
    pub(crate) fn json(&self, store: &dyn MapStore) -> serde_json::Value {
        serde_json::json!({
            "map_database": store.describe(),
            "blocks": self.blocks,
            "per_version": self.per_version.iter().map(|(v, n)| (v.to_string(), *n)).collect::<BTreeMap<String, u64>>(),
            "not_generated": self.not_generated,
            "with_metadata": self.with_metadata,
            "corrupt": self.corrupt.iter().map(|(p, why)| serde_json::json!({"block": p.to_string(), "reason": why})).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn print(&self, store: &dyn MapStore, out: &mut dyn Write) -> std::io::Result<()> {
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
    let seen = Verdicts::default();
    crate::worlds::luanti::scan::scan(
        store,
        |blocks| decode_all(blocks, &seen),
        |part| {
            r.merge(part);
            Ok(())
        },
        &mut |done| progress(done, total),
    )?;
    Ok(r)
}

/// What decoding one blob found: (generated, has node metadata), or why it
/// does not decode.
type Verdict = Result<(bool, bool), String>;

/// Verdicts of small blobs already decoded, by their bytes (decoding is
/// a function of the blob alone).
#[derive(Default)]
struct Verdicts(crate::worlds::luanti::scan::ByBlob<Verdict>);

impl Verdicts {
    fn of(&self, blob: &[u8]) -> Verdict {
        self.0.of(blob, decode_verdict, |v| v.as_ref().err().map_or(0, String::len))
    }
}

fn decode_verdict(blob: &[u8]) -> Verdict {
    match Block::decode(blob) {
        Ok(b) => Ok((b.is_generated(), !b.metadata.entries.is_empty())),
        Err(e) => Err(e.to_string()),
    }
}

fn decode_all(blocks: &[(BlockPos, Vec<u8>)], seen: &Verdicts) -> Report {
    let mut r = Report::default();
    for (pos, blob) in blocks {
        r.blocks += 1;
        if blob.is_empty() {
            r.corrupt.push((*pos, "empty blob".into()));
            continue;
        }
        *r.per_version.entry(blob[0]).or_insert(0) += 1;
        match seen.of(blob) {
            Ok((generated, with_metadata)) => {
                r.not_generated += !generated as u64;
                r.with_metadata += with_metadata as u64;
            }
            Err(e) => r.corrupt.push((*pos, e)),
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
    use worldfs_store::Change;
    use worldfs_store::sqlite::{Schema, SqliteStore};

    #[test]
    fn reports_exactly_the_truncated_block() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Split).unwrap();
        let good = Block::new_air(29).encode().unwrap();
        let bad = good[..good.len() - 5].to_vec();
        let mut changes: Vec<Change> = (0..10).map(|i| Change::Put(BlockPos::new(i, 0, 0), good.clone())).collect();
        changes.push(Change::Put(BlockPos::new(-4, 2, 9), bad));
        store.apply(&changes, &worldfs_store::Note::default()).unwrap();
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

    /// A blob repeated at many positions is decoded once, and every one of
    /// those positions gets its verdict: the same corrupt blob at three
    /// places is three corrupt blocks with the same reason, and a block not
    /// generated is counted at every place.
    #[test]
    fn repeated_blobs_get_the_verdict_at_every_position() {
        let d = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(&d.path().join("map.sqlite"), Schema::Legacy).unwrap();
        let mut ungenerated = Block::new_air(29);
        ungenerated.flags |= 0x08;
        let ungenerated = ungenerated.encode().unwrap();
        let good = Block::new_air(29).encode().unwrap();
        let bad = good[..good.len() - 5].to_vec();
        let mut changes = Vec::new();
        for i in 0..3000i16 {
            let blob = match i % 1000 {
                7 => bad.clone(),
                8 | 9 => ungenerated.clone(),
                _ => good.clone(),
            };
            changes.push(Change::Put(BlockPos::new(i, 0, 0), blob));
        }
        store.apply(&changes, &worldfs_store::Note::default()).unwrap();
        let r = check(&store, &mut |_, _| {}).unwrap();
        assert_eq!(r.blocks, 3000);
        let corrupt: Vec<BlockPos> = r.corrupt.iter().map(|c| c.0).collect();
        assert_eq!(corrupt, [7, 1007, 2007].map(|x| BlockPos::new(x, 0, 0)));
        assert!(r.corrupt.iter().all(|c| c.1 == r.corrupt[0].1 && c.1.contains("zstd")), "{:?}", r.corrupt);
        assert_eq!(r.not_generated, 6);
        assert_eq!(Verdicts::default().of(&bad), Err(r.corrupt[0].1.clone()));
    }
}
