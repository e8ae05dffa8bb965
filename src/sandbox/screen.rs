//! `check_command`: screens shell commands for the well-known destructive ones.
//!
//! It judges words and targets, not substrings: a small lexer splits the command as the shell
//! would (quotes, comments, heredocs, `$(…)`), so `sudo` in a quoted string, a heredoc's body or
//! a comment is data, while `sudo` inside `$(…)` or an unquoted heredoc's `$(…)` still runs and
//! is flagged. Targets are resolved against every directory the command may be in: it starts
//! in the workspace, and each `cd` adds where it goes (none is taken away, so a `cd` that
//! fails, or runs in a subshell, can only make the screen stricter). So `rm -rf *` in the
//! workspace or a directory below it passes, and after `cd /` it does not.
//!
//! Known hole, on purpose: this is a keyword screen, not isolation. It stops accidents and
//! obvious mistakes; a determined model can write `python -c` that deletes anything the user
//! can, hide a path in a variable, or set `CDPATH`. docs/sandbox.md says so.

use std::path::{Component, Path, PathBuf};

/// Err(reason) when a shell command is one of the well-known destructive ones: `rm -rf` of `/`,
/// a system directory, a home directory or a parent of the workspace; privilege escalation;
/// shutdown; formatting anything but a file in the workspace; writes to devices; recursive
/// permission changes on such targets; the fork bomb. Nested `sh -c '…'`, `eval`, `$(…)` and
/// `find -exec` are checked too. `workspace` is the canonical directory commands start in.
pub fn check_command(command: &str, workspace: &Path) -> Result<(), String> {
    let mut screen = Screen {
        workspace,
        cwd: Some(vec![workspace.to_path_buf()]),
        depth: 0,
    };
    screen.check(command)
}

/// More directories than this a command may be in, and the screen stops telling them apart.
const MAX_DIRS: usize = 32;
/// `sh -c` inside `eval` inside `$(…)`…: deeper than this is refused, not screened.
const MAX_DEPTH: usize = 8;

struct Screen<'a> {
    workspace: &'a Path,
    /// Every directory the command may be in by now, or None when it cannot be told (`cd
    /// "$DIR"`, `cd -`, `source`).
    cwd: Option<Vec<PathBuf>>,
    depth: usize,
}

