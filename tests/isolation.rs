//! The Landlock sandbox and the approval modes, through the whole binary. The workspace and
//! the "outside" live under target/tmp, not the system temp dir (which commands see as a
//! private tmpfs; see tests/leftovers.rs); the child's TMPDIR is a third directory.
//!
//! Where the kernel has no Landlock these tests print why and return: there is nothing to test.

#[macro_use]
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

// ---- The second layer: namespaces, capabilities, seccomp, environment, lifetime ----

/// Whether commands get namespaces here, as `turn --sandbox-check` finds (cached).
macro_rules! require_python {
    () => {
        if Command::new("python3").arg("-c").arg("0").output().is_err() {
            println!("skipped: no python3 to issue the system calls");
            return;
        }
    };
}

impl Place {
    /// Like `bash`, but turn runs where user namespaces are forbidden (the fallback).
    fn bash_without_namespaces(&self, command: &str, args: &[&str]) -> (Run, String) {
        let mock = Mock::start(vec![bash(command), Reply::Text("ok")]);
        let mut args = args.to_vec();
        args.push("go");
        let run = run(without_namespaces(&self.turn(&mock, &args)));
        let told = mock
            .chats()
            .get(1)
            .map(|c| c.last_content())
            .unwrap_or_default();
        (run, told)
    }
}

#[test]
fn no_device_nodes_even_in_the_workspace() {
    require_landlock!();
    let place = Place::new();
    let (_, told) = place.bash(
        "mknod disk b 8 0; mknod mem c 1 1; mkfifo fifo && echo fifo-ok",
        &[],
    );
    assert!(told.contains("fifo-ok"), "a FIFO is not a device: {told}");
    assert_eq!(told.matches("mknod: ").count(), 2, "{told}");
    assert!(!exists(&place.ws.path("disk")) && !exists(&place.ws.path("mem")));
}

/// Mode, mtime and whether the `user.turn` attribute is there, for `path`.
fn metadata_of(path: &std::path::Path) -> (u32, i64, bool) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).unwrap();
    let xattr = Command::new("python3")
        .args(["-c", "import os,sys; os.getxattr(sys.argv[1], 'user.turn')"])
        .arg(path)
        .output()
        .unwrap()
        .status
        .success();
    (meta.mode(), meta.mtime(), xattr)
}

/// chmod, chown (even to the owner it has), utime and setxattr on `target`, each reporting.
fn metadata_changes(target: &str) -> String {
    format!(
        "chmod 777 {t} && echo chmod-ok; chown $(id -u):$(id -g) {t} && echo chown-ok; \
         touch -d 2001-01-01 {t} && echo utime-ok; \
         python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.turn\", b\"1\")' {t} && echo xattr-ok",
        t = target
    )
}

#[test]
fn metadata_outside_the_workspace_cannot_change() {
    require_namespaces!();
    require_python!();
    let place = Place::new();
    let file = place.outside("theirs.txt");
    std::fs::write(&file, "x").unwrap();
    let dir = place.root.join("outside");
    let before = (metadata_of(&file), metadata_of(&dir));
    let script = format!(
        "{}; {}; touch run.sh && chmod +x run.sh && echo inside-ok",
        metadata_changes(file.to_str().unwrap()),
        metadata_changes(dir.to_str().unwrap())
    );
    let (_, told) = place.bash(&script, &[]);
    assert!(
        told.contains("inside-ok"),
        "chmod +x in the workspace works: {told}"
    );
    for change in ["chmod-ok", "chown-ok", "utime-ok", "xattr-ok"] {
        assert!(!told.contains(change), "{change}: {told}");
    }
    assert_has(&told, "Read-only file system");
    assert_eq!((metadata_of(&file), metadata_of(&dir)), before);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(place.ws.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
}

#[test]
fn read_only_mode_keeps_workspace_metadata_too() {
    require_namespaces!();
    require_python!();
    let place = Place::new();
    place.ws.write("kept.txt", "x");
    let file = place.ws.path("kept.txt");
    let before = metadata_of(&file);
    let (_, told) = place.bash(&metadata_changes("kept.txt"), &["--sandbox", "read-only"]);
    for change in ["chmod-ok", "chown-ok", "utime-ok", "xattr-ok"] {
        assert!(!told.contains(change), "{change}: {told}");
    }
    assert_eq!(metadata_of(&file), before, "{told}");
}

/// Python that reports, for each attack, `NAME ok` or `NAME refused ERRNO`.
const ATTEMPT: &str = r#"
import ctypes, errno, fcntl, os, sys, termios
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, "refused", errno.errorcode.get(e.errno, e.errno))
def checked(r):
    if r < 0 or r == -1:
        n = ctypes.get_errno()
        raise OSError(n, os.strerror(n))
    return r
"#;

fn python(body: &str) -> String {
    format!("python3 - <<'EOF'\n{ATTEMPT}\n{body}\nEOF")
}

#[test]
fn commands_cannot_push_keystrokes_into_a_terminal() {
    require_python!();
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        println!("skipped: seccomp is only set up on x86-64 and aarch64");
        return;
    }
    let place = Place::new();
    // turn runs on a pseudo-terminal, as in a user's shell.
    let body = r#"
