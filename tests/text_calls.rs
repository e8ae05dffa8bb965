//! Local models and servers: tool calls written as text, `--tool-protocol`, servers that refuse
//! tools, a model that repeats itself, and finding a local server without any flags.

mod util;

use serde_json::{json, Value};
use std::net::TcpListener;
use util::*;

/// Runs the scenario once streaming and once with --no-stream.
fn both(scenario: impl Fn(bool)) {
    scenario(true);
    scenario(false);
}

fn turn_with(ws: &Workspace, mock: &Mock, stream: bool, args: &[&str]) -> Run {
    let mut command = turn(ws, mock);
    if !stream {
        command.arg("--no-stream");
    }
    command.args(args);
    run(command)
}

fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// What Qwen2.5-Coder writes instead of a native call.
const FENCED_CALL: &str = "I'll run it.\n\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo from-a-text-call\"}}\n```";

#[test]
fn a_fenced_json_call_runs_and_its_result_reaches_the_model() {
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![Reply::Text(FENCED_CALL), Reply::Text("It printed.")]);
        let run = turn_with(&ws, &mock, stream, &["run echo"]).expect(0);
        assert_has(&run.stderr, "[bash] echo from-a-text-call (ok)");
        assert!(run.stdout.ends_with("It printed.\n"), "{}", run.stdout);
        // The mock refuses any history a strict server would; this one passed.
        let chats = mock.chats();
        assert_eq!(chats.len(), 2);
        let messages = chats[1].messages();
        let call = &messages[2];
        assert_eq!(call["role"], "assistant");
        assert_eq!(
            call["content"],
            Value::Null,
            "the call stands in for its text"
        );
        assert_eq!(call["tool_calls"][0]["function"]["name"], "bash");
        let arguments: Value = serde_json::from_str(
            call["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(arguments, json!({"command": "echo from-a-text-call"}));
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], call["tool_calls"][0]["id"]);
        assert_eq!(messages[3]["content"], "from-a-text-call\n");
        assert!(chats[1].body["tools"].is_array(), "auto stays native");
    });
}

#[test]
fn json_events_mark_calls_written_as_text() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text(FENCED_CALL),
        bash("echo native"),
        Reply::Text("done"),
    ]);
    let run = turn_with(&ws, &mock, true, &["--json", "go"]).expect(0);
    let events = events(&run);
    let calls = of_type(&events, "tool_call");
    let results = of_type(&events, "tool_result");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0]["origin"].as_str(), calls[1]["origin"].as_str()),
        (Some("text"), Some("native"))
    );
    assert_eq!(results[0]["origin"], "text");
    assert_eq!(results[0]["output"], "from-a-text-call\n");
    assert_eq!(results[1]["origin"], "native");
}

const TAGGED_CALLS: &str = "Let me look at both files.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b.txt\"}}\n</tool_call>";

