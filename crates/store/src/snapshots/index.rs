//! The block index of a snapshot, in parts: the block keys (the legacy
//! `pos` of the map) fall in parts of `PART_KEYS` consecutive keys (four
//! rows of x at one y..y+3 and z), and a row of `block_index (part, snap,
//! entries)` holds every block of one part as snapshot `snap` holds it:
//! its keys and blob ids, each the difference from the one before as a
//! varint, compressed with zstd. A part no block is in any more is a row
//! with no bytes.
//!
//! What snapshot S holds in a part is the row of the greatest `snap` <= S;
//! a snapshot writes only the parts that differ from the one before it
//! (so an unchanged world's next snapshot writes none, and 1,000 changed
//! blocks at most 1,000 rows of a few hundred bytes).

use super::varint;

/// Keys in a part: 2^14, four rows of 4096 x at one z.
pub(super) const PART_BITS: u32 = 14;
/// zstd's level for index parts (small; a higher level costs little).
const INDEX_LEVEL: i32 = 9;

/// The part of block key `key`.
pub(super) fn part_of(key: i64) -> i64 {
    key >> PART_BITS
}

/// The first key of part `part`.
pub(super) fn part_start(part: i64) -> i64 {
    part << PART_BITS
}

/// The bytes of a part holding `entries` ((key, blob id), sorted by key,
/// all in one part); none: no bytes.
pub(super) fn encode(entries: &[(i64, i64)]) -> Vec<u8> {
    if entries.is_empty() {
        return Vec::new();
    }
    let mut raw = Vec::with_capacity(entries.len() * 3 + 4);
    varint::write(entries.len() as u64, &mut raw);
    let (mut last_off, mut last_id) = (-1i64, 0i64);
    for &(key, id) in entries {
        let off = key - part_start(part_of(key));
        varint::write((off - last_off - 1) as u64, &mut raw);
        varint::write(varint::zigzag(id - last_id), &mut raw);
        (last_off, last_id) = (off, id);
    }
    // Compressing a buffer in memory fails only on allocation failure,
    // which aborts anyway; the raw bytes are a valid fallback regardless.
    let mut out = vec![b'z'];
    match zstd::bulk::compress(&raw, INDEX_LEVEL) {
        Ok(z) if z.len() < raw.len() => out.extend_from_slice(&z),
        _ => {
            out[0] = b'r';
            out.extend_from_slice(&raw);
        }
    }
    out
}

/// The entries of part `part` from its bytes (as [`encode`] wrote them).
pub(super) fn decode(part: i64, bytes: &[u8]) -> Result<Vec<(i64, i64)>, String> {
    let bad = |why: &str| format!("block index part {part} (keys from {}): {why}", part_start(part));
    let raw = match bytes.split_first() {
        None => return Ok(Vec::new()),
        Some((b'r', raw)) => std::borrow::Cow::Borrowed(raw),
        Some((b'z', z)) => std::borrow::Cow::Owned(
            zstd::bulk::decompress(z, 1 << (PART_BITS + 5)).map_err(|e| bad(&format!("unpacking: {e}")))?,
        ),
        Some((k, _)) => return Err(bad(&format!("an unknown kind of part {k}"))),
    };
    let mut at = 0;
    let n = varint::read(&raw, &mut at).ok_or_else(|| bad("cut short"))?;
    if n > 1 << PART_BITS {
        return Err(bad(&format!("{n} entries")));
    }
    let mut out = Vec::with_capacity(n as usize);
    let (mut last_off, mut last_id) = (-1i64, 0i64);
    for _ in 0..n {
        let step = varint::read(&raw, &mut at).ok_or_else(|| bad("cut short"))?;
        let dz = varint::read(&raw, &mut at).ok_or_else(|| bad("cut short"))?;
        let off = last_off.saturating_add(1).saturating_add(i64::try_from(step).unwrap_or(i64::MAX));
        if off >= 1 << PART_BITS {
            return Err(bad("a key outside the part"));
        }
        let id = last_id.wrapping_add(varint::unzigzag(dz));
        out.push((part_start(part) + off, id));
        (last_off, last_id) = (off, id);
    }
    if at != raw.len() {
        return Err(bad("bytes after its last entry"));
    }
    Ok(out)
}

/// `entries` (sorted by key) split into their parts.
pub(super) fn by_part(entries: &[(i64, i64)]) -> impl Iterator<Item = (i64, &[(i64, i64)])> {
    entries.chunk_by(|a, b| part_of(a.0) == part_of(b.0)).map(|c| (part_of(c[0].0), c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_hold_their_entries_and_refuse_bad_bytes() {
        let keys: Vec<i64> = vec![-16_777_216 - 5, -3, -1, 0, 1, 4095, 4096, 16383, 16384, 1 << 40];
        let entries: Vec<(i64, i64)> = keys.iter().enumerate().map(|(i, &k)| (k, (i as i64 * 7919) % 13 + 1)).collect();
        let mut back = Vec::new();
        for (part, es) in by_part(&entries) {
            assert!(es.iter().all(|e| part_of(e.0) == part));
            back.extend(decode(part, &encode(es)).unwrap());
        }
        assert_eq!(back, entries);
        let many: Vec<(i64, i64)> = (0..16384).map(|k| (k, k % 3 + 1)).collect();
        let bytes = encode(&many);
        assert!(bytes.len() < 200, "a repeating part compresses: {}", bytes.len());
        assert_eq!(decode(0, &bytes).unwrap(), many);
        assert_eq!(decode(5, &[]).unwrap(), []);
        assert!(decode(0, b"r\x02\x00\x01").unwrap_err().contains("cut short"));
        assert!(decode(0, b"x").unwrap_err().contains("unknown kind"));
        assert!(decode(0, b"r\x01\x80\x80\x01\x01").unwrap_err().contains("outside the part"));
        assert!(decode(0, b"z\x00\x01").is_err());
    }
}
