//! UTC dates for messages and the command line, without a date crate:
//! the civil-calendar conversions of Howard Hinnant's date algorithms.

use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// "2026-11-22T09:34:59Z"
pub(crate) fn format_utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A point in time from the command line, in seconds since 1970 UTC:
/// `2026-11-22`, `2026-11-22T10:30[:00][Z]` (or with a space; always UTC),
/// `@1763800000`, or an age: `90s`, `15m`, `2h`, `3d` ago.
pub(crate) fn parse_time(s: &str, now: i64) -> Result<i64, String> {
    let bad = || {
        format!(
            "'{s}' is not a time: use 2026-11-22, '2026-11-22 10:30' (UTC), @UNIXSECONDS, or an age like 15m, 2h, 3d"
        )
    };
    let s = s.trim();
    if let Some(n) = s.strip_prefix('@') {
        return n.parse().map_err(|_| bad());
    }
    if let Some(unit) = s.chars().last().filter(|c| "smhd".contains(*c))
        && let Ok(n) = s[..s.len() - 1].parse::<i64>()
    {
        let k = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => 86400,
        };
        return Ok(now - n * k);
    }
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, clock) = s.split_once(['T', ' ']).unwrap_or((s, "00:00"));
    let num = |t: &str, lo: i64, hi: i64| t.parse::<i64>().ok().filter(|v| (lo..=hi).contains(v)).ok_or_else(bad);
    let d: Vec<&str> = date.split('-').collect();
    let c: Vec<&str> = clock.split(':').collect();
    if d.len() != 3 || !(2..=3).contains(&c.len()) {
        return Err(bad());
    }
    let (y, mo, da) = (num(d[0], 1970, 9999)?, num(d[1], 1, 12)?, num(d[2], 1, 31)?);
    let (h, mi) = (num(c[0], 0, 23)?, num(c[1], 0, 59)?);
    let sec = if c.len() == 3 { num(c[2], 0, 60)? } else { 0 };
    Ok(days_from_civil(y, mo, da) * 86400 + h * 3600 + mi * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_utc() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(1_763_807_699), "2025-11-22T10:34:59Z");
        for t in [0, 951_782_400, 1_763_807_699, 4_102_444_800] {
            assert_eq!(parse_time(&format_utc(t), 0), Ok(t));
        }
        assert_eq!(parse_time("2025-11-22 10:34", 0), Ok(1_763_807_640));
        assert_eq!(parse_time("2025-11-22", 0), Ok(1_763_769_600));
        assert_eq!(parse_time("@12", 0), Ok(12));
        assert_eq!(parse_time("15m", 1000), Ok(100));
        assert_eq!(parse_time("2d", 200_000), Ok(200_000 - 172_800));
        for bad in ["", "yesterday", "2025-13-01", "2025-11-22 25:00", "12x", "2025-11"] {
            assert!(parse_time(bad, 0).is_err(), "{bad}");
        }
    }
}
