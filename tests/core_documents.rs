//! The generic tree of one-file kinds (`kinds::doc_tree`) through the
//! core, without a mount: reading, committing edits atomically, refusals
//! that leave the file as it was, editors' temporary files renamed over a
//! file, new files, changes made by another program, and conflicts. The
//! document here is a small `key = value` file defined by the test: the
//! machinery is the same for every kind.

use crate::common;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use worldfs::documents::doc_tree::DocTree;
use worldfs::documents::{Context, DocError, DocResult, Document, Entry};
use worldfs::fs::{ErrorKind, FsError, Options, ROOT, Services, WorldFs};

/// `key = value` lines; each key is a file, `all` the whole text.
#[derive(Clone, Debug, PartialEq)]
struct Pairs(Vec<(String, String)>);

impl Document for Pairs {
    const NAME: &'static str = "pairs";

    fn sniff(path: &Path, _head: &[u8]) -> bool {
        path.extension().is_some_and(|e| e == "pairs")
    }

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        let text = std::str::from_utf8(bytes).map_err(|_| DocError::new("not UTF-8"))?;
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let (k, val) = line.split_once(" = ").ok_or_else(|| DocError::at_line(i + 1, "expected 'key = value'"))?;
            v.push((k.to_string(), val.to_string()));
        }
        Ok(Pairs(v))
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(self.0.iter().map(|(k, v)| format!("{k} = {v}\n")).collect::<String>().into_bytes())
    }

    fn entries(&self) -> Vec<Entry> {
        let mut e = vec![Entry::file("all", false), Entry::dir("keys")];
        e.extend(self.0.iter().map(|(k, _)| Entry::file(format!("keys/{k}"), true)));
        e
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        if path == "all" {
            return self.encode();
        }
        let key = path.strip_prefix("keys/").ok_or_else(|| DocError::new("no such file"))?;
        let (_, v) = self.0.iter().find(|(k, _)| k == key).ok_or_else(|| DocError::new("no such key"))?;
        Ok(format!("{v}\n").into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let key = path.strip_prefix("keys/").ok_or_else(|| DocError::new("only keys/ can be written"))?;
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8"))?;
        let value = text.strip_suffix('\n').unwrap_or(text);
        if let Some(col) = value.find(['\n', '=']) {
            return Err(DocError::at(1, col + 1, "a value is one line without '='"));
        }
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value.to_string(),
            None => self.0.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    fn accepts_new(&self, path: &str) -> bool {
        path.strip_prefix("keys/").is_some_and(|k| !k.is_empty() && k.bytes().all(|c| c.is_ascii_lowercase()))
    }

    fn remove(&mut self, path: &str) -> DocResult<()> {
        let key = path.strip_prefix("keys/").ok_or_else(|| DocError::new("cannot be removed"))?;
        self.0.retain(|(k, _)| k != key);
        Ok(())
    }

    fn readme(&self) -> String {
        "keys/K holds the value of K\n".into()
    }
}

fn mount(file: &Path, ttl: Duration) -> WorldFs {
    let opts = Options { read_only: false, ttl, ..Options::default() };
    let services = Services::new();
    let tree = DocTree::<Pairs>::open(file, Vec::new(), opts.clone(), services.clone()).unwrap();
    WorldFs::new(tree, services, opts)
}

fn setup(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("x.pairs");
    std::fs::write(&f, text).unwrap();
    (d, f)
}

fn ino(fs: &WorldFs, path: &str) -> u64 {
    path.split('/').fold(ROOT, |dir, name| fs.lookup(dir, OsStr::new(name)).unwrap().ino)
}

fn read_all(fs: &WorldFs, ino: u64) -> Vec<u8> {
    let o = fs.open(ino, libc::O_RDONLY, 1).unwrap();
    let data = fs.read(o.fh, 0, 1 << 20).unwrap();
    fs.release(o.fh).unwrap();
    data
}

fn write(fs: &WorldFs, ino: u64, flags: i32, data: &[u8]) -> Result<(), FsError> {
    let o = fs.open(ino, libc::O_WRONLY | flags, 1)?;
    fs.write(o.fh, 0, data)?;
    let r = fs.flush(o.fh, 1);
    fs.release(o.fh)?;
    r
}

fn names(fs: &WorldFs, dir: u64) -> Vec<String> {
    let mut v = Vec::new();
    fs.readdir(dir, 0, false, &mut |e, _| {
        v.push(e.name.to_string_lossy().into_owned());
        false
    })
    .unwrap();
    v
}

#[test]
fn files_read_and_edits_are_written_back_atomically() {
    let (_d, f) = setup("a = 1\nb = 2\n");
    let fs = mount(&f, Duration::from_secs(1));
    assert_eq!(names(&fs, ROOT), [".", "..", "all", "keys", "README", "write-errors"]);
    assert_eq!(names(&fs, ino(&fs, "keys")), [".", "..", "a", "b"]);
    let b = ino(&fs, "keys/b");
    assert_eq!(read_all(&fs, b), b"2\n");
    write(&fs, b, libc::O_TRUNC, b"20\n").unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 1\nb = 20\n");
    assert_eq!(read_all(&fs, ino(&fs, "all")), b"a = 1\nb = 20\n");
    assert_eq!(fs.getattr(b).unwrap().size, 3);
    // The number of a file stays the same across edits.
    assert_eq!(ino(&fs, "keys/b"), b);
    // Generated files cannot be written.
    assert_eq!(fs.open(ino(&fs, "all"), libc::O_WRONLY, 1).unwrap_err().kind, ErrorKind::NotPermitted);
    assert_eq!(fs.getattr(ino(&fs, "all")).unwrap().perm, 0o444);
    // Nothing is left beside the file.
    let left: Vec<_> = std::fs::read_dir(f.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["x.pairs"]);
}

#[test]
fn a_refused_edit_leaves_the_file_and_says_why() {
    let (_d, f) = setup("a = 1\n");
    let fs = mount(&f, Duration::from_secs(1));
    let a = ino(&fs, "keys/a");
    let e = write(&fs, a, libc::O_TRUNC, b"x=y\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 1\n");
    let errors = fs.write_errors().concat();
    assert!(errors.contains("keys/a: line 1, column 2: a value is one line without '='"), "{errors}");
    assert_eq!(read_all(&fs, a), b"1\n");
}

#[test]
fn sed_style_rename_over_a_file_and_new_files() {
    let (_d, f) = setup("a = 1\n");
    let fs = mount(&f, Duration::from_secs(1));
    let keys = ino(&fs, "keys");
    // sed -i: temporary file, rename over the original.
    let (tmp, o) =
        fs.create(keys, OsStr::new("sedAbC1"), 0o100600, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 1).unwrap();
    fs.write(o.fh, 0, b"one\n").unwrap();
    fs.flush(o.fh, 1).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 1\n", "a scratch file is not the document");
    fs.rename(keys, OsStr::new("sedAbC1"), keys, OsStr::new("a"), 0).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = one\n");
    // The kernel keeps using the temporary file's number for the name.
    assert_eq!(fs.getattr(tmp.ino).unwrap().size, 4);
    assert_eq!(read_all(&fs, tmp.ino), b"one\n");
    // A new name the document accepts becomes part of it when written.
    let (_, o) = fs.create(keys, OsStr::new("c"), 0o100644, libc::O_WRONLY | libc::O_CREAT, 1).unwrap();
    fs.write(o.fh, 0, b"3\n").unwrap();
    fs.flush(o.fh, 1).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = one\nc = 3\n");
    assert_eq!(names(&fs, keys), [".", "..", "a", "c"]);
    // Others are scratch files; unlink removes a key.
    let (_, o) = fs.create(keys, OsStr::new("Bad.swp"), 0o100644, libc::O_WRONLY | libc::O_CREAT, 1).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(names(&fs, keys), [".", "..", "a", "c", "Bad.swp"]);
    fs.unlink(keys, OsStr::new("Bad.swp")).unwrap();
    fs.unlink(keys, OsStr::new("a")).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "c = 3\n");
}

