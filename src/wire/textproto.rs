//! The tool protocols (`--tool-protocol`), and the text protocol's view of a history.
//!
//! The history is always kept in the native form: assistant messages with `tool_calls`, then
//! one `tool` message per call. That is what sessions record and what the context planner
//! works on, so a session resumes under either protocol. For the text protocol, `render` turns
//! that history into the plain conversation such a server takes: no `tool_calls`, no `tool`
//! role; the tools, the one call format and the edit syntaxes (`edits`: a whole file after
//! its path and, under `--edit-format both`, a search/replace block; see editblocks) are
//! described at the end of the system prompt (`tools_prompt`), each call appears as the model
//! wrote it (or in that format: a write as its edit block where those are declared), and
//! results come back as user messages naming the call (a file read whole as the block that
//! would write it, where they are declared: the history shows the model the syntax it is
//! asked to write).
//!
//! Pure: messages in, messages out.

use crate::tools::nearmatch::strip_numbers;
use crate::tools::LINE_CUT;
use crate::wire::editblocks::{self, Format};
use crate::wire::message::{self, Message, Role};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// How tool calls travel between turn and the server.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Protocol {
    /// `tools` in the request, `tool_calls` in the reply; nothing else is a call.
    Native,
    /// No `tools` sent: the system prompt describes them, and calls are written as text.
    Text,
    /// Native, and calls written as text count too; a server that refuses `tools` gets the
    /// text protocol for the rest of the run (and the session). A call written as text does not
    /// change the protocol: the edit syntaxes are declared only where the text protocol is.
    Auto,
}

impl Protocol {
    pub fn parse(value: &str) -> Option<Protocol> {
        match value {
            "native" => Some(Protocol::Native),
            "text" => Some(Protocol::Text),
            "auto" => Some(Protocol::Auto),
            _ => None,
        }
    }

    /// Whether calls written in the message text run.
    pub fn reads_text_calls(self) -> bool {
        self != Protocol::Native
    }
}

/// The names of the tools in `specs` (the `tools` array of a request).
pub fn names(specs: &Value) -> Vec<String> {
    let specs = specs.as_array().into_iter().flatten();
    specs
        .filter_map(|spec| spec["function"]["name"].as_str())
        .map(str::to_string)
        .collect()
}

/// The part of the system prompt that stands in for `tools`: the one call format, then each
/// tool with its parameters, from the same specs the native protocol sends, then the edit
/// syntaxes of `format` (`edits`, when the specs offer write_file and edit_file: they stand in
/// for those two in the list). Kept short: small models often have small context windows.
pub fn tools_prompt(specs: &Value, format: Format) -> String {
    let mut text = String::from(
        "# Tools\n\n\
         To use a tool, answer with one fenced block like this and nothing after it:\n\n\
         ```json\n\
         {\"name\": \"TOOL\", \"arguments\": {\"PARAMETER\": \"VALUE\"}}\n\
         ```\n\n\
         \"name\" is the tool and \"arguments\" a JSON object with its parameters. The result \
         comes back in the next message.\n\nThe tools:\n",
    );
    let names = names(specs);
    let blocks = ["write_file", "edit_file"]
        .iter()
        .all(|n| names.iter().any(|x| x == n));
    for spec in specs.as_array().into_iter().flatten() {
        let function = &spec["function"];
        let name = function["name"].as_str().unwrap_or_default();
        if blocks && ["write_file", "edit_file"].contains(&name) {
            continue; // declared as edit blocks below
        }
        let required: Vec<&str> = function["parameters"]["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let params: Vec<String> = function["parameters"]["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(param, schema)| {
                let optional = if required.contains(&param.as_str()) {
                    ""
                } else {
                    "?"
                };
                let kind = schema["type"].as_str().unwrap_or("any");
                format!("{param}{optional}: {kind}")
            })
            .collect();
        let description = function["description"].as_str().unwrap_or_default();
        text.push_str(&format!(
            "\n- {name}({}): {description}\n",
            params.join(", ")
        ));
    }
    if blocks {
        text.push_str(edits(format));
    }
    text
}