#[test]
fn tool_call_tags_run() {
    both(|stream| {
        let ws = Workspace::new();
        ws.write("a.txt", "alpha\n");
        ws.write("b.txt", "beta\n");
        let mock = Mock::start(vec![Reply::Text(TAGGED_CALLS), Reply::Text("Read both.")]);
        let run = turn_with(&ws, &mock, stream, &["read a and b"]).expect(0);
        assert_has(&run.stderr, "[read_file] a.txt (ok)");
        assert_has(&run.stderr, "[read_file] b.txt (ok)");
        let messages = mock.chats()[1].messages().clone();
        assert_eq!(messages[2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(messages[3]["content"], "     1\talpha\n");
        assert_eq!(messages[4]["content"], "     1\tbeta\n");
    });
}

const AN_ANSWER: &str = "Put this in config.json:\n\n```json\n{\"name\": \"demo\", \"server\": {\"port\": 8080}}\n```\n\nThen run:\n\n```bash\ntouch should-not-exist\n```\n\nand the server picks it up. An object like {\"name\": \"bash\", \"arguments\": {\"command\": \"touch nor-this\"}} in a sentence is not a call either.";

#[test]
fn an_answer_with_a_json_example_and_a_bash_block_runs_nothing() {
    both(|stream| {
        // A model that has not shown it needs notes: the answer is final, in one request.
        let ws = Workspace::new();
        let mock = Mock::start(vec![Reply::Text(AN_ANSWER), Reply::Text("never asked for")]);
        let run = turn_with(&ws, &mock, stream, &["how do I configure it?"]).expect(0);
        assert_eq!(run.stdout, format!("{AN_ANSWER}\n"));
        assert_eq!(mock.chats().len(), 1);
        assert!(!exists(&ws.path("should-not-exist")));
        assert!(!exists(&ws.path("nor-this")));

        // With the notes on (here: the text protocol), the model is asked once whether it
        // meant to run the commands; its second answer is final whatever it says.
        let mock = Mock::start(vec![
            Reply::Text(AN_ANSWER),
            Reply::Text("Set the port in config.json."),
        ]);
        let args = ["--tool-protocol", "text", "how do I configure it?"];
        let run = turn_with(&ws, &mock, stream, &args).expect(0);
        assert_eq!(
            run.stdout,
            format!("{AN_ANSWER}\nSet the port in config.json.\n")
        );
        assert!(!run.stderr.contains("[bash]"), "{}", run.stderr);
        assert!(run.stderr.contains("asking the model to act"));
        let chats = mock.chats();
        assert_eq!(chats.len(), 2);
        let note = chats[1].last_content();
        assert!(
            note.contains("[turn: your reply called no tool, so nothing was run"),
            "{note}"
        );
        // The block's commands are offered back as the call that would run them.
        assert!(
            note.contains(
                r#"reply with only this call:
{"arguments":{"command":"touch should-not-exist"},"name":"bash"}"#
            ),
            "{note}"
        );
        assert!(!exists(&ws.path("should-not-exist")));
        assert!(!exists(&ws.path("nor-this")));
    });
}

#[test]
fn only_a_block_marked_as_shell_is_offered_back_as_a_call() {
    let ws = Workspace::new();
    for (answer, offered) in [
        ("Its output:\n```\nls | wc -l\n```", false),
        ("Like this:\n```python\nprint(1)\n```", false),
        ("Do this:\n```bash\n# count them\nls | wc -l\n```", true),
    ] {
        let mock = Mock::start(vec![Reply::Text(answer), Reply::Text("ok")]);
        let args = ["--no-preload", "--tool-protocol", "text", "count"];
        turn_with(&ws, &mock, true, &args).expect(0);
        let note = mock.chats()[1].last_content();
        assert!(note.contains("[turn: your reply called no tool"), "{note}");
        assert_eq!(
            note.contains("reply with only this call"),
            offered,
            "{note}"
        );
    }
}

/// Code an answer shows, to a model whose notes are on: whole files after their name, a
/// fixed function, a script and the command that runs it, the task's own command.
#[test]
fn code_an_answer_shows_is_never_written_or_run_even_with_notes_on() {
    let ws = Workspace::new();
    let old = "def count_words(text):\n    return len(text.split(\" \"))\n";
    ws.write("wordcount.py", old);
    let fixed = "def count_words(text):\n    return len(text.split())\n";
    let answers = [
        format!("Here's the updated `wordcount.py`:\n\n```python\n{fixed}```"),
        format!("Here's the corrected code:\n\n```python\n{fixed}```\n\nRun the tests again."),
        "Save this:\n\n```python\nopen('made.txt', 'w')\n```\n\nRun it with:\n\n```bash\npython3 totals.py\n```".to_string(),
        "To run the checks, use:\n\n```sh\necho checks ran > ran.txt\n```".to_string(),
    ];
    for answer in answers {
        let answer: &'static str = Box::leak(answer.into_boxed_str());
        // The first call written as text switches the notes on.
        let mock = Mock::start(vec![
            Reply::Text(CAT_WORDCOUNT),
            Reply::Text(answer),
            Reply::Text(answer),
        ]);
        let task = "Run `echo checks ran > ran.txt`, then fix count_words in wordcount.py.";
        let run = turn_with(&ws, &mock, true, &["--no-preload", task]).expect(0);
        assert_eq!(ws.read("wordcount.py"), old, "{answer}");
        for made in ["ran.txt", "totals.py", "made.txt"] {
            assert!(!exists(&ws.path(made)), "{made}: {answer}");
        }
        assert_eq!(run.stderr.matches("[bash]").count(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("[write_file]"), "{}", run.stderr);
        assert_eq!(
            mock.chats().len(),
            3,
            "one note, then the same answer is final"
        );
    }
}

const CAT_WORDCOUNT: &str =
    "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"cat wordcount.py\"}}\n```";

#[test]
fn the_native_protocol_takes_text_as_the_answer() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text(FENCED_CALL)]);
    let run = turn_with(&ws, &mock, true, &["--tool-protocol", "native", "go"]).expect(0);
    assert_eq!(run.stdout, format!("{FENCED_CALL}\n"));
    assert_eq!(mock.chats().len(), 1);
    assert!(!run.stderr.contains("[bash]"));
}

