//! Images: embedded ones as PNG files, external ones as a text file.

use crate::documents::twmap::map::Map;
use crate::documents::twmap::text::{line, quote};
use crate::documents::{DocError, DocResult};
use worldfs_codec::twmap::items;

// ---------------------------------------------------------------- images

pub(crate) fn render_external_image(map: &Map, i: usize) -> Vec<u8> {
    let im = map.image(i);
    let mut out = Vec::new();
    line(&mut out, "name", quote(&map.string(im.name)));
    line(&mut out, "width", im.width.to_string());
    line(&mut out, "height", im.height.to_string());
    out.extend_from_slice(b"# an external image: the game loads it from mapres/<name>.png\n");
    out
}

fn pixels(map: &Map, i: usize) -> (items::Image, Vec<u8>) {
    let im = map.image(i);
    let n = im.width as usize * im.height as usize * im.bytes_per_pixel();
    let px = map.data(im.data)[..n].to_vec();
    (im, px)
}

pub(crate) fn render_png(map: &Map, i: usize) -> DocResult<Vec<u8>> {
    let (im, px) = pixels(map, i);
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, im.width as u32, im.height as u32);
    enc.set_color(if im.bytes_per_pixel() == 3 { png::ColorType::Rgb } else { png::ColorType::Rgba });
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Fast);
    let mut w = enc.write_header().map_err(|e| DocError::new(format!("cannot make the PNG: {e}")))?;
    w.write_image_data(&px).map_err(|e| DocError::new(format!("cannot make the PNG: {e}")))?;
    w.finish().map_err(|e| DocError::new(format!("cannot make the PNG: {e}")))?;
    Ok(out)
}

/// Replace an embedded image's pixels with a PNG of the same size.
pub(crate) fn apply_png(map: &mut Map, i: usize, content: &[u8]) -> DocResult<()> {
    let (mut im, current) = pixels(map, i);
    let (w, h) = (im.width as u32, im.height as u32);
    let bpp = im.bytes_per_pixel();
    let px = decode_png(content, w, h, bpp)?;
    if px == current {
        return Ok(());
    }
    im.data = map.put_data(im.data, px);
    let ii = map.index.images[i];
    map.df.items[ii].data = im.to_ints();
    Ok(())
}

/// A PNG's pixels as 8-bit RGBA (or RGB when `bpp` is 3), which must be
/// `w` x `h`. Memory is bounded by the expected size.
pub fn decode_png(content: &[u8], w: u32, h: u32, bpp: usize) -> DocResult<Vec<u8>> {
    let err = |m: String| DocError::new(m);
    let limit = (w as usize * h as usize * 8).saturating_add(1 << 20);
    let mut dec = png::Decoder::new_with_limits(std::io::Cursor::new(content), png::Limits { bytes: limit });
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(|e| err(format!("not a PNG file this view can read: {e}")))?;
    let info = reader.info();
    if (info.width, info.height) != (w, h) {
        return Err(err(format!(
            "the PNG is {} x {} pixels, the image is {w} x {h} (replacing an image needs the same size)",
            info.width, info.height
        )));
    }
    let size = reader.output_buffer_size().ok_or_else(|| err("the PNG is too large".into()))?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(|e| err(format!("the PNG cannot be read: {e}")))?;
    buf.truncate(frame.buffer_size());
    let (color, depth) = reader.output_color_type();
    if depth != png::BitDepth::Eight {
        return Err(err(format!("PNG bit depth {depth:?} is not supported")));
    }
    let n = w as usize * h as usize;
    let mut out = Vec::with_capacity(n * bpp);
    let line_len = frame.line_size;
    let pixel_len = color.samples();
    for row in buf.chunks(line_len).take(h as usize) {
        for p in row[..w as usize * pixel_len].chunks_exact(pixel_len) {
            let rgba = match color {
                png::ColorType::Grayscale => [p[0], p[0], p[0], 255],
                png::ColorType::GrayscaleAlpha => [p[0], p[0], p[0], p[1]],
                png::ColorType::Rgb => [p[0], p[1], p[2], 255],
                png::ColorType::Rgba => [p[0], p[1], p[2], p[3]],
                png::ColorType::Indexed => return Err(err("an indexed PNG that could not be expanded".into())),
            };
            out.extend_from_slice(&rgba[..bpp]);
        }
    }
    Ok(out)
}
