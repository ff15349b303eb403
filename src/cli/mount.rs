//! `worldfs mount`: options, the daemon (fork, report the outcome of the
//! mount to the parent, serve until unmounted or signalled), and the checks
//! made before mounting.

use crate::fs::{Options, WorldFs};
use crate::open::open_path;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The world this process serves, for log lines.
pub(crate) static WORLD: OnceLock<String> = OnceLock::new();

pub(crate) struct MountOpts {
    fs: Options,
    /// Options the core does not know, for the kind of world.
    extra: Vec<(String, Option<String>)>,
    allow_other: bool,
    allow_root: bool,
    auto_unmount: bool,
    /// `-o threads=N`; else `DEFAULT_THREADS` (`LIVE_THREADS` when
    /// commits wait for a running server).
    threads: Option<usize>,
    /// Move each FUSE thread to its caller's CPU (`affinity`).
    cpu_follow: bool,
    /// Keep the serving CPUs awake while requests flow (`awake`).
    spin: bool,
    /// `-o colors=FILE` for pictures.
    colors: Option<PathBuf>,
}

pub(crate) fn parse_mount_options(list: &[String]) -> Result<MountOpts, String> {
    let mut m = MountOpts {
        fs: Options { read_only: false, ..Options::default() },
        extra: Vec::new(),
        allow_other: false,
        allow_root: false,
        auto_unmount: false,
        threads: None,
        cpu_follow: true,
        spin: true,
        colors: None,
    };
    for opt in list.iter().flat_map(|s| s.split(',')).filter(|s| !s.is_empty()) {
        let (k, v) = opt.split_once('=').map_or((opt, None), |(k, v)| (k, Some(v)));
        let num = |v: Option<&str>| -> Result<u64, String> {
            v.and_then(|v| v.parse().ok()).ok_or_else(|| format!("-o {k}= needs a whole number"))
        };
        match k {
            "ro" => m.fs.read_only = true,
            "rw" => m.fs.read_only = false,
            "allow_other" => m.allow_other = true,
            "allow_root" => m.allow_root = true,
            "auto_unmount" => m.auto_unmount = true,
            "nojournal" => m.fs.journal = false,
            "through_server" => m.fs.live_direct = false,
            "group_ms" => m.fs.group_commit = Duration::from_millis(num(v)?.min(60_000)),
            "ttl" => m.fs.ttl = Duration::from_secs(num(v)?),
            "entry_ttl" => m.fs.entry_ttl = Duration::from_secs(num(v)?),
            "cache_mb" => m.fs.cache_bytes = (num(v)? as usize).max(1) << 20,
            "threads" => m.threads = Some((num(v)? as usize).clamp(1, 64)),
            "nocpu_follow" => m.cpu_follow = false,
            "nospin" => m.spin = false,
            "guard_ms" => m.fs.guard_interval = Duration::from_millis(num(v)?),
            "index_dir" => {
                m.fs.index_dir =
                    Some(PathBuf::from(v.filter(|v| !v.is_empty()).ok_or("-o index_dir= needs a directory")?))
            }
            "snapshot_store" => {
                let dir = v.filter(|v| !v.is_empty()).ok_or("-o snapshot_store= needs a directory")?;
                // Absolute: the daemon's working directory is not the caller's.
                let dir = std::path::absolute(dir).map_err(|e| format!("-o snapshot_store={dir}: {e}"))?;
                m.fs.snapshot_store = Some(dir);
            }
            "plus_max" => m.fs.plus_max = num(v)?,
            "write_mb" => m.fs.write_buffers = (num(v)?.clamp(1, 1 << 20) as usize) << 20,
            "max_objects_per_block" => {
                let n = u16::try_from(num(v)?).map_err(|_| "-o max_objects_per_block= is at most 65535")?;
                m.fs.max_objects_per_block = Some(n)
            }
            "index_ttl" => m.fs.index_ttl = Duration::from_secs(num(v)?),
            "colors" => {
                let path = v.filter(|v| !v.is_empty()).ok_or("-o colors= needs a colors.txt file")?;
                m.colors = Some(PathBuf::from(path));
            }
            _ => m.extra.push((k.to_string(), v.map(str::to_string))),
        }
    }
    Ok(m)
}

/// The FUSE threads of a mount: one a CPU, four at most.
/// The FUSE threads of a mount whose commits wait for a running server
/// (`live`): a thread a writer waiting for the server's next step, so that
/// the changes of that many files and processes are applied in one step
/// (each thread mostly sleeps).
const LIVE_THREADS: usize = 32;

