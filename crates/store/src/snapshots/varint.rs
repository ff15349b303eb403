//! LEB128 varints and zigzag signs, for the store's compact columns.

/// Append `n` as a varint.
pub(super) fn write(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at `bytes[*at..]`, moving `at` past it (None: cut short or
/// longer than 64 bits).
pub(super) fn read(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

/// A signed number as an unsigned one, small for small magnitudes.
pub(super) fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub(super) fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn varints_and_zigzag_round_trip() {
        let mut buf = Vec::new();
        let ns = [0u64, 1, 127, 128, 300, u64::MAX];
        for n in ns {
            super::write(n, &mut buf);
        }
        let mut at = 0;
        for n in ns {
            assert_eq!(super::read(&buf, &mut at), Some(n));
        }
        assert_eq!(super::read(&buf, &mut at), None);
        assert_eq!(super::read(&[0x80], &mut 0), None);
        for n in [0i64, 1, -1, 12345, -12345, i64::MIN, i64::MAX] {
            assert_eq!(super::unzigzag(super::zigzag(n)), n);
        }
        assert_eq!(super::zigzag(-1), 1);
    }
}
