//! Which processes hold a file open for writing, from /proc: the running
//! server that has a map database open, or a worldfs daemon still closing
//! one after its unmount. Knows nothing of worlds or stores, so that the
//! stores (a LevelDB lock) and the kinds of world (the write guard) both
//! ask it.

use std::path::Path;
use std::time::{Duration, Instant};

/// Processes other than this one that have `path` open for writing, described as
/// "pid 123 (minetestserver --world ...)". Only processes whose /proc
/// entries we may read are seen (all of them when running as root).
pub fn openers(path: &Path) -> Vec<String> {
    // A process that forks holds every descriptor it has until its child
    // execs (a test harness starting a program, a shell): a child seen
    // once may be gone a moment later. Only what is still open on a second
    // look counts.
    // Compared by pid: a process may exec meanwhile (a shell becoming
    // the program it runs keeps its descriptors but not its command line).
    let first = scan_openers(path);
    if first.is_empty() {
        return Vec::new();
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    still_open(&first, scan_openers(path))
}

/// How long a one-time check (a writable mount, undo, import) waits for a
/// worldfs daemon whose mount is gone to close the map: after `umount` the
/// mount is gone at once, but its daemon still writes what it held and
/// closes the map a moment later, so `umount; mount` would be refused.
/// Generous: on a loaded machine writing what it held can take seconds,
/// and an exiting daemon always ends.
const DAEMON_EXIT_WAIT: Duration = Duration::from_secs(30);
/// How long a worldfs daemon not (yet) marked as exiting is waited for: it
/// polls for the unmount every 200 ms, but on a loaded machine (CI saw it)
/// it can be scheduled much later. A daemon whose mount is alive is thus
/// refused after this wait, not at once.
const DAEMON_NOTICE_WAIT: Duration = Duration::from_secs(4);

/// The name a worldfs daemon gives itself once its mount is gone
/// (`/proc/PID/comm`, at most 15 bytes).
pub const EXITING_NAME: &str = "worldfs-exiting";

/// Called by a daemon whose mount is gone, before it writes what it still
/// holds: a later `mount`, `undo` or `import` then waits for it to exit
/// instead of refusing.
pub fn mark_exiting() {
    const NAME: &std::ffi::CStr = c"worldfs-exiting";
    const { assert!(NAME.count_bytes() == EXITING_NAME.len()) };
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, NAME.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// `openers`, for a one-time check before writing: worldfs daemons among
/// them that are exiting (their mount unmounted) are waited for; any
/// other holder is returned at once.
pub fn openers_after_daemons_exit(path: &Path) -> Vec<String> {
    let start = Instant::now();
    let mut said = false;
    loop {
        let who = openers(path);
        let waits: Vec<Duration> = who.iter().map(|w| daemon_wait(w)).collect();
        if who.is_empty() || waits.iter().any(|w| start.elapsed() >= *w) {
            return who;
        }
        if !said {
            log::info!("waiting for {} to close {} (an unmount finishing)", who.join(", "), path.display());
            said = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How long a holder as `openers` describes it ("pid N (cmd …)") may be
/// waited for: zero unless it is a worldfs daemon.
fn daemon_wait(who: &str) -> Duration {
    let pid = who.strip_prefix("pid ").and_then(|r| r.split(' ').next()).unwrap_or("");
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    match comm.trim_end() {
        EXITING_NAME => DAEMON_EXIT_WAIT,
        "worldfs" => DAEMON_NOTICE_WAIT,
        _ => Duration::ZERO,
    }
}

/// The openers of a second look that were there at the first, by pid,
/// described as they are now.
fn still_open(first: &[(String, String)], second: Vec<(String, String)>) -> Vec<String> {
    second.into_iter().filter(|(pid, _)| first.iter().any(|(p, _)| p == pid)).map(|(_, who)| who).collect()
}

/// (pid, description) of the processes that have `path` open now.
fn scan_openers(path: &Path) -> Vec<(String, String)> {
    let Ok(target) = std::fs::canonicalize(path) else {
        return Vec::new();
    };
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|c| c.is_ascii_digit()) || pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let writable = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|l| l == target) && !opened_read_only(&p.path(), &fd.file_name())
        });
        if writable {
            let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cmd: Vec<String> = cmd
                .split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect();
            let who = format!("pid {pid} ({})", cmd.join(" "));
            found.push((pid, who));
        }
    }
    found
}

/// Whether descriptor `fd` of the process at `proc_dir` was opened
/// read-only (`flags:` in its fdinfo, octal). Such a holder (a read-only
/// mount, a map viewer) cannot overwrite anything. Unknown counts as
/// writable: a holder missed is worse than one named needlessly.
fn opened_read_only(proc_dir: &Path, fd: &std::ffi::OsStr) -> bool {
    let Ok(info) = std::fs::read_to_string(proc_dir.join("fdinfo").join(fd)) else {
        return false;
    };
    fdinfo_read_only(&info)
}

fn fdinfo_read_only(info: &str) -> bool {
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| i64::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & i64::from(libc::O_ACCMODE) == i64::from(libc::O_RDONLY))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A holder that execs between the two looks (a shell becoming the
    /// program it runs) is still a holder; one gone at the second is not.
    #[test]
    fn holders_are_matched_by_pid() {
        let o = |pid: &str, cmd: &str| (pid.to_string(), format!("pid {pid} ({cmd})"));
        let first = [o("10", "bash -c exec 3<map.sqlite; sleep 30"), o("11", "cp map.sqlite x")];
        let second = vec![o("10", "sleep 30"), o("12", "new")];
        assert_eq!(still_open(&first, second), ["pid 10 (sleep 30)"]);
    }

    #[test]
    fn fdinfo_flags_tell_read_only_descriptors() {
        assert!(fdinfo_read_only("pos:\t0\nflags:\t0100000\nmnt_id:\t29\n"));
        assert!(!fdinfo_read_only("pos:\t0\nflags:\t0100002\nmnt_id:\t29\n"), "O_RDWR");
        assert!(!fdinfo_read_only("pos:\t0\nflags:\t02100001\n"), "O_WRONLY");
        assert!(!fdinfo_read_only("garbage"), "unknown counts as writable");
    }

    /// A process that has the map open read-only (a read-only mount, a
    /// map viewer) overwrites nothing and is not a holder.
    #[test]
    fn read_only_openers_are_not_holders() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("map.sqlite");
        std::fs::write(&f, b"x").unwrap();
        let mut child =
            std::process::Command::new("sleep").arg("31").stdin(std::fs::File::open(&f).unwrap()).spawn().unwrap();
        // Wait until it has exec'd, then look twice more.
        let start = Instant::now();
        while !std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap_or_default().starts_with(b"sleep")
            && start.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let seen = openers(&f);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(seen.is_empty(), "{seen:?}");
    }

    #[test]
    fn sees_another_process_holding_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("map.sqlite");
        std::fs::write(&f, b"x").unwrap();
        assert!(openers(&f).is_empty());
        let rw = std::fs::OpenOptions::new().read(true).write(true).open(&f).unwrap();
        let mut child = std::process::Command::new("sleep").arg("30").stdin(rw).spawn().unwrap();
        let start = Instant::now();
        let mut seen: Vec<String> = Vec::new();
        // Between fork and exec the child still shows our own command line.
        while !seen.iter().any(|s| s.contains("sleep 30")) && start.elapsed() < Duration::from_secs(5) {
            seen = openers(&f);
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains("sleep 30"), "{seen:?}");
    }
}