#[test]
fn another_programs_change_shows_and_a_stale_write_is_refused() {
    let (_d, f) = setup("a = 1\n");
    let fs = mount(&f, Duration::from_millis(50));
    let a = ino(&fs, "keys/a");
    // Opened to append (its buffer holds the old content)...
    let o = fs.open(a, libc::O_WRONLY | libc::O_APPEND, 1).unwrap();
    // ...while another program rewrites the file.
    std::fs::write(&f, "a = 7\n").unwrap();
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(read_all(&fs, a), b"7\n");
    fs.write(o.fh, 0, b"").unwrap();
    let e = fs.flush(o.fh, 1).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stale, "{e}");
    fs.release(o.fh).ok();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 7\n");
    // A truncating write owes nothing to the old content: last writer wins.
    write(&fs, a, libc::O_TRUNC, b"8\n").unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 8\n");
}

#[test]
fn read_only_mounts_never_write() {
    let (_d, f) = setup("a = 1\n");
    let opts = Options { read_only: true, ..Options::default() };
    let services = Services::new();
    let tree = DocTree::<Pairs>::open(&f, Vec::new(), opts.clone(), services.clone()).unwrap();
    let fs = WorldFs::new(tree, services, opts);
    let a = ino(&fs, "keys/a");
    assert_eq!(fs.open(a, libc::O_WRONLY, 1).unwrap_err().kind, ErrorKind::ReadOnly);
    assert_eq!(fs.read_unopened(a, 0, 100).unwrap(), b"1\n");
    assert!(!names(&fs, ROOT).contains(&"write-errors".to_string()));
}

