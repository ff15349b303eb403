//! Cuberite's prefab sets (`.cubeset`) as a
//! [`Document`]: the set's `metadata`, and per piece `size`, `hitbox`,
//! `legend` (character -> `id:meta`), `layers` (the blocks, one block of
//! rows per Y level), `connectors` and `metadata`.
//!
//! The file is a Lua program; it is read with a strict parser of the
//! table-constructor subset Cuberite's exports use
//! (`worldfs_codec::cubeset`), never run.
//! An edit re-emits only the part of the file it concerns (one piece's
//! table, or the set's `Metadata` table) in GalExport's style, and every
//! other byte of the file (comments, formatting of the other pieces) is
//! kept as it was.

mod piece;

use crate::documents::{Context, DocError, DocResult, Document, Entry};
use piece::{MetaValue, Piece};
use std::path::Path;
use worldfs_codec::cubeset as lua;
use worldfs_codec::cubeset::{Field, Value};

/// A cubeset: its text, and what was read from it.
pub struct Cubeset {
    text: String,
    /// The set's `Metadata` entries and the byte range of that table.
    metadata: Vec<(String, MetaValue, bool)>,
    metadata_span: (usize, usize),
    pieces: Vec<Piece>,
}

/// The sniff string Cuberite's loader looks for in the first 8 KiB.
const SNIFF: &[u8] = b"CubesetFormatVersion =";

fn table<'a>(f: &'a Field, what: &str) -> DocResult<&'a lua::Table> {
    match &f.value {
        Value::Table(t) => Ok(t),
        _ => Err(DocError::new(format!("{what} is not a table"))),
    }
}

impl Cubeset {
    fn read(text: String) -> DocResult<Cubeset> {
        let chunk = lua::parse_chunk(&text)?;
        let (_, set) = chunk
            .iter()
            .find(|(n, _)| n == "Cubeset")
            .ok_or_else(|| DocError::new("no 'Cubeset = { ... }' in the file"))?;
        let set = table(set, "Cubeset")?;
        if let Some(f) = set.fields.iter().find(|f| !matches!(f.key.text().as_str(), "Metadata" | "Pieces")) {
            return Err(DocError::new(format!(
                "unknown key '{}' in Cubeset (it has Metadata and Pieces)",
                f.key.text()
            )));
        }
        let meta_field = set.get("Metadata").ok_or_else(|| DocError::new("Cubeset has no Metadata table"))?;
        let metadata = piece::read_metadata(table(meta_field, "Cubeset.Metadata")?)?;
        match metadata.iter().find(|(k, _, _)| k == "CubesetFormatVersion") {
            Some((_, MetaValue::Num(n), _)) if n.trim() == "1" => {}
            Some((_, v, _)) => {
                return Err(DocError::new(format!("CubesetFormatVersion is {}, only 1 exists", v.text())));
            }
            None => return Err(DocError::new("Cubeset.Metadata has no CubesetFormatVersion")),
        }
        let pieces_field = set.get("Pieces").ok_or_else(|| DocError::new("Cubeset has no Pieces table"))?;
        let mut pieces = Vec::new();
        for (i, f) in table(pieces_field, "Cubeset.Pieces")?.positional().enumerate() {
            let Value::Table(t) = &f.value else { break };
            pieces.push(
                Piece::read(t).map_err(|e| DocError { message: format!("piece {}: {}", i + 1, e.message), ..e })?,
            );
        }
        Ok(Cubeset { text, metadata, metadata_span: meta_field.span, pieces })
    }

    /// The directory name of piece `i`: its number and export name.
    fn dir(&self, i: usize) -> String {
        let name: String =
            self.pieces[i].name.chars().map(|c| if c == '/' || c.is_control() { '_' } else { c }).collect();
        format!("{:02}_{name}", i + 1)
    }

    fn piece_of(&self, path: &str) -> Option<(usize, String)> {
        let rest = path.strip_prefix("pieces/")?;
        let (dir, file) = rest.split_once('/')?;
        let i = (0..self.pieces.len()).find(|&i| self.dir(i) == dir)?;
        Some((i, file.to_string()))
    }

    /// A table's text made for the top level, indented like the line of
    /// byte `at` (where it goes), with the line ends of that line (a CRLF
    /// file stays CRLF).
    fn indented(&self, at: usize, value: &str) -> String {
        let indent = piece::indent_at(&self.text, at);
        let crlf = self.text[at..].find('\n').is_some_and(|i| self.text[..at + i].ends_with('\r'));
        let eol = if crlf { "\r\n" } else { "\n" };
        value
            .lines()
            .enumerate()
            .map(|(i, l)| match (i, l.is_empty()) {
                (0, _) => l.to_string(),
                (_, true) => eol.to_string(),
                _ => format!("{eol}{indent}{l}"),
            })
            .collect()
    }

