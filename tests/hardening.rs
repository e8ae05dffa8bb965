//! Hostile input, class by class (issue "Hardening"): each test reproduces an attack a hostile
//! model, server or local command could make, then shows turn fails safely. Workspaces and the
//! "outside" the attacks aim at are separate temp directories; nothing leaves loopback.

mod util;

use serde_json::{json, Value};
use std::os::raw::c_long;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use util::*;

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o777
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The tool results the model was sent in its second request.
fn results(mock: &Mock) -> Vec<String> {
    mock.chats()[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

// 1. Session files through planted symlinks.

#[test]
fn a_session_file_replaced_by_a_symlink_is_refused_not_followed() {
    let (ws, outside) = (Workspace::new(), Workspace::new());
    let profile = outside.path(".bash_profile");
    std::fs::write(&profile, "# login script\n").unwrap();
    // A command of the first run plants the symlink in place of the session file.
    let plant = format!("rm task.jsonl && ln -s {} task.jsonl", profile.display());
    let mock = Mock::start(vec![bash(&plant), Reply::Text("done")]);
    let mut first = turn(&ws, &mock);
    first.args(["--session", "task.jsonl", "go"]);
    run(first).expect(0);
    assert!(ws
        .path("task.jsonl")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
    let mut second = turn(&ws, &mock);
    second.args(["--session", "task.jsonl", "next"]);
    let run = run(second).expect(2);
    assert_has(
        &run.stderr,
        "turn: cannot use the session file task.jsonl: it is a symbolic link",
    );
    assert_eq!(
        std::fs::read_to_string(&profile).unwrap(),
        "# login script\n"
    );
}

#[test]
fn a_planted_turn_directory_is_never_followed() {
    let (ws, outside) = (Workspace::new(), Workspace::new());
    std::fs::create_dir(outside.path("sessions")).unwrap();
    symlink(&outside.dir, ws.path(".turn")).unwrap();
    let mock = Mock::start(vec![Reply::Text("one"), Reply::Text("two")]);
    let fresh = go(&ws, &mock, &["plain run"]).expect(0);
    assert_has(&fresh.stderr, "cannot record the session in");
    assert_has(&fresh.stderr, "symbolic link");
    let cont = go(&ws, &mock, &["-c", "go on"]).expect(2);
    assert_has(&cont.stderr, "symbolic link");
    assert_eq!(names(&outside.dir), ["sessions"]);
    assert!(names(&outside.path("sessions")).is_empty());
    // A session inside .turn/sessions that is a symlink is not a session to continue.
    std::fs::remove_file(ws.path(".turn")).unwrap();
    std::fs::create_dir_all(ws.path(".turn/sessions")).unwrap();
    let target = outside.path("target.jsonl");
    std::fs::write(&target, "").unwrap();
    symlink(&target, ws.path(".turn/sessions/x.jsonl")).unwrap();
    let cont = go(&ws, &mock, &["-c", "go on"]).expect(2);
    assert_has(&cont.stderr, "no session to continue");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
}

// 2. File tools' temp files, and the race between the path check and the open.

#[test]
fn a_symlink_at_the_old_predictable_temp_name_redirects_nothing() {
    let (ws, outside) = (Workspace::new(), Workspace::new());
    // The model knows turn's pid ($PPID of its command) and plants the temp name writes used.
    let plant = format!(
        "ln -s {} .f.txt.turn-$PPID.tmp && echo planted",
        outside.path("pwned").display()
    );
    let mock = Mock::start(vec![
        bash(&plant),
        calls(&[("write_file", json!({"path": "f.txt", "content": "data"}))]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["--sandbox", "off", "go"]).expect(0);
    assert_eq!(mock.chats()[1].last_content(), "planted\n");
    assert_eq!(mock.chats()[2].last_content(), "Created f.txt (4 bytes)");
    assert_eq!(ws.read("f.txt"), "data");
    assert!(!exists(&outside.path("pwned")), "nothing written outside");
}

extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
}

/// renameat2's number: musl has no wrapper for it, so the tests link for musl too.
#[cfg(target_arch = "x86_64")]
const SYS_RENAMEAT2: c_long = 316;
#[cfg(target_arch = "aarch64")]
const SYS_RENAMEAT2: c_long = 276;

/// Swaps two names atomically (RENAME_EXCHANGE): both always exist.
fn exchange(a: &Path, b: &Path) -> bool {
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C strings; AT_FDCWD is -100, RENAME_EXCHANGE is 2.
    unsafe {
        syscall(
            SYS_RENAMEAT2,
            -100 as c_long,
            a.as_ptr(),
            -100 as c_long,
            b.as_ptr(),
            2 as c_long,
        ) == 0
    }
}

#[test]
fn writes_racing_a_flipped_symlink_never_land_outside() {
    let (ws, outside) = (Workspace::new(), Workspace::new());
    std::fs::create_dir(ws.path("d")).unwrap();
    symlink(&outside.dir, ws.path("evil")).unwrap();
    // A background process flips d between a directory and a symlink leading outside.
    let stop = Arc::new(AtomicBool::new(false));
    let (flag, d, evil) = (stop.clone(), ws.path("d"), ws.path("evil"));
    let flipper = std::thread::spawn(move || {
        let mut flips = 0u64;
        while !flag.load(Ordering::Relaxed) {
            assert!(exchange(&d, &evil));
            flips += 1;
            std::thread::sleep(Duration::from_micros(10 * (flips % 8)));
        }
        flips
    });
    let writes: Vec<(&str, Value)> = (0..300)
        .map(|i| {
            let path = format!("d/f{i}");
            ("write_file", json!({"path": path, "content": "x"}))
        })
        .collect();
    let mock = Mock::start(vec![calls(&writes), Reply::Text("ok")]);
    // --sandbox off: only turn's own care keeps the writes inside.
    let run = go(&ws, &mock, &["--sandbox", "off", "go"]);
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    run.expect(0);
    assert!(names(&outside.dir).is_empty(), "{:?}", names(&outside.dir));
    let results = results(&mock);
    assert_eq!(results.len(), 300);
    let created = results.iter().filter(|r| r.starts_with("Created")).count();
    println!("{flips} flips; {created} of 300 writes went in while d was a directory");
    assert!(flips > 10, "the flipper ran through the writes");
    for result in results.iter().filter(|r| !r.starts_with("Created")) {
        assert!(
            result.contains("escapes workspace") || result.contains("symbolic link"),
            "{result}"
        );
    }
}

// 3. Edits as root: owner, mode, hard links, FIFOs, temp files.

#[test]
fn edits_keep_owner_mode_and_hard_links_and_leave_no_temp_files() {
    let (ws, outside) = (Workspace::new(), Workspace::new());
    let secret = ws.path("secret.txt");
    std::fs::write(&secret, "key = old\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = std::fs::metadata(&secret).unwrap().uid() == 0;
    if root {
        // The user's file, edited by turn running as root.
        std::os::unix::fs::chown(&secret, Some(65534), Some(65534)).unwrap();
    }
    let owner = std::fs::metadata(&secret).unwrap().uid();
    std::fs::write(ws.path("linked.txt"), "one\n").unwrap();
    std::fs::hard_link(ws.path("linked.txt"), outside.path("twin.txt")).unwrap();
    let mock = Mock::start(vec![
        calls(&[
            (
                "edit_file",
                json!({"path": "secret.txt", "old_text": "old", "new_text": "new"}),
            ),
            (
                "write_file",
                json!({"path": "secret.txt", "content": "key = newer\n"}),
            ),
            (
                "edit_file",
                json!({"path": "linked.txt", "old_text": "one", "new_text": "two"}),
            ),
        ]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    let results = results(&mock);
    assert!(
        results.iter().all(|r| !r.starts_with("Error")),
        "{results:?}"
    );
    let meta = std::fs::metadata(&secret).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (owner, 0o600));
    assert_eq!(ws.read("secret.txt"), "key = newer\n");
    assert_eq!(
        std::fs::read_to_string(outside.path("twin.txt")).unwrap(),
        "two\n",
        "the hard link is kept"
    );
    assert_eq!(names(&ws.dir), [".turn", "linked.txt", "secret.txt"]);
}

#[test]
fn a_fifo_is_neither_replaced_nor_read() {
    let ws = Workspace::new();
    mkfifo(&ws.path("pipe"));
    let mock = Mock::start(vec![
        calls(&[
            ("write_file", json!({"path": "pipe", "content": "x"})),
            ("read_file", json!({"path": "pipe"})),
            (
                "edit_file",
                json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
            ),
        ]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    for result in results(&mock) {
        assert!(result.contains("pipe is not a regular file"), "{result}");
    }
    let kind = std::fs::symlink_metadata(ws.path("pipe"))
        .unwrap()
        .file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
}

// 4. read_file and a FIFO swapped in; AGENTS.md as a FIFO or a symlink to /dev/zero.

#[test]
fn a_fifo_swapped_in_for_a_file_does_not_block_read_file() {
    let ws = Workspace::new();
    ws.write("notes.txt", "hello\n");
    // The model's command swaps the file for a FIFO no one writes, then asks to read it.
    let mock = Mock::start(vec![
        bash("rm notes.txt && mkfifo notes.txt"),
        calls(&[("read_file", json!({"path": "notes.txt"}))]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    assert_eq!(
        mock.chats()[2].last_content(),
        "Error: notes.txt is not a regular file (a FIFO, socket or device)"
    );
}

#[test]
fn agents_md_as_a_fifo_or_dev_zero_neither_hangs_nor_floods() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path(".git")).unwrap();
    std::fs::create_dir(ws.path("sub")).unwrap();
    mkfifo(&ws.path("AGENTS.md"));
    symlink("/dev/zero", ws.path("sub/AGENTS.md")).unwrap();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.current_dir(ws.path("sub")).arg("hi");
    run(command).expect(0);
    let system = mock.chats()[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("Instructions from"), "{system}");
    assert!(system.len() < 4096);
}

// 5. Session files and directories are private and hold no secrets.

#[test]
fn sessions_are_private_and_hold_no_key() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command
        .env("OPENAI_API_KEY", "sk-very-secret-key")
        .arg("hi");
    run(command).expect(0);
    assert_eq!(mode(&ws.path(".turn")), 0o700);
    assert_eq!(mode(&ws.path(".turn/sessions")), 0o700);
    let sessions = names(&ws.path(".turn/sessions"));
    assert_eq!(sessions.len(), 1);
    let session = ws.path(".turn/sessions").join(&sessions[0]);
    assert_eq!(mode(&session), 0o600);
    let recorded = std::fs::read_to_string(session).unwrap();
    assert!(recorded.contains("\"hi\"") && !recorded.contains("sk-very-secret"));
}

// 7. A torn last session line never breaks a later resume.

#[test]
fn a_torn_session_line_is_skipped_on_every_resume() {
    let ws = Workspace::new();
    ws.write(
        "s.jsonl",
        "{\"role\":\"user\",\"content\":\"one\"}\n{\"role\":\"assistant\",\"con",
    );
    let mock = Mock::start(vec![Reply::Text("A"), Reply::Text("B")]);
    for (n, prompt) in ["two", "three"].into_iter().enumerate() {
        let mut command = turn(&ws, &mock);
        command.args(["--session", "s.jsonl", prompt]);
        let run = run(command).expect(0);
        assert_has(
            &run.stderr,
            "turn: line 2 of s.jsonl was cut short by an interrupted write; it is skipped",
        );
        let sent = mock.chats()[n].messages().clone();
        // "one" was never answered, so "two" joins it (no two user messages in a row).
        assert_eq!(sent[1]["content"], "one\n\ntwo");
        assert!(sent.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .ends_with(prompt));
    }
    assert_eq!(
        mock.chats()[1].messages().len(),
        4,
        "system, one and two, A, three"
    );
}

// 8. Escape sequences never reach the terminal raw.

const OSC52: &str = "\x1b]52;c;cm0gLXJmIH4=\x07";

fn hostile_stream() -> String {
    let chunk = |delta: Value| format!("data: {}\n\n", json!({"choices": [{"delta": delta}]}));
    let mut sse = chunk(json!({"reasoning_content": format!("think{OSC52}")}));
    sse += &chunk(json!({"content": format!("text{OSC52}\x1b[2J")}));
    sse += &chunk(
        json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
        "function": {"name": "read_file", "arguments": json!({"path": format!("x\x1b]0;title\x07")}).to_string()}}]}),
    );
    sse + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"
}

fn server_error() -> Reply {
    Reply::Raw {
        status: 400,
        headers: vec![("Content-Type", "application/json".into())],
        body: json!({"error": {"message": format!("bad{OSC52}")}}).to_string(),
    }
}

#[test]
fn escape_sequences_are_shown_escaped_on_stderr_and_kept_in_json() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Sse(hostile_stream()), server_error()]);
    let run = go(&ws, &mock, &["go"]).expect(1);
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
    assert_has(&run.stderr, "think\\x1b]52;c;cm0gLXJmIH4=\\x07");
    assert_has(&run.stderr, "[read_file] x\\x1b]0;title\\x07 (error:");
    assert_has(&run.stderr, "turn: server error 400: bad\\x1b]52;");
    // stdout is a pipe here: the model's text reaches it exactly.
    assert!(run.stdout.contains(&format!("text{OSC52}")));

    let mock = Mock::start(vec![Reply::Sse(hostile_stream()), server_error()]);
    let run = go(&ws, &mock, &["--json", "go"]).expect(1);
    assert!(!run.stdout.contains('\x1b') && run.stdout.contains("\\u001b]52;c;"));
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[1]["text"], format!("text{OSC52}\x1b[2J"));
    assert!(!run.stderr.contains('\x1b'), "{:?}", run.stderr);
}

#[test]
fn escape_sequences_are_escaped_on_a_terminal_stdout() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Sse(hostile_stream()), server_error()]);
    let binary = env!("CARGO_BIN_EXE_turn");
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &format!("{binary} --no-session go"), "/dev/null"])
        .current_dir(&ws.dir);
    for (key, value) in turn(&ws, &mock).get_envs() {
        if let Some(value) = value {
            script.env(key, value);
        }
    }
    let run = run_with_input(script.stdin(Stdio::piped()), Some(""));
    let out = run.stdout.replace("\x1b[2m", "").replace("\x1b[0m", "");
    assert!(!out.contains('\x1b'), "{out:?}");
    assert_has(&out, "text\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J");
}

