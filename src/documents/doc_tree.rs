//! A [`Document`] kept in one file, served by the one adapter
//! ([`FilesTree`]): the file is decoded whole and is the whole mount, and
//! an accepted edit is written back atomically: a temporary file in the
//! same directory, fsync, rename over the original, fsync of the
//! directory. A change made to the file by another program shows within
//! the TTL (the file's identity is checked then), and a write based on
//! content that changed meanwhile is refused (ESTALE).

use super::files_tree::{FilesTree, Home, Stored};
use super::{Context, Document};
use crate::fs::{FsError, Options, Result, Services};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest file a document kind loads (they are read whole into memory).
pub(crate) const MAX_FILE: u64 = 256 << 20;

/// What identifies one version of the file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(FileId {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

/// The home of a document that is one file: the only item, named "".
pub struct OneFile<D> {
    path: PathBuf,
    ctx: Context,
    _doc: PhantomData<fn() -> D>,
}

/// A document file as the core's tree.
pub type DocTree<D> = FilesTree<D, OneFile<D>>;

impl<D: Document> OneFile<D> {
    fn read(&self) -> std::result::Result<Stored<D, FileId>, String> {
        let id = file_id(&self.path).map_err(|e| e.to_string())?;
        if id.size > MAX_FILE {
            return Err(format!("{} bytes is more than the {MAX_FILE} a {} file may have here", id.size, D::NAME));
        }
        let bytes = std::fs::read(&self.path).map_err(|e| e.to_string())?;
        let doc = D::decode(&bytes, &self.ctx).map_err(|e| e.to_string())?;
        Ok(Stored { bytes, doc, stamp: id })
    }
}

impl<D: Document> FilesTree<D, OneFile<D>> {
    /// Load `path` (and its companions) as a `D`.
    pub fn open(
        path: &Path,
        options: Vec<(String, Option<String>)>,
        opts: Options,
        services: Arc<Services>,
    ) -> std::result::Result<Arc<DocTree<D>>, String> {
        let companions =
            D::companions(path).into_iter().filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b))).collect();
        let ctx = Context { path: path.to_path_buf(), companions, options };
        let home = OneFile { path: path.to_path_buf(), ctx, _doc: PhantomData };
        let stored = home.read().map_err(|e| format!("{}: {e}", path.display()))?;
        let tree = FilesTree::with_home(0, home, opts, services);
        tree.prime("", stored);
        Ok(Arc::new(tree))
    }
}

impl<D: Document> Home<D> for OneFile<D> {
    type Stamp = FileId;
    const MANY: bool = false;

    fn describe(&self) -> String {
        format!("{} file {}", D::NAME, self.path.display())
    }

    fn readme(&self, doc: Option<&D>) -> String {
        doc.map(D::readme).unwrap_or_default()
    }

    fn stamp(&self, _name: &str) -> Result<Option<FileId>> {
        file_id(&self.path).map(Some).map_err(|e| FsError::io(format!("{}: {e}", self.path.display())))
    }

    fn load(&self, _name: &str) -> Result<Option<Stored<D, FileId>>> {
        self.read()
            .map(Some)
            .map_err(|e| FsError::io(format!("{} changed on disk and cannot be read now: {e}", self.path.display())))
    }

    fn decode(&self, _name: &str, bytes: &[u8]) -> Result<D> {
        D::decode(bytes, &self.ctx).map_err(|e| FsError::io(e.to_string()))
    }

    fn store(&self, _name: &str, _old: Option<&[u8]>, new: Option<&[u8]>, _what: &str) -> Result<Option<FileId>> {
        let new = new.ok_or_else(|| FsError::perm(format!("a {} file cannot be deleted here", D::NAME)))?;
        write_atomically(&self.path, new)?;
        self.stamp("")
    }
}

/// Replace `path` with `bytes`: temporary file beside it, fsync, rename,
/// fsync of the directory. The original's permissions are kept.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.worldfs-{}-{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)));
    let io = |e: std::io::Error| FsError::from_io(&e, format!("{}: {e}; the file is unchanged", path.display()));
    let r = (|| {
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions()).map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}
