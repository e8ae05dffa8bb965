//! The line editor's state machine. Pure: a buffer of characters, a cursor (a character
//! index, so a multi-byte character is one step), the history, and `key`, which turns a key
//! into a new state and an `Action` for the terminal side to carry out. Nothing here reads or
//! writes; `render` draws what `view` shows.
//!
//! The keys are the readline ones people's fingers know: Left/Right, Home/End, Ctrl-A/E,
//! Backspace/Delete, Ctrl-U/K/W (and Ctrl-Y to put back what they cut), Alt-B/F, Up/Down
//! through the history, Ctrl-R to search it, Ctrl-L, Ctrl-C to drop the line (on an empty line:
//! leave), Ctrl-D to leave on an empty line, Tab to complete a `/` command.

use super::history::MAX_ENTRIES;
use super::keys::Key;
use std::borrow::Cow;

/// What the terminal side does after a key.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// The line changed (or may have): draw it again.
    Redraw,
    /// Enter: the line is done.
    Submit(String),
    /// Ctrl-D on an empty line: the input is over.
    Eof,
    /// Ctrl-C on an empty line: leave, as Ctrl-C at the prompt always did.
    Interrupt,
    /// Ctrl-C on a line with text: this line was dropped; a fresh prompt goes below it.
    Cancel(String),
    /// Ctrl-L: clear the screen, then draw the line at the top.
    ClearScreen,
    /// Ctrl-Z: give the terminal back and stop until `fg`.
    Suspend,
    /// Tab found several commands: show them below the line, then the line again.
    Show(String),
    /// Nothing changed.
    Nothing,
}

/// A Ctrl-R search in progress: the line shows the match, or what was there before.
struct Search {
    query: String,
    /// The history entry that matched last.
    found: Option<usize>,
    failed: bool,
    /// The line and cursor before the search, for Ctrl-G.
    saved: (Vec<char>, usize),
}

pub struct Editor {
    prompt: &'static str,
    line: Vec<char>,
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown (Up/Down), and the line being written before going there.
    browsing: Option<usize>,
    draft: Vec<char>,
    search: Option<Search>,
    /// What Ctrl-U/K/W and Alt-D/Backspace cut last, for Ctrl-Y.
    killed: Vec<char>,
    /// What Tab completes a `/` word to.
    commands: Vec<&'static str>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Editor {
    pub fn new(prompt: &'static str, history: Vec<String>, commands: Vec<&'static str>) -> Editor {
        Editor {
            prompt,
            line: Vec::new(),
            cursor: 0,
            history,
            browsing: None,
            draft: Vec::new(),
            search: None,
            killed: Vec::new(),
            commands,
        }
    }

    /// The prompt, the text and the cursor to draw.
    pub fn view(&self) -> (Cow<'_, str>, &[char], usize) {
        let prompt = match &self.search {
            None => Cow::Borrowed(self.prompt),
            Some(search) => Cow::Owned(format!(
                "({}reverse-i-search)'{}': ",
                if search.failed { "failed " } else { "" },
                search.query
            )),
        };
        (prompt, &self.line, self.cursor)
    }

