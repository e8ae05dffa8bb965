//! Keeps tool output within --max-output characters: the head and the tail survive, since
//! that is where commands put what matters (what ran, then the error or summary), and a note in
//! the middle says how much was elided so the model knows to narrow its query.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

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
    join(&text[..head_end], total - head - tail, &text[tail_start..])
}

/// `middle` for a file that may be far larger than memory should hold: reads only the head,
/// the tail and a running count of chars. Invalid UTF-8 is replaced, not refused.
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
    let total = count_chars(file)?;
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
    let kept = head.chars().count() + tail.chars().count();
    Ok(join(&head, total.saturating_sub(kept), &tail))
}

fn join(head: &str, elided: usize, tail: &str) -> Cut {
    Cut {
        text: format!("{head}\n\n[... {elided} chars elided ...]\n\n{tail}"),
        elided,
    }
}

fn count_chars(file: &mut File) -> io::Result<usize> {
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0; 64 * 1024];
    let mut total = 0;
    loop {
        match file.read(&mut buf)? {
            0 => return Ok(total),
            n => total += buf[..n].iter().filter(|&&b| b & 0xC0 != 0x80).count(),
        }
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