/// The closing sentences of every declaration of the edit syntaxes.
macro_rules! edits_tail {
    () => {
        "The path line holds only the path (backticks around it are fine). One block per file \
         in a reply. If the file holds ``` lines, open and close its block with ````. A reply of \
         blocks alone is your last: the files are written and the task is done. To run \
         something after them, add its call block.\n"
    };
}

/// The edit syntaxes the text protocol declares under `--edit-format whole` (read by
/// wire::editblocks): a file is written whole. Replies to a request whose system prompt ends
/// with a declaration are read for its blocks, and no others. They stand in for write_file's
/// and edit_file's JSON form in the tool list: a file's whole content is easier to write in a
/// fence than escaped in a JSON string (a call in that form still runs).
pub const EDITS_WHOLE: &str = concat!(
    "\n# Writing files\n\n\
     write_file is written as a block, not as JSON. To write a file (a new one, or one you have \
     been shown), give its path alone on a line, then a fenced block with its whole new \
     content, every line of it:\n\n\
     src/hello.py\n\
     ```python\n\
     print(\"hello\")\n\
     ```\n\n",
    edits_tail!()
);

/// The edit syntaxes declared under `--edit-format both`, the default: a whole file, and a
/// search/replace block for part of one.
pub const EDITS_BOTH: &str = concat!(
    "\n# Writing files\n\n\
     write_file and edit_file are written as blocks, not as JSON. To write a whole file (a new \
     one, or one you have been shown), give its path alone on a line, then a fenced block with \
     the full new content:\n\n\
     src/hello.py\n\
     ```python\n\
     print(\"hello\")\n\
     ```\n\n\
     To change part of a file, give its path alone on a line, then the old lines, copied \
     exactly from the file, and the new lines between these markers:\n\n\
     src/hello.py\n\
     <<<<<<< SEARCH\n\
     print(\"hello\")\n\
     =======\n\
     print(\"hello, world\")\n\
     >>>>>>> REPLACE\n\n",
    edits_tail!()
);

/// The declaration of `format`'s edit syntaxes.
pub fn edits(format: Format) -> &'static str {
    match format {
        Format::Whole => EDITS_WHOLE,
        Format::Both => EDITS_BOTH,
    }
}

/// The edit syntaxes `prompt` (the text protocol's part of a system prompt) declares, if any.
pub fn declared(prompt: &str) -> Option<Format> {
    [Format::Whole, Format::Both]
        .into_iter()
        .find(|&format| prompt.ends_with(edits(format)))
}

/// Where a reply under the text protocol ends, as its prompt asks ("one fenced block ... and
/// nothing after it"): just after its first call written as JSON, on the line that closes the
/// call's fence, tag or object. Edit blocks before that call belong to the reply; what follows
/// it does not (calls written there were written without its result), and is not read. Only
/// lines ending after `from` are looked at, so a streamed reply is checked as its lines come.
/// `None` while no such call is whole.
pub fn first_call_end(
    text: &str,
    from: usize,
    tools: &[&str],
    declared: Option<Format>,
) -> Option<usize> {
    let (mut end, mut fenced, mut tagged) = (0, false, false);
    for line in text.split_inclusive('\n') {
        end += line.len();
        let trimmed = line.trim();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        let tag_closes = trimmed.starts_with("</");
        // A fence that closes, a closing tag, an object's last line outside both.
        let closes =
            (fence && fenced) || tag_closes || (!fenced && !tagged && trimmed.ends_with('}'));
        fenced ^= fence;
        tagged = match trimmed.strip_prefix('<') {
            _ if tag_closes => false,
            Some(open) if open.ends_with('>') && !fenced => true,
            _ => tagged,
        };
        if end <= from || !line.ends_with('\n') || !closes {
            continue;
        }
        let found = editblocks::read(&text[..end], tools, false, declared);
        if found.iter().any(|f| !f.edit) {
            return Some(end);
        }
    }
    None
}

