//! The system prompt: the built-in one, or the user's `--system` file instead.

use crate::sandbox::fsafe;
use std::path::{Path, PathBuf};

/// The built-in system prompt. Written for small local models, which otherwise tend to answer
/// with code for the user to paste or guess a file's content, and short, so the first request stays small. It names no path: the workspace differs from run
/// to run, and the same first message lets the server reuse its cache of it (the tools come
/// after it in the template), so every first request of every run starts warm.
pub fn builtin() -> String {
    format!(
        "You are turn, a coding agent on {}. You do the user's task yourself by calling tools, in \
         the user's project directory. Never tell the user how to do it and never show code for \
         the user to copy: change the files yourself.\n\
         \n\
         Work in steps, one tool call per reply:\n\
         1. Look first: list the files with bash (`ls -R`, `grep -rn WORD .`) and read each file \
         you will change with read_file. Never guess what a file contains.\n\
         2. Change files: edit_file with old_text copied exactly from read_file's output (without \
         the line numbers), or write_file with the whole new content. To compute something, \
         write a short script with write_file and run it with bash.\n\
         3. Check: run the program or the tests with bash, and fix what fails.\n\
         4. Finish: when the task is done, reply in one or two sentences without a tool call: \
         what you did, or the answer the user asked for.\n\
         \n\
         Paths are relative to the project directory.",
        std::env::consts::OS,
    )
}

/// Most files a prompt's names bring in.
pub const MAX_NAMED: usize = 4;

/// The files of the workspace that `prompt` names, in the order it names them (at most
/// `MAX_NAMED`): words that look like a relative path with an extension (`greet.py`,
/// `src/a.py`, in backticks or quotes or not) and that `is_file` says are a regular file there.
/// Absolute paths and `..` are left out, so nothing outside the workspace is named. Pure: the
/// lookup is the caller's (see tools::is_regular_file).
pub fn named_files(prompt: &str, is_file: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in path_words(prompt) {
        if out.len() == MAX_NAMED {
            break;
        }
        if !out.iter().any(|w| w == word) && is_file(word) {
            out.push(word.to_string());
        }
    }
    out
}

/// The words of `text` that could be relative paths to files (pure): trimmed of quotes,
/// brackets and sentence punctuation; with a name, a dot and an extension in their last part,
/// no absolute path and no `..`.
fn path_words(text: &str) -> impl Iterator<Item = &str> {
    const AROUND: &[char] = &[
        '`', '"', '\'', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', ':', '!', '?', '.', '*',
    ];
    text.split_whitespace().filter_map(|word| {
        let word = word.trim_matches(AROUND);
        let last = word.rsplit('/').next()?;
        let (stem, ext) = last.rsplit_once('.')?;
        let plain = |c: char| c.is_alphanumeric() || "._-/+".contains(c);
        let ok = !stem.is_empty()
            && !ext.is_empty()
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && word.len() <= 200
            && word.chars().all(plain)
            && !word.starts_with('/')
            && !word.starts_with('-')
            && !word.split('/').any(|part| part == ".." || part.is_empty());
        ok.then_some(word)
    })
}

/// Directories the file list does not go into, beside hidden ones: what tools make and no
/// one edits by hand.
const SKIPPED_DIRS: [&str; 5] = ["node_modules", "__pycache__", "target", "venv", "vendor"];
/// Most directory entries the walk looks at, and most bytes the list takes.
const MAX_WALKED: usize = 5000;
const MAX_FILE_LIST: usize = 2000;

/// The workspace's files, for the first message of a session: a model that does not see what
/// there is tends to answer without looking, or to guess at names. Hidden entries and tool-made directories are left out; the walk is
/// bounded, and symlinks are listed, never followed. `None` for an empty workspace.
pub fn file_list(workspace: &Path) -> Option<String> {
    let (files, complete) = walk(workspace);
    format_file_list(&files, complete)
}

/// The workspace's files as (directory, name), shallow directories first, and whether the
/// walk saw everything.
fn walk(workspace: &Path) -> (Vec<(PathBuf, String)>, bool) {
    let mut files = Vec::new();
    let mut dirs = std::collections::VecDeque::from([PathBuf::new()]);
    let mut walked = 0;
    let mut complete = true;
    while let Some(dir) = dirs.pop_front() {
        let Ok(entries) = std::fs::read_dir(workspace.join(&dir)) else {
            continue;
        };
        let mut here: Vec<(String, bool)> = Vec::new();
        for entry in entries.flatten() {
            walked += 1;
            if walked > MAX_WALKED {
                complete = false;
                break;
            }
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if name.starts_with('.') || (is_dir && SKIPPED_DIRS.contains(&name.as_str())) {
                continue;
            }
            here.push((name, is_dir));
        }
        here.sort();
        for (name, is_dir) in here {
            if is_dir {
                dirs.push_back(dir.join(name));
            } else {
                files.push((dir.clone(), name));
            }
        }
        if !complete {
            break;
        }
    }
    (files, complete)
}

