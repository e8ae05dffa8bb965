//! What checkpoints leave out (pure): the `.gitignore` rules users already wrote, and the
//! directories no one expects an undo to restore.
//!
//! Always left out, whatever `.gitignore` says: every `.git` (a repository's own history is
//! never recorded, restored or touched, nested ones and submodules' `.git` files included),
//! `.turn` (sessions), `node_modules` and `__pycache__`, and any directory holding a
//! `CACHEDIR.TAG` (the cache directory tagging convention Cargo's `target/` follows) or a
//! `pyvenv.cfg` (a Python virtual environment, whatever its name). Other build directories
//! (`build/`, `dist/`) are often sources too, so they are left out only when `.gitignore`
//! lists them.
//!
//! The `.gitignore` subset: blank lines and `#` comments, trailing spaces, `\` escapes, `!`
//! negation, a leading or middle `/` anchoring the pattern to its file's directory, a trailing
//! `/` matching directories only, `*` and `?` within a name, `**` across directories, and
//! `[...]` classes. The root's `.gitignore` and every nested one apply, the deeper and later
//! rule winning; what an ignored directory holds is never looked at, as in git.
//! Matching is a table over pattern tokens and path bytes: no backtracking that a hostile
//! pattern could make exponential.

/// Names never recorded, wherever they are.
pub const ALWAYS: &[&str] = &[".git", ".turn", "node_modules", "__pycache__"];
/// A directory holding one of these files is a cache or an environment, not sources.
pub const MARKERS: &[&str] = &["CACHEDIR.TAG", "pyvenv.cfg"];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Byte(u8),
    /// `?`: one byte but `/`.
    One,
    /// `*`: any bytes but `/`.
    Star,
    /// `**`: any bytes.
    Any,
    /// `**/`: nothing, or anything ending in `/`.
    Dirs,
    /// `[...]`: ranges, negated with `!` or `^`.
    Class(Vec<(u8, u8)>, bool),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    tokens: Vec<Token>,
    negated: bool,
    dir_only: bool,
    /// Matched against the path from the file's directory, not the name alone.
    anchored: bool,
}

/// The patterns of one `.gitignore`, for the directory `base` ("" for the root).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub base: String,
    patterns: Vec<Pattern>,
}

impl Rules {
    pub fn parse(base: &str, text: &str) -> Rules {
        let patterns = text.lines().filter_map(pattern).collect();
        Rules {
            base: base.to_string(),
            patterns,
        }
    }
}

/// One line of a `.gitignore`, or None for blanks and comments.
fn pattern(line: &str) -> Option<Pattern> {
    let mut line = line.trim_end_matches('\r');
    // Trailing spaces go unless escaped.
    while line.ends_with(' ') && !line.ends_with("\\ ") {
        line = &line[..line.len() - 1];
    }
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (negated, line) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (dir_only, line) = match line.strip_suffix('/') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let anchored = line.contains('/');
    let line = line.strip_prefix('/').unwrap_or(line);
    if line.is_empty() || line.len() > 1000 {
        return None;
    }
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() => {
                tokens.push(Token::Byte(bytes[i + 1]));
                i += 2;
                continue;
            }
            b'*' if bytes.get(i + 1) == Some(&b'*') => {
                if bytes.get(i + 2) == Some(&b'/') {
                    tokens.push(Token::Dirs);
                    i += 3;
                } else {
                    tokens.push(Token::Any);
                    i += 2;
                }
                continue;
            }
            b'*' => tokens.push(Token::Star),
            b'?' => tokens.push(Token::One),
            b'[' => {
                if let Some((class, used)) = class(&bytes[i..]) {
                    tokens.push(class);
                    i += used;
                    continue;
                }
                tokens.push(Token::Byte(b'['));
            }
            b => tokens.push(Token::Byte(b)),
        }
        i += 1;
    }
    Some(Pattern {
        tokens,
        negated,
        dir_only,
        anchored,
    })
}

/// `[...]` at the start of `bytes`: the class and the bytes it took, or None when unclosed.
fn class(bytes: &[u8]) -> Option<(Token, usize)> {
    let mut i = 1;
    let negated = matches!(bytes.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let start = i;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b']' && i > start {
            return Some((Token::Class(ranges, negated), i + 1));
        }
        if bytes.get(i + 1) == Some(&b'-') && bytes.get(i + 2).is_some_and(|&c| c != b']') {
            ranges.push((b, bytes[i + 2]));
            i += 3;
        } else {
            ranges.push((b, b));
            i += 1;
        }
    }
    None
}

impl Pattern {
    /// Whether the pattern matches `path` (relative to its file's directory).
    fn matches(&self, path: &str, is_dir: bool) -> bool {
        if self.dir_only && !is_dir {
            return false;
        }
        let subject = if self.anchored {
            path
        } else {
            path.rsplit('/').next().unwrap_or(path)
        };
        glob(&self.tokens, subject.as_bytes())
    }
}

