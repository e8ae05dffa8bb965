//! Keeps tool output within --max-output characters: the head and the tail survive, since
//! that is where commands put what matters (what ran, then the error or summary), and a note in
//! the middle says how much was elided so the model knows to narrow its query. The note also
//! quotes, with their line numbers, a few lines of the elided part that mention an error or a
//! failure: a build log's one error, a test run's one failing check, are often in the middle,
//! and a small model does not think of looking for them (measured on Qwen2.5-Coder-1.5B: it
//! ran a 3,000-line check script again and again and never found the failed check).

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

/// Text cut to size, and how many chars the cut took out.
#[derive(Debug, PartialEq)]
pub struct Cut {
    pub text: String,
    pub elided: usize,
}

/// `text` if it has at most `max` chars; otherwise its first and last `max / 2` chars around a
/// note of how many were elided.
pub fn middle(text: &str, max: usize) -> Cut {
    let total = text.chars().count();
    if total <= max {
        return Cut {
            text: text.to_string(),
            elided: 0,
        };
    }
    let (head, tail) = (max / 2, max - max / 2);
    let head_end = text
        .char_indices()
        .nth(head)
        .map_or(text.len(), |(at, _)| at);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(at, _)| at);
    let mut flagged = Flagged::default();
    let first = text[..head_end].matches('\n').count() + 1;
    for (i, line) in text[head_end..tail_start].split('\n').enumerate() {
        flagged.consider(first + i, line.as_bytes());
    }
    join(
        &text[..head_end],
        total - head - tail,
        &flagged,
        &text[tail_start..],
    )
}

/// `middle` for a file that may be far larger than memory should hold: reads only the head,
/// the tail, and the rest once for a running count of chars and the flagged lines. Invalid
/// UTF-8 is replaced, not refused.
pub fn file_middle(file: &mut File, max: usize) -> io::Result<Cut> {
    let len = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(0))?;
    // A char is at most 4 bytes: a file this small cannot have more than `max` chars to keep.
    let window = (max as u64).saturating_mul(4);
    if len <= window.saturating_mul(2) {
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes)?;
        return Ok(middle(&String::from_utf8_lossy(&bytes), max));
    }
    let (head_n, tail_n) = (max / 2, max - max / 2);
    let head = read_at(file, 0, window)?;
    let head: String = String::from_utf8_lossy(&head)
        .chars()
        .take(head_n)
        .collect();
    let tail = read_at(file, len.saturating_sub(window), window)?;
    let tail = String::from_utf8_lossy(&tail);
    let skip = tail.chars().count().saturating_sub(tail_n);
    let tail: String = tail.chars().skip(skip).collect();
    let elided = (head.len() as u64, len.saturating_sub(tail.len() as u64));
    let (total, flagged) = scan(file, elided)?;
    let kept = head.chars().count() + tail.chars().count();
    Ok(join(&head, total.saturating_sub(kept), &flagged, &tail))
}

/// Words that flag a line of the elided part (matched without regard to case).
const FLAGS: [&str; 6] = ["error", "fail", "panic", "exception", "traceback", "fatal"];
/// Most flagged lines quoted, and most chars of each.
const MAX_FLAGGED: usize = 10;
const MAX_FLAGGED_CHARS: usize = 200;

/// Flagged lines of the elided part: (1-based line number, text), and how many more there were.
#[derive(Debug, Default, PartialEq)]
struct Flagged {
    lines: Vec<(usize, String)>,
    more: usize,
}

impl Flagged {
    fn consider(&mut self, number: usize, line: &[u8]) {
        let flagged = FLAGS.iter().any(|flag| {
            line.windows(flag.len())
                .any(|w| w.eq_ignore_ascii_case(flag.as_bytes()))
        });
        if !flagged {
            return;
        }
        if self.lines.len() == MAX_FLAGGED {
            self.more += 1;
            return;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        let mut shown: String = text.chars().take(MAX_FLAGGED_CHARS).collect();
        if shown.len() < text.len() {
            shown.push_str(" [...]");
        }
        self.lines.push((number, shown));
    }
}

fn join(head: &str, elided: usize, flagged: &Flagged, tail: &str) -> Cut {
    let mut text = format!("{head}\n\n[... {elided} chars elided ...]");
    if !flagged.lines.is_empty() {
        text.push_str("\n[lines of the elided part that mention an error or a failure:");
        for (number, line) in &flagged.lines {
            text.push_str(&format!("\nline {number}: {line}"));
        }
        if flagged.more > 0 {
            text.push_str(&format!("\nand {} more such lines", flagged.more));
        }
        text.push(']');
    }
    text.push_str("\n\n");
    text.push_str(tail);
    Cut { text, elided }
}

/// The file's chars, counted in one pass that also flags the lines lying in the byte range
/// `elided` (a line there in part counts).
fn scan(file: &mut File, elided: (u64, u64)) -> io::Result<(usize, Flagged)> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = io::BufReader::with_capacity(64 * 1024, file);
    let mut flagged = Flagged::default();
    let (mut total, mut at, mut number) = (0, 0u64, 0);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok((total, flagged));
        }
        number += 1;
        total += line.iter().filter(|&&b| b & 0xC0 != 0x80).count();
        if at + n as u64 > elided.0 && at < elided.1 {
            flagged.consider(number, &line);
        }
        at += n as u64;
    }
}

