//! Sessions (record, kill -9, resume, -c), the REPL driven line by line through a pipe (-i),
//! Ctrl-C inside it, and AGENTS.md.

mod util;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use util::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn roles(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

#[test]
fn a_run_killed_mid_loop_resumes_and_completes() {
    let ws = Workspace::new();
    let marker = ws.path("working");
    let first = Mock::start(vec![bash(&format!("touch {}; sleep 30", marker.display()))]);
    let mut command = turn(&ws, &first);
    command
        .args(["--session", "task.jsonl", "make out.txt"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    wait_for(|| exists(&marker));
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let recorded = lines(&ws.path("task.jsonl"));
    assert_eq!(
        roles(&recorded),
        ["user", "assistant"],
        "the call was recorded before it ran"
    );

    let second = Mock::start(vec![
        bash("echo resumed > out.txt"),
        Reply::Text("Done now."),
    ]);
    let mut command = turn(&ws, &second);
    command.args(["--session", "task.jsonl", "continue"]);
    let run = run(command).expect(0);
    assert_eq!(run.stdout, "Done now.\n");
    assert_has(&run.stderr, "resuming 2 messages from task.jsonl");
    assert_eq!(ws.read("out.txt"), "resumed\n");
    let sent = second.chats()[0].messages().clone();
    assert_eq!(
        roles(&sent),
        ["system", "user"],
        "the unanswered call was dropped, and the two prompts became one"
    );
    assert_eq!(sent[1]["content"], "make out.txt\n\ncontinue");
    let recorded = lines(&ws.path("task.jsonl"));
    assert_eq!(
        roles(&recorded),
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant"
        ]
    );
}

#[test]
fn continue_picks_the_newest_session_in_the_workspace() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text("one"),
        Reply::Text("two"),
        Reply::Text("three"),
    ]);
    let mut first = turn(&ws, &mock);
    first.arg("first");
    run(first).expect(0);
    assert_eq!(ws.read(".turn/.gitignore"), "*\n");
    let mut second = turn(&ws, &mock);
    second.args(["-c", "second"]);
    run(second).expect(0);
    let sent = mock.chats()[1].messages().clone();
    assert_eq!(roles(&sent), ["system", "user", "assistant", "user"]);
    assert_eq!(sent[2]["content"], "one");
    let mut fresh = turn(&ws, &mock);
    fresh.args(["--no-session", "third"]);
    run(fresh).expect(0);
    assert_eq!(roles(mock.chats()[2].messages()), ["system", "user"]);
    let files = std::fs::read_dir(ws.path(".turn/sessions"))
        .unwrap()
        .count();
    assert_eq!(
        files, 1,
        "-c appends to the same file; --no-session writes none"
    );
}

#[test]
fn continue_without_sessions_is_a_clear_error() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let mut command = turn(&ws, &mock);
    command.args(["-c", "x"]);
    let run = run(command).expect(2);
    assert_has(&run.stderr, "no session to continue in");
}

#[test]
fn a_bad_session_line_is_named_and_the_file_is_left_alone() {
    let ws = Workspace::new();
    let content = "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"robot\"}\n";
    ws.write("s.jsonl", content);
    let mock = Mock::start(vec![Reply::Text("never")]);
    let mut command = turn(&ws, &mock);
    command.args(["--session", "s.jsonl", "go"]);
    let run = run(command).expect(2);
    assert_has(
        &run.stderr,
        "turn: cannot resume s.jsonl: line 2: unknown variant `robot`",
    );
    assert_eq!(ws.read("s.jsonl"), content);
    assert!(mock.received().is_empty());
}

/// A REPL fed through a pipe, one line at a time.
struct Repl {
    child: Child,
}

impl Repl {
    fn start(ws: &Workspace, mock: &Mock) -> Repl {
        let mut command = turn(ws, mock);
        command
            .arg("-i")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Repl {
            child: command.spawn().unwrap(),
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self) -> Run {
        drop(self.child.stdin.take()); // Ctrl-D
        let output = with_watchdog(self.child.id(), || self.child.wait_with_output().unwrap());
        Run::from(output)
    }
}

#[test]
fn the_repl_keeps_history_across_turns_and_resets() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text("A1"),
        Reply::Text("A2"),
        Reply::Text("A3"),
    ]);
    let mut repl = Repl::start(&ws, &mock);
    for line in ["first", "second", "/help", "/bogus", "/reset", "third"] {
        repl.say(line);
    }
    let run = repl.finish().expect(0);
    assert_eq!(run.stdout, "A1\nA2\nA3\n");
    assert_has(&run.stderr, "/reset   forget the conversation");
    assert_has(&run.stderr, "unknown command /bogus");
    let chats = mock.chats();
    assert_eq!(
        roles(chats[1].messages()),
        ["system", "user", "assistant", "user"]
    );
    assert_eq!(
        roles(chats[2].messages()),
        ["system", "user"],
        "/reset forgot the rest"
    );
    let files = std::fs::read_dir(ws.path(".turn/sessions"))
        .unwrap()
        .count();
    assert_eq!(files, 2, "/reset records to a new session file");
}

