//! The shapes of replies that call no tool and are no answer either, as a model that cannot call
//! tools well writes them: commands or code handed over instead of run, a call begun and not
//! finished, a tool's result echoed. Each is judged from the reply's form alone (fences, JSON,
//! the last result), never from what the task's words say.
//!
//! Pure: text in, verdict out. The unit tests hold real shapes and near-misses.

use crate::wire::textcalls::fence_open;

/// Fence languages of a block of shell commands.
const SHELLS: [&str; 5] = ["sh", "bash", "shell", "console", "zsh"];

/// Whether a reply hands the user commands or code to run: a fenced block in a shell or
/// Python, or with no language.
pub fn hands_over_commands(text: &str) -> bool {
    const LANGUAGES: [&str; 8] = ["", "sh", "bash", "shell", "console", "zsh", "python", "py"];
    let mut open = false;
    for line in text.lines() {
        if open {
            open = line.trim() != "```";
            continue;
        }
        if let Some(info) = fence_open(line) {
            if LANGUAGES.contains(&info.to_ascii_lowercase().as_str()) {
                return true;
            }
            open = true;
        }
    }
    false
}

/// The offered tool a reply starts to call without finishing the call: the message (or its
/// only fenced block) opens with `{"name": "TOOL"` but is no complete JSON.
pub fn unfinished_call<'a>(text: &str, tools: &[&'a str]) -> Option<&'a str> {
    let mut body = text.trim();
    if let Some((first, rest)) = body.split_once('\n') {
        if fence_open(first).is_some() {
            body = rest.trim_end().strip_suffix("```").unwrap_or(rest).trim();
        }
    }
    let rest = body.strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"name\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let tool = tools
        .iter()
        .find(|t| rest.starts_with(&format!("\"{t}\"")))?;
    serde_json::from_str::<serde::de::IgnoredAny>(body)
        .is_err()
        .then_some(*tool)
}

/// Whether a reply only repeats a tool's result instead of answering: it starts with the tag
/// a chat template puts around results, or holds the whole of the last result (`last`, when
/// that is long enough to mean something) and little else.
pub fn echoes_result(text: &str, last: &str) -> bool {
    let text = text.trim();
    let last = last.trim();
    let tagged = ["<tool_response>", "<tool_result>", "<|tool_response|>"]
        .iter()
        .any(|tag| text.starts_with(tag));
    tagged || (last.len() >= 80 && text.contains(last) && text.len() < last.len() + 200)
}

/// The commands of a reply's first block that its fence marks as shell (```` ```bash ````,
/// `sh`, `shell`, `console`, `zsh`), `$ ` prompts taken off: what a note offers back as the
/// call that runs them. A block with no language is not taken: it may as well be output.
pub fn shell_block(text: &str) -> Option<String> {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = fence_open(line) else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        if SHELLS.contains(&info.to_ascii_lowercase().as_str()) {
            let commands: Vec<&str> = body
                .iter()
                .map(|l| l.trim_start().strip_prefix("$ ").unwrap_or(l))
                .filter(|l| !l.trim().is_empty())
                .collect();
            if !commands.is_empty() {
                return Some(commands.join("\n"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: [&str; 4] = ["bash", "read_file", "write_file", "edit_file"];

    #[test]
    fn the_first_shell_block_is_taken_for_its_commands() {
        let text = "Look:\n```toml\nport = 1\n```\nThen:\n```console\n$ ls -R\n\n$ wc -l a\n```\n```bash\nno\n```";
        assert_eq!(shell_block(text).as_deref(), Some("ls -R\nwc -l a"));
        assert_eq!(shell_block("```python\nx = 1\n```"), None);
        assert_eq!(shell_block("```\n\n```"), None);
        assert_eq!(
            shell_block("Its output:\n```\nls -R\n```"),
            None,
            "no language"
        );
    }

    #[test]
    fn a_call_begun_and_not_finished() {
        let cut =
            r#"{"name": "write_file", "arguments": {"path": "t.py", "content": "<tool_response>"#;
        assert_eq!(unfinished_call(cut, &OURS), Some("write_file"));
        let fenced = "```json\n{ \"name\" : \"bash\", \"arguments\": {\"command\": \"ls\"\n```";
        assert_eq!(unfinished_call(fenced, &OURS), Some("bash"));
        // A whole call, another tool's name, or prose: nothing unfinished.
        let whole = r#"{"name": "bash", "arguments": {"command": "ls"}}"#;
        assert_eq!(unfinished_call(whole, &OURS), None);
        assert_eq!(
            unfinished_call(r#"{"name": "python", "arguments": {"#, &OURS),
            None
        );
        assert_eq!(
            unfinished_call("The name \"bash\" is a shell.", &OURS),
            None
        );
    }

    #[test]
    fn answers_that_repeat_a_result() {
        let result = "Error: old_text was not found in greet.py. The lines most like it are these \
                      (line number, tab, text):\n11\t    print(message)";
        assert!(echoes_result(
            &format!("<tool_response>\n{result}\n</tool_response>"),
            ""
        ));
        assert!(echoes_result(&format!("\n{result}\n"), result));
        assert!(!echoes_result(
            "The check that failed is check_1517.",
            result
        ));
        let quoted = format!(
            "It failed because of this:\n{result}\n{}",
            "I fixed it. ".repeat(30)
        );
        assert!(
            !echoes_result(&quoted, result),
            "an answer that quotes a result is an answer"
        );
        assert!(!echoes_result("8", "8"), "short results are not compared");
    }

    #[test]
    fn answers_that_hand_over_commands() {
        let yes = [
            "You can run:\n\n```bash\nfind . -name '*.py' | wc -l\n```\n",
            "Like this:\n```sh\npip install run_checks\n```",
            "```\nls -R\n```",
            "Add this:\n```python\ndef clamp(x): ...\n```",
            "First the config:\n```toml\nport = 1\n```\nthen:\n```console\n$ make\n```",
        ];
        for text in yes {
            assert!(hands_over_commands(text), "{text}");
        }
        let no = [
            "The port is now 9090.",
            "8 files, most in src/app.",
            "It looked like this:\n```toml\nport = 8080\n```",
            "Run `make test` to check.",
            "A fence inside a line ```bash is not a block.",
        ];
        for text in no {
            assert!(!hands_over_commands(text), "{text}");
        }
    }
}
