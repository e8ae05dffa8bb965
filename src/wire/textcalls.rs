//! Tool calls a model wrote as text. Many local models, or servers whose chat template does not
//! catch them, put the call in the message text: Qwen2.5-Coder in a ```` ```json ```` block,
//! Hermes-style models (Qwen2.5, Qwen3, Hermes) in `<tool_call>` tags, Llama 3.x as a bare
//! object after `<|python_tag|>`, Mistral after `[TOOL_CALLS]`. `recognize` finds such calls.
//!
//! The rule is that nothing runs that the model did not clearly call: a call is a JSON object
//! that names one of the offered tools and carries its arguments (`{"name", "arguments"}`,
//! `"parameters"` instead of `"arguments"`, or the `{"function": {...}}` wrapping), and it must
//! stand on its own: alone in a fenced block (`json`, `tool_call`, `xml` or no language), inside
//! call tags, or the whole message (or its whole last paragraph). JSON that names no offered
//! tool, shell snippets in ```` ```bash ```` blocks and objects quoted inside prose are answers.
//! One exception, since small models invent tools (`python`; see the corpus): a message
//! that is nothing but call objects is a call whatever it names, and whatever shape its
//! arguments have. Nothing runs then; the tool dispatch answers that the tool does not exist
//! and lists those that do, or what its arguments must be.
//!
//! Pure: text in, calls out. The unit tests hold a corpus of real shapes and near-misses.

use serde_json::{Map, Value};

/// One call found in the text: an offered tool's name and its arguments as a JSON object text.
#[derive(Debug, PartialEq)]
pub struct TextCall {
    pub name: String,
    pub arguments: String,
}

/// Tags that wrap a call object: `<tool_call>` (Hermes, Qwen) and the variants llama.cpp's
/// Hermes parser accepts because models write them.
const WRAPPERS: [&str; 8] = [
    "tool_call",
    "tools",
    "tool",
    "function_call",
    "response",
    "json",
    "JSON",
    "xml",
];

/// Fence languages a call block may carry (none at all counts too).
const FENCES: [&str; 5] = ["json", "tool_call", "tool_calls", "xml", "tool"];

/// Special tokens some servers leave in the text around a call.
const END_TOKENS: [&str; 4] = ["<|eom_id|>", "<|eot_id|>", "<|im_end|>", "</s>"];

/// The calls written in `text` to the tools named in `tools`; empty when the text is an answer.
/// One exception: a message that is nothing but call objects (bare or alone in a fence) is a
/// call whatever tool it names, since small models invent tools (`python`, `shell`); the tool
/// run then says which tools there are, and nothing runs.
pub fn recognize(text: &str, tools: &[&str]) -> Vec<TextCall> {
    // Thinking is not calling: only what follows the reasoning counts.
    let mut text = match text.rfind("</think>") {
        Some(at) => &text[at + "</think>".len()..],
        None if text.trim_start().starts_with("<think>") => return Vec::new(),
        None => text,
    };
    text = text.trim();
    while let Some(token) = END_TOKENS.iter().find(|t| text.ends_with(*t)) {
        text = text[..text.len() - token.len()].trim_end();
    }
    let names = Names::Offered(tools);
    if let Some(rest) = text.strip_prefix("<|python_tag|>") {
        return sequence(rest, names).unwrap_or_default();
    }
    if text.starts_with("[TOOL_CALLS]") {
        return mistral(text, names).unwrap_or_default();
    }
    let calls = tagged(text, names);
    if !calls.is_empty() {
        return calls;
    }
    let calls = fenced(text, names);
    if !calls.is_empty() {
        return calls;
    }
    let calls = bare(text, names);
    if !calls.is_empty() {
        return calls;
    }
    sequence(whole_fence(text).unwrap_or(text), Names::Any).unwrap_or_default()
}

/// The calls of a whole reply's `text` (see `recognize`), each distinct call once: the same
/// call written again and again in one reply runs once. A reply that was `cut` short may end in
/// a half-written call, so when the whole text holds none, the whole lines before its last one
/// are read.
pub fn in_reply(text: &str, tools: &[&str], cut: bool) -> Vec<TextCall> {
    let mut calls = recognize(text, tools);
    if calls.is_empty() && cut {
        if let Some((whole, _)) = text.trim_end().rsplit_once('\n') {
            calls = recognize(whole, tools);
        }
    }
    distinct(calls)
}

/// `calls` with each distinct call once, in order.
fn distinct(mut calls: Vec<TextCall>) -> Vec<TextCall> {
    let mut seen = std::collections::HashSet::new();
    calls.retain(|call| seen.insert((call.name.clone(), call.arguments.clone())));
    calls
}

