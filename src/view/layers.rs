//! The `layers` drawing: a box of nodes as text, one character per node,
//! one block of rows per Y level from the bottom up, with a legend that says
//! what each character stands for. Shared by every kind of world that has
//! nodes in a box (Luanti blocks, schematics, cubeset pieces, chunk
//! sections); each kind decides what a legend label means (a node name,
//! with param2 or a probability) and which way its rows run.
//!
//! ```text
//! # layers: 3 x 2 x 2 nodes (x y z); one block of rows per Y level, bottom first;
//! # rows: z from 1 (north, top) to 0; characters: x from 0 (west) to 2
//! . air
//! s default:stone
//!
//! y=0
//! sss
//! s.s
//!
//! y=1
//! ...
//! ...
//! ```
//!
//! Reading it back: `#` lines are comments; the legend is every line before
//! the first `y=` line, a character, a space and its label; a level is a
//! `y=N` line followed by exactly one row per Z, each exactly one character
//! per X (trailing spaces are ignored, since editors strip them). Levels may
//! come in any order but each exactly once. Characters are Unicode scalar
//! values, so boxes with more than 90 different labels still draw.
//! Pure functions.

use std::collections::HashMap;
use worldfs_codec::error::{DocError, DocResult};

/// Which way rows run inside a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// The first row is the largest Z (Luanti: +Z is north, so north is at
    /// the top, as on a map).
    ZDescending,
    /// The first row is Z = 0 (Minecraft and Cuberite: -Z is north, and the
    /// order of a cubeset's BlockData).
    ZAscending,
}

/// How a box is drawn: its size, the world coordinates of its first node
/// (shown in the `y=` lines and the header) and the row order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub size: [usize; 3],
    pub origin: [i64; 3],
    pub rows: Rows,
}

impl Frame {
    pub(crate) fn new(size: [usize; 3], rows: Rows) -> Frame {
        Frame { size, origin: [0; 3], rows }
    }

    /// The Z of the `row`-th row of a level.
    fn z_of_row(&self, row: usize) -> usize {
        match self.rows {
            Rows::ZAscending => row,
            Rows::ZDescending => self.size[2] - 1 - row,
        }
    }

    fn header(&self) -> String {
        let [sx, sy, sz] = self.size;
        let [ox, _, oz] = self.origin;
        let (zfirst, zlast, top) = match self.rows {
            Rows::ZDescending => (oz + sz as i64 - 1, oz, "north, top"),
            Rows::ZAscending => (oz, oz + sz as i64 - 1, "north, top"),
        };
        format!(
            "# layers: {sx} x {sy} x {sz} nodes (x y z); one block of rows per Y level, bottom first;\n\
             # rows: z from {zfirst} ({top}) to {zlast}; characters: x from {ox} (west) to {}\n",
            ox + sx as i64 - 1
        )
    }
}

/// One legend line: a character and what it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegendEntry {
    pub(crate) ch: char,
    pub label: String,
    /// The 1-based line it was read from (0 when made, not read).
    pub(crate) line: usize,
}

/// A legend being built for rendering: labels get characters in order of
/// first use, preferring the ones a kind suggests (`.` for air, the first
/// letter of a name...).
#[derive(Default)]
pub(crate) struct LegendBuilder {
    entries: Vec<LegendEntry>,
    by_label: HashMap<String, usize>,
    used: std::collections::HashSet<char>,
}

/// Characters tried, in order, when a label's preferred ones are taken.
const FALLBACK: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\
                        @$%&*+=?!<>^~;:'\"`|/\\()[]{}_-,";

/// Whether a character can stand for something in a legend.
pub(crate) fn usable(c: char) -> bool {
    !c.is_whitespace() && !c.is_control() && c != '#' && c != '\u{feff}'
}

impl LegendBuilder {
    pub(crate) fn new() -> LegendBuilder {
        LegendBuilder::default()
    }