#[test]
fn a_file_that_does_not_decode_is_refused_at_mount() {
    let (_d, f) = setup("a = 1\nno equals here\n");
    let opts = Options { read_only: true, ..Options::default() };
    let e = DocTree::<Pairs>::open(&f, Vec::new(), opts, Arc::new(Services::default())).err().unwrap();
    assert!(e.ends_with("x.pairs: line 2: expected 'key = value'"), "{e}");
}

/// The editing steps every directory of keys takes, whatever holds it:
/// a new name written and closed, an editor's hidden temporary file that
/// never reaches the store renamed over a key, a refused write that leaves
/// the store as it was, and unlink. `value` reads what the
/// store holds for a key now.
fn keys_take_the_usual_edits(fs: &WorldFs, keys: u64, bad: &[u8], value: &dyn Fn(&str) -> Option<String>) {
    let (_, o) = fs.create(keys, OsStr::new("c"), 0o100644, libc::O_WRONLY | libc::O_CREAT, 1).unwrap();
    fs.write(o.fh, 0, b"3\n").unwrap();
    fs.flush(o.fh, 1).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(value("c").as_deref(), Some("3"));
    let (_, o) =
        fs.create(keys, OsStr::new(".c.tmp"), 0o100600, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 1).unwrap();
    fs.write(o.fh, 0, b"33\n").unwrap();
    fs.flush(o.fh, 1).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(value(".c.tmp"), None, "a scratch file is not stored");
    assert_eq!(value("c").as_deref(), Some("3"));
    fs.rename(keys, OsStr::new(".c.tmp"), keys, OsStr::new("c"), 0).unwrap();
    assert_eq!(value("c").as_deref(), Some("33"));
    let c = fs.lookup(keys, OsStr::new("c")).unwrap().ino;
    assert_eq!(write(fs, c, libc::O_TRUNC, bad).unwrap_err().kind, ErrorKind::Invalid);
    assert_eq!(value("c").as_deref(), Some("33"), "a refused write changed the store");
    assert!(fs.write_errors().concat().contains("c: "), "{:?}", fs.write_errors());
    fs.unlink(keys, OsStr::new("c")).unwrap();
    assert_eq!(value("c"), None);
    assert_eq!(fs.lookup(keys, OsStr::new("c")).unwrap_err().kind, ErrorKind::NotFound);
}

