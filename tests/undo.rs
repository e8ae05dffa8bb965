//! Checkpoints and undo end to end: a turn whose commands and file tools change files is
//! taken back exactly (content, modes, symlinks), conflicts stop an undo, `.git` is never
//! touched, the size caps are said and enforced up front, an undo is itself undone by a
//! restore, `--dry-run` changes nothing, `--json` reports the checkpoint, and `turn -c` after
//! an undo tells the model.

mod util;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;
use util::*;

/// Every path beneath `dir` but turn's own (`.turn`, the state under HOME): kind, mode and
/// content or target.
fn snapshot(dir: &Path) -> BTreeMap<String, (char, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (char, u32, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == ".turn" || rel == ".local" || rel == "state" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(rel, ('l', 0, target.to_string_lossy().as_bytes().to_vec()));
        } else if meta.is_dir() {
            out.insert(rel, ('d', mode, Vec::new()));
            walk(root, &path, out);
        } else {
            out.insert(rel, ('f', mode, std::fs::read(&path).unwrap()));
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `turn` in `ws` with its checkpoint store outside it (in `state`).
fn turn_in(ws: &Workspace, mock: &Mock, state: &Path) -> Command {
    let mut command = turn(ws, mock);
    command.env("XDG_STATE_HOME", state);
    command
}

fn go_in(ws: &Workspace, mock: &Mock, state: &Path, args: &[&str]) -> Run {
    let mut command = turn_in(ws, mock, state);
    command.args(args);
    run(command)
}

/// A scratch directory for the checkpoint store, beside the workspaces.
fn state_dir() -> Workspace {
    Workspace::new()
}

fn idle() -> Mock {
    Mock::start(vec![])
}

#[test]
fn a_turn_of_commands_and_edits_is_undone_exactly() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("keep.txt", "keep\n");
    ws.write("append.txt", "a\n");
    ws.write("sed.txt", "old\n");
    ws.write("run.sh", "echo hi\n");
    ws.write("move.txt", "moving\n");
    ws.write("del.txt", "deleted\n");
    ws.write("secret.txt", "s\n");
    chmod(&ws.path("secret.txt"), 0o600);
    ws.write("dir/sub/file.txt", "deep\n");
    ws.write("edit.txt", "one\ntwo\n");
    symlink("keep.txt", ws.path("link")).unwrap();
    chmod(&ws.path("dir/sub"), 0o750);
    let before = snapshot(&ws.dir);

    let script = "echo more >> append.txt && sed -i s/old/new/ sed.txt && chmod 755 run.sh \
                  && mv move.txt moved.txt && rm del.txt && ln -sfn append.txt link \
                  && rm -r dir && mkdir -p new/deep && echo n > new/deep/n.txt \
                  && chmod 644 secret.txt && printf x > secret.txt";
    let mock = Mock::start(vec![
        bash(script),
        calls(&[
            (
                "edit_file",
                json!({"path": "edit.txt", "old_text": "two", "new_text": "TWO"}),
            ),
            (
                "write_file",
                json!({"path": "written.txt", "content": "w\n"}),
            ),
        ]),
        Reply::Text("Done."),
    ]);
    let done = go_in(&ws, &mock, &state.dir, &["change things"]).expect(0);
    assert_has(&done.stderr, "checkpoint 1:");
    assert_eq!(ws.read("append.txt"), "a\nmore\n");
    assert_eq!(ws.read("edit.txt"), "one\nTWO\n");
    assert!(!ws.path("dir").exists());
    let after = snapshot(&ws.dir);
    assert_ne!(before, after);

    // --dry-run names the paths and changes nothing.
    let dry = go_in(&ws, &idle(), &state.dir, &["--undo", "--dry-run"]).expect(0);
    assert_has(&dry.stdout, "would change");
    assert_has(&dry.stdout, "restore append.txt");
    assert_has(&dry.stdout, "remove written.txt");
    assert_has(&dry.stdout, "recreate dir/sub/file.txt");
    assert_eq!(snapshot(&ws.dir), after);

    let undo = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_has(&undo.stdout, "undo of checkpoint 1");
    assert_eq!(snapshot(&ws.dir), before, "{}", undo.stdout);

    // Nothing is left to undo in that session; the listing shows both checkpoints.
    let again = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_has(&again.stdout, "nothing to undo");
    let list = go_in(&ws, &idle(), &state.dir, &["--checkpoints"]).expect(0);
    assert_has(&list.stdout, "change things (undone)");
    assert_has(&list.stdout, "undo");

    // The undo is a checkpoint: restoring to before it brings the turn's work back.
    let redo = go_in(&ws, &idle(), &state.dir, &["--restore", "2"]).expect(0);
    assert_has(&redo.stdout, "restore of checkpoint 2");
    assert_eq!(snapshot(&ws.dir), after);
    // And the turn is live again: --undo takes it back once more.
    go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_eq!(snapshot(&ws.dir), before);
    // Nothing of the store is in the workspace.
    assert!(
        std::fs::read_dir(state.path("turn/checkpoints"))
            .unwrap()
            .count()
            == 1
    );
}

#[test]
fn a_path_changed_since_stops_the_undo_unless_forced() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    let mock = Mock::start(vec![
        bash("echo turn >> a.txt && echo turn >> b.txt"),
        Reply::Text("Done."),
    ]);
    go_in(&ws, &mock, &state.dir, &["edit"]).expect(0);
    // The user edits a.txt afterwards, in place (same size).
    std::fs::write(ws.path("a.txt"), "a\nuser\n").unwrap();
    let after = snapshot(&ws.dir);
    let refused = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(1);
    assert_has(&refused.stderr, "nothing was changed");
    assert_has(&refused.stderr, "a.txt (changed since)");
    assert!(!refused.stderr.contains("b.txt"), "{}", refused.stderr);
    assert_eq!(snapshot(&ws.dir), after);

    let forced = go_in(&ws, &idle(), &state.dir, &["--undo", "--force"]).expect(0);
    assert_has(&forced.stdout, "undo of checkpoint 1");
    assert_eq!(ws.read("a.txt"), "a\n");
    assert_eq!(ws.read("b.txt"), "b\n");
    // The user's edit is not lost for good: restoring to before the forced undo brings it back.
    go_in(&ws, &idle(), &state.dir, &["--restore", "2"]).expect(0);
    assert_eq!(ws.read("a.txt"), "a\nuser\n");
}

