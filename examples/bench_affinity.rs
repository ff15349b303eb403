//! What following the caller's CPU (`src/sys/affinity.rs`) costs a serving
//! thread per request, for docs/performance.md. Prints figures; asserts
//! nothing.
//!
//! ```text
//! cargo run --profile ci --example bench_affinity [-- REQUESTS]
//! ```
//!
//! * `follow`, as a serving thread calls it for every request, in a tight
//!   loop with this process as the caller: the counter on most calls, and
//!   every 256th the caller's CPU (`/proc/PID/stat`), the machine's idle
//!   time (`/proc/stat`, at most once per 100 ms window, shared by every
//!   thread) and maybe a `sched_setaffinity`;
//! * the same with no caller (pid 0: the counter alone), the floor;
//! * each part alone: reading `/proc/stat`, reading `/proc/PID/stat`,
//!   `sched_getcpu`.
//!
//! A tight loop runs far more requests per 100 ms window than a walk does
//! (about 1 000 to 5 000), so the `/proc/stat` share per request is printed
//! again at walk rates from the measured cost of one read.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by hand or by a bench script: a failure ends it with its message"
)]

use std::time::Instant;

/// Nanoseconds per call of `f`, over `n` calls.
fn per_call(n: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let requests: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000_000);
    let me = std::process::id();
    // Warm up: the first window starts, the files are in the page cache.
    per_call(100_000, || worldfs::sys::affinity::follow(me));
    let floor = per_call(requests, || worldfs::sys::affinity::follow(0));
    let t = Instant::now();
    let follow = per_call(requests, || worldfs::sys::affinity::follow(me));
    let follow_wall = t.elapsed();
    worldfs::sys::affinity::unpin();
    let parts = requests / 1000;
    let proc_stat = per_call(parts, || {
        std::hint::black_box(std::fs::read_to_string("/proc/stat").ok());
    });
    let pid_stat = per_call(parts, || {
        std::hint::black_box(std::fs::read_to_string(format!("/proc/{me}/stat")).ok());
    });
    let getcpu = per_call(parts, || {
        // SAFETY: sched_getcpu has no preconditions.
        std::hint::black_box(unsafe { libc::sched_getcpu() });
    });
    let windows = (follow_wall.as_secs_f64() / 0.1).ceil().max(1.0);
    println!("requests {requests} in {:.2} s ({windows:.0} windows of 100 ms)", follow_wall.as_secs_f64());
    println!("follow(caller)     {follow:8.1} ns a request");
    println!("follow(no caller)  {floor:8.1} ns a request (the counter alone)");
    println!("read /proc/stat    {:8.2} us a read", proc_stat / 1000.0);
    println!("read /proc/PID/stat{:8.2} us a read (every 256 requests)", pid_stat / 1000.0);
    println!("sched_getcpu       {getcpu:8.1} ns a call (every 256 requests)");
    println!("per request, every 256: {:.1} ns", (pid_stat + getcpu) / 256.0);
    // Without room (a busy machine) `follow` never reads the caller's CPU.
    let pinning = follow - floor > (pid_stat + getcpu) / 512.0;
    println!("this run: {}", if pinning { "the machine had room: callers followed" } else { "no room: not pinned" });
    for rate in [10_000.0, 25_000.0, 50_000.0] {
        // One /proc/stat read per 100 ms window, shared by all requests.
        println!("per request at {rate:.0} requests/s, /proc/stat: {:.1} ns", proc_stat / (rate * 0.1));
    }
}
