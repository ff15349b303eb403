//! The engine's "JSON-ish" string quoting used in itemstrings.
//!
//! It is not JSON: `\uXXXX` stands for ONE byte (the low 8 bits of the
//! value), any other escaped character stands for itself, and strings are
//! byte strings. Servers up to 5.15 write every byte >= 0x80 as `\u00XX`,
//! 5.16 and later write it raw; both are read back to the same bytes.

/// Whether `s` must be quoted: any control byte, space, quote, DEL or
/// non-ASCII byte. (A backslash alone does not force quoting.)
pub fn needs_quoting(s: &[u8]) -> bool {
    s.iter().any(|&c| c <= 0x1f || c >= 0x7f || c == b' ' || c == b'"')
}

/// How bytes >= 0x80 are written inside quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HighBytes {
    /// Raw bytes (the >= 5.16 writer; readable by every version).
    Raw,
    /// `\u00XX` per byte (the <= 5.15 writer).
    Escaped,
}

/// Quote `s` the way the engine's writer does.
pub fn quote(s: &[u8], high: HighBytes) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x20..=0x7e => out.push(c),
            0x80..=0xff if high == HighBytes::Raw => out.push(c),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
    }
    out.push(b'"');
    out
}

/// Quote only when needed, otherwise return `s` unchanged.
pub fn quote_if_needed(s: &[u8], high: HighBytes) -> Vec<u8> {
    if needs_quoting(s) { quote(s, high) } else { s.to_vec() }
}

/// Why a quoted string could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuoteError {
    /// Byte offset in the input where the problem is.
    pub offset: usize,
    /// What is wrong there.
    pub message: String,
}

/// Read a quoted string at the start of `s` (which must begin with `"`).
/// Returns the decoded bytes and how many input bytes were used.
///
/// `strict` refuses what the engine reads leniently but a user almost
/// certainly did not mean: invalid hex digits in `\u`, escapes other than
/// the ones the writer produces, and `\u` values above 0xFF (which the engine
/// silently cuts to their low byte).
pub fn unquote(s: &[u8], strict: bool) -> Result<(Vec<u8>, usize), QuoteError> {
    let err = |offset: usize, m: &str| QuoteError { offset, message: m.to_string() };
    if s.first() != Some(&b'"') {
        return Err(err(0, "a quoted string must start with \""));
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        let Some(&c) = s.get(i) else {
            return Err(err(i, "quoted string has no closing \""));
        };
        i += 1;
        match c {
            b'"' => return Ok((out, i)),
            b'\\' => {
                let Some(&e) = s.get(i) else {
                    return Err(err(i, "quoted string ends inside an escape"));
                };
                i += 1;
                match e {
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => {
                        let Some(hex) = s.get(i..i + 4) else {
                            return Err(err(i - 2, "\\u needs four hex digits"));
                        };
                        let mut v: u32 = 0;
                        for &h in hex {
                            let d = (h as char).to_digit(16);
                            if d.is_none() && strict {
                                return Err(err(i - 2, "\\u needs four hex digits"));
                            }
                            v = (v << 4) | d.unwrap_or(0);
                        }
                        if strict && v > 0xff {
                            return Err(err(
                                i - 2,
                                "\\u escapes stand for one byte here (\\u0000-\\u00ff); \
                                 write other characters as raw UTF-8",
                            ));
                        }
                        out.push(v as u8);
                        i += 4;
                    }
                    b'"' | b'\\' | b'/' => out.push(e),
                    _ if strict => {
                        return Err(err(i - 2, "unknown escape (use \\\" \\\\ \\n \\t \\uXXXX ...)"));
                    }
                    _ => out.push(e),
                }
            }
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_rules_match_the_engine() {
        assert_eq!(quote_if_needed(b"abc", HighBytes::Raw), b"abc");
        assert_eq!(quote_if_needed(b"x y z", HighBytes::Raw), b"\"x y z\"");
        assert_eq!(quote_if_needed(b"\"", HighBytes::Raw), b"\"\\\"\"");
        assert_eq!(quote_if_needed(b"a\\b", HighBytes::Raw), b"a\\b");
        assert_eq!(quote(b"\x01\x7f", HighBytes::Raw), b"\"\\u0001\\u007f\"");
        let g = "Grüße".as_bytes();
        assert_eq!(quote(g, HighBytes::Escaped), b"\"Gr\\u00c3\\u00bc\\u00c3\\u009fe\"");
        assert_eq!(quote(g, HighBytes::Raw), [b"\"", g, b"\""].concat());
    }

    #[test]
    fn unquote_reads_both_styles_to_the_same_bytes() {
        let g = "Grüße \"q\"\n".as_bytes();
        for style in [HighBytes::Raw, HighBytes::Escaped] {
            let q = quote(g, style);
            let (back, used) = unquote(&q, true).unwrap();
            assert_eq!(back, g);
            assert_eq!(used, q.len());
        }
    }

    #[test]
    fn all_bytes_round_trip() {
        let all: Vec<u8> = (0..=255u8).collect();
        for style in [HighBytes::Raw, HighBytes::Escaped] {
            assert_eq!(unquote(&quote(&all, style), true).unwrap().0, all);
        }
    }

    #[test]
    fn lenient_and_strict_reading() {
        assert_eq!(unquote(b"\"\\u0141\"", false).unwrap().0, vec![0x41]);
        assert!(unquote(b"\"\\u0141\"", true).is_err());
        assert_eq!(unquote(b"\"\\q\"", false).unwrap().0, b"q");
        assert!(unquote(b"\"\\q\"", true).is_err());
        assert!(unquote(b"\"abc", false).is_err());
        assert_eq!(unquote(b"\"a\"rest", false).unwrap(), (b"a".to_vec(), 3));
    }
}
