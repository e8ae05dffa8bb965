//! Reading a model's reply: server-sent events into data payloads (`Sse`), and payloads, whether
//! streamed deltas or one whole response, into one assistant message (`Assembler`).
//!
//! Pure: lines in, pieces of text and a finished `Reply` out. Tolerant of what real servers
//! send (llama.cpp, Ollama, vLLM, LM Studio): arguments as objects, calls without index or id,
//! numeric ids, usage chunks with no choices, `finish_reason: stop` alongside calls. Hard caps
//! on what one reply may hold (`MAX_*`) turn a server that never stops into a clear error
//! instead of exhausted memory.

use crate::wire::message::ToolCall;
use serde::Deserialize;
use serde_json::Value;

/// The most one reply's text may hold (16 MiB): far beyond what a model writes in one reply.
pub const MAX_CONTENT: usize = 16 << 20;
/// The most one tool call's arguments may hold (16 MiB): a `write_file` of a large file fits.
pub const MAX_ARGUMENTS: usize = 16 << 20;
/// The most one reply may hold in all (32 MiB): text, reasoning, and every call.
pub const MAX_REPLY: usize = 32 << 20;
/// The most tool calls one reply may make.
pub const MAX_CALLS: usize = 1024;
/// The most one SSE line, or one event's data, may hold (32 MiB): room for the largest
/// arguments sent whole in one chunk, JSON-escaped.
pub const MAX_EVENT: usize = 32 << 20;
/// What a call costs in `MAX_REPLY` besides its text, so endless empty calls are bounded too.
const CALL_COST: usize = 64;
/// The most JSON values one payload may hold: parsed into a tree, a value takes many times
/// the bytes of its text (`[0,0,…]` would grow 16-fold), so a dense payload is refused before
/// it is parsed. A real chunk holds a few dozen.
const MAX_VALUES: usize = 200_000;

/// Whether `data` holds more than `MAX_VALUES` JSON values, counted by the brackets, commas
/// and colons outside strings. One pass over the bytes, and none for payloads too short to.
fn too_many_values(data: &str) -> bool {
    if data.len() <= MAX_VALUES {
        return false;
    }
    let (mut count, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in data.as_bytes() {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{' | b',' | b':') => count += 1,
            (false, _, _) => {}
        }
    }
    count > MAX_VALUES
}

/// Splits an SSE byte stream, line by line, into event data. Comments (`: keep-alive`) and
/// the `event:`/`id:`/`retry:` fields are skipped.
#[derive(Default)]
pub struct Sse {
    data: String,
    started: bool,
    too_long: bool,
}

impl Sse {
    /// Feeds one line (without its newline); returns an event's data when a blank line ends it.
    pub fn line(&mut self, line: &str) -> Option<String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return self.finish();
        }
        if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            if self.data.len() + value.len() + 1 > MAX_EVENT {
                self.too_long = true;
                return None;
            }
            if self.started {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.started = true;
        }
        None
    }

    /// Whether an event's data went over `MAX_EVENT` (what went over was not kept).
    pub fn too_long(&self) -> bool {
        self.too_long
    }

    /// Whether a line belongs to an event stream: a field, a comment or a blank line.
    pub fn is_sse(line: &str) -> bool {
        line.trim().is_empty()
            || line.starts_with(':')
            || ["data", "event", "id", "retry"]
                .iter()
                .any(|field| line.starts_with(field))
    }

    /// The last event, when the stream ends without a blank line.
    pub fn finish(&mut self) -> Option<String> {
        self.started = false;
        Some(std::mem::take(&mut self.data)).filter(|d| !d.is_empty())
    }
}

/// Why a payload could not be used.
#[derive(Debug, PartialEq)]
pub enum Fault {
    /// The payload is an error the server reports, with its message.
    Server(String),
    /// The payload is not something a Chat Completions server sends.
    Garbled(String),
}

