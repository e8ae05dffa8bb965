//! Bytes from a raw-mode terminal → `Key`s. Pure: `Decoder::push` takes whatever a read
//! returned and gives back the keys it completes; what is left (half a UTF-8 character, the
//! start of an escape sequence) waits for the next read. A lone ESC cannot be told from the
//! start of a sequence by the bytes alone, so the caller waits a moment and then calls `flush`.
//!
//! Bracketed paste (`ESC [200~` … `ESC [201~`) becomes one `Key::Paste` with its newlines
//! (a terminal sends them as CR), so a pasted block is never taken for several Enters.

/// What the user pressed, as the editor sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    Char(char),
    /// Ctrl and a letter, lower case ('a' for Ctrl-A); Enter, Tab and Backspace have their own.
    Ctrl(char),
    Enter,
    Tab,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    /// Alt-B, Ctrl-Left.
    WordLeft,
    /// Alt-F, Ctrl-Right.
    WordRight,
    /// Alt-Backspace: delete the word before the cursor.
    AltBackspace,
    /// Alt-D: delete the word after the cursor.
    AltD,
    /// Alt-Enter: a newline in the line, not the end of it.
    AltEnter,
    Esc,
    /// Text pasted in one go (bracketed paste), newlines as `\n`.
    Paste(String),
    /// A sequence turn does not bind (F-keys, mouse reports …): ignored, never inserted.
    Unknown,
}

const ESC: u8 = 0x1b;
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";
/// A CSI sequence longer than this is garbage, not a key.
const MAX_SEQUENCE: usize = 32;

#[derive(Default)]
pub struct Decoder {
    pending: Vec<u8>,
    /// Inside a bracketed paste: `pending` holds pasted bytes until the end marker.
    pasting: bool,
    /// How much of `pending` is known to hold no end marker (while pasting).
    scanned: usize,
}

enum Parse {
    Key(Key, usize),
    Incomplete,
}

