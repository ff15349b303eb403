//! Serving a request on the CPU its caller runs on.
//!
//! A FUSE request is two wake-ups: the caller's thread wakes a daemon
//! thread, whose reply wakes the caller. When the two run on different
//! CPUs each wake-up is an inter-processor interrupt, and on a virtual
//! machine whose idle CPUs halt that costs tens of microseconds: on the
//! 2-vCPU machines of docs/performance.md a `grep` over 50 000 files ran
//! 3.4× faster with the daemon and grep on one CPU than on two. The
//! scheduler does not bring them together by itself (FUSE wake-ups are not
//! "sync" wake-ups), so each worker thread moves itself, now and then, to
//! the CPU its latest caller last ran on.
//!
//! Only while the machine has room for it: a thread pinned to one CPU
//! cannot be moved by the scheduler, so when every CPU is wanted a busy
//! neighbour is the one moved or made to wait (measured: a CPU-bound
//! neighbour lost 25-40 % of its throughput during a bulk edit, which
//! gained nothing). So the threads follow their callers only while the
//! CPUs were recently idle for at least half a CPU's time (`/proc/stat`,
//! over windows of `WINDOW`), counting this daemon's spinners (`awake.rs`,
//! at SCHED_IDLE: they run only on CPUs nobody else wants) as idle; else
//! they run wherever the scheduler puts them.

use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Look at the caller's CPU once per this many requests of a thread:
/// reading /proc costs a few microseconds, and looking more often only
/// chases the scheduler, which moves a walking process between CPUs every
/// few milliseconds (measured: every 4 or 16 requests was slower than 64,
/// 256 a little faster still).
const EVERY: u32 = 256;

/// The machine's idle time is measured over windows of at least this
/// long: long enough for /proc/stat's 10 ms ticks, short enough to let go
/// soon after a neighbour starts working.
const WINDOW: Duration = Duration::from_millis(100);

/// A window older than this says nothing about now: start a new one.
const STALE: Duration = Duration::from_secs(1);

thread_local! {
    /// Requests of this thread since it last looked.
    static SINCE: Cell<u32> = const { Cell::new(EVERY) };
    /// Whether this thread pinned itself to one CPU.
    static PINNED: Cell<bool> = const { Cell::new(false) };
}

/// Nanoseconds of CPU time this process's spinners have used (they report
/// it, see `awake.rs`).
static SPUN_NS: AtomicU64 = AtomicU64::new(0);

/// Whether the latest window had room for following callers.
static ROOM: AtomicBool = AtomicBool::new(false);

/// The start of the current window.
static WINDOW_START: Mutex<Option<(Instant, CpuTimes)>> = Mutex::new(None);

/// A spinner used `ns` more nanoseconds of CPU time.
pub(crate) fn spun(ns: u64) {
    SPUN_NS.fetch_add(ns, Ordering::Relaxed);
}

/// The spinners' CPU time reported so far, in nanoseconds.
#[cfg(test)]
pub(crate) fn spun_total() -> u64 {
    SPUN_NS.load(Ordering::Relaxed)
}

/// Called by a worker thread for each request from process `pid`.
pub fn follow(pid: u32) {
    let n = SINCE.get();
    if n < EVERY || pid == 0 {
        SINCE.set(n.saturating_add(1));
        return;
    }
    SINCE.set(0);
    if !room_to_follow() {
        if PINNED.replace(false) {
            unpin();
        }
        return;
    }
    let Some(cpu) = cpu_of(pid) else {
        return;
    };
    // SAFETY: plain libc calls on a local cpu_set_t; 0 is this thread.
    unsafe {
        if libc::sched_getcpu() == cpu as i32 && PINNED.get() {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    PINNED.set(true);
}

/// The CPUs' times from /proc/stat's first line, in ticks summed over
/// every CPU, with this daemon's spinning so far.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CpuTimes {
    /// Every state's ticks (user to steal; guest time is inside user).
    total: u64,
    /// Idle and waiting for I/O: nothing wanted the CPU.
    idle: u64,
    /// How many CPUs the line sums.
    cpus: u64,
    /// This daemon's spinners' CPU time, in nanoseconds.
    spun_ns: u64,
}

/// Parses /proc/stat's text (`spun_ns` is filled in by the caller).
fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let mut lines = text.lines();
    let mut fields = lines.next()?.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields.take(8).map(|f| f.parse().ok()).collect::<Option<_>>()?;
    if ticks.len() < 5 {
        return None;
    }
    let cpus = lines.take_while(|l| l.starts_with("cpu")).count() as u64;
    Some(CpuTimes { total: ticks.iter().sum(), idle: ticks[3] + ticks[4], cpus: cpus.max(1), spun_ns: 0 })
}

