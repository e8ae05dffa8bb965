//! The file tools: `read_file`, `write_file` and `edit_file`. Paths are resolved by
//! `sandbox::safe_path`, so no path, symlink or `..` leads outside the workspace, and what it
//! resolved is opened through `sandbox::fsafe` from the workspace's directory descriptor with
//! no symlink followed, so a path changed after the check cannot lead outside either. Only
//! regular files are read or written; writes go through a temp file and a rename, keeping the
//! file's owner, mode and hard links (see `fsafe::Dir::replace`).

use super::{nearmatch, replace, truncate, Context, Output};
use crate::approve::{Action, Approver};
use crate::sandbox::{self, fsafe, Node};
use serde::Deserialize;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Lines `read_file` returns when the model gives no `limit`.
pub(super) const DEFAULT_LINES: usize = 2000;

/// Longer lines are cut: minified files would otherwise eat the whole budget in one line.
const MAX_LINE_CHARS: usize = 2000;
/// What follows a line read_file cut at `MAX_LINE_CHARS`.
pub const LINE_CUT: &str = "… [line cut at";

#[derive(Deserialize)]
pub(super) struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
pub(super) struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
pub(super) struct EditArgs {
    path: String,
    old_text: String,
    new_text: String,
    #[serde(default)]
    replace_all: bool,
}

pub(super) fn resolve(path: &str, ctx: &Context) -> Result<PathBuf, String> {
    sandbox::safe_path(ctx.workspace, path, lookup)
}

/// The real filesystem, as `sandbox::safe_path` sees it.
fn lookup(path: &Path) -> Node {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::read_link(path).map_or(Node::Entry, Node::Link)
        }
        Ok(_) => Node::Entry,
        Err(_) => Node::Missing,
    }
}

/// A resolved path relative to the workspace (empty for the workspace itself).
fn relative<'p>(path: &'p Path, ctx: &Context) -> &'p Path {
    path.strip_prefix(ctx.workspace).unwrap_or(path)
}

/// What the model is told when `name` cannot be opened.
fn opening(err: &io::Error, name: &dyn std::fmt::Display) -> String {
    if fsafe::is_symlink(err) {
        return format!(
            "{name} changed while turn was opening it (a symbolic link appeared in its path);              nothing was done"
        );
    }
    if fsafe::is_not_regular(err) {
        // A FIFO or device would block the read or never end.
        return format!("{name} is not a regular file (a FIFO, socket or device)");
    }
    match err.kind() {
        io::ErrorKind::NotFound => format!("{name} does not exist"),
        io::ErrorKind::IsADirectory => format!("{name} is a directory; list it with bash (ls)"),
        io::ErrorKind::NotADirectory => format!("a parent of {name} is not a directory"),
        _ => format!("cannot open {name}: {err}"),
    }
}

/// How a path is shown to the model: relative to the workspace.
fn shown<'a>(path: &'a Path, ctx: &Context) -> std::path::Display<'a> {
    path.strip_prefix(ctx.workspace)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
}

