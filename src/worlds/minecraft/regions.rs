//! The chunks of a Java world's `region/` directory as a many-item
//! [`Home`]: each chunk the region files' headers list is an item named
//! `X,Z` (chunk coordinates), shown as [`ChunkDir`]: the chunk, or `raw`
//! and `error` for one that cannot be read (its header entry, its bytes or
//! its NBT is wrong). One such chunk hides no other: the others of its
//! file are shown and written as ever. A changed chunk is written as the
//! game writes it, every other byte of the region file kept (its own
//! sectors when it fits them, else the first free ones; see
//! `region::put`), to a temporary file, fsync, rename over the old one,
//! fsync of the directory: a crash leaves the old file or the new one. A
//! chunk too long for the file goes to `c.X.Z.mcc` first. Each write is
//! journaled with the patch that turns the file back byte for byte
//! (`worldfs_codec::filepatch`). Refused while a game holds `session.lock`.

use super::chunk::ChunkDoc;
use super::chunk_dir::ChunkDir;
use super::entities::EntityChunkDoc;
use super::journal;
use crate::documents::doc_tree::write_atomically;
use crate::documents::files_tree::{Home, Stored};
use crate::documents::{Context, Document};
use crate::fs::{FsError, Result};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use worldfs_codec::filepatch;
use worldfs_codec::minecraft::nbt;
use worldfs_codec::minecraft::region::{self, Located, RawChunk};
use worldfs_store::Note;
use worldfs_store::journal::Fingerprint;

/// What identifies one version of a region file (and its chunk's `.mcc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileStamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

