//! The chunks of a Java world's `region/` directory as a many-item
//! [`Home`]: each present chunk is an item named `X,Z` (chunk
//! coordinates). A changed chunk is written by rewriting its region file
//! (every other chunk's stored bytes kept as they are) to a temporary file,
//! fsync, rename over the old one, fsync of the directory: a crash leaves
//! the old file or the new one. A chunk too long for the file goes to
//! `c.X.Z.mcc` first. Refused while a game holds `session.lock`.

use super::chunk::ChunkDoc;
use super::entities::EntityChunkDoc;
use super::journal;
use crate::documents::doc_tree::write_atomically;
use crate::documents::files_tree::{Home, Stored};
use crate::documents::{Context, Document};
use crate::fs::{FsError, Result};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use worldfs_codec::minecraft::region::{self, RawChunk};
use worldfs_store::Note;

/// What identifies one version of a region file (and its chunk's `.mcc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

pub fn stamp_of(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

/// A Java world's region files, shared by `chunks/` and `block/`.
pub struct Regions {
    pub world: PathBuf,
    /// The folder of the region files in the world: `region` (chunks),
    /// `entities` (1.17+ entity chunks), `poi`, or those of another
    /// dimension or layout (`DIM-1/region`,
    /// `dimensions/minecraft/overworld/region`: `layout.rs`).
    folder: PathBuf,
    /// The journal's collection of its chunks (`journal::CHUNKS` for the
    /// overworld's).
    collection: String,
    /// One change at a time (a change rewrites a whole region file).
    pub lock: Mutex<()>,
    /// The undo journal (None: not kept).
    pub journal: Option<PathBuf>,
}

/// Chunk coordinates from an item name `X,Z`.
pub fn parse_name(name: &str) -> Option<(i64, i64)> {
    let (x, z) = name.split_once(',')?;
    let (x, z): (i64, i64) = (x.parse().ok()?, z.parse().ok()?);
    (format!("{x},{z}") == name).then_some((x, z))
}

/// The NBT bytes of the chunk at header index `i` of the region `file` at
/// `path` (read from `c.X.Z.mcc` beside it when stored outside). The
/// caller names the file and the chunk in an error.
pub fn chunk_nbt(path: &Path, file: &[u8], i: usize, (x, z): (i64, i64)) -> std::result::Result<Vec<u8>, String> {
    let mut raw = region::raw_chunk(file, i)?.ok_or("listed but not stored")?;
    if raw.external {
        let mcc = path.with_file_name(format!("c.{x}.{z}.mcc"));
        raw.data = std::fs::read(&mcc).map_err(|e| format!("{}: {e}", mcc.display()))?;
    }
    region::decompress(&raw)
}

/// Region coordinates from `X.Z` (of `r.X.Z.mca`).
pub fn region_xz(name: &str) -> Option<(i64, i64)> {
    let (x, z) = name.split_once('.')?;
    let (x, z): (i64, i64) = (x.parse().ok()?, z.parse().ok()?);
    (format!("{x}.{z}") == name).then_some((x, z))
}

impl Regions {
    pub fn new(world: &Path, folder: impl Into<PathBuf>, journal: Option<PathBuf>) -> Regions {
        let (folder, collection) = (folder.into(), journal::CHUNKS.to_string());
        Regions { world: world.to_path_buf(), folder, collection, lock: Default::default(), journal }
    }
    /// The same, its chunks journaled as `collection`.
    pub fn with_collection(self, collection: String) -> Regions {
        Regions { collection, ..self }
    }
    pub fn dir(&self) -> PathBuf {
        self.world.join(&self.folder)
    }
    pub fn file_of(&self, x: i64, z: i64) -> PathBuf {
        self.dir().join(format!("r.{}.{}.mca", x.div_euclid(32), z.div_euclid(32)))
    }
    fn mcc_of(&self, x: i64, z: i64) -> PathBuf {
        self.dir().join(format!("c.{x}.{z}.mcc"))
    }
    fn index(x: i64, z: i64) -> usize {
        (x.rem_euclid(32) + 32 * z.rem_euclid(32)) as usize
    }

    /// The present chunks' names, sorted by (x, z).
    pub fn chunk_names(&self) -> std::result::Result<Vec<String>, String> {
        let dir = self.dir();
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let name = e.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
            let Some((rx, rz)) = name.strip_prefix("r.").and_then(|n| n.strip_suffix(".mca")).and_then(region_xz)
            else {
                continue;
            };
            let path = dir.join(&name);
            let (head, len) = read_head(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for (i, _, _) in region::locations_of(&head, len).map_err(|e| format!("{}: {e}", path.display()))? {
                out.push((rx * 32 + (i % 32) as i64, rz * 32 + (i / 32) as i64));
            }
        }
        out.sort();
        Ok(out.into_iter().map(|(x, z)| format!("{x},{z}")).collect())
    }

    /// The stored NBT bytes of chunk (x, z) (None: not present).
    pub fn read_chunk(&self, x: i64, z: i64) -> std::result::Result<Option<Vec<u8>>, String> {
        let path = self.file_of(x, z);
        let file = match std::fs::read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let (i, at) = (Self::index(x, z), |e: String| format!("{}: chunk {x},{z}: {e}", path.display()));
        if region::raw_chunk(&file, i).map_err(at)?.is_none() {
            return Ok(None);
        }
        chunk_nbt(&path, &file, i, (x, z)).map(Some).map_err(at)
    }

    /// The stored NBT bytes of the chunks of the region file holding chunk
    /// (x, z) for which `want(x, z)`, the file read once (a map tile's
    /// chunks); a chunk that cannot be read is left out and logged.
    pub fn region_chunks(
        &self,
        x: i64,
        z: i64,
        want: impl Fn(i64, i64) -> bool,
    ) -> std::result::Result<Vec<(i64, i64, Vec<u8>)>, String> {
        let path = self.file_of(x, z);
        let file = match std::fs::read(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let (rx, rz) = (x.div_euclid(32), z.div_euclid(32));
        let mut out = Vec::new();
        for (i, _, _) in region::locations(&file).map_err(|e| format!("{}: {e}", path.display()))? {
            let (cx, cz) = (rx * 32 + (i % 32) as i64, rz * 32 + (i / 32) as i64);
            if !want(cx, cz) {
                continue;
            }
            match chunk_nbt(&path, &file, i, (cx, cz)) {
                Ok(d) => out.push((cx, cz, d)),
                Err(e) => log::warn!("map: {}: chunk {cx},{cz}: {e}", path.display()),
            }
        }
        Ok(out)
    }

    /// Replace chunk (x, z)'s NBT with `new`, if it is still `old`, as one
    /// journaled change. The caller holds `lock` and has checked
    /// `session.lock`.
    pub fn write_chunk(&self, x: i64, z: i64, old: &[u8], new: &[u8], note: &Note) -> Result<()> {
        let name = format!("{x},{z}");
        // Another dimension's chunks are named as such in `worldfs undo`.
        let in_dimension = journal::dimension_of(&self.collection)
            .map(|dim| Note { what: format!("{} in {dim}", note.what), reverts: note.reverts.clone() });
        let note = in_dimension.as_ref().unwrap_or(note);
        let entry = journal::begin(self.journal.as_deref(), note, &self.collection, &[(&name, old, new)])?;
        self.replace_chunk(x, z, old, new)?;
        entry.kept();
        Ok(())
    }

    /// [`Regions::write_chunk`] without its journal entry: the region file
    /// rewritten to a temporary file and renamed over the old one.
    pub fn replace_chunk(&self, x: i64, z: i64, old: &[u8], new: &[u8]) -> Result<()> {
        let path = self.file_of(x, z);
        let io = |e: String| FsError::io(format!("{}: {e}; the region file is unchanged", path.display()));
        let file = std::fs::read(&path).map_err(|e| io(e.to_string()))?;
        let mut chunks = region::all_chunks(&file).map_err(io)?;
        let i = Self::index(x, z);
        let now = crate::sys::time::now_secs() as u32;
        let slot = chunks.iter().position(|c| c.0 == i);
        let current = match slot {
            Some(_) => Some(self.read_chunk(x, z).map_err(io)?.unwrap_or_default()),
            None => None,
        };
        if current.as_deref() != Some(old) {
            return Err(FsError::stale(format!("chunk {x},{z} changed on disk meanwhile; read it again")));
        }
        let k = slot.expect("present");
        let was_external = chunks[k].1.external;
        // Compressed as it was (gzip, zlib, none or LZ4).
        let (compression, data) = region::compress_as(new, chunks[k].1.compression);
        chunks[k].1 = RawChunk { compression, external: false, data, timestamp: now };
        for (j, c) in chunks.iter_mut() {
            if c.external && *j != i {
                let mcc = self.mcc_of(x - x.rem_euclid(32) + (*j % 32) as i64, z - z.rem_euclid(32) + (*j / 32) as i64);
                c.data = std::fs::read(&mcc).map_err(|e| io(format!("{}: {e}", mcc.display())))?;
            }
        }
        let (bytes, external) = region::build(&chunks);
        for (j, data) in &external {
            if *j == i {
                write_atomically(&self.mcc_of(x, z), data)?;
            }
        }
        write_atomically(&path, &bytes)?;
        if was_external && !external.iter().any(|(j, _)| *j == i) {
            let _ = std::fs::remove_file(self.mcc_of(x, z));
        }
        Ok(())
    }
}

/// Remove the temporary files (`.NAME.worldfs-PID-N`, from
/// `write_atomically`) that a crashed worldfs left in `dir`: those whose
/// process is gone or is no worldfs. A live daemon's are left alone (it may
/// be about to rename one). Returns the files removed.
pub fn remove_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_owner(&name) else { continue };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() != "worldfs" && std::fs::remove_file(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// The process id in a temporary file's name `.NAME.worldfs-PID-N`.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".worldfs-")?;
    let (pid, serial) = tail.split_once('-')?;
    serial.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// A region file's header and its length (listing reads no chunk).
fn read_head(path: &Path) -> std::io::Result<(Vec<u8>, usize)> {
    use std::io::Read;
    let mut head = Vec::with_capacity(8192);
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    f.take(8192).read_to_end(&mut head)?;
    Ok((head, len))
}

/// Refuse a change while a game holds `session.lock`: 1.15+ hold a lock on
/// the file (Java's FileChannel.tryLock, an fcntl lock); older versions
/// only write a timestamp into it, which cannot tell a running game.
pub fn check_session_lock(world: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let path = world.join("session.lock");
    let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open(&path) else { return Ok(()) };
    // SAFETY: a zeroed flock is a valid argument for F_GETLK.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fd is open for the call; fl is a valid flock.
    let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) };
    if r == 0 && fl.l_type != libc::F_UNLCK as libc::c_short {
        return Err(FsError::busy(format!(
            "{} is locked by process {}: a game or server has this world open; stop it to edit (nothing was changed)",
            path.display(),
            fl.l_pid
        )));
    }
    Ok(())
}

/// `chunks/` of a Java world: each chunk a directory `X,Z`.
pub struct ChunkHome {
    pub regions: std::sync::Arc<Regions>,
    /// Write even while session.lock is held (`-o force`).
    pub force: bool,
}

impl Home<ChunkDoc> for ChunkHome {
    type Stamp = Option<FileStamp>;
    const MANY: bool = true;

    fn describe(&self) -> String {
        format!("Minecraft Java region files in {}", self.regions.dir().display())
    }

    fn label(&self) -> &'static str {
        "chunks"
    }

    fn names(&self) -> Result<Vec<String>> {
        self.regions.chunk_names().map_err(FsError::io)
    }

    fn stamp(&self, name: &str) -> Result<Option<Self::Stamp>> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        Ok(Some(stamp_of(&self.regions.file_of(x, z))))
    }

    fn load(&self, name: &str) -> Result<Option<Stored<ChunkDoc, Self::Stamp>>> {
        let Some((x, z)) = parse_name(name) else { return Ok(None) };
        let stamp = stamp_of(&self.regions.file_of(x, z));
        let Some(bytes) = self.regions.read_chunk(x, z).map_err(FsError::io)? else { return Ok(None) };
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }

    fn decode(&self, name: &str, bytes: &[u8]) -> Result<ChunkDoc> {
        ChunkDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("chunk {name}: {e}")))
    }

    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<Self::Stamp>> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("chunks cannot be made or deleted here"));
        };
        let _one = self.regions.lock.lock();
        self.before_change()?;
        self.regions.write_chunk(x, z, old, new, &Note::new(what))?;
        Ok(Some(stamp_of(&self.regions.file_of(x, z))))
    }

    fn before_change(&self) -> Result<()> {
        if self.force { Ok(()) } else { check_session_lock(&self.regions.world) }
    }
}

