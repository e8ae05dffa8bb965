//! Drawing the line being edited. Pure: `draw` gets the prompt, the text, the cursor and the
//! terminal's width and returns the bytes that redraw it (from wherever the last drawing left
//! the cursor) and the row the cursor ends on. Long lines wrap the way terminals wrap them:
//! a cell at a time, a wide character that does not fit moving whole to the next row, and a
//! row filled to the last column leaving the cursor "pending" until the next character.
//!
//! Characters are measured by `width`, a small table of the common East Asian wide and the
//! zero-width ranges. Control characters are shown in caret notation (`^[`), tabs as spaces,
//! so nothing in the text can move the terminal's cursor behind turn's back.

use std::fmt::Write;

/// Columns a tab takes.
const TAB: usize = 4;
/// Narrower terminals are treated as this wide, so every character fits on a row.
const MIN_COLUMNS: usize = 4;

/// Ranges of characters a terminal shows two columns wide (East Asian Wide and Fullwidth,
/// and emoji shown as pictures), sorted.
const WIDE: &[(u32, u32)] = &[
    (0x1100, 0x115f),
    (0x231a, 0x231b),
    (0x2329, 0x232a),
    (0x23e9, 0x23ec),
    (0x23f0, 0x23f0),
    (0x23f3, 0x23f3),
    (0x25fd, 0x25fe),
    (0x2614, 0x2615),
    (0x2648, 0x2653),
    (0x267f, 0x267f),
    (0x2693, 0x2693),
    (0x26a1, 0x26a1),
    (0x26aa, 0x26ab),
    (0x26bd, 0x26be),
    (0x26c4, 0x26c5),
    (0x26ce, 0x26ce),
    (0x26d4, 0x26d4),
    (0x26ea, 0x26ea),
    (0x26f2, 0x26f3),
    (0x26f5, 0x26f5),
    (0x26fa, 0x26fa),
    (0x26fd, 0x26fd),
    (0x2705, 0x2705),
    (0x270a, 0x270b),
    (0x2728, 0x2728),
    (0x274c, 0x274c),
    (0x274e, 0x274e),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2795, 0x2797),
    (0x27b0, 0x27b0),
    (0x27bf, 0x27bf),
    (0x2b1b, 0x2b1c),
    (0x2b50, 0x2b50),
    (0x2b55, 0x2b55),
    (0x2e80, 0x303e),
    (0x3041, 0x33ff),
    (0x3400, 0x4dbf),
    (0x4e00, 0x9fff),
    (0xa000, 0xa4cf),
    (0xa960, 0xa97f),
    (0xac00, 0xd7a3),
    (0xf900, 0xfaff),
    (0xfe10, 0xfe19),
    (0xfe30, 0xfe6f),
    (0xff00, 0xff60),
    (0xffe0, 0xffe6),
    (0x16fe0, 0x16fe4),
    (0x17000, 0x18cff),
    (0x1b000, 0x1b2ff),
    (0x1f004, 0x1f004),
    (0x1f0cf, 0x1f0cf),
    (0x1f18e, 0x1f18e),
    (0x1f191, 0x1f19a),
    (0x1f200, 0x1f251),
    (0x1f300, 0x1f64f),
    (0x1f680, 0x1f6ff),
    (0x1f7e0, 0x1f7eb),
    (0x1f900, 0x1f9ff),
    (0x1fa70, 0x1faff),
    (0x20000, 0x2fffd),
    (0x30000, 0x3fffd),
];

/// Ranges of characters that take no column of their own (combining marks, joiners,
/// variation selectors), sorted.
const ZERO: &[(u32, u32)] = &[
    (0x0300, 0x036f),
    (0x0483, 0x0489),
    (0x0591, 0x05bd),
    (0x0610, 0x061a),
    (0x064b, 0x065f),
    (0x1ab0, 0x1aff),
    (0x1dc0, 0x1dff),
    (0x200b, 0x200f),
    (0x2060, 0x2064),
    (0x20d0, 0x20ff),
    (0xfe00, 0xfe0f),
    (0xfe20, 0xfe2f),
    (0xfeff, 0xfeff),
    (0xe0100, 0xe01ef),
];

