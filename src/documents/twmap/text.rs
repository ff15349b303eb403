//! The `key = value` text files of a map (`info`, `group`, layer `info`):
//! reading them with line and column in every error, and writing values.
//!
//! Lines are `key = value`; blank lines and lines starting with `#` are
//! ignored; a key may appear once; keys left out keep their value. Text
//! values are written as they are, or JSON-ish quoted (`"..."` with `\"`,
//! `\\`, `\n`, `\t`, `\u00XX` for one byte) when they are empty, start or
//! end with a space, start with `"` or `#`, or hold control bytes or bytes
//! that are not UTF-8.

use crate::documents::{DocError, DocResult};
use worldfs_codec::jsonish::{self, HighBytes};

/// One `key = value` line.
#[derive(Clone, Debug)]
pub(crate) struct Pair<'a> {
    pub(crate) line: usize,
    /// 1-based column where the value starts.
    pub(crate) col: usize,
    pub(crate) key: &'static str,
    pub(crate) value: &'a [u8],
}

/// The pairs of a file, and the lines after a `[section]` line (with their
/// line numbers) when `section` is given and present.
pub(crate) struct Parsed<'a> {
    pub(crate) pairs: Vec<Pair<'a>>,
    pub(crate) section: Option<Vec<(usize, &'a [u8])>>,
}

impl<'a> Parsed<'a> {
    pub(crate) fn get(&self, key: &str) -> Option<&Pair<'a>> {
        self.pairs.iter().find(|p| p.key == key)
    }
}

pub(crate) fn parse<'a>(content: &'a [u8], keys: &[&'static str], section: Option<&str>) -> DocResult<Parsed<'a>> {
    let mut pairs: Vec<Pair> = Vec::new();
    let lines: Vec<&[u8]> = content.strip_suffix(b"\n").unwrap_or(content).split(|&c| c == b'\n').collect();
    for (n, raw) in lines.iter().enumerate() {
        let line_no = n + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            continue;
        }
        if let Some(s) = section
            && trimmed == format!("[{s}]").as_bytes()
        {
            let rest = lines[n + 1..]
                .iter()
                .enumerate()
                .map(|(k, l)| (line_no + 1 + k, l.strip_suffix(b"\r").unwrap_or(l)))
                .collect();
            return Ok(Parsed { pairs, section: Some(rest) });
        }
        let Some(eq) = line.iter().position(|&c| c == b'=') else {
            let indent = line.len() - line.trim_ascii_start().len();
            return Err(DocError::at(line_no, indent + 1, "expected `key = value`"));
        };
        let key_bytes = line[..eq].trim_ascii();
        let key_col = line.len() - line.trim_ascii_start().len() + 1;
        let Some(key) = keys.iter().find(|k| k.as_bytes() == key_bytes) else {
            let extra = section.map(|s| format!(", or a [{s}] line")).unwrap_or_default();
            return Err(DocError::at(
                line_no,
                key_col,
                format!("unknown key {:?} (known: {}{extra})", String::from_utf8_lossy(key_bytes), keys.join(", ")),
            ));
        };
        if pairs.iter().any(|p| p.key == *key) {
            return Err(DocError::at(line_no, key_col, format!("{key} is given twice")));
        }
        let after = &line[eq + 1..];
        let lead = after.len() - after.trim_ascii_start().len();
        pairs.push(Pair { line: line_no, col: eq + 2 + lead, key, value: after.trim_ascii() });
    }
    Ok(Parsed { pairs, section: None })
}

impl Pair<'_> {
    fn err(&self, message: impl Into<String>) -> DocError {
        DocError::at(self.line, self.col, message)
    }

    pub(crate) fn int(&self, min: i64, max: i64) -> DocResult<i32> {
        parse_int(self.value, min, max).map_err(|m| self.err(format!("{}: {m}", self.key)))
    }

    /// `n` integers separated by spaces.
    pub(crate) fn ints(&self, n: usize, min: i64, max: i64) -> DocResult<Vec<i32>> {
        let words: Vec<&[u8]> = self.value.split(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty()).collect();
        if words.len() != n {
            return Err(self.err(format!("{}: expected {n} numbers, found {}", self.key, words.len())));
        }
        words.iter().map(|w| parse_int(w, min, max).map_err(|m| self.err(format!("{}: {m}", self.key)))).collect()
    }

    pub(crate) fn text(&self) -> DocResult<Vec<u8>> {
        unquote_value(self.value)
            .map_err(|(off, m)| DocError::at(self.line, self.col + off, format!("{}: {m}", self.key)))
    }
}