impl Decoder {
    /// Adds the bytes a read returned; returns the keys they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        loop {
            if self.pasting {
                let from = self.scanned.saturating_sub(PASTE_END.len());
                let Some(at) = find(&self.pending[from..], PASTE_END).map(|i| i + from) else {
                    self.scanned = self.pending.len();
                    break;
                };
                let text = String::from_utf8_lossy(&self.pending[..at]);
                keys.push(Key::Paste(text.replace("\r\n", "\n").replace('\r', "\n")));
                self.pending.drain(..at + PASTE_END.len());
                (self.pasting, self.scanned) = (false, 0);
                continue;
            }
            if self.pending.is_empty() {
                break;
            }
            if self.pending.starts_with(PASTE_START) {
                self.pending.drain(..PASTE_START.len());
                self.pasting = true;
                continue;
            }
            match parse(&self.pending) {
                Parse::Key(key, used) => {
                    self.pending.drain(..used);
                    keys.push(key);
                }
                Parse::Incomplete => break,
            }
        }
        keys
    }

    /// Whether bytes wait for more; the caller waits briefly, then `flush`es.
    pub fn waiting(&self) -> bool {
        !self.pending.is_empty() && !self.pasting
    }

    /// No more bytes came: what waits is a lone ESC (or a sequence cut short, dropped).
    pub fn flush(&mut self) -> Vec<Key> {
        if self.pasting || self.pending.is_empty() {
            return Vec::new();
        }
        let key = if self.pending == [ESC] {
            Key::Esc
        } else {
            Key::Unknown
        };
        self.pending.clear();
        vec![key]
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse(bytes: &[u8]) -> Parse {
    let key = |key, used| Parse::Key(key, used);
    match bytes[0] {
        ESC => escape(bytes),
        b'\r' | b'\n' => key(Key::Enter, 1),
        b'\t' => key(Key::Tab, 1),
        0x7f | 0x08 => key(Key::Backspace, 1),
        b @ 0x01..=0x1a => key(Key::Ctrl((b'a' + b - 1) as char), 1),
        0x00 | 0x1c..=0x1f => key(Key::Unknown, 1),
        b => {
            let len = match b {
                0x00..=0x7f => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return key(Key::Unknown, 1), // not a UTF-8 lead byte
            };
            if bytes.len() < len {
                // A continuation byte that does not fit shows the character is broken now.
                if bytes[1..].iter().any(|&b| b & 0xc0 != 0x80) {
                    return key(Key::Unknown, 1);
                }
                return Parse::Incomplete;
            }
            match std::str::from_utf8(&bytes[..len]) {
                Ok(s) => key(Key::Char(s.chars().next().expect("one char")), len),
                Err(_) => key(Key::Unknown, 1),
            }
        }
    }
}

/// ESC and what follows: CSI (`ESC [`), SS3 (`ESC O`) or Alt and a key.
fn escape(bytes: &[u8]) -> Parse {
    let Some(&next) = bytes.get(1) else {
        return Parse::Incomplete;
    };
    let key = |key, used| Parse::Key(key, used);
    match next {
        b'[' => csi(bytes),
        b'O' => match bytes.get(2) {
            None => Parse::Incomplete,
            Some(b'A') => key(Key::Up, 3),
            Some(b'B') => key(Key::Down, 3),
            Some(b'C') => key(Key::Right, 3),
            Some(b'D') => key(Key::Left, 3),
            Some(b'H') => key(Key::Home, 3),
            Some(b'F') => key(Key::End, 3),
            Some(_) => key(Key::Unknown, 3),
        },
        b'b' | b'B' => key(Key::WordLeft, 2),
        b'f' | b'F' => key(Key::WordRight, 2),
        b'd' | b'D' => key(Key::AltD, 2),
        0x7f | 0x08 => key(Key::AltBackspace, 2),
        b'\r' | b'\n' => key(Key::AltEnter, 2),
        ESC => key(Key::Esc, 1), // ESC ESC: the first stands alone
        0x20..=0x7e => key(Key::Unknown, 2),
        _ => key(Key::Esc, 1),
    }
}

/// `ESC [ params final`: arrows (with modifiers), Home/End and the `~` keys.
fn csi(bytes: &[u8]) -> Parse {
    let body = &bytes[2..];
    let Some(end) = body.iter().position(|b| (0x40..=0x7e).contains(b)) else {
        if bytes.len() > MAX_SEQUENCE || body.iter().any(|b| !(0x20..=0x3f).contains(b)) {
            return Parse::Key(Key::Unknown, bytes.len());
        }
        return Parse::Incomplete;
    };
    let used = 2 + end + 1;
    let params = std::str::from_utf8(&body[..end]).unwrap_or("?");
    let mut numbers = params.split(';').map(|p| p.parse::<u32>().ok());
    let first = numbers.next().flatten();
    // xterm: 1 + (shift 1, alt 2, ctrl 4); Alt or Ctrl with an arrow moves by words.
    let modifier = numbers.next().flatten().unwrap_or(1).saturating_sub(1);
    let word = modifier & 0b110 != 0;
    let key = match (body[end], first) {
        (b'A', _) => Key::Up,
        (b'B', _) => Key::Down,
        (b'C', _) if word => Key::WordRight,
        (b'D', _) if word => Key::WordLeft,
        (b'C', _) => Key::Right,
        (b'D', _) => Key::Left,
        (b'H', _) => Key::Home,
        (b'F', _) => Key::End,
        (b'~', Some(1 | 7)) => Key::Home,
        (b'~', Some(4 | 8)) => Key::End,
        (b'~', Some(3)) => Key::Delete,
        _ => Key::Unknown,
    };
    Parse::Key(key, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut decoder = Decoder::default();
        let mut keys = decoder.push(bytes);
        keys.extend(decoder.flush());
        keys
    }

    #[test]
    fn plain_text_and_control_keys() {
        use Key::*;
        assert_eq!(keys(b"ab"), [Char('a'), Char('b')]);
        assert_eq!(
            keys(b"\r\n\t\x7f\x08"),
            [Enter, Enter, Tab, Backspace, Backspace]
        );
        assert_eq!(
            keys(b"\x01\x05\x15\x0b\x17\x12\x0c\x03\x04\x1a"),
            ['a', 'e', 'u', 'k', 'w', 'r', 'l', 'c', 'd', 'z'].map(Ctrl)
        );
        assert_eq!(keys(b"\x00\x1c"), [Unknown, Unknown]);
    }

    #[test]
    fn arrows_home_end_delete_in_every_spelling() {
        use Key::*;
        let table: &[(&[u8], Key)] = &[
            (b"\x1b[A", Up),
            (b"\x1b[B", Down),
            (b"\x1b[C", Right),
            (b"\x1b[D", Left),
            (b"\x1bOA", Up),
            (b"\x1bOD", Left),
            (b"\x1b[H", Home),
            (b"\x1b[F", End),
            (b"\x1bOH", Home),
            (b"\x1bOF", End),
            (b"\x1b[1~", Home),
            (b"\x1b[7~", Home),
            (b"\x1b[4~", End),
            (b"\x1b[8~", End),
            (b"\x1b[3~", Delete),
            (b"\x1b[1;5C", WordRight),
            (b"\x1b[1;5D", WordLeft),
            (b"\x1b[1;3D", WordLeft),
            (b"\x1b[1;2C", Right),
            (b"\x1bb", WordLeft),
            (b"\x1bf", WordRight),
            (b"\x1bd", AltD),
            (b"\x1b\x7f", AltBackspace),
            (b"\x1b\r", AltEnter),
            (b"\x1b[15~", Unknown),
            (b"\x1b[M", Unknown),
            (b"\x1bx", Unknown),
        ];
        for (bytes, key) in table {
            assert_eq!(keys(bytes), std::slice::from_ref(key), "{bytes:?}");
        }
    }

    #[test]
    fn sequences_split_across_reads_wait_for_the_rest() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.push(b"a\x1b"), [Key::Char('a')]);
        assert!(decoder.waiting());
        assert_eq!(decoder.push(b"["), []);
        assert_eq!(decoder.push(b"1;5"), []);
        assert_eq!(decoder.push(b"Cz"), [Key::WordRight, Key::Char('z')]);
        assert!(!decoder.waiting());
    }

    #[test]
    fn a_lone_escape_is_a_key_once_nothing_follows() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.push(b"\x1b"), []);
        assert_eq!(decoder.flush(), [Key::Esc]);
        assert_eq!(keys(b"\x1b\x1b[D"), [Key::Esc, Key::Left]);
        // A sequence cut short is dropped, never inserted as text.
        assert_eq!(keys(b"\x1b[12"), [Key::Unknown]);
        assert_eq!(keys(b"\x1b[1\x01"), [Key::Unknown]);
    }

    #[test]
    fn utf8_characters_are_single_keys_even_when_split() {
        assert_eq!(
            keys("é日🙂".as_bytes()),
            [Key::Char('é'), Key::Char('日'), Key::Char('🙂')]
        );
        let mut decoder = Decoder::default();
        let bytes = "日".as_bytes();
        assert_eq!(decoder.push(&bytes[..1]), []);
        assert_eq!(decoder.push(&bytes[1..2]), []);
        assert_eq!(decoder.push(&bytes[2..]), [Key::Char('日')]);
        // Broken UTF-8 is dropped byte by byte; what follows still decodes.
        assert_eq!(
            keys(b"\xff\xe6a"),
            [Key::Unknown, Key::Unknown, Key::Char('a')]
        );
    }

    #[test]
    fn a_bracketed_paste_is_one_key_with_its_newlines() {
        assert_eq!(
            keys(b"x\x1b[200~line one\r\nline\ttwo\rthree\x1b[A\x1b[201~y"),
            [
                Key::Char('x'),
                Key::Paste("line one\nline\ttwo\nthree\x1b[A".into()),
                Key::Char('y')
            ]
        );
        // Split anywhere, even inside the end marker; flushing in between changes nothing.
        let mut decoder = Decoder::default();
        assert_eq!(decoder.push(b"\x1b[20"), []);
        assert_eq!(decoder.push(b"0~abc\r\x1b[2"), []);
        assert!(!decoder.waiting());
        assert_eq!(decoder.flush(), []);
        assert_eq!(decoder.push(b"01"), []);
        assert_eq!(decoder.push(b"~"), [Key::Paste("abc\n".into())]);
    }
}