impl Screen<'_> {
    fn check(&mut self, command: &str) -> Result<(), String> {
        if is_fork_bomb(command) {
            return Err("fork bomb".into());
        }
        let lexed = lex(command);
        for simple in lexed.tokens.split(|t| matches!(t, Token::Separator)) {
            let mut words = Vec::new();
            let mut next_is = None;
            for token in simple {
                match (token, next_is.take()) {
                    (Token::Redirect, _) => next_is = Some(Token::Redirect),
                    (Token::Input, _) => next_is = Some(Token::Input),
                    (Token::Word(word), Some(Token::Redirect)) => {
                        if self.device(word) {
                            return Err(format!("write to device {word}"));
                        }
                    }
                    (Token::Word(_), Some(_)) => {} // where input comes from
                    (Token::Word(word), None) => words.push(word.as_str()),
                    (Token::Separator, _) => unreachable!("split on separators"),
                }
            }
            self.simple(&words)?;
        }
        // What runs in `$(…)`, backquotes and heredocs: after every `cd`, the strictest view.
        for nested in &lexed.nested {
            self.nested(nested)?;
        }
        Ok(())
    }

    fn nested(&mut self, command: &str) -> Result<(), String> {
        if self.depth >= MAX_DEPTH {
            return Err("commands nested too deeply to screen".into());
        }
        self.depth += 1;
        let result = self.check(command);
        self.depth -= 1;
        result
    }

    fn simple(&mut self, words: &[&str]) -> Result<(), String> {
        let words = strip_wrappers(words);
        let Some((&first, args)) = words.split_first() else {
            return Ok(());
        };
        let program = first.rsplit('/').next().unwrap_or(first);
        let flags = |short: char, long: &str| {
            args.iter().any(|a| {
                *a == long || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(short))
            })
        };
        let operands = operands(args);
        let precious = || {
            let found = operands.iter().find_map(|t| Some((t, self.precious(t)?)));
            found.map(|(target, place)| format!("{target}{place}"))
        };
        match program {
            // Where later commands run.
            "cd" | "pushd" => {
                self.change_dir(&operands, flags('P', "--physical"));
                Ok(())
            }
            "popd" | "source" | "." => {
                self.cwd = None;
                Ok(())
            }
            // Privilege escalation.
            "sudo" | "su" | "doas" | "pkexec" => Err(format!("privilege escalation ({program})")),
            // Stopping the machine.
            "shutdown" | "reboot" | "halt" | "poweroff" => {
                Err(format!("system shutdown ({program})"))
            }
            "init" | "telinit" if matches!(args.first(), Some(&"0") | Some(&"6")) => {
                Err(format!("system shutdown ({program} {})", args[0]))
            }
            "systemctl"
                if args
                    .iter()
                    .any(|a| matches!(*a, "poweroff" | "reboot" | "halt" | "kexec")) =>
            {
                Err("system shutdown (systemctl)".into())
            }
            // Formatting: fine on an image file in the workspace, nowhere else.
            "mkfs" | "mke2fs" | "mkswap" | "wipefs" => self.formats(program, &operands),
            p if p.starts_with("mkfs.") => self.formats(program, &operands),
            // Writing to a device.
            "tee" | "cp" => match operands.iter().find(|a| self.device(a)) {
                Some(target) => Err(format!("write to device {target} ({program})")),
                None => Ok(()),
            },
            "dd" => match args.iter().find_map(|a| a.strip_prefix("of=")) {
                Some(target) if self.device(target) => {
                    Err(format!("raw write to a device (dd of={target})"))
                }
                _ => Ok(()),
            },
            // Deleting or opening up a precious directory.
            "rm" if args.contains(&"--no-preserve-root") => {
                Err("recursive delete of / (rm --no-preserve-root)".into())
            }
            "rm" if flags('r', "--recursive") || flags('R', "--recursive") => match precious() {
                Some(target) => Err(format!("recursive delete of {target} (rm -r)")),
                None => Ok(()),
            },
            "chmod" | "chown" | "chgrp" if flags('R', "--recursive") => match precious() {
                Some(target) => Err(format!(
                    "recursive permission change on {target} ({program} -R)"
                )),
                None => Ok(()),
            },
            // Commands that run other commands.
            "sh" | "bash" | "dash" | "zsh" | "ksh" => {
                let script = args
                    .iter()
                    .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
                    .and_then(|at| args.get(at + 1));
                script.map_or(Ok(()), |script| self.nested(script))
            }
            "eval" => self.nested(&args.join(" ")),
            "find" => {
                for (at, arg) in args.iter().enumerate() {
                    if matches!(*arg, "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let rest = &args[at + 1..];
                        let end = rest
                            .iter()
                            .position(|a| matches!(*a, ";" | "+"))
                            .unwrap_or(rest.len());
                        self.simple(&rest[..end])?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `cd DIR`: later commands may run in DIR too (from any directory they may be in now).
    fn change_dir(&mut self, operands: &[&str], physical: bool) {
        let Some(cwd) = &mut self.cwd else {
            return;
        };
        let target = match operands.first() {
            Some(t) if !physical && !t.starts_with(['$', '~', '-']) && !has_glob(t) => t,
            _ => {
                // Home, the previous directory, a variable, or symlinks resolved: unknown.
                self.cwd = None;
                return;
            }
        };
        let new: Vec<PathBuf> = match target.starts_with('/') {
            true => vec![normalize(Path::new(target))],
            false => cwd.iter().map(|c| normalize(&c.join(target))).collect(),
        };
        for dir in new {
            if !cwd.contains(&dir) {
                cwd.push(dir);
            }
        }
        if cwd.len() > MAX_DIRS {
            self.cwd = None;
        }
    }

    /// Every directory `target` may name, from each directory the command may be in; an
    /// unknown directory counts as both the workspace and `/`, the worst case. A glob stands
    /// for all it could match: the directory it is in. None for `$VAR` and `$(…)`.
    fn places(&self, target: &str) -> Option<Vec<PathBuf>> {
        if target.starts_with('$') {
            return None;
        }
        let mut fixed = PathBuf::new();
        for part in Path::new(target).components() {
            if has_glob(&part.as_os_str().to_string_lossy()) {
                break;
            }
            fixed.push(part);
        }
        if target.starts_with('/') {
            return Some(vec![normalize(&fixed)]);
        }
        let unknown = [self.workspace.to_path_buf(), PathBuf::from("/")];
        let bases = self.cwd.as_deref().unwrap_or(&unknown);
        Some(bases.iter().map(|b| normalize(&b.join(&fixed))).collect())
    }

    /// Whether deleting (or opening up) `target` reaches `/`, a top-level system directory, a
    /// home directory, or a directory holding the workspace: Some(where, for the reason).
    fn precious(&self, target: &str) -> Option<String> {
        const SYSTEM: &[&str] = &[
            "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root",
            "sbin", "srv", "sys", "usr", "var",
        ];
        // `~`, `~/`, `~/*`, `~user`, `$HOME` and the like: a whole home directory.
        let t = target.trim_end_matches(['*', '/']);
        let t = t.strip_suffix("/.").unwrap_or(t);
        if matches!(t, "~" | "$HOME" | "${HOME}") || (t.starts_with('~') && !t.contains('/')) {
            return Some(String::new());
        }
        let unknown = " in a directory the screen cannot tell";
        if self.cwd.is_none() && target.starts_with("..") {
            return Some(unknown.into());
        }
        // A variable: cannot be told.
        let places = self.places(target)?;
        let place = places.iter().find(|dir| {
            let parts: Vec<String> = dir
                .components()
                .skip(1)
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let system = match parts.as_slice() {
                [] => true,
                [top] => SYSTEM.contains(&top.as_str()),
                [home, _] => home == "home",
                _ => false,
            };
            system || (self.workspace.starts_with(dir) && *dir != self.workspace)
        })?;
        Some(match (target.starts_with('/'), &self.cwd) {
            (true, _) => String::new(),
            (false, Some(_)) => format!(" at {}", place.display()),
            (false, None) => unknown.into(),
        })
    }

    /// `mkfs` and the like: refused unless every operand is a file inside the workspace.
    fn formats(&self, program: &str, operands: &[&str]) -> Result<(), String> {
        for operand in operands {
            let inside = !has_glob(operand)
                && self.places(operand).is_some_and(|places| {
                    places.iter().all(|p| {
                        p.starts_with(self.workspace) && !writes_device(p) && p != self.workspace
                    })
                });
            if !inside {
                return Err(format!("formatting a disk ({program} {operand})"));
            }
        }
        Ok(())
    }

    /// Whether writing to `target` writes to a device, from any directory the command may be in.
    fn device(&self, target: &str) -> bool {
        if target.starts_with('/') {
            return writes_device(&normalize(Path::new(target)));
        }
        self.cwd.as_ref().is_some_and(|cwd| {
            cwd.iter()
                .any(|dir| writes_device(&normalize(&dir.join(target))))
        })
    }
}

/// The arguments that are not options (all of them after `--`).
fn operands<'a>(args: &[&'a str]) -> Vec<&'a str> {
    match args.iter().position(|a| *a == "--") {
        Some(at) => args[..at]
            .iter()
            .filter(|a| !a.starts_with('-'))
            .chain(&args[at + 1..])
            .copied()
            .collect(),
        None => args
            .iter()
            .filter(|a| !a.starts_with('-') || **a == "-")
            .copied()
            .collect(),
    }
}

