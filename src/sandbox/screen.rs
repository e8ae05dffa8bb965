//! `check_command`: screens shell commands for the well-known destructive ones.
//!
//! Known hole, on purpose: this is a keyword screen, not isolation. It stops accidents and
//! obvious mistakes; a determined model can write `python -c` that deletes anything the user
//! can. README says so.

/// Err(reason) when a shell command is one of the well-known destructive ones: `rm -rf /` and
/// its spellings, privilege escalation, shutdown, formatting or overwriting disks, recursive
/// permission changes on `/`, writes to devices, the fork bomb. Nested `sh -c '…'` and `eval`
/// are checked too. Words inside quotes are data (`echo "rm -rf /"` is fine).
pub fn check_command(command: &str) -> Result<(), String> {
    if is_fork_bomb(command) {
        return Err("fork bomb".into());
    }
    let tokens = lex(command);
    for simple in tokens.split(|t| matches!(t, Token::Separator)) {
        let mut words = Vec::new();
        let mut redirect = false;
        for token in simple {
            match token {
                Token::Redirect => redirect = true,
                Token::Word(word) if redirect => {
                    redirect = false;
                    if writes_device(word) {
                        return Err(format!("write to device {word}"));
                    }
                }
                Token::Word(word) => words.push(word.as_str()),
                Token::Separator => unreachable!("split on separators"),
            }
        }
        check_simple(&words)?;
    }
    Ok(())
}

fn check_simple(words: &[&str]) -> Result<(), String> {
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
    let dangerous_target = args.iter().copied().find(|a| is_precious(a));
    match program {
        "sudo" | "su" | "doas" | "pkexec" => Err(format!("privilege escalation ({program})")),
        "shutdown" | "reboot" | "halt" | "poweroff" => Err(format!("system shutdown ({program})")),
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
        "mkfs" | "mke2fs" | "mkswap" | "wipefs" => Err(format!("formatting a disk ({program})")),
        p if p.starts_with("mkfs.") => Err(format!("formatting a disk ({program})")),
        "tee" | "cp" => match args.iter().find(|a| writes_device(a)) {
            Some(target) => Err(format!("write to device {target} ({program})")),
            None => Ok(()),
        },
        "dd" => match args.iter().find_map(|a| a.strip_prefix("of=")) {
            Some(target) if writes_device(target) => {
                Err(format!("raw write to a device (dd of={target})"))
            }
            _ => Ok(()),
        },
        "rm" if args.contains(&"--no-preserve-root") => {
            Err("recursive delete of / (rm --no-preserve-root)".into())
        }
        "rm" if flags('r', "--recursive") || flags('R', "--recursive") => match dangerous_target {
            Some(target) => Err(format!("recursive delete of {target} (rm -r)")),
            None => Ok(()),
        },
        "chmod" | "chown" | "chgrp" if flags('R', "--recursive") => match dangerous_target {
            Some(target) => Err(format!(
                "recursive permission change on {target} ({program} -R)"
            )),
            None => Ok(()),
        },
        "sh" | "bash" | "dash" | "zsh" | "ksh" => match args.iter().position(|a| *a == "-c") {
            Some(at) => args
                .get(at + 1)
                .map_or(Ok(()), |script| check_command(script)),
            None => Ok(()),
        },
        "eval" => check_command(&args.join(" ")),
        _ => Ok(()),
    }
}

/// Skips what only prefixes the real command: `VAR=value`, shell keywords, and wrappers such as
/// `env`, `nohup`, `time`, `timeout 5` with their own flags.
fn strip_wrappers<'a, 'b>(mut words: &'b [&'a str]) -> &'b [&'a str] {
    const KEYWORDS: &[&str] = &["then", "do", "else", "if", "while", "until", "{", "!"];
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

/// `/`, `/*`, `~`, `$HOME` and the top-level system directories.
fn is_precious(target: &str) -> bool {
    const SYSTEM: &[&str] = &[
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "opt", "proc", "root",
        "sbin", "srv", "sys", "usr", "var",
    ];
    let t = target.trim_end_matches(['*', '/']);
    let t = t.strip_suffix("/.").unwrap_or(t);
    matches!(t, "" | "~" | "$HOME" | "${HOME}" | "/.." | ".." | "/.")
        || t.strip_prefix('/').is_some_and(|dir| SYSTEM.contains(&dir))
}

/// A path under /dev that is a real device, not one of the harmless pseudo files.
fn writes_device(target: &str) -> bool {
    let Some(name) = target.strip_prefix("/dev/") else {
        return false;
    };
    let harmless = [
        "null", "zero", "stdout", "stderr", "stdin", "tty", "full", "random", "urandom",
    ];
    // fd/N are descriptors; tcp/ and udp/ are bash's network paths, not devices.
    !harmless.contains(&name) && !["fd/", "tcp/", "udp/"].iter().any(|p| name.starts_with(p))
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
    /// `>`, `>>`, `2>`, `&>`, `>|`: the next word is where output goes.
    Redirect,
    /// What ends a simple command: `;`, `&`, `|`, `&&`, `||`, newline, `(`, `)`, `$(`, backtick.
    Separator,
}

/// A small shell lexer: quotes and backslashes make data, operators split commands.
fn lex(command: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let finish = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if std::mem::take(in_word) {
            tokens.push(Token::Word(std::mem::take(word)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next().filter(|&c| c != '\n'));
            }
            '>' => {
                // A redirect's fd number (`2>`) was lexed as a word: it is not an argument.
                if in_word && !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                finish(&mut word, &mut in_word, &mut tokens);
                if matches!(chars.peek(), Some('>') | Some('|')) {
                    chars.next();
                }
                if chars.peek() == Some(&'&') {
                    chars.next(); // `>&2` duplicates a descriptor: the next word is a number
                }
                tokens.push(Token::Redirect);
            }
            '&' if chars.peek() == Some(&'>') => {
                finish(&mut word, &mut in_word, &mut tokens);
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                finish(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Separator);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                finish(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Separator);
            }
            c if c.is_whitespace() => finish(&mut word, &mut in_word, &mut tokens),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(check_command(command).is_err(), "not blocked: {command}");
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
            assert_eq!(check_command(command), Ok(()), "blocked: {command}");
        }
    }

    #[test]
    fn reasons_name_the_danger() {
        assert_eq!(
            check_command("rm -rf /"),
            Err("recursive delete of / (rm -r)".into())
        );
        assert_eq!(
            check_command("sudo ls"),
            Err("privilege escalation (sudo)".into())
        );
        assert_eq!(
            check_command("echo > /dev/sda"),
            Err("write to device /dev/sda".into())
        );
    }

    #[test]
    fn lexer_splits_commands_and_keeps_quoted_words_whole() {
        let words = |s: &str| -> Vec<Token> { lex(s) };
        assert_eq!(
            words("a 'b c' \"d\\\"e\" f\\ g; h"),
            vec![
                Token::Word("a".into()),
                Token::Word("b c".into()),
                Token::Word("d\"e".into()),
                Token::Word("f g".into()),
                Token::Separator,
                Token::Word("h".into()),
            ]
        );
        assert_eq!(
            words("x 2>/dev/null"),
            vec![
                Token::Word("x".into()),
                Token::Redirect,
                Token::Word("/dev/null".into())
            ]
        );
    }
}
