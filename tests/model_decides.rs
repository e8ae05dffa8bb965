//! The model decides. A capable model that calls tools natively, run with default flags, gets
//! no command and no write it did not call, and exactly one request per answer, whatever the
//! task's words say about commands, files or figures and whatever its answer shows. A model
//! that writes its calls as text still gets them run, and gets notes after answers that are no
//! answer, from then on in the session (also after `turn -c`).

mod util;

use serde_json::{json, Value};
use util::*;

/// Runs `task` in `ws` with default flags (and --json) against a model that answers with
/// `script`, checks the workspace with `unchanged` first, then that what the model decides
/// holds: every call run is one it made (or one of the preload's reads of files the task
/// names, as turn's own), every request but the first answers its calls' results (no note of
/// turn's), and there is one request per reply. Returns the final answer.
fn decides(
    ws: &Workspace,
    script: Vec<Reply>,
    task: &str,
    unchanged: impl FnOnce(&Workspace),
) -> String {
    let replies = script.len();
    let made: Vec<(String, String)> = script
        .iter()
        .flat_map(|reply| match reply {
            Reply::Calls(calls) => calls
                .iter()
                .map(|(name, args)| (name.to_string(), args.clone()))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    let mock = Mock::start(script);
    let run = go(ws, &mock, &["--json", task]);
    unchanged(ws);
    let chats = mock.chats();
    assert_eq!(
        chats.len(),
        replies,
        "one request per reply\n{}",
        run.stderr
    );
    let run = run.expect(0);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let mut ran = Vec::new();
    for call in events.iter().filter(|e| e["type"] == "tool_call") {
        let (name, args) = (call["name"].as_str().unwrap(), call["arguments"].as_str());
        match call["origin"].as_str().unwrap() {
            "native" => ran.push((name.to_string(), args.unwrap().to_string())),
            "turn" => assert_eq!(name, "read_file", "turn's own calls only read: {call}"),
            other => panic!("a call of origin {other}: {call}"),
        }
    }
    assert_eq!(ran, made, "the calls run are the model's\n{}", run.stderr);
    let chats = mock.chats();
    assert_eq!(
        chats.len(),
        replies,
        "one request per reply\n{}",
        run.stderr
    );
    for chat in &chats[1..] {
        assert_eq!(chat.messages().last().unwrap()["role"], "tool", "no note");
    }
    assert!(!run.stderr.contains("asking the model"), "{}", run.stderr);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done");
    done["text"].as_str().unwrap().to_string()
}

fn text(answer: &str) -> Reply {
    Reply::Text(Box::leak(answer.to_string().into_boxed_str()))
}

#[test]
fn a_command_the_task_forbids_is_not_run() {
    let ws = Workspace::new();
    ws.write("build/app.o", "obj");
    let answer = "It would remove build/ and build/app.o.";
    let got = decides(
        &ws,
        vec![bash("ls -R build"), text(answer)],
        "Do not run `rm -rf build`. Just check what it would remove and tell me.",
        |ws| assert!(exists(&ws.path("build/app.o")), "build/ was removed"),
    );
    assert_eq!(got, answer);
}

#[test]
fn a_snippet_an_answer_suggests_is_not_written() {
    let ws = Workspace::new();
    let greet = "def greet(name):\n    return f\"Hello, {name}!\"\n\n\nprint(greet(\"Ann\"))\n";
    ws.write("greet.py", greet);
    let answer = "greet() returns a greeting for the name it is given. To handle an empty \
                  name, greet.py could read:\n\n```python\ndef greet(name):\n    if not name:\n        \
                  return \"Hello!\"\n    return f\"Hello, {name}!\"\n```";
    let got = decides(
        &ws,
        vec![text(answer)],
        "Explain greet() in greet.py and suggest, as a snippet, how it could handle an empty \
         name. Do not change any files.",
        |ws| assert_eq!(ws.read("greet.py"), greet),
    );
    assert_eq!(got, answer);
}

#[test]
fn a_script_an_answer_shows_is_neither_written_nor_run() {
    let ws = Workspace::new();
    let answer = "Save this as hello.py:\n\n```python\nopen(\"ran.txt\", \"w\").write(\"hello\")\n\
                  print(\"hello\")\n```\n\nThen run it:\n\n```bash\npython3 hello.py\n```";
    decides(
        &ws,
        vec![text(answer)],
        "How would I write a Python script that prints hello? Show me; do not create any files.",
        |ws| {
            assert!(!exists(&ws.path("hello.py")), "hello.py was written");
            assert!(!exists(&ws.path("ran.txt")), "hello.py was run");
        },
    );
}

#[test]
fn figures_answered_from_reading_are_the_answer() {
    let ws = Workspace::new();
    assert_eq!(
        decides(
            &ws,
            vec![text("5")],
            "What is the total of 2 and 3?",
            |_| {}
        ),
        "5"
    );
}

#[test]
fn a_command_the_task_says_to_run_is_run_only_if_the_model_calls_it() {
    let ws = Workspace::new();
    ws.write("app.py", "open('ran.txt', 'w').write('ran')\nprint('hi'\n");
    let fixed = "open('ran.txt', 'w').write('ran')\nprint('hi')\n";
    decides(
        &ws,
        vec![
            calls(&[("write_file", json!({"path": "app.py", "content": fixed}))]),
            text("Fixed the missing parenthesis in app.py."),
        ],
        "Fix the syntax error in app.py, then run `python3 app.py` to check that it works.",
        |ws| assert!(!exists(&ws.path("ran.txt")), "app.py was run"),
    );
    assert_eq!(ws.read("app.py"), fixed);
}

#[test]
fn a_check_the_task_asks_for_in_parentheses_is_the_models_to_run() {
    let ws = Workspace::new();
    ws.write("check.sh", "touch checked\n");
    decides(
        &ws,
        vec![
            bash("cat check.sh"),
            text("The checks would pass: check.sh only touches a file."),
        ],
        "Make sure the checks pass (`sh check.sh`).",
        |ws| assert!(!exists(&ws.path("checked")), "check.sh was run"),
    );
}

#[test]
fn a_replacement_everywhere_is_searched_for_only_by_the_model() {
    let ws = Workspace::new();
    ws.write("notes.txt", "colour\nColour\n");
    // The model's own sed leaves "Colour"; what is left is the model's to look for.
    decides(
        &ws,
        vec![
            bash("sed -i 's/colour/color/g' notes.txt"),
            text("Replaced every \"colour\" with \"color\"."),
        ],
        "Replace every \"colour\" with \"color\" in notes.txt.",
        |ws| assert_eq!(ws.read("notes.txt"), "color\nColour\n"),
    );
}

#[test]
fn a_replacement_shown_as_a_sed_is_not_run() {
    let ws = Workspace::new();
    ws.write("notes.txt", "colour\n");
    let answer =
        "Run this to replace them all:\n\n```bash\nsed -i 's/colour/color/g' notes.txt\n```";
    decides(
        &ws,
        vec![bash("grep -n colour notes.txt"), text(answer)],
        "Replace every \"colour\" with \"color\" in notes.txt.",
        |ws| assert_eq!(ws.read("notes.txt"), "colour\n"),
    );
}

#[test]
fn an_answer_in_the_form_of_the_tasks_example_is_the_answer() {
    let ws = Workspace::new();
    ws.write("src/a.rs", "");
    ws.write("src/b.rs", "");
    let got = decides(
        &ws,
        vec![bash("find . -type f | wc -l"), text("2 files, most in src")],
        "How many files are here? Answer in one line, for example: \"2 files, most in src\".",
        |_| {},
    );
    assert_eq!(got, "2 files, most in src");
}

#[test]
fn an_answer_that_repeats_the_task_is_the_answer() {
    let ws = Workspace::new();
    let task = "Say back exactly this sentence: the quick brown fox jumps over the lazy dog.";
    let answer = "Say back exactly this sentence: the quick brown fox jumps over the lazy dog.";
    assert_eq!(decides(&ws, vec![text(answer)], task, |_| {}), answer);
}

#[test]
fn a_whole_file_shown_after_its_name_is_not_written() {
    let ws = Workspace::new();
    let config = "DEBUG = True\nPORT = 8080\nHOST = \"0.0.0.0\"\nWORKERS = 4\n";
    ws.write("config.py", config);
    let answer = "Here's `config.py` with DEBUG off:\n\n```python\nDEBUG = False\nPORT = 8080\n\
                  HOST = \"0.0.0.0\"\nWORKERS = 4\n```";
    decides(
        &ws,
        vec![text(answer)],
        "Show me how config.py would look with DEBUG off; do not change it.",
        |ws| assert_eq!(ws.read("config.py"), config),
    );
}

#[test]
fn figures_the_task_asks_to_compute_are_the_models_to_compute() {
    let ws = Workspace::new();
    ws.write("data.txt", "1\n2\n3\n");
    let got = decides(
        &ws,
        vec![
            calls(&[("read_file", json!({"path": "data.txt"}))]),
            text("The average is 2."),
        ],
        "Compute the average of the numbers in the data file.",
        |_| {},
    );
    assert_eq!(got, "The average is 2.");
}

#[test]
fn the_tasks_own_shell_block_shown_back_is_not_run() {
    let ws = Workspace::new();
    let answer = "It writes hi to out.txt:\n\n```sh\necho hi > out.txt\n```";
    decides(
        &ws,
        vec![text(answer)],
        "What does this do?\n\n```sh\necho hi > out.txt\n```",
        |ws| assert!(!exists(&ws.path("out.txt")), "the task's command was run"),
    );
}

/// A call written as text, in a ```json fence.
fn written(name: &str, arguments: Value) -> Reply {
    let call = json!({"name": name, "arguments": arguments});
    text(&format!("```json\n{call}\n```"))
}

#[test]
fn a_model_that_writes_calls_as_text_gets_them_run_and_notes_also_after_a_resume() {
    let ws = Workspace::new();
    let shown = "Run this:\n\n```bash\ntouch shown\n```";
    let mock = Mock::start(vec![
        written("bash", json!({"command": "touch called"})),
        text(shown),
        text("Done."),
        // The resumed session: an empty answer gets its note too.
        text(""),
        text("Still done."),
    ]);
    let run = go(&ws, &mock, &["--no-preload", "touch a file"]).expect(0);
    assert!(exists(&ws.path("called")), "the text call ran");
    assert!(!exists(&ws.path("shown")), "the commands shown did not");
    assert_has(
        &run.stderr,
        "turn: the model wrote a tool call as text: notes after answers that are no answer are on",
    );
    let chats = mock.chats();
    assert_eq!(chats.len(), 3);
    let note = chats[2].last_content();
    assert!(
        note.starts_with("[turn: your reply called no tool"),
        "{note}"
    );
    assert!(
        note.contains(r#"{"arguments":{"command":"touch shown"},"name":"bash"}"#),
        "{note}"
    );
    assert!(note.ends_with("\n\nThe task: touch a file"), "{note}");
    assert_eq!(run.stdout.lines().last(), Some("Done."));

    let run = go(&ws, &mock, &["--no-preload", "-c", "and now?"]).expect(0);
    assert_eq!(run.stdout.lines().last(), Some("Still done."));
    let chats = mock.chats();
    assert_eq!(chats.len(), 5);
    assert!(chats[4]
        .last_content()
        .contains("[turn: your reply was empty."));
    // The switch is recorded once, as a line of its own beside the messages.
    let sessions = ws.path(".turn/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let recorded = std::fs::read_to_string(file).unwrap();
    assert_eq!(
        recorded
            .lines()
            .filter(|l| l.starts_with(r#"{"coaching":"#))
            .collect::<Vec<_>>(),
        [r#"{"coaching":{"why":"the model wrote a tool call as text"}}"#]
    );

    // A new session starts with the notes off: the empty answer is the answer.
    let mock = Mock::start(vec![text(""), text("never asked for")]);
    go(&ws, &mock, &["--no-preload", "again"]).expect(0);
    assert_eq!(mock.chats().len(), 1);
}

#[test]
fn a_server_that_refuses_tools_switches_the_notes_on() {
    let ws = Workspace::new();
    let refused = Reply::Raw {
        status: 500,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({"error": {"code": 500, "message": "tools param requires --jinja flag"}})
            .to_string(),
    };
    let shown = "Run this:\n\n```bash\ntouch shown\n```";
    let mock = Mock::refusing_tools(vec![text(shown), text("Done.")], refused);
    let run = go(&ws, &mock, &["--no-preload", "touch a file"]).expect(0);
    assert_has(&run.stderr, "(the text tool protocol): notes after answers");
    assert!(!exists(&ws.path("shown")));
    let chats = mock.chats();
    // The refused request, the answer, the note's request.
    assert_eq!(chats.len(), 3);
    assert!(chats[2]
        .last_content()
        .contains("[turn: your reply called no tool"));
}
