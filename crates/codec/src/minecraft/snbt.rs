//! SNBT, the game's text form of NBT (`/data get`, commands), for editing
//! tags as text. Written one compound entry per line, indented; read
//! strictly, with line and column on every error. Every tag type keeps its
//! type through text: `1b`, `2s`, `3`, `4L`, `0.5f`, `0.5d`, `"text"`,
//! `[B; 1b]`, `[I; 1]`, `[L; 1L]`. Not finite floats, which SNBT has no
//! syntax for, are written `NaNd`, `Infinityf`, `-Infinityd`.

use super::nbt::{Compound, List, Tag};

/// The text of a compound (ends with a newline).
pub fn to_snbt(c: &Compound) -> String {
    let mut s = String::new();
    write_compound(&mut s, c, 0);
    s.push('\n');
    s
}

/// One tag on one line (for short values).
pub fn tag_inline(t: &Tag) -> String {
    let mut s = String::new();
    write_tag(&mut s, t, None);
    s
}

fn indent(s: &mut String, level: usize) {
    s.extend(std::iter::repeat_n("    ", level));
}

/// A key or an unquoted string as written: bare when it has only the
/// characters SNBT allows bare, quoted otherwise.
pub fn quote_key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(bare_char) { k.to_string() } else { quote(k) }
}

fn bare_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')
}

/// `v` as a double-quoted SNBT string (quotes, backslashes and control
/// characters escaped).
pub fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => s.push_str(&format!("\\u{:04x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// `shortest`: the value's shortest text that reads back exactly (its own
/// width's `{:?}`).
fn float_text(v: f64, shortest: String, suffix: char) -> String {
    if v.is_nan() {
        format!("NaN{suffix}")
    } else if v.is_infinite() {
        format!("{}Infinity{suffix}", if v < 0.0 { "-" } else { "" })
    } else {
        format!("{shortest}{suffix}")
    }
}

fn write_compound(s: &mut String, c: &Compound, level: usize) {
    if c.0.is_empty() {
        s.push_str("{}");
        return;
    }
    s.push_str("{\n");
    for (i, (k, v)) in c.0.iter().enumerate() {
        indent(s, level + 1);
        s.push_str(&quote_key(k));
        s.push_str(": ");
        write_tag(s, v, Some(level + 1));
        if i + 1 < c.0.len() {
            s.push(',');
        }
        s.push('\n');
    }
    indent(s, level);
    s.push('}');
}

fn write_list<T>(s: &mut String, head: &str, items: &[T], one: impl Fn(&mut String, &T)) {
    s.push('[');
    s.push_str(head);
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        one(s, v);
    }
    s.push(']');
}

/// `level`: the indentation of the line it is on (None: all on one line).
fn write_tag(s: &mut String, t: &Tag, level: Option<usize>) {
    match t {
        Tag::Byte(v) => s.push_str(&format!("{v}b")),
        Tag::Short(v) => s.push_str(&format!("{v}s")),
        Tag::Int(v) => s.push_str(&v.to_string()),
        Tag::Long(v) => s.push_str(&format!("{v}L")),
        Tag::Float(v) => s.push_str(&float_text(*v as f64, format!("{v:?}"), 'f')),
        Tag::Double(v) => s.push_str(&float_text(*v, format!("{v:?}"), 'd')),
        Tag::String(v) => s.push_str(&quote(v)),
        Tag::ByteArray(v) => write_list(s, "B; ", v, |s, b| s.push_str(&format!("{b}b"))),
        Tag::IntArray(v) => write_list(s, "I; ", v, |s, b| s.push_str(&b.to_string())),
        Tag::LongArray(v) => write_list(s, "L; ", v, |s, b| s.push_str(&format!("{b}L"))),
        Tag::Compound(c) => match level {
            Some(l) => write_compound(s, c, l),
            None => {
                s.push('{');
                for (i, (k, v)) in c.0.iter().enumerate() {
                    s.push_str(if i > 0 { ", " } else { "" });
                    s.push_str(&quote_key(k));
                    s.push_str(": ");
                    write_tag(s, v, None);
                }
                s.push('}');
            }
        },
        Tag::List(l) => match level {
            Some(lv) if matches!(l.elem, 9 | 10) && !l.items.is_empty() => {
                s.push_str("[\n");
                for (i, v) in l.items.iter().enumerate() {
                    indent(s, lv + 1);
                    write_tag(s, v, Some(lv + 1));
                    s.push_str(if i + 1 < l.items.len() { ",\n" } else { "\n" });
                }
                indent(s, lv);
                s.push(']');
            }
            _ => write_list(s, "", &l.items, |s, v| write_tag(s, v, None)),
        },
    }
}

/// Read a compound's text; `line:column` on errors.
pub fn parse(text: &str) -> Result<Compound, String> {
    let mut p = Parser { s: text.as_bytes(), pos: 0, depth: 0 };
    p.skip_ws();
    let c = match p.value()? {
        Tag::Compound(c) => c,
        _ => return Err(p.error_at(0, "the text is not a compound ({...})")),
    };
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error("text after the closing }"));
    }
    Ok(c)
}