// 9. Numeric flags: no overflow, sane bounds.

#[test]
fn huge_numbers_are_refused_or_saturate() {
    let ws = Workspace::new();
    ws.write("f.txt", "a\nb\n");
    let mock = Mock::start(vec![
        calls(&[(
            "read_file",
            json!({"path": "f.txt", "offset": u64::MAX, "limit": u64::MAX}),
        )]),
        Reply::Text("ok"),
    ]);
    let run = go(&ws, &mock, &["--max-output", "4611686018427387904", "go"]).expect(2);
    assert_has(
        &run.stderr,
        "turn: --max-output is at most 100000000, not '4611686018427387904'",
    );
    assert!(mock.chats().is_empty());
    go(&ws, &mock, &["--max-output", "100000000", "go"]).expect(0);
    assert_has(&mock.chats()[1].last_content(), "past the end of f.txt");
}

// 10. The keyword screen judges words and targets.

#[test]
fn the_screen_lets_harmless_work_run_and_still_blocks() {
    let ws = Workspace::new();
    ws.write("build/a.o", "x");
    ws.write("build/b.o", "x");
    let harmless = "command -v sh >/dev/null && echo found # sudo\ncat <<EOF\nsudo is text\nEOF\nbash -c 'cd build && rm -rf *'";
    let mock = Mock::start(vec![
        bash(harmless),
        bash("cd / && false && rm -rf *"),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["--approve", "never", "go"]).expect(0);
    assert_eq!(mock.chats()[1].last_content(), "found\nsudo is text\n");
    assert!(names(&ws.path("build")).is_empty());
    assert_eq!(
        mock.chats()[2].last_content(),
        "Error: Dangerous command blocked: recursive delete of * at / (rm -r)"
    );
}