pub(super) fn read_file(args: ReadArgs, ctx: &Context) -> Result<Output, String> {
    let path = resolve(&args.path, ctx)?;
    let name = shown(&path, ctx);
    let file = ctx
        .root
        .open_read(relative(&path, ctx))
        .map_err(|e| opening(&e, &name))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    if reader
        .fill_buf()
        .map_err(|e| format!("cannot read {name}: {e}"))?
        .contains(&0)
    {
        return Err(format!(
            "{name} is a binary file ({size} bytes); it cannot be shown as text"
        ));
    }
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LINES).max(1);
    let mut text = String::new();
    let (mut total, mut last, mut full) = (0, 0, false);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read {name}: {e}"))?
            == 0
        {
            break;
        }
        total += 1;
        // Lines outside the page are only counted, and the page ends at `limit` lines or when
        // it would pass --max-output: nothing holds more than one page.
        if total < first || full {
            continue;
        }
        if total >= first.saturating_add(limit) {
            full = true;
            continue;
        }
        let body = std::str::from_utf8(&line).map_err(|_| {
            format!("{name} is not valid UTF-8 text (line {total}); inspect it with bash (file, iconv, xxd)")
        })?;
        let body = body.trim_end_matches(['\n', '\r']);
        let mut entry = format!("{total:>6}\t");
        if body.chars().count() > MAX_LINE_CHARS {
            let cut: String = body.chars().take(MAX_LINE_CHARS).collect();
            entry.push_str(&format!("{cut}{LINE_CUT} {MAX_LINE_CHARS} chars]"));
        } else {
            entry.push_str(body);
        }
        entry.push('\n');
        if last != 0 && text.len() + entry.len() > ctx.max_output {
            full = true;
            continue;
        }
        text.push_str(&entry);
        last = total;
    }
    if total == 0 {
        see(ctx, path.clone());
        return Ok(Output::ok(format!("({name} is empty)")));
    }
    if first > total {
        return Err(format!(
            "offset {first} is past the end of {name}, which has {total} lines"
        ));
    }
    if last < total {
        text.push_str(&format!(
            "[lines {first}-{last} of {total}; call read_file with offset={} to read more]",
            last + 1
        ));
    }
    see(ctx, path.clone());
    let cut = truncate::middle(&text, ctx.max_output.max(MAX_LINE_CHARS * 2));
    Ok(Output {
        ok: true,
        text: cut.text,
        elided: cut.elided,
    })
}

/// Whether a write_file or edit_file error is about the call's own arguments, which the model
/// can put right by calling again (not a refusal of the sandbox, an approval or the file's
/// kind, which calling again would meet again). Each is one of the errors below. An edit
/// whose old_text and new_text are the same is no failed change: the model means the file to
/// stay as it is.
pub fn fixable(error: &str) -> bool {
    const FIXABLE: [&str; 5] = [
        "content is only the tag",
        "write_file replaces only a file read",
        "old_text is empty",
        "old_text appears",
        "old_text was not found",
    ];
    let error = error.trim_start_matches("Error: ");
    FIXABLE.iter().any(|start| error.starts_with(start))
}

/// Refuses writes under `--sandbox read-only`, then asks the approver.
fn may_write(ctx: &Context, approver: &mut Approver, what: &str) -> Result<(), String> {
    if ctx.read_only {
        return Err(
            "the sandbox is read-only (--sandbox read-only): no file can be written".into(),
        );
    }
    approver.check(Action::Write(what))
}

/// Refuses writes in a .git or .turn (what runs outside the sandbox later: hooks, git's
/// config, tools files), unless the user passed --writable-protected.
fn refuse_protected(
    path: &Path,
    name: &dyn std::fmt::Display,
    ctx: &Context,
) -> Result<(), String> {
    if sandbox::protect::covers(&ctx.protected, path) {
        return Err(format!(
            "{name} is protected: every .git and .turn in the workspace is read-only, since \
             what is there runs outside the sandbox later (git hooks, git's config, tools \
             files). Nothing was written; say in your answer what should change there"
        ));
    }
    Ok(())
}