/// The FUSE threads `m` asks for, for the mount `fs`.
fn threads_for(m: &MountOpts, fs: &WorldFs) -> usize {
    m.threads
        .unwrap_or_else(|| if fs.commits_wait_for_server() { LIVE_THREADS } else { crate::fuse::default_threads() })
}

fn fuser_config(m: &MountOpts, threads: usize) -> fuser::Config {
    let mut c = fuser::Config::default();
    c.mount_options = crate::fuse::mount_options("worldfs", m.fs.read_only);
    if m.auto_unmount {
        c.mount_options.push(fuser::MountOption::AutoUnmount);
    }
    c.acl = if m.allow_other {
        fuser::SessionACL::All
    } else if m.allow_root || m.auto_unmount {
        fuser::SessionACL::RootAndOwner
    } else {
        fuser::SessionACL::Owner
    };
    c.n_threads = Some(threads);
    c
}

/// The signal the session thread sends the waiting main thread when the
/// session ended (a real-time one: nothing else sends it).
fn end_signal() -> libc::c_int {
    libc::SIGRTMIN() + 1
}

/// Block SIGINT/SIGTERM/SIGHUP and `end_signal` in every thread, to be
/// waited for in the main one.
fn block_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is valid storage that sigemptyset then
    // initialises; every pointer is to that local set, or null where the
    // old mask is not wanted.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigaddset(&mut set, end_signal());
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Wait for the session thread of a mount that is already gone. Not
/// `BackgroundSession::join`: that drops fuser's mount handle, whose
/// check for "still mounted" (fuser 0.18) takes the dead connection's
/// POLLERR for yes and unmounts the mountpoint's path, which by then may
/// hold a new mount of the same world (`umount; mount` in a script or a
/// service restart): the new mount would vanish. The handle is left to
/// the process's exit, which follows.
fn join_without_unmount(bg: fuser::BackgroundSession) -> Result<(), String> {
    let bg = std::mem::ManuallyDrop::new(bg);
    // SAFETY: `guard` is read out once and `bg` is never dropped, so it is
    // not dropped twice.
    let guard = unsafe { std::ptr::read(&bg.guard) };
    match guard.join() {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("the filesystem thread panicked".into()),
    }
}

/// Mount and serve until unmounted or signalled. `ready` is told the
/// outcome of the mount itself.
fn serve(
    world: &Path,
    kind: Option<&str>,
    mountpoint: &Path,
    m: &MountOpts,
    ready: &mut dyn FnMut(Result<(), String>),
) -> Result<(), String> {
    let signals = block_signals();
    let fs = match open_path(world, kind, m.extra.clone(), m.fs.clone()) {
        Ok(fs) => Arc::new(fs),
        Err(e) => {
            ready(Err(e.clone()));
            return Err(e);
        }
    };
    // The main thread learns of the session's end at once, not at its next
    // look (up to 200 ms later: a script's `umount; mount` waited for it).
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // SAFETY: pthread_self has no preconditions.
    let main_thread = unsafe { libc::pthread_self() };
    let adapter = crate::fuse::FuseAdapter::new(fs.clone(), m.cpu_follow, m.spin).on_end({
        let ended = ended.clone();
        move || {
            ended.store(true, std::sync::atomic::Ordering::SeqCst);
            // SAFETY: the main thread waits in this function until the
            // session thread (which calls this) has ended, so it is alive;
            // the signal is blocked there and taken by sigtimedwait.
            unsafe { libc::pthread_kill(main_thread, end_signal()) };
        }
    });
    let session = match fuser::Session::new(adapter, mountpoint, &fuser_config(m, threads_for(m, &fs))) {
        Ok(s) => s,
        Err(e) => {
            let e = format!("cannot mount on {}: {e}", mountpoint.display());
            ready(Err(e.clone()));
            return Err(e);
        }
    };
    if let Err(e) = crate::fuse::start_invalidator(&fs, session.notifier()) {
        let e = format!("cannot start the threads that tell the kernel of changes: {e}");
        ready(Err(e.clone()));
        return Err(e);
    }
    let bg = session.spawn().map_err(|e| e.to_string())?;
    log::info!("mounted {} on {} ({})", world.display(), mountpoint.display(), fs.describe());
    ready(Ok(()));
    let mut signalled = false;
    loop {
        if bg.guard.is_finished() || ended.load(std::sync::atomic::Ordering::SeqCst) {
            // Unmounted (from outside, or detached after a signal and the
            // last open file closed).
            worldfs_store::holders::mark_exiting();
            let r = join_without_unmount(bg);
            if !finish(&fs) {
                return r.and(Err("changes could not be written at unmount (see above)".into()));
            }
            return r;
        }
        let timeout = libc::timespec { tv_sec: 0, tv_nsec: 200_000_000 };
        // SAFETY: both pointers are to locals that outlive the call (no
        // siginfo wanted).
        let sig = unsafe { libc::sigtimedwait(&signals, std::ptr::null_mut(), &timeout) };
        if sig <= 0 || sig == end_signal() {
            continue;
        }
        if signalled {
            log::warn!(
                "signal {sig} again: stopping now; files still open on {} lose their connection",
                mountpoint.display()
            );
            worldfs_store::holders::mark_exiting();
            if !finish(&fs) {
                return Err("changes could not be written at unmount (see above)".into());
            }
            return Ok(());
        }
        signalled = true;
        log::info!("signal {sig}: unmounting {}", mountpoint.display());
        match detach(mountpoint, false) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                log::warn!(
                    "{}: files are still open there; detaching the mount now, and worldfs exits when the last \
                     one is closed (what they hold is committed then); a second signal stops at once",
                    mountpoint.display()
                );
                if let Err(e) = detach(mountpoint, true) {
                    log::error!("cannot detach {}: {e}", mountpoint.display());
                }
            }
            Err(e) => log::error!("cannot unmount {}: {e}", mountpoint.display()),
        }
    }
}

