//! Text bound for a terminal, made harmless: a model or a server can put escape sequences in
//! anything turn shows (its text, reasoning, a path, a command, an error message), and a
//! terminal acts on them: OSC 52 writes the clipboard, others set the title, clear the
//! screen, or move the cursor to hide what is really there. `escape` turns every control
//! character into visible text. `--json` output is not passed through here: JSON escapes
//! control characters itself.
//!
//! Pure: strings in, strings out.

use std::borrow::Cow;

/// `text` with each control character a terminal would act on shown as `\xNN` (C0 and DEL)
/// or `\u{NN}` (C1). Newlines and tabs stay; a carriage return stays only before a newline.
pub fn escape(text: &str) -> Cow<'_, str> {
    let harmful = |(at, c): (usize, char)| match c {
        '\n' | '\t' => false,
        '\r' => !text[at + 1..].starts_with('\n'),
        c => c.is_control(),
    };
    if !text.char_indices().any(harmful) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (at, c) in text.char_indices() {
        match c {
            c if !harmful((at, c)) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_visible_text() {
        for (raw, shown) in [
            ("\x1b]52;c;cm0gLXJmIH4=\x07", "\\x1b]52;c;cm0gLXJmIH4=\\x07"), // clipboard
            ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),                     // title
            ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),                           // clear screen
            ("safe\rrm -rf ~", "safe\\x0drm -rf ~"),                        // overwrite the line
            ("\u{9b}31m", "\\u{9b}31m"),                                    // C1 CSI
            ("bell\x07 del\x7f nul\0", "bell\\x07 del\\x7f nul\\x00"),
        ] {
            assert_eq!(escape(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched_and_not_copied() {
        for text in ["", "plain", "tabs\tand\nnewlines\r\n", "ünïcödé ✓ 日本"] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
        }
    }
}
