//! The command line as a script sees it: prompts from stdin, usage errors, exit codes, Ctrl-C.

mod util;

use std::process::Stdio;
use std::time::Duration;
use util::*;

#[test]
fn help_and_version() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let help = go(&ws, &mock, &["--help"]).expect(0);
    for needle in [
        "Usage: turn",
        "--base-url",
        "OPENAI_API_KEY",
        "--max-steps",
        "Exit codes",
    ] {
        assert!(help.stdout.contains(needle), "help lacks {needle}");
    }
    let version = go(&ws, &mock, &["-V"]).expect(0);
    // `turn 0.1.0 (x86_64-unknown-linux-gnu, commit 0123456789ab, built 2026-12-03)`, stamped
    // by build.rs.
    assert_eq!(
        version.stdout,
        format!("turn {}\n", env!("TURN_LONG_VERSION"))
    );
    let (stamp, rest) = version.stdout.trim_end().split_once(" (").unwrap();
    assert_eq!(stamp, format!("turn {}", env!("CARGO_PKG_VERSION")));
    let fields: Vec<&str> = rest.strip_suffix(')').unwrap().split(", ").collect();
    let [target, commit, date] = fields[..] else {
        panic!("version line has not three fields: {}", version.stdout)
    };
    assert!(target.contains("-linux-"), "target: {target}");
    let commit = commit.strip_prefix("commit ").unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "commit: {commit}"
    );
    let date = date.strip_prefix("built ").unwrap().as_bytes();
    assert!(
        date.len() == 10 && date[4] == b'-' && date[7] == b'-',
        "date: {}",
        version.stdout
    );
    assert!(mock.received().is_empty(), "help and version ask no server");
}

#[test]
fn usage_errors_exit_2_and_name_the_flag() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    for (args, needle) in [
        (vec!["--frobnicate", "x"], "--frobnicate"),
        (
            vec!["--max-steps", "many", "x"],
            "--max-steps needs a whole number above 0, not 'many'",
        ),
        (
            vec!["--temperature", "9", "x"],
            "--temperature must be a number from 0 to 2",
        ),
        (
            vec!["-C", "/no/such/dir", "x"],
            "cannot use workspace /no/such/dir",
        ),
        (
            vec!["--system", "missing.txt", "x"],
            "cannot read the --system file missing.txt",
        ),
        (vec!["-m"], "missing argument for option '-m'"),
    ] {
        let run = go(&ws, &mock, &args).expect(2);
        assert!(run.stderr.starts_with("turn: "), "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    assert!(mock.received().is_empty());
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("one"), Reply::Text("two")]);
    let mut piped = turn(&ws, &mock);
    run_with_input(&mut piped, Some("from a pipe\n")).expect(0);
    let mut dash = turn(&ws, &mock);
    dash.arg("-");
    run_with_input(&mut dash, Some("from dash")).expect(0);
    let chats = mock.chats();
    assert_eq!(chats[0].messages()[1]["content"], "from a pipe\n");
    assert_eq!(chats[1].messages()[1]["content"], "from dash");
}

#[test]
fn an_empty_stdin_prompt_is_a_usage_error() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let run = go(&ws, &mock, &[]).expect(2);
    assert_has(&run.stderr, "the prompt read from stdin is empty");
}

#[test]
fn a_prompt_argument_never_reads_stdin() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    // stdin stays open and silent: reading it would hang until the watchdog.
    command
        .arg("hello")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let output = with_watchdog(child.id(), || child.wait_with_output().unwrap());
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn ctrl_c_while_waiting_for_the_server_exits_130() {
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Stall(
        Duration::from_secs(30),
        Box::new(Reply::Text("late")),
    )]);
    let mut command = turn(&ws, &mock);
    command.arg("go");
    let (run, took) = interrupt(command, || !mock.chats().is_empty());
    let run = run.expect(130);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_has(&run.stderr, "turn: interrupted");
}

#[test]
fn ctrl_c_during_a_command_kills_it_and_exits_130() {
    let ws = Workspace::new();
    let marker = ws.path("started");
    let command_line = format!(
        "touch {}; sleep 30; touch {}.after",
        marker.display(),
        marker.display()
    );
    let mock = Mock::start(vec![bash(&command_line), Reply::Text("never")]);
    let mut command = turn(&ws, &mock);
    command.arg("go");
    let (run, took) = interrupt(command, || exists(&marker));
    run.expect(130);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(!exists(&ws.path("started.after")));
    assert_eq!(mock.chats().len(), 1, "no request after the interrupt");
}

#[test]
fn a_background_job_started_with_sigint_ignored_keeps_ignoring_it() {
    use std::os::unix::process::CommandExt;
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    let ws = Workspace::new();
    let mock = Mock::start(vec![Reply::Stall(
        Duration::from_millis(500),
        Box::new(Reply::Text("finished")),
    )]);
    let mut command = turn(&ws, &mock);
    command.arg("go");
    // SAFETY: signal() is async-signal-safe; SIGINT (2) to SIG_IGN (1), as `sh -c 'turn &'` does.
    unsafe {
        command.pre_exec(|| {
            signal(2, 1);
            Ok(())
        })
    };
    let (run, _) = interrupt(command, || !mock.chats().is_empty());
    assert_eq!(run.expect(0).stdout, "finished\n");
}
