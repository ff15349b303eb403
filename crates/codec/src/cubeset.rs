//! A strict reader for the Lua subset cubesets are written in: assignments
//! `Name = value` at the top level, table constructors, strings, numbers,
//! booleans, nil and comments. Nothing is executed; anything outside the
//! subset (a function call, an operator, a variable) is an error with its
//! line and column. Every value keeps the byte range it was read from, so
//! that an edit can replace one part of a file and keep every other byte.

use crate::error::DocError;
use crate::lua_escape::{Dialect::Lua51, escape};

/// A value of the Lua subset.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A table constructor `{ ... }`.
    Table(Table),
    /// A string literal (quoted or long-bracket), escapes decoded.
    Str(String),
    /// A number, with its text as written.
    Num(f64, String),
    /// `true` or `false`.
    Bool(bool),
    /// `nil`.
    Nil,
}

/// How a table field is keyed.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// `{ a, b }`: the 1-based position.
    Pos(usize),
    /// `name = v`
    Name(String),
    /// `["text"] = v` (or another literal key, as text).
    Expr(String),
}

impl Key {
    /// The key as text: the position's number, or the name or key text.
    pub fn text(&self) -> String {
        match self {
            Key::Pos(i) => i.to_string(),
            Key::Name(n) | Key::Expr(n) => n.clone(),
        }
    }
}

/// One field of a table, or one top-level assignment.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// `name =`, `[literal] =`, or its position among the positional fields.
    pub key: Key,
    /// What the field holds.
    pub value: Value,
    /// Bytes of the value.
    pub span: (usize, usize),
}

/// A table constructor, `{ ... }`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Table {
    /// Its fields, in the order written.
    pub fields: Vec<Field>,
}

impl Table {
    /// The field keyed `name` (as `name = v` or `["name"] = v`), if any.
    pub fn get(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| matches!(&f.key, Key::Name(n) | Key::Expr(n) if n == name))
    }
    /// The positional fields (`{ a, b }`), in order.
    pub fn positional(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| matches!(f.key, Key::Pos(_)))
    }
}

