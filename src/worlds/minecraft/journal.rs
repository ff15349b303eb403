//! The undo journal of a Java world: `worldfs-journal.sqlite` in the world
//! directory, the same file and tables as a Luanti world's. Each change of
//! a chunk, a player's file or level.dat is one record (collection, name,
//! the bytes before: a chunk's decompressed NBT, a file's stored bytes; a
//! fingerprint of the bytes after), journaled
//! just before the file is replaced and taken back if the write fails, as
//! the `files` backends of Luanti do.

use crate::fs::{FsError, Result};
use std::path::Path;
use worldfs_store::Note;
use worldfs_store::journal::{FileStep, Pending};

/// Collections of a Java world's journal (names as `worldfs undo` shows them).
pub(crate) const CHUNKS: &str = "minecraft chunks";
pub(crate) const PLAYERS: &str = "minecraft players";
pub(crate) const LEVEL: &str = "minecraft level";
/// The collection of the chunks of a dimension other than the overworld
/// (`minecraft chunks in minecraft:the_nether`).
pub(crate) fn chunks_of(dimension: &str) -> String {
    format!("{CHUNKS} in {dimension}")
}
/// The dimension whose chunks a collection holds (None: not chunks of
/// another dimension).
pub(crate) fn dimension_of(collection: &str) -> Option<&str> {
    collection.strip_prefix(CHUNKS)?.strip_prefix(" in ")
}
/// The one name of the `LEVEL` collection.
pub(crate) const LEVEL_NAME: &str = "level.dat";

/// One journaled change of records of one collection: the entry is kept
/// once [`Entry::kept`] is called, and removed if dropped before.
pub(crate) struct Entry(Option<Pending>);

impl Entry {
    pub(crate) fn kept(self) {
        if let Some(p) = self.0 {
            p.kept();
        }
    }
}

/// Journal a change of `collection`: (name, bytes before, bytes after)
/// each. `journal` None: no journal is kept (`-o nojournal`, read-only).
pub(crate) fn begin(
    journal: Option<&Path>,
    note: &Note,
    collection: &str,
    steps: &[(&str, &[u8], &[u8])],
) -> Result<Entry> {
    begin_with_files(journal, note, collection, steps, &[])
}

/// [`begin`] with the region files the change rewrites, each with the
/// patch that turns it back byte for byte (`worldfs_codec::filepatch`), so that
/// `worldfs undo` gives back the file the game wrote, not only its chunks.
pub(crate) fn begin_with_files(
    journal: Option<&Path>,
    note: &Note,
    collection: &str,
    steps: &[(&str, &[u8], &[u8])],
    files: &[FileStep<'_>],
) -> Result<Entry> {
    let Some(path) = journal else { return Ok(Entry(None)) };
    let steps: Vec<_> = steps.iter().map(|(n, old, new)| (*n, Some(old.to_vec()), Some(*new), None)).collect();
    Pending::records_and_files(path, note, collection, &steps, files)
        .map(|p| Entry(Some(p)))
        .map_err(|e| FsError::io(format!("{e}; nothing was changed")))
}
