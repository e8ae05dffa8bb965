//! The agent loop end to end: the real binary against the scripted mock, streaming and not.

mod util;

use serde_json::json;
use util::*;

/// Runs the scenario once streaming and once with --no-stream.
fn both(scenario: impl Fn(bool)) {
    scenario(true);
    scenario(false);
}

fn turn_in(ws: &Workspace, mock: &Mock, stream: bool, args: &[&str]) -> Run {
    let mut command = turn(ws, mock);
    if !stream {
        command.arg("--no-stream");
    }
    run({
        command.args(args);
        command
    })
}

/// A call written as text, in a ```json fence, as models that cannot call tools natively
/// write them: it switches the notes on (see coach).
fn written(name: &str, arguments: serde_json::Value) -> Reply {
    let call = json!({"name": name, "arguments": arguments});
    Reply::Text(Box::leak(format!("```json\n{call}\n```").into_boxed_str()))
}

#[test]
fn a_plain_answer_goes_to_stdout() {
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![Reply::Text("Hello there, human.")]);
        let run = turn_in(&ws, &mock, stream, &["say", "hi"]).expect(0);
        assert_eq!(run.stdout, "Hello there, human.\n");
        let chats = mock.chats();
        assert_eq!(chats.len(), 1);
        let body = &chats[0].body;
        assert_eq!(body["model"], "mock-model");
        assert_eq!(body["stream"], json!(stream));
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(
            body["messages"][1],
            json!({"role": "user", "content": "say hi"})
        );
        let names: Vec<_> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].clone())
            .collect();
        assert_eq!(names, ["bash", "read_file", "write_file", "edit_file"]);
        if stream {
            assert_eq!(body["stream_options"], json!({"include_usage": true}));
        }
        assert!(
            chats[0].header("authorization").is_none(),
            "no key, no Authorization header"
        );
    });
}

#[test]
fn one_call_then_an_answer() {
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![
            bash("echo from-the-tool"),
            Reply::Text("It printed from-the-tool."),
        ]);
        let run = turn_in(&ws, &mock, stream, &["run echo"]).expect(0);
        assert_eq!(run.stdout, "It printed from-the-tool.\n");
        assert_has(&run.stderr, "[bash] echo from-the-tool (ok)");
        let chats = mock.chats();
        assert_eq!(chats.len(), 2);
        let messages = chats[1].messages();
        assert_eq!(messages[2]["role"], "assistant");
        let id = messages[2]["tool_calls"][0]["id"].as_str().unwrap();
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], id);
        assert_eq!(messages[3]["content"], "from-the-tool\n");
    });
}

#[test]
fn several_calls_in_one_response_are_answered_in_order() {
    both(|stream| {
        let ws = Workspace::new();
        ws.write("notes.txt", "alpha\nbeta\n");
        let mock = Mock::start(vec![
            calls(&[
                ("read_file", json!({"path": "notes.txt"})),
                (
                    "write_file",
                    json!({"path": "out/new.txt", "content": "fresh"}),
                ),
                ("bash", json!({"command": "cat out/new.txt"})),
            ]),
            Reply::Text("done"),
        ]);
        turn_in(&ws, &mock, stream, &["go"]).expect(0);
        assert_eq!(ws.read("out/new.txt"), "fresh");
        let messages = mock.chats()[1].messages().clone();
        let ids: Vec<_> = messages[2]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        let answered: Vec<_> = messages[3..6]
            .iter()
            .map(|m| m["tool_call_id"].clone())
            .collect();
        assert_eq!(ids, answered);
        assert_eq!(messages[3]["content"], "     1\talpha\n     2\tbeta\n");
        assert_eq!(messages[4]["content"], "Created out/new.txt (5 bytes)");
        assert_eq!(messages[5]["content"], "fresh");
    });
}

