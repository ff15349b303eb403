//! The `LOCK` file of a LevelDB directory. The engine's C++ LevelDB holds
//! a POSIX `fcntl` write lock on it while the database is open; the Rust
//! crate's own lock is `flock`, which Linux keeps apart from `fcntl`, so
//! the two would not see each other. worldfs therefore takes (or tests) an
//! `fcntl` lock itself. It uses an open-file-description lock: it conflicts
//! with the server's classic lock, and closing another descriptor of the
//! file in this process (the crate opens it too) does not drop it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

fn flock(kind: libc::c_short) -> libc::flock {
    // SAFETY: flock is a plain C struct; all-zero is a valid value.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l
}

/// Who holds a conflicting lock on `path`, as "pid N (command line)", or
/// "another process" when the lock is of a kind that names no process.
/// None when the file is free (or missing).
pub fn holder(path: &Path) -> std::io::Result<Option<String>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut l = flock(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid descriptor and a valid flock struct.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut l) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if l.l_type == libc::F_UNLCK as libc::c_short {
        return Ok(None);
    }
    if l.l_pid <= 0 {
        return Ok(Some("another process".into()));
    }
    let cmd = std::fs::read(format!("/proc/{}/cmdline", l.l_pid)).unwrap_or_default();
    let cmd: Vec<String> =
        cmd.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect();
    Ok(Some(format!("pid {} ({})", l.l_pid, cmd.join(" "))))
}

/// Take the write lock on `path` (created when missing) without waiting.
/// The lock lasts as long as the returned file is open.
pub fn take(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
    let l = flock(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid descriptor and a valid flock struct.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &l) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// `take`, but when the lock is held by a worldfs daemon whose mount is
/// gone (`umount; mount` at once), wait for it to exit as the map's other
/// holder checks do (src/worlds/luanti/guard.rs), then take it. Anyone else (a
/// running server) gets the lock error at once. The LOCK's holder is found
/// by who has the file open: worldfs's own lock is an open-file-description
/// lock, whose owner neither F_GETLK nor /proc/locks names (pid -1).
pub fn take_after_exiting_daemons(path: &Path) -> std::io::Result<File> {
    let start = std::time::Instant::now();
    loop {
        match take(path) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) => {
                let who = crate::holders::openers_after_daemons_exit(path);
                // A holder can be fleeting: a process forked by a program
                // that had the file open holds it until it runs a program of
                // its own (on a loaded machine longer than the two looks of
                // `openers`); and one that closed the file between two looks
                // is gone. A server holds it on: refused after a second.
                let limit = if who.is_empty() { VANISHED_HOLDER_WAIT } else { FLEETING_HOLDER_WAIT };
                if start.elapsed() >= limit {
                    return if who.is_empty() { take(path) } else { Err(e) };
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            taken => return taken,
        }
    }
}

/// How long a lock whose holder cannot be seen is tried again.
const VANISHED_HOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
/// How long a holder that is not a worldfs daemon is given to go.
const FLEETING_HOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_lock_is_seen_by_other_processes_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("LOCK");
        assert_eq!(holder(&p).unwrap(), None);
        let held = take(&p).unwrap();
        // A second open file description conflicts, as the server's would.
        assert!(take(&p).is_err());
        assert_eq!(holder(&p).unwrap().as_deref(), Some("another process"));
        drop(held);
        assert!(take(&p).is_ok());
    }
}
