//! The filesystem core without FUSE: what a tree walk costs inside the
//! daemon, and how its memory behaves, for contrib/bench.sh and
//! docs/performance.md.
//!
//! ```text
//! cargo run --release --example bench_core -- WORLD MODE [MAX_BLOCKS] [CACHE_MB]
//! cargo run --release --example bench_core -- WORLD scan NAME [CACHE_MB]
//! cargo run --release --example bench_core -- WORLD sed OLD NEW [MAX_COMMITS]
//! ```
//!
//! MODE is what the kernel asks for each block directory during a walk:
//!
//! * `plain`: READDIR of the block directory (decode the block);
//! * `plus`: READDIRPLUS of it (decode, plus the size of every file: what
//!   `find` and `ls -lR` cause);
//! * `open`: LOOKUP + OPEN + READ + RELEASE of its `names` (what `grep
//!   MNT/blocks/*/names` causes, minus the LOOKUP of the directory).
//! * `scan NAME`: LOOKUP of every block directory and its `names`, OPEN,
//!   READ, RELEASE, counting the blocks whose `names` has a line ending in
//!   ` NAME`: the in-process twin of `grep -l NAME MNT/blocks/*/names`.
//!   Prints one `scan ...` line of key=value figures; with BENCH_LIST=FILE
//!   the matching blocks' names are written to FILE, one a line; with
//!   BENCH_ORDER=name the blocks are visited in name order, as a glob does.
//! * `sed OLD NEW [MAX_COMMITS]` (writes to WORLD: use a copy): for the
//!   first MAX_COMMITS blocks whose `names` has node type OLD, write
//!   `names` with OLD renamed NEW (open with O_TRUNC, write, close: one
//!   commit each): the in-process twin of `sed -i` through the mount.
//!   Prints one `sed ...` line of key=value figures.
//!
//! Prints the time per block and the process's RSS as the walk goes on.
//! Nothing here asserts a speed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by hand or by a bench script: a failure ends it with its message"
)]

use std::ffi::OsString;
use std::time::Instant;
use worldfs::fs::{Options, WorldFs};
use worldfs::worlds::luanti::inode;

