//! `.mcworld` files: a Bedrock world as the game exports it, a zip of the
//! world folder (`level.dat`, `db/`, `levelname.txt`, ...). `worldfs
//! mount FILE.mcworld MNT` unpacks it into a private temporary folder and
//! mounts that read-only (an edit could not go back into the zip as the
//! game would read it); `worldfs unpack FILE.mcworld DIR` unpacks it to a
//! chosen place, which then mounts writable.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// At most this much is unpacked (a world's database is rarely 1 GiB).
const MAX_TOTAL: u64 = 16 << 30;

/// Whether `path` looks like a `.mcworld` (by name, or a zip holding
/// `level.dat`).
pub(crate) fn is_mcworld(path: &Path, head: &[u8]) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcworld")) && head.starts_with(b"PK\x03\x04")
}

/// Unpack the `.mcworld` at `file` into the folder `dir` (made if missing;
/// refused if it holds anything). The world may be at the zip's top or in
/// one folder of it; returns the world's folder.
pub(crate) fn unpack(file: &Path, dir: &Path) -> Result<PathBuf, String> {
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", file.display());
    let f = std::fs::File::open(file).map_err(|e| at(&e))?;
    let mut zip = zip::ZipArchive::new(f).map_err(|e| at(&format!("not a zip archive ({e})")))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.next().is_some() {
        return Err(format!("{}: not empty; unpack into a new folder", dir.display()));
    }
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| at(&e))?;
        let name = entry.name().to_string();
        // Refuse names that would leave `dir` (absolute, `..`).
        let rel = entry.enclosed_name().filter(|p| p.components().all(|c| matches!(c, Component::Normal(_))));
        let rel = rel.ok_or_else(|| at(&format!("entry {name:?} would be written outside the folder; refused")))?;
        let to = dir.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
            continue;
        }
        total = total.saturating_add(entry.size());
        if total > MAX_TOTAL {
            return Err(at(&"unpacks to more than 16 GiB; refused"));
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut bytes = Vec::with_capacity(entry.size().min(1 << 26) as usize);
        (&mut entry).take(MAX_TOTAL).read_to_end(&mut bytes).map_err(|e| at(&format!("entry {name:?}: {e}")))?;
        crate::documents::doc_tree::write_atomically(&to, &bytes).map_err(|e| e.message)?;
    }
    world_in(dir).ok_or_else(|| at(&"holds no Bedrock world (level.dat and db/)"))
}

/// The world folder in an unpacked `.mcworld`: `dir`, or its one folder.
fn world_in(dir: &Path) -> Option<PathBuf> {
    if super::is_bedrock_world(dir) {
        return Some(dir.to_path_buf());
    }
    let subs: Vec<PathBuf> =
        std::fs::read_dir(dir).ok()?.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    match &subs[..] {
        [one] if super::is_bedrock_world(one) => Some(one.clone()),
        _ => None,
    }
}
