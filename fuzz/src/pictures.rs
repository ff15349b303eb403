//! The pure picture code on untrusted input: a colors.txt, a block blob
//! (its `top.png`), a PNG (a tile read back to make a coarser one).

use worldfs_codec::luanti::Block;
use worldfs::view::picture::{Colors, block_top_png, decode_png, scale};
use worldfs::view::tiles::{TILE, compose};

pub fn pictures(data: &[u8]) {
    // A colors.txt: parsed or refused with a line number, never a panic.
    if let Err(e) = Colors::parse(&String::from_utf8_lossy(data)) {
        assert!(e.contains("line"), "colors.txt error without a line: {e}");
    }
    // A block: its top.png is always a 16 x 16 PNG we read back.
    if let Ok(b) = Block::decode(data) {
        let png = block_top_png(&b, &Colors::builtin());
        let (w, h, px) = decode_png(&png).expect("our own top.png decodes");
        assert_eq!((w, h, px.len()), (16, 16, 16 * 16 * 4));
    }
    // A PNG: decoded to RGBA of its stated size, or refused.
    if let Ok((w, h, px)) = decode_png(data) {
        assert_eq!(px.len(), w as usize * h as usize * 4, "RGBA of {w} x {h}");
        if (w as usize, h as usize) == (TILE, TILE) {
            let coarse = compose([Some(&px), None, Some(&px), None]);
            assert_eq!(coarse.len(), TILE * TILE * 4);
        } else if w > 0 && w <= 64 && h <= 64 {
            assert_eq!(scale(&px, w as usize, 3).len(), px.len() * 9);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoke::run;

    #[test]
    fn pictures_smoke() {
        let mut seeds = crate::smoke::sample_blobs();
        seeds.extend([
            b"default:stone 1 2 3\n# c\n\nx:y 4 5 6 7 8\n".to_vec(),
            b"default:stone 1 2\n".to_vec(),
            worldfs::view::picture::encode_png(2, 3, &[9; 24]),
            worldfs::view::picture::encode_png(TILE as u32, TILE as u32, &vec![200; TILE * TILE * 4]),
        ]);
        run("pictures", pictures, seeds);
    }
}
