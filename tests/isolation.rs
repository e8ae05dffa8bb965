//! The Landlock sandbox and the approval modes, through the whole binary. The workspace and
//! the "outside" live under target/tmp, not the system temp dir (which the sandbox lets
//! commands write); the child's TMPDIR is a third, private directory.
//!
//! Where the kernel has no Landlock these tests print why and return: there is nothing to test.

mod util;

use serde_json::json;
use std::os::raw::c_long;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use util::*;

extern "C" {
    fn syscall(number: c_long, ...) -> c_long;
}

fn landlock_abi() -> Option<c_long> {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only reports the ABI version.
    let abi = unsafe { syscall(444, std::ptr::null::<u8>(), 0 as c_long, 1 as c_long) };
    (abi > 0).then_some(abi)
}

macro_rules! require_landlock {
    () => {
        if landlock_abi().is_none() {
            println!("skipped: this kernel has no Landlock");
            return;
        }
    };
}

/// A write the sandbox refused: Landlock says "Permission denied", the read-only mounts of the
/// namespace layer (which the kernel checks first) "Read-only file system".
fn refused(told: &str) -> bool {
    told.contains("Permission denied") || told.contains("Read-only file system")
}

fn assert_refused(told: &str) {
    assert!(refused(told), "expected a refused write in:\n{told}");
}

/// A workspace, a directory beside it, and a private temp dir, outside the system temp dir.
struct Place {
    root: PathBuf,
    ws: Workspace,
}

impl Place {
    fn new() -> Place {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "isolation-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        for dir in ["ws", "outside", "tmp"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let ws = Workspace {
            dir: root.join("ws").canonicalize().unwrap(),
        };
        Place {
            root: root.canonicalize().unwrap(),
            ws,
        }
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.root.join("outside").join(name)
    }

    fn turn(&self, mock: &Mock, args: &[&str]) -> Command {
        let mut command = turn(&self.ws, mock);
        command.env("TMPDIR", self.root.join("tmp")).args(args);
        command
    }

    /// Runs one bash command through turn; returns the run and what the model was told.
    fn bash(&self, command: &str, args: &[&str]) -> (Run, String) {
        let mock = Mock::start(vec![bash(command), Reply::Text("ok")]);
        let mut args = args.to_vec();
        args.push("go");
        let run = run(self.turn(&mock, &args));
        let told = mock
            .chats()
            .get(1)
            .map(|c| c.last_content())
            .unwrap_or_default();
        (run, told)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn workspace_write_allows_the_workspace_and_temp_dir_only() {
    require_landlock!();
    let place = Place::new();
    let outside = place.outside("escaped");
    let script = format!(
        "touch inside.txt && echo inside-ok; touch ../outside/escaped; touch {}/../outside/dotdot; \
         touch \"$TMPDIR/tmp-ok\" && echo tmp-ok; echo quiet > /dev/null && echo null-ok",
        place.ws.dir.display()
    );
    let (run, told) = place.bash(&script, &[]);
    run.expect(0);
    assert!(exists(&place.ws.path("inside.txt")), "{told}");
    assert!(
        told.contains("inside-ok") && told.contains("tmp-ok") && told.contains("null-ok"),
        "{told}"
    );
    assert_refused(&told);
    assert!(
        !exists(&outside) && !exists(&place.outside("dotdot")),
        "{told}"
    );
}

#[test]
fn symlinks_do_not_lead_out() {
    require_landlock!();
    let place = Place::new();
    std::os::unix::fs::symlink(place.root.join("outside"), place.ws.path("link")).unwrap();
    let (_, told) = place.bash(
        "echo x > link/via-link; ln -s ../outside l2 && touch l2/via-new-link; ls link",
        &[],
    );
    assert_refused(&told);
    assert!(
        !exists(&place.outside("via-link")) && !exists(&place.outside("via-new-link")),
        "{told}"
    );
}

#[test]
fn read_only_blocks_writes_inside_too() {
    require_landlock!();
    let place = Place::new();
    place.ws.write("kept.txt", "original");
    let mock = Mock::start(vec![
        calls(&[
            (
                "bash",
                json!({"command": "touch new.txt; echo changed > kept.txt; cat kept.txt; echo x > /dev/null && echo null-ok"}),
            ),
            (
                "write_file",
                json!({"path": "kept.txt", "content": "overwritten"}),
            ),
            (
                "edit_file",
                json!({"path": "kept.txt", "old_text": "original", "new_text": "edited"}),
            ),
        ]),
        Reply::Text("ok"),
    ]);
    run(place.turn(&mock, &["--sandbox", "read-only", "go"])).expect(0);
    let messages = mock.chats()[1].messages().clone();
    let told = messages[3]["content"].as_str().unwrap();
    assert!(
        refused(told) && told.contains("original") && told.contains("null-ok"),
        "{told}"
    );
    for message in &messages[4..6] {
        assert_eq!(
            message["content"],
            "Error: the sandbox is read-only (--sandbox read-only): no file can be written"
        );
    }
    assert_eq!(place.ws.read("kept.txt"), "original");
    assert!(!exists(&place.ws.path("new.txt")));
}

#[test]
fn writable_adds_a_directory() {
    require_landlock!();
    let place = Place::new();
    let extra = place.root.join("outside");
    let script = format!("touch {}/allowed && echo ok", extra.display());
    let (run, told) = place.bash(&script, &["--writable", extra.to_str().unwrap()]);
    run.expect(0);
    assert_eq!(told, "ok\n");
    assert!(exists(&place.outside("allowed")));
}

#[test]
fn no_network_refuses_tcp_connections() {
    require_landlock!();
    if landlock_abi().unwrap_or(0) < 4 {
        println!("skipped: Landlock ABI below 4 has no network rules");
        return;
    }
    let place = Place::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'");
    let (_, told) = place.bash(&connect, &[]);
    assert!(told.contains("connected"), "without --no-network: {told}");
    let (_, told) = place.bash(&connect, &["--no-network"]);
    assert!(
        told.contains("Permission denied") && !told.contains("connected"),
        "{told}"
    );
}

#[test]
fn sandbox_off_warns_and_confines_nothing() {
    let place = Place::new();
    let script = format!("touch {}", place.outside("free").display());
    let (run, _) = place.bash(&script, &["--sandbox", "off"]);
    assert_has(&run.stderr, "warning: --sandbox off");
    assert!(exists(&place.outside("free")));
}

#[test]
fn sandbox_flags_that_cannot_work_are_usage_errors() {
    let place = Place::new();
    let mock = Mock::start(vec![]);
    for (args, needle) in [
        (
            vec!["--sandbox", "off", "--no-network", "x"],
            "--no-network needs the Landlock sandbox",
        ),
        (
            vec!["--sandbox", "read-only", "--writable", "/tmp", "x"],
            "--writable goes with",
        ),
        (
            vec!["--writable", "/no/such/dir", "x"],
            "cannot use --writable /no/such/dir",
        ),
        (
            vec!["--approve", "ask", "x"],
            "--approve ask needs a terminal",
        ),
    ] {
        let run = run(place.turn(&mock, &args)).expect(2);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    let mut env_mode = place.turn(&mock, &["x"]);
    env_mode.env("TURN_SANDBOX", "paranoid");
    assert!(run(env_mode).expect(2).stderr.contains("TURN_SANDBOX"));
}

/// Runs turn on a pseudo-terminal (util-linux `script`), typing `answers` at its questions.
fn on_a_terminal(place: &Place, mock: &Mock, args: &str, answers: &str) -> Run {
    let binary = env!("CARGO_BIN_EXE_turn");
    let line = format!("{binary} --no-session {args} go");
    let command = place.turn(mock, &[]);
    let mut script = Command::new("script");
    script
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&place.ws.dir);
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            script.env(key, value);
        }
    }
    script.stdin(Stdio::piped());
    run_with_input(&mut script, Some(answers))
}