    /// The index of `label`, adding it (with a character from `preferred`,
    /// else the first free one) when it is new.
    #[allow(
        clippy::expect_used,
        reason = "a drawing has at most 4096 labels and more than 20000 characters to give them"
    )]
    pub(crate) fn index(&mut self, label: &str, preferred: &[char]) -> usize {
        if let Some(&i) = self.by_label.get(label) {
            return i;
        }
        let ch = preferred
            .iter()
            .copied()
            .chain(FALLBACK.chars())
            // then letters of other scripts: Greek, Cyrillic, CJK...
            .chain((0x3b1u32..0x3ca).chain(0x430..0x450).chain(0x4e00..0x9fff).filter_map(char::from_u32))
            .find(|c| usable(*c) && !self.used.contains(c))
            .expect("more labels than characters");
        self.used.insert(ch);
        self.entries.push(LegendEntry { ch, label: label.to_string(), line: 0 });
        self.by_label.insert(label.to_string(), self.entries.len() - 1);
        self.entries.len() - 1
    }

    pub(crate) fn entries(&self) -> &[LegendEntry] {
        &self.entries
    }

    pub(crate) fn into_entries(self) -> Vec<LegendEntry> {
        self.entries
    }
}

/// The legend lines (`c label`), one per entry.
pub(crate) fn render_legend(legend: &[LegendEntry]) -> String {
    legend.iter().map(|e| format!("{} {}\n", e.ch, e.label)).collect()
}

/// The levels of a box: `cell(x, y, z)` is the legend index of a node
/// (coordinates relative to the box).
pub(crate) fn render_levels(
    frame: &Frame,
    legend: &[LegendEntry],
    cell: impl Fn(usize, usize, usize) -> usize,
) -> String {
    let [sx, sy, sz] = frame.size;
    let mut out = String::with_capacity((sx + 1) * sy * (sz + 1) + 16 * sy);
    for y in 0..sy {
        if y > 0 {
            out.push('\n');
        }
        out.push_str(&format!("y={}\n", frame.origin[1] + y as i64));
        for row in 0..sz {
            let z = frame.z_of_row(row);
            for x in 0..sx {
                out.push(legend[cell(x, y, z)].ch);
            }
            out.push('\n');
        }
    }
    out
}

/// The length in bytes of [`render`]'s text, from how many cells each
/// legend entry covers (without drawing it).
pub(crate) fn rendered_len(frame: &Frame, legend: &[LegendEntry], cells_per_entry: &[usize]) -> usize {
    let [_, sy, sz] = frame.size;
    let legend_len: usize = legend.iter().map(|e| e.ch.len_utf8() + 1 + e.label.len() + 1).sum();
    let cells: usize = legend.iter().zip(cells_per_entry).map(|(e, n)| e.ch.len_utf8() * n).sum();
    let levels: usize = (0..sy).map(|y| format!("y={}\n", frame.origin[1] + y as i64).len()).sum();
    frame.header().len() + legend_len + 1 + cells + sy * sz + levels + sy.saturating_sub(1)
}

/// The whole drawing: header, legend, levels.
pub(crate) fn render(frame: &Frame, legend: &[LegendEntry], cell: impl Fn(usize, usize, usize) -> usize) -> String {
    format!("{}{}\n{}", frame.header(), render_legend(legend), render_levels(frame, legend, cell))
}

/// A drawing read back: the legend and the legend index of every node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drawing {
    pub legend: Vec<LegendEntry>,
    size: [usize; 3],
    cells: Vec<u32>,
}

impl Drawing {
    /// The legend index of node (x, y, z) of the box.
    pub fn at(&self, x: usize, y: usize, z: usize) -> usize {
        let [sx, _, sz] = self.size;
        self.cells[(y * sz + z) * sx + x] as usize
    }
}