/// The top-level assignments of a file: name, value and its byte range.
pub fn parse_chunk(src: &str) -> Result<Vec<(String, Field)>, DocError> {
    let mut p = Parser { s: src.as_bytes(), src, pos: 0 };
    let mut out = Vec::new();
    loop {
        p.skip_space()?;
        if p.pos >= p.s.len() {
            return Ok(out);
        }
        if p.peek() == Some(b';') {
            p.pos += 1;
            continue;
        }
        let name = p.name().ok_or_else(|| p.err("expected 'Name = value' (only assignments are allowed)"))?;
        p.skip_space()?;
        p.expect(b'=')?;
        let (value, span) = p.value()?;
        out.push((name.clone(), Field { key: Key::Name(name), value, span }));
    }
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, m: impl Into<String>) -> DocError {
        let before = &self.src[..self.pos.min(self.src.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        DocError::at(line, col, m)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_space(&mut self) -> Result<(), DocError> {
        loop {
            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                self.pos += 1;
            }
            if self.s[self.pos..].starts_with(b"--") {
                self.pos += 2;
                if let Some(level) = self.long_bracket_level() {
                    self.long_bracket_body(level)?;
                } else {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                continue;
            }
            return Ok(());
        }
    }

    /// At `[` `=`* `[`: the number of `=`, consuming the opening bracket.
    fn long_bracket_level(&mut self) -> Option<usize> {
        if self.peek() != Some(b'[') {
            return None;
        }
        let mut i = self.pos + 1;
        while self.s.get(i) == Some(&b'=') {
            i += 1;
        }
        if self.s.get(i) == Some(&b'[') {
            let level = i - self.pos - 1;
            self.pos = i + 1;
            Some(level)
        } else {
            None
        }
    }

    fn long_bracket_body(&mut self, level: usize) -> Result<String, DocError> {
        let close = format!("]{}]", "=".repeat(level));
        let start = self.pos;
        let at = self.src[start..].find(&close).ok_or_else(|| self.err("long bracket never closed"))?;
        self.pos = start + at + close.len();
        let body = &self.src[start..start + at];
        // A newline right after the opening bracket is skipped, as Lua does.
        Ok(body.strip_prefix("\r\n").or_else(|| body.strip_prefix('\n')).unwrap_or(body).to_string())
    }

    fn expect(&mut self, c: u8) -> Result<(), DocError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!("expected '{}'", c as char)))
        }
    }

    fn name(&mut self) -> Option<String> {
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.pos += 1;
        }
        Some(self.src[start..self.pos].to_string())
    }

    fn value(&mut self) -> Result<(Value, (usize, usize)), DocError> {
        self.skip_space()?;
        let start = self.pos;
        let v = match self.peek() {
            Some(b'{') => Value::Table(self.table()?),
            Some(b'"' | b'\'') => Value::Str(self.string()?),
            Some(b'[') => match self.long_bracket_level() {
                Some(level) => Value::Str(self.long_bracket_body(level)?),
                None => return Err(self.err("unexpected '['")),
            },
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'.' => self.number()?,
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let n = self.name().ok_or_else(|| self.err("a name expected"))?;
                match n.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "nil" => Value::Nil,
                    _ => {
                        self.pos = start;
                        return Err(self.err(format!("'{n}': variables and calls are not part of a cubeset")));
                    }
                }
            }
            Some(c) => return Err(self.err(format!("unexpected '{}'", c as char))),
            None => return Err(self.err("the file ends where a value should be")),
        };
        Ok((v, (start, self.pos)))
    }

    fn number(&mut self) -> Result<Value, DocError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            self.skip_space()?;
        }
        let digits_start = self.pos;
        let hex = self.s[self.pos..].starts_with(b"0x") || self.s[self.pos..].starts_with(b"0X");
        if hex {
            self.pos += 2;
        }
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric()
                || c == b'.'
                || ((c == b'-' || c == b'+') && !hex && matches!(self.s[self.pos - 1], b'e' | b'E'))
        }) {
            self.pos += 1;
        }
        let body = &self.src[digits_start..self.pos];
        let neg = self.src[start..digits_start].starts_with('-');
        let v = if hex {
            i64::from_str_radix(&body[2..], 16).map(|v| v as f64).ok()
        } else {
            body.parse::<f64>().ok().filter(|_| !body.is_empty() && !body.starts_with(['e', 'E']))
        };
        let v = v.ok_or_else(|| {
            self.pos = digits_start;
            self.err(format!("'{body}' is not a number"))
        })?;
        Ok(Value::Num(if neg { -v } else { v }, self.src[start..self.pos].to_string()))
    }

    fn string(&mut self) -> Result<String, DocError> {
        let q = self.peek().ok_or_else(|| self.err("a string expected"))?;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else { return Err(self.err("string never closed")) };
            self.pos += 1;
            match c {
                _ if c == q => break,
                b'\n' => return Err(self.err("line break inside a string")),
                b'\\' => {
                    let (b, used) = escape(self.s, self.pos, Lua51).map_err(|m| self.err(m))?;
                    out.push(b);
                    self.pos += used;
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string that is not UTF-8 text"))
    }

    fn table(&mut self) -> Result<Table, DocError> {
        self.expect(b'{')?;
        let mut t = Table::default();
        let mut next = 1;
        loop {
            self.skip_space()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(t);
                }
                None => return Err(self.err("table never closed")),
                _ => {}
            }
            let save = self.pos;
            let key = if self.peek() == Some(b'[')
                && self.s.get(self.pos + 1) != Some(&b'[')
                && self.s.get(self.pos + 1) != Some(&b'=')
            {
                self.pos += 1;
                let (k, _) = self.value()?;
                self.skip_space()?;
                self.expect(b']')?;
                self.skip_space()?;
                self.expect(b'=')?;
                Some(Key::Expr(match k {
                    Value::Str(s) => s,
                    Value::Num(_, text) => text,
                    _ => return Err(self.err("table keys here are strings or numbers")),
                }))
            } else if let Some(n) = self.name() {
                self.skip_space()?;
                if self.peek() == Some(b'=') && self.s.get(self.pos + 1) != Some(&b'=') {
                    self.pos += 1;
                    Some(Key::Name(n))
                } else {
                    self.pos = save;
                    None
                }
            } else {
                None
            };
            let key = key.unwrap_or_else(|| {
                let k = Key::Pos(next);
                next += 1;
                k
            });
            let (value, span) = self.value()?;
            t.fields.push(Field { key, value, span });
            self.skip_space()?;
            match self.peek() {
                Some(b',' | b';') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.err("expected ',' or '}' after a table field")),
            }
        }
    }
}

/// A Lua string literal for `s` (always decodes back to `s`).
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\{:03}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset() {
        let src = "-- c\n--[[ long\n comment ]]\nA = { x = 1, [\"b c\"] = 'q\\n', -2.5, { }, true, nil, 0x10, [[raw]] ; }\nB = \"x\"";
        let c = parse_chunk(src).unwrap();
        assert_eq!(c.len(), 2);
        let Value::Table(t) = &c[0].1.value else { panic!() };
        assert_eq!(t.get("x").unwrap().value, Value::Num(1.0, "1".into()));
        assert_eq!(t.get("b c").unwrap().value, Value::Str("q\n".into()));
        let pos: Vec<&Value> = t.positional().map(|f| &f.value).collect();
        assert_eq!(pos[0], &Value::Num(-2.5, "-2.5".into()));
        assert_eq!(pos[4], &Value::Num(16.0, "0x10".into()));
        assert_eq!(pos[5], &Value::Str("raw".into()));
        let (a, b) = c[1].1.span;
        assert_eq!(&src[a..b], "\"x\"");
        for bad in ["A = f()", "A = {1 2}", "A = x", "A = \"open", "A = {", "print(1)", "A = 1 + 2"] {
            let e = parse_chunk(bad).unwrap_err();
            assert!(e.line.is_some() && e.column.is_some(), "{bad}: {e}");
        }
        assert_eq!(quote("a\"b\\\n\u{1}5"), "\"a\\\"b\\\\\\n\\0015\"");
    }
}