/// The calls of a reply to a request that declared the call format (the text protocol's
/// prompt: "answer with one fenced block like this"): those of `in_reply`, or else the calls in
/// a fenced call block whatever tool they name, since the prompt said that such a block is a
/// call. Nothing runs for a name that is no tool's: the dispatch answers which tools there are.
pub fn declared_in_reply(text: &str, tools: &[&str], cut: bool) -> Vec<TextCall> {
    let calls = in_reply(text, tools, cut);
    if calls.is_empty() {
        return distinct(fenced(text, Names::Any));
    }
    calls
}

/// Which tool names a call may have.
#[derive(Clone, Copy)]
enum Names<'a> {
    /// One of these.
    Offered(&'a [&'a str]),
    /// Any name that looks like a tool's.
    Any,
}

impl Names<'_> {
    fn allow(self, name: &str) -> bool {
        match self {
            Names::Offered(tools) => tools.contains(&name),
            Names::Any => {
                (1..=64).contains(&name.len())
                    && name.starts_with(|c: char| c.is_ascii_alphabetic())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            }
        }
    }
}

/// The content of the fence that makes up all of `text`, if it is one call fence.
fn whole_fence(text: &str) -> Option<&str> {
    let (first, rest) = text.split_once('\n')?;
    let info = fence_open(first)?;
    if !(info.is_empty() || FENCES.contains(&info.to_ascii_lowercase().as_str())) {
        return None;
    }
    let inner = rest.trim_end().strip_suffix("```")?;
    (!inner.contains("```")).then_some(inner)
}

/// Calls inside tags: `<tool_call>{…}</tool_call>` and its variants (possibly several, the
/// closing tag possibly missing at the end), `<function=NAME>{…}</function>` and
/// `<function name="NAME">…</function>`, with JSON or `<parameter=KEY>` arguments.
fn tagged(text: &str, names: Names) -> Vec<TextCall> {
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some((at, opener)) = next_opener(rest) {
        let after = &rest[at..];
        match opener {
            Opener::Wrapper(tag) => {
                let inner = &after[tag.len() + 2..];
                let close = format!("</{tag}>");
                let (inner, next) = match inner.find(&close) {
                    Some(end) => (&inner[..end], &inner[end + close.len()..]),
                    None => (inner, ""),
                };
                calls.extend(wrapped(inner, names));
                rest = next;
            }
            Opener::Function => {
                let (found, next) = function(after, names);
                calls.extend(found);
                rest = next;
            }
        }
    }
    calls
}

enum Opener {
    Wrapper(&'static str),
    Function,
}

/// Where the next call tag starts in `text`, and which it is. One pass over the `<`s, so a
/// message full of tags costs linear time.
fn next_opener(text: &str) -> Option<(usize, Opener)> {
    text.match_indices('<').find_map(|(at, _)| {
        let here = &text[at + 1..];
        if here.starts_with("function=") || here.starts_with("function name=\"") {
            return Some((at, Opener::Function));
        }
        WRAPPERS
            .into_iter()
            .find(|tag| here.strip_prefix(tag).is_some_and(|r| r.starts_with('>')))
            .map(|tag| (at, Opener::Wrapper(tag)))
    })
}

/// What a wrapper tag holds: call objects, a `<function…>` block, or either inside a fence.
fn wrapped(inner: &str, names: Names) -> Vec<TextCall> {
    let inner = unfence(inner.trim());
    if inner.starts_with("<function") {
        // One or more `<function…>` forms (never wrappers again: no recursion).
        let (mut calls, mut rest) = (Vec::new(), inner);
        while let Some(at) = rest.find("<function") {
            let (found, next) = function(&rest[at..], names);
            calls.extend(found);
            rest = next;
        }
        return calls;
    }
    sequence(inner, names).unwrap_or_default()
}

/// `<function=NAME>ARGS</function>` or `<function name="NAME">ARGS</function>` at the start of
/// `text`: the calls found there (none if it is not a call) and the text after it.
fn function<'a>(text: &'a str, names: Names) -> (Vec<TextCall>, &'a str) {
    let (name, body, next) = if let Some(rest) = text.strip_prefix("<function=") {
        let Some((name, rest)) = rest.split_once('>') else {
            return (Vec::new(), "");
        };
        let (body, next) = up_to_close(rest);
        (name.trim(), body, next)
    } else if let Some(rest) = text.strip_prefix("<function name=\"") {
        let Some((name, rest)) = rest.split_once('"') else {
            return (Vec::new(), "");
        };
        if let Some(rest) = rest.strip_prefix('>') {
            let (body, next) = up_to_close(rest);
            (name, body, next)
        } else if let Some(rest) = rest.trim_start().strip_prefix("arguments=") {
            // Qwen2.5-Coder-1.5B: <function name="NAME" arguments='{…}'/>, with the JSON
            // unescaped inside the quotes.
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                return (Vec::new(), rest);
            };
            let rest = &rest[1..];
            let Some(end) = rest.find(&format!("{quote}/>")) else {
                return (Vec::new(), "");
            };
            (name, &rest[..end], &rest[end + 3..])
        } else {
            return (Vec::new(), rest);
        }
    } else {
        return (Vec::new(), &text[1..]);
    };
    if !names.allow(name) {
        return (Vec::new(), next);
    }
    let body = body.trim();
    let arguments = if body.starts_with("<parameter=") {
        parameters(body)
    } else {
        match serde_json::from_str::<Value>(body) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    };
    let calls = arguments
        .map(|map| TextCall {
            name: name.to_string(),
            arguments: Value::Object(map).to_string(),
        })
        .into_iter()
        .collect();
    (calls, next)
}