/// A line without its line break and trailing blanks.
fn trimmed(line: &str) -> &str {
    line.trim_end_matches([' ', '\t', '\r'])
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// Read legend lines (`c label`) from `lines` (numbered from `first_line`).
pub(crate) fn parse_legend<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> DocResult<Vec<LegendEntry>> {
    let mut legend: Vec<LegendEntry> = Vec::new();
    for (n, raw) in lines {
        let line = trimmed(raw).trim_start_matches('\u{feff}');
        if line.trim().is_empty() || is_comment(line) {
            continue;
        }
        let mut chars = line.chars();
        let Some(ch) = chars.next() else { continue };
        let rest = chars.as_str();
        if !usable(ch) {
            return Err(DocError::at(n, 1, format!("{ch:?} cannot stand for a node (use a visible character)")));
        }
        if rest.trim().is_empty() {
            return Err(DocError::at(n, 3, format!("'{ch}' stands for nothing (a label is missing)")));
        }
        if !rest.starts_with([' ', '\t']) {
            return Err(DocError::at(
                n,
                2,
                "a legend line is one character, a space, and what it stands for (e.g. `s default:stone`)",
            ));
        }
        let label = rest.trim();
        if let Some(prev) = legend.iter().find(|e| e.ch == ch) {
            return Err(DocError::at(n, 1, format!("'{ch}' is already in the legend (line {})", prev.line)));
        }
        legend.push(LegendEntry { ch, label: label.to_string(), line: n });
    }
    Ok(legend)
}

/// Read the levels of a box drawn with `legend` (lines numbered from 1 +
/// `line_offset`).
pub(crate) fn parse_levels(
    frame: &Frame,
    legend: &[LegendEntry],
    text: &str,
    line_offset: usize,
) -> DocResult<Drawing> {
    let [sx, sy, sz] = frame.size;
    let by_char: HashMap<char, usize> = legend.iter().enumerate().map(|(i, e)| (e.ch, i)).collect();
    let mut cells = vec![u32::MAX; sx * sy * sz];
    let mut seen: Vec<Option<usize>> = vec![None; sy];
    // The level being read, and how many of its rows were read.
    let mut level: Option<(usize, usize, usize)> = None; // (y, rows read, header line)
    let finish = |level: Option<(usize, usize, usize)>, at: usize| -> DocResult<()> {
        match level {
            Some((y, rows, header)) if rows < sz => Err(DocError::at_line(
                at,
                format!(
                    "level y={} (line {header}) has {rows} rows; it needs {sz} (one per z)",
                    frame.origin[1] + y as i64
                ),
            )),
            _ => Ok(()),
        }
    };
    let is_row = |line: &str| line.chars().count() == sx && line.chars().all(|c| by_char.contains_key(&c));
    let mut last_line = line_offset;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1 + line_offset;
        last_line = n;
        let line = trimmed(raw).trim_start_matches('\u{feff}');
        if is_comment(line) {
            continue;
        }
        // A level still short of rows takes a line of legend characters as
        // its next row, even one that starts "y=" (both can be in a legend).
        let wants_row = matches!(level, Some((_, rows, _)) if rows < sz);
        let header = if wants_row && is_row(line) { None } else { line.trim().strip_prefix("y=") };
        if let Some(num) = header {
            finish(level, n)?;
            let wy: i64 = num
                .trim()
                .parse()
                .map_err(|_| DocError::at(n, 3, format!("'{}' is not a whole number", num.trim())))?;
            let y = wy - frame.origin[1];
            if y < 0 || y >= sy as i64 {
                return Err(DocError::at_line(
                    n,
                    format!(
                        "y={wy} is outside the box (y runs from {} to {})",
                        frame.origin[1],
                        frame.origin[1] + sy as i64 - 1
                    ),
                ));
            }
            let y = y as usize;
            if let Some(prev) = seen[y] {
                return Err(DocError::at_line(n, format!("level y={wy} is drawn twice (first at line {prev})")));
            }
            seen[y] = Some(n);
            level = Some((y, 0, n));
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let Some((y, rows, header)) = level.as_mut() else {
            return Err(DocError::at_line(n, "a row before the first level line (y=N)"));
        };
        if *rows == sz {
            return Err(DocError::at_line(
                n,
                format!(
                    "level y={} (line {header}) already has its {sz} rows; start the next with y=N",
                    frame.origin[1] + *y as i64
                ),
            ));
        }
        let z = frame.z_of_row(*rows);
        let mut x = 0;
        for (col, c) in line.chars().enumerate() {
            if x == sx {
                return Err(DocError::at(n, col + 1, format!("row is longer than {sx} characters (one per x)")));
            }
            let Some(&idx) = by_char.get(&c) else {
                return Err(DocError::at(n, col + 1, format!("'{c}' is not in the legend")));
            };
            cells[(*y * sz + z) * sx + x] = idx as u32;
            x += 1;
        }
        if x < sx {
            return Err(DocError::at(n, x + 1, format!("row has {x} characters; it needs {sx} (one per x)")));
        }
        *rows += 1;
    }
    finish(level, last_line + 1)?;
    if let Some(y) = seen.iter().position(|s| s.is_none()) {
        return Err(DocError::at_line(last_line.max(1), format!("level y={} is missing", frame.origin[1] + y as i64)));
    }
    Ok(Drawing { legend: legend.to_vec(), size: frame.size, cells })
}

/// Read a whole drawing (legend, then levels) made by [`render`].
pub fn parse(frame: &Frame, text: &str) -> DocResult<Drawing> {
    let legend_end =
        text.lines().position(|l| trimmed(l).trim().starts_with("y=")).unwrap_or_else(|| text.lines().count());
    let legend = parse_legend(text.lines().take(legend_end).enumerate().map(|(i, l)| (i + 1, l)))?;
    let rest: String = text.lines().skip(legend_end).map(|l| format!("{l}\n")).collect();
    parse_levels(frame, &legend, &rest, legend_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Frame, Vec<LegendEntry>, Vec<usize>) {
        let frame = Frame { size: [3, 2, 2], origin: [16, 32, -16], rows: Rows::ZDescending };
        let mut b = LegendBuilder::new();
        let air = b.index("air", &['.']);
        let stone = b.index("default:stone", &['s']);
        let cells: Vec<usize> = (0..12).map(|i| if i % 3 == 0 { air } else { stone }).collect();
        (frame, b.into_entries(), cells)
    }

    fn idx(f: &Frame, x: usize, y: usize, z: usize) -> usize {
        (y * f.size[2] + z) * f.size[0] + x
    }

    #[test]
    fn renders_north_up_and_reads_back() {
        let (f, legend, cells) = sample();
        let text = render(&f, &legend, |x, y, z| cells[idx(&f, x, y, z)]);
        let per_entry: Vec<usize> = (0..legend.len()).map(|l| cells.iter().filter(|&&c| c == l).count()).collect();
        assert_eq!(rendered_len(&f, &legend, &per_entry), text.len());
        assert!(text.contains("rows: z from -15 (north, top) to -16; characters: x from 16 (west) to 18"), "{text}");
        assert!(text.contains(". air\ns default:stone\n\ny=32\n"), "{text}");
        let d = parse(&f, &text).unwrap();
        for (y, z, x) in itertools(&f) {
            assert_eq!(d.at(x, y, z), cells[idx(&f, x, y, z)]);
        }
        // First row of level 0 is z = 1 (north).
        let rows: Vec<&str> = text.lines().skip_while(|l| *l != "y=32").skip(1).take(2).collect();
        let want: String = (0..3).map(|x| legend[cells[idx(&f, x, 0, 1)]].ch).collect();
        assert_eq!(rows[0], want);
    }

    fn itertools(f: &Frame) -> Vec<(usize, usize, usize)> {
        let mut v = Vec::new();
        for y in 0..f.size[1] {
            for z in 0..f.size[2] {
                for x in 0..f.size[0] {
                    v.push((y, z, x));
                }
            }
        }
        v
    }

    #[test]
    fn editors_may_strip_blanks_and_reorder_levels() {
        let f = Frame::new([2, 2, 1], Rows::ZAscending);
        let text = "\u{feff}# hi\n. air  \nx default:dirt\r\n\n\ny=1\nx.   \n# note\ny=0\n..\n";
        let d = parse(&f, text).unwrap();
        assert_eq!(d.legend.len(), 2);
        assert_eq!((d.at(0, 1, 0), d.at(1, 1, 0), d.at(0, 0, 0)), (1, 0, 0));
    }

    #[test]
    fn bad_drawings_name_line_and_column() {
        let f = Frame::new([3, 1, 2], Rows::ZAscending);
        let cases = [
            ("s a\ny=0\nsss\nsqs\n", "line 4, column 2: 'q' is not in the legend"),
            ("s a\ny=0\nsss\nss\n", "line 4, column 3: row has 2 characters; it needs 3"),
            ("s a\ny=0\nsss\nssss\n", "line 4, column 4: row is longer than 3"),
            ("s a\ny=0\nsss\n", "line 4: level y=0 (line 2) has 1 rows; it needs 2"),
            ("s a\ny=0\nsss\nsss\nsss\n", "line 5: level y=0 (line 2) already has its 2 rows"),
            ("s a\ny=1\nsss\nsss\n", "line 2: y=1 is outside the box"),
            ("s a\ny=x\n", "line 2, column 3: 'x' is not a whole number"),
            ("s a\ns b\ny=0\n", "line 2, column 1: 's' is already in the legend (line 1)"),
            ("sa\ny=0\n", "line 1, column 2: a legend line is one character"),
            ("s\ny=0\n", "line 1, column 3: 's' stands for nothing"),
            ("s a\n", "level y=0 is missing"),
            ("s a\ny=0\nsss\nsss\ny=0\nsss\nsss\n", "line 5: level y=0 is drawn twice (first at line 2)"),
        ];
        for (text, want) in cases {
            let e = parse(&f, text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// With 'y', '=' and digits in the legend (a drawing of 64+ labels has
    /// them) a row can read "y=1": a level short of rows takes it as a row.
    #[test]
    fn a_row_that_reads_like_a_level_line_is_a_row() {
        let f = Frame::new([3, 2, 2], Rows::ZAscending);
        let text = "y a\n= b\n0 c\n1 d\ny=0\ny=0\ny=1\ny=1\ny=0\ny=1\n";
        let d = parse(&f, text).unwrap();
        let row = |y, z| (0..3).map(|x| d.legend[d.at(x, y, z)].ch).collect::<String>();
        assert_eq!([row(0, 0), row(0, 1), row(1, 0), row(1, 1)], ["y=0", "y=1", "y=0", "y=1"]);
        // A level line where a full level is done still starts a level.
        let e = parse(&f, "y a\n= b\n0 c\ny=0\ny=0\ny=0\ny=0\n").unwrap_err().to_string();
        assert!(e.contains("line 7: level y=0 is drawn twice (first at line 4)"), "{e}");
    }

    #[test]
    fn many_labels_get_distinct_characters() {
        let mut b = LegendBuilder::new();
        for i in 0..1000 {
            b.index(&format!("mod:n{i}"), &['n']);
        }
        let legend = b.into_entries();
        let chars: std::collections::HashSet<char> = legend.iter().map(|e| e.ch).collect();
        assert_eq!(chars.len(), 1000);
        assert!(chars.iter().all(|&c| usable(c)));
        let f = Frame::new([1000, 1, 1], Rows::ZAscending);
        let text = render(&f, &legend, |x, _, _| x);
        let d = parse(&f, &text).unwrap();
        assert!((0..1000).all(|x| d.at(x, 0, 0) == x));
    }
}
