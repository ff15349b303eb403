//! RGBA pixels and PNG files: the pictures of the view (`top.png`, the
//! map's tiles) and the game's textures they take colours from.

/// An RGBA pixel; alpha 0 is "nothing here".
pub type Rgba = [u8; 4];

/// RGBA pixels `width` wide, each made `n` x `n` pixels (nearest: nodes
/// stay sharp squares).
pub fn scale(rgba: &[u8], width: usize, n: usize) -> Vec<u8> {
    if n <= 1 || width == 0 {
        return rgba.to_vec();
    }
    let mut out = Vec::with_capacity(rgba.len() * n * n);
    for row in rgba.chunks(width * 4) {
        let start = out.len();
        for px in row.chunks(4) {
            for _ in 0..n {
                out.extend_from_slice(px);
            }
        }
        for _ in 1..n {
            out.extend_from_within(start..start + width * n * 4);
        }
    }
    out
}

/// RGBA pixels, row by row, as a PNG.
#[allow(clippy::expect_used, reason = "a PNG of the stated size is encoded into memory")]
pub fn encode_png(width: u32, height: u32, rgba: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().expect("writing to memory");
        w.write_image_data(rgba).expect("pixels of the stated size");
    }
    out
}

/// Decode a PNG to (width, height, RGBA pixels): for tests and tiles made
/// from tiles.
pub fn decode_png(data: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(data));
    dec.set_transformations(
        png::Transformations::EXPAND | png::Transformations::STRIP_16 | png::Transformations::ALPHA,
    );
    let mut r = dec.read_info().map_err(|e| e.to_string())?;
    let mut buf = vec![0; r.output_buffer_size().ok_or("too large")?];
    let info = r.next_frame(&mut buf).map_err(|e| e.to_string())?;
    buf.truncate(info.buffer_size());
    if info.color_type != png::ColorType::Rgba {
        return Err(format!("decoded as {:?}, not RGBA", info.color_type));
    }
    Ok((info.width, info.height, buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_makes_squares_of_nodes() {
        // 2 x 1 pixels, red then green, scaled 3 times: 6 x 3.
        let px = [255, 0, 0, 255, 0, 255, 0, 255];
        let big = scale(&px, 2, 3);
        assert_eq!(big.len(), 6 * 3 * 4);
        for row in big.chunks(6 * 4) {
            assert_eq!(&row[..12], [255, 0, 0, 255].repeat(3).as_slice());
            assert_eq!(&row[12..], [0, 255, 0, 255].repeat(3).as_slice());
        }
        assert_eq!(scale(&px, 2, 1), px);
    }
}
