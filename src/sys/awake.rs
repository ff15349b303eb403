//! Keeping the serving CPUs awake while requests flow (`-o nospin` turns
//! it off).
//!
//! On a virtual machine whose idle CPUs halt, waking a halted CPU goes
//! through the hypervisor and costs tens of microseconds. A FUSE request
//! wakes a daemon thread and its reply wakes the caller, so a walk over many
//! small files pays that toll up to twice per request whenever the two are
//! on different CPUs (docs/performance.md, section 2). While requests keep
//! coming, one thread per CPU that recently served one spins at the lowest
//! priority (SCHED_IDLE: it runs only when nothing else wants that CPU), so
//! the CPU is awake when the next wake-up arrives. It goes to sleep as soon
//! as no request came for `WINDOW`: an idle mount costs nothing. This is the
//! kernel's guest halt polling (`cpuidle-haltpoll`), which some VMs turn
//! off, done for the duration of a burst of requests.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// Spin this long after the latest request (the kernel's halt polling
/// defaults to 200 µs as well). Between two requests of a `grep` walk
/// there are a few microseconds; between two `grep` processes started by
/// `xargs`, about a millisecond, after which one wake-up is paid.
pub(crate) const WINDOW: Duration = Duration::from_micros(200);

/// A CPU counts as serving for this long after it last served a request:
/// callers and worker threads move between CPUs, and a CPU they left a
/// moment ago is where they are likely to come back.
const HOT: Duration = Duration::from_secs(1);

/// At most this many spinning threads, whatever the machine's size: on
/// large machines only the CPUs that serve requests get one.
const MAX_SPINNERS: usize = 16;

/// CPU numbers above this are not kept awake.
const MAX_CPU: usize = 1024;

/// One CPU's state, on a cache line of its own: its spinner writes it
/// often, and must not slow the other CPUs down by doing so.
#[repr(align(64))]
struct Slot {
    /// When a request was last served on this CPU (µs since `start`).
    served: AtomicU64,
    asleep: AtomicBool,
    thread: OnceLock<Thread>,
    /// Spin iterations, for tests.
    spins: AtomicU64,
}

struct Shared {
    start: Instant,
    window_us: u64,
    hot_us: u64,
    /// When the latest request arrived (µs since `start`).
    last: AtomicU64,
    slots: Vec<Slot>,
    /// CPUs that have a spinner, in the order they got one: the first
    /// `count` entries (written before `count` grows, under `spawn_lock`).
    cpus: Vec<AtomicUsize>,
    count: AtomicUsize,
    spawn_lock: Mutex<()>,
    stop: AtomicBool,
}

/// The spinners of one mount. Dropping it stops them.
pub struct Awake {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn spinner_cpus(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.count.load(Ordering::Acquire);
        self.cpus[..n].iter().map(|c| c.load(Ordering::Relaxed))
    }

    /// Whether the spinner of `cpu` should be spinning at `now`.
    fn wanted(&self, cpu: usize, now: u64) -> bool {
        now.saturating_sub(self.last.load(Ordering::SeqCst)) < self.window_us
            && now.saturating_sub(self.slots[cpu].served.load(Ordering::Relaxed)) < self.hot_us
    }
}

impl Awake {
    pub fn new() -> Awake {
        Awake::with_window(WINDOW)
    }