/// Refuse a mountpoint from which the daemon would reach its own mount when
/// it opens the world's files: every access would wait for itself.
fn check_mountpoint(world: &Path, mountpoint: &Path) -> Result<(), String> {
    if !world.is_dir() {
        // A file kind: it and its temporary files live in its directory.
        let dir = world.parent().unwrap_or(Path::new("/"));
        if dir.starts_with(mountpoint) {
            return Err(format!(
                "{}: the mountpoint holds {}; worldfs writes it back through that path and would wait \
                 on its own mount; mount somewhere else",
                mountpoint.display(),
                world.display()
            ));
        }
        return Ok(());
    }
    if world.starts_with(mountpoint) {
        let how = if world == mountpoint { "is the world directory itself" } else { "contains the world" };
        return Err(format!(
            "{}: the mountpoint {how}; worldfs reads the world's files through that path and would wait \
             on its own mount; mount somewhere else",
            mountpoint.display()
        ));
    }
    if mountpoint.starts_with(world) {
        return Err(format!(
            "{}: the mountpoint is inside the world directory {}; worldfs lists and reads the world's \
             own files there and would reach its own mount; mount somewhere else",
            mountpoint.display(),
            world.display()
        ));
    }
    Ok(())
}

/// The terminal `worldfs mount` was started from, kept by the daemon (a
/// descriptor, -1 if none) to say there that changes were not written.
static TERMINAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Keep a descriptor of the terminal on stderr, if stderr is one (never a
/// pipe: its reader would wait for the daemon to exit).
fn keep_terminal() {
    // SAFETY: plain descriptor calls on our own stderr.
    unsafe {
        if libc::isatty(2) == 1 {
            let fd = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3);
            TERMINAL.store(fd, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// After the session: commit what open files still hold, and say so.
/// Returns false if something was not written; that is said loudly, in
/// the log, the system log and the terminal the mount was started from.
fn finish(fs: &WorldFs) -> bool {
    let mut ok = true;
    for line in fs.shutdown() {
        let failed = line.starts_with("NOT WRITTEN") || line.starts_with("LOST") || line.contains("refused at unmount");
        if !failed {
            log::warn!("{line}");
            continue;
        }
        ok = false;
        log::error!("{line}");
        to_system_log(&line);
        let fd = TERMINAL.load(std::sync::atomic::Ordering::SeqCst);
        if fd >= 0 {
            let text = format!("worldfs: {}: {line}\n", WORLD.get().map_or("", String::as_str));
            // SAFETY: writing a buffer we own to a descriptor we keep.
            unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
        }
    }
    ok
}

/// An error line in the system log (syslog, as the daemon's facility).
fn to_system_log(line: &str) {
    let Ok(msg) = std::ffi::CString::new(line.replace('\0', " ")) else { return };
    // SAFETY: NUL-terminated strings that outlive the calls.
    unsafe {
        libc::openlog(c"worldfs".as_ptr(), libc::LOG_PID, libc::LOG_DAEMON);
        libc::syslog(libc::LOG_ERR, c"%s".as_ptr(), msg.as_ptr());
    }
}

/// Unmount `mnt`; `lazy`: detach it now even if files are open there.
fn detach(mnt: &Path, lazy: bool) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let c = std::ffi::CString::new(mnt.as_os_str().as_bytes())?;
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let r = unsafe { libc::umount2(c.as_ptr(), if lazy { libc::MNT_DETACH } else { 0 }) };
        return if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) };
    }
    let out = std::process::Command::new("fusermount3").arg(if lazy { "-uz" } else { "-u" }).arg(mnt).output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.success() {
        true => Ok(()),
        false if err.contains("busy") => Err(std::io::Error::from_raw_os_error(libc::EBUSY)),
        false => Err(std::io::Error::other(err.trim().to_string())),
    }
}