#[test]
fn compact_summarizes_now_and_the_session_resumes_the_summary() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        bash("echo lots of output"),
        Reply::Text("A1"),
        Reply::Text("Summary: ran echo, nothing left."),
        Reply::Text("A2"),
    ]);
    let mut repl = Repl::start(&ws, &mock);
    for line in ["first task", "/compact", "/status", "second"] {
        repl.say(line);
    }
    let run = repl.finish().expect(0);
    assert_has(&run.stderr, "compacted; context now about");
    let chats = mock.chats();
    assert_eq!(chats.len(), 4);
    // The summary request carries no tools; the next turn sees the summary, not the call.
    assert!(chats[2].body.get("tools").is_none());
    let after = chats[3].body["messages"].to_string();
    assert_has(&after, "Summary: ran echo, nothing left.");
    assert_has(&after, "first task");
    assert!(!after.contains("echo lots of output"), "{after}");
    // Resumed, the session holds the compacted history.
    let mock = Mock::start(vec![Reply::Text("A3")]);
    go(&ws, &mock, &["-c", "third"]).expect(0);
    let resumed = mock.chats()[0].body["messages"].to_string();
    assert_has(&resumed, "Summary: ran echo, nothing left.");
    assert!(!resumed.contains("echo lots of output"), "{resumed}");
}

#[test]
fn exit_leaves_the_repl() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let mut repl = Repl::start(&ws, &mock);
    repl.say("/exit");
    repl.say("never sent");
    repl.finish().expect(0);
    assert!(mock.chats().is_empty());
}

#[test]
fn ctrl_c_kills_the_running_command_and_the_repl_answers_again() {
    let ws = Workspace::new();
    let marker = ws.path("sleeping");
    let mock = Mock::start(vec![
        bash(&format!(
            "touch {}; sleep 30; touch never",
            marker.display()
        )),
        Reply::Text("still here"),
    ]);
    let mut repl = Repl::start(&ws, &mock);
    repl.say("sleep please");
    wait_for(|| exists(&marker));
    let start = Instant::now();
    sigint(repl.child.id());
    repl.say("are you there?");
    wait_for(|| mock.chats().len() == 2);
    assert!(start.elapsed() < Duration::from_secs(5));
    let run = repl.finish().expect(0);
    assert_eq!(run.stdout, "still here\n");
    assert_has(&run.stderr, "interrupted; the history is kept");
    assert!(!exists(&ws.path("never")));
    let sent = mock.chats()[1].messages().clone();
    assert_eq!(
        roles(&sent),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert!(sent[3]["content"]
        .as_str()
        .unwrap()
        .contains("[interrupted by the user; the command was killed]"));
}

#[test]
fn ctrl_c_while_waiting_for_the_model_returns_to_the_prompt() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Stall(Duration::from_secs(30), Box::new(Reply::Text("too late"))),
        Reply::Text("fresh answer"),
    ]);
    let mut repl = Repl::start(&ws, &mock);
    repl.say("slow question");
    wait_for(|| mock.chats().len() == 1);
    std::thread::sleep(Duration::from_millis(100));
    sigint(repl.child.id());
    repl.say("quick question");
    let run = repl.finish().expect(0);
    assert_eq!(run.stdout, "fresh answer\n");
    let sent = mock.chats()[1].messages().clone();
    assert_eq!(roles(&sent), ["system", "user"]);
    assert_eq!(sent[1]["content"], "slow question\n\nquick question");
}

#[test]
fn ctrl_c_at_the_prompt_exits_130() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let repl = Repl::start(&ws, &mock);
    wait_for_sigint_handler(repl.child.id());
    sigint(repl.child.id());
    let start = Instant::now();
    let run = repl.finish();
    assert!(start.elapsed() < Duration::from_secs(5));
    run.expect(130);
}

#[test]
fn agents_md_joins_the_system_prompt() {
    let ws = Workspace::new();
    ws.write("AGENTS.md", "Always run `make test` before answering.");
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.arg("hi");
    run(command).expect(0);
    let system = mock.chats()[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.starts_with("You are turn"), "{system}");
    assert!(
        system.ends_with("Always run `make test` before answering."),
        "{system}"
    );
}

#[test]
fn calls_after_an_interrupted_one_are_answered_as_not_run() {
    let ws = Workspace::new();
    let marker = ws.path("first");
    let mock = Mock::start(vec![
        calls(&[
            (
                "bash",
                json!({"command": format!("touch {}; sleep 30", marker.display())}),
            ),
            ("bash", json!({"command": "touch second"})),
        ]),
        Reply::Text("understood"),
    ]);
    let mut repl = Repl::start(&ws, &mock);
    repl.say("two things");
    wait_for(|| exists(&marker));
    sigint(repl.child.id());
    repl.say("what happened?");
    wait_for(|| mock.chats().len() == 2);
    repl.finish().expect(0);
    assert!(!exists(&ws.path("second")), "the second call did not run");
    let sent = mock.chats()[1].messages().clone();
    assert_eq!(
        roles(&sent),
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    assert_has(
        sent[3]["content"].as_str().unwrap(),
        "[interrupted by the user; the command was killed]",
    );
    assert_eq!(
        sent[4]["content"],
        "Error: not run: the user interrupted the turn"
    );
}
