//! The edit syntaxes the text protocol declares (see textproto::edits), read strictly: a whole
//! file (its path on a line of its own, then a fenced block with the full content) becomes a
//! `write_file` call, a search/replace block (the path, then `<<<<<<< SEARCH`, the old lines,
//! `=======`, the new lines, `>>>>>>> REPLACE`, fenced or not) an `edit_file` call.
//!
//! These are calls only because the system prompt of the request being answered declared the
//! syntax: the caller reads them in replies to such requests and nowhere else. Nothing is
//! guessed: the markers are exact, the path line is a path and nothing more, and there are no
//! similarity thresholds. A block that begins and does not parse (a fence never closed, a
//! marker missing, a second block for the same file in one reply, a SEARCH without a path)
//! becomes a call that does not run, with the reason as its result, so the model can fix it.
//! Calls written as JSON are read in the text around the blocks, in order, as the declared
//! call format (textcalls::declared_in_reply: a fenced call block is a call even to a tool that
//! does not exist, whose run then says which tools there are).
//!
//! Pure: text in, calls out.

use crate::wire::textcalls;
use serde_json::json;

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";

/// Which edit syntaxes the text protocol declares (`--edit-format`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Format {
    /// A file is written whole: its path line, then a fenced block with all its content. A
    /// search/replace block gets an error back that says so.
    Whole,
    /// That, and search/replace blocks for part of a file.
    Both,
}

impl Format {
    pub fn parse(value: &str) -> Option<Format> {
        match value {
            "whole" => Some(Format::Whole),
            "both" => Some(Format::Both),
            _ => None,
        }
    }
}

/// A call read in a reply under the text protocol.
#[derive(Debug, PartialEq)]
pub struct Found {
    pub name: String,
    pub arguments: String,
    /// Why the block does not parse: the call does not run, and this is its result.
    pub error: Option<String>,
    /// It came from an edit block (not a JSON call).
    pub edit: bool,
}

impl Found {
    /// A call written as JSON.
    fn call(call: textcalls::TextCall) -> Found {
        Found {
            name: call.name,
            arguments: call.arguments,
            error: None,
            edit: false,
        }
    }
}

/// The calls in `text`: calls written as JSON (see textcalls::in_reply; `cut`: the reply was
/// cut short) and, when the request's system prompt `declared` them, edit blocks, in the order
/// they appear (the JSON calls then as textcalls::declared_in_reply reads them).
pub fn read(text: &str, tools: &[&str], cut: bool, declared: Option<Format>) -> Vec<Found> {
    let Some(format) = declared else {
        let calls = textcalls::in_reply(text, tools, cut).into_iter();
        return calls.map(Found::call).collect();
    };
    let mut found = Vec::new();
    let mut prose = String::new();
    let mut seen = std::collections::HashSet::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let Some((end, mut edit)) = block(&lines, i) else {
            prose.push_str(lines[i]);
            i += 1;
            continue;
        };
        json_calls(&mut found, &std::mem::take(&mut prose), tools, false);
        let path = edit.path.trim_start_matches("./").to_string();
        if format == Format::Whole && edit.replace.is_some() {
            edit.error = Some(
                "search/replace blocks are not declared here (--edit-format whole); nothing \
                 was changed. Write the file whole: its path alone on a line, then a fenced \
                 block with all of its new content"
                    .into(),
            );
        } else if edit.error.is_none() && !path.is_empty() && !seen.insert(path) {
            edit.error = Some(format!(
                "a second block for {} in one reply; it was not applied. Send one block per file \
                 a reply: read the file again and send the next change in your next reply",
                edit.path
            ));
        }
        found.push(edit.call());
        i = end;
    }
    json_calls(&mut found, &prose, tools, cut);
    found
}

fn json_calls(found: &mut Vec<Found>, text: &str, tools: &[&str], cut: bool) {
    if text.trim().is_empty() {
        return;
    }
    found.extend(
        textcalls::declared_in_reply(text, tools, cut)
            .into_iter()
            .map(Found::call),
    );
}

