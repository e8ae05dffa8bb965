//! The system prompt: the built-in one, or the user's `--system` file instead.

use crate::sandbox::fsafe;
use std::path::{Path, PathBuf};

/// The built-in system prompt. Written for small local models (measured on Qwen2.5-Coder-1.5B,
/// which otherwise answers with code for the user to paste, or guesses a file's content) and
/// short, so the first request stays small. It names no path: the workspace differs from run
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
         Paths are relative to the project directory. Commands run without a terminal or stdin, \
         so never start interactive programs.",
        std::env::consts::OS,
    )
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
