//! For scripts that want the answer as data: -o writes the final answer to a file, and
//! --output-schema asks for JSON matching a schema, checks it, and prints only it.

mod util;

use serde_json::{json, Value};
use util::*;

const SCHEMA: &str = r#"{
  "title": "count report",
  "type": "object",
  "properties": {"count": {"type": "integer", "minimum": 0}, "files": {"type": "array", "items": {"type": "string"}}},
  "required": ["count", "files"],
  "additionalProperties": false
}"#;

#[test]
fn last_message_goes_to_the_file_with_json_and_quiet() {
    for flags in [&["--json"][..], &["-q"][..], &[][..]] {
        let ws = Workspace::new();
        let mock = Mock::start(vec![bash("echo hi"), Reply::Text("all done\nbye")]);
        let mut args = flags.to_vec();
        args.extend(["-o", "out/last.txt", "go"]);
        std::fs::create_dir(ws.path("out")).unwrap();
        go(&ws, &mock, &args).expect(0);
        assert_eq!(ws.read("out/last.txt"), "all done\nbye", "flags {flags:?}");
        // Nothing but the file is left in its directory: no temp files.
        assert_eq!(std::fs::read_dir(ws.path("out")).unwrap().count(), 1);
    }
}

#[test]
fn a_failed_run_leaves_the_file_as_it_was() {
    let ws = Workspace::new();
    ws.write("last.txt", "earlier answer");
    let mock = Mock::start(vec![bash("echo 1"), bash("echo 2")]);
    let run = go(&ws, &mock, &["--max-steps", "2", "-o", "last.txt", "go"]).expect(3);
    assert_has(&run.stderr, "--max-steps");
    assert_eq!(ws.read("last.txt"), "earlier answer");
    // A file that cannot be written is an error with its name, after the work is done.
    let mock = Mock::start(vec![Reply::Text("answer")]);
    let run = go(&ws, &mock, &["-o", "no/such/dir/x.txt", "go"]).expect(2);
    assert_has(
        &run.stderr,
        "cannot write the last message (-o) to no/such/dir/x.txt",
    );
}