/// `history` (native form, normalized) as the text protocol sends it, with `prompt` (see
/// `tools_prompt`) appended to the system message. `tools` are the offered names: an assistant
/// message whose text does not show its calls (a native call, say from a resumed session) gets
/// them written out in the text format, so the model sees what it did.
pub fn render(history: &[Message], prompt: &str, tools: &[&str]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    if history.first().is_none_or(|m| m.role != Role::System) {
        out.push(Message::system(prompt));
    }
    // The edit syntaxes are declared: writes show as blocks, and whole files read as the
    // block that would write them, so the model's history shows the syntax it is to use.
    let declared = declared(prompt);
    let (handed, skipped) = handed_over(history, declared.is_some());
    // Each call's tool, arguments, and place among its reply's calls.
    let mut calls: HashMap<&str, (&str, &str, usize, usize)> = HashMap::new();
    for (at, message) in history.iter().enumerate() {
        if skipped.contains(&at) {
            continue;
        }
        let text = message.content.as_deref().unwrap_or_default();
        let (role, text) = match message.role {
            Role::System => (Role::System, format!("{text}\n\n{prompt}")),
            Role::User => match handed.get(&at) {
                Some(files) => (Role::User, format!("{files}{text}")),
                None => (Role::User, text.to_string()),
            },
            Role::Assistant => {
                let count = message.tool_calls.len();
                for (place, call) in message.tool_calls.iter().enumerate() {
                    let function = (
                        call.function.name.as_str(),
                        call.function.arguments.as_str(),
                        place + 1,
                        count,
                    );
                    calls.insert(&call.id, function);
                }
                (Role::Assistant, assistant_text(message, tools, declared))
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                let (name, arguments, place, count) =
                    calls.get(id).copied().unwrap_or(("tool", "{}", 1, 1));
                let file = match name {
                    "read_file" if declared.is_some() => read_as_block(arguments, text),
                    _ => None,
                };
                let shown = file.as_deref().unwrap_or(text);
                (
                    Role::User,
                    format!("{}:\n{shown}", result_label(name, place, count)),
                )
            }
        };
        // Results of several calls, or a prompt after a result, join into one user message:
        // some chat templates insist that roles alternate.
        match out.last_mut() {
            Some(last) if role == Role::User && last.role == Role::User => {
                let joined = last.content.get_or_insert_with(String::new);
                joined.push_str("\n\n");
                joined.push_str(&text);
            }
            _ => out.push(match role {
                Role::System => Message::system(text),
                Role::Assistant => Message::assistant(Some(text), Vec::new()),
                _ => Message::user(text),
            }),
        }
    }
    if declared.is_some() {
        out.splice(1..1, example());
    }
    out
}

/// What a result is headed with: its call's tool, and its place when the reply made several
/// calls (pure). Never the call's id: ids are random, and text that differs from run to run
/// makes runs at one seed differ and costs tokens in every request (an id is a long random
/// string to a tokenizer); the model never wrote one.
fn result_label(name: &str, place: usize, count: usize) -> String {
    match count {
        0 | 1 => format!("Result of the {name} call"),
        _ => format!("Result of {name} call {place} of {count}"),
    }
}

/// A worked exchange in the declared syntax, shown after the system prompt where the edit
/// blocks are declared: a task with its file handed over, and the reply that says the change
/// and writes the file as a block. Small models follow a format they have seen in a reply more
/// readily than one only described (aider shows its formats so). It is part of the prompt, not
/// of the history, and it names no file of any project (the task's own message lists the
/// project's files). It carries no label: each token of it is sent with every request.
fn example() -> [Message; 2] {
    [
        Message::user(format!(
            "{HANDED}hello.py\n```python\nprint(\"hello\")\n```\n\nMake hello.py greet the world."
        )),
        Message::assistant(
            Some(
                "I will change the text hello.py prints from \"hello\" to \"hello, world\".\n\n\
                 hello.py\n```python\nprint(\"hello, world\")\n```"
                    .into(),
            ),
            Vec::new(),
        ),
    ]
}

