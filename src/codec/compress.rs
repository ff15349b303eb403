//! The two compressions of the map format.
//!
//! Versions < 29 hold concatenated zlib streams with no length prefix: the
//! only way to find where one ends is to inflate it and ask how much input
//! was used. Version 29 holds one zstd frame, written by the streaming API and
//! so without a content size: it must be decoded with a streaming decoder.

use super::bytes::{DecodeError, Region};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use std::io::Read;

/// Refuse to inflate more than this: a real block body is ~17 KiB plus
/// metadata, and a hostile blob must not be able to exhaust memory.
pub const MAX_INFLATED: usize = 64 << 20;

/// Inflate one zlib stream starting at `start` of `blob`. Returns the
/// inflated bytes and the number of compressed bytes the stream used.
pub fn inflate_zlib(blob: &[u8], start: usize, what: &str, size_hint: usize) -> Result<(Vec<u8>, usize), DecodeError> {
    let input = &blob[start.min(blob.len())..];
    let err = |msg: String| DecodeError { region: Region::Blob, offset: start, message: msg };
    if input.is_empty() {
        return Err(err(format!("missing zlib stream for {what}")));
    }
    let mut d = Decompress::new(true);
    let mut out = Vec::with_capacity(size_hint.max(256));
    loop {
        if out.len() == out.capacity() {
            if out.len() >= MAX_INFLATED {
                return Err(err(format!("{what} inflates to more than {MAX_INFLATED} bytes")));
            }
            out.reserve(out.len().max(4096));
        }
        let consumed = d.total_in() as usize;
        let status = d
            .decompress_vec(&input[consumed..], &mut out, FlushDecompress::None)
            .map_err(|e| err(format!("bad zlib stream for {what}: {e}")))?;
        match status {
            Status::StreamEnd => return Ok((out, d.total_in() as usize)),
            Status::Ok | Status::BufError => {
                let no_input = d.total_in() as usize >= input.len();
                let room = out.len() < out.capacity();
                if no_input && room {
                    return Err(err(format!(
                        "truncated zlib stream for {what} ({} compressed bytes, no end)",
                        input.len()
                    )));
                }
            }
        }
    }
}

/// Deflate with zlib framing at the engine's default level (6).
pub fn deflate_zlib(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::new(6), true);
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.len().max(1024));
        }
        let consumed = c.total_in() as usize;
        let status = c
            .compress_vec(&data[consumed..], &mut out, FlushCompress::Finish)
            .expect("deflate into a growing Vec cannot fail");
        if status == Status::StreamEnd {
            return out;
        }
    }
}

/// Decode the single zstd frame at `blob[1..]` (after the version byte).
/// Bytes after the frame are ignored, as the engine ignores them.
pub fn unzstd(blob: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let input = &blob[1..];
    let err = |message: String| DecodeError { region: Region::Blob, offset: 1, message };
    let decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(|e| err(format!("bad zstd frame: {e}")))?;
    let mut out = Vec::with_capacity(17 * 1024);
    decoder
        .single_frame()
        .take(MAX_INFLATED as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| err(format!("bad zstd frame: {e}")))?;
    if out.len() > MAX_INFLATED {
        return Err(err(format!("zstd body larger than {MAX_INFLATED} bytes")));
    }
    Ok(out)
}

/// Compress with the streaming API at zstd's default level, like the engine:
/// the frame has no content size and no checksum.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = zstd::stream::write::Encoder::new(Vec::with_capacity(data.len() / 8), 3).expect("zstd encoder");
    enc.write_all(data).expect("write to Vec");
    enc.finish().expect("finish to Vec")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenated_zlib_streams_are_split_exactly() {
        let a = deflate_zlib(b"first stream");
        let b = deflate_zlib(b"second");
        let mut blob = a.clone();
        blob.extend_from_slice(&b);
        blob.extend_from_slice(b"tail");
        let (x, used) = inflate_zlib(&blob, 0, "a", 0).unwrap();
        assert_eq!(x, b"first stream");
        assert_eq!(used, a.len());
        let (y, used2) = inflate_zlib(&blob, used, "b", 0).unwrap();
        assert_eq!(y, b"second");
        assert_eq!(&blob[used + used2..], b"tail");
    }

    #[test]
    fn truncated_zlib_is_an_error() {
        let a = deflate_zlib(&[7u8; 5000]);
        let e = inflate_zlib(&a[..a.len() - 3], 0, "node data", 0).unwrap_err();
        assert!(e.message.contains("node data"), "{e}");
    }

    #[test]
    fn zstd_frame_has_no_content_size() {
        let z = zstd(&[1u8; 1000]);
        // magic, then frame header descriptor: FCS flag bits (7-6) and checksum (bit 2) clear
        assert_eq!(&z[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
        assert_eq!(z[4] & 0b1100_0100, 0);
        let mut blob = vec![29u8];
        blob.extend_from_slice(&z);
        assert_eq!(unzstd(&blob).unwrap(), vec![1u8; 1000]);
    }
}
