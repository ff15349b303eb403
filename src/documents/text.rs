//! Reading the line files of one-file kinds (`nodes`, `names`, ...): lines,
//! words (a word may be a quoted string holding spaces), whole numbers with
//! one spelling, node names. Errors carry line and column. Pure.

use super::{DocError, DocResult};
use worldfs_codec::jsonish;

/// The most lines a text file of a document may have: one per node of the
/// largest schematic, plus a margin.
pub(crate) const MAX_LINES: usize = worldfs_codec::mts::MAX_NODES + 1024;

/// The lines of a file (split on `\n`, one final newline optional); `\r`
/// and NUL are refused.
pub(crate) fn lines(text: &[u8]) -> DocResult<Vec<&[u8]>> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let count = body.iter().filter(|&&c| c == b'\n').count() + 1;
    if count > MAX_LINES {
        return Err(DocError::new(format!("{count} lines; a file here has at most {MAX_LINES}")));
    }
    let v: Vec<&[u8]> = body.split(|&c| c == b'\n').collect();
    for (i, l) in v.iter().enumerate() {
        if l.ends_with(b"\r") {
            return Err(DocError::at(i + 1, l.len(), "line ends with \\r (Windows line ending); use \\n only"));
        }
        if let Some(c) = l.iter().position(|&c| c == 0) {
            return Err(DocError::at(i + 1, c + 1, "NUL byte in a text line"));
        }
    }
    Ok(v)
}

/// Whether a line is blank or a `#` comment.
pub(crate) fn is_blank_or_comment(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.is_empty() || t.starts_with(b"#")
}

/// One word of a line: its bytes (unquoted), whether it was quoted, and
/// its 1-based column.
#[derive(Clone, Debug)]
pub(crate) struct Word {
    pub(crate) bytes: Vec<u8>,
    pub(crate) quoted: bool,
    pub(crate) column: usize,
}

/// Split a line into words separated by single spaces; a word starting
/// with `"` is a quoted string (JSON-ish escapes, as in node names of
/// block files) and may hold spaces.
pub(crate) fn words(line: &[u8], n: usize) -> DocResult<Vec<Word>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i] == b' ' {
            return Err(DocError::at(n, i + 1, "extra space"));
        }
        let start = i;
        if line[i] == b'"' {
            let (bytes, used) =
                jsonish::unquote(&line[i..], true).map_err(|e| DocError::at(n, i + e.offset + 1, e.message))?;
            i += used;
            if i < line.len() && line[i] != b' ' {
                return Err(DocError::at(n, i + 1, "text right after a quoted string (a space must follow it)"));
            }
            out.push(Word { bytes, quoted: true, column: start + 1 });
        } else {
            while i < line.len() && line[i] != b' ' {
                if line[i] == b'"' {
                    return Err(DocError::at(n, i + 1, "a quote inside a word"));
                }
                i += 1;
            }
            out.push(Word { bytes: line[start..i].to_vec(), quoted: false, column: start + 1 });
        }
        if i < line.len() {
            i += 1;
            if i == line.len() {
                return Err(DocError::at(n, i, "trailing space"));
            }
        }
    }
    Ok(out)
}

/// A whole number in `lo..=hi`, written one way (no `+`, no leading zeros,
/// no `-0`).
pub(crate) fn int(w: &Word, n: usize, what: &str, lo: i64, hi: i64) -> DocResult<i64> {
    let bad = || DocError::at(n, w.column, format!("{what} must be a whole number {lo}..{hi}, not '{}'", show(w)));
    if w.quoted {
        return Err(bad());
    }
    let s = std::str::from_utf8(&w.bytes).map_err(|_| bad())?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0";
    if !canonical {
        return Err(bad());
    }
    let v: i64 = s.parse().map_err(|_| bad())?;
    if v < lo || v > hi {
        return Err(bad());
    }
    Ok(v)
}

/// The word as the user wrote it (for messages).
pub(crate) fn show(w: &Word) -> String {
    if w.quoted {
        String::from_utf8_lossy(&jsonish::quote(&w.bytes, jsonish::HighBytes::Raw)).into_owned()
    } else {
        String::from_utf8_lossy(&w.bytes).into_owned()
    }
}

/// A node name: quoted (any bytes) or plain UTF-8 text without control
/// characters; names already in `known` are accepted as they are, new
/// ones must follow the engine's rules ([`crate::view::parse::check_node_name`]).
pub(crate) fn node_name(w: &Word, n: usize, known: &[Vec<u8>]) -> DocResult<Vec<u8>> {
    let name = w.bytes.clone();
    let err = |m: String| DocError::at(n, w.column, m);
    // A name the file already holds reads back as it is, even an empty one
    // (the engine loads such a table and places air for it).
    if name.is_empty() && !known.contains(&name) {
        return Err(err("empty node name".into()));
    }
    if !w.quoted && std::str::from_utf8(&name).is_err() {
        return Err(err("node name is not valid UTF-8; write other bytes as \\u00XX inside quotes".into()));
    }
    if name.len() > u16::MAX as usize {
        return Err(err("node name longer than 65535 bytes".into()));
    }
    if known.contains(&name) {
        return Ok(name);
    }
    crate::view::parse::check_node_name(&name).map_err(err)?;
    Ok(name)
}

/// A name as written in a line file: plain when it needs no quoting.
pub(crate) fn quote_name(name: &[u8]) -> Vec<u8> {
    crate::view::quote_text(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_numbers() {
        let ws = words(br#"1 -2 "odd name" default:stone"#, 4).unwrap();
        assert_eq!(ws.len(), 4);
        assert_eq!((ws[2].bytes.as_slice(), ws[2].quoted, ws[2].column), (&b"odd name"[..], true, 6));
        assert_eq!(int(&ws[1], 4, "y", -5, 5).unwrap(), -2);
        assert_eq!(
            int(&ws[0], 4, "y", 2, 5).unwrap_err().to_string(),
            "line 4, column 1: y must be a whole number 2..5, not '1'"
        );
        let e = words(b"1  2", 3).unwrap_err().to_string();
        assert_eq!(e, "line 3, column 3: extra space");
        assert_eq!(words(b"1 2 ", 3).unwrap_err().to_string(), "line 3, column 4: trailing space");
        let w = &words(b"007", 1).unwrap()[0];
        assert!(int(w, 1, "x", 0, 10).is_err());
        let w = &words(b"Default:Stone", 2).unwrap()[0];
        assert!(node_name(w, 2, &[]).unwrap_err().to_string().starts_with("line 2, column 1: 'Default:Stone' is not"));
        assert_eq!(node_name(w, 2, &[b"Default:Stone".to_vec()]).unwrap(), b"Default:Stone");
    }
}
