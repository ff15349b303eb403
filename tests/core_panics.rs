//! The lock policy: a request that panics (a bug) costs that request only.
//! The core's locks are parking_lot's, which a panic does not poison, and
//! the FUSE adapter runs each request through `fuse::run_request`, which
//! catches the panic (the request gets EIO). Here a tree panics in
//! `Tree::complete`, which the core calls while it holds its lock of open
//! handles; every later request through the core still works.

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;
use worldfs::fs::{Access, Attr, DirEntry, FsError, Kind, NewName, Options, ROOT, Result, Services, Tree, WorldFs};

const FILE: u64 = 2;
/// Content whose judging panics.
const BOOM: &[u8] = b"boom\n";

/// A root directory holding one file, `f`, whose new content is judged
/// complete at its first newline, and which panics when judging [`BOOM`].
struct PanickyTree {
    content: parking_lot::Mutex<Vec<u8>>,
    opts: Options,
    panics: AtomicUsize,
}

impl PanickyTree {
    fn attr(&self, ino: u64) -> Result<Attr> {
        let (kind, size) = match ino {
            ROOT => (Kind::Dir, 0),
            FILE => (Kind::File, self.content.lock().len() as u64),
            _ => return Err(FsError::not_found()),
        };
        Ok(Attr::new(ino, kind, size, Access::Normal, SystemTime::UNIX_EPOCH, &self.opts))
    }
}

impl Tree for PanickyTree {
    fn describe(&self) -> String {
        "a tree that panics".into()
    }
    fn readme(&self) -> String {
        "f: a file\n".into()
    }
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        match (parent, name) {
            (ROOT, b"f") => self.attr(FILE),
            _ => Err(FsError::not_found()),
        }
    }
    fn getattr(&self, ino: u64) -> Result<Attr> {
        self.attr(ino)
    }
    fn parent(&self, _ino: u64) -> Result<u64> {
        Ok(ROOT)
    }
    fn list(
        &self,
        dir: u64,
        offset: u64,
        _plus: bool,
        add: &mut dyn FnMut(&DirEntry, Option<&Attr>) -> bool,
    ) -> Result<()> {
        if dir == ROOT && offset < 3 {
            let entry = DirEntry { ino: FILE, offset: 3, kind: Kind::File, name: "f".into() };
            add(&entry, Some(&self.attr(FILE)?));
        }
        Ok(())
    }
    fn read(&self, ino: u64) -> Result<Arc<Vec<u8>>> {
        self.attr(ino)?;
        Ok(Arc::new(self.content.lock().clone()))
    }
    fn check_writable(&self, ino: u64) -> Result<()> {
        self.attr(ino).map(drop)
    }
    fn write(&self, _ino: u64, content: &[u8], _base: Option<&[u8]>) -> Result<()> {
        *self.content.lock() = content.to_vec();
        Ok(())
    }
    fn complete(&self, _ino: u64, content: &[u8]) -> bool {
        if content == BOOM {
            self.panics.fetch_add(1, Ordering::Relaxed);
            panic!("a bug in judging {content:?}");
        }
        content.ends_with(b"\n")
    }
    fn new_name(&self, _dir: u64, _name: &[u8]) -> Result<NewName> {
        Ok(NewName::Scratch)
    }
    fn path(&self, ino: u64) -> String {
        if ino == FILE { "f".into() } else { String::new() }
    }
}

/// Run a core call the way the adapter runs a request: None if it panicked.
fn request<T>(op: &str, call: impl FnOnce() -> T) -> Option<T> {
    let mut out = None;
    worldfs::fuse::run_request(op, || out = Some(call()));
    out
}

#[test]
fn a_request_that_panics_holding_a_lock_leaves_later_requests_working() {
    let opts = Options { read_only: false, ..Options::default() };
    let tree = Arc::new(PanickyTree {
        content: parking_lot::Mutex::new(b"before\n".to_vec()),
        opts: opts.clone(),
        panics: AtomicUsize::new(0),
    });
    let fs = WorldFs::new(tree.clone(), Services::new(), opts);
    let wronly = libc::O_WRONLY | libc::O_TRUNC;

    let doomed = fs.open(FILE, wronly, 1).unwrap().fh;
    // The core holds its lock of open handles while the tree judges this.
    assert!(request("write", || fs.write(doomed, 0, BOOM)).is_none(), "the panic is caught");
    assert_eq!(tree.panics.load(Ordering::Relaxed), 1);

    // Every later request works: handles (the lock held during the panic),
    // lookups, listings, reads, writes and their commit.
    let fh = request("open", || fs.open(FILE, wronly, 2)).unwrap().unwrap().fh;
    assert_eq!(request("write", || fs.write(fh, 0, b"after\n")).unwrap().unwrap(), 6);
    request("flush", || fs.flush(fh, 2)).unwrap().unwrap();
    request("release", || fs.release(fh)).unwrap().unwrap();
    assert_eq!(*tree.content.lock(), b"after\n");
    assert_eq!(request("lookup", || fs.lookup(ROOT, OsStr::new("f"))).unwrap().unwrap().size, 6);
    let mut names = Vec::new();
    request("readdir", || {
        fs.readdir(ROOT, 0, false, &mut |e, _| {
            names.push(e.name.clone());
            false
        })
    })
    .unwrap()
    .unwrap();
    assert!(names.contains(&"f".into()), "{names:?}");
    let rfh = request("open", || fs.open(FILE, libc::O_RDONLY, 3)).unwrap().unwrap().fh;
    assert_eq!(request("read", || fs.read(rfh, 0, 100)).unwrap().unwrap(), b"after\n");
    request("release", || fs.release(rfh)).unwrap().unwrap();

    // The handle whose request panicked still closes.
    request("release", || fs.release(doomed)).unwrap().unwrap();
}

#[test]
fn a_panic_is_caught_and_reported_per_request() {
    assert!(!worldfs::fuse::run_request("lookup", || panic!("a bug")));
    let mut ran = false;
    assert!(worldfs::fuse::run_request("lookup", || ran = true));
    assert!(ran);
}