#[test]
fn a_multi_step_loop_edits_a_file() {
    both(|stream| {
        let ws = Workspace::new();
        ws.write("src/lib.rs", "fn answer() -> u32 {\n    41\n}\n");
        let mock = Mock::start(vec![
            calls(&[("read_file", json!({"path": "src/lib.rs"}))]),
            calls(&[(
                "edit_file",
                json!({"path": "src/lib.rs", "old_text": "41", "new_text": "42"}),
            )]),
            bash("grep -c 42 src/lib.rs"),
            Reply::Text("Fixed the answer."),
        ]);
        let run = turn_in(&ws, &mock, stream, &["fix it"]).expect(0);
        assert_eq!(ws.read("src/lib.rs"), "fn answer() -> u32 {\n    42\n}\n");
        assert_eq!(run.stdout, "Fixed the answer.\n");
        let chats = mock.chats();
        assert_eq!(chats.len(), 4);
        assert_eq!(
            chats[2].last_content(),
            "Replaced 1 occurrence in src/lib.rs (first at line 2)"
        );
        assert_eq!(chats[3].last_content(), "1\n");
        assert_eq!(
            chats[3].messages().len(),
            2 + 3 * 2,
            "the whole history is sent each time"
        );
    });
}

#[test]
fn an_edit_that_misses_is_made_loosely_or_shown_the_file() {
    let ws = Workspace::new();
    ws.write(
        "greet.py",
        "def main():\n    message = 'Hi'\n    print(message)\n",
    );
    let mock = Mock::start(vec![
        // Remembered wrong: nothing changes, and the error shows what is there.
        calls(&[(
            "edit_file",
            json!({"path": "greet.py", "old_text": "print('Hello, world!')", "new_text": "x"}),
        )]),
        // Copied without its indentation and with a space at its end: edited, and the new
        // text indented like the file.
        calls(&[(
            "edit_file",
            json!({"path": "greet.py", "old_text": "message = 'Hi' \nprint(message)", "new_text": "message = 'Hi'\nprint(message.upper())"}),
        )]),
        Reply::Text("Done."),
    ]);
    turn_in(&ws, &mock, false, &["shout"]).expect(0);
    assert_eq!(
        ws.read("greet.py"),
        "def main():\n    message = 'Hi'\n    print(message.upper())\n"
    );
    let chats = mock.chats();
    assert_eq!(
        chats[1].last_content(),
        "Error: old_text was not found in greet.py. The file holds (line number, tab, \
         text):\n1\tdef main():\n2\t    message = 'Hi'\n3\t    print(message)\n\n\
         Read the file again and copy old_text exactly, whitespace and indentation included, \
         without the line numbers."
    );
    assert_eq!(
        chats[2].last_content(),
        "Replaced 1 occurrence in greet.py at line 2 (old_text matched it with only the \
         whitespace at line ends different; the new text was indented like the file)"
    );
}

#[test]
fn text_alongside_calls_is_printed_and_kept() {
    let ws = Workspace::new();
    let sse = concat!(
        "data: {\"choices\":[{\"delta\":{\"content\":\"Let me look.\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"true\\\"}\"}}]},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let mock = Mock::start(vec![Reply::Sse(sse.into()), Reply::Text("Done.")]);
    let run = run({
        let mut c = turn(&ws, &mock);
        c.arg("go");
        c
    })
    .expect(0);
    assert_eq!(run.stdout, "Let me look.\nDone.\n");
    let messages = mock.chats()[1].messages().clone();
    assert_eq!(messages[2]["content"], "Let me look.");
    assert_eq!(messages[3]["content"], "(no output)");
}

#[test]
fn max_steps_exits_3_with_a_clear_message() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("echo 1"), bash("echo 2"), bash("echo 3")]);
    let run = turn_in(&ws, &mock, true, &["--max-steps", "2", "loop forever"]).expect(3);
    assert_has(&run.stderr, "turn: stopped after 2 steps (--max-steps)");
    assert_eq!(mock.chats().len(), 2);
}

#[test]
fn quiet_prints_only_the_answer() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("echo hi"), Reply::Text("ok")]);
    let run = turn_in(&ws, &mock, true, &["-q", "go"]).expect(0);
    assert_eq!(run.stdout, "ok\n");
    assert_eq!(run.stderr, "");
}

