//! What `edit_file` does when `old_text` is not in the file exactly. Small models copy text
//! with the indentation dropped or changed, trailing spaces lost, or lines half remembered
//! (measured on Qwen2.5-Coder-1.5B: `print('Hello, world!')` for a file's `print(message)`, the
//! same failing edit made again after reading the file). Two answers, both pure:
//!
//! - `loose`: the same lines with only leading or trailing whitespace different, found exactly
//!   once, are the text meant. The replacement is re-indented by the difference, so a block
//!   written without its indentation lands indented like the lines it replaces.
//! - `closest`: otherwise, the lines of the file most like `old_text`, numbered as `read_file`
//!   shows them, for the error message, so the model's next try copies what is there.

/// A unique whole-line match of `old_text` that differs only in whitespace at line ends.
#[derive(Debug, PartialEq)]
pub struct Loose {
    /// Byte range in the file: from the first matched line's start to the last one's end
    /// (its newline excluded).
    pub start: usize,
    pub end: usize,
    /// 1-based line of the first matched line.
    pub line: usize,
    /// `new_text` re-indented to the file's indentation, without the newline `old_text`
    /// may end with (the range excludes it too).
    pub replacement: String,
}

/// Lines of `old_text` (a final newline does not make an empty last line).
fn lines_of(text: &str) -> Vec<&str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// `content`'s lines with their byte ranges (newline and a `\r` before it excluded).
fn file_lines(content: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, _) in content.match_indices('\n') {
        let end = if content[..at].ends_with('\r') {
            at - 1
        } else {
            at
        };
        out.push((start, end));
        start = at + 1;
    }
    if start < content.len() {
        out.push((start, content.len()));
    }
    out
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The unique place where `old_text`'s lines stand in `content` with only whitespace at their
/// ends different; `None` when there is no such place or more than one. Blank lines of
/// `old_text` at its start or end are not part of the match.
pub fn loose(content: &str, old_text: &str, new_text: &str) -> Option<Loose> {
    let old = lines_of(old_text);
    let first = old.iter().position(|l| !l.trim().is_empty())?;
    let last = old.iter().rposition(|l| !l.trim().is_empty())?;
    let old = &old[first..=last];
    let lines = file_lines(content);
    let text = |i: usize| &content[lines[i].0..lines[i].1];
    // Trailing whitespace first, then both ends: the stricter rule wins if it finds one place.
    for strict in [true, false] {
        let same = |a: &str, b: &str| {
            if strict {
                a.trim_end() == b.trim_end()
            } else {
                a.trim() == b.trim()
            }
        };
        let starts: Vec<usize> = (0..(lines.len() + 1).saturating_sub(old.len()))
            .filter(|&i| old.iter().enumerate().all(|(j, o)| same(text(i + j), o)))
            .take(2)
            .collect();
        match starts[..] {
            [i] => {
                let have = indent(text(i));
                let wrote = indent(old[0]);
                return Some(Loose {
                    start: lines[i].0,
                    end: lines[i + old.len() - 1].1,
                    line: i + 1,
                    replacement: reindent(trim_blank_ends(new_text), wrote, have),
                });
            }
            [_, _] => return None,
            _ => {}
        }
    }
    None
}

/// `text` without blank lines at its start and end (the match leaves them out of `old_text`
/// too) and without its final newline.
fn trim_blank_ends(text: &str) -> String {
    let lines = lines_of(text);
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].join("\n"),
        _ => String::new(),
    }
}

/// `text` re-indented by the difference between `wrote`, the indentation the model gave its
/// first old line, and `have`, the one the file has there: the missing part added to every
/// line, or the part too many taken from the lines that have it. Blank lines stay as they are.
fn reindent(text: String, wrote: &str, have: &str) -> String {
    let change = |line: &str| -> String {
        if line.trim().is_empty() {
            line.to_string()
        } else if let Some(extra) = have.strip_prefix(wrote) {
            format!("{extra}{line}")
        } else if let Some(extra) = wrote.strip_prefix(have) {
            line.strip_prefix(extra).unwrap_or(line).to_string()
        } else {
            match line.strip_prefix(wrote) {
                Some(rest) => format!("{have}{rest}"),
                None => line.to_string(),
            }
        }
    };
    if wrote == have {
        return text;
    }
    text.split('\n').map(change).collect::<Vec<_>>().join("\n")
}