/// The body of a `<function…>` up to its `</function>` (or the end), and the text after it.
fn up_to_close(text: &str) -> (&str, &str) {
    match text.find("</function>") {
        Some(end) => (&text[..end], &text[end + "</function>".len()..]),
        None => (text, ""),
    }
}

/// Qwen3-Coder's arguments: `<parameter=KEY>\nVALUE\n</parameter>` repeated. A value that is a
/// JSON number, boolean, array or object is taken as that; anything else is a string.
fn parameters(mut body: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    loop {
        body = body.trim_start();
        if body.is_empty() {
            return Some(map);
        }
        let rest = body.strip_prefix("<parameter=")?;
        let (key, rest) = rest.split_once('>')?;
        let (value, rest) = rest.split_once("</parameter>")?;
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let typed = match serde_json::from_str::<Value>(value.trim()) {
            Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_) | Value::Object(_))) => v,
            _ => Value::String(value.to_string()),
        };
        map.insert(key.trim().to_string(), typed);
        body = rest;
    }
}

/// Mistral's `[TOOL_CALLS][{…}]` (or `[TOOL_CALLS] {…}`) and `[TOOL_CALLS]NAME[ARGS]{…}`,
/// possibly repeated.
fn mistral(text: &str, names: Names) -> Option<Vec<TextCall>> {
    let mut calls = Vec::new();
    for part in text
        .split("[TOOL_CALLS]")
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        match part.split_once("[ARGS]") {
            Some((name, arguments)) if !name.contains(['{', '[']) => {
                let name = name.trim();
                match serde_json::from_str::<Value>(arguments.trim()) {
                    Ok(Value::Object(map)) if names.allow(name) => calls.push(TextCall {
                        name: name.to_string(),
                        arguments: Value::Object(map).to_string(),
                    }),
                    _ => return None,
                }
            }
            _ => calls.extend(sequence(part, names)?),
        }
    }
    Some(calls)
}

/// Calls in fenced blocks whose whole content is calls; other blocks are left alone.
fn fenced(text: &str, names: Names) -> Vec<TextCall> {
    let mut calls = Vec::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let Some(info) = fence_open(line) else {
            continue;
        };
        let mut content = String::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            content.push_str(line);
        }
        if !info.is_empty() && !FENCES.contains(&info.to_ascii_lowercase().as_str()) {
            continue;
        }
        let content = content.trim();
        let found = if content.starts_with('<') {
            tagged(content, names)
        } else {
            sequence(content, names).unwrap_or_default()
        };
        calls.extend(found);
    }
    calls
}

/// The language of a line that opens a fence (`` ```json ``), or `None`.
pub fn fence_open(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let info = trimmed.strip_prefix("```")?.trim();
    (!info.contains('`')).then_some(info)
}