pub(crate) fn stamp_of(path: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

/// What identifies one stored version of a chunk: a hash of its bytes in
/// the region file (and of its `.mcc`'s identity, size and time when it is
/// stored outside) and of what is wrong with its place. Not the region
/// file's stamp: a file rewritten in place keeps its identity and size,
/// and its time too within one tick of a coarse file system clock or when
/// a tool sets it back, so a chunk cached by the file's stamp could be
/// shown as it was for as long as the mount runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkStamp(u64);

/// One chunk as its region file holds it.
pub(crate) enum ChunkBytes {
    /// Its NBT, decompressed.
    Nbt(Vec<u8>),
    /// It cannot be read: why (naming the file and the chunk).
    Bad(String),
}

/// A chunk read from its region file: its bytes there (its sectors, as
/// far as they are in the file), what they hold, and its stamp.
pub(crate) struct Loaded {
    pub(crate) raw: Vec<u8>,
    pub(crate) chunk: ChunkBytes,
    pub(crate) stamp: ChunkStamp,
}

/// A Java world's region files, shared by `chunks/` and `block/`.
pub struct Regions {
    pub(crate) world: PathBuf,
    /// The folder of the region files in the world: `region` (chunks),
    /// `entities` (1.17+ entity chunks), `poi`, or those of another
    /// dimension or layout (`DIM-1/region`,
    /// `dimensions/minecraft/overworld/region`: `layout.rs`).
    folder: PathBuf,
    /// The journal's collection of its chunks (`journal::CHUNKS` for the
    /// overworld's).
    collection: String,
    /// One change at a time (a change rewrites a whole region file).
    pub(crate) lock: Mutex<()>,
    /// The undo journal (None: not kept).
    pub(crate) journal: Option<PathBuf>,
}

/// Chunk coordinates from an item name `X,Z`.
pub(crate) fn parse_name(name: &str) -> Option<(i64, i64)> {
    let (x, z) = name.split_once(',')?;
    let (x, z): (i64, i64) = (x.parse().ok()?, z.parse().ok()?);
    (format!("{x},{z}") == name).then_some((x, z))
}

/// What chunk (x, z) of the region file at `path` holds, from its entry
/// `at` and its bytes `sectors` (see [`Located::bytes`]): its NBT, or why
/// it cannot be read. A chunk whose sectors another entry holds too is
/// read when its NBT says it is this chunk (the other entry is the wrong
/// one), and not otherwise (whose data it is cannot be told).
pub(crate) fn chunk_from(path: &Path, at: &Located, sectors: &[u8], (x, z): (i64, i64)) -> ChunkBytes {
    let bad = ChunkBytes::Bad;
    if let Some(problem) = &at.problem {
        return bad(problem.clone());
    }
    let read = region::read_chunk(sectors, 0).and_then(|mut raw| {
        if raw.external {
            let mcc = path.with_file_name(format!("c.{x}.{z}.mcc"));
            raw.data = std::fs::read(&mcc).map_err(|e| format!("{}: {e}", mcc.display()))?;
        }
        region::decompress(&raw)
    });
    let nbt = match read {
        Ok(nbt) => nbt,
        Err(why) => return bad(why),
    };
    if at.shares_with.is_empty() {
        return ChunkBytes::Nbt(nbt);
    }
    let shares = shared_sectors(at, (x, z));
    match position_of(&nbt) {
        Some(p) if p == (x, z) => ChunkBytes::Nbt(nbt),
        Some((px, pz)) => bad(format!("{shares}, and its data is chunk {px},{pz}'s (its NBT says so)")),
        None => bad(format!("{shares}, and its data names no chunk")),
    }
}

/// "shares sectors A to B with chunk X,Z": chunk (x, z)'s entry `at` and
/// the chunks whose sectors overlap its own.
pub(crate) fn shared_sectors(at: &Located, (x, z): (i64, i64)) -> String {
    let (rx, rz) = (x.div_euclid(32), z.div_euclid(32));
    let others: Vec<String> = at
        .shares_with
        .iter()
        .map(|&i| format!("{},{}", rx * 32 + (i % 32) as i64, rz * 32 + (i / 32) as i64))
        .collect();
    format!("shares sectors {} to {} with chunk {}", at.offset, at.offset + at.count, others.join(", "))
}

/// The position a chunk's (or an entity chunk's) NBT gives.
fn position_of(bytes: &[u8]) -> Option<(i64, i64)> {
    let (_, root) = nbt::decode(bytes).ok()?;
    let level = root.compound("Level").unwrap_or(&root);
    if let (Some(x), Some(z)) = (level.int("xPos"), level.int("zPos")) {
        return Some((x, z));
    }
    match root.get("Position") {
        Some(nbt::Tag::IntArray(p)) if p.len() == 2 => Some((p[0] as i64, p[1] as i64)),
        _ => None,
    }
}

/// Region coordinates from `X.Z` (of `r.X.Z.mca`).
pub(crate) fn region_xz(name: &str) -> Option<(i64, i64)> {
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
    pub(crate) fn with_collection(self, collection: String) -> Regions {
        Regions { collection, ..self }
    }
    pub(crate) fn dir(&self) -> PathBuf {
        self.world.join(&self.folder)
    }
    pub(crate) fn file_of(&self, x: i64, z: i64) -> PathBuf {
        self.dir().join(format!("r.{}.{}.mca", x.div_euclid(32), z.div_euclid(32)))
    }
    fn index(x: i64, z: i64) -> usize {
        (x.rem_euclid(32) + 32 * z.rem_euclid(32)) as usize
    }

    /// The names of the chunks the region files' headers list, sorted by
    /// (x, z): each entry, also one that is wrong (it is shown as such). A
    /// region file that cannot be read at all is left out and logged.
    pub(crate) fn chunk_names(&self) -> std::result::Result<Vec<String>, String> {
        let dir = self.dir();
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let name = e.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
            let Some((rx, rz)) = name.strip_prefix("r.").and_then(|n| n.strip_suffix(".mca")).and_then(region_xz)
            else {
                continue;
            };
            let path = dir.join(&name);
            let (head, len) = match read_head(&path) {
                Ok(h) => h,
                Err(e) => {
                    log::warn!("{}: {e}; its chunks are not shown", path.display());
                    continue;
                }
            };
            for l in region::located(&head, len) {
                out.push((rx * 32 + (l.index % 32) as i64, rz * 32 + (l.index / 32) as i64));
            }
        }
        out.sort();
        Ok(out.into_iter().map(|(x, z)| format!("{x},{z}")).collect())
    }

    /// Chunk (x, z) as its region file holds it, read without the rest of
    /// the file (its header and its sectors). None: no entry lists it. Err:
    /// the region file cannot be read at all.
    pub(crate) fn load(&self, x: i64, z: i64) -> std::result::Result<Option<Loaded>, String> {
        let path = self.file_of(x, z);
        let Some((at, raw)) = read_place(&path, Self::index(x, z)).map_err(|e| format!("{}: {e}", path.display()))?
        else {
            return Ok(None);
        };
        let stamp = chunk_stamp(&path, &at, &raw, (x, z));
        Ok(Some(Loaded { chunk: chunk_from(&path, &at, &raw, (x, z)), raw, stamp }))
    }

    /// The stamp of chunk (x, z) as [`Regions::load`] would give it, from
    /// its header entry and its bytes (nothing decompressed).
    pub(crate) fn stamp(&self, x: i64, z: i64) -> std::result::Result<Option<ChunkStamp>, String> {
        let path = self.file_of(x, z);
        let place = read_place(&path, Self::index(x, z)).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(place.map(|(at, raw)| chunk_stamp(&path, &at, &raw, (x, z))))
    }

    /// The stored NBT bytes of chunk (x, z) (None: not present; Err: it
    /// cannot be read, and why).
    pub fn read_chunk(&self, x: i64, z: i64) -> std::result::Result<Option<Vec<u8>>, String> {
        match self.load(x, z)?.map(|l| l.chunk) {
            None => Ok(None),
            Some(ChunkBytes::Nbt(b)) => Ok(Some(b)),
            Some(ChunkBytes::Bad(why)) => Err(format!("{}: chunk {x},{z}: {why}", self.file_of(x, z).display())),
        }
    }

    /// The stored NBT bytes of the chunks of the region file holding chunk
    /// (x, z) for which `want(x, z)`, the file read once (a map tile's
    /// chunks); a chunk that cannot be read is left out and logged.
    pub(crate) fn region_chunks(
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
        for at in region::located(&file, file.len()) {
            let (cx, cz) = (rx * 32 + (at.index % 32) as i64, rz * 32 + (at.index / 32) as i64);
            if !want(cx, cz) {
                continue;
            }
            match chunk_from(&path, &at, at.bytes(&file), (cx, cz)) {
                ChunkBytes::Nbt(d) => out.push((cx, cz, d)),
                ChunkBytes::Bad(why) => log::warn!("map: {}: chunk {cx},{cz}: {why}", path.display()),
            }
        }
        Ok(out)
    }

    /// Replace chunk (x, z)'s NBT with `new`, if it is still `old`, as one
    /// journaled change (with the patch that gives the region file back).
    /// The caller holds `lock` and has checked `session.lock`.
    pub fn write_chunk(&self, x: i64, z: i64, old: &[u8], new: &[u8], note: &Note) -> Result<()> {
        let mut rewrite = self.rewrite(x, z)?;
        rewrite.put(x, z, old, new)?;
        let name = format!("{x},{z}");
        let (file, patch, after) = rewrite.patch();
        let files = [(file.as_str(), patch.as_slice(), after)];
        // Another dimension's chunks are named as such in `worldfs undo`.
        let in_dimension = journal::dimension_of(&self.collection)
            .map(|dim| Note { what: format!("{} in {dim}", note.what), ..note.clone() });
        let note = in_dimension.as_ref().unwrap_or(note);
        let entry =
            journal::begin_with_files(self.journal.as_deref(), note, &self.collection, &[(&name, old, new)], &files)?;
        rewrite.commit()?;
        entry.kept();
        Ok(())
    }

    /// A rewrite of the region file holding chunk (x, z), read whole.
    pub(crate) fn rewrite(&self, x: i64, z: i64) -> Result<Rewrite> {
        let path = self.file_of(x, z);
        let before = std::fs::read(&path)
            .map_err(|e| FsError::io(format!("{}: {e}; the region file is unchanged", path.display())))?;
        let name = format!("{}/r.{}.{}.mca", self.folder.display(), x.div_euclid(32), z.div_euclid(32));
        Ok(Rewrite { path, name, after: before.clone(), before, mcc: Vec::new() })
    }
}