#[test]
fn git_repositories_are_never_recorded_or_touched() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("src.txt", "v1\n");
    ws.write("ignored.log", "log\n");
    ws.write(".gitignore", "*.log\n");
    ws.write("vendor/lib/.git", "gitdir: elsewhere\n");
    ws.write("vendor/lib/code.txt", "lib\n");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws.dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !git {
        ws.write(".git/HEAD", "ref: refs/heads/main\n");
        ws.write(".git/config", "[core]\n");
    }
    let mock = Mock::start(vec![
        bash(
            "echo v2 > src.txt && echo more >> ignored.log && echo '# turn' >> .git/config \
             && echo x >> vendor/lib/.git && echo lib2 > vendor/lib/code.txt",
        ),
        Reply::Text("Done."),
    ]);
    // Commands may write .git here (--writable-protected), so that checkpoints are shown to
    // leave it alone even then.
    let done = go_in(
        &ws,
        &mock,
        &state.dir,
        &["--json", "--writable-protected", "change"],
    )
    .expect(0);
    let event: Value = done
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "checkpoint")
        .expect("a checkpoint event");
    assert_eq!(event["id"], 1);
    assert_eq!(
        event["files"],
        json!([
            {"path": "src.txt", "change": "modified"},
            {"path": "vendor/lib/code.txt", "change": "modified"}
        ])
    );
    let git_after = snapshot(&ws.path(".git"));
    let nested_after = std::fs::read(ws.path("vendor/lib/.git")).unwrap();
    go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_eq!(ws.read("src.txt"), "v1\n");
    assert_eq!(ws.read("vendor/lib/code.txt"), "lib\n");
    assert_eq!(
        ws.read("ignored.log"),
        "log\nmore\n",
        "ignored files stay as they are"
    );
    assert_eq!(snapshot(&ws.path(".git")), git_after, ".git byte for byte");
    assert_eq!(
        std::fs::read(ws.path("vendor/lib/.git")).unwrap(),
        nested_after
    );
}

#[test]
fn files_over_the_caps_are_named_and_an_undo_needing_them_is_refused() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("big.bin", &"x".repeat(5000));
    ws.write("small.txt", "s\n");
    let mock = Mock::start(vec![
        bash("rm big.bin && echo t >> small.txt"),
        Reply::Text("Done."),
    ]);
    let mut command = turn_in(&ws, &mock, &state.dir);
    command
        .env("TURN_CHECKPOINT_MAX_FILE", "1000")
        .arg("clean up");
    let done = run(command).expect(0);
    assert_has(&done.stderr, "not kept, too big");
    assert_has(&done.stderr, "big.bin (4.9 KB)");
    let after = snapshot(&ws.dir);
    let refused = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(1);
    assert_has(&refused.stderr, "nothing was changed");
    assert_has(&refused.stderr, "earlier content of big.bin");
    assert_eq!(snapshot(&ws.dir), after);

    // The total cap: the second file that would pass it is not kept (said when the
    // workspace is recorded, before the turn's first command).
    let ws = Workspace::new();
    ws.write("one.txt", &"1".repeat(600));
    ws.write("two.txt", &"2".repeat(600));
    let mock = Mock::start(vec![bash("true"), Reply::Text("Nothing to do.")]);
    let mut command = turn_in(&ws, &mock, &state.dir);
    command.env("TURN_CHECKPOINT_MAX_TOTAL", "1000").arg("look");
    let done = run(command).expect(0);
    assert_has(&done.stderr, "the store is full");
}

