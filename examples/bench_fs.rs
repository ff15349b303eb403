//! Micro-benchmarks against a mounted world, for contrib/bench.sh.
//!
//! ```text
//! cargo run --release --example bench_fs -- missing MNT [N]   # stat N missing names
//! cargo run --release --example bench_fs -- region MNT [K]    # read `nodes` of K blocks
//! ```
//!
//! Output is `key=value` lines (times in microseconds or seconds), so that
//! the script can put them in its table. Nothing here asserts a speed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by hand or by a bench script: a failure ends it with its message"
)]

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn usage() -> ! {
    eprintln!("usage: bench_fs missing MNT [N] | bench_fs region MNT [K]");
    std::process::exit(2)
}

/// lstat every path; returns (µs per op, how many were not ENOENT).
fn stat_all(paths: &[PathBuf]) -> (f64, usize) {
    let t = Instant::now();
    let mut found = 0;
    for p in paths {
        match std::fs::symlink_metadata(p) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            _ => found += 1,
        }
    }
    (t.elapsed().as_secs_f64() * 1e6 / paths.len().max(1) as f64, found)
}

/// Block positions that no real world has: the top layers of the map
/// (block y 2047 and below), walking x first.
fn far_block(i: usize) -> (i32, i32, i32) {
    let x = -2048 + (i % 4096) as i32;
    let y = 2047 - ((i / 4096) % 32) as i32;
    let z = 2047 - (i / (4096 * 32)) as i32;
    (x, y, z)
}

/// The name of a block that exists (for missing names inside it).
fn some_block(mnt: &Path) -> Option<String> {
    std::fs::read_dir(mnt.join("blocks")).ok()?.next()?.ok().map(|e| e.file_name().to_string_lossy().into_owned())
}

fn missing(mnt: &Path, n: usize) {
    let blocks: Vec<PathBuf> = (0..n)
        .map(|i| {
            let (x, y, z) = far_block(i);
            mnt.join(format!("blocks/{x},{y},{z}"))
        })
        .collect();
    let nodes: Vec<PathBuf> = (0..n)
        .map(|i| {
            let (x, y, z) = far_block(i);
            mnt.join(format!("node/{},{},{}", x * 16 + 3, y * 16 + 5, z * 16 + 7))
        })
        .collect();
    // The kind of names editors and shells probe for (emacs looks up ~25
    // such names per visited file): missing names inside an existing block.
    let inblock: Vec<PathBuf> = match some_block(mnt) {
        Some(b) => (0..n).map(|i| mnt.join(format!("blocks/{b}/.probe{i}"))).collect(),
        None => Vec::new(),
    };
    for (key, paths) in [("blocks", &blocks), ("node", &nodes), ("inblock", &inblock)] {
        if paths.is_empty() {
            continue;
        }
        // First pass: every name is new to the kernel (one LOOKUP each).
        // Second pass, right after: the kernel may answer from a negative
        // dentry (entry TTL), without asking the daemon.
        let (first, found1) = stat_all(paths);
        let (second, found2) = stat_all(paths);
        println!("missing_{key}_n={}", paths.len());
        println!("missing_{key}_first_us={first:.2}");
        println!("missing_{key}_again_us={second:.2}");
        if found1 + found2 > 0 {
            println!("missing_{key}_unexpectedly_found={}", found1.max(found2));
        }
    }
}

fn parse_block_name(s: &str) -> Option<(i32, i32, i32)> {
    let mut it = s.split(',').map(|v| v.parse::<i32>().ok());
    let r = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(r)
}

fn median(mut v: Vec<i32>) -> i32 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Read the whole file in 128 KiB reads (like cat); returns its size.
fn read_file(p: &Path, buf: &mut [u8]) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut n = 0u64;
    loop {
        let k = f.read(buf)?;
        if k == 0 {
            return Ok(n);
        }
        n += k as u64;
    }
}

fn region(mnt: &Path, k: usize) {
    let t = Instant::now();
    let all: Vec<(i32, i32, i32)> = std::fs::read_dir(mnt.join("blocks"))
        .unwrap_or_else(|e| {
            eprintln!("{}: {e}", mnt.display());
            std::process::exit(1)
        })
        .filter_map(|e| e.ok())
        .filter_map(|e| parse_block_name(&e.file_name().to_string_lossy()))
        .collect();
    let list_s = t.elapsed().as_secs_f64();
    // The region: the k stored blocks nearest (Chebyshev distance) to the
    // median position, i.e. a roughly cubic neighbourhood in the middle of
    // the world.
    let c = (
        median(all.iter().map(|p| p.0).collect()),
        median(all.iter().map(|p| p.1).collect()),
        median(all.iter().map(|p| p.2).collect()),
    );
    let mut sel = all.clone();
    let dist = |p: &(i32, i32, i32)| (p.0 - c.0).abs().max((p.1 - c.1).abs()).max((p.2 - c.2).abs());
    sel.sort_by_key(|p| (dist(p), p.2, p.1, p.0));
    sel.truncate(k);
    let radius = sel.last().map(dist).unwrap_or(0);
    println!("region_listed={} region_list_s={list_s:.3}", all.len());
    println!("region_center={},{},{} region_radius={radius} region_blocks={}", c.0, c.1, c.2, sel.len());
    let paths: Vec<PathBuf> = sel.iter().map(|p| mnt.join(format!("blocks/{},{},{}/nodes", p.0, p.1, p.2))).collect();
    let mut buf = vec![0u8; 128 << 10];
    for pass in ["cold", "warm"] {
        let t = Instant::now();
        let mut bytes = 0u64;
        let mut errors = 0usize;
        for p in &paths {
            match read_file(p, &mut buf) {
                Ok(n) => bytes += n,
                Err(_) => errors += 1, // a block that cannot be decoded has no nodes
            }
        }
        let s = t.elapsed().as_secs_f64();
        println!("region_{pass}_s={s:.3}");
        println!("region_{pass}_bytes={bytes}");
        println!("region_{pass}_mb_per_s={:.1}", bytes as f64 / 1e6 / s);
        println!("region_{pass}_blocks_per_s={:.0}", paths.len() as f64 / s);
        if errors > 0 {
            println!("region_{pass}_unreadable={errors}");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        usage();
    }
    let mnt = PathBuf::from(&args[2]);
    let num = |d: usize| args.get(3).map(|s| s.parse().unwrap_or_else(|_| usage())).unwrap_or(d);
    match args[1].as_str() {
        "missing" => missing(&mnt, num(10_000)),
        "region" => region(&mnt, num(2_000)),
        _ => usage(),
    }
}
