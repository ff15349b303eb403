//! The escapes of Lua's quoted strings, for the two readers of Lua data
//! (WorldEdit files in `we::lua`, Cuberite cubesets in `cubeset`):
//! one table of what a backslash sequence stands for. Pure.

/// Which Lua reads the string: `\x` hex escapes came with Lua 5.2, and
/// Cuberite loads cubesets with Lua 5.1, which refuses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Lua 5.1 (Cuberite): no `\x` escapes.
    Lua51,
    /// Lua 5.2 and later: `\x` hex escapes too (WorldEdit files).
    Lua52,
}

/// The byte the escape at `src[at..]` stands for (`src[at]` is the
/// character after the backslash) and how many bytes of `src` it takes,
/// or what is wrong with it.
pub fn escape(src: &[u8], at: usize, dialect: Dialect) -> Result<(u8, usize), String> {
    let Some(&e) = src.get(at) else { return Err("string has no closing quote".into()) };
    Ok(match e {
        b'a' => (7, 1),
        b'b' => (8, 1),
        b'f' => (12, 1),
        b'n' => (b'\n', 1),
        b'r' => (b'\r', 1),
        b't' => (b'\t', 1),
        b'v' => (11, 1),
        b'\\' | b'"' | b'\'' => (e, 1),
        // A backslash before a line break continues the string on the next
        // line with a newline (\r\n counts as one).
        b'\n' => (b'\n', 1),
        b'\r' => (b'\n', if src.get(at + 1) == Some(&b'\n') { 2 } else { 1 }),
        b'x' if dialect == Dialect::Lua52 => {
            let hex = src.get(at + 1..at + 3).and_then(|h| std::str::from_utf8(h).ok());
            let v = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or("\\x needs two hex digits")?;
            (v, 3)
        }
        b'0'..=b'9' => {
            let digits = src[at..].iter().take(3).take_while(|d| d.is_ascii_digit()).count();
            let v = src[at..at + digits].iter().fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
            let v = u8::try_from(v).map_err(|_| format!("escape \\{v} is above 255"))?;
            (v, digits)
        }
        _ => return Err(format!("unknown escape \\{}", e as char)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_lua_reads_them() {
        let one = |s: &str, d| escape(s.as_bytes(), 0, d);
        assert_eq!(one("n", Dialect::Lua51), Ok((b'\n', 1)));
        assert_eq!(one("\"", Dialect::Lua51), Ok((b'"', 1)));
        assert_eq!(one("65x", Dialect::Lua51), Ok((65, 2)));
        assert_eq!(one("0651", Dialect::Lua51), Ok((65, 3)), "at most three digits");
        assert_eq!(one("6", Dialect::Lua51), Ok((6, 1)));
        assert_eq!(one("\r\nx", Dialect::Lua51), Ok((b'\n', 2)));
        assert_eq!(one("x41", Dialect::Lua52), Ok((0x41, 3)));
        assert!(one("x41", Dialect::Lua51).unwrap_err().contains("unknown escape \\x"));
        assert!(one("x4", Dialect::Lua52).unwrap_err().contains("two hex digits"));
        assert!(one("256", Dialect::Lua52).unwrap_err().contains("above 255"));
        assert!(one("q", Dialect::Lua52).unwrap_err().contains("unknown escape \\q"));
        assert!(one("", Dialect::Lua52).is_err());
    }
}