/// Text as it arrives, for display.
#[derive(Debug, PartialEq)]
pub enum Piece<'a> {
    Content(&'a str),
    Reasoning(&'a str),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    /// Prompt tokens the server took from its cache instead of computing them, where it says:
    /// OpenAI's `usage.prompt_tokens_details.cached_tokens`, llama-server's `timings.cache_n`.
    #[serde(skip)]
    pub cached_tokens: Option<u64>,
}

/// One finished assistant reply.
#[derive(Debug, Default, PartialEq)]
pub struct Reply {
    /// `None` when the model said nothing (or only "") besides its calls.
    pub content: Option<String>,
    pub calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

#[derive(Default, Debug)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// The `finish_reason` of a reply turn stopped reading because it repeated itself.
pub const REPETITION: &str = "repetition";

/// Consecutive repeats of one line that mean the model is stuck in a loop: blank lines, and
/// lines with text (which code can legitimately repeat a few times).
const BLANK_REPEATS: u32 = 64;
const LINE_REPEATS: u32 = 128;

/// A block of lines repeated back to back this many times, `BLOCK_LINES` lines in all, is a
/// loop too: Qwen2.5-Coder-1.5B, after two tool results, wrote the same 17-line
/// `<tool_response>` block again and again until its budget ran out.
const BLOCK_REPEATS: usize = 3;
const BLOCK_LINES: usize = 36;
/// The longest block looked for, and the lines kept to look in.
const MAX_BLOCK: usize = 64;
const KEPT_LINES: usize = MAX_BLOCK * BLOCK_REPEATS;

/// A piece of one line written again and again without a line break (a sentence, say) is a
/// loop when it repeats back to back `IN_LINE_REPEATS` times over `IN_LINE_SPAN` bytes at
/// least, digits aside (a sentence that counts on, `… is 23, which is wrong. … is 24, …`, is
/// the same sentence). A piece shorter than `IN_LINE_UNIT` bytes is a loop only over
/// `IN_LINE_SHORT_SPAN` bytes, and only when it holds `IN_LINE_KINDS` different bytes or more
/// (a pattern's `\s*\(\)` written on without end): a rule of `=`, a row of zeros (`0, `) are
/// written on purpose, and the reply's budget still ends them.
const IN_LINE_REPEATS: usize = 8;
const IN_LINE_SPAN: usize = 2048;
const IN_LINE_UNIT: usize = 16;
const IN_LINE_SHORT_SPAN: usize = 4096;
const IN_LINE_KINDS: usize = 4;
/// The end of the line being written that is kept to look in, and how often it is looked at.
const IN_LINE_KEPT: usize = 8192;
const IN_LINE_EVERY: usize = 256;

/// How many bytes at the end of a line a piece of `period` bytes must repeat over to be
/// looked at: `IN_LINE_REPEATS` copies, and `IN_LINE_SPAN` bytes at least.
fn repeat_span(period: usize) -> usize {
    (period * IN_LINE_REPEATS).max(IN_LINE_SPAN)
}

/// How many bytes at the end of a line a piece of `period` bytes must fill to be a loop.
fn in_line_span(period: usize) -> usize {
    if period < IN_LINE_UNIT {
        IN_LINE_SHORT_SPAN
    } else {
        repeat_span(period)
    }
}

/// A byte as the in-line loop rule compares it: every ASCII digit is `0`.
fn digit_aside(b: u8) -> u8 {
    if b.is_ascii_digit() {
        b'0'
    } else {
        b
    }
}

/// The length of the piece that `line` (bytes as `digit_aside` gives them) ends by repeating as
/// `IN_LINE_REPEATS` says: the shortest piece it repeats there, when that is `IN_LINE_UNIT`
/// bytes or longer, or holds `IN_LINE_KINDS` different bytes.
fn in_line_loop(line: &[u8]) -> Option<usize> {
    let n = line.len();
    let repeats = |span: usize, period: usize| {
        let tail = &line[n - span..];
        tail[..span - period] == tail[period..]
    };
    for period in 1..=n / IN_LINE_REPEATS {
        let span = repeat_span(period);
        if span > n {
            break;
        }
        if !repeats(span, period) {
            continue;
        }
        // The shortest piece that repeats decides (its multiples repeat too).
        if period >= IN_LINE_UNIT {
            return Some(period);
        }
        let piece = &line[n - period..];
        let kinds = (0..=u8::MAX).filter(|b| piece.contains(b)).count();
        let short = kinds >= IN_LINE_KINDS
            && n >= IN_LINE_SHORT_SPAN
            && repeats(IN_LINE_SHORT_SPAN, period);
        return short.then_some(period);
    }
    None
}

/// Where the loop at the end of `text`'s last line begins (see `in_line_loop`): the end of
/// the first copy of the piece that repeats from there to the end. `text.len()` when its last
/// line does not end in such a loop.
fn in_line_start(text: &str) -> usize {
    let start = text.rfind('\n').map_or(0, |at| at + 1);
    let line: Vec<u8> = text.as_bytes()[start..]
        .iter()
        .map(|&b| digit_aside(b))
        .collect();
    let Some(period) = in_line_loop(&line) else {
        return text.len();
    };
    let mut from = line.len() - in_line_span(period);
    while from > 0 && line[from - 1] == line[from - 1 + period] {
        from -= 1;
    }
    let mut end = start + from + period;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    end
}

/// Watches the line being written for a piece repeated without end (see `in_line_loop`).
#[derive(Default)]
struct InLine {
    /// The end of the line being written (`IN_LINE_KEPT` bytes and up to as many more), as
    /// `digit_aside` gives its bytes.
    tail: Vec<u8>,
    /// Bytes written since it was last looked at.
    unlooked: usize,
    looping: bool,
}

impl InLine {
    fn feed(&mut self, text: &str) {
        for piece in text.split_inclusive('\n') {
            let (part, ends) = match piece.strip_suffix('\n') {
                Some(part) => (part, true),
                None => (piece, false),
            };
            self.tail.extend(part.bytes().map(digit_aside));
            self.unlooked += part.len();
            if self.tail.len() > 2 * IN_LINE_KEPT {
                self.tail.drain(..self.tail.len() - IN_LINE_KEPT);
            }
            if self.unlooked >= IN_LINE_EVERY {
                self.unlooked = 0;
                self.looping |= in_line_loop(&self.tail).is_some();
            }
            if ends {
                self.tail.clear();
                self.unlooked = 0;
            }
        }
    }
}

/// Where the loop at the end of looping `text` begins: the end of the first copy of the line,
/// or block of up to `MAX_BLOCK` lines, that repeats back to back from there to the end (a
/// last line cut in the middle aside), or of the piece its last line repeats (see
/// `in_line_start`). `text.len()` when nothing repeats at the end.
fn loop_start(text: &str) -> usize {
    let in_line = in_line_start(text);
    if in_line < text.len() {
        return in_line;
    }
    let mut lines = Vec::new();
    let mut ends = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            lines.push(text[start..i].trim_end());
            ends.push(i + 1);
            start = i + 1;
        }
    }
    let n = lines.len();
    // The fewest lines kept over every period: the longest repeated run goes.
    let mut keep = n;
    for period in 1..=MAX_BLOCK.min(n / 2) {
        let mut run = 0;
        while run + period < n && lines[n - 1 - run] == lines[n - 1 - run - period] {
            run += 1;
        }
        if run >= period {
            keep = keep.min(n - run);
        }
    }
    match keep {
        _ if keep == n => text.len(),
        0 => 0,
        _ => ends[keep - 1],
    }
}