/// An edit block as read: what it does, or why it does not parse.
struct Edit {
    path: String,
    /// `(old, new)` for a search/replace block; `None`: a whole file.
    replace: Option<(String, String)>,
    content: String,
    error: Option<String>,
}

impl Edit {
    fn failed(path: &str, replace: bool, error: String) -> Edit {
        Edit {
            path: path.to_string(),
            replace: replace.then(Default::default),
            content: String::new(),
            error: Some(error),
        }
    }

    fn call(self) -> Found {
        let (name, arguments) = match (&self.error, self.replace) {
            (Some(_), replace) => {
                let name = if replace.is_some() {
                    "edit_file"
                } else {
                    "write_file"
                };
                (name, json!({ "path": self.path }))
            }
            (None, Some((old, new))) => (
                "edit_file",
                json!({"path": self.path, "old_text": old, "new_text": new}),
            ),
            (None, None) => (
                "write_file",
                json!({"path": self.path, "content": self.content}),
            ),
        };
        Found {
            name: name.to_string(),
            arguments: arguments.to_string(),
            error: self.error,
            edit: true,
        }
    }
}

/// A write_file or edit_file call's arguments written as the block that reads back as it
/// (`read`) under `format`: a whole file, or a search/replace block. The text protocol shows
/// the model its own writes in the syntax it declared. `None` for other tools, for a syntax
/// `format` does not declare, and for arguments no block can carry (missing fields,
/// `replace_all`, a path that is no path line).
pub fn written(name: &str, arguments: &str, format: Format) -> Option<String> {
    let args: serde_json::Map<String, serde_json::Value> = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(serde_json::Value::as_str);
    let path = text("path").filter(|p| path_line(p) == Some(*p))?;
    match name {
        "write_file" if args.len() == 2 => Some(whole_file(path, text("content")?)),
        "edit_file" if args.len() == 3 && format == Format::Both => {
            let (old, new) = (text("old_text")?, text("new_text")?);
            let block = format!(
                "{path}\n{SEARCH}\n{old}{}{DIVIDER}\n{new}{}{REPLACE}",
                line_end(old),
                line_end(new)
            );
            // Markers inside the texts would read back as another block.
            let markers = |s: &str| {
                s.lines()
                    .any(|l| [SEARCH, DIVIDER, REPLACE].iter().any(|m| is(l, m)))
            };
            (!markers(old) && !markers(new)).then_some(block)
        }
        _ => None,
    }
}

/// `content` as a whole-file block for `path`: the path line, then a fence longer than any
/// run of backticks that starts a line of the content.
pub fn whole_file(path: &str, content: &str) -> String {
    let longest = content
        .lines()
        .map(|l| l.trim_start().len() - l.trim_start().trim_start_matches('`').len())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{path}\n{fence}\n{content}{}{fence}", line_end(content))
}

/// The newline a block needs after `text` before its next marker or fence.
fn line_end(text: &str) -> &'static str {
    if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    }
}

/// The edit block that begins at `lines[i]`, if one does, and the index of the line after it.
fn block(lines: &[&str], i: usize) -> Option<(usize, Edit)> {
    let line = lines[i];
    if is(line, SEARCH) {
        let error = format!(
            "{SEARCH} without the file's path on the line before it; send the block again \
             with the path line first"
        );
        let end = (i + 1..lines.len())
            .find(|&j| is(lines[j], REPLACE))
            .map_or(lines.len(), |j| j + 1);
        return Some((end, Edit::failed("", true, error)));
    }
    let path = path_line(line)?;
    let next = *lines.get(i + 1)?;
    if is(next, SEARCH) {
        return Some(search_replace(lines, i + 2, path, None));
    }
    let ticks = fence_open(next)?;
    if lines.get(i + 2).is_some_and(|l| is(l, SEARCH)) {
        return Some(search_replace(lines, i + 3, path, Some(ticks)));
    }
    let Some(close) = (i + 2..lines.len()).find(|&j| fence_close(lines[j], ticks)) else {
        let error = format!(
            "the block for {path} has no closing fence (a line of {ticks} backticks); nothing \
             was written. Send the whole file again, ending with the closing fence"
        );
        return Some((lines.len(), Edit::failed(path, false, error)));
    };
    let edit = Edit {
        path: path.to_string(),
        replace: None,
        content: lines[i + 2..close].concat(),
        error: None,
    };
    Some((close + 1, edit))
}