/// The list as the model reads it (pure): one line per directory, its files after it, in
/// order, shallow directories first; cut at `MAX_FILE_LIST` bytes with a count of the rest.
pub fn format_file_list(files: &[(PathBuf, String)], complete: bool) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut lines: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < files.len() {
        let dir = &files[i].0;
        let names: Vec<&str> = files[i..]
            .iter()
            .take_while(|(d, _)| d == dir)
            .map(|(_, n)| n.as_str())
            .collect();
        let line = if dir.as_os_str().is_empty() {
            names.join(" ")
        } else {
            format!("{}/: {}", dir.display(), names.join(" "))
        };
        lines.push((line, names.len()));
        i += names.len();
    }
    let mut out =
        String::from("[turn: the project's files when the task began (a line per directory):");
    let (mut shown, mut cut) = (0, false);
    for (line, count) in &lines {
        if out.len() + line.len() > MAX_FILE_LIST {
            cut = true;
            break;
        }
        out.push('\n');
        out.push_str(line);
        shown += count;
    }
    let total = files.len();
    match (cut || !complete, total - shown) {
        (false, _) if total == 1 => out.push_str("\n1 file]"),
        (false, _) => out.push_str(&format!("\n{total} files]")),
        (true, 0) => out.push_str(&format!("\n{total} files listed; there are more]")),
        (true, _) => out.push_str(&format!(
            "\n{shown} of {total} files listed{}; use bash to see the rest]",
            if complete { "" } else { " or more" }
        )),
    }
    Some(out)
}

/// The most AGENTS.md text the system prompt takes, all files together.
const MAX_AGENTS_MD: usize = 32 * 1024;

/// `system` with the AGENTS.md files that apply to `workspace` appended: the workspace's own
/// and its parents' up to the git root (outermost first, so nearer files speak last).
pub fn with_agents_md(mut system: String, workspace: &Path) -> String {
    // Up to the git root; outside any git repository, only the workspace itself.
    let dirs: Vec<&Path> = match workspace.ancestors().find(|dir| dir.join(".git").exists()) {
        Some(root) => workspace
            .ancestors()
            .take_while(|dir| *dir != root)
            .chain([root])
            .collect(),
        None => vec![workspace],
    };
    let found: Vec<(PathBuf, String)> = dirs
        .into_iter()
        .filter_map(|dir| {
            let file = dir.join("AGENTS.md");
            read_agents_md(&file).map(|text| (file, text))
        })
        .collect();
    let mut budget = MAX_AGENTS_MD;
    for (file, text) in found.into_iter().rev() {
        if budget == 0 {
            break;
        }
        system.push_str(&format!("\n\n# Instructions from {}\n\n", file.display()));
        if text.len() <= budget {
            system.push_str(&text);
            budget -= text.len();
        } else {
            let cut = (0..=budget)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0);
            system.push_str(&text[..cut]);
            system.push_str("\n\n[AGENTS.md text cut here: the instructions are over 32 KiB]");
            budget = 0;
        }
    }
    system
}