#[test]
fn ask_mode_puts_each_action_to_the_user() {
    let place = Place::new();
    let mock = Mock::start(vec![
        bash("touch denied.txt"),
        bash("touch allowed.txt"),
        Reply::Text("ok"),
    ]);
    let run = on_a_terminal(&place, &mock, "--approve ask", "n\ny\n");
    assert_has(&run.stdout, "turn wants to run:");
    let chats = mock.chats();
    assert_eq!(chats[1].last_content(), "Error: Denied by user");
    assert_eq!(chats[2].last_content(), "(no output)");
    assert!(!exists(&place.ws.path("denied.txt")) && exists(&place.ws.path("allowed.txt")));
}

#[test]
fn always_stops_the_questions_but_not_for_flagged_commands() {
    let place = Place::new();
    let mock = Mock::start(vec![
        calls(&[("write_file", json!({"path": "a.txt", "content": "a"}))]),
        bash("touch b.txt"),
        bash("sudo touch c.txt"),
        Reply::Text("ok"),
    ]);
    let run = on_a_terminal(&place, &mock, "--approve ask", "always\nn\n");
    assert_has(&run.stdout, "turn wants to write 1 bytes to a.txt");
    assert_has(&run.stdout, "warning: privilege escalation (sudo)");
    let chats = mock.chats();
    assert_eq!(chats[1].last_content(), "Created a.txt (1 bytes)");
    assert_eq!(
        chats[2].last_content(),
        "(no output)",
        "not asked after always"
    );
    assert_eq!(chats[3].last_content(), "Error: Denied by user");
}

#[test]
fn dangerous_mode_asks_only_about_flagged_commands() {
    let place = Place::new();
    let mock = Mock::start(vec![
        bash("echo plain"),
        bash("sudo echo flagged"),
        Reply::Text("ok"),
    ]);
    let run = on_a_terminal(&place, &mock, "--approve dangerous", "n\n");
    assert_eq!(
        run.stdout.matches("turn wants to run:").count(),
        1,
        "{}",
        run.stdout
    );
    let chats = mock.chats();
    assert_eq!(chats[1].last_content(), "plain\n");
    assert_eq!(chats[2].last_content(), "Error: Denied by user");
}

#[test]
fn a_session_file_outside_the_workspace_is_still_recorded() {
    require_landlock!();
    let place = Place::new();
    let session = place.outside("task.jsonl");
    let mock = Mock::start(vec![bash("touch ../outside/not-this"), Reply::Text("done")]);
    run(place.turn(&mock, &["--session", session.to_str().unwrap(), "go"])).expect(0);
    let recorded = std::fs::read_to_string(&session).unwrap();
    assert_eq!(
        recorded.lines().count(),
        4,
        "user, call, result, answer:\n{recorded}"
    );
    assert!(
        !exists(&place.outside("not-this")),
        "the model still cannot write there"
    );
}