/// A text value as written by [`quote`]: quoted, or the bytes themselves.
pub(crate) fn unquote_value(v: &[u8]) -> Result<Vec<u8>, (usize, String)> {
    if v.first() != Some(&b'"') {
        return Ok(v.to_vec());
    }
    let (s, used) = jsonish::unquote(v, true).map_err(|e| (e.offset, e.message))?;
    if !v[used..].trim_ascii().is_empty() {
        return Err((used, "text after the closing quote".into()));
    }
    Ok(s)
}

pub(crate) fn parse_int(w: &[u8], min: i64, max: i64) -> Result<i32, String> {
    let s = std::str::from_utf8(w).unwrap_or("");
    let ok =
        !s.is_empty() && s.bytes().enumerate().all(|(i, c)| c.is_ascii_digit() || (i == 0 && c == b'-' && s.len() > 1));
    let v: i64 = match ok.then(|| s.parse::<i64>()) {
        Some(Ok(v)) => v,
        _ => return Err(format!("{:?} is not a number", String::from_utf8_lossy(w))),
    };
    if v < min || v > max {
        return Err(format!("{v} is outside {min}..={max}"));
    }
    Ok(v as i32)
}

/// Whether a text value must be quoted to read back the same.
pub(crate) fn needs_quotes(s: &[u8]) -> bool {
    s.is_empty()
        || s[0] == b'"'
        || s[0] == b'#'
        || s[0].is_ascii_whitespace()
        || s[s.len() - 1].is_ascii_whitespace()
        || s.iter().any(|&c| c < 0x20 || c == 0x7f)
        || std::str::from_utf8(s).is_err()
}

pub(crate) fn quote(s: &[u8]) -> Vec<u8> {
    if !needs_quotes(s) {
        return s.to_vec();
    }
    quote_always(s)
}

pub(crate) fn quote_always(s: &[u8]) -> Vec<u8> {
    let high = if std::str::from_utf8(s).is_ok() { HighBytes::Raw } else { HighBytes::Escaped };
    jsonish::quote(s, high)
}

/// Append `key = value\n`.
pub(crate) fn line(out: &mut Vec<u8>, key: &str, value: impl AsRef<[u8]>) {
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b" = ");
    out.extend_from_slice(value.as_ref());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_sections_and_errors() {
        let p = parse(b"# c\na = 1\n\n  b=x y \n[s]\nfoo\n\n\"q\"\n", &["a", "b"], Some("s")).unwrap();
        assert_eq!(p.get("a").unwrap().int(0, 9).unwrap(), 1);
        assert_eq!(p.get("b").unwrap().text().unwrap(), b"x y");
        assert_eq!(p.section.unwrap(), vec![(6, &b"foo"[..]), (7, b""), (8, b"\"q\"")]);
        let e = |t: &[u8]| parse(t, &["a", "b"], None).err().unwrap().to_string();
        assert_eq!(e(b"a = 1\nc = 2\n"), "line 2, column 1: unknown key \"c\" (known: a, b)");
        assert_eq!(e(b"a = 1\n  a = 2\n"), "line 2, column 3: a is given twice");
        assert_eq!(e(b"a 1\n"), "line 1, column 1: expected `key = value`");
        let p = parse(b"a = 1x\nb = \"x\" y\n", &["a", "b"], None).unwrap();
        assert_eq!(
            p.get("a").unwrap().int(0, 9).unwrap_err().to_string(),
            "line 1, column 5: a: \"1x\" is not a number"
        );
        assert_eq!(
            p.get("b").unwrap().text().unwrap_err().to_string(),
            "line 2, column 8: b: text after the closing quote"
        );
        let p = parse(b"a = 1 2 x\n", &["a"], None).unwrap();
        assert_eq!(
            p.get("a").unwrap().ints(3, 0, 9).unwrap_err().to_string(),
            "line 1, column 5: a: \"x\" is not a number"
        );
        assert_eq!(
            p.get("a").unwrap().ints(2, 0, 9).unwrap_err().to_string(),
            "line 1, column 5: a: expected 2 numbers, found 3"
        );
    }

    proptest::proptest! {
        #[test]
        fn quoted_text_reads_back(s in proptest::collection::vec(proptest::num::u8::ANY, 0..30)) {
            let q = quote(&s);
            proptest::prop_assert!(!q.contains(&b'\n'));
            let line = [b"a = ".as_slice(), &q, b"\n"].concat();
            let p = parse(&line, &["a"], None).unwrap();
            proptest::prop_assert_eq!(p.get("a").unwrap().text().unwrap(), s);
        }
    }
}
