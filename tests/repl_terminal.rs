//! The REPL's line editor on a real pseudo-terminal (util-linux `script`), typed at key by key
//! the way a terminal sends keys: edits, history, search and paste reach the model as the
//! edited text, and the terminal never echoes the escape sequences back.

mod util;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use util::*;

/// What the editor writes when it draws an empty line: back to the row's start, clear, the
/// prompt, the cursor after it. Each fresh prompt begins with it.
const EMPTY_PROMPT: &str = "\r\x1b[J> \r\x1b[2C";

/// turn on a pseudo-terminal: keys go in through `script`'s stdin, the screen's bytes come
/// out of its stdout.
struct Terminal {
    child: Child,
    keys: ChildStdin,
    screen: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    fn start(ws: &Workspace, mock: &Mock, args: &[&str]) -> Terminal {
        let mut line = env!("CARGO_BIN_EXE_turn").to_string();
        for arg in args {
            line.push(' ');
            line.push_str(arg);
        }
        Terminal::shell(ws, mock, &line)
    }

    /// Runs the shell command `line` on the terminal, with turn's environment.
    fn shell(ws: &Workspace, mock: &Mock, line: &str) -> Terminal {
        let model = turn(ws, mock);
        let mut script = Command::new("script");
        script
            .args(["-qec", line, "/dev/null"])
            .current_dir(&ws.dir)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in model.get_envs() {
            if let Some(value) = value {
                script.env(key, value);
            }
        }
        let mut child = script.spawn().expect("util-linux script");
        let keys = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let copy = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                copy.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            child,
            keys,
            screen,
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits for the `n`th fresh prompt: only then is the terminal raw, and keys typed are
    /// the editor's (typed earlier, the terminal would echo them).
    fn prompt(&self, n: usize) {
        wait_for(|| self.screen().matches(EMPTY_PROMPT).count() >= n);
    }

    fn typed(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
    }

    /// Waits for turn to leave; its exit code and all it showed.
    fn finish(mut self) -> (i32, String) {
        let status = with_watchdog(self.child.id(), || self.child.wait().unwrap());
        // The reader thread has the rest once the pty is closed.
        wait_for(|| Arc::strong_count(&self.screen) == 1);
        (status.code().unwrap_or(-1), self.screen())
    }
}

fn sent(mock: &Mock) -> Vec<String> {
    mock.chats()
        .iter()
        .map(|chat| {
            let last = chat.messages().last().unwrap();
            assert_eq!(last["role"], "user");
            last["content"].as_str().unwrap().to_string()
        })
        .collect()
}

/// No key typed came back as text: what a terminal echoes in its normal mode (`^[[D`), or
/// the sequences themselves.
#[track_caller]
fn assert_no_echo(screen: &str) {
    for echoed in ["^[", "\x1b[D", "\x1b[A", "\x1b[B", "\x1b[H", "\x1b[200~"] {
        assert!(
            !screen.contains(echoed),
            "{echoed:?} came back on the screen:\n{screen:?}"
        );
    }
}

#[test]
fn edits_history_and_ctrl_u_reach_the_model_as_the_edited_text() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text("A1"),
        Reply::Text("A2"),
        Reply::Text("A3"),
        Reply::Text("A4"),
    ]);
    let mut term = Terminal::start(&ws, &mock, &["--no-session"]);
    term.prompt(1);
    term.typed("abc\x1b[D\x1b[DX\r"); // Left, Left, X
    term.prompt(2);
    term.typed("world\x1b[Hhello \r"); // Home
    term.prompt(3);
    term.typed("\x1b[A\x1b[A!\r"); // Up, Up: the first line again
    term.prompt(4);
    term.typed("junk\x15clean\r"); // Ctrl-U
    term.prompt(5);
    term.typed("\x04"); // Ctrl-D on an empty line
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen:?}");
    assert_eq!(sent(&mock), ["aXbc", "hello world", "aXbc!", "clean"]);
    assert_has(&screen, "A4");
    assert_no_echo(&screen);
    assert!(!exists(&ws.path(".turn")), "--no-session writes no history");
}

#[test]
fn history_is_kept_per_workspace_in_a_private_file() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text("one"),
        Reply::Text("two"),
        Reply::Text("three"),
    ]);
    let mut term = Terminal::start(&ws, &mock, &[]);
    term.prompt(1);
    term.typed("first\x1b\rline\r"); // Alt-Enter: a newline inside the line
    term.prompt(2);
    term.typed("\x04");
    assert_eq!(term.finish().0, 0);
    let history = ws.path(".turn/history");
    assert_eq!(ws.read(".turn/history"), "first\\nline\n");
    let mode = std::fs::metadata(&history).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // A new REPL in the same workspace recalls it; --no-session adds nothing to it.
    let mut term = Terminal::start(&ws, &mock, &["--no-session"]);
    term.prompt(1);
    term.typed("\x1b[A\r");
    term.prompt(2);
    term.typed("secret\r");
    term.prompt(3);
    term.typed("\x04");
    assert_eq!(term.finish().0, 0);
    assert_eq!(sent(&mock), ["first\nline", "first\nline", "secret"]);
    assert_eq!(ws.read(".turn/history"), "first\\nline\n");
}

