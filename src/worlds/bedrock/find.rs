//! `find/<block name>/` and `names` of a Bedrock world's overworld, the
//! Java world's tree (`minecraft::find`) over the database: one pass over
//! every chunk's subchunks on first use, again after a change.

use super::chunk::ChunkDoc;
use super::db::Db;
use crate::fs::{Options, Result};
use crate::worlds::minecraft::find::{FindTree as JavaFindTree, NameSource, Names};
use std::sync::Arc;
use worldfs_codec::bedrock::key::{ChunkPos, OVERWORLD};

pub(crate) struct DbNames(Arc<Db>);

impl NameSource for DbNames {
    /// Only this mount writes while it is mounted writable (it holds the
    /// lock), and a read-only mount reads a snapshot.
    type Stamp = u64;

    fn stamp(&self) -> Result<u64> {
        Ok(self.0.store.version())
    }

    fn build(&self) -> Result<Names> {
        let mut names = Names::new();
        for (x, z) in self.0.chunks_of(OVERWORLD)? {
            let pos = ChunkPos { dim: OVERWORLD, x, z };
            let doc = ChunkDoc::new(pos, self.0.records(pos)?);
            for (id, n) in doc.block_counts() {
                let e = names.entry(id).or_default();
                e.0.push((x as i64, z as i64));
                e.1 += n;
            }
        }
        Ok(names)
    }
}

pub(crate) type FindTree = JavaFindTree<DbNames>;

pub(crate) fn new(db: Arc<Db>, tag: u64, opts: Options) -> FindTree {
    JavaFindTree::with_source(DbNames(db), tag << 60, opts)
}