#[test]
fn reasoning_goes_to_stderr_not_stdout_or_history() {
    let ws = Workspace::new();
    let sse = concat!(
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"thinking hard\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"42\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let mock = Mock::start(vec![Reply::Sse(sse.into())]);
    let run = turn_in(&ws, &mock, true, &["go"]).expect(0);
    assert_eq!(run.stdout, "42\n");
    assert_has(&run.stderr, "thinking hard");
    let quiet = Mock::start(vec![Reply::Sse(sse.into())]);
    let run = turn_in(&ws, &quiet, true, &["-q", "go"]).expect(0);
    assert_eq!(run.stderr, "");
}

#[test]
fn the_api_key_is_sent_as_a_bearer_token() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command
        .env("OPENAI_API_KEY", "sk-test")
        .args(["--temperature", "0.5", "hi"]);
    run(command).expect(0);
    let chat = &mock.chats()[0];
    assert_eq!(chat.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(chat.body["temperature"], json!(0.5));
}

#[test]
fn the_system_file_replaces_the_builtin_prompt() {
    let ws = Workspace::new();
    ws.write("sys.txt", "You are terse.");
    let mock = Mock::start(vec![Reply::Text("ok")]);
    turn_in(&ws, &mock, true, &["--system", "sys.txt", "hi"]).expect(0);
    assert_eq!(mock.chats()[0].messages()[0]["content"], "You are terse.");
}

#[test]
fn the_files_a_prompt_names_are_read_first_and_the_workspace_is_listed() {
    let ws = Workspace::new();
    ws.write("greet.py", "print('hi')\n");
    ws.write("src/util.py", "x = 1\n");
    ws.write(".env", "SECRET=1\n");
    std::os::unix::fs::symlink("/etc/passwd", ws.path("passwd.txt")).unwrap();
    let mock = Mock::start(vec![Reply::Text("It prints hi.")]);
    let run = turn_in(
        &ws,
        &mock,
        true,
        &[
            "--json",
            "What does `greet.py` print? Not passwd.txt, missing.py or ../x.py.",
        ],
    )
    .expect(0);
    let chats = mock.chats();
    assert_eq!(chats.len(), 1);
    let messages = chats[0].messages();
    let task = messages[1]["content"].as_str().unwrap();
    assert!(
        task.starts_with("What does `greet.py` print? Not passwd.txt, missing.py or ../x.py.\n\n[turn: the project's files when the task began"),
        "{task}"
    );
    assert!(
        task.contains("\ngreet.py passwd.txt\nsrc/: util.py\n3 files]"),
        "{task}"
    );
    assert!(!task.contains(".env") && !task.contains(".turn"), "{task}");
    // One call of turn's own, read_file of the one regular file named, answered before the
    // model is asked anything.
    let call = &messages[2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"greet.py"}"#
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["content"], "     1\tprint('hi')\n");
    assert_eq!(messages.len(), 4);
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let origins: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call" || e["type"] == "tool_result")
        .map(|e| &e["origin"])
        .collect();
    assert_eq!(origins, ["turn", "turn"]);
}

#[test]
fn no_preload_sends_the_prompt_alone_and_a_resumed_session_is_not_listed_again() {
    let ws = Workspace::new();
    ws.write("greet.py", "print('hi')\n");
    let mock = Mock::start(vec![Reply::Text("ok"), Reply::Text("ok again")]);
    turn_in(&ws, &mock, true, &["--no-preload", "read greet.py"]).expect(0);
    let first = mock.chats()[0].messages().clone();
    assert_eq!(first.len(), 2);
    assert_eq!(first[1]["content"], "read greet.py");
    // Resumed: the listing is for a new session's first message only; named files still are
    // read.
    turn_in(&ws, &mock, true, &["-c", "and greet.py again"]).expect(0);
    let second = mock.chats()[1].messages().clone();
    let user = second[3]["content"].as_str().unwrap();
    assert_eq!(user, "and greet.py again");
    assert_eq!(second[4]["tool_calls"][0]["function"]["name"], "read_file");
}

#[test]
fn an_answer_that_repeats_a_result_is_asked_to_go_on_with_the_task_restated() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        written(
            "bash",
            json!({"command": "echo the quick brown fox jumps over the lazy dog; echo and keeps on running far away"}),
        ),
        Reply::Text("<tool_response>\nthe quick brown fox\n</tool_response>"),
        Reply::Text("The fox ran."),
    ]);
    let run = turn_in(
        &ws,
        &mock,
        true,
        &["--no-preload", "TASK-91: what did the fox do?"],
    )
    .expect(0);
    assert!(run
        .stderr
        .contains("the answer repeats a tool's result; asking the model to go on"));
    assert_eq!(run.stdout.lines().last(), Some("The fox ran."));
    let note = mock.chats()[2].last_content();
    assert!(
        note.starts_with("[turn: your reply repeated a tool's result."),
        "{note}"
    );
    assert!(
        note.ends_with("\n\nThe task: TASK-91: what did the fox do?"),
        "{note}"
    );
}