#[test]
fn continuing_after_an_undo_tells_the_model_which_files_were_restored() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("notes.txt", "first\n");
    let mock = Mock::start(vec![
        calls(&[(
            "write_file",
            json!({"path": "notes.txt", "content": "rewritten\n"}),
        )]),
        Reply::Text("Rewrote it."),
    ]);
    go_in(&ws, &mock, &state.dir, &["rewrite notes.txt"]).expect(0);
    go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_eq!(ws.read("notes.txt"), "first\n");

    let next = Mock::start(vec![Reply::Text("Understood.")]);
    go_in(&ws, &next, &state.dir, &["-c", "what now?"]).expect(0);
    let sent = next.chats()[0].messages().clone();
    let last = sent.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_has(&last, "took back checkpoint 1 (rewrite notes.txt)");
    assert_has(&last, "notes.txt");
    assert_has(&last, "what now?");
}

#[test]
fn the_repl_undoes_with_a_command() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("f.txt", "1\n");
    let mock = Mock::start(vec![
        bash("echo 2 >> f.txt"),
        Reply::Text("Appended."),
        Reply::Text("Noted."),
    ]);
    let mut command = turn_in(&ws, &mock, &state.dir);
    command.arg("-i");
    let run = run_with_input(&mut command, Some("append\n/undo\nand now?\n")).expect(0);
    assert_has(&run.stderr, "undo of checkpoint 1");
    assert_eq!(ws.read("f.txt"), "1\n");
    let sent = mock.chats()[2].messages().clone();
    let last = sent.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_has(&last, "took back checkpoint 1");
    assert_has(&last, "and now?");
}

#[test]
fn undo_is_a_flag_and_the_word_undo_is_a_task() {
    let ws = Workspace::new();
    let state = state_dir();
    let mock = Mock::start(vec![Reply::Text("What should I undo?")]);
    let run = go_in(&ws, &mock, &state.dir, &["undo"]).expect(0);
    assert_eq!(run.stdout, "What should I undo?\n");
    assert_eq!(mock.chats().len(), 1);
}

#[test]
fn prune_deletes_the_workspace_store() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("a.txt", "a\n");
    let mock = Mock::start(vec![bash("echo b >> a.txt"), Reply::Text("Done.")]);
    go_in(&ws, &mock, &state.dir, &["append"]).expect(0);
    let pruned = go_in(&ws, &idle(), &state.dir, &["--prune-checkpoints"]).expect(0);
    assert_has(&pruned.stdout, "pruned 1 checkpoint store");
    let list = go_in(&ws, &idle(), &state.dir, &["--checkpoints"]).expect(0);
    assert_has(&list.stdout, "no checkpoints");
    assert_eq!(ws.read("a.txt"), "a\nb\n");
}

#[test]
fn undo_again_takes_back_the_turn_before_in_the_same_session() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    let first = Mock::start(vec![bash("echo 1 >> a.txt"), Reply::Text("One.")]);
    go_in(&ws, &first, &state.dir, &["first"]).expect(0);
    let second = Mock::start(vec![bash("echo 2 >> b.txt"), Reply::Text("Two.")]);
    go_in(&ws, &second, &state.dir, &["-c", "second"]).expect(0);
    assert_eq!(
        (ws.read("a.txt"), ws.read("b.txt")),
        ("a\n1\n".into(), "b\n2\n".into())
    );

    let undo = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_has(&undo.stdout, "undo of checkpoint 2 (second)");
    assert_eq!(
        (ws.read("a.txt"), ws.read("b.txt")),
        ("a\n1\n".into(), "b\n".into())
    );
    let undo = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_has(&undo.stdout, "undo of checkpoint 1 (first)");
    assert_eq!(
        (ws.read("a.txt"), ws.read("b.txt")),
        ("a\n".into(), "b\n".into())
    );
    // The session heard of both undos.
    let sessions = std::fs::read_dir(ws.path(".turn/sessions")).unwrap();
    let session = sessions.map(|e| e.unwrap().path()).next().unwrap();
    let text = std::fs::read_to_string(session).unwrap();
    assert_eq!(text.matches("with turn's undo").count(), 2, "{text}");
}