    pub(crate) fn with_window(window: Duration) -> Awake {
        // SAFETY: sysconf has no preconditions.
        let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.clamp(1, MAX_CPU as libc::c_long) as usize;
        let slots = (0..ncpu)
            .map(|_| Slot {
                served: AtomicU64::new(0),
                asleep: AtomicBool::new(false),
                thread: OnceLock::new(),
                spins: AtomicU64::new(0),
            })
            .collect();
        Awake {
            shared: Arc::new(Shared {
                start: Instant::now(),
                window_us: window.as_micros().max(1) as u64,
                hot_us: HOT.as_micros() as u64,
                last: AtomicU64::new(0),
                slots,
                cpus: (0..MAX_SPINNERS).map(|_| AtomicUsize::new(0)).collect(),
                count: AtomicUsize::new(0),
                spawn_lock: Mutex::new(()),
                stop: AtomicBool::new(false),
            }),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// A request arrived on this thread's CPU: keep the serving CPUs awake
    /// for the next `WINDOW`.
    pub fn touch(&self) {
        let s = &self.shared;
        let now = s.now_us();
        s.last.store(now, Ordering::SeqCst);
        // SAFETY: no arguments; -1 on failure.
        let cpu = unsafe { libc::sched_getcpu() };
        if let Ok(cpu) = usize::try_from(cpu)
            && let Some(slot) = s.slots.get(cpu)
        {
            slot.served.store(now, Ordering::Relaxed);
            if slot.thread.get().is_none() {
                self.spawn(cpu);
            }
        }
        // Wake the sleeping spinners of serving CPUs (a store-load pair
        // against the spinner's, see `spin`: one of the two sees the other).
        for c in s.spinner_cpus() {
            let slot = &s.slots[c];
            if slot.asleep.load(Ordering::SeqCst)
                && now.saturating_sub(slot.served.load(Ordering::Relaxed)) < s.hot_us
                && slot.asleep.swap(false, Ordering::SeqCst)
                && let Some(t) = slot.thread.get()
            {
                t.unpark();
            }
        }
    }

    fn spawn(&self, cpu: usize) {
        let s = &self.shared;
        let _g = s.spawn_lock.lock();
        let n = s.count.load(Ordering::Acquire);
        if s.slots[cpu].thread.get().is_some() || n >= MAX_SPINNERS || s.stop.load(Ordering::SeqCst) {
            return;
        }
        let shared = s.clone();
        let spawned = std::thread::Builder::new().name(format!("worldfs-spin{cpu}")).spawn(move || spin(&shared, cpu));
        let Ok(handle) = spawned else { return };
        let _ = s.slots[cpu].thread.set(handle.thread().clone());
        s.cpus[n].store(cpu, Ordering::Relaxed);
        s.count.store(n + 1, Ordering::Release);
        self.threads.lock().push(handle);
    }

    /// CPUs that have a spinner.
    #[cfg(test)]
    pub(crate) fn cpus(&self) -> Vec<usize> {
        self.shared.spinner_cpus().collect()
    }

    /// How many spinners are spinning now (not asleep).
    #[cfg(test)]
    pub(crate) fn spinning(&self) -> usize {
        let s = &self.shared;
        s.spinner_cpus().filter(|&c| !s.slots[c].asleep.load(Ordering::SeqCst)).count()
    }

    /// Spin iterations so far.
    #[cfg(test)]
    pub(crate) fn spins(&self) -> u64 {
        self.shared.slots.iter().map(|s| s.spins.load(Ordering::Relaxed)).sum()
    }

    /// Stop and join the spinners.
    pub(crate) fn stop(&self) {
        let s = &self.shared;
        s.stop.store(true, Ordering::SeqCst);
        for slot in &s.slots {
            if let Some(t) = slot.thread.get() {
                t.unpark();
            }
        }
        for h in self.threads.lock().drain(..) {
            let _ = h.join();
        }
    }
}

impl Default for Awake {
    fn default() -> Self {
        Awake::new()
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A spinner reports its CPU time every this many rounds of 64 spins (a
/// few milliseconds; reading the clock is a system call).
const REPORT_EVERY: u32 = 1024;

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    // SAFETY: plain libc call filling a local timespec.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// The spinner of one CPU.
fn spin(s: &Shared, cpu: usize) {
    // SAFETY: plain libc calls on this thread (0) with local arguments.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            // That CPU is not ours to use (affinity or cpuset): do nothing.
            s.slots[cpu].asleep.store(true, Ordering::SeqCst);
            return;
        }
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
    }
    let slot = &s.slots[cpu];
    // The CPU time spun, reported for `affinity` to count as idle.
    let mut reported = thread_cpu_ns();
    let mut report = || {
        let now = thread_cpu_ns();
        crate::sys::affinity::spun(now.saturating_sub(reported));
        reported = now;
    };
    let mut since_report = 0u32;
    while !s.stop.load(Ordering::Relaxed) {
        if s.wanted(cpu, s.now_us()) {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            slot.spins.fetch_add(1, Ordering::Relaxed);
            since_report += 1;
            if since_report >= REPORT_EVERY {
                since_report = 0;
                report();
            }
            continue;
        }
        report();
        slot.asleep.store(true, Ordering::SeqCst);
        if s.wanted(cpu, s.now_us()) || s.stop.load(Ordering::SeqCst) {
            slot.asleep.store(false, Ordering::SeqCst);
            continue;
        }
        // Woken by `touch` (which clears `asleep`) or `stop`; the timeout
        // only bounds what a lost race could cost.
        std::thread::park_timeout(Duration::from_secs(5));
        slot.asleep.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wait up to 20 s for `f` (spinners run at the lowest priority, so on
    /// a loaded machine they may take a while to be scheduled).
    fn eventually(mut f: impl FnMut() -> bool) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn spins_while_requests_come_and_sleeps_after() {
        let a = Awake::with_window(Duration::from_millis(300));
        assert!(a.cpus().is_empty(), "no spinner before the first request");
        a.touch();
        assert_eq!(a.cpus().len(), 1, "a spinner for the CPU that served it");
        // Requests keep coming: the spinner spins.
        let spinning = eventually(|| {
            a.touch();
            a.spins() > 0
        });
        assert!(spinning, "the spinner never spun");
        // No more requests: it goes to sleep and stops counting.
        assert!(eventually(|| a.spinning() == 0), "still spinning without requests");
        // Going to sleep, it reported the CPU time it spun (counted as idle
        // by `affinity`).
        assert!(crate::sys::affinity::spun_total() > 0, "spinning not reported");
        let n = a.spins();
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(a.spins(), n, "spun while asleep");
        // A new request wakes it.
        let before = a.spins();
        assert!(
            eventually(|| {
                a.touch();
                a.spins() > before
            }),
            "not woken by a request"
        );
        a.stop();
    }

    #[test]
    fn stop_joins_sleeping_and_spinning_threads() {
        let a = Awake::with_window(Duration::from_secs(60));
        a.touch();
        a.stop();
        // Joined: nothing counts any more, and new requests spawn nothing.
        let n = a.spins();
        a.touch();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(a.spins(), n);
        assert!(a.cpus().len() <= 1);
    }
}