fn has_glob(word: &str) -> bool {
    word.contains(['*', '?', '['])
}

/// `.` and `..` taken out by name, as `cd` (without -P) and this screen see a path.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// Skips what only prefixes the real command: `VAR=value`, shell keywords, and wrappers such as
/// `env`, `nohup`, `time`, `timeout 5` with their own flags. `command -v X` runs nothing.
fn strip_wrappers<'a, 'b>(mut words: &'b [&'a str]) -> &'b [&'a str] {
    const KEYWORDS: &[&str] = &[
        "then", "do", "else", "elif", "if", "while", "until", "{", "!",
    ];
    const WRAPPERS: &[&str] = &[
        "env", "nohup", "time", "exec", "command", "builtin", "nice", "ionice", "stdbuf", "xargs",
        "timeout",
    ];
    let is_assignment = |w: &str| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
    };
    while let Some((&first, rest)) = words.split_first() {
        if is_assignment(first) || KEYWORDS.contains(&first) {
            words = rest;
        } else if WRAPPERS.contains(&first) {
            let number = |w: &str| first != "timeout" && w.chars().all(|c| c.is_ascii_digit());
            let own = |w: &&&str| w.starts_with('-') || is_assignment(w) || number(w);
            let skip = rest.iter().take_while(own).count();
            // `command -v NAME` and `-V` only say what NAME is.
            if first == "command" && rest[..skip].iter().any(|f| f.contains(['v', 'V'])) {
                return &[];
            }
            words = &rest[skip..];
            if first == "timeout" {
                words = words.get(1..).unwrap_or_default(); // the duration
            }
        } else {
            break;
        }
    }
    words
}

