//! The file tools: `read_file`, `write_file` and `edit_file`. Paths are resolved by
//! `sandbox::safe_path`, so no path, symlink or `..` leads outside the workspace; writes go
//! through a temp file and a rename, keeping the file's mode.

use super::{replace, truncate, Context, Output};
use crate::approve::{Action, Approver};
use crate::sandbox::{self, Node};
use serde::Deserialize;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Lines `read_file` returns when the model gives no `limit`.
pub(super) const DEFAULT_LINES: usize = 2000;

/// Longer lines are cut: minified files would otherwise eat the whole budget in one line.
const MAX_LINE_CHARS: usize = 2000;

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

fn resolve(path: &str, ctx: &Context) -> Result<PathBuf, String> {
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
    let file = open(&path, ctx)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    if reader
        .fill_buf()
        .map_err(|e| format!("cannot read {name}: {e}"))?
        .contains(&0)
    {
        let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
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
        if total >= first + limit {
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
            entry.push_str(&format!("{cut}… [line cut at {MAX_LINE_CHARS} chars]"));
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
    let cut = truncate::middle(&text, ctx.max_output.max(MAX_LINE_CHARS * 2));
    Ok(Output {
        ok: true,
        text: cut.text,
        elided: cut.elided,
    })
}

fn open(path: &Path, ctx: &Context) -> Result<File, String> {
    let name = shown(path, ctx);
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(format!("{name} is a directory; list it with bash (ls)")),
        // A FIFO or device would block the read or never end.
        Ok(meta) if !meta.is_file() => Err(format!("{name} is not a regular file")),
        Ok(_) => File::open(path).map_err(|e| format!("cannot open {name}: {e}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!("{name} does not exist")),
        Err(e) => Err(format!("cannot open {name}: {e}")),
    }
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

pub(super) fn write_file(
    args: WriteArgs,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    let path = resolve(&args.path, ctx)?;
    let name = shown(&path, ctx);
    let existed = match fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => return Err(format!("{name} is a directory")),
        Ok(_) => true,
        Err(_) => false,
    };
    may_write(
        ctx,
        approver,
        &format!("write {} bytes to {name}", args.content.len()),
    )?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory for {name}: {e}"))?;
    }
    write_atomic(&path, |out| out.write_all(args.content.as_bytes()))
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    let verb = if existed { "Overwrote" } else { "Created" };
    Ok(Output::ok(format!(
        "{verb} {name} ({} bytes)",
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
    if args.old_text.is_empty() {
        return Err("old_text is empty; to create a file use write_file".into());
    }
    if args.old_text == args.new_text {
        return Err("old_text and new_text are the same; nothing would change".into());
    }
    let found =
        replace::find_all(open(&path, ctx)?, &args.old_text).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => {
                format!("{name} is not valid UTF-8 text; edit it with bash")
            }
            _ => format!("cannot read {name}: {e}"),
        })?;
    match found.offsets.len() {
        0 => {
            return Err(format!(
                "old_text was not found in {name}; read the file again and copy the text exactly, \
                 whitespace and indentation included"
            ))
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
    write_atomic(&path, |out| {
        let input = open(&path, ctx).map_err(io::Error::other)?;
        replace::splice(
            input,
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
    Ok(Output::ok(format!(
        "Replaced {times} in {name} (first at line {})",
        found.first_line
    )))
}

/// Writes through a temp file in the same directory, then renames it over `path`: a reader
/// (or a crash) sees the old content or the new, never half of it. Keeps the file's mode.
fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{file_name}.turn-{}.tmp", std::process::id()));
    let result = (|| {
        let mut out = BufWriter::new(File::create(&temp)?);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}
