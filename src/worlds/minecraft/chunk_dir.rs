//! What `chunks/X,Z/` shows: a chunk ([`ChunkDoc`], every file of it), or
//! a chunk that cannot be read, as a corrupt Luanti block is shown: only
//!
//! ```text
//! raw      its bytes in the region file: its sectors as far as they are
//!          in the file, from the 4-byte length on (read-only)
//! error    what is wrong, and where (read-only)
//! ```
//!
//! A header entry pointing past the end of the file or into the header,
//! one whose sectors another entry holds too and whose data is not its
//! own, a length that does not fit, an unknown compression, a damaged
//! stream, NBT that is not a chunk: the chunk is shown so, and every other
//! chunk of its region file as it is (and writable; the bad chunk's bytes
//! are kept as they are when the file is rewritten).

use super::chunk::ChunkDoc;
use crate::documents::{Context, DocError, DocResult, Document, Entry};

pub(crate) enum ChunkDir {
    Chunk(ChunkDoc),
    /// A chunk that cannot be read: its bytes, and the message of `error`.
    Bad {
        raw: Vec<u8>,
        error: String,
    },
}

fn unreadable() -> DocError {
    DocError::new("this chunk cannot be read: it shows only raw and error")
}

impl Document for ChunkDir {
    const NAME: &'static str = ChunkDoc::NAME;

    fn decode(bytes: &[u8], ctx: &Context) -> DocResult<Self> {
        ChunkDoc::decode(bytes, ctx).map(ChunkDir::Chunk)
    }
    fn encode(&self) -> DocResult<Vec<u8>> {
        match self {
            ChunkDir::Chunk(d) => d.encode(),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn entries(&self) -> Vec<Entry> {
        match self {
            ChunkDir::Chunk(d) => d.entries(),
            ChunkDir::Bad { .. } => vec![Entry::file("error", false), Entry::file("raw", false)],
        }
    }
    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        match (self, path) {
            (ChunkDir::Chunk(d), _) => d.render(path),
            (ChunkDir::Bad { error, .. }, "error") => Ok(format!("{error}\n").into_bytes()),
            (ChunkDir::Bad { raw, .. }, "raw") => Ok(raw.clone()),
            (ChunkDir::Bad { .. }, _) => Err(DocError::new("no such file")),
        }
    }
    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        match self {
            ChunkDir::Chunk(d) => d.apply(path, content),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn judge(copy: Self, path: &str, content: &[u8]) -> DocResult<()> {
        match copy {
            ChunkDir::Chunk(d) => ChunkDoc::judge(d, path, content),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn accepts_new(&self, path: &str) -> bool {
        matches!(self, ChunkDir::Chunk(d) if d.accepts_new(path))
    }
    fn remove(&mut self, path: &str) -> DocResult<()> {
        match self {
            ChunkDir::Chunk(d) => d.remove(path),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn mkdir(&mut self, path: &str) -> DocResult<()> {
        match self {
            ChunkDir::Chunk(d) => d.mkdir(path),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn rmdir(&mut self, path: &str) -> DocResult<()> {
        match self {
            ChunkDir::Chunk(d) => d.rmdir(path),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn check_content(&self, path: &str, content: &[u8]) -> DocResult<()> {
        match self {
            ChunkDir::Chunk(d) => d.check_content(path, content),
            ChunkDir::Bad { .. } => Err(unreadable()),
        }
    }
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        matches!(self, ChunkDir::Chunk(d) if d.complete(path, content))
    }
    fn is_empty(&self) -> bool {
        matches!(self, ChunkDir::Chunk(d) if d.is_empty())
    }
    fn readme(&self) -> String {
        match self {
            ChunkDir::Chunk(d) => d.readme(),
            ChunkDir::Bad { .. } => String::new(),
        }
    }
}
