//! The subset of Lua that WorldEdit files are written in, read without
//! running Lua: what `minetest.serialize` writes (a `return` of nested table
//! constructors, with `local _={};_[N]=...;` references for values used
//! more than once, and `0/0`, `1/0`, `-1/0`), and the old `table.save`
//! format (`-- Table: {N}` comments). Anything else (calls, operators,
//! variables other than `_`, `inf` and `nan`) is refused with its line and
//! column. Also the writer of Lua string literals. Pure.

use crate::lua_escape::{Dialect::Lua52, escape};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A Lua value. Tables keep their fields in written order; a positional
/// field gets the next integer key, as in Lua.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool(bool),
    /// A number (`0/0`, `1/0` and `-1/0` read as NaN and the infinities).
    Num(f64),
    /// A string, escapes decoded (any bytes).
    Str(Vec<u8>),
    /// A table constructor.
    Table(Table),
}

/// A table: its fields as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// (key, value) pairs in written order, repeated keys included.
    pub fields: Vec<(Value, Value)>,
}

impl Table {
    /// The value of a key as Lua sees it (the last assignment wins).
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.fields.iter().rev().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v).filter(|v| **v != Value::Nil)
    }

    /// The value of string key `key` (see [`Table::get`]).
    pub fn get_str(&self, key: &str) -> Option<&Value> {
        self.get(&Value::Str(key.as_bytes().to_vec()))
    }

    /// `t[1], t[2], ...` up to the first nil (Lua's `ipairs`).
    pub fn list(&self) -> Vec<&Value> {
        let mut out = Vec::new();
        while let Some(v) = self.get(&Value::Num((out.len() + 1) as f64)) {
            out.push(v);
        }
        out
    }

    /// Fields in Lua's "last assignment wins" sense, in first-written order.
    pub fn pairs(&self) -> Vec<(&Value, &Value)> {
        let mut out: Vec<(&Value, &Value)> = Vec::new();
        for (k, v) in &self.fields {
            if let Some(slot) = out.iter_mut().find(|(ok, _)| key_eq(ok, k)) {
                slot.1 = v;
            } else {
                out.push((k, v));
            }
        }
        out.retain(|(_, v)| **v != Value::Nil);
        out
    }
}

fn key_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    }
}

/// Why a file could not be read, with its 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LuaError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for LuaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// Deepest nesting of tables accepted (WorldEdit data nests 4 deep).
pub const MAX_DEPTH: usize = 64;
/// The most `_[N]` references a file may declare.
pub const MAX_REFS: usize = 1 << 20;

