//! Write the seed corpus of `mc_view_files`: every writable file of the
//! real chunks it edits, as shown.
//!
//! `cargo run --example mc_view_seeds -- <corpus dir>` (file names are
//! content hashes, so running it twice adds nothing).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: mc_view_seeds <corpus dir>");
        std::process::exit(2);
    };
    std::fs::create_dir_all(&dir).unwrap();
    let seeds = worldfs_fuzz::mc_view_seeds();
    for seed in &seeds {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        std::fs::write(format!("{dir}/seed-{:016x}", h.finish()), seed).unwrap();
    }
    println!("{} seeds in {dir}", seeds.len());
}
