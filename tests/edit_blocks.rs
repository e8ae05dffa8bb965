//! The edit syntaxes the text protocol declares (`--edit-format`: whole files, and by default
//! search/replace blocks too): each runs as a write_file or edit_file call when the request
//! being answered declared it, a block that does not parse gets its error as the call's
//! result, and under `auto` for a natively calling model the same text is an answer. A run
//! that went over to the text protocol keeps it with -c.

mod util;

use serde_json::Value;
use util::*;

fn text(ws: &Workspace, mock: &Mock, args: &[&str]) -> Run {
    let mut command = turn(ws, mock);
    command.args(["--no-preload", "--tool-protocol", "text"]);
    command.args(args);
    run(command)
}

/// `text` with both blocks declared (`--edit-format both`), said rather than left to the
/// default: these tests are about the search/replace block.
fn both(ws: &Workspace, mock: &Mock, args: &[&str]) -> Run {
    text(ws, mock, &[&["--edit-format", "both"], args].concat())
}

fn system(chat: &Received) -> String {
    chat.messages()[0]["content"].as_str().unwrap().to_string()
}

/// Whether a request declared the edit syntaxes (and sent no tools).
fn declared(chat: &Received) -> bool {
    let system = system(chat);
    let declared = system.contains("# Writing files");
    assert_eq!(
        declared,
        chat.body.get("tools").is_none(),
        "declared exactly when the tools go as text"
    );
    declared
}

const WHOLE: &str = "I'll write it.\n\n`hello.py`\n```python\nprint('hello')\n```\n";
const EDIT: &str = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n";

#[test]
fn a_whole_file_block_is_a_write_and_is_shown_back_as_written() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text(WHOLE), Reply::Text("Thanks.")]);
    let run = text(&ws, &mock, &["--json", "write hello.py"]).expect(0);
    assert_eq!(ws.read("hello.py"), "print('hello')\n");
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(
        (&call["name"], &call["origin"]),
        (&"write_file".into(), &"text".into())
    );
    // A reply of edit blocks alone is the last, as the prompt declares: written, it is the
    // answer, and no request follows.
    let done = events.last().unwrap();
    assert_eq!((&done["text"], &done["steps"]), (&WHOLE.into(), &1.into()));
    assert_eq!(mock.chats().len(), 1);
    assert_has(
        &system(&mock.chats()[0]),
        "A reply of blocks alone is your last",
    );
    text(&ws, &mock, &["-c", "Thanks."]).expect(0);
    let chats = mock.chats();
    assert!(declared(&chats[0]) && declared(&chats[1]));
    let messages = chats[1].messages();
    // The system prompt, the declared example (a task and its reply), then the history.
    assert_eq!(
        messages[4]["content"], WHOLE,
        "the block as the model wrote it"
    );
    assert!(chats[1]
        .last_content()
        .starts_with("Result of the write_file call:\n"));
}

#[test]
fn a_search_replace_block_is_an_edit() {
    let ws = Workspace::new();
    ws.write("a.py", "x = 1\nprint(x)\n");
    let mock = Mock::start(vec![Reply::Text(EDIT)]);
    let run = both(&ws, &mock, &["set x to 2 in a.py"]).expect(0);
    assert_eq!(ws.read("a.py"), "x = 2\nprint(x)\n");
    assert_has(&run.stderr, "[edit_file] a.py (ok)");
    assert!(run.stdout.ends_with(">>>>>>> REPLACE\n"), "{}", run.stdout);
    assert_has(&system(&mock.chats()[0]), "<<<<<<< SEARCH");
    // By default too; TURN_EDIT_FORMAT does what the flag does.
    ws.write("a.py", "x = 1\n");
    let mock = Mock::start(vec![Reply::Text(EDIT)]);
    text(&ws, &mock, &["set x"]).expect(0);
    assert_eq!(ws.read("a.py"), "x = 2\n");
    let mock = Mock::start(vec![
        Reply::Text(EDIT),
        Reply::Text("ok"),
        Reply::Text("ok"),
    ]);
    let mut command = turn(&ws, &mock);
    command.env("TURN_EDIT_FORMAT", "whole");
    command.args(["--no-preload", "--tool-protocol", "text", "set x"]);
    util::run(command).expect(0);
    assert!(!system(&mock.chats()[0]).contains("SEARCH"));
    assert_has(&mock.chats()[1].last_content(), "--edit-format whole");
}