/// The search/replace block for `path` whose old lines begin at `lines[start]`, inside a fence
/// of `fence` backticks if it is fenced.
fn search_replace(lines: &[&str], start: usize, path: &str, fence: Option<usize>) -> (usize, Edit) {
    let failed = |end: usize, missing: &str| {
        let error = format!(
            "the search/replace block for {path} has no {missing} line; nothing was changed. \
             Send it again as: the path, {SEARCH}, the old lines, {DIVIDER}, the new lines, \
             {REPLACE}"
        );
        (end, Edit::failed(path, true, error))
    };
    let ends = |j: usize| fence.is_some_and(|ticks| fence_close(lines[j], ticks));
    let Some(divider) = (start..lines.len()).find(|&j| is(lines[j], DIVIDER) || ends(j)) else {
        return failed(lines.len(), DIVIDER);
    };
    if !is(lines[divider], DIVIDER) {
        return failed(divider + 1, DIVIDER);
    }
    let Some(replace) = (divider + 1..lines.len()).find(|&j| is(lines[j], REPLACE) || ends(j))
    else {
        return failed(lines.len(), REPLACE);
    };
    if !is(lines[replace], REPLACE) {
        return failed(replace + 1, REPLACE);
    }
    let mut end = replace + 1;
    if let Some(ticks) = fence {
        match lines.get(end) {
            Some(line) if fence_close(line, ticks) => end += 1,
            _ => {
                let error = format!(
                    "the fence around the search/replace block for {path} is not closed right \
                     after {REPLACE}; nothing was changed. Send one {SEARCH} … {REPLACE} block \
                     per file a reply, and close its fence"
                );
                let close = (end..lines.len()).find(|&j| fence_close(lines[j], ticks));
                return (
                    close.map_or(lines.len(), |j| j + 1),
                    Edit::failed(path, true, error),
                );
            }
        }
    }
    let edit = Edit {
        path: path.to_string(),
        replace: Some((
            lines[start..divider].concat(),
            lines[divider + 1..replace].concat(),
        )),
        content: String::new(),
        error: None,
    };
    (end, edit)
}

/// Whether `line` is exactly `marker` (trailing whitespace aside).
fn is(line: &str, marker: &str) -> bool {
    line.trim_end() == marker
}

/// The path on a path line: the whole line (trailing whitespace aside) is one path, bare or in
/// backticks. A path is letters, digits and `._-/+@~`, with a `/` or a `.` in it, and it does
/// not end in `.` (so a word or a sentence's end is no path).
pub fn path_line(line: &str) -> Option<&str> {
    let line = line.trim_end();
    let path = match line.strip_prefix('`') {
        Some(rest) => rest.strip_suffix('`')?,
        None => line,
    };
    let allowed = |c: char| c.is_alphanumeric() || "._-/+@~".contains(c);
    let ok = !path.is_empty()
        && path.len() <= 4096
        && path.chars().all(allowed)
        && path.contains(['/', '.'])
        && !path.ends_with('.');
    ok.then_some(path)
}

/// The number of backticks (3 or more) that open a fence on `line`, with an optional info
/// word after them.
fn fence_open(line: &str) -> Option<usize> {
    let ticks = line.len() - line.trim_start_matches('`').len();
    let info = line[ticks..].trim();
    (ticks >= 3 && !info.contains('`') && !info.contains(' ')).then_some(ticks)
}