const WRITE_CALL: &str = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hello')\\n\"}}\n```";
const CAT_CALL: &str =
    "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"cat hello.py\"}}\n```";

#[test]
fn the_text_protocol_sends_no_tools_and_finishes_a_multi_step_task() {
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![
            Reply::Text(WRITE_CALL),
            Reply::Text(CAT_CALL),
            Reply::Text("hello.py is written."),
        ]);
        let run = turn_with(
            &ws,
            &mock,
            stream,
            &["--tool-protocol", "text", "write hello.py"],
        )
        .expect(0);
        assert_eq!(ws.read("hello.py"), "print('hello')\n");
        assert_has(&run.stderr, "[bash] cat hello.py (ok)");
        let chats = mock.chats();
        assert_eq!(chats.len(), 3);
        for chat in &chats {
            assert!(chat.body.get("tools").is_none(), "no tools key at all");
            let system = chat.messages()[0]["content"].as_str().unwrap();
            assert_has(system, "# Tools");
            assert_has(system, "- bash(command: string)");
            for message in chat.messages() {
                assert!(message.get("tool_calls").is_none(), "{message}");
                assert_ne!(message["role"], "tool");
            }
        }
        let last = chats[2].messages();
        // The call is sent back in turn's one rendering, not as the model spelled it.
        assert_eq!(
            last[last.len() - 2]["content"],
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\":\"cat hello.py\"}}\n```"
        );
        assert_ne!(last[last.len() - 2]["content"], CAT_CALL);
        assert_eq!(last.last().unwrap()["role"], "user");
        let result = chats[2].last_content();
        // Headed by the tool, not the call's random id: the same run twice sends the same text.
        assert_eq!(result, "Result of the bash call:\nprint('hello')\n");
    });
}

#[test]
fn under_the_text_protocol_a_reply_ends_after_its_first_call() {
    // A small model writes its whole plan at once: a file, a command that needs the file, and
    // more after the command, written before its result was seen.
    const PLAN: &str = "a.txt\n```\nA\n```\n\n```json\n{\"name\": \"bash\", \"arguments\": \
        {\"command\": \"cat a.txt >> log\"}}\n```\n\nThen:\n\n```json\n{\"name\": \"bash\", \
        \"arguments\": {\"command\": \"echo second >> log\"}}\n```\n\nb.txt\n```\nB\n```\n";
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![Reply::Text(PLAN), Reply::Text("done")]);
        let run = turn_with(&ws, &mock, stream, &["--tool-protocol", "text", "go"]).expect(0);
        assert_eq!(
            ws.read("a.txt"),
            "A\n",
            "an edit block before the call runs"
        );
        assert_eq!(
            ws.read("log"),
            "A\n",
            "the first call runs, the second does not"
        );
        assert!(
            !ws.path("b.txt").exists(),
            "nothing after the first call runs"
        );
        assert_has(&run.stderr, "the reply went on after its first call");
        // The model's history holds its reply up to the call, and the two results.
        let sent = mock.chats()[1].messages().clone();
        let reply = sent[sent.len() - 2]["content"].as_str().unwrap();
        assert!(reply.ends_with("cat a.txt >> log\"}}\n```"), "{reply}");
        assert_eq!(
            sent.last().unwrap()["content"]
                .as_str()
                .unwrap()
                .matches("Result of")
                .count(),
            2
        );
    });
    // Under auto (native tools) both calls run, and the blocks, not declared, are text.
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text(PLAN), Reply::Text("done")]);
    turn_with(&ws, &mock, true, &["go"]).expect(0);
    assert_eq!(ws.read("log"), "second\n");
    assert!(!ws.path("a.txt").exists());
}