/// Watches text as it streams for one line, or one block of lines, repeated without end:
/// small models at temperature 0 fall into such loops (a code block, then newlines until the
/// window is full).
#[derive(Default)]
struct Repeats {
    /// The line being written.
    current: String,
    last: String,
    count: u32,
    /// Hashes of the latest lines, oldest first, and whether some had text.
    recent: std::collections::VecDeque<(u64, bool)>,
    block: bool,
}

impl Repeats {
    fn feed(&mut self, text: &str) {
        for c in text.chars() {
            if c != '\n' {
                if self.current.len() < 4096 {
                    self.current.push(c);
                }
                continue;
            }
            let line = std::mem::take(&mut self.current);
            let line = line.trim_end();
            if line == self.last {
                self.count += 1;
            } else {
                self.last = line.to_string();
                self.count = 1;
            }
            self.remember(line);
        }
    }

    /// Adds a finished line and looks for a block repeated back to back at the end.
    fn remember(&mut self, line: &str) {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        line.hash(&mut hasher);
        if self.recent.len() == KEPT_LINES {
            self.recent.pop_front();
        }
        self.recent
            .push_back((hasher.finish(), !line.trim().is_empty()));
        let n = self.recent.len();
        for period in 2..=MAX_BLOCK {
            let span = (period * BLOCK_REPEATS).max(BLOCK_LINES.next_multiple_of(period));
            if span > n {
                break;
            }
            let tail = n - span;
            let repeated =
                (tail..n - period).all(|i| self.recent[i].0 == self.recent[i + period].0);
            // One line over and over is the line count's to judge (a table may repeat a row).
            let one_line = (n - period..n).all(|i| self.recent[i].0 == self.recent[n - 1].0);
            if repeated && !one_line && (tail..n).any(|i| self.recent[i].1) {
                self.block = true;
                return;
            }
        }
    }

    fn looping(&self) -> bool {
        if self.block {
            return true;
        }
        let limit = if self.last.is_empty() {
            BLANK_REPEATS
        } else {
            LINE_REPEATS
        };
        self.count >= limit
    }
}

/// Where a reply's text ends by its protocol's own rule, given the text so far and how much of
/// it was looked at before (see Request::ends).
pub type Ends<'a> = dyn Fn(&str, usize) -> Option<usize> + 'a;