fn read_at(file: &mut File, at: u64, len: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(at))?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn short_text_is_kept() {
        assert_eq!(
            middle("hello", 5),
            Cut {
                text: "hello".into(),
                elided: 0
            }
        );
        assert_eq!(middle("", 5).text, "");
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        assert_eq!(
            middle("abcdefghij", 4).text,
            "ab\n\n[... 6 chars elided ...]\n\nij"
        );
        let cut = middle("abcdefghij", 5);
        assert_eq!(cut.text, "ab\n\n[... 5 chars elided ...]\n\nhij");
        assert_eq!(cut.elided, 5);
    }

    #[test]
    fn counts_chars_not_bytes() {
        assert_eq!(middle("ééééé", 5).text, "ééééé");
        assert_eq!(
            middle("éàüöñ", 2).text,
            "é\n\n[... 3 chars elided ...]\n\nñ"
        );
    }

    #[test]
    fn large_files_are_read_in_pieces() {
        let path = std::env::temp_dir().join(format!("turn-truncate-{}", std::process::id()));
        let mut file = File::create(&path).unwrap();
        let body = "é".repeat(1000);
        write!(file, "START{body}END").unwrap();
        drop(file);
        let mut file = File::open(&path).unwrap();
        let out = file_middle(&mut file, 10).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(out.text, "START\n\n[... 998 chars elided ...]\n\nééEND");
        assert_eq!(out.elided, 998);
        assert_eq!(out, middle(&format!("START{body}END"), 10));
    }

    #[test]
    fn failures_in_the_elided_part_are_quoted_with_their_line_numbers() {
        let mut log: String = (1..=3000)
            .map(|n| {
                let verdict = if n == 1517 {
                    "FAILED: out of range"
                } else {
                    "ok"
                };
                format!("check_{n:04} {verdict}\n")
            })
            .collect();
        log.push_str("2999 passed, 1 failed\n");
        let cut = middle(&log, 400);
        assert!(
            cut.text.contains(&format!(
                "[... {} chars elided ...]\n[lines of the elided part that mention an error or a \
                 failure:\nline 1517: check_1517 FAILED: out of range]\n\n",
                cut.elided
            )),
            "{}",
            cut.text
        );
        // The same from a file too large to read whole.
        let path = std::env::temp_dir().join(format!("turn-truncate-log-{}", std::process::id()));
        std::fs::write(&path, &log).unwrap();
        let out = file_middle(&mut File::open(&path).unwrap(), 400).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(out, cut);
    }

    #[test]
    fn flagged_lines_are_few_and_short() {
        let long = format!("Error: {}\n", "x".repeat(500));
        let log = format!("head\n{}tail\n", long.repeat(30));
        let cut = middle(&log, 20);
        assert_eq!(cut.text.matches("\nline ").count(), MAX_FLAGGED);
        assert!(
            cut.text.contains("\nline 3: Error: xxx"),
            "line 2 begins in the head"
        );
        assert!(cut.text.contains("x [...]\nline 4: "));
        assert!(cut.text.contains("\nand 19 more such lines]"));
        // Head and tail are not quoted again, and clean output gets no list.
        assert!(!middle("error\nok\nok\nok\nok\nerror", 12)
            .text
            .contains("[lines"));
    }

    #[test]
    fn huge_limits_keep_everything_instead_of_wrapping() {
        let path = std::env::temp_dir().join(format!("turn-truncate-big-{}", std::process::id()));
        std::fs::write(&path, "all of it").unwrap();
        let mut file = File::open(&path).unwrap();
        let out = file_middle(&mut file, 1 << 62).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((out.text.as_str(), out.elided), ("all of it", 0));
        assert_eq!(middle("abc", usize::MAX).text, "abc");
    }
}