/// Whether `tokens` match all of `s`: `now[j]` says whether the tokens so far match `s[..j]`.
fn glob(tokens: &[Token], s: &[u8]) -> bool {
    let mut now = vec![false; s.len() + 1];
    now[0] = true;
    for token in tokens {
        let mut next = vec![false; s.len() + 1];
        match token {
            Token::Star | Token::Any => {
                let mut on = false;
                for j in 0..=s.len() {
                    on |= now[j];
                    next[j] = on;
                    if *token == Token::Star && j < s.len() && s[j] == b'/' {
                        on = false;
                    }
                }
            }
            Token::Dirs => {
                let mut on = false;
                for j in 0..=s.len() {
                    next[j] = now[j] || (on && j > 0 && s[j - 1] == b'/');
                    on |= now[j];
                }
            }
            _ => {
                for j in 0..s.len() {
                    if now[j] && one(token, s[j]) {
                        next[j + 1] = true;
                    }
                }
            }
        }
        now = next;
    }
    now[s.len()]
}

fn one(token: &Token, b: u8) -> bool {
    match token {
        Token::Byte(c) => *c == b,
        Token::One => b != b'/',
        Token::Class(ranges, negated) => {
            b != b'/' && ranges.iter().any(|&(lo, hi)| lo <= b && b <= hi) != *negated
        }
        _ => false,
    }
}

/// Whether `path` (from the workspace root, `/`-separated) is ignored by `rules`, the files
/// that apply to it from the root down: the last matching pattern decides.
pub fn ignored(rules: &[Rules], path: &str, is_dir: bool) -> bool {
    let mut verdict = false;
    for rules in rules {
        let rel = if rules.base.is_empty() {
            path
        } else {
            match path
                .strip_prefix(rules.base.as_str())
                .and_then(|p| p.strip_prefix('/'))
            {
                Some(rel) => rel,
                None => continue,
            }
        };
        for pattern in &rules.patterns {
            if pattern.matches(rel, is_dir) {
                verdict = !pattern.negated;
            }
        }
    }
    verdict
}

/// Whether a directory entry's name is left out whatever the rules say.
pub fn always(name: &str) -> bool {
    ALWAYS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, cases: &[(&str, bool, bool)]) {
        let rules = [Rules::parse("", text)];
        for &(path, is_dir, want) in cases {
            assert_eq!(ignored(&rules, path, is_dir), want, "{text:?} on {path}");
        }
    }

    #[test]
    fn names_match_at_any_depth_and_anchored_patterns_from_the_root() {
        check(
            "*.o\n/top.txt\ndocs/*.md\n",
            &[
                ("a.o", false, true),
                ("src/deep/a.o", false, true),
                ("a.c", false, false),
                ("top.txt", false, true),
                ("sub/top.txt", false, false),
                ("docs/x.md", false, true),
                ("docs/sub/x.md", false, false),
                ("other/docs/x.md", false, false),
            ],
        );
    }

    #[test]
    fn trailing_slash_means_directories_only() {
        check(
            "build/\n",
            &[
                ("build", true, true),
                ("build", false, false),
                ("a/build", true, true),
            ],
        );
    }

    #[test]
    fn double_stars_cross_directories() {
        check(
            "**/logs\na/**/b\nout/**\n",
            &[
                ("logs", true, true),
                ("x/y/logs", false, true),
                ("a/b", false, true),
                ("a/x/y/b", false, true),
                ("ab", false, false),
                ("out/x/y", false, true),
                ("out", true, false),
            ],
        );
    }

    #[test]
    fn negation_later_wins_and_classes_and_escapes() {
        check(
            "*.log\n!keep.log\n[ab]?.txt\n\\#hash\n\\!bang\n# comment\n\nspace\\ \n",
            &[
                ("x.log", false, true),
                ("keep.log", false, false),
                ("a1.txt", false, true),
                ("c1.txt", false, false),
                ("#hash", false, true),
                ("!bang", false, true),
                ("space ", false, true),
            ],
        );
        check("[!a]*\n", &[("a", false, false), ("b", false, true)]);
        // An unclosed class is a literal bracket.
        check("[ab\n", &[("[ab", false, true), ("a", false, false)]);
    }

    #[test]
    fn nested_files_apply_beneath_their_directory_and_win() {
        let rules = [
            Rules::parse("", "*.tmp\n"),
            Rules::parse("sub", "!x.tmp\n/only\n"),
        ];
        assert!(ignored(&rules, "y.tmp", false));
        assert!(ignored(&rules, "sub/y.tmp", false));
        assert!(!ignored(&rules, "sub/x.tmp", false));
        assert!(ignored(&rules, "x.tmp", false));
        assert!(ignored(&rules, "sub/only", false));
        assert!(!ignored(&rules, "only", false));
        assert!(!ignored(&rules, "subway/only", false));
    }

    #[test]
    fn hostile_patterns_stay_linear() {
        let pattern = "*a".repeat(200) + "b";
        let name = "a".repeat(900);
        let start = std::time::Instant::now();
        check(&pattern, &[(&name, false, false)]);
        assert!(start.elapsed().as_millis() < 500);
    }

    #[test]
    fn always_left_out() {
        for name in [".git", ".turn", "node_modules", "__pycache__"] {
            assert!(always(name));
        }
        assert!(!always("target") && !always("src"));
    }
}