/// A value while reading: references are resolved at the end, once every
/// `_[N].k = v` statement has run.
#[derive(Clone, Debug)]
enum Raw {
    Val(Value),
    Table(Vec<(Raw, Raw)>),
    Ref(usize, usize), // (N, byte offset of the use)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// The comments read (for the `-- Table: {N}` check of old files).
    depth: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, at: usize, message: impl Into<String>) -> LuaError {
        let at = at.min(self.s.len());
        let line = self.s[..at].iter().filter(|&&c| c == b'\n').count() + 1;
        let start = self.s[..at].iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&self.s[start..at]).chars().count() + 1;
        LuaError { line, column, message: message.into() }
    }

    fn skip_space(&mut self) -> Result<(), LuaError> {
        loop {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
            if self.s[self.i..].starts_with(b"--") {
                let start = self.i;
                self.i += 2;
                if let Some(level) = self.long_bracket_level() {
                    self.long_string_body(level, start)?;
                } else {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                continue;
            }
            return Ok(());
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Result<bool, LuaError> {
        self.skip_space()?;
        if self.peek() == Some(c) {
            self.i += 1;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect(&mut self, c: u8, what: &str) -> Result<(), LuaError> {
        if !self.eat(c)? {
            return Err(self.err(self.i, format!("expected {what}")));
        }
        Ok(())
    }

    fn name(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_') {
            return None;
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
        Some(&self.s[start..self.i])
    }

    /// `[[` or `[=*[` at the cursor: its level, cursor moved past it.
    fn long_bracket_level(&mut self) -> Option<usize> {
        let rest = &self.s[self.i..];
        if rest.first() != Some(&b'[') {
            return None;
        }
        let eq = rest[1..].iter().take_while(|&&c| c == b'=').count();
        if rest.get(1 + eq) != Some(&b'[') {
            return None;
        }
        self.i += eq + 2;
        Some(eq)
    }

    fn long_string_body(&mut self, level: usize, start: usize) -> Result<Vec<u8>, LuaError> {
        let close: Vec<u8> = [&b"]"[..], &vec![b'='; level], b"]"].concat();
        // A newline right after the opening bracket is skipped, as in Lua.
        if self.s[self.i..].starts_with(b"\r\n") {
            self.i += 2;
        } else if self.peek() == Some(b'\n') {
            self.i += 1;
        }
        let Some(end) = self.s[self.i..].windows(close.len()).position(|w| w == close.as_slice()) else {
            return Err(self.err(start, "long string or comment has no end"));
        };
        let body = self.s[self.i..self.i + end].to_vec();
        self.i += end + close.len();
        Ok(body)
    }

    fn string(&mut self, quote: u8) -> Result<Vec<u8>, LuaError> {
        let start = self.i;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(start, "string has no closing quote"));
            };
            self.i += 1;
            match c {
                _ if c == quote => return Ok(out),
                b'\n' => return Err(self.err(self.i - 1, "line break inside a string (write \\n)")),
                b'\\' => {
                    let (b, used) = escape(self.s, self.i, Lua52).map_err(|m| self.err(self.i - 1, m))?;
                    out.push(b);
                    self.i += used;
                }
                _ => out.push(c),
            }
        }
    }

    fn number(&mut self) -> Result<f64, LuaError> {
        let start = self.i;
        let s = &self.s[self.i..];
        let v = if s.len() > 1 && s[0] == b'0' && (s[1] == b'x' || s[1] == b'X') {
            let n = s[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            self.i += 2 + n;
            let h = std::str::from_utf8(&s[2..2 + n]).unwrap_or("");
            u64::from_str_radix(h, 16).map(|v| v as f64).map_err(|_| self.err(start, "bad hexadecimal number"))?
        } else {
            let mut n = 0;
            while n < s.len() {
                let c = s[n];
                let exp_sign = (c == b'+' || c == b'-') && n > 0 && (s[n - 1] == b'e' || s[n - 1] == b'E');
                if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || exp_sign {
                    n += 1;
                } else {
                    break;
                }
            }
            self.i += n;
            let t = std::str::from_utf8(&s[..n]).unwrap_or("");
            t.parse::<f64>().map_err(|_| self.err(start, format!("'{t}' is not a number")))?
        };
        if self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            return Err(self.err(self.i, "a number runs into a name"));
        }
        Ok(v)
    }

    /// `_[N]` after the `_` was read.
    fn ref_index(&mut self) -> Result<usize, LuaError> {
        self.expect(b'[', "[ after _")?;
        self.skip_space()?;
        let at = self.i;
        let n = self.number()?;
        if n < 1.0 || n.fract() != 0.0 || n > MAX_REFS as f64 {
            return Err(self.err(at, format!("_[{n}]: references are numbered 1..{MAX_REFS}")));
        }
        self.expect(b']', "]")?;
        Ok(n as usize)
    }

    fn value(&mut self) -> Result<Raw, LuaError> {
        self.skip_space()?;
        let at = self.i;
        let Some(c) = self.peek() else {
            return Err(self.err(at, "a value is missing (the file ends here)"));
        };
        match c {
            b'{' => self.table(),
            b'"' | b'\'' => Ok(Raw::Val(Value::Str(self.string(c)?))),
            b'[' => match self.long_bracket_level() {
                Some(level) => Ok(Raw::Val(Value::Str(self.long_string_body(level, at)?))),
                None => Err(self.err(at, "expected a value")),
            },
            b'-' => {
                self.i += 1;
                self.skip_space()?;
                match self.value()? {
                    Raw::Val(Value::Num(n)) => Ok(Raw::Val(Value::Num(-n))),
                    _ => Err(self.err(at, "'-' before something that is not a number")),
                }
            }
            b'0'..=b'9' | b'.' => {
                let n = self.number()?;
                // 0/0, 1/0 (minetest.serialize's nan and infinity).
                self.skip_space()?;
                if self.peek() == Some(b'/') {
                    self.i += 1;
                    self.skip_space()?;
                    let d = self.number()?;
                    return Ok(Raw::Val(Value::Num(n / d)));
                }
                Ok(Raw::Val(Value::Num(n)))
            }
            _ => {
                let Some(name) = self.name() else {
                    return Err(self.err(at, format!("unexpected '{}'", c as char)));
                };
                match name {
                    b"nil" => Ok(Raw::Val(Value::Nil)),
                    b"true" => Ok(Raw::Val(Value::Bool(true))),
                    b"false" => Ok(Raw::Val(Value::Bool(false))),
                    b"inf" => Ok(Raw::Val(Value::Num(f64::INFINITY))),
                    b"nan" => Ok(Raw::Val(Value::Num(f64::NAN))),
                    b"_" => Ok(Raw::Ref(self.ref_index()?, at)),
                    _ => Err(self.err(
                        at,
                        format!(
                            "'{}' is not data (only tables, strings, numbers, booleans and nil are read; no code is run)",
                            String::from_utf8_lossy(name)
                        ),
                    )),
                }
            }
        }
    }

    fn table(&mut self) -> Result<Raw, LuaError> {
        let open = self.i;
        self.i += 1;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(open, format!("tables nested more than {MAX_DEPTH} deep")));
        }
        let mut fields = Vec::new();
        let mut next = 1.0;
        loop {
            if self.eat(b'}')? {
                break;
            }
            self.skip_space()?;
            let at = self.i;
            if self.peek() == Some(b'[') && self.long_bracket_level().is_none() {
                self.i += 1;
                let k = self.value()?;
                self.expect(b']', "]")?;
                self.expect(b'=', "=")?;
                let v = self.value()?;
                fields.push((k, v));
            } else {
                // `name = value`, or a positional value.
                let save = self.i;
                // Any name but a keyword can be a key (`_`, `inf` and `nan`
                // too: `{_ = ''}` is a field named "_"; `_[N]` is a
                // reference because `[`, not `=`, follows).
                let named = self.name().filter(|n| !matches!(*n, b"nil" | b"true" | b"false"));
                let is_field = named.is_some() && {
                    self.skip_space()?;
                    self.peek() == Some(b'=')
                };
                if let (Some(n), true) = (named, is_field) {
                    self.i += 1;
                    let v = self.value()?;
                    fields.push((Raw::Val(Value::Str(n.to_vec())), v));
                } else {
                    self.i = save;
                    let v = self.value()?;
                    fields.push((Raw::Val(Value::Num(next)), v));
                    next += 1.0;
                }
            }
            if !self.eat(b',')? && !self.eat(b';')? {
                self.skip_space()?;
                if self.peek() != Some(b'}') {
                    return Err(self.err(self.i.max(at), "expected , or } in a table"));
                }
            }
        }
        self.depth -= 1;
        Ok(Raw::Table(fields))
    }
}