/// A path under /dev that is a real device, not one of the harmless pseudo files, nor the
/// tmpfs mounts /dev/shm and /dev/mqueue.
fn writes_device(path: &Path) -> bool {
    let Ok(name) = path.strip_prefix("/dev") else {
        return false;
    };
    let name = name.to_string_lossy();
    let harmless = [
        "null", "zero", "stdout", "stderr", "stdin", "tty", "full", "random", "urandom", "shm",
        "mqueue",
    ];
    // fd/N are descriptors; tcp/ and udp/ are bash's network paths, not devices.
    let below = ["fd/", "tcp/", "udp/", "shm/", "mqueue/"];
    !harmless.contains(&name.as_ref()) && !below.iter().any(|p| name.starts_with(p))
}

/// `:(){ :|:& };:` and the same shape with any name and spacing.
fn is_fork_bomb(command: &str) -> bool {
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    compact.match_indices("(){").any(|(at, _)| {
        let name_start = compact[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |i| i + 1);
        let name = &compact[name_start..at];
        !name.is_empty() && compact[at..].contains(&format!("{name}|{name}&"))
    })
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `>`, `>>`, `2>`, `&>`, `>|`, `<>`: the next word is where output goes.
    Redirect,
    /// `<`, `<<<`, `<&`: the next word is where input comes from.
    Input,
    /// What ends a simple command: `;`, `&`, `|`, `&&`, `||`, newline, `(`, `)`.
    Separator,
}

#[derive(Debug, Default, PartialEq)]
struct Lexed {
    tokens: Vec<Token>,
    /// Commands that run inside this one: `$(…)`, backquotes, `<(…)`, and those in the body
    /// of a heredoc whose delimiter is not quoted.
    nested: Vec<String>,
}

/// What `$(…)` and backquotes leave in a word: a value nothing can be told about.
const SUBSTITUTED: &str = "$(…)";