/// Builds a `Reply` from payloads: each streamed chunk, or the single non-streamed response.
#[derive(Default)]
pub struct Assembler {
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Cached prompt tokens, from whichever payload tells (llama-server's timings may come in
    /// another chunk than the usage).
    cached: Option<u64>,
    done: bool,
    /// Repeated lines in the text, and in the calls' arguments.
    text_repeats: Repeats,
    text_line: InLine,
    argument_repeats: Repeats,
    /// Whether any payload carried a choice: a reply without one holds no message at all.
    choice: bool,
    /// What the reply holds so far, as `MAX_REPLY` counts it.
    size: usize,
    /// Where the text ends by the protocol's own rule (`past_end`), once found, and how much
    /// of the text has been looked at for it.
    end: Option<usize>,
    looked: usize,
}

/// A reply that broke one of the caps: a broken or hostile server, not a model's answer.
fn over(what: &str, limit: usize) -> Fault {
    Fault::Garbled(format!(
        "{what} went over {} MiB; a broken or hostile server? (turn's cap on one reply)",
        limit >> 20
    ))
}

impl Assembler {
    /// Takes one payload (an SSE data field or a whole JSON body); text pieces go to `show`.
    pub fn feed(&mut self, data: &str, show: &mut dyn FnMut(Piece)) -> Result<(), Fault> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if too_many_values(data) {
            return Err(Fault::Garbled(format!(
                "a payload of the reply holds more than {MAX_VALUES} JSON values; a broken or \
                 hostile server? (turn's cap on one reply)"
            )));
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            let shown: String = data.chars().take(200).collect();
            Fault::Garbled(format!("not JSON ({e}): {shown}"))
        })?;
        if let Some(message) = error_message(&chunk) {
            return Err(Fault::Server(message));
        }
        if let Some(usage) = chunk.get("usage").and_then(|u| Usage::deserialize(u).ok()) {
            self.usage = Some(usage);
        }
        let cached = chunk
            .pointer("/usage/prompt_tokens_details/cached_tokens")
            .or_else(|| chunk.pointer("/timings/cache_n"))
            .and_then(Value::as_u64);
        self.cached = cached.or(self.cached);
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        self.choice = true;
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return Ok(());
        };
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.grow(text.len())?;
                show(Piece::Reasoning(text));
                break;
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.grow(text.len())?;
            if self.content.len() + text.len() > MAX_CONTENT {
                return Err(over("the reply's text", MAX_CONTENT));
            }
            self.content.push_str(text);
            self.text_repeats.feed(text);
            self.text_line.feed(text);
            show(Piece::Content(text));
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.add_call(call)?;
        }
        Ok(())
    }

    /// Counts `more` bytes against `MAX_REPLY`.
    fn grow(&mut self, more: usize) -> Result<(), Fault> {
        self.size = self.size.saturating_add(more);
        if self.size > MAX_REPLY {
            return Err(over("the reply", MAX_REPLY));
        }
        Ok(())
    }

    /// Whether any payload carried a choice. One that did not (a stream of only `[DONE]`, a
    /// body of `{}`) holds no reply at all.
    pub fn has_choice(&self) -> bool {
        self.choice
    }

    /// Whether `data: [DONE]` was seen.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether the reply only repeats itself by now: reading on is pointless.
    pub fn looping(&self) -> bool {
        self.text_repeats.looping() || self.text_line.looping || self.argument_repeats.looping()
    }

    /// Whether text came after where `ends` says the reply ends (see Request::ends; it is
    /// asked about each line as it is finished): reading on is pointless, and `finish` cuts
    /// the text there.
    pub fn past_end(&mut self, ends: &Ends<'_>) -> bool {
        if self.end.is_none() {
            let lines = self.content.rfind('\n').map_or(0, |at| at + 1);
            if lines > self.looked {
                self.end = ends(&self.content[..lines], self.looked);
                self.looked = lines;
            }
        }
        self.end
            .is_some_and(|end| !self.content[end..].trim().is_empty())
    }

    /// Whether the reply says it is whole: `[DONE]` or a finish reason arrived.
    pub fn complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    fn add_call(&mut self, delta: &Value) -> Result<(), Fault> {
        let index = delta.get("index").and_then(Value::as_u64);
        let id = match delta.get("id") {
            Some(Value::String(id)) => id.as_str(),
            _ => "", // missing, null or numeric: a fresh id is made in `finish`
        };
        let function = delta.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let slot = match index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            // Without an index, a delta continues the last call unless it names a new one.
            None => self.calls.len().checked_sub(1).filter(|&last| {
                let c = &self.calls[last];
                (id.is_empty() || c.id.is_empty() || c.id == id)
                    && (name.is_empty() || c.name.is_empty())
            }),
        };
        let slot = match slot {
            Some(slot) => slot,
            None if self.calls.len() == MAX_CALLS => {
                return Err(Fault::Garbled(format!(
                    "the reply made more than {MAX_CALLS} tool calls; a broken or hostile server? \
                     (turn's cap on one reply)"
                )))
            }
            None => {
                self.grow(CALL_COST)?;
                self.calls.push(PartialCall {
                    index,
                    ..Default::default()
                });
                self.calls.len() - 1
            }
        };
        let arguments = function.and_then(|f| f.get("arguments"));
        // Arguments sent as an object are the whole arguments at once.
        let whole = match arguments {
            Some(Value::String(_) | Value::Null) | None => None,
            Some(object) => Some(object.to_string()),
        };
        let call = &self.calls[slot];
        let grown = if call.id.is_empty() { id.len() } else { 0 }
            + if call.name.is_empty() { name.len() } else { 0 }
            + match (arguments, &whole) {
                (Some(Value::String(fragment)), _) => fragment.len(),
                (_, Some(whole)) => whole.len(),
                _ => 0,
            };
        self.grow(grown)?;
        let call = &mut self.calls[slot];
        if call.id.is_empty() {
            call.id = id.to_string();
        }
        if call.name.is_empty() {
            call.name = name.to_string();
        }
        let longer = match (arguments, &whole) {
            (Some(Value::String(fragment)), _) => call.arguments.len() + fragment.len(),
            (_, Some(whole)) => whole.len(),
            _ => 0,
        };
        if longer > MAX_ARGUMENTS {
            return Err(over("one tool call's arguments", MAX_ARGUMENTS));
        }
        match (arguments, whole) {
            (Some(Value::String(fragment)), _) => {
                call.arguments.push_str(fragment);
                // Inside a JSON string a newline is written `\n`.
                self.argument_repeats.feed(&fragment.replace("\\n", "\n"));
            }
            (_, Some(whole)) => call.arguments = whole,
            _ => {}
        }
        Ok(())
    }

    /// The reply; `new_id` makes ids for calls that came without a usable one (or a repeated one).
    pub fn finish(mut self, new_id: &mut dyn FnMut() -> String) -> Reply {
        if self.looping() {
            self.finish_reason = Some(REPETITION.to_string());
            // The repeats are noise: the history keeps the first copy, not thousands of
            // tokens that would fill the window and set the model looping again.
            self.content.truncate(loop_start(&self.content));
            self.content.truncate(self.content.trim_end().len());
        }
        if let Some(end) = self.end.filter(|&end| end <= self.content.len()) {
            // What came after is not part of the reply, which is whole up to there.
            self.content.truncate(end);
            self.content.truncate(self.content.trim_end().len());
            self.finish_reason = Some("stop".to_string());
        }
        let mut calls: Vec<ToolCall> = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            let mut id = call.id;
            if id.is_empty() || calls.iter().any(|c| c.id == id) {
                id = new_id();
            }
            calls.push(ToolCall::new(id, call.name, call.arguments));
        }
        Reply {
            content: Some(self.content).filter(|c| !c.is_empty()),
            calls,
            finish_reason: self.finish_reason,
            usage: self.usage.map(|usage| Usage {
                cached_tokens: self.cached,
                ..usage
            }),
        }
    }
}

