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
/// At most [`MAX_INFLATED`] bytes are inflated.
pub fn inflate_zlib(blob: &[u8], start: usize, what: &str, size_hint: usize) -> Result<(Vec<u8>, usize), DecodeError> {
    inflate_zlib_limited(blob, start, what, size_hint, MAX_INFLATED)
}

/// [`inflate_zlib`] that refuses a stream inflating to more than `limit`
/// bytes as soon as it has produced `limit + 1`: memory stays within about
/// `limit` whatever the stream claims, and a stream of a few KB that would
/// inflate to gigabytes (a "zip bomb") is stopped early.
pub fn inflate_zlib_limited(
    blob: &[u8],
    start: usize,
    what: &str,
    size_hint: usize,
    limit: usize,
) -> Result<(Vec<u8>, usize), DecodeError> {
    let input = &blob[start.min(blob.len())..];
    let err = |msg: String| DecodeError { region: Region::Blob, offset: start, message: msg };
    if input.is_empty() {
        return Err(err(format!("missing zlib stream for {what}")));
    }
    let too_big = || err(format!("{what} inflates to more than {limit} bytes"));
    let mut d = Decompress::new(true);
    let mut out = Vec::with_capacity(size_hint.max(256).min(limit.saturating_add(1)));
    loop {
        if out.len() == out.capacity() {
            // Grow by doubling, but never past one byte over the limit.
            let room = limit.saturating_add(1) - out.len();
            out.reserve_exact(out.len().max(4096).min(room).max(1));
        }
        let consumed = d.total_in() as usize;
        let status = d.decompress_vec(&input[consumed..], &mut out, FlushDecompress::None).map_err(|e| {
            drop(std::mem::take(&mut out)); // memory for the check below
            match checksum_mismatch(input, limit) {
                Some((stored, data)) => err(format!(
                    "bad zlib stream for {what}: the checksum after the data (adler32 {stored:#010x}) does not \
                     match the data ({data:#010x}); the data is damaged"
                )),
                None => err(format!("bad zlib stream for {what}: {e}")),
            }
        })?;
        if out.len() > limit {
            return Err(too_big());
        }
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

/// A zlib stream whose deflate data ends but whose adler32 trailer is
/// missing or cut short (the input ends inside it): what it inflates to,
/// at most `limit` bytes. Luanti's `decompressZlib` stops without an error
/// when its input runs out, so the engine reads such a file as long as
/// nothing follows the stream (a schematic's node data is its last part).
pub fn inflate_zlib_without_trailer(input: &[u8], limit: usize) -> Option<Vec<u8>> {
    let (out, after) = inflate_deflate_body(input, limit)?;
    (after.len() < 4).then_some(out)
}

/// The stored and the computed adler32 when a zlib stream inflates whole
/// but its checksum is wrong, which flate2 reports only as "corrupt" (and
/// the engine's zlib refuses as "incorrect data check"). Inflates the raw
/// deflate data again: only on the error path, and never more than `limit`
/// bytes.
fn checksum_mismatch(input: &[u8], limit: usize) -> Option<(u32, u32)> {
    let (out, after) = inflate_deflate_body(input, limit)?;
    let stored = u32::from_be_bytes(*after.first_chunk::<4>()?);
    let mut adler = adler2::Adler32::new();
    adler.write_slice(&out);
    (stored != adler.checksum()).then_some((stored, adler.checksum()))
}

/// Inflates the deflate data inside a zlib stream without looking at its
/// adler32 trailer: the data (at most `limit` bytes) and what follows the
/// deflate data. None for a bad header, a preset dictionary (an error of
/// its own), damaged or cut deflate data, or more than `limit` bytes.
fn inflate_deflate_body(input: &[u8], limit: usize) -> Option<(Vec<u8>, &[u8])> {
    let (&[cmf, flg], body) = (input.first_chunk::<2>()?, input.get(2..)?);
    if cmf & 0x0f != 8 || (u16::from(cmf) << 8 | u16::from(flg)) % 31 != 0 || flg & 0x20 != 0 {
        return None;
    }
    let mut d = Decompress::new(false);
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    loop {
        if out.len() == out.capacity() {
            out.reserve_exact(out.len().max(4096).min(limit.saturating_add(1) - out.len()).max(1));
        }
        let (was_in, was_out) = (d.total_in(), d.total_out());
        let status = d.decompress_vec(&body[was_in as usize..], &mut out, FlushDecompress::None).ok()?;
        if out.len() > limit {
            return None;
        }
        if status == Status::StreamEnd {
            return Some((out, &body[d.total_in() as usize..]));
        }
        if (d.total_in(), d.total_out()) == (was_in, was_out) && out.len() < out.capacity() {
            return None; // the deflate data itself is cut short
        }
    }
}

/// Deflate with zlib framing at the engine's default level (6).
#[allow(clippy::expect_used, reason = "compressing into memory fails only when memory does, which aborts anyway")]
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
/// Bytes after the frame are ignored, as the engine ignores them. At most
/// [`MAX_INFLATED`] bytes are produced, and the output never reserves more
/// than that: a frame of a few KB claiming gigabytes stops at the bound.
pub fn unzstd(blob: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let input = &blob[1..];
    if let Some(out) = unzstd_reused(input) {
        return Ok(out);
    }
    unzstd_streaming(input)
}

/// Largest body [`unzstd_reused`] tries before leaving the frame to the
/// streaming decoder (a real block body is ~17 KiB plus metadata).
const REUSED_MAX: usize = 1 << 20;

/// The fast path of [`unzstd`]: one-shot decompression of the first frame
/// with this thread's decompression context, kept between calls. Creating a
/// context per block, and the window buffer the streaming API allocates
/// for a frame without a content size (2 MiB at level 3), cost more than
/// decoding a block. None for anything unusual (no whole frame, a body over
/// [`REUSED_MAX`], any zstd error): the streaming decoder then gives the
/// result or the error, so both paths accept exactly the same blobs.
fn unzstd_reused(input: &[u8]) -> Option<Vec<u8>> {
    use std::cell::RefCell;
    thread_local! {
        static DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    }
    let frame = zstd::zstd_safe::find_frame_compressed_size(input).ok()?;
    let frame = input.get(..frame)?;
    DCTX.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().ok()?);
        }
        let dctx = slot.as_mut()?;
        let mut cap = 64 << 10;
        loop {
            let mut out = Vec::with_capacity(cap);
            match dctx.decompress_to_buffer(frame, &mut out) {
                Ok(_) => return Some(out),
                Err(_) if cap < REUSED_MAX => cap *= 4,
                Err(_) => return None,
            }
        }
    })
}