#[test]
fn the_text_protocol_comes_from_the_environment_too() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.env("TURN_TOOL_PROTOCOL", "text").arg("hi");
    run(command).expect(0);
    assert!(mock.chats()[0].body.get("tools").is_none());
}

#[test]
fn a_session_recorded_natively_resumes_under_the_text_protocol() {
    let ws = Workspace::new();
    let first = Mock::start(vec![bash("echo earlier"), Reply::Text("first done")]);
    turn_with(&ws, &first, true, &["--session", "s.jsonl", "one"]).expect(0);
    let second = Mock::start(vec![Reply::Text("second done")]);
    turn_with(
        &ws,
        &second,
        true,
        &["--session", "s.jsonl", "--tool-protocol", "text", "two"],
    )
    .expect(0);
    let messages = second.chats()[0].messages().clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The system prompt, the declared example (a task and its reply), then the session.
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        messages[4]["content"],
        "```json\n{\"name\": \"bash\", \"arguments\": {\"command\":\"echo earlier\"}}\n```"
    );
    assert_has(messages[5]["content"].as_str().unwrap(), ":\nearlier\n");
    // The session file still holds the native form, whichever protocol wrote it.
    let recorded = ws.read("s.jsonl");
    assert_has(&recorded, "\"tool_calls\"");
    assert_has(&recorded, "\"role\":\"tool\"");
}

fn refusal(status: u16, body: Value) -> Reply {
    Reply::Raw {
        status,
        headers: vec![("Content-Type", "application/json".into())],
        body: body.to_string(),
    }
}

#[test]
fn a_server_that_refuses_tools_gets_the_text_protocol() {
    // The three refusals as the servers word them.
    let ollama = refusal(
        400,
        json!({"error": {"message": "registry.ollama.ai/library/qwen2.5-coder:1.5b does not support tools", "type": "api_error", "param": null, "code": null}}),
    );
    let llama = refusal(
        500,
        json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}}),
    );
    let vllm = refusal(
        400,
        json!({"object": "error", "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set", "type": "BadRequestError", "param": null, "code": 400}),
    );
    for (refused, hint) in [
        (ollama, "ollama.com"),
        (llama, "--jinja"),
        (vllm, "--enable-auto-tool-choice"),
    ] {
        let ws = Workspace::new();
        let mock = Mock::refusing_tools(
            vec![
                Reply::Text(WRITE_CALL),
                Reply::Text(CAT_CALL),
                Reply::Text("All done."),
            ],
            refused,
        );
        let run = turn_with(&ws, &mock, true, &["--max-steps", "3", "write hello.py"]).expect(0);
        assert_eq!(ws.read("hello.py"), "print('hello')\n");
        assert!(run.stdout.ends_with("All done.\n"), "{}", run.stdout);
        assert_has(&run.stderr, "the server refuses native tool calls");
        assert_has(
            &run.stderr,
            "using the text tool protocol for the rest of the run",
        );
        assert_has(&run.stderr, hint);
        assert_eq!(run.stderr.matches("refuses native tool calls").count(), 1);
        let chats = mock.chats();
        let with_tools = chats
            .iter()
            .filter(|c| c.body.get("tools").is_some())
            .count();
        assert_eq!(with_tools, 1, "one refusal, no retries, then no tools");
        assert_eq!(chats.len(), 4);
    }
}