/// Read one tag's text (a whole file holding one value).
pub fn parse_tag(text: &str) -> Result<Tag, String> {
    let mut p = Parser { s: text.as_bytes(), pos: 0, depth: 0 };
    p.skip_ws();
    let t = p.value()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error("text after the value"));
    }
    Ok(t)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error_at(&self, pos: usize, msg: &str) -> String {
        let before = &self.s[..pos.min(self.s.len())];
        let line = before.iter().filter(|c| **c == b'\n').count() + 1;
        let col = pos - before.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1) + 1;
        format!("line {line}, column {col}: {msg}")
    }
    fn error(&self, msg: &str) -> String {
        self.error_at(self.pos, msg)
    }
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("'{}' expected", c as char)))
        }
    }

    fn value(&mut self) -> Result<Tag, String> {
        self.skip_ws();
        if self.depth > super::nbt::MAX_DEPTH {
            return Err(self.error("nested too deep"));
        }
        match self.peek() {
            Some(b'{') => {
                self.depth += 1;
                let c = self.compound();
                self.depth -= 1;
                c.map(Tag::Compound)
            }
            Some(b'[') => {
                self.depth += 1;
                let l = self.list();
                self.depth -= 1;
                l
            }
            Some(b'"' | b'\'') => self.quoted().map(Tag::String),
            Some(_) => self.scalar(),
            None => Err(self.error("a value expected, the text ended")),
        }
    }

    fn compound(&mut self) -> Result<Compound, String> {
        self.pos += 1;
        let mut c = Compound::default();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(c);
        }
        loop {
            self.skip_ws();
            let at = self.pos;
            let quoted = matches!(self.peek(), Some(b'"' | b'\''));
            let key = if quoted { self.quoted()? } else { self.bare() };
            if key.is_empty() && !quoted {
                return Err(self.error("a key expected"));
            }
            if c.get(&key).is_some() {
                return Err(self.error_at(at, &format!("key '{key}' twice")));
            }
            self.expect(b':')?;
            let v = self.value()?;
            c.0.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(c);
                }
                _ => return Err(self.error("',' or '}' expected")),
            }
        }
    }

    fn list(&mut self) -> Result<Tag, String> {
        let open = self.pos;
        self.pos += 1;
        let s = &self.s[self.pos..];
        let array = [b'B', b'I', b'L'].into_iter().find(|k| s.len() > 1 && s[0] == *k && s[1] == b';');
        if array.is_some() {
            self.pos += 2;
        }
        let mut items: Vec<(usize, Tag)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                let at = self.pos;
                let v = self.value()?;
                if let Some(first) = items.first()
                    && first.1.type_id() != v.type_id()
                {
                    return Err(self.error_at(at, "a list's items are all of one type"));
                }
                items.push((at, v));
                self.skip_ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.error("',' or ']' expected")),
                }
            }
        }
        match array {
            None => {
                let elem = items.first().map_or(0, |(_, v)| v.type_id());
                Ok(Tag::List(List { elem, items: items.into_iter().map(|(_, v)| v).collect() }))
            }
            Some(k) => self.array(k, items).map_err(|(at, m)| self.error_at(at.max(open), &m)),
        }
    }

    fn array(&self, kind: u8, items: Vec<(usize, Tag)>) -> Result<Tag, (usize, String)> {
        let want = |at: usize, what: &str| (at, format!("[{}; ...] holds {what}", kind as char));
        Ok(match kind {
            b'B' => Tag::ByteArray(
                items
                    .into_iter()
                    .map(|(at, v)| if let Tag::Byte(b) = v { Ok(b) } else { Err(want(at, "bytes (1b)")) })
                    .collect::<Result<_, _>>()?,
            ),
            b'I' => Tag::IntArray(
                items
                    .into_iter()
                    .map(|(at, v)| if let Tag::Int(b) = v { Ok(b) } else { Err(want(at, "ints (1)")) })
                    .collect::<Result<_, _>>()?,
            ),
            _ => Tag::LongArray(
                items
                    .into_iter()
                    .map(|(at, v)| if let Tag::Long(b) = v { Ok(b) } else { Err(want(at, "longs (1L)")) })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    fn bare(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(|c| bare_char(c as char)) {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.s[start..self.pos]).into_owned()
    }

    fn quoted(&mut self) -> Result<String, String> {
        let q = self.s[self.pos];
        let start = self.pos;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or_else(|| self.error_at(start, "a string that is not closed"))?;
            self.pos += 1;
            match c {
                b'\\' => {
                    let e = self.peek().ok_or_else(|| self.error("the text ends after \\"))?;
                    self.pos += 1;
                    match e {
                        b'\\' | b'"' | b'\'' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'u' => {
                            let hex = self.s.get(self.pos..self.pos + 4).and_then(|h| std::str::from_utf8(h).ok());
                            let ch = hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32);
                            let ch = ch.ok_or_else(|| self.error("\\u needs 4 hex digits of a character"))?;
                            self.pos += 4;
                            out.extend(ch.to_string().as_bytes());
                        }
                        _ => return Err(self.error_at(self.pos - 2, &format!("unknown escape \\{}", e as char))),
                    }
                }
                c if c == q => break,
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.error_at(start, "a string that is not UTF-8"))
    }

    fn scalar(&mut self) -> Result<Tag, String> {
        let at = self.pos;
        let word = self.bare();
        if word.is_empty() {
            return Err(self.error(&format!("unexpected '{}'", self.s[self.pos] as char)));
        }
        number(&word).ok_or_else(|| {
            self.error_at(
                at,
                &format!("'{word}' is not a number with its type (1b, 2s, 3, 4L, 0.5f, 0.5d); quote text"),
            )
        })
    }
}

/// A bare word as a number of its type; `true`/`false` are bytes.
fn number(w: &str) -> Option<Tag> {
    match w {
        "true" => return Some(Tag::Byte(1)),
        "false" => return Some(Tag::Byte(0)),
        _ => {}
    }
    let (body, suffix) = match w.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && !w.ends_with("Infinity") && !w.ends_with("NaN") => {
            (&w[..i], Some(c.to_ascii_lowercase()))
        }
        _ => (w, None),
    };
    let float = |b: &str| -> Option<f64> {
        match b {
            "NaN" => Some(f64::NAN),
            "Infinity" | "+Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ if b.bytes().any(|c| c.is_ascii_digit()) => b.parse().ok(),
            _ => None,
        }
    };
    let int_like = !body.is_empty() && body.trim_start_matches(['-', '+']).bytes().all(|c| c.is_ascii_digit());
    match suffix {
        Some('b') => body.parse().ok().map(Tag::Byte),
        Some('s') => body.parse().ok().map(Tag::Short),
        Some('l') => body.parse().ok().map(Tag::Long),
        // Read as f32 itself: through f64 a value could round twice.
        Some('f') => match float(body) {
            Some(v) if !v.is_finite() => Some(Tag::Float(v as f32)),
            Some(_) => body.parse::<f32>().ok().map(Tag::Float),
            None => None,
        },
        Some('d') => float(body).map(Tag::Double),
        Some(_) => None,
        None if int_like => body.parse().ok().map(Tag::Int),
        None => float(body).map(Tag::Double),
    }
}

/// Give empty lists of `new` the element type the same list had in `old`
/// (text cannot say which type an empty list is), so that a file written
/// back unchanged gives back exactly the old tags.
pub fn keep_empty_list_types(new: &mut Tag, old: &Tag) {
    match (new, old) {
        (Tag::List(n), Tag::List(o)) => {
            if n.items.is_empty() && o.items.is_empty() {
                n.elem = o.elem;
            }
            for (a, b) in n.items.iter_mut().zip(&o.items) {
                keep_empty_list_types(a, b);
            }
        }
        (Tag::Compound(n), Tag::Compound(o)) => keep_compound_list_types(n, o),
        _ => {}
    }
}

/// [`keep_empty_list_types`] for every entry of `new` that `old` also has.
pub fn keep_compound_list_types(new: &mut Compound, old: &Compound) {
    for (k, v) in new.0.iter_mut() {
        if let Some(o) = old.get(k) {
            keep_empty_list_types(v, o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Compound {
        let inner =
            Compound(vec![("id".into(), Tag::String("minecraft:stone".into())), ("Count".into(), Tag::Byte(3))]);
        Compound(vec![
            ("b".into(), Tag::Byte(-3)),
            ("s".into(), Tag::Short(300)),
            ("i".into(), Tag::Int(-7)),
            ("l".into(), Tag::Long(i64::MAX)),
            ("f".into(), Tag::Float(0.1)),
            ("d".into(), Tag::Double(1e300)),
            ("inf".into(), Tag::Float(f32::NEG_INFINITY)),
            ("str ange\"".into(), Tag::String("a \"q\" \\ \n é".into())),
            ("ba".into(), Tag::ByteArray(vec![1, -1])),
            ("ia".into(), Tag::IntArray(vec![])),
            ("la".into(), Tag::LongArray(vec![-5])),
            (
                "items".into(),
                Tag::List(List { elem: 10, items: vec![Tag::Compound(inner.clone()), Tag::Compound(inner)] }),
            ),
            (
                "nested".into(),
                Tag::List(List { elem: 9, items: vec![Tag::List(List { elem: 3, items: vec![Tag::Int(1)] })] }),
            ),
            ("empty".into(), Tag::Compound(Compound::default())),
        ])
    }

    #[test]
    fn text_round_trip_keeps_every_type() {
        let text = to_snbt(&sample());
        assert_eq!(parse(&text).unwrap(), sample(), "{text}");
        assert!(text.contains("    b: -3b,\n") && text.contains("f: 0.1f,"), "{text}");
    }

    #[test]
    fn bad_text_says_where() {
        assert_eq!(
            parse("{a: 1,\n b: x}").unwrap_err(),
            "line 2, column 5: 'x' is not a number with its type (1b, 2s, 3, 4L, 0.5f, 0.5d); quote text"
        );
        assert!(parse("{a: [1, 2b]}").unwrap_err().contains("one type"));
        assert!(parse("{a: 1, a: 2}").unwrap_err().contains("twice"));
        assert!(parse("{a: 300b}").is_err());
        assert!(parse("{a: [B; 1, 2]}").unwrap_err().contains("bytes"));
        assert!(parse("{a: \"open}").unwrap_err().contains("not closed"));
        assert!(parse("{a: 1} x").unwrap_err().contains("after"));
        assert!(parse("[1]").unwrap_err().contains("not a compound"));
    }

    #[test]
    fn empty_lists_keep_their_old_type() {
        let old = Compound(vec![("e".into(), Tag::List(List { elem: 10, items: vec![] }))]);
        let mut new = parse(&to_snbt(&old)).unwrap();
        assert_ne!(new, old);
        keep_compound_list_types(&mut new, &old);
        assert_eq!(new, old);
    }
}