#[test]
fn line_numbers_copied_from_read_file_are_taken_out_of_rewrites_and_edits() {
    let ws = Workspace::new();
    ws.write("config.toml", "[server]\nport = 8080\nworkers = 4\n");
    let mock = Mock::start(vec![
        calls(&[(
            "write_file",
            json!({"path": "config.toml", "content": "     1\t[server]\n     2\tport = 9090\n     3\tworkers = 4\n"}),
        )]),
        calls(&[(
            "edit_file",
            json!({"path": "config.toml", "old_text": "2\tport = 9090\n3\tworkers = 4", "new_text": "2\tport = 9091\n3\tworkers = 4"}),
        )]),
        // A new file's numbered lines may be meant: they stay.
        calls(&[(
            "write_file",
            json!({"path": "new.tsv", "content": "1\tapple\n2\tpear\n"}),
        )]),
        // The file copied back unchanged from read_file, numbers and all: it stays as it is.
        calls(&[(
            "write_file",
            json!({"path": "config.toml", "content": "     1\t[server]\n     2\tport = 9091\n     3\tworkers = 4\n"}),
        )]),
        Reply::Text("Done."),
    ]);
    turn_in(&ws, &mock, true, &["--no-preload", "set the port"]).expect(0);
    assert_eq!(
        ws.read("config.toml"),
        "[server]\nport = 9091\nworkers = 4\n"
    );
    assert_eq!(ws.read("new.tsv"), "1\tapple\n2\tpear\n");
    let chats = mock.chats();
    assert_eq!(
        chats[1].last_content(),
        "Overwrote config.toml (33 bytes; the line numbers copied from read_file were taken out)"
    );
    assert!(
        chats[2]
            .last_content()
            .contains("once the line numbers copied from read_file were taken out"),
        "{}",
        chats[2].last_content()
    );
    assert_eq!(
        chats[4].last_content(),
        "config.toml is unchanged: it already holds exactly this content (33 bytes; the line \
         numbers copied from read_file were taken out); nothing was written"
    );
}

#[test]
fn a_write_of_what_the_file_already_holds_writes_nothing_and_says_so() {
    let ws = Workspace::new();
    ws.write("a.txt", "one\n");
    ws.write("b.txt", "two\n");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    for name in ["a.txt", "b.txt"] {
        let file = std::fs::File::options()
            .write(true)
            .open(ws.path(name))
            .unwrap();
        file.set_modified(old).unwrap();
    }
    let mock = Mock::start(vec![
        calls(&[
            ("write_file", json!({"path": "a.txt", "content": "one\n"})),
            // The same size, other bytes: written.
            ("write_file", json!({"path": "b.txt", "content": "TWO\n"})),
        ]),
        Reply::Text("Done."),
    ]);
    turn_in(&ws, &mock, true, &["--no-preload", "write them"]).expect(0);
    let modified = |name: &str| {
        std::fs::metadata(ws.path(name))
            .unwrap()
            .modified()
            .unwrap()
    };
    assert_eq!(modified("a.txt"), old, "a.txt was not touched");
    assert_ne!(modified("b.txt"), old);
    assert_eq!(ws.read("b.txt"), "TWO\n");
    let sent = mock.chats()[1].messages().clone();
    assert_eq!(
        sent[3]["content"],
        "a.txt is unchanged: it already holds exactly this content (4 bytes); nothing was written"
    );
    assert_eq!(sent[4]["content"], "Overwrote b.txt (4 bytes)");
}

#[test]
fn each_named_file_is_read_in_a_message_of_its_own() {
    let ws = Workspace::new();
    ws.write("a.py", "a = 1\n");
    ws.write("b.py", "b = 2\n");
    let mock = Mock::start(vec![Reply::Text("ok")]);
    turn_in(&ws, &mock, true, &["compare a.py with b.py"]).expect(0);
    let chat = &mock.chats()[0];
    assert_eq!(
        chat.roles(),
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );
    let messages = chat.messages();
    assert_eq!(messages[3]["content"], "     1\ta = 1\n");
    assert_eq!(messages[5]["content"], "     1\tb = 2\n");
    assert_eq!(
        messages[4]["tool_calls"][0]["id"],
        messages[5]["tool_call_id"]
    );
}