/// The message of an error body, in any of the shapes servers use:
/// `{"error": {"message": …}}`, `{"error": "…"}`, `{"object": "error", "message": …}`.
pub fn error_message(body: &Value) -> Option<String> {
    match body.get("error") {
        Some(Value::Object(error)) => {
            let message = error.get("message").and_then(Value::as_str);
            Some(message.map_or_else(|| Value::Object(error.clone()).to_string(), str::to_string))
        }
        Some(Value::String(message)) => Some(message.clone()),
        _ if body.get("object").and_then(Value::as_str) == Some("error") => Some(
            body.get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod cached_tests {
    use super::*;

    fn usage_of(payloads: &[&str]) -> Option<Usage> {
        let mut assembler = Assembler::default();
        for payload in payloads {
            assembler.feed(payload, &mut |_| {}).unwrap();
        }
        assembler.finish(&mut String::new).usage
    }

    #[test]
    fn cached_prompt_tokens_are_read_where_servers_put_them() {
        let openai = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}"#;
        assert_eq!(usage_of(&[openai]).unwrap().cached_tokens, Some(8));
        // llama-server: timings beside the usage, or in a chunk of their own.
        let chunk = r#"{"choices":[{"delta":{"content":"hi"}}]}"#;
        let last = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2},"timings":{"cache_n":7,"prompt_n":3}}"#;
        assert_eq!(usage_of(&[chunk, last]).unwrap().cached_tokens, Some(7));
        let timings =
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":5}}"#;
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}"#;
        assert_eq!(usage_of(&[timings, usage]).unwrap().cached_tokens, Some(5));
        // A server that says nothing of it.
        let plain = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        assert_eq!(usage_of(&[plain]).unwrap().cached_tokens, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("call_gen{n}")
        }
    }

    /// Feeds SSE text through `Sse` and `Assembler`; returns the reply and the shown pieces.
    fn assemble(sse: &str) -> (Reply, Vec<String>) {
        let mut parser = Sse::default();
        let mut assembler = Assembler::default();
        let mut shown = Vec::new();
        let mut show = |p: Piece| match p {
            Piece::Content(t) => shown.push(format!("c:{t}")),
            Piece::Reasoning(t) => shown.push(format!("r:{t}")),
        };
        for line in sse.lines() {
            if let Some(data) = parser.line(line) {
                assembler.feed(&data, &mut show).unwrap();
            }
        }
        if let Some(data) = parser.finish() {
            assembler.feed(&data, &mut show).unwrap();
        }
        (assembler.finish(&mut ids()), shown)
    }

    fn args(reply: &Reply) -> Vec<(&str, &str, &str)> {
        reply
            .calls
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.function.name.as_str(),
                    c.function.arguments.as_str(),
                )
            })
            .collect()
    }

    #[test]
    fn a_reply_past_its_own_end_is_cut_there() {
        // The rule: the text ends after a line "CALL"; each finished line is asked about once.
        let asked = std::cell::RefCell::new(Vec::new());
        let ends = |text: &str, from: usize| {
            asked.borrow_mut().push(from);
            text.find("CALL\n").map(|at| at + 5)
        };
        let piece = |text: &str| json!({"choices": [{"delta": {"content": text}}]}).to_string();
        let mut assembler = Assembler::default();
        let mut past = Vec::new();
        for text in ["a\nCA", "LL\n", " \n", "b", "c\n"] {
            assembler.feed(&piece(text), &mut |_| {}).unwrap();
            past.push(assembler.past_end(&ends));
        }
        assert_eq!(past, [false, false, false, true, true]);
        assert_eq!(
            *asked.borrow(),
            [0, 2],
            "lines are looked at once, until the end is found"
        );
        let reply = assembler.finish(&mut ids());
        assert_eq!(reply.content.as_deref(), Some("a\nCALL"));
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
        // Nothing but blanks after the end, and a reply without one: as the server sent it.
        let mut assembler = Assembler::default();
        assembler.feed(&piece("a\nCALL\n\n"), &mut |_| {}).unwrap();
        assert!(!assembler.past_end(&ends));
        assert_eq!(
            assembler.finish(&mut ids()).content.as_deref(),
            Some("a\nCALL")
        );
        let mut assembler = Assembler::default();
        assembler.feed(&piece("no end\nhere"), &mut |_| {}).unwrap();
        assert!(!assembler.past_end(&ends));
        assert_eq!(
            assembler.finish(&mut ids()).content.as_deref(),
            Some("no end\nhere")
        );
    }

    #[test]
    fn text_streams_piece_by_piece() {
        let sse = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
                   : keep-alive\n\n\
                   data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                   data:{\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n\
                   data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n\
                   data: [DONE]\n\n";
        let (reply, shown) = assemble(sse);
        assert_eq!(shown, ["c:Hel", "c:lo"]);
        assert_eq!(reply.content.as_deref(), Some("Hello"));
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 2,
                cached_tokens: None,
            })
        );
    }

    #[test]
    fn split_arguments_are_joined_by_index() {
        let sse = r#"data: {"choices":[{"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","function":{"arguments":"\"ls\"}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}

data: [DONE]
"#;
        let (reply, _) = assemble(sse);
        assert_eq!(reply.content, None);
        assert_eq!(
            args(&reply),
            [
                ("call_a", "bash", r#"{"command":"ls"}"#),
                ("call_b", "read_file", r#"{"path":"x"}"#)
            ]
        );
    }

    #[test]
    fn object_arguments_and_missing_or_numeric_ids() {
        let sse = r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"bash","arguments":{"command":"ls"}}},{"index":1,"id":7,"function":{"name":"bash","arguments":"{}"}}]},"finish_reason":"stop"}]}