/// A small shell lexer: quotes and backslashes make data, `#` starts a comment, heredoc bodies
/// are data, operators split commands, command substitutions are set aside to be checked.
fn lex(command: &str) -> Lexed {
    let chars: Vec<char> = command.chars().collect();
    let mut out = Lexed::default();
    let mut word = String::new();
    let mut in_word = false;
    // Heredocs begun on this line: delimiter, `<<-` (tabs stripped), body expanded.
    let mut heredocs: Vec<(String, bool, bool)> = Vec::new();
    let finish = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if std::mem::take(in_word) {
            tokens.push(Token::Word(std::mem::take(word)));
        }
    };
    // A redirect's fd number (`2>`, `3<>`) was lexed as a word: it is not an argument.
    let drop_fd = |word: &mut String, in_word: &mut bool| {
        if *in_word && !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
            word.clear();
            *in_word = false;
        }
    };
    let at = |i: usize| chars.get(i).copied();
    let mut i = 0;
    while let Some(c) = at(i) {
        i += 1;
        match c {
            '#' if !in_word => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            '\'' => {
                in_word = true;
                while let Some(c) = at(i) {
                    i += 1;
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                i = double_quoted(&chars, i, &mut word, &mut out.nested);
            }
            '\\' => {
                in_word = true;
                if let Some(c) = at(i) {
                    if c != '\n' {
                        word.push(c);
                    }
                    i += 1;
                }
            }
            '`' => {
                in_word = true;
                let (inner, next) = backquoted(&chars, i);
                out.nested.push(inner);
                word.push_str(SUBSTITUTED);
                i = next;
            }
            '$' if at(i) == Some('(') => {
                in_word = true;
                let (inner, next) = substitution(&chars, i);
                out.nested.push(inner);
                word.push_str(SUBSTITUTED);
                i = next;
            }
            '<' | '>' if at(i) == Some('(') => {
                // Process substitution: a command whose output or input is a file name.
                finish(&mut word, &mut in_word, &mut out.tokens);
                let (inner, next) = substitution(&chars, i);
                out.nested.push(inner);
                out.tokens.push(Token::Word(SUBSTITUTED.into()));
                i = next;
            }
            '<' if at(i) == Some('<') && at(i + 1) == Some('<') => {
                finish(&mut word, &mut in_word, &mut out.tokens);
                out.tokens.push(Token::Input);
                i += 2;
            }
            '<' if at(i) == Some('<') => {
                finish(&mut word, &mut in_word, &mut out.tokens);
                i += 1;
                let strip = at(i) == Some('-');
                if strip {
                    i += 1;
                }
                while matches!(at(i), Some(' ') | Some('\t')) {
                    i += 1;
                }
                let (delimiter, quoted, next) = heredoc_delimiter(&chars, i);
                i = next;
                if !delimiter.is_empty() {
                    heredocs.push((delimiter, strip, !quoted));
                }
            }
            '<' => {
                drop_fd(&mut word, &mut in_word);
                finish(&mut word, &mut in_word, &mut out.tokens);
                match at(i) {
                    Some('>') => {
                        i += 1;
                        out.tokens.push(Token::Redirect);
                    }
                    Some('&') => {
                        i += 1;
                        out.tokens.push(Token::Input);
                    }
                    _ => out.tokens.push(Token::Input),
                }
            }
            '>' => {
                drop_fd(&mut word, &mut in_word);
                finish(&mut word, &mut in_word, &mut out.tokens);
                if matches!(at(i), Some('>') | Some('|')) {
                    i += 1;
                }
                if at(i) == Some('&') {
                    i += 1; // `>&2` duplicates a descriptor: the next word is a number
                }
                out.tokens.push(Token::Redirect);
            }
            '&' if at(i) == Some('>') => {
                finish(&mut word, &mut in_word, &mut out.tokens);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                finish(&mut word, &mut in_word, &mut out.tokens);
                out.tokens.push(Token::Separator);
                if c == '\n' {
                    for (delimiter, strip, expand) in heredocs.drain(..) {
                        let (body, next) = heredoc_body(&chars, i, &delimiter, strip);
                        if expand {
                            out.nested.extend(substitutions(&body));
                        }
                        i = next;
                    }
                }
            }
            c if c.is_whitespace() => finish(&mut word, &mut in_word, &mut out.tokens),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut out.tokens);
    out
}

/// The rest of a double-quoted string from `i` (after its `"`) into `word`; `$(…)` and
/// backquotes inside still run, so they go to `nested`. Returns where the string ends.
fn double_quoted(
    chars: &[char],
    mut i: usize,
    word: &mut String,
    nested: &mut Vec<String>,
) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '"' => break,
            '\\' => match chars.get(i) {
                Some(&n) if matches!(n, '$' | '`' | '"' | '\\' | '\n') => {
                    if n != '\n' {
                        word.push(n);
                    }
                    i += 1;
                }
                _ => word.push('\\'),
            },
            '$' if chars.get(i) == Some(&'(') => {
                let (inner, next) = substitution(chars, i);
                nested.push(inner);
                word.push_str(SUBSTITUTED);
                i = next;
            }
            '`' => {
                let (inner, next) = backquoted(chars, i);
                nested.push(inner);
                word.push_str(SUBSTITUTED);
                i = next;
            }
            c => word.push(c),
        }
    }
    i
}

