//! What turns a rewritten file back into the file it was, byte for byte:
//! the old length and the old bytes of each stretch that differs (in
//! blocks of [`BLOCK`] bytes). Journaled beside a change of a Minecraft
//! region file, whose rewrite keeps every byte it need not change, it
//! holds a few header bytes and the changed chunk's old sectors rather
//! than the whole file.
//!
//! Layout: `WFP1`, the old length (u64), then runs of (offset u64,
//! length u32, the old bytes), big-endian; runs in ascending order, not
//! overlapping, inside the old length. Pure.

/// The unit of comparison: header entries are 4 bytes, sectors 4096.
pub const BLOCK: usize = 64;

const MAGIC: &[u8; 4] = b"WFP1";

/// The patch that turns `new` back into `old`.
pub fn diff(old: &[u8], new: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend((old.len() as u64).to_be_bytes());
    let differs = |k: usize| {
        let (start, end) = (k * BLOCK, ((k + 1) * BLOCK).min(old.len()));
        new.get(start..end) != Some(&old[start..end])
    };
    let blocks = old.len().div_ceil(BLOCK);
    let mut k = 0;
    while k < blocks {
        if !differs(k) {
            k += 1;
            continue;
        }
        let first = k;
        while k < blocks && differs(k) {
            k += 1;
        }
        let (start, end) = (first * BLOCK, (k * BLOCK).min(old.len()));
        out.extend((start as u64).to_be_bytes());
        out.extend(((end - start) as u32).to_be_bytes());
        out.extend(&old[start..end]);
    }
    out
}

/// `new` turned back by `patch` (made by [`diff`] from the old bytes and
/// `new`). A patch that is not one is refused, naming where.
pub fn apply(patch: &[u8], new: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |what: &str| format!("not a file patch: {what}");
    if patch.get(..4) != Some(&MAGIC[..]) {
        return Err(bad("no WFP1 magic"));
    }
    let mut at = 4;
    let len = usize::try_from(u64::from_be_bytes(take(patch, &mut at)?)).map_err(|_| bad("a length past memory"))?;
    if len > new.len().saturating_add(patch.len()) {
        return Err(bad(&format!("an old length of {len} bytes that its runs cannot fill")));
    }
    let mut out = new[..new.len().min(len)].to_vec();
    out.resize(len, 0);
    let mut done = 0;
    while at < patch.len() {
        let start = u64::from_be_bytes(take(patch, &mut at)?);
        let n = u32::from_be_bytes(take(patch, &mut at)?) as usize;
        let bytes = patch.get(at..at.saturating_add(n)).ok_or_else(|| bad(&format!("cut short at byte {at}")))?;
        at += n;
        let start = usize::try_from(start).ok().filter(|s| *s >= done && s.saturating_add(n) <= len);
        let start = start.ok_or_else(|| bad("a run outside the old length or before the one it follows"))?;
        out[start..start + n].copy_from_slice(bytes);
        done = start + n;
    }
    Ok(out)
}

/// The next `N` bytes of `patch` at `at`, which moves past them.
fn take<const N: usize>(patch: &[u8], at: &mut usize) -> Result<[u8; N], String> {
    let s = patch.get(*at..).and_then(|rest| rest.first_chunk::<N>());
    let s = s.ok_or_else(|| format!("not a file patch: cut short at byte {at}"))?;
    *at += N;
    Ok(*s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_gives_the_old_bytes_back() {
        let old: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut grown = old.clone();
        grown[5] ^= 1;
        grown[4096..4200].fill(9);
        grown.extend([1; 5000]);
        let shrunk = old[..3000].to_vec();
        for new in [&old, &grown, &shrunk, &Vec::new()] {
            let p = diff(&old, new);
            assert_eq!(apply(&p, new).unwrap(), old);
        }
        // Only what differs is kept: two runs of one block and two blocks.
        assert_eq!(diff(&old, &grown).len(), 12 + (12 + BLOCK) + (12 + 2 * BLOCK));
        assert_eq!(diff(&old, &old).len(), 12);
    }

    #[test]
    fn what_is_no_patch_is_refused() {
        let p = diff(b"abcdef", b"abXdef");
        assert!(apply(&p[..p.len() - 1], b"abXdef").unwrap_err().contains("cut short"));
        assert!(apply(b"WFP0", b"").unwrap_err().contains("magic"));
        let mut huge = MAGIC.to_vec();
        huge.extend(u64::MAX.to_be_bytes());
        assert!(apply(&huge, b"").is_err());
        let mut outside = MAGIC.to_vec();
        outside.extend(4u64.to_be_bytes());
        outside.extend(3u64.to_be_bytes());
        outside.extend(2u32.to_be_bytes());
        outside.extend(b"zz");
        assert!(apply(&outside, b"abcd").unwrap_err().contains("outside"));
    }
}
