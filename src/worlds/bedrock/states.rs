//! A Bedrock block state as one line of text, and back: its name, then its
//! states in brackets in their stored order, each value typed as the game
//! types it (the form of its own commands, unquoted keys):
//! `minecraft:wood[pillar_axis="y",stripped_bit=false,wood_type="oak"]`.
//! A string is quoted (with SNBT's escapes), an int is plain, a byte 0 or
//! 1 is `false` or `true` (another byte `5b`), a short `3s`. A palette entry
//! of before 1.13 (`name` and `val`, no `states`) reads `name[val=3s]`.

use crate::worlds::minecraft::section::label_part;
use worldfs_codec::minecraft::nbt::{Compound, Tag};
use worldfs_codec::minecraft::snbt;

fn value(t: &Tag) -> String {
    match t {
        Tag::String(s) => snbt::quote(s),
        Tag::Int(v) => v.to_string(),
        Tag::Byte(0) => "false".into(),
        Tag::Byte(1) => "true".into(),
        Tag::Byte(v) => format!("{v}b"),
        Tag::Short(v) => format!("{v}s"),
        other => snbt::tag_inline(other),
    }
}

/// The states a palette entry's label shows: `states`, or before 1.13 its
/// `val`.
fn shown_states(c: &Compound) -> Vec<(String, Tag)> {
    match (c.compound("states"), c.get("val")) {
        (Some(s), _) => s.0.clone(),
        (None, Some(v)) => vec![("val".into(), v.clone())],
        (None, None) => Vec::new(),
    }
}

/// A palette entry's label.
pub(crate) fn label(c: &Compound) -> String {
    let name = c.string("name").map_or_else(|| "?".to_string(), label_part);
    let states = shown_states(c);
    if states.is_empty() {
        return name;
    }
    let parts: Vec<String> = states.iter().map(|(k, v)| format!("{}={}", label_part(k), value(v))).collect();
    format!("{name}[{}]", parts.join(","))
}

/// The block's name without its states (what `names` and `find/` count).
pub(crate) fn name(c: &Compound) -> &str {
    c.string("name").unwrap_or("?")
}

/// Whether two entries are the same block state (the palette's `version`
/// aside, and states in any order).
pub(crate) fn same(a: &Compound, b: &Compound) -> bool {
    let key = |c: &Compound| {
        let mut s = shown_states(c);
        s.sort_by(|x, y| x.0.cmp(&y.0));
        (c.string("name").map(String::from), s)
    };
    a == b || key(a) == key(b)
}

/// Read a label back as `name` and its states (a compound `states`, or a
/// lone `val` for the old form). A name without a namespace gets
/// `minecraft:`.
pub(crate) fn parse(text: &str) -> Result<(String, Vec<(String, Tag)>), String> {
    let text = text.trim();
    let (name, rest) = match text.find('[') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./:".contains(c);
    if name.is_empty() || !name.chars().all(ok) || name.matches(':').count() > 1 {
        return Err(format!("'{name}' is not a block name (like minecraft:stone)"));
    }
    let name = if name.contains(':') { name.to_string() } else { format!("minecraft:{name}") };
    let Some(rest) = rest else { return Ok((name, Vec::new())) };
    let inner = rest.strip_suffix(']').ok_or_else(|| format!("'{text}': a '[' without its ']'"))?;
    let mut states: Vec<(String, Tag)> = Vec::new();
    let mut s = inner.trim();
    while !s.is_empty() {
        let (k, after) = s.split_once('=').ok_or_else(|| format!("'{s}' is not key=value"))?;
        let k = k.trim().to_string();
        if k.is_empty() || states.iter().any(|(x, _)| *x == k) {
            return Err(format!("'{k}': an empty or repeated state"));
        }
        let (v, tail) = typed_value(after.trim_start())?;
        states.push((k, v));
        s = tail.trim_start();
        if let Some(t) = s.strip_prefix(',') {
            s = t.trim_start();
        } else if !s.is_empty() {
            return Err(format!("'{s}': a ',' or the ']' expected"));
        }
    }
    Ok((name, states))
}

/// One state's value at the start of `s`, and what follows it.
fn typed_value(s: &str) -> Result<(Tag, &str), String> {
    if s.starts_with('"') {
        let mut escaped = false;
        for (i, c) in s.char_indices().skip(1) {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    let tag = snbt::parse_tag(&s[..=i]).map_err(|e| format!("{}: {e}", &s[..=i]))?;
                    return Ok((tag, &s[i + 1..]));
                }
                _ => escaped = false,
            }
        }
        return Err(format!("{s}: a string without its closing '\"'"));
    }
    let end = s.find(',').unwrap_or(s.len());
    let word = s[..end].trim();
    let tag = match word {
        "true" => Tag::Byte(1),
        "false" => Tag::Byte(0),
        w if w.ends_with('b') => Tag::Byte(w[..w.len() - 1].parse().map_err(|_| bad(w))?),
        w if w.ends_with('s') => Tag::Short(w[..w.len() - 1].parse().map_err(|_| bad(w))?),
        w => Tag::Int(w.parse().map_err(|_| bad(w))?),
    };
    Ok((tag, &s[end..]))
}

fn bad(w: &str) -> String {
    format!("'{w}' is not a state value: a quoted string (\"oak\"), a whole number (3), true or false")
}

/// The palette entry for a parsed label: `states` in the game's form with
/// the palette's `version`, or `val` for an old form entry.
pub(crate) fn entry(name: String, states: Vec<(String, Tag)>, version: Option<i32>, old_form: bool) -> Compound {
    let mut c = Compound(vec![("name".into(), Tag::String(name))]);
    if old_form {
        let val = states.into_iter().find(|(k, _)| k == "val").map_or(Tag::Short(0), |(_, v)| v);
        c.0.push(("val".into(), val));
        return c;
    }
    c.0.push(("states".into(), Tag::Compound(Compound(states))));
    if let Some(v) = version {
        c.0.push(("version".into(), Tag::Int(v)));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_typed() {
        let states = Compound(vec![
            ("pillar_axis".into(), Tag::String("y".into())),
            ("stripped_bit".into(), Tag::Byte(0)),
            ("age".into(), Tag::Int(3)),
            ("odd".into(), Tag::String("a,b]\"c".into())),
        ]);
        let c = Compound(vec![
            ("name".into(), Tag::String("minecraft:wood".into())),
            ("states".into(), Tag::Compound(states.clone())),
            ("version".into(), Tag::Int(17959425)),
        ]);
        let l = label(&c);
        assert_eq!(l, r#"minecraft:wood[pillar_axis="y",stripped_bit=false,age=3,odd="a,b]\"c"]"#);
        let (name, parsed) = parse(&l).unwrap();
        assert_eq!((name.as_str(), Compound(parsed.clone())), ("minecraft:wood", states));
        assert!(same(&entry(name, parsed, Some(1), false), &c));
        for bad in ["", "Stone", "a:b:c", "stone[x=1", "stone[x]", "stone[x=y]", "stone[x=1,x=2]", "stone[x=\"a]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let old = Compound(vec![("name".into(), Tag::String("minecraft:stone".into())), ("val".into(), Tag::Short(3))]);
        assert_eq!(label(&old), "minecraft:stone[val=3s]");
        let (n, s) = parse("stone[val=3s]").unwrap();
        assert_eq!(entry(n, s, None, true), old);
    }
}