pub(super) fn write_file(
    mut args: WriteArgs,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    // A chat template's tag for the whole content is the model's confusion, not a file's text.
    const TAGS: [&str; 4] = [
        "<tool_response>",
        "</tool_response>",
        "<tool_call>",
        "</tool_call>",
    ];
    if TAGS.contains(&args.content.trim()) {
        return Err(format!(
            "content is only the tag {}, not the file's text; nothing was written. Call \
             write_file again with the whole text the file should hold",
            args.content.trim()
        ));
    }
    let path = resolve(&args.path, ctx)?;
    let name = shown(&path, ctx);
    refuse_protected(&path, &name, ctx)?;
    let rel = relative(&path, ctx);
    // The file's text as it is (a text file up to MAX_REWRITE_BYTES), read once: what a copy
    // with read_file's numbers is compared with, and what an unchanged write holds.
    let old = small_text(ctx, rel);
    // read_file's line numbers, copied into a rewrite of the file read, are taken out; in a
    // new file or other text they may be meant (a TSV), so they stay.
    let mut note = "";
    if let Some(plain) = nearmatch::unnumbered(&args.content) {
        if old.as_deref().is_some_and(|old| rewrites(old, &plain)) {
            args.content = plain;
            note = "; the line numbers copied from read_file were taken out";
        }
    }
    let Some(file_name) = rel.file_name() else {
        return Err(format!("{name} is a directory"));
    };
    let existed = match ctx.root.metadata(rel) {
        Ok(meta) if meta.is_dir() => return Err(format!("{name} is a directory")),
        Ok(meta) if meta.is_symlink() => return Err(opening(&fsafe::symlink_error(), &name)),
        Ok(meta) if !meta.is_file() => return Err(opening(&fsafe::not_regular(), &name)),
        Ok(_) => true,
        Err(_) => false,
    };
    // Content the file already holds changes nothing: nothing is written (or asked for), and
    // the result says so, so a model that copied a file back sees that it changed nothing
    // (looked at in text files up to MAX_REWRITE_BYTES).
    if existed && old.as_deref() == Some(args.content.as_str()) {
        return Ok(Output::ok(format!(
            "{name} is unchanged: it already holds exactly this content ({} bytes{note}); \
             nothing was written",
            args.content.len()
        )));
    }
    // Replacing a file the model has not seen loses what it holds, and a small model writes a
    // whole file from a guess: where the text protocol declares the blocks (its whole-file
    // block is "a new file, or one you have been shown"), only files read or written in this
    // session are replaced.
    if existed && ctx.replace_seen_only && !ctx.seen.borrow().contains(&path) {
        return Err(format!(
            "write_file replaces only a file read in this session, and {name} was not read: \
             nothing was written. Read it with read_file first, then write it whole, or change \
             part of it with edit_file"
        ));
    }
    may_write(
        ctx,
        approver,
        &format!("write {} bytes to {name}", args.content.len()),
    )?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dir = ctx
        .root
        .create_dirs(parent, 0o777)
        .map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists | io::ErrorKind::NotADirectory => {
                format!("a parent of {name} is not a directory")
            }
            _ if fsafe::is_symlink(&e) => opening(&e, &name),
            _ => format!("cannot create the directory for {name}: {e}"),
        })?;
    let existing = match dir.open_read(Path::new(file_name)) {
        Ok(file) => Some(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(opening(&e, &name)),
    };
    dir.replace(file_name, existing.as_ref(), |out| {
        out.write_all(args.content.as_bytes())
    })
    .map_err(|e| format!("cannot write {name}: {e}"))?;
    see(ctx, path.clone());
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(Output::ok(format!(
        "{verb} {name} ({} bytes{note})",
        args.content.len()
    )))
}

pub(super) fn edit_file(
    args: EditArgs,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    let path = resolve(&args.path, ctx)?;
    let name = shown(&path, ctx);
    refuse_protected(&path, &name, ctx)?;
    if args.old_text.is_empty() {
        return Err("old_text is empty; to create a file use write_file".into());
    }
    if args.old_text == args.new_text {
        return Err("old_text and new_text are the same; nothing would change".into());
    }
    let rel = relative(&path, ctx);
    let file = ctx.root.open_read(rel).map_err(|e| opening(&e, &name))?;
    let found = replace::find_all(&file, &args.old_text).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => format!("{name} is not valid UTF-8 text; edit it with bash"),
        _ => format!("cannot read {name}: {e}"),
    })?;
    match found.offsets.len() {
        0 => {
            let output = edit_loosely(&args, &file, &name, rel, ctx, approver)?;
            see(ctx, path);
            return Ok(output);
        }
        n if n > 1 && !args.replace_all => {
            return Err(format!(
                "old_text appears {n} times in {name}; include more surrounding lines to make it unique, \
                 or set replace_all to true"
            ))
        }
        _ => {}
    }
    may_write(ctx, approver, &format!("edit {name}"))?;
    // The file searched is the file spliced: the same descriptor, read again from the start.
    let (Some(parent), Some(file_name)) = (rel.parent(), rel.file_name()) else {
        return Err(format!("{name} is a directory"));
    };
    let dir = ctx.root.open_dir(parent).map_err(|e| opening(&e, &name))?;
    dir.replace(file_name, Some(&file), |out| {
        (&file).seek(SeekFrom::Start(0))?;
        replace::splice(
            &file,
            out,
            &found.offsets,
            args.old_text.len(),
            args.new_text.as_bytes(),
        )
    })
    .map_err(|e| format!("cannot write {name}: {e}"))?;
    let times = match found.offsets.len() {
        1 => "1 occurrence".to_string(),
        n => format!("{n} occurrences"),
    };
    see(ctx, path.clone());
    Ok(Output::ok(format!(
        "Replaced {times} in {name} (first at line {})",
        found.first_line
    )))
}