/// The daemon's log (`--log FILE`), appended to.
fn open_log(path: &Path) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn mount(
    world: PathBuf,
    kind: Option<String>,
    mountpoint: PathBuf,
    options: Vec<String>,
    foreground: bool,
    log: Option<PathBuf>,
    force: bool,
) -> Result<(), String> {
    let mut m = parse_mount_options(&options)?;
    m.fs.force = force;
    // One malloc arena for the daemon: with one per FUSE thread, blocks
    // evicted from the cache leave holes in each, and the daemon peaked at
    // 203 MB instead of 153 MB for the same walk (docs/performance.md).
    // SAFETY: a glibc tunable set before any thread starts.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let world = std::fs::canonicalize(&world).map_err(|e| format!("{}: {e}", world.display()))?;
    let _ = WORLD.set(world.display().to_string());
    let mountpoint = std::fs::canonicalize(&mountpoint).map_err(|e| format!("{}: {e}", mountpoint.display()))?;
    check_mountpoint(&world, &mountpoint)?;
    if world.is_dir() {
        let (colors, from) = crate::view::picture::choose(&world, m.colors.as_deref())?;
        log::info!("picture colours from {from}");
        crate::view::picture::set_colors(colors)?;
    } else if m.colors.is_some() {
        return Err("-o colors= is for Luanti worlds (their top.png and map/)".into());
    }
    // The world is opened once, by `serve`: in the background, in the
    // child, whose error reaches the terminal through the pipe below (a
    // database connection or a thread must not cross the fork).
    if foreground {
        return serve(&world, kind.as_deref(), &mountpoint, &m, &mut |_| {});
    }
    let log_file = log.as_deref().map(open_log).transpose()?;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err("pipe failed".into());
    }
    // SAFETY: pipe succeeded, so both are open descriptors that nothing
    // else owns.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: no thread has been started yet (the world is opened by
    // `serve`, in the child), so the child is a whole copy of this
    // single-threaded process and may do anything after fork.
    match unsafe { libc::fork() } {
        -1 => Err("fork failed".into()),
        0 => {
            drop(rd);
            keep_terminal();
            // SAFETY: plain system calls on descriptors this process owns
            // (a failed open of /dev/null gives -1, which dup2 refuses).
            unsafe {
                libc::setsid();
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                libc::dup2(null, 0);
                libc::dup2(null, 1);
                match &log_file {
                    Some(f) => libc::dup2(std::os::fd::AsRawFd::as_raw_fd(f), 2),
                    None => libc::dup2(null, 2),
                };
            }
            let _ = std::env::set_current_dir("/");
            let mut pipe = Some(std::fs::File::from(wr));
            let r = serve(&world, kind.as_deref(), &mountpoint, &m, &mut |r| {
                let msg = match r {
                    Ok(()) => "ok\n".to_string(),
                    Err(e) => format!("{e}\n"),
                };
                // Closing the pipe lets the parent return.
                if let Some(mut p) = pipe.take() {
                    let _ = p.write_all(msg.as_bytes());
                }
            });
            if let Err(e) = &r {
                log::error!("{e}");
            }
            std::process::exit(if r.is_ok() { 0 } else { 1 });
        }
        _ => {
            drop(wr);
            mounted_or_why(rd)
        }
    }
}

/// What the child in the background says through the pipe `rd`: it
/// mounted, or why not.
fn mounted_or_why(rd: OwnedFd) -> Result<(), String> {
    let mut msg = String::new();
    let _ = std::fs::File::from(rd).read_to_string(&mut msg);
    match msg.trim_end() {
        "ok" => Ok(()),
        "" => Err("the mount process exited before mounting".into()),
        e => Err(e.to_string()),
    }
}