/// The `--json` checkpoint event of a run, if any.
fn checkpoint_event(run: &Run) -> Option<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "checkpoint")
}

#[test]
fn edits_between_turns_are_not_the_next_turns_change() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("f.txt", "1\n");
    ws.write("g.txt", "g\n");
    let first = Mock::start(vec![bash("echo 2 >> f.txt"), Reply::Text("One.")]);
    go_in(&ws, &first, &state.dir, &["first"]).expect(0);
    let store = std::fs::read_dir(state.path("turn/checkpoints"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let index = std::fs::read(store.join("index")).unwrap();

    // The user edits and creates files; a turn that only reads and answers records nothing
    // (the workspace is not even scanned: the index is as the first turn left it).
    std::fs::write(ws.path("f.txt"), "1\n2\nuser\n").unwrap();
    ws.write("u.txt", "mine\n");
    let reads = Mock::start(vec![
        calls(&[("read_file", json!({"path": "f.txt"}))]),
        Reply::Text("Read."),
    ]);
    let quiet = go_in(&ws, &reads, &state.dir, &["--json", "look"]).expect(0);
    assert_eq!(checkpoint_event(&quiet), None, "{}", quiet.stdout);
    assert_eq!(std::fs::read(store.join("index")).unwrap(), index);

    // More edits; then a turn that reads, then runs a command: only the command's change is
    // its checkpoint, the user's edits before it are not.
    std::fs::write(ws.path("g.txt"), "g\nuser\n").unwrap();
    let mock = Mock::start(vec![
        calls(&[("read_file", json!({"path": "g.txt"}))]),
        bash("echo h > h.txt"),
        Reply::Text("Two."),
    ]);
    let done = go_in(&ws, &mock, &state.dir, &["--json", "second"]).expect(0);
    let event = checkpoint_event(&done).expect("a checkpoint event");
    assert_eq!(event["id"], 2);
    assert_eq!(
        event["files"],
        json!([{"path": "h.txt", "change": "created"}])
    );
    let undo = go_in(&ws, &idle(), &state.dir, &["--no-session", "--undo"]).expect(0);
    assert_has(&undo.stdout, "undo of checkpoint 2");
    assert!(!ws.path("h.txt").exists());
    assert_eq!(ws.read("f.txt"), "1\n2\nuser\n");
    assert_eq!(ws.read("g.txt"), "g\nuser\n");
    assert_eq!(ws.read("u.txt"), "mine\n");
    // The first turn's file was edited by the user since: named, and left alone.
    let refused = go_in(&ws, &idle(), &state.dir, &["--no-session", "--undo"]).expect(1);
    assert_has(&refused.stderr, "f.txt (changed since)");
    assert_eq!(ws.read("f.txt"), "1\n2\nuser\n");
}

#[test]
fn one_turn_at_a_time_holds_a_workspace_store() {
    let ws = Workspace::new();
    let state = state_dir();
    ws.write("a.txt", "a\n");
    let mock = Mock::start(vec![bash("echo b >> a.txt"), Reply::Text("Done.")]);
    go_in(&ws, &mock, &state.dir, &["append"]).expect(0);
    // Another turn in this workspace holds the store's lock (as a running turn does).
    let stores = state.dir.join("turn/checkpoints");
    let store = std::fs::read_dir(&stores)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let held = std::fs::File::open(store.join("lock")).unwrap();
    held.try_lock().unwrap();
    let undo = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(1);
    assert_has(
        &undo.stderr,
        "another turn in this workspace is using its checkpoints",
    );
    assert_eq!(ws.read("a.txt"), "a\nb\n");
    let list = go_in(&ws, &idle(), &state.dir, &["--checkpoints"]).expect(0);
    assert_has(&list.stdout, "append");
    let mock = Mock::start(vec![bash("echo c >> a.txt"), Reply::Text("Done.")]);
    let second = go_in(&ws, &mock, &state.dir, &["append"]).expect(0);
    assert_has(&second.stderr, "checkpoints are off (no undo)");
    let pruned = go_in(&ws, &idle(), &state.dir, &["--prune-checkpoints"]).expect(0);
    assert_has(&pruned.stdout, "a turn is using it");
    // Let go: the second turn recorded nothing, and its change is a change since the first
    // turn, which a restore to before that turn stops on.
    drop(held);
    let nothing = go_in(&ws, &idle(), &state.dir, &["--undo"]).expect(0);
    assert_has(&nothing.stdout, "nothing to undo");
    let refused = go_in(&ws, &idle(), &state.dir, &["--restore", "1"]).expect(1);
    assert_has(&refused.stderr, "a.txt (changed since)");
    assert_eq!(ws.read("a.txt"), "a\nb\nc\n");
}