/// `entities/` of a 1.17+ world: each entity chunk a directory `X,Z`.
pub struct EntityHome {
    pub regions: std::sync::Arc<Regions>,
}

impl Home<EntityChunkDoc> for EntityHome {
    type Stamp = Option<FileStamp>;
    const MANY: bool = true;

    fn describe(&self) -> String {
        format!("Minecraft Java entity region files in {}", self.regions.dir().display())
    }
    fn label(&self) -> &'static str {
        "entity chunks"
    }
    fn names(&self) -> Result<Vec<String>> {
        self.regions.chunk_names().map_err(FsError::io)
    }
    fn stamp(&self, name: &str) -> Result<Option<Self::Stamp>> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        Ok(Some(stamp_of(&self.regions.file_of(x, z))))
    }
    fn load(&self, name: &str) -> Result<Option<Stored<EntityChunkDoc, Self::Stamp>>> {
        let Some((x, z)) = parse_name(name) else { return Ok(None) };
        let stamp = stamp_of(&self.regions.file_of(x, z));
        let Some(bytes) = self.regions.read_chunk(x, z).map_err(FsError::io)? else { return Ok(None) };
        let doc = self.decode(name, &bytes)?;
        Ok(Some(Stored { bytes, doc, stamp }))
    }
    fn decode(&self, name: &str, bytes: &[u8]) -> Result<EntityChunkDoc> {
        EntityChunkDoc::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("entity chunk {name}: {e}")))
    }
    fn store(&self, _name: &str, _old: Option<&[u8]>, _new: Option<&[u8]>, _what: &str) -> Result<Option<Self::Stamp>> {
        Err(FsError::perm("entities are read-only here"))
    }
}