/// What the files handed over with a task open with: what they are (read by turn, as they are
/// now), said rather than left to the model to work out.
const HANDED: &str = "[turn: the files the task names, as they are now:]\n\n";

/// The files turn read for a task before the model's first reply (its own `read_file` calls,
/// `message::by_turn`, right after the task), where the edit blocks are declared: each becomes
/// its whole-file block at the head of the task's message, as a person hands files over with
/// a request, so that the model reads them before the task rather than after it. Returns the
/// blocks by the index of the user message they go before, and the indices of the calls and
/// results they stand in for. A read that is not a whole file (a page, a cut line) stays
/// a call and its result, as do those after it.
fn handed_over(history: &[Message], declared: bool) -> (HashMap<usize, String>, HashSet<usize>) {
    let (mut handed, mut skipped) = (HashMap::new(), HashSet::new());
    if !declared {
        return (handed, skipped);
    }
    for (at, _) in history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
    {
        let mut next = at + 1;
        while let (Some(asked), Some(result)) = (history.get(next), history.get(next + 1)) {
            let [call] = asked.tool_calls.as_slice() else {
                break;
            };
            let ours = asked.role == Role::Assistant
                && message::by_turn(&call.id)
                && call.function.name == "read_file"
                && asked.content.as_deref().unwrap_or_default().is_empty()
                && result.role == Role::Tool
                && result.tool_call_id.as_deref() == Some(call.id.as_str());
            let output = result.content.as_deref().unwrap_or_default();
            let Some(block) = ours
                .then(|| read_as_block(&call.function.arguments, output))
                .flatten()
            else {
                break;
            };
            let files: &mut String = handed.entry(at).or_insert_with(|| HANDED.to_string());
            files.push_str(&block);
            files.push_str("\n\n");
            skipped.extend([next, next + 1]);
            next += 2;
        }
    }
    (handed, skipped)
}

/// A read_file call's result as the whole-file block that would write the file: when it read
/// the whole file and its path is a path line.
fn read_as_block(arguments: &str, output: &str) -> Option<String> {
    path_of(arguments)
        .filter(|path| editblocks::path_line(path) == Some(path))
        .zip(whole_read(output))
        .map(|(path, content)| editblocks::whole_file(&path, &content))
}

/// The content of a file read whole by read_file, from its numbered lines (`     1\tline`, from
/// 1 on, none cut and no note after them); `None` for a page of a file, or anything else.
fn whole_read(output: &str) -> Option<String> {
    if !output.ends_with('\n') || output.contains(LINE_CUT) {
        return None;
    }
    match strip_numbers(output)? {
        (1, _, content) => Some(content),
        _ => None,
    }
}

/// The `path` argument of a call's arguments.
fn path_of(arguments: &str) -> Option<String> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    value["path"].as_str().map(str::to_string)
}