    /// Applies one key.
    pub fn key(&mut self, key: Key) -> Action {
        if self.search.is_some() {
            if let Some(action) = self.search_key(&key) {
                return action;
            }
        }
        match key {
            Key::Char(c) => self.insert(&[c]),
            Key::Paste(text) => self.insert(&text.chars().collect::<Vec<_>>()),
            Key::AltEnter => self.insert(&['\n']),
            Key::Enter => self.submit(),
            Key::Left | Key::Ctrl('b') => self.move_to(self.cursor.saturating_sub(1)),
            Key::Right | Key::Ctrl('f') => self.move_to((self.cursor + 1).min(self.line.len())),
            Key::Home | Key::Ctrl('a') => self.move_to(0),
            Key::End | Key::Ctrl('e') => self.move_to(self.line.len()),
            Key::WordLeft => self.move_to(self.word_left()),
            Key::WordRight => self.move_to(self.word_right()),
            Key::Backspace if self.cursor > 0 => self.cut(self.cursor - 1, self.cursor, false),
            Key::Delete if self.cursor < self.line.len() => {
                self.cut(self.cursor, self.cursor + 1, false)
            }
            Key::Ctrl('d') if self.line.is_empty() => Action::Eof,
            Key::Ctrl('d') if self.cursor < self.line.len() => {
                self.cut(self.cursor, self.cursor + 1, false)
            }
            Key::Ctrl('u') => self.cut(0, self.cursor, true),
            Key::Ctrl('k') => self.cut(self.cursor, self.line.len(), true),
            Key::Ctrl('w') => {
                let mut from = self.cursor;
                while from > 0 && self.line[from - 1].is_whitespace() {
                    from -= 1;
                }
                while from > 0 && !self.line[from - 1].is_whitespace() {
                    from -= 1;
                }
                self.cut(from, self.cursor, true)
            }
            Key::AltBackspace => self.cut(self.word_left(), self.cursor, true),
            Key::AltD => self.cut(self.cursor, self.word_right(), true),
            Key::Ctrl('y') => {
                let killed = self.killed.clone();
                self.insert(&killed)
            }
            Key::Up | Key::Ctrl('p') => self.older(),
            Key::Down | Key::Ctrl('n') => self.newer(),
            Key::Ctrl('r') => {
                self.search = Some(Search {
                    query: String::new(),
                    found: None,
                    failed: false,
                    saved: (self.line.clone(), self.cursor),
                });
                Action::Redraw
            }
            Key::Ctrl('c') if self.line.is_empty() => Action::Interrupt,
            Key::Ctrl('c') => {
                let dropped = self.line.iter().collect();
                self.reset();
                Action::Cancel(dropped)
            }
            Key::Ctrl('l') => Action::ClearScreen,
            Key::Ctrl('z') => Action::Suspend,
            Key::Tab => self.complete(),
            _ => Action::Nothing,
        }
    }

    /// A key during Ctrl-R: `Some` when the search used it, `None` when it ends the search
    /// with the match taken as the line and the key is then applied as usual.
    fn search_key(&mut self, key: &Key) -> Option<Action> {
        let search = self.search.as_mut()?;
        let newest = self.history.len();
        match key {
            Key::Char(c) => {
                search.query.push(*c);
                let from = search.found.map_or(newest, |i| i + 1);
                self.find(from);
            }
            Key::Backspace => {
                search.query.pop();
                self.find(newest);
            }
            Key::Ctrl('r') => {
                let from = search.found.unwrap_or(newest);
                self.find(from);
            }
            Key::Ctrl('g') | Key::Esc => {
                let search = self.search.take()?;
                (self.line, self.cursor) = search.saved;
            }
            Key::Ctrl('c') => {
                let dropped = self.line.iter().collect();
                self.reset();
                return Some(Action::Cancel(dropped));
            }
            _ => {
                let search = self.search.take()?;
                if let Some(found) = search.found {
                    self.browsing = Some(found);
                    self.draft = search.saved.0;
                }
                return None;
            }
        }
        Some(Action::Redraw)
    }

