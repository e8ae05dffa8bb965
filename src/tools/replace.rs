//! Exact-text replacement for `edit_file`, streamed: the file is read in pieces to find the
//! occurrences, then copied with the replacements spliced in, so memory stays bounded by the
//! piece size however large the file is.
//!
//! Pure over `Read` and `Write`: tests feed byte slices cut at every awkward place.

use std::io::{self, Read, Write};

const PIECE: usize = 64 * 1024;

/// Where `needle` occurs in a text.
#[derive(Debug, PartialEq)]
pub struct Found {
    /// Byte offsets of the non-overlapping occurrences, left to right.
    pub offsets: Vec<u64>,
    /// The 1-based line of the first one (0 when there is none).
    pub first_line: usize,
}

/// Finds `needle` (not empty) in `input`; an `InvalidData` error when the input is not UTF-8.
pub fn find_all(mut input: impl Read, needle: &str) -> io::Result<Found> {
    let mut found = Found {
        offsets: Vec::new(),
        first_line: 0,
    };
    let mut buf: Vec<u8> = Vec::with_capacity(PIECE + needle.len());
    let mut piece = vec![0u8; PIECE];
    // File offset of buf[0], and newlines before it.
    let (mut base, mut lines) = (0u64, 0usize);
    loop {
        let n = read(&mut input, &mut piece)?;
        buf.extend_from_slice(&piece[..n]);
        // The valid prefix; a char cut by the piece's end waits for the next read.
        let text = match std::str::from_utf8(&buf) {
            Ok(text) => text,
            Err(e) if e.error_len().is_none() && n > 0 => {
                std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or("")
            }
            Err(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8")),
        };
        let mut next = 0; // a later match starts at or after the end of the last one
        for (at, _) in text.match_indices(needle) {
            if found.offsets.is_empty() {
                found.first_line = lines + text[..at].matches('\n').count() + 1;
            }
            found.offsets.push(base + at as u64);
            next = at + needle.len();
        }
        if n == 0 {
            return Ok(found);
        }
        // Keep only what a match could still begin in: fewer bytes than the needle has.
        let mut keep = text.len().saturating_sub(needle.len() - 1).max(next);
        while !text.is_char_boundary(keep) {
            keep += 1;
        }
        lines += text[..keep].matches('\n').count();
        buf.drain(..keep);
        base += keep as u64;
    }
}

/// Copies `input` to `output` with `len` bytes at each offset replaced by `with`.
pub fn splice(
    mut input: impl Read,
    output: &mut impl Write,
    offsets: &[u64],
    len: usize,
    with: &[u8],
) -> io::Result<()> {
    let mut at = 0u64;
    for &offset in offsets {
        copy_exact(&mut input, output, offset - at)?;
        copy_exact(&mut input, &mut io::sink(), len as u64)?;
        output.write_all(with)?;
        at = offset + len as u64;
    }
    io::copy(&mut input, output)?;
    Ok(())
}

fn copy_exact(input: &mut impl Read, output: &mut impl Write, len: u64) -> io::Result<()> {
    if io::copy(&mut input.take(len), output)? < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the file changed while it was edited",
        ));
    }
    Ok(())
}

/// One read, retried when a signal interrupts it.
fn read(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields its bytes a few at a time, so pieces end everywhere: mid-needle, mid-char.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn naive(text: &str, needle: &str) -> Found {
        let offsets: Vec<u64> = text
            .match_indices(needle)
            .map(|(at, _)| at as u64)
            .collect();
        let first_line = offsets
            .first()
            .map_or(0, |&at| text[..at as usize].matches('\n').count() + 1);
        Found {
            offsets,
            first_line,
        }
    }

    #[test]
    fn agrees_with_an_in_memory_search_whatever_the_piece_size() {
        let text = "aaa\nébé aaaa\nxaaéaa\n€€ aa";
        for needle in ["a", "aa", "aaa", "é", "éb", "\n", "€€", "a\nx", "zz"] {
            for step in 1..=7 {
                let found = find_all(
                    Trickle {
                        data: text.as_bytes(),
                        step,
                    },
                    needle,
                )
                .unwrap();
                assert_eq!(found, naive(text, needle), "needle {needle:?}, step {step}");
            }
        }
    }

    #[test]
    fn large_inputs_cross_many_pieces() {
        let text = format!(
            "{}MARK\n{}MARK",
            "x".repeat(PIECE * 3 - 2),
            "y\n".repeat(PIECE)
        );
        let found = find_all(text.as_bytes(), "MARK").unwrap();
        assert_eq!(found, naive(&text, "MARK"));
        assert_eq!(found.first_line, 1);
    }

    #[test]
    fn invalid_utf8_is_an_error_even_at_the_end() {
        for data in [&b"ok \xff ok"[..], b"ok \xc3"] {
            let err = find_all(Trickle { data, step: 2 }, "ok").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        }
    }

    #[test]
    fn splice_replaces_at_the_offsets() {
        let text = "one two one two one";
        let found = find_all(text.as_bytes(), "one").unwrap();
        let mut out = Vec::new();
        splice(
            Trickle {
                data: text.as_bytes(),
                step: 3,
            },
            &mut out,
            &found.offsets,
            3,
            b"1",
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "1 two 1 two 1");
        let mut out = Vec::new();
        splice("abc".as_bytes(), &mut out, &[], 1, b"x").unwrap();
        assert_eq!(out, b"abc");
    }
}