/// An AGENTS.md file's text, if it is a regular UTF-8 file: a FIFO or a device (a symlink to
/// /dev/zero) is skipped without blocking, and no more is read than the prompt could take.
fn read_agents_md(file: &Path) -> Option<String> {
    // A few bytes over the limit, so a cut inside a char still leaves more than it can take.
    let bytes = fsafe::read_regular(file, MAX_AGENTS_MD + 4).ok()?;
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(e) if e.as_bytes().len() > MAX_AGENTS_MD => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(name: &str) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("turn-prompt-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("repo/.git")).unwrap();
        fs::create_dir_all(root.join("repo/sub/ws")).unwrap();
        fs::write(root.join("AGENTS.md"), "above the repo").unwrap();
        fs::write(root.join("repo/AGENTS.md"), "repo rules").unwrap();
        fs::write(root.join("repo/sub/ws/AGENTS.md"), "ws rules").unwrap();
        root
    }

    #[test]
    fn only_regular_files_of_the_workspace_are_named() {
        let root = tree("named");
        let ws = root.join("repo");
        fs::write(ws.join("a.py"), "x").unwrap();
        fs::create_dir_all(ws.join("dir.d")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", ws.join("link.txt")).unwrap();
        let is_file = |w: &str| fs::symlink_metadata(ws.join(w)).is_ok_and(|m| m.is_file());
        let named = named_files(
            "read a.py, a.py again, dir.d, link.txt and gone.py",
            is_file,
        );
        assert_eq!(named, ["a.py"]);
        let many: String = (0..6).map(|i| format!("f{i}.txt ")).collect();
        for i in 0..6 {
            fs::write(ws.join(format!("f{i}.txt")), "x").unwrap();
        }
        assert_eq!(named_files(&many, is_file).len(), MAX_NAMED);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn words_that_name_files() {
        let text = "Fix `src/net.py` and greet.py, then \"docs/guide.md\". See test_x.py: and \
                    config.toml. Not e.g. this, 3.14, -o.txt, /etc/passwd.txt, ../up.py, \
                    a//b.py, .env, lib/core, python3 -m unittest, src/a.py:3: or x.py*";
        let words: Vec<&str> = path_words(text).collect();
        assert_eq!(
            words,
            [
                "src/net.py",
                "greet.py",
                "docs/guide.md",
                "test_x.py",
                "config.toml",
                "e.g",
                "3.14",
                "x.py"
            ]
        );
    }

    #[test]
    fn the_file_list_groups_by_directory_and_is_bounded() {
        let root = tree("list");
        let ws = root.join("repo");
        for file in [
            "b.py",
            "a.md",
            "src/x.py",
            "src/deep/y.py",
            "node_modules/m/z.js",
            ".hidden",
        ] {
            let path = ws.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        assert_eq!(
            file_list(&ws).unwrap(),
            "[turn: the project's files when the task began (a line per directory):\nAGENTS.md a.md b.py\nsrc/: x.py\nsrc/deep/: y.py\nsub/ws/: AGENTS.md\n6 files]"
        );
        let many: Vec<(PathBuf, String)> = (0..500)
            .map(|i| (PathBuf::from(format!("d{i}")), format!("file{i}.txt")))
            .collect();
        let text = format_file_list(&many, true).unwrap();
        assert!(text.len() < MAX_FILE_LIST + 100, "{}", text.len());
        assert!(
            text.ends_with(" of 500 files listed; use bash to see the rest]"),
            "{text}"
        );
        assert_eq!(format_file_list(&[], true), None);
        let one = [(PathBuf::new(), "a.py".to_string())];
        assert!(format_file_list(&one, true)
            .unwrap()
            .ends_with("\na.py\n1 file]"));
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn files_from_the_git_root_down_to_the_workspace() {
        let root = tree("order");
        let out = with_agents_md("base".into(), &root.join("repo/sub/ws"));
        let repo = out.find("repo rules").unwrap();
        let ws = out.find("ws rules").unwrap();
        assert!(out.starts_with("base\n\n# Instructions from "));
        assert!(repo < ws, "outermost first");
        assert!(!out.contains("above the repo"), "stops at the git root");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn long_instructions_are_cut_with_a_note() {
        let root = tree("cut");
        fs::write(root.join("repo/sub/ws/AGENTS.md"), "é".repeat(40_000)).unwrap();
        let out = with_agents_md(String::new(), &root.join("repo/sub/ws"));
        assert!(out.ends_with("[AGENTS.md text cut here: the instructions are over 32 KiB]"));
        assert!(out.len() < MAX_AGENTS_MD + 1000);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn fifos_and_devices_are_skipped_without_blocking() {
        let root = tree("fifo");
        let ws = root.join("repo/sub/ws");
        fs::remove_file(ws.join("AGENTS.md")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(ws.join("AGENTS.md"))
            .status();
        assert!(made.unwrap().success());
        fs::remove_file(root.join("repo/AGENTS.md")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("repo/AGENTS.md")).unwrap();
        assert_eq!(with_agents_md("base".into(), &ws), "base");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn no_files_no_change() {
        let root = tree("none");
        let ws = root.join("repo/sub");
        assert_eq!(
            with_agents_md("base".into(), &ws),
            "base\n\n# Instructions from ".to_string()
                + &root.join("repo/AGENTS.md").display().to_string()
                + "\n\nrepo rules"
        );
        fs::remove_file(root.join("repo/AGENTS.md")).unwrap();
        assert_eq!(with_agents_md("base".into(), &ws), "base");
        fs::remove_dir_all(root).unwrap();
    }
}