#[test]
fn under_edit_format_whole_a_search_replace_block_is_told_to_write_the_file_whole() {
    let ws = Workspace::new();
    ws.write("a.py", "x = 1\n");
    let mock = Mock::start(vec![Reply::Text(EDIT), block("a.py", "x = 2\n")]);
    // a.py is named: turn reads it first, so the model has seen it and may write it whole.
    let mut command = turn(&ws, &mock);
    command.args([
        "--tool-protocol",
        "text",
        "--edit-format",
        "whole",
        "set x to 2 in a.py",
    ]);
    let run = util::run(command).expect(0);
    let chats = mock.chats();
    assert!(declared(&chats[0]));
    assert!(!system(&chats[0]).contains("SEARCH"), "not declared");
    assert_has(&run.stderr, "[edit_file] a.py (error");
    let result = chats[1].last_content();
    assert_has(&result, "search/replace blocks are not declared here");
    assert_has(&result, "Write the file whole");
    assert_has(&result, "nothing was changed");
    // The model wrote the file whole next, and that reply of blocks alone was the last.
    assert_eq!(chats.len(), 2);
    assert_has(&run.stderr, "[write_file] a.py (ok)");
    assert_eq!(ws.read("a.py"), "x = 2\n");
}

#[test]
fn edit_blocks_with_a_call_after_them_go_on_and_a_failed_block_goes_back() {
    let ws = Workspace::new();
    ws.write("a.py", "x = 1\n");
    // The blocks and a command to check them: the command's result comes back.
    let with_call: &str = Box::leak(
        format!("{EDIT}\n```json\n{{\"name\": \"bash\", \"arguments\": {{\"command\": \"cat a.py\"}}}}\n```\n")
            .into_boxed_str(),
    );
    let mock = Mock::start(vec![Reply::Text(with_call), Reply::Text("x is 2.")]);
    let out = both(&ws, &mock, &["set x to 2 in a.py"]).expect(0);
    assert_eq!(ws.read("a.py"), "x = 2\n");
    assert!(out.stdout.ends_with("x is 2.\n"), "{}", out.stdout);
    assert_has(&mock.chats()[1].last_content(), "x = 2");
    // A block that did not apply: its error goes back, and the model goes on.
    let already = Reply::Text("It was already 2.");
    let mock = Mock::start(vec![Reply::Text(EDIT), already.clone(), already]);
    let out = both(&ws, &mock, &["set x to 2 in a.py"]).expect(0);
    assert_has(&out.stderr, "[edit_file] a.py (error");
    assert_has(
        &mock.chats()[1].last_content(),
        "old_text was not found in a.py",
    );
    assert!(
        out.stdout.ends_with("It was already 2.\n"),
        "{}",
        out.stdout
    );
    // Under auto, a call written as text gets its result back whatever it is.
    ws.write("a.py", "x = 1\n");
    let json_write = Reply::Text(
        "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.py\", \"content\": \"x = 3\\n\"}}\n```",
    );
    let mock = Mock::start(vec![json_write, Reply::Text("x is 3.")]);
    let mut command = turn(&ws, &mock);
    command.args(["--no-preload", "--no-session", "set x to 3"]);
    let ran = run(command).expect(0);
    assert_eq!(ws.read("a.py"), "x = 3\n");
    assert!(ran.stdout.ends_with("x is 3.\n"), "{}", ran.stdout);
}

#[test]
fn a_search_text_not_in_the_file_is_the_edits_error() {
    let ws = Workspace::new();
    ws.write("a.py", "y = 1\n");
    let mock = Mock::start(vec![
        Reply::Text(EDIT),
        Reply::Text("Tried."),
        Reply::Text("Tried."),
    ]);
    let run = both(&ws, &mock, &["set x"]).expect(0);
    assert_eq!(ws.read("a.py"), "y = 1\n", "unchanged");
    assert_has(&run.stderr, "[edit_file] a.py (error");
    assert_has(
        &mock.chats()[1].last_content(),
        "old_text was not found in a.py",
    );
}