/// The most of a file that `edit_file` reads whole, to look for `old_text` loosely or for the
/// lines most like it, when it is not there exactly.
const MAX_LOOSE_BYTES: usize = 4 << 20;
/// A file no larger than this is shown whole when `old_text` is not in it.
const WHOLE_FILE_BYTES: usize = 3000;
const WHOLE_FILE_LINES: usize = 80;

/// `edit_file` when `old_text` is not in the file exactly: the same lines with only their
/// indentation or trailing spaces different (or with read_file's line numbers before them),
/// found once, are edited (see `nearmatch`); otherwise the error shows a small file whole, a
/// larger one's lines most like `old_text`.
fn edit_loosely(
    args: &EditArgs,
    mut file: &fs::File,
    name: &dyn std::fmt::Display,
    rel: &Path,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    let not_found = format!("old_text was not found in {name}");
    let copy = "Read the file again and copy old_text exactly, whitespace and indentation \
                included, without the line numbers";
    let mut content = String::new();
    let read = file.seek(SeekFrom::Start(0)).and_then(|_| {
        file.take(MAX_LOOSE_BYTES as u64 + 1)
            .read_to_string(&mut content)
    });
    // Too large to read whole, or a loose guess at every occurrence: only exact text then.
    if read.is_err() || content.len() > MAX_LOOSE_BYTES || args.replace_all {
        return Err(format!("{not_found}. {copy}."));
    }
    // Line numbers copied from read_file: the text without them, the new text likewise.
    let unnumbered = nearmatch::unnumbered(&args.old_text).map(|old| {
        let new = nearmatch::unnumbered(&args.new_text).unwrap_or_else(|| args.new_text.clone());
        (old, new)
    });
    let (old_text, new_text) = match &unnumbered {
        Some((old, new)) => (old.as_str(), new.as_str()),
        None => (args.old_text.as_str(), args.new_text.as_str()),
    };
    let Some(found) = nearmatch::loose(&content, old_text, new_text) else {
        // A small file is shown whole: the model's next old_text is then copied, not guessed.
        if content.len() <= WHOLE_FILE_BYTES && content.lines().count() <= WHOLE_FILE_LINES {
            let numbered: Vec<String> = content
                .lines()
                .enumerate()
                .map(|(i, line)| format!("{}\t{line}", i + 1))
                .collect();
            return Err(format!(
                "{not_found}. The file holds (line number, tab, text):\n{}\n\n{copy}.",
                numbered.join("\n")
            ));
        }
        return Err(match nearmatch::closest(&content, old_text) {
            Some(near) => format!(
                "{not_found}. The lines most like it are these (line number, tab, text):\n\
                 {near}\n\n{copy}."
            ),
            None => format!("{not_found}, nor anything like it. {copy}."),
        });
    };
    may_write(ctx, approver, &format!("edit {name}"))?;
    let (Some(parent), Some(file_name)) = (rel.parent(), rel.file_name()) else {
        return Err(format!("{name} is a directory"));
    };
    let dir = ctx.root.open_dir(parent).map_err(|e| opening(&e, name))?;
    dir.replace(file_name, Some(file), |out| {
        file.seek(SeekFrom::Start(0))?;
        replace::splice(
            file,
            out,
            &[found.start as u64],
            found.end - found.start,
            found.replacement.as_bytes(),
        )
    })
    .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(Output::ok(format!(
        "Replaced 1 occurrence in {name} at line {} (old_text matched it {}; the new text was \
         indented like the file)",
        found.line,
        if unnumbered.is_some() {
            "once the line numbers copied from read_file were taken out"
        } else {
            "with only the whitespace at line ends different"
        }
    )))
}

/// Most bytes of a file that write_file compares with what it is given.
const MAX_REWRITE_BYTES: u64 = 256 * 1024;