/// An assistant message's text, with its calls written out when the text does not show them
/// (as calls or edit blocks; writes as edit blocks when those are `declared`).
fn assistant_text(message: &Message, tools: &[&str], declared: Option<Format>) -> String {
    let mut text = message.content.clone().unwrap_or_default();
    let shown = editblocks::read(&text, tools, false, Some(Format::Both));
    if message.tool_calls.is_empty() || !shown.is_empty() {
        return text;
    }
    for call in &message.tool_calls {
        let arguments: Value = serde_json::from_str(&call.function.arguments)
            .unwrap_or_else(|_| Value::Object(Default::default()));
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let block = declared.and_then(|format| {
            editblocks::written(&call.function.name, &call.function.arguments, format)
        });
        if let Some(block) = block {
            text.push_str(&block);
            continue;
        }
        text.push_str(&format!(
            "```json\n{{\"name\": {}, \"arguments\": {arguments}}}\n```",
            Value::String(call.function.name.clone())
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::ToolCall;
    use crate::wire::textcalls;
    use serde_json::json;

    const TOOLS: [&str; 2] = ["bash", "read_file"];

    fn specs() -> Value {
        json!([
            {"type": "function", "function": {"name": "bash", "description": "Run a command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}},
            {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}}}
        ])
    }

    #[test]
    fn names_come_from_the_specs() {
        assert_eq!(names(&specs()), ["bash", "read_file"]);
        assert!(names(&json!(null)).is_empty());
    }

    #[test]
    fn the_prompt_gives_one_format_and_every_tool() {
        let prompt = tools_prompt(&specs(), Format::Whole);
        assert!(prompt.contains(
            "```json\n{\"name\": \"TOOL\", \"arguments\": {\"PARAMETER\": \"VALUE\"}}\n```"
        ));
        assert!(prompt.contains("- bash(command: string): Run a command."));
        assert!(prompt.contains("- read_file(limit?: integer, path: string): Read a file."));
        // The example shows the form only: no tool's call, nothing a model can copy to act.
        assert!(textcalls::recognize(&prompt, &TOOLS).is_empty());
    }

    #[test]
    fn the_edit_syntaxes_are_declared_with_the_file_tools_only() {
        for format in [Format::Whole, Format::Both] {
            assert_eq!(declared(&tools_prompt(&specs(), format)), None);
        }
        let mut specs = specs();
        for name in ["write_file", "edit_file"] {
            let spec = json!({"type": "function", "function": {"name": name}});
            specs.as_array_mut().unwrap().push(spec);
        }
        for (format, kinds) in [
            (Format::Whole, vec![("write_file", true)]),
            // One block per file: the second example, for the same file, is refused.
            (
                Format::Both,
                vec![("write_file", true), ("edit_file", false)],
            ),
        ] {
            let prompt = tools_prompt(&specs, format);
            assert!(prompt.ends_with(edits(format)));
            assert_eq!(declared(&prompt), Some(format));
            assert!(
                !prompt.contains("- write_file(") && !prompt.contains("- edit_file("),
                "the blocks stand in for the two tools' JSON form"
            );
            assert_eq!(
                prompt.contains("SEARCH"),
                format == Format::Both,
                "{format:?} declares what it reads"
            );
            // The examples in the declaration are blocks the reader takes.
            let found = editblocks::read(
                edits(format),
                &["write_file", "edit_file"],
                false,
                Some(format),
            );
            let found: Vec<(&str, bool)> = found
                .iter()
                .map(|f| (f.name.as_str(), f.error.is_none()))
                .collect();
            assert_eq!(found, kinds, "{format:?}");
        }
    }

    #[test]
    fn a_native_history_renders_as_plain_turns() {
        let history = vec![
            Message::system("sys"),
            Message::user("list and read"),
            Message::assistant(
                Some("Looking.".into()),
                vec![
                    ToolCall::new("c1", "bash", r#"{"command":"ls"}"#),
                    ToolCall::new("c2", "read_file", r#"{"path":"a"}"#),
                ],
            ),
            Message::tool("c1", "a\nb\n"),
            Message::tool("c2", "1\thello"),
            Message::assistant(Some("Done.".into()), vec![]),
            Message::user("thanks"),
        ];
        let out = render(&history, "TOOLS", &TOOLS);
        let shape: Vec<(Role, &str)> = out
            .iter()
            .map(|m| (m.role, m.content.as_deref().unwrap()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::System, "sys\n\nTOOLS"),
                (Role::User, "list and read"),
                (
                    Role::Assistant,
                    "Looking.\n\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\":\"ls\"}}\n```\n\n\
                     ```json\n{\"name\": \"read_file\", \"arguments\": {\"path\":\"a\"}}\n```"
                ),
                (
                    Role::User,
                    "Result of bash call 1 of 2:\na\nb\n\n\nResult of read_file call 2 of 2:\n1\thello"
                ),
                (Role::Assistant, "Done."),
                (Role::User, "thanks"),
            ]
        );
        assert!(out
            .iter()
            .all(|m| m.tool_calls.is_empty() && m.tool_call_id.is_none()));
    }

    #[test]
    fn where_the_edit_syntaxes_are_declared_writes_and_whole_reads_show_as_blocks() {
        let history = vec![
            Message::user("fix a.py"),
            Message::assistant(
                None,
                vec![ToolCall::new("c1", "read_file", r#"{"path":"a.py"}"#)],
            ),
            Message::tool("c1", "     1\tx = 1\n     2\t\n"),
            Message::assistant(
                None,
                vec![ToolCall::new("c2", "read_file", r#"{"path":"b.py"}"#)],
            ),
            Message::tool(
                "c2",
                "     1\ty\n[lines 1-1 of 9; call read_file with offset=2 to read more]",
            ),
            Message::assistant(
                None,
                vec![ToolCall::new(
                    "c3",
                    "write_file",
                    r#"{"path":"a.py","content":"x = 2\n"}"#,
                )],
            ),
            Message::tool("c3", "Overwrote a.py (6 bytes)"),
            Message::assistant(
                None,
                vec![ToolCall::new(
                    "c4",
                    "edit_file",
                    r#"{"path":"a.py","old_text":"x = 2\n","new_text":"x = 3\n"}"#,
                )],
            ),
            Message::tool("c4", "Edited a.py"),
        ];
        assert_eq!(whole_read("     2\tx\n"), None, "not from line 1");
        assert_eq!(whole_read("     1\tx… [line cut at 2000 chars]\n"), None);
        assert_eq!(whole_read("(a.py is empty)"), None);
        assert_eq!(
            whole_read("     1\tx"),
            None,
            "no newline after the last line"
        );
        let declared = format!("TOOLS{EDITS_BOTH}");
        let tools = ["bash", "read_file", "write_file", "edit_file"];
        let out = render(&history, &declared, &tools);
        let text = |i: usize| out[i].content.as_deref().unwrap();
        assert_eq!(
            text(10),
            "a.py\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE"
        );
        // Where only whole files are declared, an edit shows as its JSON call.
        let whole = render(&history, &format!("TOOLS{EDITS_WHOLE}"), &tools);
        assert_eq!(whole[8].content, out[8].content);
        let edit = whole[10].content.as_deref().unwrap();
        assert!(
            edit.starts_with("```json\n{\"name\": \"edit_file\""),
            "{edit}"
        );
        // The system prompt, the example (2 messages), then the history.
        assert_eq!(
            text(5),
            "Result of the read_file call:\na.py\n```\nx = 1\n\n```"
        );
        assert!(
            text(7).contains("     1\ty\n[lines 1-1 of 9"),
            "a page stays numbered"
        );
        assert_eq!(text(8), "a.py\n```\nx = 2\n```");
        // The same history where they are not declared: JSON calls and numbered lines.
        let out = render(&history, "TOOLS", &tools);
        assert!(out[3]
            .content
            .as_deref()
            .unwrap()
            .ends_with("     1\tx = 1\n     2\t\n"));
        assert!(out[6]
            .content
            .as_deref()
            .unwrap()
            .starts_with("```json\n{\"name\": \"write_file\""));
    }

    #[test]
    fn files_turn_read_for_the_task_come_before_it() {
        let ours = [
            message::turn_call_id(),
            message::turn_call_id(),
            message::turn_call_id(),
        ];
        let read = |id: &str, path: &str| {
            let arguments = format!("{{\"path\":\"{path}\"}}");
            Message::assistant(None, vec![ToolCall::new(id, "read_file", &arguments)])
        };
        let history = vec![
            Message::user("fix a.py and b.py"),
            read(&ours[0], "a.py"),
            Message::tool(&ours[0], "     1\tx = 1\n"),
            read(&ours[1], "b.py"),
            Message::tool(
                &ours[1],
                "     1\ty\n[lines 1-1 of 9; call read_file with offset=2 to read more]",
            ),
            read(&ours[2], "c.py"),
            Message::tool(&ours[2], "     1\tz\n"),
            read("c9", "a.py"),
            Message::tool("c9", "     1\tx = 1\n"),
        ];
        let declared = format!("TOOLS{EDITS_WHOLE}");
        let tools = ["bash", "read_file", "write_file", "edit_file"];
        let out = render(&history, &declared, &tools);
        let text = |i: usize| out[i].content.as_deref().unwrap().to_string();
        assert_eq!(
            text(3),
            format!("{HANDED}a.py\n```\nx = 1\n```\n\nfix a.py and b.py")
        );
        // A page of a file stays a call and its result, and so does what came after it; the
        // model's own read of a whole file is its call and a result.
        assert!(text(4).contains("\"path\":\"b.py\""), "{}", text(4));
        assert!(text(6).contains("\"path\":\"c.py\""));
        assert!(text(8).contains("\"path\":\"a.py\""));
        assert!(text(9).starts_with("Result of the read_file call:\na.py\n```"));
        assert_eq!(out.len(), 10);
        // Where the blocks are not declared, every read is a call and its result.
        let out = render(&history, "TOOLS", &tools);
        assert_eq!(out[1].content.as_deref(), Some("fix a.py and b.py"));
        assert_eq!(out.len(), 10);
        assert!(message::by_turn(&ours[0]) && !message::by_turn("c9"));
        assert!(!message::by_turn(&message::new_call_id()));
    }

    #[test]
    fn where_the_blocks_are_declared_a_worked_example_follows_the_system_prompt() {
        let history = vec![Message::system("sys"), Message::user("go")];
        let tools = ["bash", "read_file", "write_file", "edit_file"];
        let out = render(&history, &format!("TOOLS{EDITS_WHOLE}"), &tools);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        use Role::{Assistant, System, User};
        assert_eq!(roles, [System, User, Assistant, User]);
        assert_eq!(out[3].content.as_deref(), Some("go"));
        // The example hands a file over as the task's files are, and its reply writes it in
        // the declared syntax.
        let task = out[1].content.as_deref().unwrap();
        assert!(task.contains(&format!("{HANDED}hello.py\n```")), "{task}");
        let found = editblocks::read(
            out[2].content.as_deref().unwrap(),
            &tools,
            false,
            Some(Format::Whole),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "write_file");
        assert_eq!(
            serde_json::from_str::<Value>(&found[0].arguments).unwrap(),
            serde_json::json!({"path": "hello.py", "content": "print(\"hello, world\")\n"})
        );
        // Not where they are not declared.
        let out = render(&history, "TOOLS", &tools);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn calls_written_as_text_are_not_written_twice() {
        let text = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```";
        let history = vec![
            Message::user("go"),
            Message::assistant(
                Some(text.into()),
                vec![ToolCall::new("c1", "bash", r#"{"command":"ls"}"#)],
            ),
            Message::tool("c1", "out"),
        ];
        let out = render(&history, "TOOLS", &TOOLS);
        assert_eq!(out[0].role, Role::System, "a system prompt is added");
        assert_eq!(out[0].content.as_deref(), Some("TOOLS"));
        assert_eq!(out[2].content.as_deref(), Some(text));
        assert_eq!(
            out[3].content.as_deref(),
            Some("Result of the bash call:\nout")
        );
    }

    #[test]
    fn results_are_headed_by_their_tool_and_place_never_by_the_random_id() {
        let history = |ids: [&str; 3]| {
            vec![
                Message::user("go"),
                Message::assistant(None, vec![ToolCall::new(ids[0], "bash", "{}")]),
                Message::tool(ids[0], "one"),
                Message::assistant(
                    None,
                    vec![
                        ToolCall::new(ids[1], "bash", "{}"),
                        ToolCall::new(ids[2], "read_file", "{}"),
                    ],
                ),
                Message::tool(ids[1], "two"),
                Message::tool(ids[2], "three"),
            ]
        };
        let a = render(&history(["c1", "c2", "c3"]), "TOOLS", &TOOLS);
        let b = render(&history(["call_Xq", "call_9z", "call_Ab"]), "TOOLS", &TOOLS);
        assert_eq!(a, b, "the same history with other ids reads the same");
        assert_eq!(
            a[3].content.as_deref(),
            Some("Result of the bash call:\none")
        );
        assert_eq!(
            a[5].content.as_deref(),
            Some("Result of bash call 1 of 2:\ntwo\n\nResult of read_file call 2 of 2:\nthree")
        );
    }

    #[test]
    fn a_reply_ends_after_its_first_call_written_as_json() {
        let tools = ["bash", "read_file", "write_file", "edit_file"];
        let end = |text: &str, from: usize| first_call_end(text, from, &tools, Some(Format::Both));
        let call = |command: &str| {
            format!("```json\n{{\"name\": \"bash\", \"arguments\": {{\"command\": \"{command}\"}}}}\n```\n")
        };
        let first = format!("I'll look.\n\n{}", call("ls"));
        // Nothing after the call, or another call after it: the reply ends with the first.
        assert_eq!(end(&first, 0), Some(first.len()));
        let two = format!("{first}\nThen:\n\n{}", call("rm -r src"));
        assert_eq!(end(&two, 0), Some(first.len()));
        // Lines looked at before are not looked at again; a fence line not finished is not
        // a fence yet.
        assert_eq!(end(&first, first.len()), None);
        assert_eq!(end(&first[..first.len() - 1], 0), None);
        // Edit blocks before the call belong to the reply; the search goes past them.
        let edits = format!(
            "a.txt\n```\nA\n```\n\n{}\nb.txt\n```\nB\n```\n",
            call("cat a.txt")
        );
        let at = end(&edits, 0).unwrap();
        let read: Vec<(String, bool)> =
            editblocks::read(&edits[..at], &tools, false, Some(Format::Both))
                .into_iter()
                .map(|f| (f.name, f.edit))
                .collect();
        assert_eq!(
            read,
            [
                ("write_file".to_string(), true),
                ("bash".to_string(), false)
            ]
        );
        // In call tags, and a bare call object as the first paragraph.
        let tagged = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n";
        assert_eq!(end(&format!("{tagged}more\n"), 0), Some(tagged.len()));
        let bare = "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n";
        assert_eq!(
            end(&format!("{bare}\nThen I will see.\n"), 0),
            Some(bare.len())
        );
        // No call: an answer, a shell block shown, a JSON example in prose, a file block.
        for answer in [
            "It is done.\n",
            "Run this:\n\n```bash\nmake test\n```\n\nThen look.\n",
            "The call would be {\"name\": \"bash\"} and so on.\n",
            "a.txt\n```\n{\n}\n```\n\nWritten.\n",
        ] {
            assert_eq!(end(answer, 0), None, "{answer}");
        }
    }

    #[test]
    fn protocols_parse() {
        assert_eq!(Protocol::parse("text"), Some(Protocol::Text));
        assert_eq!(Protocol::parse("native"), Some(Protocol::Native));
        assert_eq!(Protocol::parse("auto"), Some(Protocol::Auto));
        assert_eq!(Protocol::parse("json"), None);
        assert!(!Protocol::Native.reads_text_calls());
        assert!(Protocol::Auto.reads_text_calls() && Protocol::Text.reads_text_calls());
    }
}