/// A document in its file and a collection of records in its store are
/// served by the one adapter (`FilesTree`): the same core operations do
/// the same to both.
#[test]
fn a_record_set_and_a_document_are_served_by_the_same_adapter() {
    use worldfs::documents::files_tree::FilesTree;
    use worldfs::worlds::luanti::records::RecordSet;
    use worldfs_codec::luanti::mod_storage::ModStorage;
    use worldfs_store::records::{Collection, RecordStore, files::FileRecords};

    let (_d, f) = setup("a = 1\n");
    let doc = mount(&f, Duration::from_secs(1));
    let value_in_file = |key: &str| {
        let text = std::fs::read_to_string(&f).unwrap();
        text.lines().find_map(|l| l.strip_prefix(&format!("{key} = ")).map(String::from))
    };
    keys_take_the_usual_edits(&doc, ino(&doc, "keys"), b"x=y\n", &value_in_file);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a = 1\n");

    let world = tempfile::tempdir().unwrap();
    let opts = Options { read_only: false, ttl: Duration::from_secs(1), ..Options::default() };
    let services = Services::new();
    let store = FileRecords::new(world.path(), Collection::ModStorage, false, None);
    // Tag 0: the collection's directory is the mount's root.
    let tree: FilesTree<ModStorage, RecordSet<ModStorage>> =
        FilesTree::new(0, Box::new(store), opts.clone(), services.clone(), Vec::new());
    let records = WorldFs::new(Arc::new(tree), services, opts);
    let reader = FileRecords::new(world.path(), Collection::ModStorage, true, None);
    let value_in_store = |key: &str| {
        let bytes = reader.get("mymod").unwrap()?;
        let storage = ModStorage::decode(&bytes).unwrap();
        storage.entries.get(key.as_bytes()).map(|v| String::from_utf8_lossy(v).trim_end().to_string())
    };
    let dir = records.mkdir(ROOT, OsStr::new("mymod")).unwrap().ino;
    assert_eq!(reader.get("mymod").unwrap(), None, "an empty record is not stored");
    let (_, o) = records.create(dir, OsStr::new("a"), 0o100644, libc::O_WRONLY | libc::O_CREAT, 1).unwrap();
    records.write(o.fh, 0, b"1\n").unwrap();
    records.release(o.fh).unwrap();
    // An empty value would delete the key in Luanti: refused.
    keys_take_the_usual_edits(&records, dir, b"", &value_in_store);
    assert_eq!(value_in_store("a").as_deref(), Some("1"));
    // A record's files are its structure: no directories inside it.
    let e = records.mkdir(dir, OsStr::new("sub")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotPermitted);
    assert!(e.message.contains("no directories can be made inside a record"), "{e}");
    assert!(records.write_errors().concat().contains("mod_storage/mymod/sub"), "{:?}", records.write_errors());
    // rmdir of a record deletes it and all it holds.
    records.rmdir(ROOT, OsStr::new("mymod")).unwrap();
    assert_eq!(reader.get("mymod").unwrap(), None);
    assert_eq!(names(&records, ROOT), [".", "..", "README", "write-errors"]);
}

/// A copy of real sample `rel` (`KIND/FILE` under tests/data/formats),
/// mounted writable through the core.
fn real_sample(rel: &str) -> (tempfile::TempDir, std::path::PathBuf, WorldFs) {
    let (kind, file) = rel.split_once('/').unwrap();
    let src = common::real_formats(kind).join(file);
    let dir = tempfile::tempdir().unwrap();
    for companion in [src.clone(), src.with_extension("meta")].into_iter().filter(|p| p.exists()) {
        let dst = dir.path().join(companion.file_name().unwrap());
        std::fs::write(&dst, std::fs::read(&companion).unwrap()).unwrap();
    }
    let file = dir.path().join(src.file_name().unwrap());
    let opts = Options { read_only: false, ..Options::default() };
    let fs = worldfs::open::open_path(&file, None, Vec::new(), opts).unwrap();
    (dir, file, fs)
}