/// Read a chunk of serialized data: statements `local _={}`, `_[N]=v`,
/// `_[N].k=v`, `_[N][k]=v`, then `return v`.
pub fn parse(src: &[u8]) -> Result<Value, LuaError> {
    let mut p = Parser { s: src, i: 0, depth: 0 };
    // By number: `_[1000000]=1` must not reserve a million slots.
    let mut refs: HashMap<usize, Raw> = HashMap::new();
    let result;
    loop {
        p.skip_space()?;
        let at = p.i;
        if p.peek().is_none() {
            return Err(p.err(at, "the data has no 'return'"));
        }
        if p.eat(b';')? {
            continue;
        }
        let Some(word) = p.name() else {
            return Err(p.err(at, "expected 'return' (the data is one returned table)"));
        };
        match word {
            b"return" => {
                result = p.value()?;
                p.eat(b';')?;
                p.skip_space()?;
                if p.i < src.len() {
                    return Err(p.err(p.i, "text after the returned value"));
                }
                break;
            }
            b"local" => {
                p.skip_space()?;
                let n = p.name();
                p.expect(b'=', "= after local _")?;
                p.expect(b'{', "{} after local _ =")?;
                p.expect(b'}', "{} after local _ =")?;
                if n != Some(b"_") {
                    return Err(p.err(at, "only 'local _={}' (the reference table) is read"));
                }
            }
            b"_" => {
                let n = p.ref_index()?;
                let mut path: Vec<Raw> = Vec::new();
                loop {
                    p.skip_space()?;
                    if p.eat(b'.')? {
                        p.skip_space()?;
                        let k = p.name().ok_or_else(|| p.err(p.i, "expected a name after ."))?;
                        path.push(Raw::Val(Value::Str(k.to_vec())));
                    } else if p.peek() == Some(b'[') {
                        p.i += 1;
                        path.push(p.value()?);
                        p.expect(b']', "]")?;
                    } else {
                        break;
                    }
                }
                p.expect(b'=', "=")?;
                let v = p.value()?;
                match path.len() {
                    0 => {
                        refs.insert(n, v);
                    }
                    1 => match refs.get_mut(&n) {
                        Some(Raw::Table(f)) => f.extend(path.pop().map(|k| (k, v))),
                        _ => return Err(p.err(at, format!("_[{n}] is not a table here"))),
                    },
                    _ => return Err(p.err(at, "only _[N].key = value is read (one level)")),
                }
            }
            _ => {
                return Err(p.err(at, format!("'{}' is not data (no code is run)", String::from_utf8_lossy(word))));
            }
        }
    }
    let mut r =
        Resolver { refs: &refs, busy: HashSet::new(), values: 4 * src.len() + 1024, bytes: MAX_EXPANDED_BYTES, p: &p };
    r.resolve(&result)
}

