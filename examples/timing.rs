#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a tool run by hand or by a bench script: a failure ends it with its message"
)]
use std::time::Instant;
use worldfs::view::BlockFile;
use worldfs_codec::luanti::Block;
use worldfs_store::MapStore;
use worldfs_store::sqlite::SqliteStore;

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let store = SqliteStore::open(std::path::Path::new(&path), true).unwrap();
    let t = Instant::now();
    let all = store.scan_after(None, 1 << 30).unwrap();
    let read = t.elapsed();
    let t = Instant::now();
    let blocks: Vec<_> = all.iter().map(|(p, b)| (*p, Block::decode(b).unwrap())).collect();
    let dec = t.elapsed();
    let mut sizes = [0usize; 9];
    let mut times = [std::time::Duration::ZERO; 9];
    for (p, b) in &blocks {
        for (i, f) in BlockFile::DECODED.iter().enumerate() {
            let t = Instant::now();
            sizes[i] += worldfs::worlds::luanti::cache::render_block_file(*p, b, &[], *f).len();
            times[i] += t.elapsed();
        }
    }
    let n = blocks.len() as u32;
    println!("{} blocks: read {:?}/block, decode {:?}/block", n, read / n, dec / n);
    for (i, f) in BlockFile::DECODED.iter().enumerate() {
        println!("  render {:8} {:?}/block, {} bytes/block", f.name(), times[i] / n, sizes[i] / n as usize);
    }
}
