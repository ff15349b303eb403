//! Why a document, or a file of a view, could not be decoded, encoded or
//! edited: what, where (file, line, column) and why. In the codec crate,
//! where the text formats are parsed, so that the codecs, the views and
//! every kind of world above them say it the same way.

use std::fmt;

/// Why a document could not be decoded, encoded or edited: what, where, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocError {
    /// The file of the tree it concerns (`layers`, `groups/00_Game/...`), if any.
    pub path: Option<String>,
    /// 1-based line (of that file, or of a text document) it concerns, if any.
    pub line: Option<usize>,
    /// 1-based column, if any.
    pub column: Option<usize>,
    /// Why: what is wrong, in words a user can act on.
    pub message: String,
}

impl DocError {
    /// An error that names no file, line or column.
    pub fn new(message: impl Into<String>) -> DocError {
        DocError { path: None, line: None, column: None, message: message.into() }
    }
    /// An error at 1-based line `line`.
    pub fn at_line(line: usize, message: impl Into<String>) -> DocError {
        DocError { line: Some(line), ..DocError::new(message) }
    }
    /// An error at 1-based `line` and `column`.
    pub fn at(line: usize, column: usize, message: impl Into<String>) -> DocError {
        DocError { line: Some(line), column: Some(column), ..DocError::new(message) }
    }
    /// The same error, said of file `path` (unless it already names one).
    pub fn in_file(mut self, path: &str) -> DocError {
        if self.path.is_none() {
            self.path = Some(path.to_string());
        }
        self
    }
}

impl fmt::Display for DocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: ")?,
            (Some(l), None) => write!(f, "line {l}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for DocError {}

/// A result whose error is a [`DocError`].
pub type DocResult<T> = Result<T, DocError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_where_why() {
        let e = DocError::at(3, 7, "unknown character 'q' (not in the legend)").in_file("layers");
        assert_eq!(e.to_string(), "layers: line 3, column 7: unknown character 'q' (not in the legend)");
        assert_eq!(DocError::at_line(2, "x").in_file("a").in_file("b").to_string(), "a: line 2: x");
        assert_eq!(DocError::new("truncated").to_string(), "truncated");
    }
}