/// `text` without the line numbers read_file puts before each line (`     4\tport = 8080`),
/// when every line has one and they count up by one: small models copy them into the text
/// they write (measured on Qwen2.5-Coder-1.5B, for write_file and edit_file alike). `None`
/// when the text has fewer than two lines or any line is not numbered so. The caller uses it
/// only where the numbered text cannot be meant (see files.rs): a TSV may look the same.
pub fn unnumbered(text: &str) -> Option<String> {
    let (_, lines, joined) = strip_numbers(text)?;
    (lines >= 2).then_some(joined)
}

/// `text` without the line numbers read_file puts before each line, when every line has one
/// and they count up by one: the first line's number, how many lines, and the text (its last
/// newline kept if it had one). `None` when a line is not numbered so.
pub fn strip_numbers(text: &str) -> Option<(u64, usize, String)> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut first = None;
    let mut out = Vec::new();
    for line in body.split('\n') {
        let (number, rest) = line.trim_start_matches(' ').split_once('\t')?;
        let number: u64 = number.parse().ok()?;
        let start = *first.get_or_insert(number);
        if number != start + out.len() as u64 {
            return None;
        }
        out.push(rest);
    }
    let mut joined = out.join("\n");
    if body.len() < text.len() {
        joined.push('\n');
    }
    Some((first?, out.len(), joined))
}

/// Most lines `closest` compares, and most it shows around its best place.
const MAX_OLD_LINES: usize = 40;
const MAX_FILE_LINES: usize = 20_000;
const CONTEXT: usize = 2;