/// Whether `line` closes a fence opened with `ticks` backticks: backticks only, at least as many.
fn fence_close(line: &str, ticks: usize) -> bool {
    let line = line.trim_end();
    line.len() >= ticks && line.bytes().all(|b| b == b'`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const TOOLS: [&str; 3] = ["bash", "write_file", "edit_file"];
    const BOTH: Option<Format> = Some(Format::Both);

    #[test]
    fn under_whole_a_search_replace_block_is_an_error_that_asks_for_the_whole_file() {
        let text = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n\n\
                    b.py\n```\ny = 2\n```\n";
        let found = read(text, &TOOLS, false, Some(Format::Whole));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].name, "edit_file");
        let error = found[0].error.as_deref().unwrap();
        assert!(error.contains("--edit-format whole"), "{error}");
        assert!(error.contains("Write the file whole"), "{error}");
        assert_eq!(found[1].name, "write_file");
        assert_eq!(found[1].error, None);
        // The same text where both are declared: an edit and a write.
        let both = read(text, &TOOLS, false, BOTH);
        assert!(both.iter().all(|f| f.error.is_none()), "{both:?}");
    }

    #[test]
    fn formats_parse_and_an_edit_is_shown_as_a_block_only_where_declared() {
        assert_eq!(Format::parse("whole"), Some(Format::Whole));
        assert_eq!(Format::parse("both"), Some(Format::Both));
        assert_eq!(Format::parse("diff"), None);
        let edit = r#"{"path": "a.py", "old_text": "x = 1\n", "new_text": "x = 2\n"}"#;
        assert!(written("edit_file", edit, Format::Both).is_some());
        assert_eq!(written("edit_file", edit, Format::Whole), None);
        let write = r#"{"path": "a.py", "content": "x = 1\n"}"#;
        assert_eq!(
            written("write_file", write, Format::Whole),
            written("write_file", write, Format::Both)
        );
    }

    fn one(text: &str) -> (String, Value, Option<String>) {
        let found = read(text, &TOOLS, false, BOTH);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert!(f.edit);
        let args: Value = serde_json::from_str(&f.arguments).unwrap();
        (f.name.clone(), args, f.error.clone())
    }

    #[test]
    fn calls_written_as_blocks_read_back_as_the_same_calls() {
        let calls = [
            (
                "write_file",
                json!({"path": "src/a.py", "content": "x = 1\n"}),
            ),
            (
                "write_file",
                json!({"path": "a.md", "content": "```sh\nls\n```\n````\n"}),
            ),
            ("write_file", json!({"path": "e.txt", "content": ""})),
            (
                "edit_file",
                json!({"path": "a.py", "old_text": "x = 1\n", "new_text": "x = 2\n"}),
            ),
            (
                "edit_file",
                json!({"path": "a.py", "old_text": "a\nb\n", "new_text": ""}),
            ),
        ];
        for (name, args) in calls {
            let block = written(name, &args.to_string(), Format::Both).expect(name);
            let (got, back, error) = one(&block);
            assert_eq!((got.as_str(), &back, error), (name, &args, None), "{block}");
        }
        let block = written(
            "write_file",
            r#"{"path": "a", "content": "x"}"#,
            Format::Both,
        );
        assert_eq!(block, None, "a path line has a / or a .");
        // Content without a last newline reads back with one.
        let block = written(
            "write_file",
            r#"{"path": "a.txt", "content": "x"}"#,
            Format::Both,
        )
        .unwrap();
        assert_eq!(one(&block).1["content"], "x\n");
        // What no block carries stays a JSON call.
        for (name, args) in [
            ("bash", json!({"command": "ls"})),
            (
                "edit_file",
                json!({"path": "a.py", "old_text": "a", "new_text": "b", "replace_all": true}),
            ),
            (
                "edit_file",
                json!({"path": "a.py", "old_text": "=======\n", "new_text": "b"}),
            ),
            (
                "write_file",
                json!({"path": "two words.txt", "content": "x"}),
            ),
            ("write_file", json!({"path": "a.txt"})),
        ] {
            assert_eq!(
                written(name, &args.to_string(), Format::Both),
                None,
                "{name} {args}"
            );
        }
        assert_eq!(written("write_file", "not json", Format::Both), None);
    }

    #[test]
    fn a_whole_file_is_a_write() {
        for text in [
            "Here it is:\n\nsrc/app.py\n```python\nprint(1)\n\nprint(2)\n```\nDone.",
            "`src/app.py`\n```\nprint(1)\n\nprint(2)\n```",
            "src/app.py  \r\n````py\nprint(1)\n\nprint(2)\n`````\n",
        ] {
            let (name, args, error) = one(text);
            assert_eq!(name, "write_file");
            assert_eq!(error, None);
            assert_eq!(args["path"], "src/app.py");
            let content = args["content"].as_str().unwrap().replace('\r', "");
            assert_eq!(content, "print(1)\n\nprint(2)\n", "{text}");
        }
        let (_, args, _) = one("README.md\n````markdown\n# T\n```sh\nls\n```\n````\n");
        assert_eq!(args["content"], "# T\n```sh\nls\n```\n", "a longer fence");
        let (_, args, _) = one("empty.txt\n```\n```");
        assert_eq!(args["content"], "");
    }

    #[test]
    fn a_search_replace_block_is_an_edit() {
        let bare = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\ny = 3\n>>>>>>> REPLACE\n";
        let fenced =
            "`a.py`\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\ny = 3\n>>>>>>> REPLACE\n```";
        for text in [bare, fenced] {
            let (name, args, error) = one(text);
            assert_eq!((name.as_str(), error), ("edit_file", None), "{text}");
            assert_eq!(args["path"], "a.py");
            assert_eq!(args["old_text"], "x = 1\n");
            assert_eq!(args["new_text"], "x = 2\ny = 3\n");
        }
        let (_, args, _) = one("a.py\n<<<<<<< SEARCH\nx = 1\n=======\n>>>>>>> REPLACE");
        assert_eq!(args["new_text"], "", "a deletion");
    }

    #[test]
    fn malformed_blocks_are_calls_with_their_error() {
        let cases = [
            (
                "a.py\n```python\nprint(1)\n",
                "write_file",
                "has no closing fence",
            ),
            (
                "a.py\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n",
                "edit_file",
                "has no ======= line",
            ),
            (
                "a.py\n<<<<<<< SEARCH\nx\n=======\ny\n",
                "edit_file",
                "no >>>>>>> REPLACE line",
            ),
            (
                "a.py\n```\n<<<<<<< SEARCH\nx\n```\n",
                "edit_file",
                "has no ======= line",
            ),
            (
                "a.py\n```\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\nz\n```\n",
                "edit_file",
                "not closed right after",
            ),
            (
                "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n",
                "edit_file",
                "without the file's path",
            ),
        ];
        for (text, tool, why) in cases {
            let (name, _, error) = one(text);
            assert_eq!(name, tool, "{text}");
            assert!(
                error.as_deref().unwrap_or("").contains(why),
                "{text}: {error:?}"
            );
        }
    }

    #[test]
    fn one_block_per_file_a_reply() {
        let text = "a.py\n```\none\n```\n./a.py\n<<<<<<< SEARCH\none\n=======\ntwo\n>>>>>>> REPLACE\nb.py\n```\nb\n```\n";
        let found = read(text, &TOOLS, false, BOTH);
        let errors: Vec<bool> = found.iter().map(|f| f.error.is_some()).collect();
        assert_eq!(errors, [false, true, false]);
        assert!(found[1]
            .error
            .as_deref()
            .unwrap()
            .contains("a second block for ./a.py"));
    }

    #[test]
    fn json_calls_around_blocks_keep_their_order() {
        let call =
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python3 a.py\"}}\n```";
        let text = format!("a.py\n```\nprint(1)\n```\nNow run it:\n{call}\n");
        let found = read(&text, &TOOLS, false, BOTH);
        let names: Vec<(&str, bool)> = found.iter().map(|f| (f.name.as_str(), f.edit)).collect();
        assert_eq!(names, [("write_file", true), ("bash", false)]);
        let found = read(call, &TOOLS, false, BOTH);
        assert_eq!(found.len(), 1);
        assert!(!found[0].edit);
        let undeclared = read(&text, &TOOLS, false, None);
        assert_eq!(
            undeclared.len(),
            1,
            "only the JSON call where nothing was declared"
        );
        assert_eq!(undeclared[0].name, "bash");
    }

    #[test]
    fn where_the_format_is_declared_a_call_block_to_no_tool_is_a_call() {
        let text = "I will install it.\n\n```json\n{\"name\": \"pip\", \"arguments\": \
                    {\"package\": \"x\"}}\n```\n\nThen it works.\n";
        let found = read(text, &TOOLS, false, BOTH);
        let calls: Vec<(&str, &str, bool)> = found
            .iter()
            .map(|f| (f.name.as_str(), f.arguments.as_str(), f.edit))
            .collect();
        assert_eq!(calls, [("pip", "{\"package\":\"x\"}", false)]);
        // Where nothing was declared it is an answer that shows JSON (in prose).
        assert_eq!(read(text, &TOOLS, false, None), []);
        // A call to an offered tool beside it is the call; JSON that is no call stays prose.
        let both = format!(
            "{text}```json\n{{\"name\": \"bash\", \"arguments\": {{\"command\": \"ls\"}}}}\n```\n"
        );
        let found = read(&both, &TOOLS, false, BOTH);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "bash");
        for prose in [
            "```json\n{\"name\": \"app\", \"version\": \"1.0\"}\n```\n",
            "```python\n{\"name\": \"pip\", \"arguments\": {}}\n```\n",
            "Call {\"name\": \"pip\", \"arguments\": {}} then.\n",
        ] {
            assert_eq!(read(prose, &TOOLS, false, BOTH), [], "{prose}");
        }
    }

    #[test]
    fn prose_and_plain_fences_are_no_blocks() {
        for text in [
            "Here is the fix:\n```python\nprint(1)\n```",
            "Done.\n```\nx\n```",
            "The file a.py:\n```\nx\n```",
            "e.g.\n```\nx\n```",
            "Makefile\n```\nall:\n```",
            "a.py\n\n```\nx\n```",
            "a.py\n``` python script\nx\n```",
            "Replace x with y in a.py.",
            "",
        ] {
            assert_eq!(read(text, &TOOLS, false, BOTH), [], "{text}");
        }
    }

    #[test]
    fn path_lines() {
        assert_eq!(path_line("src/a.py\n"), Some("src/a.py"));
        assert_eq!(path_line("`./Makefile`"), Some("./Makefile"));
        assert_eq!(path_line("/etc/passwd"), Some("/etc/passwd"));
        assert_eq!(path_line("../x.txt"), Some("../x.txt"));
        for no in [
            "Makefile", "a.py:", "see a.py", "**a.py**", "`a.py", "Done.", "", " a.py", "#a.py",
        ] {
            assert_eq!(path_line(no), None, "{no}");
        }
    }

    #[test]
    fn hostile_input_ends() {
        let many = "a.py\n```\n".repeat(20_000);
        let found = read(&many, &TOOLS, false, BOTH);
        assert_eq!(found.len(), 10_000, "a block every other path line");
        assert!(
            found[1..].iter().all(|f| f.error.is_some()),
            "one block per file"
        );
        let markers = "a.py\n<<<<<<< SEARCH\n".repeat(10_000);
        assert!(!read(&markers, &TOOLS, false, BOTH).is_empty());
        assert_eq!(read(&"`".repeat(100_000), &TOOLS, false, BOTH), []);
    }
}