#[test]
fn a_chat_template_tag_for_a_file_s_whole_content_is_refused() {
    let ws = Workspace::new();
    ws.write("test_x.py", "import unittest\n");
    let mock = Mock::start(vec![
        written(
            "write_file",
            json!({"path": "test_x.py", "content": "<tool_response>"}),
        ),
        Reply::Text("ok"),
        Reply::Text("I could not write it."),
    ]);
    turn_in(&ws, &mock, true, &["--no-preload", "add a test"]).expect(0);
    assert_eq!(ws.read("test_x.py"), "import unittest\n");
    let result = mock.chats()[1].last_content();
    assert!(
        result.starts_with("Error: content is only the tag <tool_response>, not the file's text"),
        "{result}"
    );
    // The answer after the refused write is told the file is as it was.
    let note = mock.chats()[2].last_content();
    assert!(
        note.starts_with("[turn: your write_file of test_x.py failed (content is only the tag <tool_response>, not the file's text; nothing was written)"),
        "{note}"
    );
}

#[test]
fn an_answer_after_a_change_that_failed_and_was_not_made_since_is_asked_to_make_it() {
    let ws = Workspace::new();
    ws.write("notes.txt", "old\n");
    let task = "Change old to new in notes.txt.";
    let failing = || {
        written(
            "edit_file",
            json!({"path": "notes.txt", "old_text": "nowhere", "new_text": "new"}),
        )
    };
    let mock = Mock::start(vec![
        failing(),
        Reply::Text("Done, notes.txt says new."),
        calls(&[(
            "edit_file",
            json!({"path": "notes.txt", "old_text": "old", "new_text": "new"}),
        )]),
        Reply::Text("Done now."),
    ]);
    let run = turn_in(&ws, &mock, true, &["--no-preload", task]).expect(0);
    assert_eq!(ws.read("notes.txt"), "new\n");
    assert!(run.stderr.contains(
        "the answer comes after a change that failed and was not made since; asking the model to make it"
    ));
    let chats = mock.chats();
    assert_eq!(chats.len(), 4);
    let note = chats[2].last_content();
    assert!(
        note.starts_with("[turn: your edit_file of notes.txt failed (old_text was not found in notes.txt), and no change to notes.txt has worked since"),
        "{note}"
    );
    assert!(note.ends_with(&format!("\n\nThe task: {task}")), "{note}");
    // Once a change to the file worked, the answer is final.
    assert_eq!(run.stdout.lines().last(), Some("Done now."));
}

#[test]
fn a_failed_change_put_right_since_lets_the_answer_stand() {
    let ws = Workspace::new();
    ws.write("notes.txt", "old\n");
    let mock = Mock::start(vec![
        written(
            "write_file",
            json!({"path": "notes.txt", "content": "<tool_response>"}),
        ),
        calls(&[(
            "write_file",
            json!({"path": "notes.txt", "content": "new\n"}),
        )]),
        Reply::Text("Done."),
    ]);
    let run = turn_in(
        &ws,
        &mock,
        true,
        &["--no-preload", "Make notes.txt say new."],
    )
    .expect(0);
    assert_eq!(ws.read("notes.txt"), "new\n");
    assert_eq!(mock.chats().len(), 3);
    assert!(
        !run.stderr.contains("failed and was not made"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_empty_answer_is_asked_to_go_on_once() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text(""),
        Reply::Text("Here it is."),
        Reply::Text(""),
        Reply::Text(""),
    ]);
    // The text protocol switches the notes on from the start.
    let run = turn_in(
        &ws,
        &mock,
        true,
        &[
            "--no-preload",
            "--tool-protocol",
            "text",
            "TASK-7: say something",
        ],
    )
    .expect(0);
    assert_eq!(run.stdout.lines().last(), Some("Here it is."));
    // The empty assistant message is not sent, so the note joins the task's message.
    let note = mock.chats()[1].last_content();
    assert!(
        note.starts_with("TASK-7: say something\n\n[turn: your reply was empty."),
        "{note}"
    );
    assert!(
        note.ends_with("\n\nThe task: TASK-7: say something"),
        "{note}"
    );
    // Resumed with the default protocol, the session's record keeps the notes on; the same
    // empty answer after its note is final.
    turn_in(&ws, &mock, true, &["--no-preload", "-c", "again"]).expect(0);
    let chats = mock.chats();
    assert_eq!(chats.len(), 4);
    assert!(chats[3].body.get("tools").is_some());
    assert!(chats[3]
        .last_content()
        .contains("[turn: your reply was empty."));
}