fn unzstd_streaming(input: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let err = |message: String| DecodeError { region: Region::Blob, offset: 1, message };
    let decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(|e| err(format!("bad zstd frame: {e}")))?;
    let mut decoder = decoder.single_frame();
    let mut out = Vec::with_capacity(17 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(format!("bad zstd frame: {e}"))),
        };
        if n > MAX_INFLATED - out.len() {
            return Err(err(format!("zstd frame inflates to more than {MAX_INFLATED} bytes (the block body)")));
        }
        if out.capacity() - out.len() < n {
            // Double, but never past the bound.
            out.reserve_exact(out.len().max(n).min(MAX_INFLATED - out.len()));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Compress with the streaming API at zstd's default level, like the engine:
/// the frame has no content size and no checksum.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    // (Empty input, never a block body, is the one case whose frame header
    // differs.)
    let reused = if data.is_empty() { None } else { zstd_reused(data) };
    reused.unwrap_or_else(|| zstd_streaming(data))
}

/// The streaming encoder, as the engine writes.
#[allow(clippy::expect_used, reason = "compressing into memory fails only when memory does, which aborts anyway")]
fn zstd_streaming(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = zstd::stream::write::Encoder::new(Vec::with_capacity(data.len() / 8), 3).expect("zstd encoder");
    enc.write_all(data).expect("write to Vec");
    enc.finish().expect("finish to Vec")
}