#[test]
fn malformed_blocks_change_nothing_and_say_why() {
    let cases: [(&str, &str, &str); 4] = [
        (
            "a.py\n```python\nx = 3\n",
            "[write_file] a.py (error",
            "has no closing fence",
        ),
        (
            "a.py\n<<<<<<< SEARCH\nx = 1\n>>>>>>> REPLACE\n",
            "[edit_file] a.py (error",
            "has no ======= line",
        ),
        (
            "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n",
            "[edit_file] a.py (error",
            "has no >>>>>>> REPLACE line",
        ),
        (
            "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n",
            "[edit_file]",
            "without the file's path",
        ),
    ];
    for (reply, line, why) in cases {
        let ws = Workspace::new();
        ws.write("a.py", "x = 1\n");
        let mock = Mock::start(vec![
            Reply::Text(reply),
            Reply::Text("ok"),
            Reply::Text("ok"),
        ]);
        let run = both(&ws, &mock, &["change a.py"]).expect(0);
        assert_eq!(ws.read("a.py"), "x = 1\n", "{reply}");
        assert_has(&run.stderr, line);
        let result = mock.chats()[1].last_content();
        assert_has(&result, "Error: ");
        assert_has(&result, why);
    }
}

#[test]
fn two_blocks_for_one_file_run_the_first_only() {
    let ws = Workspace::new();
    ws.write("a.py", "x = 1\n");
    let reply =
        "a.py\n```\nx = 5\n```\na.py\n<<<<<<< SEARCH\nx = 5\n=======\nx = 6\n>>>>>>> REPLACE\n";
    let mock = Mock::start(vec![
        Reply::Text(reply),
        Reply::Text("ok"),
        Reply::Text("ok"),
    ]);
    // a.py is named: turn reads it first, so the model has seen it.
    let mut command = turn(&ws, &mock);
    command.args([
        "--tool-protocol",
        "text",
        "--edit-format",
        "both",
        "change a.py",
    ]);
    let run = run(command).expect(0);
    assert_eq!(ws.read("a.py"), "x = 5\n");
    assert_has(&run.stderr, "[write_file] a.py (ok)");
    assert_has(&run.stderr, "[edit_file] a.py (error");
    assert_has(
        &mock.chats()[1].last_content(),
        "a second block for a.py in one reply",
    );
}

#[test]
fn a_block_for_a_path_outside_the_workspace_writes_nothing() {
    let ws = Workspace::new();
    let outside = ws.dir.parent().unwrap().join("editfmt-outside.txt");
    let reply = "../editfmt-outside.txt\n```\nx\n```\n";
    let mock = Mock::start(vec![
        Reply::Text(reply),
        Reply::Text("ok"),
        Reply::Text("ok"),
    ]);
    let run = text(&ws, &mock, &["write it"]).expect(0);
    assert!(!exists(&outside));
    assert_has(&run.stderr, "[write_file] ../editfmt-outside.txt (error");
    assert_has(&mock.chats()[1].last_content(), "Error: ");
}

#[test]
fn a_natively_calling_model_under_auto_shows_a_file_and_writes_nothing() {
    for reply in [WHOLE, EDIT] {
        let ws = Workspace::new();
        ws.write("a.py", "x = 1\n");
        let mock = Mock::start(vec![bash("ls"), Reply::Text(reply)]);
        let mut command = turn(&ws, &mock);
        command.args(["--no-preload", "show me"]);
        let run = run(command).expect(0);
        assert!(!exists(&ws.path("hello.py")));
        assert_eq!(ws.read("a.py"), "x = 1\n");
        assert!(
            run.stdout.contains(reply.trim()),
            "the answer: {}",
            run.stdout
        );
        let chats = mock.chats();
        assert_eq!(chats.len(), 2, "one request per answer");
        assert!(!declared(&chats[0]) && !declared(&chats[1]));
    }
}

const TEXT_CALL: &str =
    "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo listed\"}}\n```";

#[test]
fn under_auto_a_call_written_as_text_runs_and_declares_nothing() {
    // The development set gave no reason to switch protocols after a call written as text
    // (see the docs): auto stays native, and an edit block after it is an answer.
    let ws = Workspace::new();
    // The notes are on (a call written as text): the shown file gets one, and the same
    // answer again is final.
    let mock = Mock::start(vec![
        Reply::Text(TEXT_CALL),
        Reply::Text(WHOLE),
        Reply::Text(WHOLE),
    ]);
    let mut command = turn(&ws, &mock);
    command.args(["--no-preload", "--no-session", "write hello.py"]);
    let run = run(command).expect(0);
    assert_has(&run.stderr, "[bash] echo listed (ok)");
    assert!(!exists(&ws.path("hello.py")));
    let chats = mock.chats();
    assert_eq!(chats.len(), 3);
    assert!(chats.iter().all(|chat| !declared(chat)));
}

