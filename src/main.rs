use clap::{Parser, Subcommand};
use std::io::{IsTerminal, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use worldfs::fs::{Options, WorldFs};

#[derive(Parser)]
#[command(name = "worldfs", version, about = "Mount a Luanti (Minetest) world as files: every mapblock a directory")]
struct Cli {
    /// More log output (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Mount WORLD (a world directory) on MOUNTPOINT.
    ///
    /// Unmount with `fusermount3 -u MOUNTPOINT` or `umount MOUNTPOINT`, or
    /// stop a foreground mount with Ctrl-C.
    Mount {
        world: PathBuf,
        mountpoint: PathBuf,
        /// Comma-separated options: ro, rw, allow_other, allow_root,
        /// auto_unmount, ttl=SECONDS, entry_ttl=SECONDS, cache_mb=MIB, threads=N,
        /// nocpu_follow, nospin, nojournal (no
        /// undo journal), group_ms=N (write changes in groups, at most N ms
        /// after their close; fsync still waits for the write), guard_ms=N
        /// (look for a server holding the map at most N ms before a write;
        /// default 500).
        #[arg(short = 'o', value_name = "OPTIONS")]
        options: Vec<String>,
        /// Stay in the foreground (do not daemonize).
        #[arg(short = 'f', long)]
        foreground: bool,
        /// Write the log to FILE (a daemon otherwise has no log).
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Mount writable even while another process (a running server) has
        /// the map database open, and keep writing if one opens it later.
        #[arg(long)]
        force: bool,
    },
    /// Decode every block of WORLD and print a summary; exit status 1 if any
    /// block is corrupt.
    Check { world: PathBuf },
    /// Write a small demo world (a house with a chest, a sign and a furnace)
    /// into DIR.
    Demo { dir: PathBuf },
    /// List the changes in WORLD's undo journal, or revert some of them.
    ///
    /// Without --last, --since or --id: list the newest changes. A revert is
    /// itself a change in the journal, so it can be reverted with --id.
    /// TIME is 2026-11-22, '2026-11-22 10:30' (UTC), @UNIXSECONDS, or an
    /// age: 90s, 15m, 2h, 3d.
    Undo {
        world: PathBuf,
        /// Revert the newest N changes that are not reverted yet.
        #[arg(long, value_name = "N", conflicts_with_all = ["since", "id"])]
        last: Option<usize>,
        /// Put every block changed since TIME back as it was then.
        #[arg(long, value_name = "TIME", conflicts_with = "id")]
        since: Option<String>,
        /// Revert the change numbered K (as listed).
        #[arg(long, value_name = "K")]
        id: Option<i64>,
        /// Only show what would be reverted.
        #[arg(long)]
        dry_run: bool,
        /// Revert even blocks changed since outside the journal, or while
        /// another process has the map open.
        #[arg(long)]
        force: bool,
        /// List every change, not only the newest 20.
        #[arg(long)]
        all: bool,
    },
    /// Write the box of nodes between two corners of WORLD to OUT: a
    /// schematic (.mts, as minetest.create_schematic makes) or a WorldEdit
    /// file (.we, with node metadata). Corners are X,Y,Z node positions.
    Export {
        world: PathBuf,
        #[arg(allow_hyphen_values = true)]
        from: String,
        #[arg(allow_hyphen_values = true)]
        to: String,
        out: PathBuf,
        /// .mts: store air as "never placed" (probability 0), as decorations are made.
        #[arg(long)]
        sparse: bool,
    },
    /// Place FILE (.mts or .we) into WORLD with its low corner at X,Y,Z, in
    /// one transaction that `worldfs undo` can take back. Refused while a
    /// server has the map open.
    Import {
        world: PathBuf,
        file: PathBuf,
        #[arg(allow_hyphen_values = true)]
        at: String,
        /// Turn a schematic 0, 90, 180 or 270 degrees (as place_schematic).
        #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
        rotate: i64,
        /// Replace what is in the world (otherwise a schematic node that is
        /// not force-placed only replaces air).
        #[arg(long)]
        force: bool,
        /// `<node name> <paramtype2>` lines (see docs/layout.md) to turn
        /// param2 with --rotate.
        #[arg(long, value_name = "FILE")]
        nodedefs: Option<PathBuf>,
    },
    /// Maintain WORLD's undo journal.
    Journal {
        #[command(subcommand)]
        action: JournalAction,
    },
}

#[derive(Subcommand)]
enum JournalAction {
    /// Drop the oldest changes (they can no longer be undone) and compact.
    Prune {
        world: PathBuf,
        /// Drop changes older than TIME (see `undo --help`).
        #[arg(long, value_name = "TIME")]
        before: Option<String>,
        /// Keep only the newest changes that fit in MIB mebibytes.
        #[arg(long, value_name = "MIB")]
        max_mb: Option<u64>,
    },
}

struct MountOpts {
    fs: Options,
    allow_other: bool,
    allow_root: bool,
    auto_unmount: bool,
    threads: usize,
    /// Move each FUSE thread to its caller's CPU (`affinity`).
    cpu_follow: bool,
    /// Keep the serving CPUs awake while requests flow (`awake`).
    spin: bool,
}

fn parse_mount_options(list: &[String]) -> Result<MountOpts, String> {
    let mut m = MountOpts {
        fs: Options { read_only: false, ..Options::default() },
        allow_other: false,
        allow_root: false,
        auto_unmount: false,
        threads: std::thread::available_parallelism().map(|n| n.get().min(4)).unwrap_or(2),
        cpu_follow: true,
        spin: true,
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
            "group_ms" => m.fs.group_commit = Duration::from_millis(num(v)?.min(60_000)),
            "ttl" => m.fs.ttl = Duration::from_secs(num(v)?),
            "entry_ttl" => m.fs.entry_ttl = Duration::from_secs(num(v)?),
            "cache_mb" => m.fs.cache_bytes = (num(v)? as usize).max(1) << 20,
            "threads" => m.threads = (num(v)? as usize).clamp(1, 64),
            "nocpu_follow" => m.cpu_follow = false,
            "nospin" => m.spin = false,
            "guard_ms" => m.fs.guard_interval = Duration::from_millis(num(v)?),
            _ => return Err(format!("unknown mount option '{opt}'")),
        }
    }
    Ok(m)
}