#[test]
fn the_fallback_is_an_event_in_json() {
    let ws = Workspace::new();
    let mock = Mock::refusing_tools(
        vec![Reply::Text("plain answer")],
        refusal(
            400,
            json!({"error": {"message": "registry.ollama.ai/library/gemma3:1b does not support tools"}}),
        ),
    );
    let run = turn_with(&ws, &mock, true, &["--json", "hi"]).expect(0);
    let events = events(&run);
    let fallback = of_type(&events, "fallback");
    assert_eq!(fallback.len(), 1);
    assert_eq!(fallback[0]["protocol"], "text");
    assert_has(
        fallback[0]["reason"].as_str().unwrap(),
        "does not support tools",
    );
    assert_has(fallback[0]["hint"].as_str().unwrap(), "ollama.com");
    let done = of_type(&events, "done");
    assert_eq!(done[0]["status"], "ok");
    assert_eq!(done[0]["steps"], 1);
}

#[test]
fn with_the_native_protocol_a_refusal_is_an_error() {
    let ws = Workspace::new();
    let mock = Mock::refusing_tools(
        vec![Reply::Text("never")],
        refusal(
            400,
            json!({"error": {"message": "registry.ollama.ai/library/gemma3:1b does not support tools"}}),
        ),
    );
    let run = turn_with(&ws, &mock, true, &["--tool-protocol", "native", "hi"]).expect(1);
    assert_has(&run.stderr, "does not support tools");
    assert_has(
        &run.stderr,
        "hint: this Ollama model's template has no tool support",
    );
    assert_eq!(mock.chats().len(), 1);
}

/// The measured case: a small model running one failing command again and again.
const FAILING_CALL: &str =
    "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python3 -c 'raise SystemExit(\\\"boom\\\")'\"}}\n```";

#[test]
fn a_model_repeating_one_failing_call_is_stopped() {
    both(|stream| {
        let ws = Workspace::new();
        let mock = Mock::start(vec![Reply::Text(FAILING_CALL); 20]);
        let run = turn_with(&ws, &mock, stream, &["run it"]).expect(4);
        assert_has(&run.stderr, "the model is repeating itself");
        assert_has(&run.stderr, "same bash call 5 times among its latest calls");
        let chats = mock.chats();
        assert_eq!(chats.len(), 5, "stopped well before --max-steps 50");
        // From the third identical result on, the model is told so.
        assert!(!chats[2].last_content().contains("times among your latest"));
        assert_has(
            &chats[3].last_content(),
            "exactly this call 3 times among your latest calls",
        );
        assert_has(&chats[3].last_content(), "different approach");
        assert_has(
            &chats[4].last_content(),
            "exactly this call 4 times among your latest calls",
        );
    });
}

#[test]
fn repeating_is_a_done_status_in_json() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![bash("false"); 8]);
    let run = turn_with(&ws, &mock, false, &["--json", "go"]).expect(4);
    let events = events(&run);
    assert_eq!(of_type(&events, "done")[0]["status"], "repeating");
    assert_has(
        of_type(&events, "error")[0]["message"].as_str().unwrap(),
        "repeating itself",
    );
    assert_eq!(of_type(&events, "tool_result").len(), 5);
}

#[test]
fn a_repeat_with_a_new_result_is_not_a_loop() {
    let ws = Workspace::new();
    // The same command, but its output changes each time: work is being done.
    let mut script = vec![bash("echo x >> log; wc -l < log"); 7];
    script.push(Reply::Text("counted"));
    let mock = Mock::start(script);
    turn_with(&ws, &mock, true, &["go"]).expect(0);
    assert_eq!(mock.chats().len(), 8);
}

/// A port on loopback where nothing listens.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn port_of(mock: &Mock) -> u16 {
    let rest = mock.url.trim_start_matches("http://127.0.0.1:");
    rest.trim_end_matches("/v1").parse().unwrap()
}