    /// Replace bytes `span` of the text with `new` and read it all again.
    fn splice(&mut self, span: (usize, usize), new: &str) -> DocResult<()> {
        let mut text = String::with_capacity(self.text.len() + new.len());
        text.push_str(&self.text[..span.0]);
        text.push_str(new);
        text.push_str(&self.text[span.1..]);
        *self = Cubeset::read(text)
            .map_err(|e| DocError::new(format!("internal error: the re-emitted cubeset does not read back: {e}")))?;
        Ok(())
    }
}

impl Document for Cubeset {
    const NAME: &'static str = "cubeset";

    fn sniff(_path: &Path, head: &[u8]) -> bool {
        head.windows(SNIFF.len()).any(|w| w == SNIFF)
    }

    fn decode(bytes: &[u8], _ctx: &Context) -> DocResult<Self> {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            return Err(DocError::new("a gzipped cubeset: gunzip it first (worldfs writes plain text)"));
        }
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| DocError::new("the cubeset is not UTF-8 text"))?;
        Cubeset::read(text)
    }

    fn encode(&self) -> DocResult<Vec<u8>> {
        Ok(self.text.clone().into_bytes())
    }

    fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("metadata", true), Entry::dir("pieces")];
        for (i, p) in self.pieces.iter().enumerate() {
            let d = format!("pieces/{}", self.dir(i));
            v.push(Entry::dir(d.clone()));
            v.push(Entry::file(format!("{d}/size"), false));
            v.push(Entry::file(format!("{d}/hitbox"), true));
            if p.blocks.is_some() {
                v.push(Entry::file(format!("{d}/legend"), true));
                v.push(Entry::file(format!("{d}/layers"), true));
            }
            v.push(Entry::file(format!("{d}/connectors"), true));
            v.push(Entry::file(format!("{d}/metadata"), true));
        }
        v
    }

    fn render(&self, path: &str) -> DocResult<Vec<u8>> {
        if path == "metadata" {
            return Ok(piece::render_metadata(&self.metadata).into_bytes());
        }
        let (i, file) = self.piece_of(path).ok_or_else(|| DocError::new("no such file"))?;
        Ok(self.pieces[i].render(&file)?.into_bytes())
    }

    fn apply(&mut self, path: &str, content: &[u8]) -> DocResult<()> {
        let text = std::str::from_utf8(content).map_err(|_| DocError::new("not UTF-8 text"))?;
        if path == "metadata" {
            let entries = piece::parse_metadata(text, &self.metadata)?;
            if !entries.iter().any(|(k, v, _)| k == "CubesetFormatVersion" && v.text().trim() == "1") {
                return Err(DocError::new("CubesetFormatVersion = 1 must stay (Cuberite refuses the set without it)"));
            }
            let span = self.metadata_span;
            let new = self.indented(span.0, &piece::emit_metadata(&entries, ""));
            return self.splice(span, &new);
        }
        let (i, file) = self.piece_of(path).ok_or_else(|| DocError::new("no such file"))?;
        let mut p = self.pieces[i].clone();
        p.apply(&file, text)?;
        let (span, value) = p.edit.take().ok_or_else(|| DocError::new("the edit was not kept").in_file(path))?;
        let value = if file == "legend" { piece::keep_def_comments(&self.text[span.0..span.1], &value) } else { value };
        let new = self.indented(span.0, &value);
        self.splice(span, &new)
    }

    /// A piece's `hitbox` is its min and its max line.
    fn complete(&self, path: &str, content: &[u8]) -> bool {
        self.piece_of(path).is_some_and(|(_, file)| file == "hitbox") && crate::documents::complete_lines(content, 2)
    }

    fn readme(&self) -> String {
        format!(
            "worldfs: this directory is a Cuberite prefab set (.cubeset) with {} piece(s).\n\n\
             metadata                the set's metadata, \"Key = value\" per line\n\
             pieces/NN_name/         one directory per piece:\n\
               size                  \"x y z\" (read-only)\n\
               hitbox                \"min X Y Z\" and \"max X Y Z\" lines\n\
               legend                one character per line: \"c id:meta\" (Minecraft block id and meta)\n\
               layers                the blocks: one block of rows per Y level from the bottom,\n\
                                     rows from z = 0, one character per x (see docs/layout.md)\n\
               connectors            \"type x y z direction\" per connector\n\
               metadata              the piece's metadata, \"Key = value\" per line\n\n\
             An edit rewrites only that piece (or the set's Metadata) in the file; every\n\
             other byte stays as it was. A bad edit fails at close (EINVAL) and the reason\n\
             is in write-errors.\n",
            self.pieces.len()
        )
    }
}