/// A rewrite of one region file in the making: the bytes read, the bytes
/// to write, and the `.mcc` files to write (Some) or remove (None) with it.
pub(crate) struct Rewrite {
    pub(crate) path: PathBuf,
    /// Its path in the world, as the journal names it (`region/r.X.Z.mca`).
    pub(crate) name: String,
    pub(crate) before: Vec<u8>,
    pub(crate) after: Vec<u8>,
    mcc: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl Rewrite {
    /// Chunk (x, z)'s NBT becomes `new`, if it is still `old` (ESTALE if
    /// not; EIO if it cannot be read), compressed as it was and stamped
    /// with the time now; every other byte of the file is kept.
    pub(crate) fn put(&mut self, x: i64, z: i64, old: &[u8], new: &[u8]) -> Result<()> {
        let io = |e: String| FsError::io(format!("{}: {e}; the region file is unchanged", self.path.display()));
        let i = Regions::index(x, z);
        let all = region::located(&self.after, self.after.len());
        let Some(at) = all.iter().find(|l| l.index == i) else {
            return Err(FsError::stale(format!("chunk {x},{z} is gone from its region file; read it again")));
        };
        let current = match chunk_from(&self.path, at, at.bytes(&self.after), (x, z)) {
            ChunkBytes::Nbt(b) => b,
            ChunkBytes::Bad(why) => return Err(io(format!("chunk {x},{z}: {why}"))),
        };
        if current != old {
            return Err(FsError::stale(format!("chunk {x},{z} changed on disk meanwhile; read it again")));
        }
        let was = region::read_chunk(at.bytes(&self.after), 0).map_err(io)?;
        let (compression, data) = region::compress_as(new, was.compression);
        let now = crate::sys::time::now_secs() as u32;
        let raw = RawChunk { compression, external: false, data, timestamp: now };
        let (after, outside) = region::put(&self.after, i, &raw).map_err(io)?;
        let mcc = self.path.with_file_name(format!("c.{x}.{z}.mcc"));
        match outside {
            Some(data) => self.mcc.push((mcc, Some(data))),
            None if was.external => self.mcc.push((mcc, None)),
            None => {}
        }
        self.after = after;
        Ok(())
    }

    /// What the journal keeps of it: the file's name, the patch that turns
    /// the new bytes back into the old, the fingerprint of the new bytes.
    pub(crate) fn patch(&self) -> (String, Vec<u8>, Fingerprint) {
        (self.name.clone(), filepatch::diff(&self.before, &self.after), Fingerprint::of(&self.after))
    }

    /// Write it: the new `.mcc` files first, then the region file (a
    /// temporary file, fsync, rename), then remove the `.mcc` files its
    /// chunks no longer use.
    pub(crate) fn commit(&self) -> Result<()> {
        for (mcc, data) in &self.mcc {
            if let Some(data) = data {
                write_atomically(mcc, data)?;
            }
        }
        write_atomically(&self.path, &self.after)?;
        for (mcc, data) in &self.mcc {
            if data.is_none() {
                let _ = std::fs::remove_file(mcc);
            }
        }
        Ok(())
    }
}

/// The stamp of chunk (x, z) of the region file at `path`, from its entry
/// `at` and its bytes `raw` (and its `.mcc`'s stamp when stored outside).
fn chunk_stamp(path: &Path, at: &Located, raw: &[u8], (x, z): (i64, i64)) -> ChunkStamp {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (raw, &at.problem, &at.shares_with).hash(&mut h);
    if raw.get(4).is_some_and(|k| k & 0x80 != 0) {
        stamp_of(&path.with_file_name(format!("c.{x}.{z}.mcc"))).hash(&mut h);
    }
    ChunkStamp(h.finish())
}

/// Chunk `i`'s header entry in the region file at `path` and its bytes
/// there (its sectors as far as they are in the file), read without the
/// rest of the file. None: the file or the entry is not there.
fn read_place(path: &Path, i: usize) -> std::io::Result<Option<(Located, Vec<u8>)>> {
    use std::os::unix::fs::FileExt;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len() as usize;
    let mut head = vec![0; len.min(2 * region::SECTOR)];
    f.read_exact_at(&mut head, 0)?;
    let Some(at) = region::located(&head, len).into_iter().find(|l| l.index == i) else { return Ok(None) };
    let start = (at.offset * region::SECTOR).min(len);
    let mut raw = vec![0; ((at.offset + at.count) * region::SECTOR).min(len) - start];
    f.read_exact_at(&mut raw, start as u64)?;
    Ok(Some((at, raw)))
}

/// Remove the temporary files (`.NAME.worldfs-PID-N`, from
/// `write_atomically`) that a crashed worldfs left in `dir`: those whose
/// process is gone or is no worldfs. A live daemon's are left alone (it may
/// be about to rename one). Returns the files removed.
pub(crate) fn remove_stale_temps(dir: &Path) -> Vec<PathBuf> {
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
/// only write a timestamp into it, which cannot tell a running game. A BSD
/// `flock` on it (flock(1), a server's wrapper script) refuses it too:
/// Linux keeps those apart from fcntl locks, so it is tried for as well.
pub(crate) fn check_session_lock(world: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let path = world.join("session.lock");
    let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open(&path) else { return Ok(()) };
    // SAFETY: a zeroed flock is a valid argument for F_GETLK.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fd is open for the call; fl is a valid flock.
    let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) };
    let holder = if r == 0 && fl.l_type != libc::F_UNLCK as libc::c_short {
        Some(format!("process {}", fl.l_pid))
    } else {
        // Taken and let go at once (closing `f` lets it go too); a
        // holder's flock makes it fail without waiting.
        // SAFETY: fd is open for both calls.
        let held = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK);
        if !held {
            // SAFETY: fd is open; unlocking a lock it holds.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
        }
        held.then(|| {
            use std::os::unix::fs::MetadataExt;
            let ino = f.metadata().map(|m| m.ino()).unwrap_or(0);
            flock_holder(ino).map_or("another process (flock)".into(), |pid| format!("process {pid} (flock)"))
        })
    };
    match holder {
        Some(who) => Err(FsError::busy(format!(
            "{} is locked by {who}: a game or server has this world open; stop it to edit (nothing was changed)",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// The process holding a BSD flock on inode `ino`, from /proc/locks
/// (`1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF`).
fn flock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let on = f.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
        (f.get(1) == Some(&"FLOCK") && on == ino).then(|| f.get(4)?.parse().ok()).flatten()
    })
}

/// Bytes that mark a stored version of a chunk that cannot be read (never
/// NBT, which starts with a tag type of 10): then its error, a newline,
/// its raw bytes. Only compared, never written.
const UNREADABLE: &[u8] = b"\xffworldfs: a chunk that cannot be read\n";

/// `chunks/` of a Java world: each chunk a directory `X,Z`.
pub(crate) struct ChunkHome {
    pub(crate) regions: std::sync::Arc<Regions>,
    /// Write even while session.lock is held (`-o force`).
    pub(crate) force: bool,
}

impl Home<ChunkDir> for ChunkHome {
    type Stamp = Option<ChunkStamp>;
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
        Ok(Some(self.regions.stamp(x, z).map_err(FsError::io)?))
    }

    fn load(&self, name: &str) -> Result<Option<Stored<ChunkDir, Self::Stamp>>> {
        let Some((x, z)) = parse_name(name) else { return Ok(None) };
        let Some(Loaded { raw, chunk, stamp }) = self.regions.load(x, z).map_err(FsError::io)? else {
            return Ok(None);
        };
        let why = match chunk {
            ChunkBytes::Nbt(bytes) => match ChunkDoc::decode(&bytes, &Context::default()) {
                Ok(doc) => return Ok(Some(Stored { bytes, doc: ChunkDir::Chunk(doc), stamp: Some(stamp) })),
                Err(e) => e.to_string(),
            },
            ChunkBytes::Bad(why) => why,
        };
        let error = format!("chunk {x},{z} of {} cannot be read: {why}", self.regions.file_of(x, z).display());
        let bytes = [UNREADABLE, error.as_bytes(), b"\n", &raw].concat();
        Ok(Some(Stored { bytes, doc: ChunkDir::Bad { raw, error }, stamp: Some(stamp) }))
    }

    fn decode(&self, name: &str, bytes: &[u8]) -> Result<ChunkDir> {
        if let Some(rest) = bytes.strip_prefix(UNREADABLE) {
            let error = String::from_utf8_lossy(rest.split(|b| *b == b'\n').next().unwrap_or_default());
            return Err(FsError::io(format!("{error}; it shows only raw and error")));
        }
        ChunkDir::decode(bytes, &Context::default()).map_err(|e| FsError::io(format!("chunk {name}: {e}")))
    }

    fn store(&self, name: &str, old: Option<&[u8]>, new: Option<&[u8]>, what: &str) -> Result<Option<Self::Stamp>> {
        let (x, z) = parse_name(name).ok_or_else(FsError::not_found)?;
        let (Some(old), Some(new)) = (old, new) else {
            return Err(FsError::perm("chunks cannot be made or deleted here"));
        };
        let _one = self.regions.lock.lock();
        self.before_change()?;
        self.regions.write_chunk(x, z, old, new, &Note::new(what))?;
        Ok(Some(self.regions.stamp(x, z).map_err(FsError::io)?))
    }

    fn before_change(&self) -> Result<()> {
        if self.force { Ok(()) } else { check_session_lock(&self.regions.world) }
    }

    /// A section's `blocks` shows 4096 blocks: a truncating write of it
    /// made from what it showed before another program changed the chunk
    /// would undo that change, so it is held to what it showed at open.
    fn checks_truncating_writes(&self) -> bool {
        true
    }
}

/// `entities/` of a 1.17+ world: each entity chunk a directory `X,Z`.
pub(crate) struct EntityHome {
    pub(crate) regions: std::sync::Arc<Regions>,
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