#[test]
fn a_local_server_is_found_without_any_flags() {
    let ws = Workspace::new();
    let mock = Mock::with_models(
        vec![Reply::Text("found you")],
        json!({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b", "object": "model", "owned_by": "llamacpp"}]}),
    );
    let mut command = turn(&ws, &mock);
    command
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TURN_MODEL")
        .env(
            "TURN_LOCAL_SERVERS",
            format!("127.0.0.1:{},127.0.0.1:{}", closed_port(), port_of(&mock)),
        )
        .args(["--json", "hi"]);
    let run = run(command).expect(0);
    assert_has(
        &run.stderr,
        &format!("found llama-server at {} (no --base-url given)", mock.url),
    );
    let events = events(&run);
    let start = of_type(&events, "start");
    assert_eq!(start[0]["base_url"], mock.url);
    assert_eq!(start[0]["model"], "qwen2.5-coder-1.5b");
    assert_eq!(of_type(&events, "done")[0]["text"], "found you");
    assert_eq!(mock.chats().len(), 1);
}

#[test]
fn a_given_address_is_not_probed() {
    let ws = Workspace::new();
    let decoy = Mock::start(vec![Reply::Text("wrong server")]);
    let mock = Mock::start(vec![Reply::Text("right server")]);
    let mut command = turn(&ws, &mock);
    command
        .env(
            "TURN_LOCAL_SERVERS",
            format!("127.0.0.1:{}", port_of(&decoy)),
        )
        .arg("hi");
    let run = run(command).expect(0);
    assert_eq!(run.stdout, "right server\n");
    assert!(decoy.received().is_empty());
    assert!(!run.stderr.contains("found"), "{}", run.stderr);
}

/// What Qwen2.5-Coder-1.5B wrote in a measured run: a tool that does not exist.
const INVENTED_CALL: &str =
    "```json\n{\n  \"name\": \"python\",\n  \"arguments\": {\n    \"command\": \"python hello.py\"\n  }\n}\n```";

#[test]
fn a_call_to_an_invented_tool_tells_the_model_which_tools_there_are() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text(INVENTED_CALL),
        Reply::Text(CAT_CALL),
        Reply::Text("done"),
    ]);
    ws.write("hello.py", "print(1)\n");
    let run = turn_with(&ws, &mock, true, &["run hello.py"]).expect(0);
    assert_has(
        &run.stderr,
        "[python] {\"command\":\"python hello.py\"} (error: Unknown tool: python.",
    );
    let chats = mock.chats();
    assert_eq!(chats.len(), 3);
    assert_eq!(
        chats[1].last_content(),
        "Error: Unknown tool: python. Available tools: bash, read_file, write_file, edit_file"
    );
    assert_eq!(chats[2].last_content(), "print(1)\n");
}

/// A whole reply, not streamed, with this text and finish reason.
fn raw_text(text: &str, finish: &str) -> Reply {
    Reply::Raw {
        status: 200,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({"choices": [{"index": 0, "finish_reason": finish,
                       "message": {"role": "assistant", "content": text}}]})
        .to_string(),
    }
}

#[test]
fn the_same_call_written_again_and_again_in_one_reply_runs_once() {
    let ws = Workspace::new();
    let line = r#"{"name": "bash", "arguments": {"command": "echo hi >> count"}}"#;
    let mock = Mock::start(vec![
        raw_text(&[line; 4].join("\n"), "stop"),
        Reply::Text("done"),
    ]);
    turn_with(&ws, &mock, false, &["count"]).expect(0);
    assert_eq!(ws.read("count"), "hi\n");
    assert_eq!(
        mock.chats()[1]
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count(),
        1
    );
}

