//! What both LevelDB stores share (Luanti's `map.db` in `crate::leveldb`,
//! a Bedrock world's `db/` in `bedrock.rs`): the database on a thread of
//! its own (the crate's database is single-threaded, `Rc` inside), to
//! which the store sends jobs, and the `fcntl` lock a writable open takes.

use super::lock;
use crate::{Result, StoreError};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

type Job<E> = Box<dyn FnOnce(&mut E) + Send>;

/// The thread that owns a database's engine `E`, and the way to it. Dropped,
/// it lets the thread end (closing the database) and waits for it.
pub(crate) struct Worker<E> {
    dir: PathBuf,
    jobs: Mutex<Option<mpsc::Sender<Job<E>>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<E: 'static> Worker<E> {
    /// Starts thread `name`, on which `open` makes the engine (its Err,
    /// why the database at `dir` cannot be opened, is returned here), jobs
    /// run one at a time, and `end` runs once no job can come any more.
    pub(crate) fn start(
        dir: &Path,
        name: &str,
        open: impl FnOnce() -> std::result::Result<E, String> + Send + 'static,
        end: impl FnOnce(&mut E) + Send + 'static,
    ) -> std::result::Result<Worker<E>, String> {
        let (jobs, rx) = mpsc::channel::<Job<E>>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut engine = match open() {
                    Ok(engine) => engine,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                for job in rx {
                    // A panic in one request must not take the database
                    // with it; the request sees its reply channel closed.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut engine)));
                }
                end(&mut engine);
            })
            .map_err(|e| format!("cannot start the LevelDB thread: {e}"))?;
        ready_rx.recv().map_err(|_| format!("{}: the LevelDB thread ended", dir.display()))??;
        Ok(Worker { dir: dir.to_path_buf(), jobs: Mutex::new(Some(jobs)), thread: Some(thread) })
    }

    /// Run `f` on the database thread and wait for its answer.
    pub(crate) fn call<T: Send + 'static>(&self, f: impl FnOnce(&mut E) -> T + Send + 'static) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job<E> = Box::new(move |e| {
            let _ = tx.send(f(e));
        });
        let sent = self.jobs.lock().as_ref().map(|j| j.send(job).is_ok()).unwrap_or(false);
        if !sent {
            return Err(backend(format!("{}: the database thread has ended", self.dir.display())));
        }
        rx.recv().map_err(|_| backend(format!("{}: internal error while handling this request", self.dir.display())))
    }
}

impl<E> Drop for Worker<E> {
    fn drop(&mut self) {
        self.jobs.lock().take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("leveldb: {e}"))
}

/// LevelDB's lock of `dir` (`dir/LOCK`), or why it cannot be had: who
/// holds it, "most likely" `holder`, and `advice`.
pub(crate) fn take_lock(dir: &Path, holder: &str, advice: &str) -> std::result::Result<std::fs::File, String> {
    let lock_file = dir.join("LOCK");
    match lock::take_after_exiting_daemons(&lock_file) {
        Ok(f) => Ok(f),
        Err(e) if is_held(&e) => {
            let who = lock_holder(&lock_file);
            Err(format!(
                "{} is locked by {who}, most likely {holder}; LevelDB admits one process at a time: {advice}",
                dir.display()
            ))
        }
        Err(e) => Err(format!("{}: cannot lock: {e}", lock_file.display())),
    }
}

/// Whether taking a lock failed because another process holds it.
pub(crate) fn is_held(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES))
}

/// Who holds LevelDB's `LOCK` file, in words.
pub(crate) fn lock_holder(lock_file: &Path) -> String {
    let mut who = lock::holder(lock_file).ok().flatten().unwrap_or_else(|| "another process".into());
    // An open-file-description lock names no process: say who has the
    // file open.
    let openers = if who == "another process" { crate::holders::openers(lock_file) } else { Vec::new() };
    if !openers.is_empty() {
        who = format!("{who} (the file is open in {})", openers.join(", "));
    }
    who
}