#[test]
fn schema_answer_is_asked_without_tools_and_printed_alone() {
    let ws = Workspace::new();
    ws.write("schema.json", SCHEMA);
    let mock = Mock::start(vec![
        bash("ls"),
        Reply::Text("There are two files."),
        Reply::Text(r#"{"count": 2, "files": ["a", "b"]}"#),
    ]);
    let run = go(
        &ws,
        &mock,
        &[
            "--output-schema",
            "schema.json",
            "-o",
            "answer.json",
            "count the files",
        ],
    )
    .expect(0);
    // stdout is exactly the JSON value on one line; the model's prose went to stderr.
    assert_eq!(run.stdout, "{\"count\":2,\"files\":[\"a\",\"b\"]}\n");
    assert_has(&run.stderr, "There are two files.");
    assert_eq!(ws.read("answer.json"), run.stdout);
    let chats = mock.chats();
    assert_eq!(chats.len(), 3);
    assert!(chats[..2].iter().all(|c| c.body["tools"].is_array()));
    assert!(chats[..2]
        .iter()
        .all(|c| c.body.get("response_format").is_none()));
    let last = &chats[2].body;
    assert!(
        last.get("tools").is_none(),
        "the answer request carries no tools"
    );
    let format = &last["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "count_report");
    assert_eq!(format["json_schema"]["strict"], true);
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(format["json_schema"]["schema"], schema);
    // The task is still there, and the ask comes last.
    assert_has(&chats[2].body.to_string(), "count the files");
    assert_has(&chats[2].last_content(), "JSON Schema");
}

#[test]
fn json_done_carries_the_parsed_answer() {
    let ws = Workspace::new();
    ws.write("schema.json", SCHEMA);
    let mock = Mock::start(vec![
        Reply::Text("done"),
        Reply::Text("```json\n{\"count\": 0, \"files\": []}\n```"),
    ]);
    let run = go(
        &ws,
        &mock,
        &["--json", "--output-schema", "schema.json", "go"],
    )
    .expect(0);
    let done: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["status"], "ok");
    assert_eq!(done["output"], json!({"count": 0, "files": []}));
}

#[test]
fn an_answer_that_breaks_the_schema_is_asked_again_once_then_fails() {
    let ws = Workspace::new();
    ws.write("schema.json", SCHEMA);
    // Wrong, then right: the re-ask names what was wrong.
    let mock = Mock::start(vec![
        Reply::Text("done"),
        Reply::Text(r#"{"count": -1, "files": []}"#),
        Reply::Text(r#"{"count": 1, "files": ["x"]}"#),
    ]);
    let run = go(&ws, &mock, &["--output-schema", "schema.json", "go"]).expect(0);
    assert_eq!(run.stdout, "{\"count\":1,\"files\":[\"x\"]}\n");
    assert_has(
        &mock.chats()[2].last_content(),
        "$.count: -1 is less than the minimum 0",
    );
    // Wrong twice (once not even JSON): exit 5, "schema" and the problem on stderr, stdout empty.
    let mock = Mock::start(vec![
        Reply::Text("done"),
        Reply::Text("Sure, here it is: count is 3"),
        Reply::Text(r#"{"count": 3}"#),
    ]);
    let run = go(
        &ws,
        &mock,
        &["--output-schema", "schema.json", "-o", "x.json", "go"],
    )
    .expect(5);
    assert_eq!(run.stdout, "");
    assert_has(&run.stderr, "schema");
    assert_has(&run.stderr, "missing required property 'files'");
    assert_has(&mock.chats()[2].last_content(), "the answer is not JSON");
    assert_eq!(mock.chats().len(), 3);
    assert!(!ws.path("x.json").exists());
    // --json says so in `done`.
    let mock = Mock::start(vec![
        Reply::Text("done"),
        Reply::Text("[]"),
        Reply::Text("[]"),
    ]);
    let run = go(
        &ws,
        &mock,
        &["--json", "--output-schema", "schema.json", "go"],
    )
    .expect(5);
    let done: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(done["status"], "schema");
}

#[test]
fn a_server_that_refuses_response_format_is_asked_in_the_prompt() {
    let ws = Workspace::new();
    ws.write("schema.json", SCHEMA);
    let refusal = Reply::Raw {
        status: 400,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({"error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error"}}).to_string(),
    };
    let mock = Mock::start(vec![
        Reply::Text("done"),
        refusal,
        Reply::Text(r#"{"count": 5, "files": []}"#),
    ]);
    let run = go(&ws, &mock, &["--output-schema", "schema.json", "go"]).expect(0);
    assert_eq!(run.stdout, "{\"count\":5,\"files\":[]}\n");
    assert_has(&run.stderr, "refused response_format");
    let chats = mock.chats();
    assert_eq!(chats.len(), 3, "a 400 is not retried as it is");
    assert!(chats[1].body["response_format"].is_object());
    assert!(chats[2].body.get("response_format").is_none());
    assert!(chats[2].body.get("tools").is_none());
    assert_has(&chats[2].last_content(), "\"minimum\":0");
}

#[test]
fn bad_schema_files_are_usage_errors_before_any_request() {
    let ws = Workspace::new();
    ws.write("notjson.json", "{type: object}");
    ws.write(
        "bad.json",
        r#"{"type": "object", "properties": {"a": {"type": "text"}}}"#,
    );
    let cases = [
        (
            "missing.json",
            "cannot read the --output-schema file missing.json",
        ),
        ("notjson.json", "--output-schema notjson.json: not JSON"),
        (
            "bad.json",
            "--output-schema bad.json: #/properties/a/type: must be one of object",
        ),
    ];
    for (file, expected) in cases {
        let mock = Mock::start(vec![Reply::Text("never asked")]);
        let run = go(&ws, &mock, &["--output-schema", file, "go"]).expect(2);
        assert_has(&run.stderr, expected);
        assert!(mock.chats().is_empty(), "{file}: the server was asked");
    }
}