/// The command inside `(…)` whose `(` is at `open`, and the index after its `)`.
fn substitution(chars: &[char], open: usize) -> (String, usize) {
    let mut depth = 0;
    let mut i = open;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while chars.get(i).is_some_and(|&c| c != '\'') {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while let Some(&c) = chars.get(i) {
                    match c {
                        '\\' => i += 1,
                        '"' => break,
                        _ => {}
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (chars[open + 1..i].iter().collect(), i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    let rest = chars.get(open + 1..).unwrap_or_default();
    (rest.iter().collect(), chars.len())
}

/// The command inside backquotes starting at `i` (after the opening one), and the index after
/// the closing one.
fn backquoted(chars: &[char], mut i: usize) -> (String, usize) {
    let mut inner = String::new();
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '`' => break,
            '\\' if matches!(chars.get(i), Some('`') | Some('\\') | Some('$')) => {
                inner.push(chars[i]);
                i += 1;
            }
            c => inner.push(c),
        }
    }
    (inner, i)
}

/// A heredoc's delimiter word from `i`: its text without quotes, whether any part was quoted
/// (then the body is not expanded), and where it ends.
fn heredoc_delimiter(chars: &[char], mut i: usize) -> (String, bool, usize) {
    let (mut word, mut quoted) = (String::new(), false);
    while let Some(&c) = chars.get(i) {
        match c {
            '\'' | '"' => {
                quoted = true;
                i += 1;
                while chars.get(i).is_some_and(|&q| q != c) {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' => {
                quoted = true;
                i += 1;
                word.extend(chars.get(i));
            }
            c if c.is_whitespace() || ";&|<>()".contains(c) => break,
            c => word.push(c),
        }
        i += 1;
    }
    (word, quoted, i)
}

/// A heredoc's body from `i` (the start of the line after its command) up to the line that is
/// its delimiter, and the index after that line.
fn heredoc_body(chars: &[char], mut i: usize, delimiter: &str, strip: bool) -> (String, usize) {
    let mut body = String::new();
    while i < chars.len() {
        let end = chars[i..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |n| i + n);
        let line: String = chars[i..end].iter().collect();
        i = (end + 1).min(chars.len());
        let shown = if strip {
            line.trim_start_matches('\t')
        } else {
            &line
        };
        if shown == delimiter {
            break;
        }
        body.push_str(&line);
        body.push('\n');
    }
    (body, i)
}

/// The `$(…)` and backquoted commands in expanded text (an unquoted heredoc's body).
fn substitutions(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '\\' => i += 1,
            '$' if chars.get(i) == Some(&'(') => {
                let (inner, next) = substitution(&chars, i);
                found.push(inner);
                i = next;
            }
            '`' => {
                let (inner, next) = backquoted(&chars, i);
                found.push(inner);
                i = next;
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const WS: &str = "/home/u/proj";

    fn check(command: &str) -> Result<(), String> {
        check_command(command, Path::new(WS))
    }

    #[test]
    fn dangerous_commands_are_blocked() {
        for command in [
            "rm -rf /",
            "rm -fr /",
            "rm -r -f /*",
            "rm -rf ~",
            "rm -rf ~/",
            "rm -rf $HOME",
            "rm -Rf /etc",
            "rm --recursive --force /usr/",
            "rm -rf --no-preserve-root /",
            "/bin/rm -rf /",
            "\"rm\" -rf /",
            "cd /tmp && rm -rf /",
            "echo hi; sudo rm x",
            "sudo apt install x",
            "FOO=1 sudo ls",
            "env sudo ls",
            "shutdown -h now",
            "reboot",
            "systemctl poweroff",
            "init 0",
            "mkfs.ext4 /dev/sda1",
            "mkfs -t ext4 /dev/sdb",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "echo x > /dev/sda",
            "cat img >/dev/nvme0n1",
            "echo 1 | tee /dev/sda",
            "cp disk.img /dev/sdb",
            ":(){ :|:& };:",
            "bomb() { bomb | bomb & }; bomb",
            "chmod -R 777 /",
            "chown -R me /",
            "sh -c 'rm -rf /'",
            "bash -c \"sudo ls\"",
            "eval sudo ls",
            "ls $(sudo ls)",
            "timeout 5 sudo ls",
            "nohup reboot &",
        ] {
            assert!(check(command).is_err(), "not blocked: {command}");
        }
    }

    /// What judging words and targets must still catch: the same dangers behind a `cd`, in a
    /// substitution that runs, or spelled another way.
    #[test]
    fn dangers_behind_cd_substitutions_and_spellings_are_blocked() {
        for command in [
            "cd / && rm -rf *",
            "cd /; rm -rf *",
            "cd / ; cd /tmp/missing; rm -rf *", // the second cd may fail
            "cd .. && rm -rf *",                // the directory holding the workspace
            "cd \"$DIR\" && rm -rf *",          // cannot tell where
            "cd - && rm -rf ./*",
            "(cd /) ; rm -rf *", // strict about subshells too
            "eval 'cd /'; rm -rf *",
            "bash -c 'cd / && rm -rf *'",
            "rm -rf ..",
            "rm -rf ../*",
            "rm -rf build/../..",
            "rm -rf /u*",
            "rm -rf /home/alice",
            "rm -rf ~alice",
            "cd /etc && chmod -R 777 .",
            "cat <<EOF\n$(sudo ls)\nEOF",
            "cat <<EOF\nfine\nEOF\nsudo ls",
            "echo \"$(sudo ls)\"",
            "echo `sudo ls`",
            "echo a#b; sudo ls",
            "ls # comment\nsudo ls",
            "diff <(sudo cat /etc/shadow) x",
            "command sudo ls",
            "bash -lc 'sudo ls'",
            "find . -name x -exec sudo rm {} ;",
            "mkfs.ext4 $DEV",
            "mkfs.ext4 /tmp/disk.img",
            "mkfs.ext4 ../disk.img",
            "wipefs -a /dev/sda",
            "echo x > /dev/shm/../sda",
            "cd /dev && echo x > sda",
            "exec 3<>/dev/sda",
        ] {
            assert!(check(command).is_err(), "not blocked: {command:?}");
        }
    }

    #[test]
    fn harmless_commands_pass() {
        for command in [
            "ls -la",
            "cmd 2>/dev/null",
            "cmd > /dev/null 2>&1",
            "cmd &>/dev/null",
            "echo pseudo",
            "echo sudo is a word here: 'sudo'",
            "echo \"rm -rf /\"",
            "rm -rf ./build",
            "rm -rf build/ target",
            "rm -r /tmp/turn-test",
            "rm -f /etc/x.conf",
            "chmod -R 755 ./scripts",
            "dd if=/dev/zero of=./disk.img bs=1M count=1",
            "dd if=/dev/urandom of=/dev/null count=1",
            "grep -r reboot src/",
            "git commit -m 'shutdown handler'",
            "cargo build --release 2>&1 | tail -5",
            "find . -name '*.rs' | xargs wc -l",
            "echo done >&2",
            "echo log | tee -a /dev/stderr out.log",
            "exec 3<>/dev/tcp/127.0.0.1/80",
            "python3 -c 'print(1)' > out.txt",
            "mkdir -p a/b && cd a/b && touch x",
        ] {
            assert_eq!(check(command), Ok(()), "blocked: {command}");
        }
    }

    /// The false positives the old substring screen had: each must pass now.
    #[test]
    fn former_false_positives_pass() {
        for command in [
            "command -v sudo",
            "command -V reboot >/dev/null && echo present",
            "cat <<EOF\nsudo apt install x\nEOF",
            "cat > INSTALL.md <<'EOF'\nRun sudo make install, then reboot.\n$(sudo ls) stays text\nEOF",
            "cat <<-EOF >> notes\n\tsudo is needed for this\n\tEOF",
            "ls # sudo rm -rf /",
            "# reboot once the tests pass\nmake test",
            "rm -rf *",
            "rm -rf */",
            "bash -c 'cd build && rm -rf *'",
            "cd build && rm -rf *",
            "echo cache > /dev/shm/turn-cache",
            "cp model.bin /dev/shm/",
            "mkfs.ext4 disk.img",
            "mkfs.ext4 -F -L data ./images/disk.img",
            "git log --grep=reboot",
            "rm -rf .",
        ] {
            assert_eq!(check(command), Ok(()), "blocked: {command:?}");
        }
    }

    #[test]
    fn a_workspace_that_is_itself_precious_gets_no_pass() {
        for (workspace, command) in [
            ("/", "rm -rf *"),
            ("/etc", "rm -rf *"),
            ("/home/u", "rm -rf ./*"),
            ("/", "mkfs.ext4 dev/sda"),
        ] {
            assert!(
                check_command(command, Path::new(workspace)).is_err(),
                "{command} in {workspace}"
            );
        }
    }

    #[test]
    fn reasons_name_the_danger() {
        for (command, reason) in [
            ("rm -rf /", "recursive delete of / (rm -r)"),
            ("cd / && rm -rf *", "recursive delete of * at / (rm -r)"),
            ("rm -rf ..", "recursive delete of .. at /home/u (rm -r)"),
            (
                "cd $X && rm -rf *",
                "recursive delete of * in a directory the screen cannot tell (rm -r)",
            ),
            ("sudo ls", "privilege escalation (sudo)"),
            ("echo > /dev/sda", "write to device /dev/sda"),
            (
                "mkfs.ext4 /dev/sdb1",
                "formatting a disk (mkfs.ext4 /dev/sdb1)",
            ),
        ] {
            assert_eq!(check(command), Err(reason.into()), "{command}");
        }
    }

    #[test]
    fn lexer_splits_commands_and_keeps_quoted_words_whole() {
        let word = |s: &str| Token::Word(s.into());
        assert_eq!(
            lex("a 'b c' \"d\\\"e\" f\\ g; h").tokens,
            vec![
                word("a"),
                word("b c"),
                word("d\"e"),
                word("f g"),
                Token::Separator,
                word("h"),
            ]
        );
        assert_eq!(
            lex("x 2>/dev/null").tokens,
            vec![word("x"), Token::Redirect, word("/dev/null")]
        );
        let lexed = lex("cat <<A <<'B' # two\n$(x)\nA\n$(y)\nB\necho \"$(z)\" `w`");
        assert_eq!(lexed.nested, ["x", "z", "w"]);
        assert_eq!(
            lexed.tokens,
            vec![
                word("cat"),
                Token::Separator,
                word("echo"),
                word(SUBSTITUTED),
                word(SUBSTITUTED)
            ]
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let mut command = "sudo ls".to_string();
        for _ in 0..20 {
            command = format!("eval \"$({command})\"");
        }
        assert!(check(&command).is_err());
    }
}
