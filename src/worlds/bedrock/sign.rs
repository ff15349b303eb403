//! A Bedrock sign's text: before 1.20 one string `Text` (its lines joined
//! by newlines); from 1.20 `FrontText` and `BackText`, each a compound
//! with its `Text`. The file `text` (the front) and `back_text` show the
//! lines as they are; written back, the string becomes the file's lines
//! (at most four, no control characters; the final newline dropped), and
//! the rest (colour, glow, the owner) is kept.

use worldfs_codec::minecraft::nbt::{Compound, Tag};

/// The files a block entity's sign text is shown in.
pub(crate) fn files(be: &Compound) -> Vec<&'static str> {
    if be.compound("FrontText").is_some() {
        let mut v = vec!["text"];
        if be.compound("BackText").is_some() {
            v.push("back_text");
        }
        v
    } else if be.string("Text").is_some() {
        vec!["text"]
    } else {
        Vec::new()
    }
}

fn side<'a>(be: &'a Compound, file: &str) -> Option<&'a str> {
    match (file, be.compound("FrontText")) {
        ("text", Some(f)) => f.string("Text"),
        ("back_text", _) => be.compound("BackText")?.string("Text"),
        ("text", None) => be.string("Text"),
        _ => None,
    }
}

/// A side's text, each line ended.
pub(crate) fn render(be: &Compound, file: &str) -> Option<String> {
    let t = side(be, file)?;
    Some(if t.is_empty() { String::new() } else { format!("{t}\n") })
}

/// Set a side's text to `text`; a refusal names its line.
pub(crate) fn apply(be: &mut Compound, file: &str, text: &str) -> Result<(), (usize, String)> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = if body.is_empty() { Vec::new() } else { body.split('\n').collect() };
    if lines.len() > 4 {
        return Err((5, format!("a sign shows four lines; this text has {}", lines.len())));
    }
    if let Some((n, _)) = lines.iter().enumerate().find(|(_, l)| l.chars().any(char::is_control)) {
        return Err((n + 1, "a control character (a sign line is plain text)".into()));
    }
    let new = Tag::String(lines.join("\n"));
    let holder = match (file, be.compound("FrontText").is_some()) {
        ("text", true) => be.compound_mut("FrontText"),
        ("back_text", _) => be.compound_mut("BackText"),
        ("text", false) => Some(&mut *be),
        _ => None,
    };
    holder.ok_or((0, "this sign has no such side".to_string()))?.insert("Text", new);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_and_write() {
        let mut old =
            Compound(vec![("id".into(), Tag::String("Sign".into())), ("Text".into(), Tag::String("a\nb".into()))]);
        assert_eq!((files(&old), render(&old, "text").unwrap()), (vec!["text"], "a\nb\n".to_string()));
        apply(&mut old, "text", "x\n").unwrap();
        assert_eq!(old.string("Text"), Some("x"));
        let side = |t: &str| {
            Tag::Compound(Compound(vec![
                ("Text".into(), Tag::String(t.into())),
                ("SignTextColor".into(), Tag::Int(-16777216)),
            ]))
        };
        let mut new = Compound(vec![("FrontText".into(), side("front")), ("BackText".into(), side(""))]);
        assert_eq!(files(&new), vec!["text", "back_text"]);
        apply(&mut new, "back_text", "one\ntwo\n").unwrap();
        assert_eq!(render(&new, "back_text").unwrap(), "one\ntwo\n");
        assert_eq!(new.compound("BackText").unwrap().int("SignTextColor"), Some(-16777216));
        assert_eq!(apply(&mut new, "text", "1\n2\n3\n4\n5\n").unwrap_err().0, 5);
        assert_eq!(apply(&mut new, "text", "1\n\u{7}\n").unwrap_err().0, 2);
    }
}
