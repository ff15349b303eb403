use worldfs::kinds::twmap::TwMap;
use worldfs::kinds::{Context, Document};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let m = TwMap::decode(&std::fs::read(&a[1]).unwrap(), &Context::default()).unwrap();
    if a.len() == 2 {
        for e in m.entries() {
            println!("{}{} {}", e.path, if e.dir { "/" } else { "" }, if e.writable { "w" } else { "" });
        }
    } else {
        use std::io::Write;
        std::io::stdout().write_all(&m.render(&a[2]).unwrap()).unwrap();
    }
}
