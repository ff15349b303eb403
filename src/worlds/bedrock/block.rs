//! `block/X,Y,Z` of a Bedrock world's overworld (`worlds::block_tree`):
//! one block's state (its first storage layer), read and written as a
//! Java world's `block/` is. A write changes that block in its subchunk
//! (the palette re-encoded) as one write batch.

use super::chunk::ChunkDoc;
use super::db::{Db, Records};
use super::states;
use crate::fs::{FsError, Result};
use crate::worlds::block_tree::{At, Blocks, unchanged_since_read};
use std::sync::Arc;
use worldfs_codec::bedrock::key::{ChunkPos, OVERWORLD};

/// The blocks of the overworld's subchunks.
pub(crate) struct BedrockBlocks {
    pub(crate) db: Arc<Db>,
}

impl BedrockBlocks {
    fn chunk(&self, x: i64, z: i64) -> Result<(Records, ChunkDoc)> {
        let pos = ChunkPos { dim: OVERWORLD, x: x.div_euclid(16) as i32, z: z.div_euclid(16) as i32 };
        let records = self.db.records(pos)?;
        Ok((records.clone(), ChunkDoc::new(pos, records)))
    }
}

impl Blocks for BedrockBlocks {
    fn describe(&self) -> String {
        "block/ of the overworld".into()
    }
    /// Chunk coordinates are 32-bit in the database's keys.
    fn fits(&self, x: i64, z: i64) -> bool {
        i32::try_from(x.div_euclid(16)).is_ok() && i32::try_from(z.div_euclid(16)).is_ok()
    }
    fn label(&self, (x, y, z): At) -> Result<String> {
        let (_, doc) = self.chunk(x, z)?;
        let state = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        Ok(states::label(&state))
    }
    fn check_line(&self, (x, y, z): At, text: &str) -> Result<()> {
        let (_, mut doc) = self.chunk(x, z)?;
        doc.set_block(x, y, z, text.trim_end()).map_err(|e| FsError::invalid(e.to_string()))
    }
    fn write(&self, name: &str, (x, y, z): At, text: &str, base: Option<&[u8]>) -> Result<()> {
        let _one = self.db.lock.lock();
        let (old, mut doc) = self.chunk(x, z)?;
        let now = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        unchanged_since_read(name, base, &states::label(&now))?;
        doc.set_block(x, y, z, text.trim_end()).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        self.db.write(&old, &doc.records, &format!("write block/{name}"))
    }
}