#[test]
fn a_server_that_refuses_tools_gets_the_declared_syntaxes_and_minus_c_keeps_them() {
    let ws = Workspace::new();
    let refusal = Reply::Raw {
        status: 500,
        headers: vec![("Content-Type", "application/json".into())],
        body: r#"{"error":{"message":"tools param requires --jinja flag"}}"#.into(),
    };
    let mock = Mock::refusing_tools(
        vec![
            Reply::Text(WHOLE),
            Reply::Text("Done."),
            Reply::Text("Still here."),
        ],
        refusal,
    );
    let mut first = turn(&ws, &mock);
    first.args(["--no-preload", "write hello.py"]);
    run(first).expect(0);
    assert_eq!(ws.read("hello.py"), "print('hello')\n");
    let chats = mock.chats();
    let asked = chats.len();
    assert!(!declared(&chats[0]), "the refused request carried tools");
    assert!(declared(&chats[asked - 1]));
    let session = std::fs::read_dir(ws.path(".turn/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recorded = std::fs::read_to_string(session).unwrap();
    assert_has(&recorded, r#"{"protocol":{"name":"text","why":"#);
    let mut again = turn(&ws, &mock);
    again.args(["-c", "and now?"]);
    let run2 = run(again).expect(0);
    let chats = mock.chats();
    assert_eq!(
        chats.len(),
        asked + 1,
        "no request with tools is refused again"
    );
    assert!(declared(&chats[asked]), "resumed with the text protocol");
    assert!(!run2.stderr.contains("refuses native tool calls"));
}

#[test]
fn the_first_request_under_the_text_protocol_stays_under_1200_tokens() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("OK.")]);
    text(&ws, &mock, &["Say OK."]).expect(0);
    let chat = &mock.chats()[0];
    assert!(declared(chat));
    let chars: usize = chat
        .messages()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().chars().count())
        .sum();
    // ~4 characters a token, and a margin for the chat template's own tokens.
    assert!(chars / 4 < 1_100, "{chars} characters");
}

#[test]
fn files_the_task_names_are_handed_over_before_it_under_the_text_protocol() {
    let ws = Workspace::new();
    ws.write("greet.py", "print('hi')\n");
    let mock = Mock::start(vec![Reply::Text("Nothing to change.")]);
    let mut command = turn(&ws, &mock);
    command.args(["--tool-protocol", "text", "add a flag to greet.py"]);
    let first = run(command).expect(0);
    assert_has(&first.stderr, "[read_file] greet.py (ok)");
    let chat = &mock.chats()[0];
    assert!(declared(chat));
    let messages = chat.messages();
    assert_eq!(
        messages.len(),
        4,
        "the system prompt, the declared example and the task's message"
    );
    let task = messages[3]["content"].as_str().unwrap();
    assert!(
        task.starts_with("[turn: the files the task names, as they are now:]\n\ngreet.py\n```\nprint('hi')\n```\n\nadd a flag to greet.py\n\n[turn: the project's files when the task began")
            && task.ends_with("\n1 file]"),
        "{task}"
    );
    // Under auto the read stays turn's call and its result.
    let mock = Mock::start(vec![Reply::Text("Nothing to change.")]);
    let mut command = turn(&ws, &mock);
    command.arg("add a flag to greet.py");
    run(command).expect(0);
    let messages = mock.chats()[0].messages().clone();
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
    assert_eq!(messages[3]["role"], "tool");
}

/// A call block in the declared format with prose around it, to a tool that does not exist.
const NO_TOOL: &str = "The module is missing, so I will install it.\n\n```json\n\
    {\"name\": \"pip\", \"arguments\": {\"package\": \"unittest\"}}\n```\n\nThen the tests run.\n";

#[test]
fn under_the_text_protocol_a_call_block_to_no_tool_is_told_which_tools_there_are() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text(NO_TOOL), Reply::Text("Done.")]);
    let first = text(&ws, &mock, &["fix the tests"]).expect(0);
    assert!(first.stdout.ends_with("Done.\n"), "{}", first.stdout);
    let result = mock.chats()[1].last_content();
    assert!(
        result.contains("Error: Unknown tool: pip. Available tools: bash"),
        "{result}"
    );
    // Under auto, for a natively calling model, the same reply is the answer.
    let mock = Mock::start(vec![bash("ls"), Reply::Text(NO_TOOL)]);
    let mut command = turn(&ws, &mock);
    command.args(["--no-preload", "fix the tests"]);
    let answered = run(command).expect(0);
    assert_has(&answered.stdout, "I will install it.");
    assert_eq!(mock.chats().len(), 2, "one request per answer");
}