#[test]
fn paste_search_ctrl_c_and_completion() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        Reply::Text("pasted"),
        Reply::Text("kept"),
        Reply::Text("found"),
    ]);
    let mut term = Terminal::start(&ws, &mock, &["--no-session"]);
    term.prompt(1);
    // A bracketed paste with newlines is one message, sent on Enter.
    term.typed("\x1b[200~line one\r\nline two\x1b[201~\r");
    term.prompt(2);
    // Ctrl-C drops the line, and the REPL stays.
    term.typed("oops\x03");
    term.prompt(3);
    term.typed("kept\r");
    term.prompt(4);
    // Ctrl-R finds the paste; Enter sends it.
    term.typed("\x12two");
    wait_for(|| term.screen().contains("(reverse-i-search)'two': line one"));
    term.typed("\r");
    term.prompt(5);
    term.typed("/sta\t\r"); // Tab completes /status
    term.prompt(6);
    term.typed("\x03"); // Ctrl-C on an empty line leaves, as it always did
    let (code, screen) = term.finish();
    assert_eq!(code, 130, "{screen:?}");
    assert_eq!(
        sent(&mock),
        ["line one\nline two", "kept", "line one\nline two"]
    );
    assert_has(&screen, "> oops^C");
    assert_has(&screen, "model     mock-model");
    assert_has(&screen, "tokens    ");
    assert_no_echo(&screen);
}

/// The pid of the turn running in `ws`, if one is.
fn turn_in(ws: &Workspace) -> Option<u32> {
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_turn"));
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let exe = std::fs::read_link(entry.path().join("exe")).ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            (exe == binary && cwd == ws.dir).then_some(pid)
        })
}

/// The local modes `stty -a` printed last, e.g. `["icanon", "echo", "-echonl", …]`.
fn modes(screen: &str) -> Vec<String> {
    let words: Vec<String> = screen
        .split_whitespace()
        .map(|w| w.trim_matches(';').to_string())
        .collect();
    let last = words
        .iter()
        .rposition(|w| w.ends_with("icanon"))
        .expect("stty -a output");
    words[last.saturating_sub(3)..(last + 4).min(words.len())].to_vec()
}

#[test]
fn the_terminal_is_given_back_on_sigterm_and_on_leaving() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let line = format!("{} --no-session; stty -a", env!("CARGO_BIN_EXE_turn"));
    let mut term = Terminal::shell(&ws, &mock, &line);
    term.prompt(1);
    term.typed("half a line");
    wait_for(|| term.screen().contains("> half a line"));
    let pid = turn_in(&ws).expect("turn runs in the workspace");
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let (_, screen) = term.finish();
    let shown = modes(&screen);
    for mode in ["icanon", "echo", "isig"] {
        assert!(shown.iter().any(|m| m == mode), "{mode} in {shown:?}");
    }
    assert!(
        screen.contains("\x1b[?2004l"),
        "bracketed paste is switched off"
    );

    let mut term = Terminal::shell(&ws, &mock, &line);
    term.prompt(1);
    term.typed("\x03");
    let (_, screen) = term.finish();
    let shown = modes(&screen);
    for mode in ["icanon", "echo", "isig"] {
        assert!(shown.iter().any(|m| m == mode), "{mode} in {shown:?}");
    }
}

#[test]
fn the_commands() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut term = Terminal::start(&ws, &mock, &["--no-session"]);
    let mut prompts = 1;
    for line in [
        "/help",
        "/model",
        "/model other-model",
        "/model two words",
        "/tools",
        "/compact",
        "/status",
        "   indented\x1b\r  second",
    ] {
        term.prompt(prompts);
        term.typed(&format!("{line}\r"));
        prompts += 1;
    }
    term.prompt(prompts);
    term.typed("\x04");
    let (code, screen) = term.finish();
    assert_eq!(code, 0, "{screen:?}");
    for shown in [
        "/compact shorten the history",
        "Ctrl-R searches them",
        "model: mock-model; the server has: mock-model",
        "model: other-model",
        "a model name has no spaces",
        "  read_file   Read a UTF-8 text file in the workspace",
        "nothing to compact yet",
        "model     other-model",
        "session   not recorded",
        "context   about ",
    ] {
        assert_has(&screen, shown);
    }
    let chats = mock.chats();
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].body["model"], "other-model");
    assert_eq!(sent(&mock), ["   indented\n  second"]);
}