/// The most string bytes references may expand to (a reference repeats a
/// value wherever it is used, so a small file could otherwise ask for
/// gigabytes).
pub const MAX_EXPANDED_BYTES: usize = 256 << 20;

struct Resolver<'r, 'a> {
    refs: &'r HashMap<usize, Raw>,
    busy: HashSet<usize>,
    /// Values and string bytes still allowed.
    values: usize,
    bytes: usize,
    p: &'r Parser<'a>,
}

impl Resolver<'_, '_> {
    fn spend(&mut self, v: &Value) -> Result<(), LuaError> {
        let len = if let Value::Str(s) = v { s.len() } else { 0 };
        if self.values == 0 || self.bytes < len {
            return Err(self.p.err(
                0,
                format!(
                    "the _[N] references expand to more than {} values or {MAX_EXPANDED_BYTES} bytes of strings \
                     (refused to bound memory)",
                    4 * self.p.s.len() + 1024
                ),
            ));
        }
        self.values -= 1;
        self.bytes -= len;
        Ok(())
    }

    fn resolve(&mut self, raw: &Raw) -> Result<Value, LuaError> {
        let v = match raw {
            Raw::Val(v) => v.clone(),
            Raw::Table(fields) => {
                let mut t = Table::default();
                for (k, v) in fields {
                    let k = self.resolve(k)?;
                    if k == Value::Nil || matches!(k, Value::Num(n) if n.is_nan()) {
                        return Err(self.p.err(0, "a table key is nil or NaN"));
                    }
                    let v = self.resolve(v)?;
                    t.fields.push((k, v));
                }
                Value::Table(t)
            }
            Raw::Ref(n, at) => {
                let Some(target) = self.refs.get(n) else {
                    return Err(self.p.err(*at, format!("_[{n}] is used but never set")));
                };
                if !self.busy.insert(*n) {
                    return Err(self
                        .p
                        .err(*at, format!("_[{n}] contains itself (a circular table is not WorldEdit data)")));
                }
                let v = self.resolve(target)?;
                self.busy.remove(n);
                return Ok(v);
            }
        };
        self.spend(&v)?;
        Ok(v)
    }
}

/// A Lua string literal for `s` that every Lua reads back as `s`: `"`,
/// `\`, line breaks and control bytes escaped, everything else as is.
pub fn quote(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                // Three digits, so that a digit after it is not read as part of it.
                let _ = i;
                out.extend_from_slice(format!("\\{c:03}").as_bytes());
            }
            _ => out.push(c),
        }
    }
    out.push(b'"');
    out
}

/// Whether `key` can be written `key=` rather than `["key"]=`.
pub fn is_short_key(key: &[u8]) -> bool {
    const KEYWORDS: [&[u8]; 22] = [
        b"and",
        b"break",
        b"do",
        b"else",
        b"elseif",
        b"end",
        b"false",
        b"for",
        b"function",
        b"if",
        b"in",
        b"local",
        b"nil",
        b"not",
        b"or",
        b"repeat",
        b"return",
        b"then",
        b"true",
        b"until",
        b"while",
        b"goto",
    ];
    !key.is_empty()
        && (key[0].is_ascii_alphabetic() || key[0] == b'_')
        && key.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !KEYWORDS.contains(&key)
}

