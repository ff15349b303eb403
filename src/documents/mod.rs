//! Kinds of world kept in one file: a Luanti schematic (`.mts`), a
//! WorldEdit file (`.we`), a Teeworlds/DDNet map (`.map`), a Cuberite
//! cubeset, a Minecraft chunk dump.
//! Each is a [`Document`]: decoded whole, shown as a small tree of files,
//! edited one file at a time, encoded whole and written back atomically by
//! the filesystem core. A kind is a module here with its view (structure
//! <-> files, pure) over its codec in `worldfs_codec`; the core keeps
//! inodes, handles, scratch files, commit at close and `write-errors`.
//! [`files_tree`] is the one adapter that serves a document as a tree;
//! the records of a Luanti world and the chunks of a Minecraft world are
//! documents too.
//!
//! Worlds kept in a directory (`crate::worlds`) have trees of their own.
//! Which kind a path is, `crate::open` decides.

pub mod cubeset;
pub mod doc_tree;
pub mod files_tree;
pub mod mcchunk;
pub mod mts;
pub(crate) mod text;
pub mod twmap;
pub mod we;

pub use worldfs_codec::error::{DocError, DocResult};

use crate::fs::{Options, Services, Tree};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One file or directory of a document's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Relative, `/`-separated, without a leading or trailing slash
    /// (`info`, `groups/00_Game/layers/01_Tiles/tiles`).
    pub path: String,
    pub dir: bool,
    /// Whether writing the file (or creating and removing names in the
    /// directory) can be accepted at all; the content is checked by
    /// [`Document::apply`].
    pub writable: bool,
}

impl Entry {
    pub fn file(path: impl Into<String>, writable: bool) -> Entry {
        Entry { path: path.into(), dir: false, writable }
    }
    pub fn dir(path: impl Into<String>) -> Entry {
        Entry { path: path.into(), dir: true, writable: false }
    }
}

/// What a document is decoded from besides its own bytes.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The mounted file (for messages only: decoding reads no files).
    pub path: PathBuf,
    /// The companion files that exist, with their bytes (see
    /// [`Document::companions`]).
    pub companions: Vec<(PathBuf, Vec<u8>)>,
    /// Kind-specific mount options (`-o key=value`) the core did not know.
    pub options: Vec<(String, Option<String>)>,
}

impl Context {
    pub(crate) fn option(&self, key: &str) -> Option<Option<&str>> {
        self.options.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_deref())
    }
}