fn rss_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) this process has used.
fn cpu_s() -> f64 {
    // SAFETY: a zeroed rusage is valid plain data.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage for getrusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn open_fs(world: &str, opts: Options) -> WorldFs {
    worldfs::open::open_world(std::path::Path::new(world), opts).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

/// Every entry of blocks/, paged as the kernel pages it.
fn list_blocks(fs: &WorldFs) -> Vec<OsString> {
    let mut names: Vec<OsString> = Vec::new();
    let mut offset = 0;
    loop {
        let before = names.len();
        fs.readdir(inode::BLOCKS, offset, false, &mut |e, _| {
            if names.len() - before >= 128 {
                return true;
            }
            if e.offset > 2 {
                names.push(e.name.clone());
            }
            offset = e.offset;
            false
        })
        .unwrap();
        if names.len() == before {
            return names;
        }
    }
}

/// The `names` file of one block (LOOKUP, LOOKUP, OPEN, READ, RELEASE).
fn read_names(fs: &WorldFs, block: &OsString) -> Option<(u64, Vec<u8>)> {
    let dir = fs.lookup(inode::BLOCKS, block).ok()?;
    let a = fs.lookup(dir.ino, std::ffi::OsStr::new("names")).ok()?;
    let o = fs.open(a.ino, libc::O_RDONLY, std::process::id()).ok()?;
    let d = fs.read(o.fh, 0, 1 << 20).ok();
    let _ = fs.release(o.fh);
    Some((a.ino, d?))
}

/// Whether a `names` file has a line `ID NAME`.
fn has_name(names: &[u8], name: &str) -> bool {
    names.split(|&b| b == b'\n').any(|l| l.splitn(2, |&b| b == b' ').nth(1) == Some(name.as_bytes()))
}

fn scan(world: &str, name: &str, cache_mb: usize) {
    let fs = open_fs(world, Options { read_only: true, cache_bytes: cache_mb << 20, ..Options::default() });
    let (t, c) = (Instant::now(), cpu_s());
    let mut blocks = list_blocks(&fs);
    // BENCH_ORDER=name: visit the blocks in the order of their names (as a
    // shell glob does) instead of the listing's (key) order.
    if std::env::var_os("BENCH_ORDER").is_some_and(|o| o == "name") {
        blocks.sort();
    }
    let (list_s, list_cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    let (t, c) = (Instant::now(), cpu_s());
    let mut matches = 0u64;
    let mut bytes = 0u64;
    // BENCH_LIST=FILE: also write the names of the matching blocks there.
    let mut list = std::env::var_os("BENCH_LIST").map(|f| std::fs::File::create(f).expect("BENCH_LIST"));
    for b in &blocks {
        if let Some((_, d)) = read_names(&fs, b) {
            bytes += d.len() as u64;
            if has_name(&d, name) {
                matches += 1;
                if let Some(f) = list.as_mut() {
                    use std::io::Write;
                    let _ = writeln!(f, "{}", b.to_string_lossy());
                }
            }
        }
    }
    let (s, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    let n = blocks.len().max(1) as f64;
    println!(
        "scan blocks={} matches={matches} bytes={bytes} list_s={list_s:.3} list_cpu_s={list_cpu:.3} s={s:.3} cpu_s={cpu:.3} \
         blocks_per_s={:.0} us_per_block={:.2} cpu_us_per_block={:.2} peak_rss_kb={}",
        blocks.len(),
        n / s,
        s * 1e6 / n,
        cpu * 1e6 / n,
        rss_kb("VmHWM:")
    );
}

fn sed(world: &str, old: &str, new: &str, max: usize) {
    let opts = Options { read_only: false, force: true, ..Options::default() };
    let fs = open_fs(world, opts);
    // Which blocks have OLD (untimed: through the mount, grep finds them).
    let blocks: Vec<OsString> = list_blocks(&fs)
        .into_iter()
        .filter(|b| read_names(&fs, b).is_some_and(|(_, d)| has_name(&d, old)))
        .take(max)
        .collect();
    let pid = std::process::id();
    let (t, c) = (Instant::now(), cpu_s());
    let mut commits = 0usize;
    let mut failed = 0usize;
    for b in &blocks {
        let Some((ino, d)) = read_names(&fs, b) else {
            failed += 1;
            continue;
        };
        let text = String::from_utf8_lossy(&d);
        let edited: String = text
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((id, n)) if n == old => format!("{id} {new}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let ok = fs.open(ino, libc::O_WRONLY | libc::O_TRUNC, pid).ok().is_some_and(|o| {
            let w = fs.write(o.fh, 0, edited.as_bytes()).is_ok();
            let f = fs.flush(o.fh, pid).is_ok();
            let r = fs.release(o.fh).is_ok();
            w && f && r
        });
        if ok { commits += 1 } else { failed += 1 }
    }
    let (s, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    println!(
        "sed commits={commits} failed={failed} s={s:.3} cpu_s={cpu:.3} commits_per_s={:.0} ms_per_commit={:.2} peak_rss_kb={}",
        commits as f64 / s,
        s * 1e3 / commits.max(1) as f64,
        rss_kb("VmHWM:")
    );
}

/// `mv find/OLD find/NEW` in-process: the world-wide rename without FUSE
/// (the index is built first, untimed).
fn rename(world: &str, old: &str, new: &str) {
    let opts = Options { read_only: false, force: true, ..Options::default() };
    let fs = open_fs(world, opts);
    let find = fs.lookup(worldfs::worlds::luanti::inode::ROOT, std::ffi::OsStr::new("find")).expect("find/").ino;
    fs.lookup(find, std::ffi::OsStr::new(old)).expect("the old name is in the world");
    let (t, c) = (Instant::now(), cpu_s());
    let r = fs.rename(find, std::ffi::OsStr::new(old), find, std::ffi::OsStr::new(new), 0);
    let (s, cpu) = (t.elapsed().as_secs_f64(), cpu_s() - c);
    println!("rename ok={} s={s:.3} cpu_s={cpu:.3} peak_rss_kb={}", r.is_ok(), rss_kb("VmHWM:"));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench_core WORLD plain|plus|open [MAX_BLOCKS] [CACHE_MB]");
        std::process::exit(2);
    }
    let mode = args[2].clone();
    match mode.as_str() {
        "scan" if args.len() >= 4 => {
            return scan(&args[1], &args[3], args.get(4).and_then(|s| s.parse().ok()).unwrap_or(128));
        }
        "sed" if args.len() >= 5 => {
            return sed(&args[1], &args[3], &args[4], args.get(5).and_then(|s| s.parse().ok()).unwrap_or(usize::MAX));
        }
        "rename" if args.len() >= 5 => return rename(&args[1], &args[3], &args[4]),
        "scan" | "sed" => {
            eprintln!("usage: bench_core WORLD scan NAME [CACHE_MB] | bench_core WORLD sed OLD NEW [MAX_COMMITS]");
            std::process::exit(2);
        }
        _ => {}
    }
    let max: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);
    let cache_mb: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(128);
    let opts = Options { read_only: true, cache_bytes: cache_mb << 20, ..Options::default() };
    let fs = worldfs::open::open_world(std::path::Path::new(&args[1]), opts).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let rss0 = rss_kb("VmRSS:");

    // The listing of blocks/, as the kernel would page through it.
    let t = Instant::now();
    let mut names: Vec<OsString> = Vec::new();
    let mut offset = 0;
    loop {
        let before = names.len();
        fs.readdir(inode::BLOCKS, offset, false, &mut |e, _| {
            if names.len() - before >= 128 {
                return true; // a 4 KiB reply holds about this many entries
            }
            if e.offset > 2 {
                names.push(e.name.clone());
            }
            offset = e.offset;
            false
        })
        .unwrap();
        if names.len() == before {
            break;
        }
    }
    let list_s = t.elapsed().as_secs_f64();
    println!(
        "listed {} blocks in {list_s:.3} s ({:.2} us/entry, pages of 128 entries), RSS {} -> {} kB",
        names.len(),
        list_s * 1e6 / names.len().max(1) as f64,
        rss0,
        rss_kb("VmRSS:")
    );
    let rss_listed = rss_kb("VmRSS:");

    let total = names.len().min(max);
    let step = (total / 10).max(1);
    let t = Instant::now();
    let mut lap = Instant::now();
    let mut lap_start = 0usize;
    let mut files = 0u64;
    // RSS half way, when the cache has long been full: what grows after
    // that grows with the number of blocks visited.
    let mut rss_half = 0u64;
    let mut bytes = 0u64;
    for (i, name) in names.iter().take(total).enumerate() {
        let Ok(dir) = fs.lookup(inode::BLOCKS, name) else { continue };
        match mode.as_str() {
            "plain" | "plus" => {
                let plus = mode == "plus";
                let _ = fs.readdir(dir.ino, 0, plus, &mut |_, a| {
                    files += 1;
                    bytes += a.map_or(0, |a| a.size);
                    false
                });
            }
            "open" => {
                if let Ok(a) = fs.lookup(dir.ino, std::ffi::OsStr::new("names"))
                    && let Ok(o) = fs.open(a.ino, libc::O_RDONLY, std::process::id())
                {
                    if let Ok(d) = fs.read(o.fh, 0, 128 << 10) {
                        bytes += d.len() as u64;
                    }
                    let _ = fs.release(o.fh);
                    files += 1;
                }
            }
            m => {
                eprintln!("unknown mode {m}");
                std::process::exit(2);
            }
        }
        if (i + 1) % step == 0 || i + 1 == total {
            let n = (i + 1) as f64;
            println!(
                "{:>9} blocks  {:7.1} s  {:6.1} us/block (last lap {:6.1})  RSS {:>7} kB (+{} over the listing)",
                i + 1,
                t.elapsed().as_secs_f64(),
                t.elapsed().as_secs_f64() * 1e6 / n,
                lap.elapsed().as_secs_f64() * 1e6 / (i + 1 - lap_start) as f64,
                rss_kb("VmRSS:"),
                rss_kb("VmRSS:").saturating_sub(rss_listed)
            );
            lap = Instant::now();
            lap_start = i + 1;
        }
        if i + 1 == total / 2 {
            rss_half = rss_kb("VmRSS:");
        }
    }
    println!(
        "mode {mode}: {total} blocks, {files} entries/files, {bytes} bytes; {:.1} us/block; peak RSS {} kB (cache {cache_mb} MiB)",
        t.elapsed().as_secs_f64() * 1e6 / total.max(1) as f64,
        rss_kb("VmHWM:")
    );
    let end = rss_kb("VmRSS:");
    let growth = end.saturating_sub(rss_half) as f64 * 1024.0;
    let later = (total - total / 2).max(1) as f64;
    println!(
        "summary mode={mode} blocks={total} us_per_block={:.1} rss_listed_kb={rss_listed} rss_end_kb={end} \
         rss_over_listing_kb={} growth_bytes_per_block_second_half={:.0}",
        t.elapsed().as_secs_f64() * 1e6 / total.max(1) as f64,
        end.saturating_sub(rss_listed),
        growth / later
    );
}