fn fuser_config(m: &MountOpts) -> fuser::Config {
    use fuser::MountOption as O;
    let mut c = fuser::Config::default();
    c.mount_options = vec![
        O::FSName("worldfs".into()),
        O::Subtype("worldfs".into()),
        O::DefaultPermissions,
        O::NoAtime,
        O::NoDev,
        O::NoSuid,
        if m.fs.read_only { O::RO } else { O::RW },
    ];
    if m.auto_unmount {
        c.mount_options.push(O::AutoUnmount);
    }
    c.acl = if m.allow_other {
        fuser::SessionACL::All
    } else if m.allow_root || m.auto_unmount {
        fuser::SessionACL::RootAndOwner
    } else {
        fuser::SessionACL::Owner
    };
    c.n_threads = Some(m.threads);
    c
}

/// Block SIGINT/SIGTERM in every thread, to be waited for in the main one.
fn block_signals() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Mount and serve until unmounted or signalled. `ready` is told the
/// outcome of the mount itself.
fn serve(
    world: &Path,
    mountpoint: &Path,
    m: &MountOpts,
    ready: &mut dyn FnMut(Result<(), String>),
) -> Result<(), String> {
    let signals = block_signals();
    let fs = match WorldFs::open_world(world, m.fs.clone()) {
        Ok(fs) => Arc::new(fs),
        Err(e) => {
            ready(Err(e.clone()));
            return Err(e);
        }
    };
    let adapter = worldfs::fuse::FuseAdapter::new(fs.clone(), m.cpu_follow, m.spin);
    let session = match fuser::Session::new(adapter, mountpoint, &fuser_config(m)) {
        Ok(s) => s,
        Err(e) => {
            let e = format!("cannot mount on {}: {e}", mountpoint.display());
            ready(Err(e.clone()));
            return Err(e);
        }
    };
    worldfs::fuse::start_invalidator(&fs, session.notifier());
    let bg = session.spawn().map_err(|e| e.to_string())?;
    log::info!("mounted {} on {} ({})", world.display(), mountpoint.display(), fs.describe());
    ready(Ok(()));
    let mut signalled = false;
    loop {
        if bg.guard.is_finished() {
            // Unmounted (from outside, or detached after a signal and the
            // last open file closed).
            let r = bg.join().map_err(|e| e.to_string());
            finish(&fs);
            return r;
        }
        let timeout = libc::timespec { tv_sec: 0, tv_nsec: 200_000_000 };
        let sig = unsafe { libc::sigtimedwait(&signals, std::ptr::null_mut(), &timeout) };
        if sig <= 0 {
            continue;
        }
        if signalled {
            log::warn!(
                "signal {sig} again: stopping now; files still open on {} lose their connection",
                mountpoint.display()
            );
            finish(&fs);
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

/// After the session: commit what open files still hold, and say so.
fn finish(fs: &WorldFs) {
    for line in fs.shutdown() {
        log::warn!("{line}");
    }
}

/// Unmount `mnt`; `lazy`: detach it now even if files are open there.
fn detach(mnt: &Path, lazy: bool) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    if unsafe { libc::geteuid() } == 0 {
        let c = std::ffi::CString::new(mnt.as_os_str().as_bytes())?;
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

fn mount(
    world: PathBuf,
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
    let mountpoint = std::fs::canonicalize(&mountpoint).map_err(|e| format!("{}: {e}", mountpoint.display()))?;
    check_mountpoint(&world, &mountpoint)?;
    // Check the world before detaching, so that errors reach the terminal.
    drop(WorldFs::open_world(&world, m.fs.clone())?);
    if foreground {
        return serve(&world, &mountpoint, &m, &mut |_| {});
    }
    let log_file = match &log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("{}: {e}", p.display()))?,
        ),
        None => None,
    };
    let mut fds = [0; 2];
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err("pipe failed".into());
    }
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    match unsafe { libc::fork() } {
        -1 => Err("fork failed".into()),
        0 => {
            drop(rd);
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
            let r = serve(&world, &mountpoint, &m, &mut |r| {
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
            let mut msg = String::new();
            let _ = std::fs::File::from(rd).read_to_string(&mut msg);
            match msg.trim_end() {
                "ok" => Ok(()),
                "" => Err("the mount process exited before mounting".into()),
                e => Err(e.to_string()),
            }
        }
    }
}

fn check(world: PathBuf) -> Result<bool, String> {
    let w = worldfs::world::World::open(&world)?;
    let store = w.open_store(true, false)?;
    let tty = std::io::stderr().is_terminal();
    let mut last = std::time::Instant::now();
    let report = worldfs::check::check(store.as_ref(), &mut |done, total| {
        if tty && (last.elapsed() > Duration::from_millis(200) || done == total) {
            last = std::time::Instant::now();
            eprint!("\rchecked {done}/{total} blocks");
            if done == total {
                eprintln!();
            }
        }
    })?;
    report.print(store.as_ref(), &mut std::io::stdout()).map_err(|e| e.to_string())?;
    Ok(report.corrupt.is_empty())
}

fn open_journal(w: &worldfs::world::World) -> Result<worldfs::store::journal::Journal, String> {
    let path = w.journal_path();
    worldfs::store::journal::Journal::open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", path.display()))
}

fn undo(
    world: &Path,
    last: Option<usize>,
    since: Option<String>,
    id: Option<i64>,
    dry_run: bool,
    force: bool,
    all: bool,
) -> Result<(), String> {
    use worldfs::undo::{Selection, execute, plan};
    let w = worldfs::world::World::open(world)?;
    let journal = open_journal(&w)?;
    let sel = match (last, since, id) {
        (Some(n), _, _) => Selection::Last(n),
        (_, Some(t), _) => Selection::Since(worldfs::time::parse_time(&t, worldfs::time::now_secs())? * 1000),
        (_, _, Some(k)) => Selection::Id(k),
        _ => {
            print!(
                "{}",
                worldfs::undo::listing(&journal, if all { None } else { Some(20) }).map_err(|e| e.to_string())?
            );
            return Ok(());
        }
    };
    let who = worldfs::luanti::guard::openers(&w.map_path());
    if !who.is_empty() && !force && !dry_run {
        return Err(format!(
            "{} is open in {}; stop it (or unmount) first, or use --force",
            w.map_path().display(),
            who.join(", ")
        ));
    }
    let store = w.open_store(dry_run, !dry_run)?;
    let p = plan(&journal, store.as_ref(), sel)?;
    println!("{}: {} block(s) to restore", p.note().what, p.changes.len());
    for c in &p.conflicts {
        eprintln!("conflict: {c}");
    }
    if !p.conflicts.is_empty() && !force {
        return Err(format!(
            "{} block(s) were changed outside worldfs since; nothing reverted (--force reverts them anyway)",
            p.conflicts.len()
        ));
    }
    if dry_run {
        return Ok(());
    }
    execute(store.as_ref(), &p)?;
    println!("done; `worldfs undo {}` lists it, and it can be reverted with --id", world.display());
    Ok(())
}

fn prune(world: &Path, before: Option<String>, max_mb: Option<u64>) -> Result<(), String> {
    if before.is_none() && max_mb.is_none() {
        return Err("say what to drop: --before TIME and/or --max-mb MIB".into());
    }
    let w = worldfs::world::World::open(world)?;
    let journal = open_journal(&w)?;
    let before = match before {
        Some(t) => Some(worldfs::time::parse_time(&t, worldfs::time::now_secs())? * 1000),
        None => None,
    };
    let r = journal.prune(before, max_mb.map(|m| m << 20)).map_err(|e| e.to_string())?;
    println!(
        "dropped {} change(s); {} is now {} KiB (was {} KiB)",
        r.changes,
        journal.path().display(),
        r.bytes_after / 1024,
        r.bytes_before / 1024
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    let r = match cli.command {
        Command::Mount { world, mountpoint, options, foreground, log, force } => {
            mount(world, mountpoint, options, foreground, log, force).map(|_| true)
        }
        Command::Check { world } => check(world),
        Command::Undo { world, last, since, id, dry_run, force, all } => {
            undo(&world, last, since, id, dry_run, force, all).map(|_| true)
        }
        Command::Journal { action: JournalAction::Prune { world, before, max_mb } } => {
            prune(&world, before, max_mb).map(|_| true)
        }
        Command::Export { world, from, to, out, sparse } => (|| {
            let (a, b) = (worldfs::transfer::parse_pos(&from)?, worldfs::transfer::parse_pos(&to)?);
            worldfs::transfer::export(&world, a, b, &out, sparse)
        })()
        .map(|lines| lines.iter().for_each(|l| println!("{l}")))
        .map(|_| true),
        Command::Import { world, file, at, rotate, force, nodedefs } => (|| {
            let defs = match nodedefs {
                Some(p) => Some(worldfs::transfer::rotate::NodeDefs::parse(
                    &std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?,
                )?),
                None => None,
            };
            let opts = worldfs::transfer::ImportOptions { rotate, force, nodedefs: defs };
            worldfs::transfer::import(&world, &file, worldfs::transfer::parse_pos(&at)?, &opts)
        })()
        .map(|lines| lines.iter().for_each(|l| println!("{l}")))
        .map(|_| true),
        Command::Demo { dir } => worldfs::demo::write_demo(&dir).map(|_| {
            println!("demo world written to {}", dir.display());
            true
        }),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("worldfs: {e}");
            ExitCode::from(2)
        }
    }
}