fn within(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Columns `c` takes on a terminal when printed as itself: 0, 1 or 2.
pub fn width(c: char) -> usize {
    if within(ZERO, c) {
        0
    } else if within(WIDE, c) {
        2
    } else {
        1
    }
}

/// How one character of the text is drawn.
enum Shown {
    /// Itself, this many columns wide.
    Plain(char, usize),
    /// Single-column cells that may wrap apart: `^X` for a control character, spaces for a tab.
    Cells(&'static str, char),
    /// A newline in the text: the drawing goes on at the start of the next row.
    Newline,
}

fn shown(c: char) -> Shown {
    match c {
        '\n' => Shown::Newline,
        '\t' => Shown::Cells("", ' '),
        '\x7f' => Shown::Cells("^", '?'),
        c if (c as u32) < 0x20 => Shown::Cells("^", (c as u8 + b'@') as char),
        // C1 controls: some terminals act on them even in UTF-8.
        '\u{80}'..='\u{9f}' => Shown::Plain('\u{fffd}', 1),
        c => Shown::Plain(c, width(c)),
    }
}

/// A place on the screen, relative to the prompt's first row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pos {
    pub row: usize,
    pub col: usize,
}

/// Walks the cells of the prompt and the text the way the terminal places them.
struct Walker {
    columns: usize,
    at: Pos,
    out: String,
}

impl Walker {
    /// Places a cell `w` columns wide, wrapping first when it does not fit; returns where.
    fn cell(&mut self, c: char, w: usize) -> Pos {
        if w > 0 && self.at.col + w > self.columns {
            self.at = Pos {
                row: self.at.row + 1,
                col: 0,
            };
        }
        let placed = self.at;
        self.out.push(c);
        self.at.col += w;
        placed
    }

    /// Draws one character of the text; returns where its first cell went.
    fn put(&mut self, c: char) -> Pos {
        match shown(c) {
            Shown::Plain(c, w) => self.cell(c, w),
            Shown::Cells(prefix, last) => {
                let mut first = None;
                let cells = if prefix.is_empty() { TAB } else { 2 };
                for i in 0..cells {
                    let cell = if i + 1 == cells { last } else { '^' };
                    let cell = if prefix.is_empty() { ' ' } else { cell };
                    let placed = self.cell(cell, 1);
                    first.get_or_insert(placed);
                }
                first.expect("at least one cell")
            }
            Shown::Newline => {
                let placed = self.at;
                self.out.push_str("\r\n");
                self.at = Pos {
                    row: self.at.row + 1,
                    col: 0,
                };
                placed
            }
        }
    }

    /// Where the next character would start: past a full row, the next row's start.
    fn next(&self) -> Pos {
        if self.at.col >= self.columns {
            Pos {
                row: self.at.row + 1,
                col: 0,
            }
        } else {
            self.at
        }
    }
}

/// Where the cursor and the end of the drawing are, and the text as written to the terminal.
#[derive(Debug, PartialEq)]
pub struct Layout {
    pub cursor: Pos,
    pub end: Pos,
    text: String,
    /// The last row is full: the terminal's cursor waits at its edge.
    pending: bool,
}

/// Lays out `prompt` and `text` on a terminal `columns` wide with the cursor before
/// `text[cursor]` (a char index; `text.len()` is the end).
pub fn layout(prompt: &str, text: &[char], cursor: usize, columns: usize) -> Layout {
    let mut walker = Walker {
        columns: columns.max(MIN_COLUMNS),
        at: Pos::default(),
        out: String::new(),
    };
    for c in prompt.chars() {
        walker.put(c);
    }
    let mut at_cursor = None;
    for (i, &c) in text.iter().enumerate() {
        // The cursor sits where the character under it starts (wrapped, if it wraps).
        let before = walker.next();
        let placed = walker.put(c);
        if i == cursor {
            at_cursor = Some(if width(c) == 0 { before } else { placed });
        }
    }
    let end = walker.next();
    let cursor = match at_cursor {
        Some(pos) if pos.col >= walker.columns => Pos {
            row: pos.row + 1,
            col: 0,
        },
        Some(pos) => pos,
        None => end,
    };
    Layout {
        cursor,
        end,
        pending: walker.at.col >= walker.columns,
        text: walker.out,
    }
}

/// The bytes that redraw the line, starting from the cursor left `from_row` rows below the
/// prompt's first row by the previous drawing; and the row the cursor is left on.
pub fn draw(
    prompt: &str,
    text: &[char],
    cursor: usize,
    columns: usize,
    from_row: usize,
) -> (String, usize) {
    let layout = layout(prompt, text, cursor, columns);
    let mut out = String::new();
    if from_row > 0 {
        let _ = write!(out, "\x1b[{from_row}A");
    }
    out.push_str("\r\x1b[J");
    out.push_str(&layout.text);
    if layout.pending {
        // Leave the pending state, so cursor moves count from a real place.
        out.push_str("\r\n");
    }
    let up = layout.end.row - layout.cursor.row;
    if up > 0 {
        let _ = write!(out, "\x1b[{up}A");
    }
    out.push('\r');
    if layout.cursor.col > 0 {
        let _ = write!(out, "\x1b[{}C", layout.cursor.col);
    }
    (out, layout.cursor.row)
}

/// The bytes that leave a drawn line for good: the cursor goes below its last row.
pub fn finish(prompt: &str, text: &[char], cursor: usize, columns: usize) -> String {
    let layout = layout(prompt, text, cursor, columns);
    let mut out = String::new();
    let down = layout.end.row - layout.cursor.row;
    if down > 0 {
        let _ = write!(out, "\x1b[{down}B");
    }
    // A full last row already left the cursor at the start of a fresh one.
    out.push_str(if layout.pending { "\r" } else { "\r\n" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    fn pos(row: usize, col: usize) -> Pos {
        Pos { row, col }
    }

    #[test]
    fn widths_of_common_characters() {
        for (c, w) in [
            ('a', 1),
            ('é', 1),
            ('ж', 1),
            ('日', 2),
            ('한', 2),
            ('ア', 2),
            ('Ａ', 2),
            ('🙂', 2),
            ('🚀', 2),
            ('✅', 2),
            ('\u{301}', 0),
            ('\u{200d}', 0),
            ('\u{fe0f}', 0),
            ('→', 1),
        ] {
            assert_eq!(width(c), w, "{c:?}");
        }
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        for table in [WIDE, ZERO] {
            for pair in table.windows(2) {
                assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:?}");
            }
        }
    }

    #[test]
    fn a_short_line_stays_on_one_row() {
        let l = layout("> ", &chars("hello"), 2, 80);
        assert_eq!((l.cursor, l.end, l.pending), (pos(0, 4), pos(0, 7), false));
        assert_eq!(l.text, "> hello");
    }

    #[test]
    fn long_lines_wrap_at_the_width() {
        // "> " + 8 chars on a 10-column terminal fills the row exactly: the end is the next
        // row's start, and the terminal's cursor is pending there.
        let text = chars("abcdefgh");
        let l = layout("> ", &text, 8, 10);
        assert_eq!((l.cursor, l.end, l.pending), (pos(1, 0), pos(1, 0), true));
        let l = layout("> ", &text, 7, 10);
        assert_eq!(l.cursor, pos(0, 9));
        let text = chars("abcdefghijklmnopqrstuvw"); // 25 columns with the prompt
        let l = layout("> ", &text, 18, 10);
        assert_eq!((l.cursor, l.end, l.pending), (pos(2, 0), pos(2, 5), false));
        let l = layout("> ", &text, 0, 10);
        assert_eq!(l.cursor, pos(0, 2));
    }

    #[test]
    fn a_wide_character_that_does_not_fit_moves_to_the_next_row() {
        // 9 columns used on a 10-column row: 日 (2 wide) goes to the next row whole.
        let text = chars("abcdefg日x");
        let l = layout("> ", &text, 7, 10);
        assert_eq!(l.cursor, pos(1, 0));
        assert_eq!(l.end, pos(1, 3));
        let l = layout("> ", &text, 8, 10);
        assert_eq!(l.cursor, pos(1, 2));
        // Wide characters fill rows exactly when they fit.
        let l = layout("", &chars("日本語日本"), 5, 10);
        assert_eq!((l.end, l.pending), (pos(1, 0), true));
    }

    #[test]
    fn combining_marks_take_no_column_and_the_cursor_stays_put() {
        let text = chars("e\u{301}x");
        let l = layout("> ", &text, 1, 80);
        assert_eq!(l.cursor, pos(0, 3), "before the mark: just after the e");
        assert_eq!(layout("> ", &text, 2, 80).cursor, pos(0, 3));
        assert_eq!(l.end, pos(0, 4));
    }

    #[test]
    fn newlines_and_control_characters() {
        let text = chars("ab\ncd\x1b[D\te");
        let l = layout("> ", &text, 3, 80);
        assert_eq!(l.cursor, pos(1, 0));
        assert_eq!(l.text, "> ab\r\ncd^[[D    e");
        assert_eq!(l.end, pos(1, 2 + 2 + 2 + TAB + 1));
        // Caret cells wrap apart like any single-column cells.
        let l = layout("> ", &chars("1234567\x01"), 7, 10);
        assert_eq!((l.cursor, l.end), (pos(0, 9), pos(1, 1)));
    }

    #[test]
    fn draw_goes_back_to_the_first_row_clears_and_places_the_cursor() {
        let (out, row) = draw("> ", &chars("hello"), 5, 80, 0);
        assert_eq!(out, "\r\x1b[J> hello\r\x1b[7C");
        assert_eq!(row, 0);
        let (out, row) = draw("> ", &chars("hello"), 0, 80, 2);
        assert_eq!(out, "\x1b[2A\r\x1b[J> hello\r\x1b[2C");
        assert_eq!(row, 0);
        // Wrapped, cursor on the first row: up from the end row.
        let (out, row) = draw("> ", &chars("abcdefghijkl"), 1, 10, 0);
        assert_eq!(out, "\r\x1b[J> abcdefghijkl\x1b[1A\r\x1b[3C");
        assert_eq!(row, 0);
        // Exactly full: out of the pending state first.
        let (out, row) = draw("> ", &chars("abcdefgh"), 8, 10, 0);
        assert_eq!(out, "\r\x1b[J> abcdefgh\r\n\r");
        assert_eq!(row, 1);
    }

    #[test]
    fn finish_moves_below_the_last_row() {
        assert_eq!(finish("> ", &chars("abcdefghijkl"), 1, 10), "\x1b[1B\r\n");
        assert_eq!(finish("> ", &chars("abc"), 1, 10), "\r\n");
        // A full last row: the drawing already moved to a fresh row.
        assert_eq!(finish("> ", &chars("abcdefgh"), 8, 10), "\r");
        assert_eq!(finish("> ", &chars("abcdefgh"), 0, 10), "\x1b[1B\r");
    }
}
