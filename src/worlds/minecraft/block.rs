//! `block/X,Y,Z` of a Java world (`worlds::block_tree`): a block's state
//! is read from its chunk in the region files; a write changes that block
//! in its chunk and rewrites the region file as `chunks/` does, refused
//! while a game holds `session.lock`.

use super::chunk::ChunkDoc;
use super::regions::Regions;
use super::section::{parse_state, state_label};
use crate::documents::{Context, Document};
use crate::fs::{FsError, Result};
use crate::worlds::block_tree::{At, Blocks, unchanged_since_read};
use std::sync::Arc;
use worldfs_store::Note;

/// The blocks of one dimension's region files.
pub(crate) struct JavaBlocks {
    pub(crate) regions: Arc<Regions>,
    /// `-o force`: written even while a game holds `session.lock`.
    pub(crate) force: bool,
}

impl JavaBlocks {
    /// The chunk holding (x, z), as stored (its bytes) and decoded.
    fn chunk(&self, x: i64, z: i64) -> Result<Option<(Vec<u8>, ChunkDoc)>> {
        let (cx, cz) = (x.div_euclid(16), z.div_euclid(16));
        let Some(bytes) = self.regions.read_chunk(cx, cz).map_err(FsError::io)? else { return Ok(None) };
        let doc =
            ChunkDoc::decode(&bytes, &Context::default()).map_err(|e| FsError::io(format!("chunk {cx},{cz}: {e}")))?;
        Ok(Some((bytes, doc)))
    }
}

impl Blocks for JavaBlocks {
    fn describe(&self) -> String {
        "block/ of the region files".into()
    }
    fn label(&self, (x, y, z): At) -> Result<String> {
        let (_, doc) = self.chunk(x, z)?.ok_or_else(FsError::not_found)?;
        let state = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?;
        Ok(state_label(&state.ok_or_else(FsError::not_found)?))
    }
    fn check_open(&self) -> Result<()> {
        if !self.force {
            super::regions::check_session_lock(&self.regions.world)?;
        }
        Ok(())
    }
    /// A state the chunk can store (`ChunkDoc::check_state`: an id and
    /// data for a 1.12-or-older chunk's, one the game of a newer chunk's
    /// DataVersion knows).
    fn check_line(&self, (x, _, z): At, text: &str) -> Result<()> {
        let state = parse_state(text).map_err(FsError::invalid)?;
        match self.chunk(x, z)? {
            Some((_, doc)) => doc.check_state(&state).map_err(FsError::invalid),
            None => Ok(()),
        }
    }
    fn write(&self, name: &str, (x, y, z): At, text: &str, base: Option<&[u8]>) -> Result<()> {
        let state = parse_state(text).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        let _one = self.regions.lock.lock();
        self.check_open()?;
        let (old, mut doc) = self.chunk(x, z)?.ok_or_else(FsError::not_found)?;
        let now = doc.block_at(x, y, z).map_err(|e| FsError::io(e.to_string()))?.ok_or_else(FsError::not_found)?;
        unchanged_since_read(name, base, &state_label(&now))?;
        doc.set_block(x, y, z, state).map_err(|e| FsError::invalid(format!("block/{name}: {e}")))?;
        let new = doc.encode().map_err(|e| FsError::invalid(e.to_string()))?;
        if new != old {
            let note = Note::new(format!("write block/{name}"));
            self.regions.write_chunk(x.div_euclid(16), z.div_euclid(16), &old, &new, &note)?;
        }
        Ok(())
    }
}