attempt("open-tty", lambda: os.open("/dev/tty", os.O_RDONLY))
attempt("write-tty", lambda: os.open("/dev/tty", os.O_WRONLY))
for fd in (0, 1, 2):
    attempt(f"tiocsti-{fd}", lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"x"))
attempt("tioclinux", lambda: fcntl.ioctl(1, 0x541C, b"\x06"))
"#;
    let mock = Mock::start(vec![bash(&python(body)), Reply::Text("ok")]);
    on_a_terminal(&place, &mock, "--approve never", "");
    let told = mock.chats()[1].last_content();
    // No controlling terminal (its own session), and Landlock refuses writing one anyway.
    assert_has(&told, "open-tty refused ENXIO");
    assert_has(&told, "write-tty refused");
    for fd in 0..3 {
        assert_has(&told, &format!("tiocsti-{fd} refused EPERM"));
    }
    assert_has(&told, "tioclinux refused EPERM");
}

/// Runs `body` (Python with `attempt`) while turn's own pid is in `turn.pid`.
fn against_turn(place: &Place, body: &str, fallback: bool) -> String {
    let script = format!(
        "while [ ! -s turn.pid ]; do sleep 0.05; done; {}",
        python(&format!("pid = int(open('turn.pid').read())\n{body}"))
    );
    let mock = Mock::start(vec![bash(&script), Reply::Text("ok")]);
    let mut command = place.turn(&mock, &["go"]);
    if fallback {
        command = without_namespaces(&command);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    // Under unshare, turn is exec'd in the same process.
    std::fs::write(place.ws.path("turn.pid"), child.id().to_string()).unwrap();
    let run = Run::from(with_watchdog(child.id(), || {
        child.wait_with_output().unwrap()
    }));
    run.expect(0);
    mock.chats()[1].last_content()
}

const AGAINST_TURN: &str = r#"
PTRACE_ATTACH = 16
attempt("ptrace", lambda: checked(libc.ptrace(PTRACE_ATTACH, pid, 0, 0)))
attempt("pidfd_getfd", lambda: checked(libc.syscall(438, checked(libc.syscall(434, pid, 0)), 1, 0)))
buf = ctypes.create_string_buffer(8)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(0x400000, 8)
attempt("process_vm_readv", lambda: checked(libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
attempt("environ", lambda: open(f"/proc/{pid}/environ", "rb").read())
attempt("mem", lambda: open(f"/proc/{pid}/mem", "rb").read(1))
attempt("fd", lambda: os.open(f"/proc/{pid}/fd/1", os.O_WRONLY))
"#;

fn assert_all_refused(told: &str, names: &[&str]) {
    for name in names {
        assert!(
            told.contains(&format!("{name} refused")),
            "{name} was not refused:\n{told}"
        );
    }
}

#[test]
fn commands_cannot_ptrace_turn_or_take_its_descriptors() {
    require_python!();
    let place = Place::new();
    let told = against_turn(&place, AGAINST_TURN, false);
    let all = [
        "ptrace",
        "pidfd_getfd",
        "process_vm_readv",
        "environ",
        "mem",
        "fd",
    ];
    assert_all_refused(&told, &all);
    if fallback_possible() {
        let told = against_turn(&place, AGAINST_TURN, true);
        assert_all_refused(&told, &all);
    } else {
        println!("fallback part skipped: cannot forbid user namespaces here (unshare -Ur)");
    }
}

/// Python attempts to reach a TCP listener and a UDP socket of the host at `tcp`/`udp`.
fn network_attempts(tcp: u16, udp: u16) -> String {
    python(&format!(
        r#"
import socket
def connect(proto):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    s.settimeout(3)
    s.connect(("127.0.0.1", {tcp}))
attempt("tcp", lambda: connect(0))
attempt("mptcp", lambda: connect(262))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", {udp})))
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect("/run/no-such.sock"))
attempt("socketpair", lambda: socket.socketpair())
"#
    ))
}

#[test]
fn no_network_blocks_tcp_mptcp_udp_and_unix_sockets() {
    require_python!();
    let place = Place::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let mptcp = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    let script = network_attempts(tcp, udp_port);
    let drain = || {
        let mut got = 0;
        while listener.accept().is_ok() {
            got += 1;
        }
        let mut buf = [0; 16];
        while udp.recv(&mut buf).is_ok() {
            got += 1;
        }
        got
    };

    // Without the flag all of it gets through: the attempts can succeed.
    let (_, told) = place.bash(&script, &[]);
    assert!(told.contains("tcp ok") && told.contains("udp ok"), "{told}");
    assert!(!mptcp || told.contains("mptcp ok"), "{told}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(drain() >= 2);

    let mut runs = vec![("namespaces", place.bash(&script, &["--no-network"]))];
    if fallback_possible() {
        let fallback = place.bash_without_namespaces(&script, &["--no-network"]);
        runs.push(("fallback", fallback));
    }
    for (how, (_, told)) in runs {
        assert_all_refused(&told, &["tcp", "mptcp", "udp", "unix"]);
        assert!(told.contains("socketpair ok"), "{how}: {told}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(drain(), 0, "{how}: something reached the host");
    }
}

/// Waits until the mock has received `n` chat requests.
fn wait_for_chats(mock: &Mock, n: usize) {
    wait_for(|| mock.chats().len() >= n);
}

fn setsid_sleep_is_gone(fallback: bool) {
    let place = Place::new();
    // After a timeout: checked while turn still runs (the model's next answer is slow).
    let first = unique_sleep();
    let mock = Mock::start(vec![
        bash(&format!("setsid sleep {first} & sleep 60")),
        Reply::Stall(
            std::time::Duration::from_secs(2),
            Box::new(Reply::Text("ok")),
        ),
    ]);
    let mut command = place.turn(&mock, &["--timeout", "1", "go"]);
    if fallback {
        command = without_namespaces(&command);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    wait_for_chats(&mock, 2);
    assert!(
        !running_with_arg(&first),
        "the setsid sleep outlived --timeout"
    );
    Run::from(with_watchdog(child.id(), || {
        child.wait_with_output().unwrap()
    }))
    .expect(0);

    // After turn's exit: a job that lives on between commands goes when turn does.
    let second = unique_sleep();
    let mock = Mock::start(vec![
        bash(&format!(
            "setsid sleep {second} > /dev/null 2>&1 & echo started"
        )),
        // The background shell may not have become `sleep` yet on a loaded machine: look for
        // up to 5 s.
        bash(&format!(
            "for i in $(seq 50); do ps -eo args | grep -q '^sleep {second}' && \
             {{ echo still-there; break; }}; sleep 0.1; done"
        )),
        Reply::Text("ok"),
    ]);
    let mut command = place.turn(&mock, &["go"]);
    if fallback {
        command = without_namespaces(&command);
    }
    run(command).expect(0);
    assert_eq!(mock.chats()[2].last_content(), "still-there\n");
    assert!(!running_with_arg(&second), "the setsid sleep outlived turn");
}

#[test]
fn a_setsid_child_is_gone_after_the_timeout_and_after_turn() {
    setsid_sleep_is_gone(false);
    if fallback_possible() {
        setsid_sleep_is_gone(true);
    } else {
        println!("fallback part skipped: cannot forbid user namespaces here (unshare -Ur)");
    }
}

#[test]
fn secrets_and_sockets_stay_out_of_the_environment() {
    let place = Place::new();
    let mock = Mock::start(vec![bash("env | sort"), Reply::Text("ok")]);
    let mut command = place.turn(&mock, &["--pass-env", "GITHUB_TOKEN", "go"]);
    command
        .env("OPENAI_API_KEY", "sk-secret-1")
        .env("GITHUB_TOKEN", "ghp-passed-2")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret-3")
        .env("PGPASSWORD", "pg-secret-4")
        .env("DATABASE_URL", "postgres://app:db-secret-5@db/app")
        .env("TMUX", "/tmp/tmux-0/default,1,0")
        .env("SSH_AUTH_SOCK", "/tmp/agent.sock")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
        .env("KEEP_ME", "plain-6");
    run(command).expect(0);
    let told = mock.chats()[1].last_content();
    for secret in [
        "sk-secret-1",
        "aws-secret-3",
        "pg-secret-4",
        "db-secret-5",
        "TMUX=",
        "SSH_AUTH_SOCK=",
        "DBUS_SESSION_BUS_ADDRESS=",
    ] {
        assert!(
            !told.contains(secret),
            "{secret} reached the command:\n{told}"
        );
    }
    assert_has(&told, "GITHUB_TOKEN=ghp-passed-2");
    assert_has(&told, "KEEP_ME=plain-6");
}

#[test]
fn sandbox_check_reports_the_layers() {
    let out = Command::new(env!("CARGO_BIN_EXE_turn"))
        .arg("--sandbox-check")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    for layer in [
        "namespaces",
        "Landlock",
        "seccomp filter",
        "a command starts",
    ] {
        assert_has(&report, layer);
    }
    let complete = report.contains("every layer is active");
    assert_eq!(
        out.status.code(),
        Some(if complete { 0 } else { 1 }),
        "{report}"
    );
    if fallback_possible() {
        let mut check = Command::new(env!("CARGO_BIN_EXE_turn"));
        check
            .arg("--sandbox-check")
            .current_dir(env!("CARGO_TARGET_TMPDIR"));
        let out = without_namespaces(&check).output().unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert_has(&report, "no: creating the namespaces");
        assert_eq!(out.status.code(), Some(1), "{report}");
        let mut strict = Command::new(env!("CARGO_BIN_EXE_turn"));
        strict
            .args(["--require-isolation", "x"])
            .current_dir(env!("CARGO_TARGET_TMPDIR"));
        let out = without_namespaces(&strict).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_has(&String::from_utf8_lossy(&out.stderr), "--require-isolation");
    }
}