/// Whether the window from `before` to `after` left at least half a CPU
/// idle (this daemon's spinners counted as idle): then a serving thread can
/// share its caller's CPU without pushing anyone off it. `tick_ns` is the
/// length of one /proc/stat tick.
fn had_room(before: &CpuTimes, after: &CpuTimes, tick_ns: u64) -> bool {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return false;
    }
    let spun_ticks = after.spun_ns.saturating_sub(before.spun_ns) / tick_ns.max(1);
    let spare = (after.idle.saturating_sub(before.idle) + spun_ticks).min(total);
    // spare >= (total / cpus) / 2, in integers.
    spare * 2 * after.cpus >= total
}

/// Whether the latest window had room (see `had_room`); ends the window and
/// starts the next one when it is `WINDOW` long. With no recent window,
/// no: a daemon starting on a busy machine does not pin first.
fn room_to_follow() -> bool {
    let Some(mut start) = WINDOW_START.try_lock() else {
        return ROOM.load(Ordering::Relaxed);
    };
    let now = Instant::now();
    match *start {
        Some((t, _)) if now.duration_since(t) < WINDOW => return ROOM.load(Ordering::Relaxed),
        _ => {}
    }
    let Some(times) = cpu_times_now() else {
        ROOM.store(false, Ordering::Relaxed);
        return false;
    };
    let room = match *start {
        Some((t, before)) if now.duration_since(t) < STALE => had_room(&before, &times, tick_ns()),
        _ => false,
    };
    *start = Some((now, times));
    ROOM.store(room, Ordering::Relaxed);
    room
}

fn cpu_times_now() -> Option<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let times = parse_proc_stat(&text)?;
    Some(CpuTimes { spun_ns: SPUN_NS.load(Ordering::Relaxed), ..times })
}

/// One /proc/stat tick in nanoseconds (USER_HZ, 100 almost everywhere).
fn tick_ns() -> u64 {
    // SAFETY: plain libc call without arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / if hz > 0 { hz as u64 } else { 100 }
}

/// The CPUs the process may use: its main thread's set (serving threads
/// narrow their own, see `follow`; the main thread never does).
fn process_cpus() -> Option<libc::cpu_set_t> {
    // SAFETY: plain libc call filling a local cpu_set_t.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let pid = libc::getpid();
        (libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
    }
}

/// How many CPUs the process may use, whatever the calling thread is
/// pinned to (`available_parallelism` answers for the calling thread: 1 on
/// a serving thread that followed its caller).
pub(crate) fn process_cpu_count() -> usize {
    // SAFETY: CPU_COUNT reads a local cpu_set_t.
    process_cpus().map_or(0, |set| unsafe { libc::CPU_COUNT(&set) } as usize).max(1)
}