/// A thing shown as a small tree of files: a world kept in one file (a
/// schematic, a map), or one record of a collection (a player, an account,
/// a mod's storage; `luanti::records`). Every method is pure: the one
/// adapter ([`files_tree::FilesTree`]) reads the bytes from the thing's
/// home (the file, a record store), decodes them, serves the tree, and
/// after an accepted edit encodes the document and stores it in one step.
///
/// The contract, which each kind's tests check on its real samples:
/// * `decode` then `encode` gives back the file (byte for byte, or an
///   equivalent the kind documents);
/// * for every writable file, `apply(path, render(path))` leaves the
///   document unchanged;
/// * a refused `apply` leaves `self` exactly as it was, and says what,
///   where (file, line, column) and why.
pub trait Document: Send + Sync + Sized + 'static {
    /// The kind's name, as `worldfs mount -t NAME` takes it (a record's:
    /// its collection's directory).
    const NAME: &'static str;

    /// Whether a file is of this kind, from its path and first bytes (up to
    /// 4 KiB), used when no `-t` is given.
    fn sniff(_path: &Path, _head: &[u8]) -> bool {
        false
    }

    /// The `-o key[=value]` mount options this kind understands (passed to
    /// `decode` in [`Context::options`]); any other is refused at mount.
    fn options() -> &'static [&'static str] {
        &[]
    }

    /// Files beside the main one that `decode` uses if they exist (a chunk
    /// dump's `.meta`).
    fn companions(_path: &Path) -> Vec<PathBuf> {
        Vec::new()
    }

    fn decode(bytes: &[u8], ctx: &Context) -> DocResult<Self>;

    /// The bytes of the main file.
    fn encode(&self) -> DocResult<Vec<u8>>;

    /// The whole tree in listing order, each directory before its contents
    /// (the root itself is not listed).
    fn entries(&self) -> Vec<Entry>;

    /// The content of a file of the tree.
    fn render(&self, path: &str) -> DocResult<Vec<u8>>;

    /// New content for a file of the tree (an existing one, or a new name
    /// that [`accepts_new`](Document::accepts_new) allowed).
    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()>;

    /// What an edit of file `path` to `content` would be refused with,
    /// judged without changing the document: on `copy`, a copy decoded
    /// afresh, as the edit itself is made (its own checks, `apply`, then
    /// `encode`).
    fn judge(mut copy: Self, path: &str, content: &[u8]) -> DocResult<()> {
        copy.check_content(path, content)?;
        copy.apply(path, content)?;
        copy.encode().map(drop)
    }

    /// Whether a new file `path` may be created (it becomes part of the
    /// document when it is written and closed).
    fn accepts_new(&self, _path: &str) -> bool {
        false
    }

    /// Remove a file (unlink).
    fn remove(&mut self, path: &str) -> DocResult<()> {
        Err(DocError::new("files of this kind cannot be removed").in_file(path))
    }

    /// Make a directory.
    fn mkdir(&mut self, path: &str) -> DocResult<()> {
        Err(DocError::new("directories cannot be made here").in_file(path))
    }

    /// Remove a directory and what it holds.
    fn rmdir(&mut self, path: &str) -> DocResult<()> {
        Err(DocError::new("directories cannot be removed here").in_file(path))
    }

    /// Judge `content` as the new content of `path` without changing
    /// anything (`Tree::check_content`): the error `apply` would give, or
    /// Ok also when it cannot tell before the whole edit.
    fn check_content(&self, _path: &str, _content: &[u8]) -> DocResult<()> {
        Ok(())
    }

    /// Whether `content`, written in one piece at offset 0, is all that file
    /// `path` can hold, so that nothing written after it could make it valid
    /// (its one line, its fixed number of rows or bytes): such a write is
    /// judged at once ([`judge`](Document::judge), `Tree::complete`), and a
    /// refusal fails the write itself, which a shell's `echo bad > FILE`
    /// reports (it ignores close). Other writes are judged at close.
    fn complete(&self, _path: &str, _content: &[u8]) -> bool {
        false
    }

    /// Whether it holds nothing and so is not stored at all (a mod's
    /// storage without keys).
    fn is_empty(&self) -> bool {
        false
    }

    /// The text of `MNT/README` for a mount of this kind.
    fn readme(&self) -> String {
        String::new()
    }
}

/// Whether `content` is exactly `n` lines that say something (not blank,
/// not a `#` comment), the last one ended: a file of `n` such lines is
/// complete, as any other such line would be one too many.
pub(crate) fn complete_lines(content: &[u8], n: usize) -> bool {
    let said = |l: &&[u8]| {
        let t = l.trim_ascii();
        !t.is_empty() && !t.starts_with(b"#")
    };
    content.ends_with(b"\n") && content.split(|&c| c == b'\n').filter(said).count() == n
}

/// How a mount opens one kind of world.
pub struct KindInfo {
    /// As `-t NAME` takes it.
    pub name: &'static str,
    /// What it is, for `--help` and messages.
    pub(crate) what: &'static str,
    /// Whether a file is of this kind (path and first 4 KiB).
    sniff: fn(&Path, &[u8]) -> bool,
    /// The `-o` options it understands.
    options: fn() -> &'static [&'static str],
    open: OpenFn,
}

type OpenFn = fn(&Path, Vec<(String, Option<String>)>, Options, Arc<Services>) -> Result<Arc<dyn Tree>, String>;

fn open_doc<D: Document>(
    path: &Path,
    options: Vec<(String, Option<String>)>,
    opts: Options,
    services: Arc<Services>,
) -> Result<Arc<dyn Tree>, String> {
    Ok(doc_tree::DocTree::<D>::open(path, options, opts, services)?)
}

impl KindInfo {
    /// Whether a file is of this kind, from its path and first 4 KiB.
    pub(crate) fn sniffs(&self, path: &Path, head: &[u8]) -> bool {
        (self.sniff)(path, head)
    }

    /// The `-o` options it understands.
    pub(crate) fn mount_options(&self) -> &'static [&'static str] {
        (self.options)()
    }

    /// Its tree for the file at `path`, with its `-o` options.
    pub(crate) fn open(
        &self,
        path: &Path,
        options: Vec<(String, Option<String>)>,
        opts: Options,
        services: Arc<Services>,
    ) -> Result<Arc<dyn Tree>, String> {
        (self.open)(path, options, opts, services)
    }
}

/// The entry of a one-file kind.
pub(crate) fn doc_kind<D: Document>(what: &'static str) -> KindInfo {
    KindInfo { name: D::NAME, what, sniff: D::sniff, options: D::options, open: open_doc::<D> }
}