/// `text` without a fence around it, if it has one.
fn unfence(text: &str) -> &str {
    let Some(first) = text.lines().next().filter(|l| fence_open(l).is_some()) else {
        return text;
    };
    let body = &text[first.len()..];
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// The whole message as calls (Llama 3.x, Qwen2.5-Coder without a fence), or its last
/// paragraph when that starts on a line of its own and is nothing but calls, or its first
/// paragraph when that is nothing but calls (Qwen2.5-Coder-1.5B writes the call, then goes on
/// to explain what its result will show).
fn bare(text: &str, names: Names) -> Vec<TextCall> {
    if let Some(calls) = sequence(text, names) {
        return calls;
    }
    if let Some((first, _)) = text.split_once("\n\n").filter(|_| text.starts_with('{')) {
        if let Some(calls) = sequence(first, names) {
            return calls;
        }
    }
    // Lines that could start the trailing calls, latest last; only the last few are tried, so
    // a long message costs little.
    let starts: Vec<usize> = text
        .match_indices('\n')
        .map(|(at, _)| at + 1)
        .filter(|&at| text[at..].starts_with(['{', '[']))
        .collect();
    let from = starts.len().saturating_sub(16);
    starts[from..]
        .iter()
        .find_map(|&at| sequence(&text[at..], names))
        .unwrap_or_default()
}

/// `text` as one or more calls: objects or arrays of objects, separated by white space, `;` or
/// `,`. `None` unless every value is a call to an offered tool. JSON that is invalid only for
/// its strings (`\;` in a `find -exec`, a raw newline in a file's content) is read as meant.
fn sequence(text: &str, names: Names) -> Option<Vec<TextCall>> {
    strict_sequence(text, names).or_else(|| strict_sequence(&repair_strings(text)?, names))
}

/// `text` with the strings of its JSON made valid: a backslash that starts no JSON escape is
/// doubled (so `\;` means the two characters the model wrote), raw control characters are
/// escaped, and so is a quote inside a string that JSON's structure cannot follow (the
/// model's `"""` of a Python docstring in a file's content): a quote ends a string only
/// before `,` `:` `}` `]` or the end. `None` when there was nothing to repair.
fn repair_strings(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let (mut inside, mut changed) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if inside => {
                let next = chars.clone().find(|c| !c.is_whitespace());
                if next.is_some_and(|n| !",:}]".contains(n)) {
                    out.push_str("\\\"");
                    changed = true;
                    continue;
                }
                inside = false;
            }
            '"' => inside = true,
            '\\' if inside => match chars.peek() {
                Some(&next) if "\"\\/bfnrtu".contains(next) => {
                    out.push(c);
                    out.push(next);
                    chars.next();
                    continue;
                }
                _ => {
                    out.push_str("\\\\");
                    changed = true;
                    continue;
                }
            },
            '\n' | '\r' | '\t' if inside => {
                out.push_str(match c {
                    '\n' => "\\n",
                    '\r' => "\\r",
                    _ => "\\t",
                });
                changed = true;
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    changed.then_some(out)
}

fn strict_sequence(text: &str, names: Names) -> Option<Vec<TextCall>> {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        rest = rest[values.byte_offset()..]
            .trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',');
        match value {
            Value::Object(object) => calls.push(call(object, names)?),
            Value::Array(items) if !items.is_empty() => {
                for item in items {
                    match item {
                        Value::Object(object) => calls.push(call(object, names)?),
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// One call object: `{"name", "arguments" | "parameters"}`, optionally with `"type":
/// "function"` and an `"id"`, or the same inside `{"function": {...}}`. Arguments are an object
/// or a string holding one. Any other key makes it something else (a config, a manifest).
fn call(mut object: Map<String, Value>, names: Names) -> Option<TextCall> {
    let only = |object: &Map<String, Value>, allowed: &[&str]| {
        object.keys().all(|k| allowed.contains(&k.as_str()))
            && object.get("type").is_none_or(|t| t == "function")
            && object.get("id").is_none_or(Value::is_string)
    };
    if let Some(Value::Object(_)) = object.get("function") {
        if !only(&object, &["function", "type", "id"]) {
            return None;
        }
        let Some(Value::Object(inner)) = object.remove("function") else {
            return None;
        };
        object = inner;
    }
    if !only(&object, &["name", "arguments", "parameters", "type", "id"]) {
        return None;
    }
    let name = object.get("name")?.as_str()?;
    if !names.allow(name) {
        return None;
    }
    let arguments = match object
        .get("arguments")
        .or_else(|| object.get("parameters"))?
    {
        Value::Object(map) => Value::Object(map.clone()).to_string(),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Value::Object(map).to_string(),
            // A message that is nothing but a call keeps arguments of the wrong shape: the
            // tool's error teaches the model the right one (normalization gives the history
            // an object in their place, so servers accept it).
            _ if matches!(names, Names::Any) => Value::String(text.clone()).to_string(),
            _ => return None,
        },
        Value::Null => return None,
        // Qwen2.5-Coder-0.5B: `"arguments": ["sleep 30; echo finished", "notes.txt"]`.
        other if matches!(names, Names::Any) => other.to_string(),
        _ => return None,
    };
    Some(TextCall {
        name: name.to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: [&str; 4] = ["bash", "read_file", "write_file", "edit_file"];

    fn calls(text: &str, tools: &[&str]) -> Vec<(String, Value)> {
        recognize(text, tools)
            .into_iter()
            .map(|c| {
                let args = serde_json::from_str(&c.arguments).expect("arguments are JSON");
                (c.name, args)
            })
            .collect()
    }

    /// A corpus entry: what it is, the model's text, the tools offered, the calls expected.
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], Vec<(String, Value)>);

    fn one(name: &str, args: Value) -> Vec<(String, Value)> {
        vec![(name.to_string(), args)]
    }

    /// Real shapes: each was written by a model, as reported where the comment says. Tools
    /// named there are offered under those names.
    #[test]
    fn corpus_of_real_calls() {
        let special = ["special_function", "python", "internet_search"];
        let cases: Vec<Case> = vec![
            (
                // Qwen2.5-Coder-1.5B against llama-server, measured for turn issue 9.
                "qwen2.5-coder fenced json",
                "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python hello.py\"}}\n```",
                &OURS,
                one("bash", serde_json::json!({"command": "python hello.py"})),
            ),
            (
                // The same model, two calls in one block, one per line (turn issue 9).
                "qwen2.5-coder two objects one per line",
                "To do this, I will write the script and run it.\n\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hi')\\n\"}}\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python hello.py\"}}\n```\n",
                &OURS,
                vec![
                    ("write_file".into(), serde_json::json!({"path": "hello.py", "content": "print('hi')\n"})),
                    ("bash".into(), serde_json::json!({"command": "python hello.py"})),
                ],
            ),
            (
                // The same model, pretty-printed (measured for turn issue 9).
                "qwen2.5-coder pretty-printed",
                "```json\n{\n  \"name\": \"bash\",\n  \"arguments\": {\n    \"command\": \"echo 'Hello, world!'\"\n  }\n}\n```",
                &OURS,
                one("bash", serde_json::json!({"command": "echo 'Hello, world!'"})),
            ),
            (
                // The same model: calls as XML attributes inside <tools>, the JSON unescaped
                // in single quotes (measured for turn issue 9).
                "qwen2.5-coder-1.5b function attributes",
                "<tools>\n    <function name=\"write_file\" arguments='{\"content\": \"print('Hello, world!')\", \"path\": \"hello.py\"}'/>\n    <function name=\"bash\" arguments='{\"command\": \"./hello.py\"}'/>\n</tools>",
                &OURS,
                vec![
                    ("write_file".into(), serde_json::json!({"content": "print('Hello, world!')", "path": "hello.py"})),
                    ("bash".into(), serde_json::json!({"command": "./hello.py"})),
                ],
            ),
            (
                // The same model, after a failed run: prose, then calls as examples
                // (measured for turn issue 9). Both blocks are calls.
                "qwen2.5-coder-1.5b calls among prose",
                "You need to create the `hello.py` file first. You can do this using the `write_file` function:\n```json\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"print('Hello, world!')\", \"path\": \"hello.py\"}}\n```\nThen, you can run the script using the `bash` function:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python3 hello.py\"}}\n```\nThis will print 'Hello, world!' to the console.",
                &OURS,
                vec![
                    ("write_file".into(), serde_json::json!({"content": "print('Hello, world!')", "path": "hello.py"})),
                    ("bash".into(), serde_json::json!({"command": "python3 hello.py"})),
                ],
            ),
            (
                // Qwen2.5-Coder-32B via llama.cpp: bare JSON after prose (openclaw #60601).
                "qwen2.5-coder-32b prose then bare json",
                "Sure, let's try again to check the config file.\n\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"config.toml\"}}",
                &OURS,
                one("read_file", serde_json::json!({"path": "config.toml"})),
            ),
            (
                // ... and in <tools> tags instead of <tool_call> (openclaw #60601).
                "qwen2.5-coder-32b tools tag",
                "<tools>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tools>",
                &OURS,
                one("read_file", serde_json::json!({"path": "src/main.rs"})),
            ),
            (
                // Qwen2.5-Coder-7B: "60% code blocks + 40% plain JSON" (vllm #32926).
                "qwen2.5-coder plain json",
                "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls -la\"}}",
                &OURS,
                one("bash", serde_json::json!({"command": "ls -la"})),
            ),
            (
                // QwQ/Qwen3 through vLLM's hermes parser test: thinking, then the tag.
                "hermes after thinking",
                "好的，用户现在要研发一个5MW的燃气轮机。\n</think>\n\n<tool_call>\n{\"name\": \"internet_search\", \"arguments\": {\"question\": \"5MW燃气轮机设计参数\"}}\n</tool_call>\n\n ",
                &special,
                one("internet_search", serde_json::json!({"question": "5MW燃气轮机设计参数"})),
            ),
            (
                // llama.cpp test-chat.cpp, Hermes 2 Pro: the forms its parser accepts.
                "hermes tool_call multi-line",
                "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes function= form",
                "<function=special_function>{\"arg1\": 1}</function>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes function name= form",
                "<function name=\"special_function\">\n{\"arg1\": 1}\n</function>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes response tag in an xml fence",
                "```xml\n<response>\n    {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</response>\n```",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes function_call in a json fence",
                "```json\n\n                    <function_call> {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}} \n                    </function_call> \n``` ",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes bare fence, indented object",
                "```\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes xml tag, object over lines",
                "<xml>\n  {\n    \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}\n  }\n</xml>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                "hermes JSON tag",
                "<JSON>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</JSON>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                // QwQ-32B's template opens <think> itself, so only the close is seen.
                "qwq thinking without its opening tag",
                "I'm\nthinking</think>\n<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                // Llama 3.1 and 3.2 templates in llama.cpp test-chat.cpp.
                "llama 3.x parameters",
                "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}",
                &special,
                one("special_function", serde_json::json!({"arg1": 1})),
            ),
            (
                // Llama through Together AI, as a llama-stack tool parser documents it.
                "llama python_tag with type",
                "<|python_tag|>{\n    \"type\": \"function\",\n    \"name\": \"bash\",\n    \"parameters\": {\"command\": \"date\"}\n}<|eom_id|>",
                &OURS,
                one("bash", serde_json::json!({"command": "date"})),
            ),
            (
                // vLLM's llama3_json tests: several calls separated by semicolons.
                "llama 3.x semicolons",
                "{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}} ; {\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}",
                &OURS,
                vec![
                    ("read_file".into(), serde_json::json!({"path": "a"})),
                    ("bash".into(), serde_json::json!({"command": "ls"})),
                    ("read_file".into(), serde_json::json!({"path": "b"})),
                ],
            ),
            (
                // vLLM's llama3_json tests: braces and escaped quotes inside strings.
                "llama 3.x escapes",
                "{\"name\": \"bash\", \"parameters\": {\"command\": \"echo \\\"Hello {world}\\\" [x]\"}}",
                &OURS,
                one("bash", serde_json::json!({"command": "echo \"Hello {world}\" [x]"})),
            ),
            (
                // Qwen3-Coder's XML form (llama.cpp issue #15012).
                "qwen3-coder xml parameters",
                "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/lib.rs\n</parameter>\n<parameter=offset>\n40\n</parameter>\n</function>\n</tool_call>",
                &OURS,
                one("read_file", serde_json::json!({"path": "src/lib.rs", "offset": 40})),
            ),
            (
                // Mistral Nemo / Small 2409 / Ministral (mlx-lm #1374, #1643).
                "mistral json list with id",
                "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"/tmp/test.txt\"}, \"id\": \"abcdefghi\"}]",
                &OURS,
                one("read_file", serde_json::json!({"path": "/tmp/test.txt"})),
            ),
            (
                // Devstral / Mistral Small 3.x (Rapid-MLX #1071).
                "mistral name[ARGS]",
                "[TOOL_CALLS]bash[ARGS]{\"command\": \"ls src\"}[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}",
                &OURS,
                vec![
                    ("bash".into(), serde_json::json!({"command": "ls src"})),
                    ("read_file".into(), serde_json::json!({"path": "a"})),
                ],
            ),
            (
                // OpenAI's own shape, which models copy from their training data.
                "openai function wrapper with string arguments",
                "```json\n{\"type\": \"function\", \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}}\n```",
                &OURS,
                one("bash", serde_json::json!({"command": "pwd"})),
            ),
            (
                "array of calls in a tool_call fence",
                "```tool_call\n[{\"name\": \"bash\", \"arguments\": {\"command\": \"a\"}}, {\"name\": \"bash\", \"arguments\": {\"command\": \"b\"}}]\n```",
                &OURS,
                vec![
                    ("bash".into(), serde_json::json!({"command": "a"})),
                    ("bash".into(), serde_json::json!({"command": "b"})),
                ],
            ),
            (
                "several tool_call tags",
                "I'll look at both.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>",
                &OURS,
                vec![
                    ("read_file".into(), serde_json::json!({"path": "a"})),
                    ("read_file".into(), serde_json::json!({"path": "b"})),
                ],
            ),
            (
                "tool_call whose closing tag the server swallowed",
                "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
                &OURS,
                one("bash", serde_json::json!({"command": "ls"})),
            ),
            (
                "a fence the reply cut off",
                "Let me check.\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n",
                &OURS,
                one("bash", serde_json::json!({"command": "ls"})),
            ),
        ];
        for (what, text, tools, expected) in cases {
            assert_eq!(calls(text, tools), expected, "{what}");
        }
    }

    /// Answers that look a little like calls: none of them may run anything.
    #[test]
    fn near_misses_stay_answers() {
        let cases: [(&str, &str); 16] = [
            (
                "an invented tool in a block among prose",
                "You could call it like this:\n```json\n{ \"name\": \"Skill\", \"arguments\": { \"name\": \"none\" } }\n```\nif it existed.",
            ),
            (
                "a package manifest",
                "Your package.json should look like this:\n```json\n{\"name\": \"bash\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"jest\"}}\n```",
            ),
            (
                "a config example",
                "Set this in config.json:\n```json\n{\"server\": {\"port\": 8080}, \"name\": \"demo\"}\n```\nThen restart.",
            ),
            (
                "a shell snippet",
                "Run this to see the files:\n```bash\nls -la\n```",
            ),
            (
                "a call-shaped object in a bash fence",
                "```bash\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
            ),
            (
                "a call-shaped object in a python fence",
                "```python\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
            ),
            (
                // vLLM's llama3_json parser takes this as a call; turn does not: the object
                // is quoted inside a sentence.
                "an object inside a sentence",
                "Here is the result: {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}} Would you like to know more?",
            ),
            (
                "an object followed by more prose on the same line",
                "{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}} would list the files.",
            ),
            (
                "a first paragraph that is an object but no call",
                "{\"port\": 8080}\n\nThat is the setting to use.",
            ),
            (
                "a call without arguments",
                "```json\n{\"name\": \"bash\"}\n```",
            ),
            (
                "a block mixing a call and an example",
                "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n{\"port\": 8080}\n```",
            ),
            (
                "broken JSON",
                "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}\n```",
            ),
            (
                // Thinking about a call is not making it.
                "a call inside unfinished thinking",
                "<think>I could run <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
            ),
            (
                // Llama 3.1's built-in python tool, which turn does not offer.
                "llama builtin tool",
                "<|python_tag|>python.call(code=\"print('hey')\")",
            ),
            (
                "a tag naming an unknown function",
                "<function=rm_rf>{\"path\": \"/\"}</function>",
            ),
            ("plain prose", "The tests pass now. I changed `add` in src/lib.rs."),
        ];
        for (what, text) in cases {
            assert_eq!(recognize(text, &OURS), Vec::new(), "{what}");
        }
    }

    #[test]
    fn a_call_as_the_first_paragraph_is_a_call_whatever_follows() {
        // Qwen2.5-Coder-1.5B against llama-server: the call, then what it expects to see.
        let text = "{\"name\": \"bash\", \"arguments\": {\"command\": \"python3 -m unittest\"}}\n\nThe output of `python3 -m unittest` should indicate why the tests are failing. You can run:\n\n```sh\npython3 test_main.py\n```";
        assert_eq!(
            calls(text, &OURS),
            one(
                "bash",
                serde_json::json!({"command": "python3 -m unittest"})
            )
        );
        // Invented tools count only when the message is nothing but calls.
        let text = "{\"name\": \"python\", \"arguments\": {\"code\": \"1\"}}\n\nThat runs it.";
        assert_eq!(calls(text, &OURS), Vec::new());
    }

    #[test]
    fn strings_that_are_invalid_json_are_read_as_meant() {
        // Qwen2.5-Coder-1.5B: `\;` is no JSON escape, but the command means it.
        let text = r#"{"name": "bash", "arguments": {"command": "find . -name '*.py' -exec sed -i 's/a/b/g' {} \; && echo ok"}}"#;
        assert_eq!(
            calls(text, &OURS),
            one(
                "bash",
                serde_json::json!({"command": "find . -name '*.py' -exec sed -i 's/a/b/g' {} \\; && echo ok"})
            )
        );
        // A raw newline and tab in a file's content, in a fence.
        let text = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.py\", \"content\": \"if x:\n\ty()\n\"}}\n```";
        assert_eq!(
            calls(text, &OURS),
            one(
                "write_file",
                serde_json::json!({"path": "a.py", "content": "if x:\n\ty()\n"})
            )
        );
        // Qwen2.5-Coder-1.5B: a docstring's quotes left unescaped in a file's content.
        let text = r##"{"name": "write_file", "arguments": {"path": "g.py", "content": "#!/usr/bin/env python3\n"""Print a greeting."""\nprint("hi")\n"}}"##;
        assert_eq!(
            calls(text, &OURS),
            one(
                "write_file",
                serde_json::json!({"path": "g.py", "content": "#!/usr/bin/env python3\n\"\"\"Print a greeting.\"\"\"\nprint(\"hi\")\n"})
            )
        );
        // Valid escapes stay as they are; broken structure stays broken.
        assert_eq!(repair_strings(r#"{"a": "x\"y\\z\u0041"}"#), None);
        assert_eq!(
            calls(r#"{"name": "bash", "arguments": {"command": "a\;"}"#, &OURS),
            Vec::new()
        );
    }

    #[test]
    fn a_message_that_is_only_a_call_keeps_arguments_of_the_wrong_shape() {
        let text = r#"{"name": "bash", "arguments": ["sleep 30; echo finished", "notes.txt"]}"#;
        let found = recognize(text, &OURS);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].arguments,
            r#"["sleep 30; echo finished","notes.txt"]"#
        );
        let fenced = "```json\n{\"name\": \"bash\", \"arguments\": \"ls -la\"}\n```";
        assert_eq!(recognize(fenced, &OURS)[0].arguments, r#""ls -la""#);
        // Among prose, or without arguments, the same object is no call.
        let prose = format!("Try this:\n\n{text}\n\nIt lists them.");
        assert!(recognize(&prose, &OURS).is_empty());
        assert!(recognize(r#"{"name": "bash", "arguments": null}"#, &OURS).is_empty());
    }

    /// Small models invent tools. A message that is nothing but such a call is still a call,
    /// so the model hears which tools there are (the run of an unknown tool is an error).
    #[test]
    fn a_message_that_is_only_a_call_is_a_call_to_whatever_it_names() {
        // Qwen2.5-Coder-1.5B against llama-server, measured for turn issue 9.
        let text = "```json\n{\n  \"name\": \"python\",\n  \"arguments\": {\n    \"command\": \"python hello.py\",\n    \"timeout\": 60\n  }\n}\n```";
        assert_eq!(
            calls(text, &OURS),
            one(
                "python",
                serde_json::json!({"command": "python hello.py", "timeout": 60})
            )
        );
        // qwen2.5-coder:14b through Ollama answering "hello" (thClaws #50).
        let text = "```json\n{ \"name\": \"Skill\", \"arguments\": { \"name\": \"none\" } }\n```";
        assert_eq!(
            calls(text, &OURS),
            one("Skill", serde_json::json!({"name": "none"}))
        );
        let bare = "{\"name\": \"shell\", \"arguments\": {\"cmd\": \"ls\"}}";
        assert_eq!(
            calls(bare, &OURS),
            one("shell", serde_json::json!({"cmd": "ls"}))
        );
        // Still only call objects, and names that look like a tool's.
        for text in [
            "```json\n{\"name\": \"demo\", \"version\": \"1.0\"}\n```",
            "```json\n{\"name\": \"rm -rf /\", \"arguments\": {}}\n```",
            "```bash\n{\"name\": \"python\", \"arguments\": {}}\n```",
            "```json\n{\"name\": \"python\", \"arguments\": {}}\n```\nand more text",
            "Call it so: {\"name\": \"python\", \"arguments\": {}}",
        ] {
            assert_eq!(recognize(text, &OURS), Vec::new(), "{text}");
        }
    }

    #[test]
    fn only_offered_tools_count() {
        let text = "Like this:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n";
        assert_eq!(recognize(text, &["read_file"]), Vec::new());
        assert_eq!(recognize(text, &[]), Vec::new());
        assert_eq!(recognize(text, &["bash"]).len(), 1);
    }

    #[test]
    fn a_call_block_and_a_bash_block_run_only_the_call() {
        let text = "First:\n```bash\nrm -rf build\n```\nI will do it with the tool:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```";
        assert_eq!(
            calls(text, &OURS),
            one("bash", serde_json::json!({"command": "ls"}))
        );
    }

    #[test]
    fn a_reply_runs_each_call_once_and_a_cut_one_up_to_its_last_line() {
        let call = r#"{"name": "bash", "arguments": {"command": "ls"}}"#;
        let twice = format!("{call}\n{call}");
        assert_eq!(in_reply(&twice, &OURS, false).len(), 1);
        let cut = format!("{call}\n{{\"name\": \"bash\", \"argu");
        assert_eq!(in_reply(&cut, &OURS, true).len(), 1);
        assert!(in_reply(&cut, &OURS, false).is_empty());
    }

    #[test]
    fn arguments_come_out_as_compact_object_text() {
        let found = recognize(
            "{\"name\": \"bash\", \"arguments\": {\"command\":   \"ls\"}}",
            &OURS,
        );
        assert_eq!(found[0].arguments, "{\"command\":\"ls\"}");
    }

    #[test]
    fn hostile_input_is_an_answer_and_does_not_hang() {
        let deep = "[".repeat(10_000);
        assert!(recognize(&deep, &OURS).is_empty());
        let many = "{\n".repeat(20_000);
        assert!(recognize(&many, &OURS).is_empty());
        let tags = "<tool_call>".repeat(5_000);
        assert!(recognize(&tags, &OURS).is_empty());
        assert!(recognize("<function=", &OURS).is_empty());
        assert!(recognize("<function name=\"bash", &OURS).is_empty());
        assert!(recognize("[TOOL_CALLS]", &OURS).is_empty());
        assert!(recognize("```", &OURS).is_empty());
        assert!(recognize("", &OURS).is_empty());
        assert!(recognize("<tool_call>é</tool_call>ü", &OURS).is_empty());
        let nested = "<tool_call><function=bash>".repeat(3000);
        assert!(recognize(&nested, &OURS).is_empty());
        let attrs = "<tools><function name=\"bash\" arguments='".repeat(3000);
        assert!(recognize(&attrs, &OURS).is_empty());
    }
}