/// The lines of `content` most like `old_text`, numbered (`N<TAB>text`) with a couple of
/// lines around them; `None` when nothing is alike at all.
pub fn closest(content: &str, old_text: &str) -> Option<String> {
    let old: Vec<&str> = lines_of(old_text)
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .take(MAX_OLD_LINES)
        .collect();
    let lines: Vec<&str> = file_lines(content)
        .into_iter()
        .take(MAX_FILE_LINES)
        .map(|(a, b)| &content[a..b])
        .collect();
    if old.is_empty() || lines.is_empty() {
        return None;
    }
    let old_grams: Vec<Vec<[char; 2]>> = old.iter().map(|l| grams(l)).collect();
    let file_grams: Vec<Vec<[char; 2]>> = lines.iter().map(|l| grams(l)).collect();
    // Each old line is compared with the file line at the same distance from the start.
    let score = |i: usize| -> f64 {
        old_grams
            .iter()
            .enumerate()
            .filter_map(|(j, g)| file_grams.get(i + j).map(|f| likeness(g, f)))
            .sum()
    };
    let (best, value) = (0..lines.len())
        .map(|i| (i, score(i)))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    // Less than a fifth of one line alike: nothing worth showing.
    if value < 0.2 {
        return None;
    }
    let from = best.saturating_sub(CONTEXT);
    let to = (best + old.len() + CONTEXT).min(lines.len());
    Some(
        (from..to)
            .map(|i| format!("{}\t{}", i + 1, lines[i]))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// A line's character pairs, whitespace left out, sorted: what `likeness` compares.
fn grams(line: &str) -> Vec<[char; 2]> {
    let chars: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out: Vec<[char; 2]> = chars.windows(2).map(|w| [w[0], w[1]]).collect();
    if chars.len() == 1 {
        out.push([chars[0], ' ']);
    }
    out.sort_unstable();
    out
}

/// Dice coefficient of two sorted pair lists: 1 for the same line, 0 for nothing in common.
fn likeness(a: &[[char; 2]], b: &[[char; 2]]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(content: &str, m: &Loose) -> String {
        format!(
            "{}{}{}",
            &content[..m.start],
            m.replacement,
            &content[m.end..]
        )
    }

    const PY: &str = "def main():\n    name = 'x'\n    print(message)\n    return 0\n";

    #[test]
    fn dropped_indentation_is_found_and_given_back() {
        let m = loose(
            PY,
            "print(message)\nreturn 0",
            "print(message.upper())\nreturn 1",
        )
        .unwrap();
        assert_eq!(m.line, 3);
        assert_eq!(
            apply(PY, &m),
            "def main():\n    name = 'x'\n    print(message.upper())\n    return 1\n"
        );
    }

    #[test]
    fn trailing_spaces_and_a_final_newline_do_not_matter() {
        let content = "a = 1   \nb = 2\n";
        let m = loose(content, "a = 1\n", "a = 3\n").unwrap();
        assert_eq!(apply(content, &m), "a = 3\nb = 2\n");
        let crlf = "a = 1\r\nb = 2\r\n";
        let m = loose(crlf, "b = 2 ", "b = 4").unwrap();
        assert_eq!(apply(crlf, &m), "a = 1\r\nb = 4\r\n");
    }

    #[test]
    fn deeper_indentation_written_is_taken_back() {
        let content = "if x:\n  y()\n  z()\n";
        let m = loose(
            content,
            "        y()\n        z()",
            "        y()\n            w()",
        )
        .unwrap();
        assert_eq!(apply(content, &m), "if x:\n  y()\n      w()\n");
    }

    #[test]
    fn blank_lines_around_old_text_are_not_part_of_it() {
        let m = loose(PY, "\n\n  return 0\n\n", "\n  return 2\n").unwrap();
        assert_eq!(m.line, 4);
        assert!(apply(PY, &m).ends_with("    return 2\n"));
    }

    #[test]
    fn tabs_for_spaces_are_swapped_where_they_stand() {
        let content = "def f():\n    a()\n";
        let m = loose(content, "\ta()", "\ta()\n\tb()\nc()").unwrap();
        assert_eq!(apply(content, &m), "def f():\n    a()\n    b()\nc()\n");
    }

    #[test]
    fn two_places_or_none_is_no_match() {
        assert_eq!(loose("x = 1\nx = 1\n", "x = 1 ", "x = 2"), None);
        let content = "  x = 1\n    x = 1\n";
        assert_eq!(loose(content, "x = 1", "x = 2"), None);
        assert_eq!(loose(PY, "print(mesage)", "x"), None);
        assert_eq!(
            loose(PY, "  \n ", "x"),
            None,
            "blank old_text matches nothing"
        );
        assert_eq!(loose("", "a", "b"), None);
    }

    #[test]
    fn the_stricter_rule_decides_when_it_finds_one_place() {
        // Trimming both ends would see two places; trailing whitespace alone sees one.
        let content = "  x = 1\nx = 1  \n";
        let m = loose(content, "x = 1", "x = 2").unwrap();
        assert_eq!(m.line, 2);
        assert_eq!(apply(content, &m), "  x = 1\nx = 2\n");
    }

    #[test]
    fn line_numbers_copied_from_read_file_are_taken_out() {
        assert_eq!(
            unnumbered("     4\tport = 8080\n     5\tworkers = 4\n").as_deref(),
            Some("port = 8080\nworkers = 4\n")
        );
        assert_eq!(unnumbered("1\t# a\n2\t\n3\tb").as_deref(), Some("# a\n\nb"));
        assert_eq!(unnumbered("1\ta\n3\tb"), None, "numbers that skip");
        assert_eq!(unnumbered("1\ta\nb"), None, "a line without one");
        assert_eq!(unnumbered("4\tport = 8080"), None, "one line");
        assert_eq!(unnumbered("x\ta\ny\tb"), None);
    }

    #[test]
    fn part_of_a_line_is_not_a_loose_match() {
        assert_eq!(loose(PY, "message", "msg"), None);
    }

    #[test]
    fn closest_shows_the_line_meant_with_numbers_and_context() {
        let file = "import sys\n\ndef main():\n    message = 'Hello'\n    print(message)\n    return 0\n\nmain()\n";
        let near = closest(file, "print('Hello, world!')").unwrap();
        assert!(near.contains("5\t    print(message)"), "{near}");
        assert!(near.starts_with("3\tdef main():"), "{near}");
        assert!(near.ends_with("7\t"), "{near}");
    }

    #[test]
    fn closest_weighs_every_line_of_old_text() {
        let file = "a = 1\nb = 2\nc = 3\n\na = 1\nb = 2\nd = 4\n";
        let near = closest(file, "a = 1\nb = 2\nd = 5").unwrap();
        assert!(near.contains("5\ta = 1\n6\tb = 2\n7\td = 4"), "{near}");
    }

    #[test]
    fn nothing_alike_is_nothing_shown() {
        assert_eq!(closest("aaaa\nbbbb\n", "xyz qrs"), None);
        assert_eq!(closest("", "x"), None);
        assert_eq!(closest("a\n", "\n \n"), None);
    }
}