/// `echo ... > FILE` as bash does it: open with O_TRUNC, the close of the
/// descriptor it dup2'ed, one write of everything, the close (whose
/// result bash ignores). The write's result, then the close's.
fn echo_into(fs: &WorldFs, ino: u64, data: &[u8], pieces: usize) -> (Result<(), FsError>, Result<(), FsError>) {
    let o = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, 7).unwrap();
    let _ = fs.flush(o.fh, 7);
    let step = data.len().div_ceil(pieces);
    let written = data.chunks(step).enumerate().try_for_each(|(i, c)| fs.write(o.fh, (i * step) as u64, c).map(drop));
    let closed = fs.flush(o.fh, 7);
    let _ = fs.release(o.fh);
    (written, closed)
}

/// Makes bad content from a file's own.
type Spoil = Box<dyn Fn(Vec<u8>) -> Vec<u8>>;

/// A complete bad edit of a one-file kind's one-line or fixed-size file
/// (`echo bad > FILE`) used to be refused only at close, which bash
/// ignores: the shell printed nothing and exited 0. Now the write fails
/// (EINVAL) and the file is as it was; the same content in pieces (the
/// first not yet the whole file) is judged at close, and the file's own
/// content is accepted.
#[test]
fn complete_bad_writes_of_one_file_kinds_fail_at_the_write() {
    let biomes = "1 2 x 4 5 6 7 8 9 10 11 12 13 14 15 16\n".repeat(16);
    let cases: [(&str, &str, Spoil); 6] = [
        ("mts/mtg_apple_tree.mts", "size", Box::new(|_| b"0 7 7\n".to_vec())),
        (
            "mts/mtg_apple_tree.mts",
            "yslice",
            Box::new(|now| String::from_utf8(now).unwrap().replace(" ", " 9").into_bytes()),
        ),
        ("mts/mtg_apple_tree.mts", "param0", Box::new(|now| vec![0xff; now.len()])),
        ("cubeset/DesertWell.cubeset", "pieces/*/hitbox", Box::new(|_| b"min 0 0 0\nmin 1 1 1\n".to_vec())),
        ("mc_chunk_section/prismarine_1.12_chunk.dump", "biomes", Box::new(move |_| biomes.clone().into_bytes())),
        (
            "twmap/ddnet_dm1.map",
            "groups/06_Game/layers/02_Game/tiles.raw",
            Box::new(|mut now| {
                now[1] = 16; // flags past the four DDNet knows
                now
            }),
        ),
    ];
    for (rel, path, bad) in cases {
        let (_dir, file, fs) = real_sample(rel);
        let path = match path.split_once("/*/") {
            Some((dir, rest)) => {
                let first = names(&fs, ino(&fs, dir)).into_iter().find(|n| !n.starts_with('.')).unwrap();
                format!("{dir}/{first}/{rest}")
            }
            None => path.to_string(),
        };
        let f = ino(&fs, &path);
        let (before, shown) = (std::fs::read(&file).unwrap(), read_all(&fs, f));
        let bad = bad(shown.clone());
        let (written, closed) = echo_into(&fs, f, &bad, 1);
        let e = written.expect_err(&format!("{rel} {path}: the whole bad content is refused at the write"));
        assert_eq!(e.kind, ErrorKind::Invalid, "{rel} {path}: {e}");
        assert!(closed.is_ok(), "{rel} {path}: nothing left to commit at close");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{rel} {path}: the file is as it was");
        assert!(fs.write_errors().concat().contains(&path), "{rel} {path}: {:?}", fs.write_errors());
        let (written, closed) = echo_into(&fs, f, &bad, 2);
        assert!(written.is_ok(), "{rel} {path}: half of it could still become anything");
        assert_eq!(closed.map_err(|e| e.kind), Err(ErrorKind::Invalid), "{rel} {path}: refused at close");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{rel} {path}: the file is as it was");
        let (written, closed) = echo_into(&fs, f, &shown, 1);
        assert!(written.is_ok() && closed.is_ok(), "{rel} {path}: its own content is accepted");
        assert_eq!(read_all(&fs, f), shown);
    }
}