    /// Searches the history from entry `before - 1` back for the query; shows the match.
    fn find(&mut self, before: usize) {
        let Some(search) = self.search.as_mut() else {
            return;
        };
        if search.query.is_empty() {
            search.failed = false;
            return;
        }
        let hit = self.history[..before.min(self.history.len())]
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, entry)| entry.find(&search.query).map(|at| (i, at)));
        match hit {
            Some((i, at)) => {
                let entry = &self.history[i];
                search.found = Some(i);
                search.failed = false;
                self.line = entry.chars().collect();
                self.cursor = entry[..at].chars().count();
            }
            None => search.failed = true,
        }
    }

    fn insert(&mut self, chars: &[char]) -> Action {
        self.line
            .splice(self.cursor..self.cursor, chars.iter().copied());
        self.cursor += chars.len();
        Action::Redraw
    }

    fn move_to(&mut self, cursor: usize) -> Action {
        if cursor == self.cursor {
            return Action::Nothing;
        }
        self.cursor = cursor;
        Action::Redraw
    }

    /// Removes `from..to`; `keep` saves it for Ctrl-Y.
    fn cut(&mut self, from: usize, to: usize, keep: bool) -> Action {
        if from >= to {
            return Action::Nothing;
        }
        let removed: Vec<char> = self.line.drain(from..to).collect();
        if keep {
            self.killed = removed;
        }
        self.cursor = from;
        Action::Redraw
    }

    fn word_left(&self) -> usize {
        let mut at = self.cursor;
        while at > 0 && !is_word(self.line[at - 1]) {
            at -= 1;
        }
        while at > 0 && is_word(self.line[at - 1]) {
            at -= 1;
        }
        at
    }

    fn word_right(&self) -> usize {
        let mut at = self.cursor;
        while at < self.line.len() && !is_word(self.line[at]) {
            at += 1;
        }
        while at < self.line.len() && is_word(self.line[at]) {
            at += 1;
        }
        at
    }

    fn show_entry(&mut self, line: Vec<char>) -> Action {
        self.line = line;
        self.cursor = self.line.len();
        Action::Redraw
    }

    fn older(&mut self) -> Action {
        let entry = match self.browsing {
            None if self.history.is_empty() => return Action::Nothing,
            None => {
                self.draft = std::mem::take(&mut self.line);
                self.history.len() - 1
            }
            Some(0) => return Action::Nothing,
            Some(i) => i - 1,
        };
        self.browsing = Some(entry);
        self.show_entry(self.history[entry].chars().collect())
    }

    fn newer(&mut self) -> Action {
        match self.browsing {
            None => Action::Nothing,
            Some(i) if i + 1 < self.history.len() => {
                self.browsing = Some(i + 1);
                self.show_entry(self.history[i + 1].chars().collect())
            }
            Some(_) => {
                self.browsing = None;
                let draft = std::mem::take(&mut self.draft);
                self.show_entry(draft)
            }
        }
    }

    fn submit(&mut self) -> Action {
        let text: String = self.line.iter().collect();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > MAX_ENTRIES {
                self.history.remove(0);
            }
        }
        self.reset();
        Action::Submit(text)
    }

    /// An empty line, out of the history and any search.
    fn reset(&mut self) {
        self.line.clear();
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        self.search = None;
    }

    /// Tab: completes the `/` command before the cursor, as far as it is unambiguous.
    fn complete(&mut self) -> Action {
        let word: String = self.line[..self.cursor].iter().collect();
        if !word.starts_with('/') || word.contains(char::is_whitespace) {
            return Action::Nothing;
        }
        let matches: Vec<&str> = self
            .commands
            .iter()
            .copied()
            .filter(|c| c.starts_with(&word))
            .collect();
        let Some(first) = matches.first() else {
            return Action::Nothing;
        };
        let common = matches.iter().fold(*first, |common, c| {
            let same = common
                .char_indices()
                .zip(c.chars())
                .find(|((_, a), b)| a != b)
                .map_or(common.len().min(c.len()), |((i, _), _)| i);
            &common[..same]
        });
        let mut extension: Vec<char> = common[word.len()..].chars().collect();
        if matches.len() == 1 && self.line.get(self.cursor) != Some(&' ') {
            extension.push(' ');
        }
        if extension.is_empty() {
            return Action::Show(matches.join("  "));
        }
        self.insert(&extension)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: &[&str] = &["/status", "/model", "/tools", "/help", "/exit", "/export"];

    fn editor() -> Editor {
        Editor::new("> ", Vec::new(), COMMANDS.to_vec())
    }

    /// Types the plain characters of `text`.
    fn typed(editor: &mut Editor, text: &str) {
        for c in text.chars() {
            editor.key(Key::Char(c));
        }
    }

    /// The line with `|` at the cursor.
    fn state(editor: &Editor) -> String {
        let (_, line, cursor) = editor.view();
        let mut shown: String = line[..cursor].iter().collect();
        shown.push('|');
        shown.extend(&line[cursor..]);
        shown
    }

    fn after(text: &str, keys: &[Key]) -> String {
        let mut e = editor();
        typed(&mut e, text);
        for key in keys {
            e.key(key.clone());
        }
        state(&e)
    }

    #[test]
    fn typing_and_moving() {
        use Key::*;
        assert_eq!(after("abc", &[]), "abc|");
        assert_eq!(after("abc", &[Left, Left, Char('X')]), "aX|bc");
        assert_eq!(after("abc", &[Left, Right, Right, Right]), "abc|");
        assert_eq!(after("abc", &[Home, Char('>')]), ">|abc");
        assert_eq!(after("abc", &[Ctrl('a'), Ctrl('e'), Char('!')]), "abc!|");
        assert_eq!(after("abc", &[Ctrl('b'), Ctrl('b'), Ctrl('f')]), "ab|c");
        assert_eq!(after("abc", &[Home, Left]), "|abc");
        assert_eq!(after("abc", &[Home, End]), "abc|");
    }

    #[test]
    fn deleting() {
        use Key::*;
        assert_eq!(after("abc", &[Backspace]), "ab|");
        assert_eq!(after("abc", &[Home, Backspace]), "|abc");
        assert_eq!(after("abc", &[Left, Left, Delete]), "a|c");
        assert_eq!(after("abc", &[Delete]), "abc|");
        assert_eq!(after("abc", &[Home, Ctrl('d')]), "|bc");
        assert_eq!(after("hello world", &[Left, Left, Ctrl('u')]), "|ld");
        assert_eq!(
            after("hello world", &[Home, WordRight, Ctrl('k')]),
            "hello|"
        );
        assert_eq!(after("git commit -m x", &[Ctrl('w')]), "git commit -m |");
        assert_eq!(after("a  b-c  ", &[Ctrl('w')]), "a  |");
        assert_eq!(after("a  b-c", &[AltBackspace]), "a  b-|");
        assert_eq!(after("a  b-c", &[Home, AltD]), "|  b-c");
    }

    #[test]
    fn what_was_cut_comes_back_with_ctrl_y() {
        use Key::*;
        assert_eq!(after("one two", &[Ctrl('w'), Home, Ctrl('y')]), "two|one ");
        assert_eq!(
            after("abc", &[Left, Backspace, Ctrl('y')]),
            "a|c",
            "a single delete is not kept"
        );
    }

    #[test]
    fn word_moves_skip_punctuation_and_spaces() {
        use Key::*;
        assert_eq!(after("foo.bar  baz", &[WordLeft]), "foo.bar  |baz");
        assert_eq!(
            after("foo.bar  baz", &[WordLeft, WordLeft]),
            "foo.|bar  baz"
        );
        assert_eq!(
            after("foo.bar  baz", &[WordLeft, WordLeft, WordLeft, WordLeft]),
            "|foo.bar  baz"
        );
        assert_eq!(after("foo.bar  baz", &[Home, WordRight]), "foo|.bar  baz");
        assert_eq!(
            after("foo.bar  baz", &[Home, WordRight, WordRight]),
            "foo.bar|  baz"
        );
        assert_eq!(
            after("über_alles ñ", &[WordLeft, WordLeft]),
            "|über_alles ñ"
        );
    }

    #[test]
    fn multi_byte_characters_are_one_step() {
        use Key::*;
        assert_eq!(after("日本語", &[Left, Backspace]), "日|語");
        assert_eq!(after("🙂x", &[Home, Delete]), "|x");
        assert_eq!(after("é", &[Left, Char('a')]), "a|é");
        let mut e = editor();
        typed(&mut e, "naïve 日本");
        assert_eq!(e.key(Enter), Action::Submit("naïve 日本".into()));
    }

    #[test]
    fn enter_submits_and_starts_afresh() {
        let mut e = editor();
        typed(&mut e, "hi there");
        e.key(Key::Left);
        assert_eq!(e.key(Key::Enter), Action::Submit("hi there".into()));
        assert_eq!(state(&e), "|");
        assert_eq!(e.key(Key::Enter), Action::Submit(String::new()));
    }

    #[test]
    fn paste_inserts_newlines_and_does_not_submit() {
        let mut e = editor();
        typed(&mut e, "[]");
        e.key(Key::Left);
        assert_eq!(e.key(Key::Paste("one\ntwo".into())), Action::Redraw);
        assert_eq!(state(&e), "[one\ntwo|]");
        e.key(Key::AltEnter);
        assert_eq!(e.key(Key::Enter), Action::Submit("[one\ntwo\n]".into()));
    }

    #[test]
    fn ctrl_c_drops_the_line_and_leaves_from_an_empty_one() {
        let mut e = editor();
        assert_eq!(e.key(Key::Ctrl('c')), Action::Interrupt);
        typed(&mut e, "oops");
        assert_eq!(e.key(Key::Ctrl('c')), Action::Cancel("oops".into()));
        assert_eq!(state(&e), "|");
        assert_eq!(e.key(Key::Ctrl('c')), Action::Interrupt, "twice leaves");
    }

    #[test]
    fn ctrl_d_leaves_only_from_an_empty_line() {
        let mut e = editor();
        typed(&mut e, "ab");
        assert_eq!(
            e.key(Key::Ctrl('d')),
            Action::Nothing,
            "nothing under the cursor"
        );
        e.key(Key::Home);
        assert_eq!(e.key(Key::Ctrl('d')), Action::Redraw);
        assert_eq!(state(&e), "|b");
        e.key(Key::Ctrl('k'));
        assert_eq!(e.key(Key::Ctrl('d')), Action::Eof);
    }

    #[test]
    fn screen_suspend_and_ignored_keys() {
        let mut e = editor();
        assert_eq!(e.key(Key::Ctrl('l')), Action::ClearScreen);
        assert_eq!(e.key(Key::Ctrl('z')), Action::Suspend);
        for key in [
            Key::Unknown,
            Key::Esc,
            Key::Ctrl('g'),
            Key::Ctrl('x'),
            Key::Tab,
        ] {
            assert_eq!(e.key(key), Action::Nothing);
        }
        assert_eq!(state(&e), "|");
    }

    fn with_history(entries: &[&str]) -> Editor {
        Editor::new(
            "> ",
            entries.iter().map(|s| s.to_string()).collect(),
            COMMANDS.to_vec(),
        )
    }

    #[test]
    fn up_and_down_walk_the_history_and_keep_the_draft() {
        use Key::*;
        let mut e = with_history(&["first", "second"]);
        typed(&mut e, "draft");
        e.key(Up);
        assert_eq!(state(&e), "second|");
        e.key(Up);
        assert_eq!(state(&e), "first|");
        assert_eq!(e.key(Up), Action::Nothing, "the oldest stays");
        e.key(Down);
        assert_eq!(state(&e), "second|");
        e.key(Ctrl('n'));
        assert_eq!(state(&e), "draft|");
        assert_eq!(e.key(Down), Action::Nothing);
        e.key(Ctrl('p'));
        e.key(Char('!'));
        assert_eq!(e.key(Enter), Action::Submit("second!".into()));
        e.key(Up);
        assert_eq!(state(&e), "second!|");
        e.key(Up);
        assert_eq!(
            state(&e),
            "second|",
            "the recalled entry itself is unchanged"
        );
        assert_eq!(editor().key(Up), Action::Nothing);
    }

    #[test]
    fn history_skips_blank_lines_and_repeats() {
        let mut e = editor();
        for line in ["a", "a", "  ", "b"] {
            typed(&mut e, line);
            e.key(Key::Enter);
        }
        assert_eq!(e.history, ["a", "b"]);
        let mut e = with_history(&[]);
        e.history = (0..MAX_ENTRIES).map(|i| i.to_string()).collect();
        typed(&mut e, "new");
        e.key(Key::Enter);
        assert_eq!(e.history.len(), MAX_ENTRIES);
        assert_eq!(
            (e.history[0].as_str(), e.history.last().unwrap().as_str()),
            ("1", "new")
        );
    }

    #[test]
    fn ctrl_r_finds_older_entries_and_enter_sends_the_match() {
        use Key::*;
        let mut e = with_history(&["make test", "cargo build", "make bench", "ls"]);
        typed(&mut e, "draft");
        e.key(Ctrl('r'));
        assert_eq!(e.view().0, "(reverse-i-search)'': ");
        typed(&mut e, "ma");
        assert_eq!(state(&e), "|make bench");
        e.key(Char('k'));
        assert_eq!(state(&e), "|make bench", "still matches: stays");
        e.key(Ctrl('r'));
        assert_eq!(state(&e), "|make test");
        e.key(Ctrl('r'));
        assert_eq!(state(&e), "|make test");
        assert_eq!(e.view().0, "(failed reverse-i-search)'mak': ");
        e.key(Backspace);
        assert_eq!(
            state(&e),
            "|make bench",
            "a shorter query starts from the newest"
        );
        let mut e = with_history(&["make test", "cargo build"]);
        e.key(Ctrl('r'));
        typed(&mut e, "build");
        assert_eq!(state(&e), "cargo |build");
        assert_eq!(e.key(Enter), Action::Submit("cargo build".into()));
        assert!(e.search.is_none());
    }

    #[test]
    fn ctrl_r_ends_with_any_editing_key_or_is_cancelled() {
        use Key::*;
        let mut e = with_history(&["one", "two three"]);
        typed(&mut e, "draft");
        e.key(Ctrl('r'));
        typed(&mut e, "thr");
        e.key(End);
        e.key(Char('!'));
        assert_eq!(state(&e), "two three!|");
        assert_eq!(e.view().0, "> ");
        e.key(Up);
        assert_eq!(
            state(&e),
            "one|",
            "the search left the history at its match"
        );
        e.key(Down);
        e.key(Down);
        assert_eq!(state(&e), "draft|");

        let mut e = with_history(&["one"]);
        typed(&mut e, "draft");
        e.key(Left);
        e.key(Ctrl('r'));
        typed(&mut e, "on");
        e.key(Ctrl('g'));
        assert_eq!(state(&e), "draf|t");
        e.key(Ctrl('r'));
        typed(&mut e, "on");
        e.key(Esc);
        assert_eq!(state(&e), "draf|t");
        e.key(Ctrl('r'));
        assert_eq!(e.key(Ctrl('c')), Action::Cancel("draft".into()));
        assert_eq!((state(&e), e.view().0), ("|".into(), "> ".into()));
    }

    #[test]
    fn tab_completes_slash_commands() {
        use Key::*;
        assert_eq!(after("/st", &[Tab]), "/status |");
        assert_eq!(after("/m", &[Tab, Char('x')]), "/model x|");
        assert_eq!(
            after("/ex", &[Tab]),
            "/ex|",
            "two commands: nothing to add yet"
        );
        let mut e = editor();
        typed(&mut e, "/e");
        assert_eq!(e.key(Tab), Action::Redraw);
        assert_eq!(state(&e), "/ex|", "extended to what they share");
        assert_eq!(e.key(Tab), Action::Show("/exit  /export".into()));
        assert_eq!(after("/nope", &[Tab]), "/nope|");
        assert_eq!(
            after("hello /st", &[Tab]),
            "hello /st|",
            "only a command at the start"
        );
        assert_eq!(after("status", &[Tab]), "status|");
    }
}