/// A number as Lua 5.1's `tostring` writes it (`%.14g`): how a number
/// stored in a metadata field reads back as a string.
#[allow(clippy::expect_used, reason = "Rust's {:e} always writes a mantissa, `e` and an integer exponent")]
pub fn lua_number_string(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if v == v.trunc() && v.abs() < 1e14 {
        return format!("{}", v as i64);
    }
    // %.14g: 14 significant digits, exponent form when the exponent is
    // below -4 or at least 14, trailing zeros removed.
    let e = format!("{:.13e}", v);
    let (mant, exp) = e.split_once('e').expect("e format");
    let exp: i32 = exp.parse().expect("exponent");
    if (-4..14).contains(&exp) {
        let decimals = (13 - exp).max(0) as usize;
        let s = format!("{:.*}", decimals, v);
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    } else {
        let m = if mant.contains('.') { mant.trim_end_matches('0').trim_end_matches('.') } else { mant };
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::Str(v.as_bytes().to_vec())
    }

    #[test]
    fn reads_what_minetest_serialize_writes() {
        let src = br#"local _={};_[1]="default:stone";_[2]={};_[2].main={"default:dirt 5",""};return {{name=_[1],x=0,["y"]=1,z=-2,meta={inventory=_[2],fields={["a b"]="x\ny\\z\"\0009"}}},{name=_[1],x=1.5e1,y=0/0,z=-1/0}}"#;
        let v = parse(src).unwrap();
        let Value::Table(t) = v else { panic!() };
        let list = t.list();
        assert_eq!(list.len(), 2);
        let Value::Table(n0) = list[0] else { panic!() };
        assert_eq!(n0.get_str("name"), Some(&s("default:stone")));
        assert_eq!(n0.get_str("z"), Some(&Value::Num(-2.0)));
        let Some(Value::Table(meta)) = n0.get_str("meta") else { panic!() };
        let Some(Value::Table(fields)) = meta.get_str("fields") else { panic!() };
        assert_eq!(fields.get_str("a b"), Some(&Value::Str(b"x\ny\\z\"\x009".to_vec())));
        let Some(Value::Table(inv)) = meta.get_str("inventory") else { panic!() };
        let Some(Value::Table(main)) = inv.get_str("main") else { panic!() };
        assert_eq!(main.list(), vec![&s("default:dirt 5"), &s("")]);
        let Value::Table(n1) = list[1] else { panic!() };
        assert_eq!(n1.get_str("x"), Some(&Value::Num(15.0)));
        assert!(matches!(n1.get_str("y"), Some(Value::Num(n)) if n.is_nan()));
        assert_eq!(n1.get_str("z"), Some(&Value::Num(f64::NEG_INFINITY)));
    }

    #[test]
    fn reads_table_save_files() {
        let src =
            b"return {\n-- Table: {1}\n{\n   {2},\n},\n-- Table: {2}\n{\n   [\"x\"]=0,\n   [\"name\"]='a\\65',\n},\n}";
        let Value::Table(t) = parse(src).unwrap() else { panic!() };
        let Value::Table(t2) = t.list()[1] else { panic!() };
        assert_eq!(t2.get_str("name"), Some(&s("aA")));
    }

    #[test]
    fn refuses_code_with_line_and_column() {
        let cases: [(&[u8], &str); 8] = [
            (b"return {os.exit()}", "line 1, column 9: 'os' is not data"),
            (b"print(1) return {}", "line 1, column 1: 'print' is not data"),
            (b"return {\n  x = \"abc\n}", "line 2, column 11: line break inside a string"),
            (b"return {1 2}", "line 1, column 11: expected , or } in a table"),
            (b"return {} x", "line 1, column 11: text after the returned value"),
            (b"local _={};return _[3]", "line 1, column 19: _[3] is used but never set"),
            (b"local _={};_[1]={};_[1].a=_[1];return _[1]", "line 1, column 27: _[1] contains itself"),
            (b"{}", "line 1, column 1: expected 'return'"),
        ];
        for (src, want) in cases {
            let e = parse(src).unwrap_err().to_string();
            assert!(e.starts_with(want), "{}: {e}", String::from_utf8_lossy(src));
        }
        // References that double at every level: 2^40 values from 1 KB.
        let mut bomb = String::from("local _={};_[1]=\"abcdefgh\";");
        for i in 2..=40 {
            bomb += &format!("_[{i}]={{}};_[{i}].a=_[{}];_[{i}].b=_[{}];", i - 1, i - 1);
        }
        bomb += "return _[40]";
        assert!(parse(bomb.as_bytes()).unwrap_err().message.contains("refused to bound memory"));
        let deep = format!("return {}{}", "{".repeat(100), "}".repeat(100));
        assert!(parse(deep.as_bytes()).unwrap_err().message.contains("nested more than 64"));
    }

    #[test]
    fn quoting_reads_back() {
        let all: Vec<u8> = (0..=255).collect();
        let q = quote(&all);
        let Value::Str(back) = parse(&[b"return ".as_slice(), &q].concat()).unwrap() else { panic!() };
        assert_eq!(back, all);
        assert_eq!(quote(b"a\x01"), b"\"a\\001\"");
    }

    #[test]
    fn numbers_print_like_lua_tostring() {
        assert_eq!(lua_number_string(42.0), "42");
        assert_eq!(lua_number_string(1.5), "1.5");
        assert_eq!(lua_number_string(0.1), "0.1");
        assert_eq!(lua_number_string(1e20), "1e+20");
        assert_eq!(lua_number_string(1.0 / 3.0), "0.33333333333333");
        assert_eq!(lua_number_string(-2.5e-7), "-2.5e-07");
    }
}
