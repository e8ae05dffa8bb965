//! Tools through the whole binary: the sandbox, truncation and timeouts as the model sees them.

mod util;

use serde_json::json;
use std::time::{Duration, Instant};
use util::*;

#[test]
fn path_escapes_are_refused_and_nothing_is_written_outside() {
    let ws = Workspace::new();
    let outside = Workspace::new();
    std::os::unix::fs::symlink(&outside.dir, ws.path("link")).unwrap();
    let target = outside.path("pwned.txt");
    let mock = Mock::start(vec![
        calls(&[
            (
                "write_file",
                json!({"path": "../pwned.txt", "content": "x"}),
            ),
            (
                "write_file",
                json!({"path": target.to_str().unwrap(), "content": "x"}),
            ),
            (
                "write_file",
                json!({"path": "link/pwned.txt", "content": "x"}),
            ),
            ("read_file", json!({"path": "/etc/passwd"})),
        ]),
        Reply::Text("ok"),
    ]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    let messages = mock.chats()[1].messages().clone();
    for message in &messages[3..7] {
        let text = message["content"].as_str().unwrap();
        assert!(
            text.starts_with("Error: Path escapes workspace: "),
            "{text}"
        );
    }
    assert!(!exists(&target));
    assert!(!exists(&ws.dir.parent().unwrap().join("pwned.txt")));
    assert_has(
        &run.stderr,
        "[write_file] ../pwned.txt (error: Path escapes workspace: ../pwned.txt)",
    );
}

#[test]
fn dangerous_commands_are_blocked_before_they_run() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        bash("touch marker; sudo rm -rf /tmp/x"),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(
        mock.chats()[1].last_content(),
        "Error: Dangerous command blocked: privilege escalation (sudo)"
    );
    assert!(
        !exists(&ws.path("marker")),
        "nothing of a blocked command runs"
    );
}

#[test]
fn long_output_is_truncated_with_head_and_tail() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("seq 1 5000"), Reply::Text("ok")]);
    go(&ws, &mock, &["--max-output", "200", "go"]).expect(0);
    let result = mock.chats()[1].last_content();
    assert!(result.starts_with("1\n2\n3\n"), "{result}");
    assert!(result.ends_with("4999\n5000\n"), "{result}");
    let elided = 23893 - 200; // `seq 1 5000` prints 23893 chars
    assert_has(&result, &format!("[... {elided} chars elided ...]"));
}

#[test]
fn a_command_past_its_timeout_is_killed_with_its_children() {
    let ws = Workspace::new();
    let sleep = unique_sleep();
    let command = format!("sleep {sleep} & echo started; wait");
    let mock = Mock::start(vec![bash(&command), Reply::Text("ok")]);
    let start = Instant::now();
    go(&ws, &mock, &["--timeout", "1", "go"]).expect(0);
    assert!(start.elapsed() < Duration::from_secs(10));
    let result = mock.chats()[1].last_content();
    assert_eq!(
        result,
        "started\n[timed out after 1s; the command and its process group were killed]"
    );
    // Killed means gone, or a zombie waiting for init to reap it.
    assert!(!running_with_arg(&sleep), "the background sleep still runs");
}

#[test]
fn exit_codes_and_stderr_reach_the_model() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        bash("echo out; echo err >&2; exit 7"),
        Reply::Text("ok"),
    ]);
    let run = go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(mock.chats()[1].last_content(), "out\nerr\n[exit code 7]");
    assert_has(
        &run.stderr,
        "[bash] echo out; echo err >&2; exit 7 (error: exit code 7)",
    );
}

#[test]
fn commands_run_in_the_workspace_given_with_cd() {
    let ws = Workspace::new();
    let elsewhere = Workspace::new();
    let mock = Mock::start(vec![bash("pwd"), Reply::Text("ok")]);
    go(&elsewhere, &mock, &["-C", ws.dir.to_str().unwrap(), "go"]).expect(0);
    assert_eq!(
        mock.chats()[1].last_content(),
        format!("{}\n", ws.dir.display())
    );
}
