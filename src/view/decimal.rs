//! Exact decimal text for the fixed-point integers of the format
//! (seconds x1000, world units x1000...): `1500` with scale 1000 is "1.5".

/// `v / scale` written exactly, without trailing zeros. `scale` is a power
/// of ten.
pub fn format(v: i64, scale: i64) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    let s = scale as u64;
    let (int, frac) = (a / s, a % s);
    if frac == 0 {
        return format!("{sign}{int}");
    }
    let digits = scale.ilog10() as usize;
    let f = format!("{frac:0digits$}");
    format!("{sign}{int}.{}", f.trim_end_matches('0'))
}

/// Parse a decimal written by [`format`] (or any decimal with at most as many
/// fraction digits as `scale` has zeros) back to `v`. None if it is not a
/// number, has too many fraction digits, or does not fit in i32.
pub fn parse(s: &str, scale: i64) -> Option<i32> {
    let digits = scale.ilog10() as usize;
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let ok = |t: &str| t.bytes().all(|c| c.is_ascii_digit());
    if int.is_empty() || !ok(int) || !ok(frac) || frac.len() > digits || (body.contains('.') && frac.is_empty()) {
        return None;
    }
    let int: i64 = int.parse().ok()?;
    let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<digits$}").parse().ok()? };
    let v = int.checked_mul(scale)?.checked_add(frac)?;
    i32::try_from(if neg { -v } else { v }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_both_ways() {
        for (v, s) in [(1500, "1.5"), (-1500, "-1.5"), (0, "0"), (1, "0.001"), (-30, "-0.03"), (30000, "30")] {
            assert_eq!(format(v, 1000), s);
            assert_eq!(parse(s, 1000), Some(v as i32));
        }
        assert_eq!(format(125000, 10000), "12.5");
        assert_eq!(parse("1.0005", 1000), None);
        assert_eq!(parse("abc", 1000), None);
        assert_eq!(parse("1.", 1000), None);
        assert_eq!(parse("99999999", 1000), None);
        proptest::proptest!(|(v: i32)| {
            proptest::prop_assert_eq!(parse(&format(v as i64, 1000), 1000), Some(v));
            proptest::prop_assert_eq!(parse(&format(v as i64, 10000), 10000), Some(v));
        });
    }
}