/// A whole-file block for `path`.
fn block(path: &str, content: &str) -> Reply {
    Reply::Text(Box::leak(
        format!("{path}\n```\n{content}```\n").into_boxed_str(),
    ))
}

#[test]
fn under_the_text_protocol_only_a_file_read_in_the_session_is_replaced() {
    let ws = Workspace::new();
    ws.write("a.txt", "keep me\n");
    ws.write("b.txt", "old\n");
    let read = Reply::Text(
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
    );
    // A reply of blocks alone that applied ends its turn; one refused does not.
    let mock = Mock::start(vec![
        block("a.txt", "a guess\n"),
        read,
        block("a.txt", "keep me, changed\n"),
        block("new.txt", "1\n"),
        block("new.txt", "2\n"),
        // The session goes on: what it read before counts; what it did not, does not.
        block("a.txt", "again\n"),
        block("b.txt", "a guess\n"),
        Reply::Text("b.txt is left as it was."),
        Reply::Text("b.txt is left as it was."),
    ]);
    let first = text(&ws, &mock, &["change a.txt"]).expect(0);
    assert_has(&first.stderr, "[write_file] a.txt (error");
    let chats = mock.chats();
    assert_eq!(chats.len(), 3);
    let refused = chats[1].last_content();
    assert!(
        refused.starts_with("Result of the write_file call")
            && refused.ends_with(
                ":\nError: write_file replaces only a file read in this session, and a.txt was \
                 not read: nothing was written. Read it with read_file first, then write it \
                 whole, or change part of it with edit_file"
            ),
        "{refused}"
    );
    assert_eq!(ws.read("a.txt"), "keep me, changed\n");
    // A new file, then that file again: it was written in the session.
    text(&ws, &mock, &["-c", "and new.txt"]).expect(0);
    text(&ws, &mock, &["-c", "new.txt again"]).expect(0);
    assert_eq!(ws.read("new.txt"), "2\n");
    text(&ws, &mock, &["-c", "a.txt again"]).expect(0);
    assert_has(
        &mock.chats()[5].last_content(),
        "Overwrote new.txt (2 bytes)",
    );
    assert_eq!(ws.read("a.txt"), "again\n");
    text(&ws, &mock, &["-c", "and b.txt"]).expect(0);
    assert_eq!(ws.read("b.txt"), "old\n");
    assert_has(
        &mock.chats()[7].last_content(),
        "and b.txt was not read: nothing was written",
    );
    // Under auto, for a natively calling model, write_file replaces what the model names.
    let mock = Mock::start(vec![
        calls(&[(
            "write_file",
            serde_json::json!({"path": "b.txt", "content": "new\n"}),
        )]),
        Reply::Text("Done."),
    ]);
    let mut command = turn(&ws, &mock);
    command.args(["--no-preload", "--no-session", "replace b.txt"]);
    run(command).expect(0);
    assert_eq!(ws.read("b.txt"), "new\n");
}

#[test]
fn under_the_text_protocol_a_file_edited_in_the_session_may_be_written_whole() {
    // A search/replace block that applied shows the model knew part of the file, as a page
    // read does: a whole-file block for it may follow, in the same run and after -c.
    let ws = Workspace::new();
    ws.write("c.txt", "one\ntwo\n");
    ws.write("d.txt", "three\n");
    let edit_then_look = Reply::Text(
        "c.txt\n<<<<<<< SEARCH\none\n=======\n1\n>>>>>>> REPLACE\n\n```json\n\
         {\"name\": \"bash\", \"arguments\": {\"command\": \"true\"}}\n```\n",
    );
    let edit = Reply::Text("d.txt\n<<<<<<< SEARCH\nthree\n=======\n3\n>>>>>>> REPLACE\n");
    let mock = Mock::start(vec![
        edit_then_look,
        block("c.txt", "1\n2\n"),
        edit,
        block("d.txt", "3\n4\n"),
    ]);
    let out = both(&ws, &mock, &["number c.txt"]).expect(0);
    assert_has(&out.stderr, "[write_file] c.txt (ok)");
    assert_eq!(ws.read("c.txt"), "1\n2\n");
    both(&ws, &mock, &["number d.txt"]).expect(0);
    let out = both(&ws, &mock, &["-c", "and the next line"]).expect(0);
    assert_has(&out.stderr, "[write_file] d.txt (ok)");
    assert_eq!(ws.read("d.txt"), "3\n4\n");
}