#[test]
fn a_reply_cut_after_whole_calls_reads_them_and_answers_the_last_as_cut() {
    // Measured on Qwen2.5-Coder-0.5B at its --max-tokens: bare call lines, the last one cut.
    let ws = Workspace::new();
    let text = concat!(
        "{\"name\": \"bash\", \"arguments\": {\"command\": \"echo a >> log\"}}\n",
        "{\"name\": \"bash\", \"arguments\": {\"command\": \"echo b >> log\"}}\n",
        "{\"name\": \"bash\", \"arguments\": {\"comm"
    );
    let mock = Mock::start(vec![raw_text(text, "length"), Reply::Text("done")]);
    let run = turn_with(&ws, &mock, false, &["log"]).expect(0);
    assert_has(&run.stderr, "cut off at its token limit");
    assert_eq!(
        ws.read("log"),
        "a\n",
        "the first call ran, the last was answered"
    );
    let sent = mock.chats()[1].messages().clone();
    let results: Vec<&Value> = sent.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 2);
    assert_has(
        results[1]["content"].as_str().unwrap(),
        "Your last reply was cut short",
    );
}

#[test]
fn the_same_answer_after_a_note_is_final() {
    let ws = Workspace::new();
    let shown = "Run this:\n\n```sh\nmake totals\n```";
    let mock = Mock::start(vec![
        Reply::Text(shown),
        Reply::Text(shown),
        Reply::Text("never asked for"),
    ]);
    let args = [
        "--no-preload",
        "--tool-protocol",
        "text",
        "compute the totals",
    ];
    let run = turn_with(&ws, &mock, true, &args).expect(0);
    assert_eq!(
        mock.chats().len(),
        2,
        "one note, then the same answer ends the turn"
    );
    assert_eq!(run.stderr.matches("asking the model to act").count(), 1);
}

#[test]
fn a_call_begun_and_not_finished_is_asked_for_whole() {
    let ws = Workspace::new();
    let begun =
        r#"{"name": "write_file", "arguments": {"path": "t.py", "content": "<tool_response>"#;
    let mock = Mock::start(vec![
        Reply::Text(begun),
        calls(&[("write_file", json!({"path": "t.py", "content": "x = 1\n"}))]),
        Reply::Text("Written."),
    ]);
    let run = turn_with(&ws, &mock, true, &["--no-preload", "TASK-3: write t.py"]).expect(0);
    assert_eq!(ws.read("t.py"), "x = 1\n");
    assert!(run.stderr.contains("begins a tool call it does not finish"));
    assert!(run.stderr.contains(
        "turn: the model began a tool call as text and did not finish it: notes after answers that are no answer are on"
    ));
    let note = mock.chats()[1].last_content();
    assert!(
        note.starts_with("[turn: your reply began a call to write_file but is not complete JSON"),
        "{note}"
    );
    assert!(note.ends_with("The task: TASK-3: write t.py"), "{note}");
}

#[test]
fn under_the_text_protocol_an_unfinished_write_is_asked_for_as_its_block() {
    let ws = Workspace::new();
    // A file's lines in a JSON string, the string never closed.
    let begun = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"t.py\", \"content\": \"x = 1\ny = 2}\n```";
    let mock = Mock::start(vec![
        Reply::Text(begun),
        Reply::Text("t.py\n```python\nx = 1\ny = 2\n```"),
        Reply::Text("Written."),
    ]);
    let args = [
        "--no-preload",
        "--tool-protocol",
        "text",
        "TASK-4: write t.py",
    ];
    turn_with(&ws, &mock, true, &args).expect(0);
    let note = mock.chats()[1].last_content();
    assert!(
        note.starts_with("[turn: your reply began a call to write_file but is not complete JSON, so nothing was run. Write it as a block instead: the file's path alone on a line"),
        "{note}"
    );
    assert!(note.ends_with("The task: TASK-4: write t.py"), "{note}");
    assert_eq!(ws.read("t.py"), "x = 1\ny = 2\n");
}

#[test]
fn the_native_protocol_takes_an_answer_with_commands_as_it_is() {
    let ws = Workspace::new();
    let shown = "Run this:\n\n```sh\nmake totals\n```";
    let mock = Mock::start(vec![Reply::Text(shown), Reply::Text("never asked for")]);
    let run = turn_with(
        &ws,
        &mock,
        true,
        &["--no-preload", "--tool-protocol", "native", "compute"],
    )
    .expect(0);
    assert_eq!(mock.chats().len(), 1);
    assert_eq!(run.stdout, format!("{shown}\n"));
}
