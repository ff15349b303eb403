//! Metadata keys are arbitrary bytes; file names are not. A key is shown as
//! a file name with these bytes written as `%XX`: `%`, `/`, control bytes
//! (0x00-0x1F, 0x7F), and a leading `.` (so every name starting with `.` is
//! free for editors' swap and temporary files). The empty key is `%`.

pub fn key_to_name(key: &[u8]) -> Vec<u8> {
    if key.is_empty() {
        return b"%".to_vec();
    }
    let mut out = Vec::with_capacity(key.len());
    for (i, &c) in key.iter().enumerate() {
        if c == b'%' || c == b'/' || c < 0x20 || c == 0x7f || (i == 0 && c == b'.') {
            out.extend_from_slice(format!("%{c:02X}").as_bytes());
        } else {
            out.push(c);
        }
    }
    out
}

/// The key a file name stands for, or None if the name is not one that
/// [`key_to_name`] produces (names starting with `.` are never keys).
pub fn name_to_key(name: &[u8]) -> Option<Vec<u8>> {
    if name == b"%" {
        return Some(Vec::new());
    }
    if name.first() == Some(&b'.') {
        return None;
    }
    let mut out = Vec::with_capacity(name.len());
    let mut i = 0;
    while i < name.len() {
        if name[i] == b'%' {
            let hex = std::str::from_utf8(name.get(i + 1..i + 3)?).ok()?;
            if hex.bytes().any(|c| c.is_ascii_lowercase()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(name[i]);
            i += 1;
        }
    }
    // Only the canonical spelling names a key.
    (key_to_name(&out) == name).then_some(out)
}

/// The key a name that [`name_to_key`] refuses was most likely meant to
/// be: `%XX` (either case) decoded, any other `%` kept as it is.
fn lenient_key(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    let mut i = 0;
    while i < name.len() {
        let hex = name.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match hex.filter(|_| name[i] == b'%').and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(c) => {
                out.push(c);
                i += 3;
            }
            None => {
                out.push(name[i]);
                i += 1;
            }
        }
    }
    out
}

/// Why a new file `name` cannot become a key, naming the file that would:
/// None when it names a key, or starts with `.` (editors' and programs'
/// own files, which stay scratch files).
pub fn refuse_key_name(name: &[u8]) -> Option<(Vec<u8>, String)> {
    if name.first() == Some(&b'.') || name_to_key(name).is_some() {
        return None;
    }
    let canonical = key_to_name(&lenient_key(name));
    let message = format!(
        "'{}' is not the name of a key: in a key's file name, %, /, control bytes and a leading . are \
         written %XX (capital hex), so the key it stands for is the file '{}'",
        String::from_utf8_lossy(name),
        String::from_utf8_lossy(&canonical)
    );
    Some((canonical, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_is_reversible_and_canonical() {
        for key in [&b"infotext"[..], b"", b".hidden", b"a/b", b"50%", b"x\ny\0", "Grüße".as_bytes(), b"%"] {
            let name = key_to_name(key);
            assert!(!name.contains(&b'/') && !name.contains(&0) && name.first() != Some(&b'.'));
            assert_eq!(name_to_key(&name), Some(key.to_vec()), "{key:?}");
        }
        assert_eq!(key_to_name(b".a.b"), b"%2Ea.b");
        assert_eq!(name_to_key(b".text.swp"), None);
        assert_eq!(name_to_key(b"%41"), None); // 'A' needs no escape: not canonical
        assert_eq!(name_to_key(b"%2e"), None);
        assert_eq!(name_to_key(b"%zz"), None);
        for (name, canonical) in [("50%", "50%25"), ("%zz", "%25zz"), ("a%2fb", "a%2Fb"), ("%2E%2E", "%2E.")] {
            let (c, why) = refuse_key_name(name.as_bytes()).expect(name);
            assert_eq!(String::from_utf8(c).unwrap(), canonical);
            assert!(why.contains(&format!("the file '{canonical}'")), "{why}");
        }
        assert_eq!(refuse_key_name(b"infotext"), None);
        assert_eq!(refuse_key_name(b".50%.swp"), None);
        proptest::proptest!(|(key: Vec<u8>)| {
            proptest::prop_assert_eq!(name_to_key(&key_to_name(&key)), Some(key));
        });
    }
}
