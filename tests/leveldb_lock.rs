//! The LevelDB map's lock against a holder that is there only a moment:
//! a child forked while this process held the lock. A test binary of its
//! own (Cargo.toml), since the fork copies every descriptor of the process,
//! the locks of tests running beside it included.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use worldfs_store::leveldb::lock::{take, take_after_exiting_daemons};

/// A child forked while this process held the lock keeps it until it
/// runs its own program or exits (here: 400 ms); the lock is taken
/// once it is gone, not refused as a server's. CI saw this when
/// another test thread started a program just as a test released the
/// lock.
#[test]
fn a_lock_kept_a_moment_by_a_forked_child_is_taken_after_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("LOCK");
    let held = take(&p).unwrap();
    // SAFETY: the child only sleeps and leaves with _exit.
    let child = unsafe { libc::fork() };
    assert!(child >= 0);
    if child == 0 {
        // SAFETY: as above.
        unsafe {
            libc::usleep(400_000);
            libc::_exit(0);
        }
    }
    drop(held);
    let taken = take_after_exiting_daemons(&p);
    // The child is not reaped yet: once it exited it is a zombie ('Z').
    let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().map(str::trim_start).and_then(|s| s.chars().next());
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    assert!(taken.is_ok(), "refused: {:?}", taken.err());
    assert_eq!(state, Some('Z'), "the lock was taken while the child still held it: {stat}");
}