/// Let the calling thread run on every CPU of the process again: for
/// threads spawned by a serving thread to work in parallel (they inherit
/// its single CPU).
pub fn unpin() {
    if let Some(set) = process_cpus() {
        // SAFETY: plain libc call on a local cpu_set_t; 0 is this thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// Move the calling thread to the `i`-th CPU of the process (modulo their
/// number), then let it run anywhere: helper threads that live a few
/// milliseconds start on their parent's CPU and end before the scheduler
/// spreads them (an index build used 1 of 2 CPUs), so each starts on its own.
pub(crate) fn start_on(i: usize) {
    let Some(set) = process_cpus() else { return };
    // SAFETY: plain libc calls on local cpu_set_t values; 0 is this thread.
    unsafe {
        let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
        if let Some(&cpu) = allowed.get(i % allowed.len().max(1)) {
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The CPU process `pid` last ran on (field 39 of /proc/PID/stat).
fn cpu_of(pid: u32) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(36)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread pinned to one CPU (as serving threads are) still sees every
    /// CPU of the process, and its helpers can use them all again.
    #[test]
    fn pinned_threads_count_and_free_every_cpu() {
        let all = process_cpu_count();
        std::thread::spawn(move || {
            // SAFETY: plain libc calls on a local cpu_set_t.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(libc::sched_getcpu() as usize, &mut one);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
            }
            assert_eq!(std::thread::available_parallelism().unwrap().get(), 1);
            assert_eq!(process_cpu_count(), all);
            std::thread::spawn(move || {
                unpin();
                assert_eq!(std::thread::available_parallelism().unwrap().get(), all);
            })
            .join()
            .unwrap();
        })
        .join()
        .unwrap();
    }

    const STAT: &str = "cpu  1000 50 300 8000 100 10 20 5 0 0\n\
        cpu0 500 25 150 4000 50 5 10 3 0 0\n\
        cpu1 500 25 150 4000 50 5 10 2 0 0\n\
        intr 12345\n";

    fn times(total_busy: u64, idle: u64, spun_ms: u64) -> CpuTimes {
        CpuTimes { total: total_busy + idle, idle, cpus: 2, spun_ns: spun_ms * 1_000_000 }
    }

    #[test]
    fn parses_proc_stat() {
        let t = parse_proc_stat(STAT).unwrap();
        assert_eq!(t, CpuTimes { total: 1000 + 50 + 300 + 8000 + 100 + 10 + 20 + 5, idle: 8100, cpus: 2, spun_ns: 0 });
        assert_eq!(parse_proc_stat("intr 1\n"), None);
        assert_eq!(parse_proc_stat("cpu 1 2 x 4 5\n"), None);
        assert_eq!(parse_proc_stat(""), None);
    }

    /// 100 ms on 2 CPUs at 10 ms a tick: 20 ticks in a window.
    #[test]
    fn follows_while_half_a_cpu_was_idle() {
        let tick = 10_000_000;
        let before = times(0, 0, 0);
        // An idle machine's walk: grep and the daemon share one CPU, the
        // other idles.
        assert!(had_room(&before, &times(10, 10, 0), tick));
        // Exactly half a CPU idle: still room.
        assert!(had_room(&before, &times(15, 5, 0), tick));
        // A CPU-bound neighbour on the other CPU: a tick idle of 20.
        assert!(!had_room(&before, &times(19, 1, 0), tick));
        assert!(!had_room(&before, &times(20, 0, 0), tick));
    }

    /// The daemon's own spinners make a CPU look busy; their time counts as
    /// idle, and is never more than the window.
    #[test]
    fn spinners_count_as_idle() {
        let tick = 10_000_000;
        let before = times(0, 0, 0);
        // The other CPU spun 90 ms of the window at SCHED_IDLE.
        assert!(had_room(&before, &times(20, 0, 90), tick));
        // A neighbour's 100 ms beside 20 ms of spinning: not enough.
        assert!(!had_room(&before, &times(20, 0, 20), tick));
        assert!(had_room(&before, &times(20, 0, 10_000), tick));
    }

    #[test]
    fn no_room_without_time_passing() {
        let t = times(10, 10, 0);
        assert!(!had_room(&t, &t, 10_000_000));
        // Counters that went back (a new sample mixed with an old one).
        assert!(!had_room(&times(30, 10, 0), &times(20, 10, 0), 10_000_000));
    }

    #[test]
    fn reads_the_cpu_of_a_process() {
        let cpu = cpu_of(std::process::id()).expect("our own /proc/PID/stat");
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        assert!(cpu < n.max(libc::CPU_SETSIZE as usize), "{cpu}");
    }
}
