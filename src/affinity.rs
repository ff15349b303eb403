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

use std::cell::Cell;

/// Look at the caller's CPU once per this many requests of a thread:
/// reading /proc costs a few microseconds, and looking more often only
/// chases the scheduler, which moves a walking process between CPUs every
/// few milliseconds (measured: every 4 or 16 requests was slower than 64,
/// 256 a little faster still).
const EVERY: u32 = 256;

thread_local! {
    /// Requests of this thread since it last looked.
    static SINCE: Cell<u32> = const { Cell::new(EVERY) };
}

/// Called by a worker thread for each request from process `pid`.
pub fn follow(pid: u32) {
    let n = SINCE.get();
    if n < EVERY || pid == 0 {
        SINCE.set(n.saturating_add(1));
        return;
    }
    SINCE.set(0);
    let Some(cpu) = cpu_of(pid) else {
        return;
    };
    // SAFETY: plain libc calls on a local cpu_set_t; 0 is this thread.
    unsafe {
        if libc::sched_getcpu() == cpu as i32 {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
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
pub fn process_cpu_count() -> usize {
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
pub fn start_on(i: usize) {
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

    #[test]
    fn reads_the_cpu_of_a_process() {
        let cpu = cpu_of(std::process::id()).expect("our own /proc/PID/stat");
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        assert!(cpu < n.max(libc::CPU_SETSIZE as usize), "{cpu}");
    }
}