/// The fast path of [`zstd`]: this thread's compression context, kept
/// between calls (making one per block cost more than compressing a
/// block), set to write the frame the streaming encoder writes (no content
/// size, no checksum, level 3) except for the window: knowing the size, it
/// declares a window no larger than the body (32 KiB for a block) where the
/// streaming encoder declares 2 MiB, which only means less memory for
/// whoever decodes it.
fn zstd_reused(data: &[u8]) -> Option<Vec<u8>> {
    use std::cell::RefCell;
    use zstd::zstd_safe::CParameter;
    thread_local! {
        static CCTX: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    }
    CCTX.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut c = zstd::bulk::Compressor::new(3).ok()?;
            c.set_parameter(CParameter::ContentSizeFlag(false)).ok()?;
            c.set_parameter(CParameter::ChecksumFlag(false)).ok()?;
            *slot = Some(c);
        }
        slot.as_mut()?.compress(data).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reused_context_writes_what_the_streaming_encoder_writes() {
        let mut data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        // Like the node arrays of an air block: long runs of one byte (made
        // here, as the block codec is built on this one).
        let body: Vec<u8> = [vec![0u8; 8192], vec![0x0f; 4096], vec![0u8; 4096]].concat();
        for len in [20_000usize, 16_384, 100, 1] {
            data.truncate(len);
            for input in [&data[..], &body[..]] {
                let (a, b) = (zstd_reused(input).unwrap(), zstd_streaming(input));
                // The same frame header flags (no content size, no checksum,
                // not single-segment) and the same compressed blocks; only
                // the window size differs.
                assert_eq!(a[4], b[4], "{len} bytes: frame header descriptor");
                assert!(a[5] <= b[5], "{len} bytes: window");
                assert_eq!(a[6..], b[6..], "{len} bytes");
                assert_eq!(zstd::decode_all(&a[..]).unwrap(), input);
            }
        }
        assert_eq!(zstd(&[]), zstd_streaming(&[]));
    }

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
    fn a_wrong_checksum_is_named() {
        let mut a = deflate_zlib(b"some node data, some node data");
        let n = a.len();
        a[n - 1] ^= 1;
        let e = inflate_zlib(&a, 0, "node data", 0).unwrap_err();
        assert!(e.message.starts_with("bad zlib stream for node data: the checksum after the data"), "{e}");
        // A damaged header is not blamed on the checksum.
        a[1] ^= 1;
        let e = inflate_zlib(&a, 0, "node data", 0).unwrap_err();
        assert!(e.message.starts_with("bad zlib stream") && !e.message.contains("checksum"), "{e}");
    }

    #[test]
    fn a_limit_stops_inflating_one_byte_past_it() {
        let a = deflate_zlib(&[0u8; 100_000]);
        let e = inflate_zlib_limited(&a, 0, "node data", 16, 16384).unwrap_err();
        assert_eq!(e.message, "node data inflates to more than 16384 bytes");
        let (x, used) = inflate_zlib_limited(&a, 0, "x", 0, 100_000).unwrap();
        assert_eq!((x.len(), used), (100_000, a.len()));
        assert!(inflate_zlib_limited(&a, 0, "x", 0, 99_999).is_err());
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

    /// The reused context and the streaming decoder agree: on bodies that
    /// need a bigger buffer, on bodies past the fast path's limit, with
    /// bytes after the frame, and on truncated or damaged frames.
    #[test]
    fn zstd_fast_and_streaming_paths_agree() {
        let mut state = 12345u32;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (state >> 24) as u8 & 0x0f
                })
                .collect()
        };
        for len in [0, 17 * 1024, 70 * 1024, 300 * 1024, 2 << 20] {
            let body = noise(len);
            let mut blob = vec![29u8];
            blob.extend_from_slice(&zstd(&body));
            assert_eq!(unzstd(&blob).unwrap(), body, "len {len}");
            assert_eq!(unzstd_streaming(&blob[1..]).unwrap(), body, "len {len}");
            let whole = blob.len();
            blob.extend_from_slice(b"trailing bytes");
            assert_eq!(unzstd(&blob).unwrap(), body, "len {len}, trailing bytes");
            assert!(unzstd(&blob[..whole - 1]).is_err(), "len {len}, truncated");
        }
        let mut blob = vec![29u8];
        blob.extend_from_slice(&zstd(&noise(5000)));
        let last = blob.len() - 1;
        blob[last / 2] ^= 0xff;
        assert_eq!(unzstd(&blob).is_ok(), unzstd_streaming(&blob[1..]).is_ok());
    }
}