/// Records that the model has read, written or edited `path` (see `Context::seen`).
pub(super) fn see(ctx: &Context, path: PathBuf) {
    let mut seen = ctx.seen.borrow_mut();
    if !seen.contains(&path) {
        seen.push(path);
    }
}

/// The text of the workspace file at `rel` (a resolved path, see `relative`), when it is a
/// regular UTF-8 file of at most `MAX_REWRITE_BYTES`.
fn small_text(ctx: &Context, rel: &Path) -> Option<String> {
    let file = ctx.root.open_read(rel).ok()?;
    let mut text = String::new();
    file.take(MAX_REWRITE_BYTES + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= MAX_REWRITE_BYTES).then_some(text)
}

/// Whether `new` is a file's text `old` written out anew, not a snippet of it or another
/// file's text: at least half of the distinct non-blank lines of `old` stand in `new`, which
/// has at least 60% as many non-blank lines. The file's own text counts: a file copied back
/// from read_file unchanged, numbers and all, is a rewrite too (pure).
fn rewrites(old: &str, new: &str) -> bool {
    let lines = |text: &str| -> std::collections::HashSet<String> {
        text.lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let (old, new) = (lines(old), lines(new));
    if old.is_empty() {
        return false;
    }
    let kept = old.iter().filter(|l| new.contains(*l)).count();
    kept * 2 >= old.len() && new.len() * 10 >= old.len() * 6
}

#[cfg(test)]
mod rewrite_tests {
    use super::{fixable, rewrites};

    #[test]
    fn errors_of_the_calls_arguments_are_fixable_and_refusals_are_not() {
        for error in [
            "Error: old_text was not found in a.py. The file holds (line number, tab, text):",
            "Error: old_text appears 2 times in a.py; include more surrounding lines",
            "old_text is empty; to create a file use write_file",
            "Error: content is only the tag <tool_response>, not the file's text",
        ] {
            assert!(fixable(error), "{error}");
        }
        for error in [
            "Error: the sandbox is read-only (--sandbox read-only): no file can be written",
            "Error: pipe is not a regular file (a FIFO, socket or device)",
            "Error: ../x is outside the workspace",
            "Error: the user declined: write a.py",
            "Error: a.py is a directory",
            "Error: old_text and new_text are the same; nothing would change",
            "",
        ] {
            assert!(!fixable(error), "{error}");
        }
    }

    #[test]
    fn a_whole_file_rewritten_is_told_from_a_snippet() {
        let old = "import argparse\n\ndef main():\n    p = argparse.ArgumentParser()\n    \
                   args = p.parse_args()\n    print(args)\n\nmain()\n";
        let new = old.replace(
            "    print(args)",
            "    if args.shout:\n        x()\n    print(args)",
        );
        assert!(rewrites(old, &new));
        assert!(!rewrites(old, "python3 greet.py --shout\n"), "a command");
        assert!(
            !rewrites(old, "    if args.shout:\n        x()\n"),
            "a snippet"
        );
        assert!(!rewrites("\n\n", "x\n"), "an empty file");
        // The 1.5B model's shape: it broke two lines of the file, then showed it all fixed
        // (7 of the broken file's 12 lines stand in the block).
        let broken = "#!/usr/bin/env python3\n\"\"\"Greet.\n\"\"\"\nimport argparse\n\ndef main():\n    p = argparse.ArgumentParser()\n    p.add_argument(\"name\")\n    args = p.parse_args()\n    m = f\"Hello, {args.name}!\n\"\\\n\nif __name__ == \"__main__\":\n    main()\"\n";
        let fixed = "#!/usr/bin/env python3\n\"\"\"Greet.\"\"\"\nimport argparse\n\ndef main():\n    p = argparse.ArgumentParser()\n    p.add_argument(\"--shout\", action=\"store_true\")\n    p.add_argument(\"name\")\n    args = p.parse_args()\n    m = f\"Hello, {args.name}!\"\n    print(m.upper() if args.shout else m)\n\nif __name__ == \"__main__\":\n    main()\n";
        assert!(rewrites(broken, fixed));
        let other = "fn main() {\n    println!();\n}\n";
        assert!(!rewrites(old, other), "another file");
    }
}