"#;
        let (reply, _) = assemble(sse);
        assert_eq!(
            args(&reply),
            [
                ("call_gen1", "bash", r#"{"command":"ls"}"#),
                ("call_gen2", "bash", "{}")
            ]
        );
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id_and_name() {
        let sse = r#"data: {"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"bash","arguments":"{\"command\":"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"ls\"}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"bash","arguments":"{}"}}]}}]}
"#;
        let (reply, _) = assemble(sse);
        assert_eq!(
            args(&reply),
            [("a", "bash", r#"{"command":"ls"}"#), ("b", "bash", "{}")]
        );
    }

    #[test]
    fn repeated_ids_get_fresh_ones() {
        let sse = r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"bash","arguments":"{}"}},{"index":1,"id":"x","function":{"name":"bash","arguments":"{}"}}]}}]}
"#;
        let (reply, _) = assemble(sse);
        assert_eq!(args(&reply)[1].0, "call_gen1");
    }

    #[test]
    fn reasoning_is_shown_but_not_kept() {
        let sse = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n\
                   data: {\"choices\":[{\"delta\":{\"reasoning\":\"ok\",\"content\":\"Hi\"}}]}\n\n";
        let (reply, shown) = assemble(sse);
        assert_eq!(shown, ["r:hmm", "r:ok", "c:Hi"]);
        assert_eq!(reply.content.as_deref(), Some("Hi"));
    }

    #[test]
    fn a_whole_response_is_one_payload() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        let mut assembler = Assembler::default();
        assembler.feed(body, &mut |_| {}).unwrap();
        let reply = assembler.finish(&mut ids());
        assert_eq!(args(&reply), [("c1", "bash", r#"{"command":"ls"}"#)]);
        assert_eq!(reply.content, None);
    }

    #[test]
    fn a_block_repeated_back_to_back_is_a_loop() {
        let block: String = (1..=17).map(|i| format!("{i:6}\tline {i}\n")).collect();
        let mut repeats = Repeats::default();
        repeats.feed(&format!("<tool_response>\n{block}"));
        repeats.feed(&block);
        assert!(!repeats.looping(), "twice is not yet a loop");
        repeats.feed(&block);
        assert!(repeats.looping(), "three times, 51 lines");
        // A short block must repeat until it makes BLOCK_LINES lines.
        let mut repeats = Repeats::default();
        repeats.feed(&"self.assertEqual(a, b)\nx += 1\n".repeat(17));
        assert!(!repeats.looping(), "34 lines");
        repeats.feed("self.assertEqual(a, b)\nx += 1\n");
        assert!(repeats.looping(), "36 lines");
        // Lines that differ, and blocks of blank lines alone, are no block loop.
        let mut repeats = Repeats::default();
        let varied: String = (0..300)
            .map(|i| format!("case_{i} = check({i})\n\n"))
            .collect();
        repeats.feed(&varied);
        assert!(!repeats.looping());
        let mut repeats = Repeats::default();
        repeats.feed(&" \n\n".repeat(30));
        assert!(!repeats.block);
    }

    #[test]
    fn a_looping_reply_keeps_the_first_copy_of_what_repeats() {
        // One line again and again, the last one cut in the middle.
        let text = format!("Here:\n{}{{\"name\"", "{\"a\": 1}\n".repeat(200));
        assert_eq!(&text[..loop_start(&text)], "Here:\n{\"a\": 1}\n");
        // A block of three lines (measured: tool_response blocks written again and again).
        let block = "<tool_response>\nok\n</tool_response>\n";
        let text = format!("Done.\n{}<tool_re", block.repeat(20));
        assert_eq!(&text[..loop_start(&text)], format!("Done.\n{block}"));
        // Blank lines after a fence.
        let text = format!("```\nx\n```\n{}", "\n".repeat(70));
        assert_eq!(text[..loop_start(&text)].trim_end(), "```\nx\n```");
        // Nothing repeats at the end: all is kept.
        let text = "a\nb\nc\nd";
        assert_eq!(loop_start(text), text.len());
        let text = "a\na\na\n";
        assert_eq!(&text[..loop_start(text)], "a\n");
    }

    #[test]
    fn a_sentence_repeated_without_a_line_break_is_a_loop() {
        let chunk = |text: &str| json!({"choices": [{"delta": {"content": text}}]}).to_string();
        // Three sentences in turn, again and again on one line, as streamed token by token.
        let unit = "The test checks that the length is two, which is wrong. The test checks \
                    that the length is zero, which is wrong. The test checks that the length \
                    is three, which is wrong. ";
        let mut assembler = Assembler::default();
        assembler
            .feed(&chunk("I read it.\n\n"), &mut |_| {})
            .unwrap();
        let mut sent = 0;
        while !assembler.looping() {
            assert!(sent < 20, "still not a loop after {sent} copies");
            for word in unit.split_inclusive(' ') {
                assembler.feed(&chunk(word), &mut |_| {}).unwrap();
            }
            sent += 1;
        }
        assert!(sent >= IN_LINE_REPEATS, "a loop after {sent} copies");
        let reply = assembler.finish(&mut ids());
        assert_eq!(reply.finish_reason.as_deref(), Some(REPETITION));
        assert_eq!(
            reply.content.as_deref(),
            Some(format!("I read it.\n\n{}", unit.trim_end()).as_str()),
            "the first copy is kept"
        );

        // A sentence that counts on is the same sentence, digits aside; cut after its first
        // copy.
        let counting: String = (1..200)
            .map(|n| format!("The test checks that the length is {n}, which is wrong. "))
            .collect();
        let text = format!("I read it.\n\n{counting}");
        let mut assembler = Assembler::default();
        for piece in text.as_bytes().chunks(9) {
            let piece = std::str::from_utf8(piece).unwrap();
            assembler.feed(&chunk(piece), &mut |_| {}).unwrap();
            if assembler.looping() {
                break;
            }
        }
        assert!(assembler.looping());
        let reply = assembler.finish(&mut ids());
        assert_eq!(reply.finish_reason.as_deref(), Some(REPETITION));
        let kept = reply.content.unwrap();
        // Up to the first copy of the piece that repeats, digits aside: 1 to 9 are a digit
        // shorter, so the copies from 10 on are the loop.
        assert!(kept.len() < 600, "{kept}");
        assert!(kept.contains("length is 9, which is wrong."), "{kept}");

        // A short piece of several kinds of bytes, over and over: a loop once it fills
        // IN_LINE_SHORT_SPAN bytes, cut after its first copy.
        let pattern = format!("grep -E '{}", r"\s*\(\)".repeat(1000));
        let mut assembler = Assembler::default();
        for piece in pattern.as_bytes().chunks(5) {
            let piece = std::str::from_utf8(piece).unwrap();
            assembler.feed(&chunk(piece), &mut |_| {}).unwrap();
        }
        assert!(assembler.looping());
        assert_eq!(&pattern[..loop_start(&pattern)], r"grep -E '\s*\(\)");
        let short = &pattern[..IN_LINE_SHORT_SPAN - 100];
        assert_eq!(in_line_start(short), short.len(), "not yet");

        // Not loops: a short piece of few kinds over and over (a rule, a row of zeros), a long
        // line that does not repeat, a sentence repeated a few times, and the same sentence on
        // lines of its own (the line rules judge those).
        let not = [
            "=".repeat(6000),
            "0, ".repeat(3000),
            "-=".repeat(3000),
            (0..2000)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            format!("{}and then it stops.", unit.repeat(5)),
            format!("{}\n", unit).repeat(30),
        ];
        for text in not {
            let mut assembler = Assembler::default();
            for piece in text.as_bytes().chunks(7) {
                let piece = std::str::from_utf8(piece).unwrap();
                assembler.feed(&chunk(piece), &mut |_| {}).unwrap();
            }
            assert!(!assembler.looping(), "{}", &text[..60]);
            assert_eq!(in_line_start(&text), text.len(), "{}", &text[..60]);
        }
    }

    #[test]
    fn an_in_line_loop_is_cut_on_a_character_boundary() {
        let unit = "é, wrong again: ü and ö! ";
        let text = format!("Start: {}", unit.repeat(200));
        let end = loop_start(&text);
        assert!(text.is_char_boundary(end));
        // The repeats may begin a byte early (the space before them ends a copy too).
        assert_eq!(
            text[..end].trim_end(),
            format!("Start: {}", unit.trim_end())
        );
        // A line that repeats only before a new, different line is no loop.
        let text = format!("{}\nDone.", unit.repeat(200));
        assert_eq!(loop_start(&text), text.len());
    }

    #[test]
    fn a_reply_that_repeats_one_line_is_marked_looping() {
        let mut assembler = Assembler::default();
        let chunk = |text: &str| json!({"choices": [{"delta": {"content": text}}]}).to_string();
        assembler
            .feed(&chunk("```json\n{\"a\": 1}\n```"), &mut |_| {})
            .unwrap();
        for _ in 0..31 {
            assembler.feed(&chunk("\n\n"), &mut |_| {}).unwrap();
        }
        assert!(!assembler.looping(), "61 blank lines are not yet a loop");
        assembler.feed(&chunk("\n\n\n\n"), &mut |_| {}).unwrap();
        assert!(assembler.looping(), "65 blank lines in a row");
        let reply = assembler.finish(&mut ids());
        assert_eq!(reply.finish_reason.as_deref(), Some(REPETITION));
        assert_eq!(reply.content.as_deref(), Some("```json\n{\"a\": 1}\n```"));

        // In a call's arguments, escaped newlines count too.
        let mut assembler = Assembler::default();
        let call = |args: &str| {
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "bash", "arguments": args}}]}}]}).to_string()
        };
        assembler
            .feed(&call("{\"command\": \"ls"), &mut |_| {})
            .unwrap();
        for _ in 0..70 {
            assembler.feed(&call("\\n"), &mut |_| {}).unwrap();
        }
        assert!(assembler.looping());

        // Text lines may repeat a while: a table, a list of zeros.
        let mut assembler = Assembler::default();
        for _ in 0..100 {
            assembler.feed(&chunk("0, 0, 0\n"), &mut |_| {}).unwrap();
        }
        assert!(!assembler.looping());
        for _ in 0..30 {
            assembler.feed(&chunk("0, 0, 0\n"), &mut |_| {}).unwrap();
        }
        assert!(assembler.looping());
    }

    #[test]
    fn error_payloads_in_every_shape() {
        let mut assembler = Assembler::default();
        let mut err = |body: &str| assembler.feed(body, &mut |_| {}).unwrap_err();
        let server = |m: &str| Fault::Server(m.into());
        assert_eq!(
            err(r#"{"error":{"message":"bad model","type":"x"}}"#),
            server("bad model")
        );
        assert_eq!(
            err(r#"{"error":"model 'q' not found"}"#),
            server("model 'q' not found")
        );
        assert_eq!(
            err(r#"{"object":"error","message":"too long","code":400}"#),
            server("too long")
        );
        assert!(matches!(err("<html>"), Fault::Garbled(m) if m.starts_with("not JSON")));
    }

    /// Feeds `chunk` until the assembler refuses; returns the refusal.
    fn feed_until_refused(chunk: &str) -> String {
        let mut assembler = Assembler::default();
        for _ in 0..100 {
            if let Err(Fault::Garbled(why)) = assembler.feed(chunk, &mut |_| {}) {
                return why;
            }
        }
        panic!("never refused");
    }

    #[test]
    fn one_reply_is_capped() {
        let mib = "a".repeat(1 << 20);
        let content = json!({"choices": [{"delta": {"content": mib}}]}).to_string();
        assert!(feed_until_refused(&content).starts_with("the reply's text went over 16 MiB"));
        let call = json!({"choices": [{"delta": {"tool_calls": [
            {"index": 0, "function": {"name": "bash", "arguments": mib}}]}}]});
        assert!(feed_until_refused(&call.to_string())
            .starts_with("one tool call's arguments went over 16 MiB"));
        let reasoning = json!({"choices": [{"delta": {"reasoning_content": mib}}]}).to_string();
        assert!(feed_until_refused(&reasoning).starts_with("the reply went over 32 MiB"));

        let mut assembler = Assembler::default();
        let mut refused = None;
        for i in 0..=MAX_CALLS {
            let call = json!({"choices": [{"delta": {"tool_calls": [
                {"index": i, "function": {"name": "bash", "arguments": "{}"}}]}}]});
            if let Err(Fault::Garbled(why)) = assembler.feed(&call.to_string(), &mut |_| {}) {
                refused = Some((i, why));
                break;
            }
        }
        let (at, why) = refused.expect("refused");
        assert_eq!(at, MAX_CALLS);
        assert!(
            why.starts_with("the reply made more than 1024 tool calls"),
            "{why}"
        );
    }

    #[test]
    fn dense_payloads_are_refused_before_parsing() {
        let dense = format!("[{}0]", "0,".repeat(MAX_VALUES));
        assert!(too_many_values(&dense));
        let mut assembler = Assembler::default();
        let refused = assembler.feed(&dense, &mut |_| {}).unwrap_err();
        assert!(matches!(refused, Fault::Garbled(why) if why.contains("JSON values")));
        // Separators inside strings are text, not values.
        let text = json!({"choices": [{"delta": {"content": "[,:{\\\"".repeat(100_000)}}]});
        assert!(!too_many_values(&text.to_string()));
        assembler.feed(&text.to_string(), &mut |_| {}).unwrap();
    }

    #[test]
    fn an_endless_event_is_capped() {
        let mut parser = Sse::default();
        let line = format!("data: {}", "x".repeat(1 << 20));
        for _ in 0..40 {
            assert_eq!(parser.line(&line), None);
        }
        assert!(parser.too_long());
    }

    #[test]
    fn a_reply_without_choices_says_so() {
        let mut assembler = Assembler::default();
        assembler.feed("[DONE]", &mut |_| {}).unwrap();
        assembler
            .feed(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#, &mut |_| {})
            .unwrap();
        assert!(assembler.done() && !assembler.has_choice());
        assembler
            .feed(
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                &mut |_| {},
            )
            .unwrap();
        assert!(assembler.has_choice());
    }

    #[test]
    fn multi_line_data_and_crlf() {
        let mut parser = Sse::default();
        assert_eq!(parser.line("event: message\r"), None);
        assert_eq!(parser.line("data: a\r"), None);
        assert_eq!(parser.line("data: b"), None);
        assert_eq!(parser.line("\r"), Some("a\nb".to_string()));
        assert_eq!(parser.line(""), None);
        assert!(Sse::is_sse("data: x") && Sse::is_sse(": ping") && Sse::is_sse(""));
        assert!(!Sse::is_sse("{\"error\": 1}"));
    }
}
