//! The chat history: serde types for OpenAI-compatible messages, and `normalize`, which turns any
//! history (an interrupted run, a hand-edited session, another tool's file) into one that real
//! servers and their chat templates accept.
//!
//! Pure: no I/O. The wire format is the Chat Completions one, so a history can be sent as it is.
//! Reading is lenient (content-part arrays, numeric or null ids, arguments as objects, `null`
//! lists); `normalize` repairs the rest, so a session never gets stuck on a server's refusal.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::hash_map::{Entry, HashMap, RandomState};
use std::hash::{BuildHasher, Hasher};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Also read as `developer`, OpenAI's newer name for it.
    #[serde(alias = "developer")]
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// `None` only on an assistant message that carries tool calls alone (sent as `null`).
    #[serde(default, deserialize_with = "lenient::content")]
    pub content: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::or_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tool_calls: Vec<ToolCall>,
    #[serde(
        default,
        deserialize_with = "lenient::id",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default, deserialize_with = "lenient::text")]
    pub id: String,
    #[serde(
        rename = "type",
        default = "function_type",
        deserialize_with = "lenient::kind"
    )]
    pub kind: String,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub function: FunctionCall,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: String,
    /// A JSON object's text, as strict servers and chat templates require (never an object
    /// itself); `normalize` makes sure of it.
    #[serde(default, deserialize_with = "lenient::arguments")]
    pub arguments: String,
}

fn function_type() -> String {
    "function".into()
}

impl Message {
    pub fn system(text: impl Into<String>) -> Message {
        Message::text(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Message {
        Message::text(Role::User, text)
    }

    pub fn assistant(content: Option<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            content,
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool(id: impl Into<String>, output: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::text(Role::Tool, output)
        }
    }

    fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        let function = FunctionCall {
            name: name.into(),
            arguments: arguments.into(),
        };
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function,
        }
    }
}

/// `call_` and 24 letters or digits, for calls the server sent without a usable id. Random per
/// process (std's hasher keys are), so resumed histories do not collide.
pub fn new_call_id() -> String {
    random_id("call_", 24)
}

/// The id of a call turn makes itself, before the model's first reply of a turn (the files a
/// task names, read for it): `call_turn` and 20 characters, an id like any other to a server.
pub fn turn_call_id() -> String {
    random_id(TURN_CALL, 20)
}

const TURN_CALL: &str = "call_turn";

/// Whether `id` is one of turn's own calls (`turn_call_id`).
pub fn by_turn(id: &str) -> bool {
    id.len() == TURN_CALL.len() + 20 && id.starts_with(TURN_CALL)
}

fn random_id(prefix: &str, length: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::from(prefix);
    let mut bits = 0u64;
    for i in 0..length {
        if i % 8 == 0 {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_usize(i);
            bits = hasher.finish();
        }
        id.push(ALPHABET[(bits % 62) as usize] as char);
        bits /= 62;
    }
    id
}

/// What `normalize` puts in place of arguments that are not a JSON object.
const NO_ARGUMENTS: &str = "{}";
/// How much of replaced arguments is shown to the model again, in bytes.
const SHOWN_ARGUMENTS: usize = 4096;

/// Returns a history every OpenAI-compatible server and chat template accepts, in O(n):
/// - user, system and tool messages have text content (`null` becomes ""); only assistant
///   messages carry calls and only tool messages a call id; every call has type `function`;
/// - arguments that are not a JSON object become `{}` (llama-server refuses the whole request
///   otherwise), and the call's result starts with a note holding the original text;
/// - an assistant message whose tool calls are not all answered (an interrupted run) is dropped
///   together with its partial results;
/// - a result answers the first unanswered call of its id in the latest assistant message
///   that made a call of that id; results without such a call are dropped, as is a second
///   result for one call;
/// - results sit right after their assistant message, in call order, one message per call;
/// - empty and repeated call ids (also across messages) get fresh unique ones (`call_fix<N>`),
///   and their results follow;
/// - an assistant message with neither text nor calls is dropped: it carries nothing;
/// - user messages next to each other become one (templates that demand alternating roles
///   refuse two), their texts joined by a blank line;
/// - everything else keeps its order. Normalizing twice changes nothing.
///
/// Works in place and says whether anything changed, so callers can keep what they derived
/// from an unchanged history (the agent keeps each message's serialized form).
pub fn normalize(history: &mut Vec<Message>) -> bool {
    const NONE: usize = usize::MAX;
    let mut changed = false;
    // Each message on its own first; arguments replaced are kept as (message, call, text).
    let mut replaced: Vec<(usize, usize, String)> = Vec::new();
    for (i, message) in history.iter_mut().enumerate() {
        changed |= make_plain(message, &mut |j, text| replaced.push((i, j, text)));
    }

    // One slot per tool call, holding the index of the result that answers it (or NONE);
    // an assistant message's calls own a run of slots starting at `first_slot[i]`.
    let mut slots: Vec<usize> = Vec::new();
    let mut first_slot = vec![NONE; history.len()];
    // For each slot, the next slot of the same message with the same id (or NONE).
    let mut same: Vec<usize> = Vec::new();
    // For each slot, whether its id is empty or was used by an earlier call.
    let mut repeated: Vec<bool> = Vec::new();
    // Which calls a result of each id can answer: those of the latest message using the id.
    struct Owner {
        first_slot: usize,
        next: usize,
        last: usize,
    }
    let mut owners: HashMap<&str, Owner> = HashMap::with_capacity(history.len());
    for (i, message) in history.iter().enumerate() {
        match message.role {
            Role::Assistant if !message.tool_calls.is_empty() => {
                let first = slots.len();
                first_slot[i] = first;
                for call in &message.tool_calls {
                    let slot = slots.len();
                    slots.push(NONE);
                    same.push(NONE);
                    repeated.push(call.id.is_empty());
                    let owner = Owner {
                        first_slot: first,
                        next: slot,
                        last: slot,
                    };
                    match owners.entry(&call.id) {
                        Entry::Vacant(entry) => {
                            entry.insert(owner);
                        }
                        Entry::Occupied(mut entry) => {
                            repeated[slot] = true;
                            let earlier = entry.get_mut();
                            if earlier.first_slot == first {
                                same[earlier.last] = slot;
                                earlier.last = slot;
                            } else {
                                *earlier = owner;
                            }
                        }
                    }
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                if let Some(owner) = owners.get_mut(id) {
                    if owner.next != NONE {
                        slots[owner.next] = i;
                        owner.next = same[owner.next];
                    }
                }
            }
            _ => {}
        }
    }
    // Fresh ids avoid every id a call already has, so they cannot clash with a kept one.
    // (Both lists stay empty in the usual case, where nothing needs them.)
    let mut fresh: Vec<Option<String>> = Vec::new();
    if repeated.contains(&true) {
        fresh = repeated
            .iter()
            .enumerate()
            .map(|(slot, &repeated)| {
                repeated.then(|| fresh_id(slot, &|id: &str| owners.contains_key(id)))
            })
            .collect();
    }
    let mut notes: Vec<Option<String>> = Vec::new();
    if !replaced.is_empty() {
        notes.resize(slots.len(), None);
        for (i, j, text) in replaced {
            notes[first_slot[i] + j] = Some(text);
        }
    }

    let mut taken: Vec<Option<Message>> = std::mem::take(history).into_iter().map(Some).collect();
    let mut out: Vec<Message> = Vec::with_capacity(taken.len());
    // Whether some message left its place: a drop shifts every later one, a move is a move.
    let mut moved = false;
    let mut keep = |out: &mut Vec<Message>, from: usize, message: Message| {
        moved |= from != out.len();
        out.push(message);
    };
    for i in 0..taken.len() {
        let Some(mut message) = taken[i].take() else {
            continue;
        };
        match message.role {
            Role::Tool => {} // placed with its call below, or stray
            Role::Assistant if !message.tool_calls.is_empty() => {
                let first = first_slot[i];
                let answers = &slots[first..first + message.tool_calls.len()];
                if answers.contains(&NONE) {
                    continue;
                }
                let fresh = fresh.get_mut(first..).unwrap_or_default();
                for (call, fresh) in message.tool_calls.iter_mut().zip(fresh) {
                    if let Some(id) = fresh.take() {
                        call.id = id;
                        changed = true;
                    }
                }
                let at = out.len();
                keep(&mut out, i, message);
                for (j, &result) in answers.iter().enumerate() {
                    let Some(mut message) = taken[result].take() else {
                        continue;
                    };
                    let id = &out[at].tool_calls[j].id;
                    if message.tool_call_id.as_ref() != Some(id) {
                        message.tool_call_id = Some(id.clone());
                        changed = true;
                    }
                    if let Some(text) = notes.get_mut(first + j).and_then(Option::take) {
                        let output = message.content.get_or_insert_with(String::new);
                        *output = format!("{}{output}", replaced_note(&text));
                        changed = true;
                    }
                    keep(&mut out, result, message);
                }
            }
            Role::Assistant if message.content.as_deref().unwrap_or_default().is_empty() => {}
            Role::User if out.last().is_some_and(|m| m.role == Role::User) => {
                let last = out.last_mut().expect("a last message").content.as_mut();
                let (Some(text), Some(more)) = (last, message.content) else {
                    unreachable!("user messages have text after make_plain")
                };
                match (text.is_empty(), more.is_empty()) {
                    (_, true) => {}
                    (true, false) => *text = more,
                    (false, false) => {
                        text.push_str("\n\n");
                        text.push_str(&more);
                    }
                }
                changed = true;
            }
            _ => keep(&mut out, i, message),
        }
    }
    changed |= moved || out.len() != taken.len();
    *history = out;
    changed
}

/// Repairs what one message holds, whatever its neighbours; hands each replaced argument
/// text to `replaced` with the call's position. Says whether anything changed.
fn make_plain(message: &mut Message, replaced: &mut dyn FnMut(usize, String)) -> bool {
    let mut changed = false;
    if message.role != Role::Assistant {
        changed |= !message.tool_calls.is_empty();
        message.tool_calls.clear();
        if message.content.is_none() {
            message.content = Some(String::new());
            changed = true;
        }
    }
    if message.role != Role::Tool && message.tool_call_id.is_some() {
        message.tool_call_id = None;
        changed = true;
    }
    for (j, call) in message.tool_calls.iter_mut().enumerate() {
        if call.kind != "function" {
            call.kind = function_type();
            changed = true;
        }
        if !is_object(&call.function.arguments) {
            let text = std::mem::replace(&mut call.function.arguments, NO_ARGUMENTS.into());
            replaced(j, text);
            changed = true;
        }
    }
    changed
}

/// Whether `text` is exactly one JSON object (what a chat template can iterate over).
pub fn is_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// `call_fix<slot>`, or with `_<n>` added until no call uses it; distinct slots give distinct ids.
fn fresh_id(slot: usize, used: &dyn Fn(&str) -> bool) -> String {
    let base = format!("call_fix{slot}");
    if !used(&base) {
        return base;
    }
    (1..)
        .map(|n| format!("{base}_{n}"))
        .find(|id| !used(id))
        .expect("some suffix is free")
}

/// The note that starts the result of a call whose arguments were replaced.
fn replaced_note(text: &str) -> String {
    if text.trim().is_empty() {
        return "[turn: this call came with no arguments; the history keeps {} in their place]\n"
            .into();
    }
    let mut end = text.len().min(SHOWN_ARGUMENTS);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let more = match text.len() - end {
        0 => String::new(),
        n => format!(" [... {n} more bytes]"),
    };
    format!(
        "[turn: this call's arguments were not a JSON object, so the history keeps {{}} in \
         their place; they were: {}{more}]\n",
        &text[..end]
    )
}

/// Reading a history as other writers left it: each field in the shapes servers and tools
/// use, turned into the one shape `Message` keeps.
mod lenient {
    use super::*;

    /// A string as it is; an array of content parts as their text, joined by newlines (parts
    /// other than text leave a marker); `null` as `None`; anything else as its JSON text.
    pub fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => None,
            Value::String(text) => Some(text),
            Value::Array(parts) => {
                let texts: Vec<String> = parts.iter().map(part_text).collect();
                Some(texts.join("\n"))
            }
            other => Some(other.to_string()),
        })
    }

    fn part_text(part: &Value) -> String {
        if let Some(text) = part
            .as_str()
            .or_else(|| part.get("text").and_then(Value::as_str))
        {
            return text.to_string();
        }
        let kind = part
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        format!("[{kind} content omitted]")
    }

    /// A string; a number as its digits; `null` as "".
    pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => String::new(),
            Value::String(text) => text,
            other => other.to_string(),
        })
    }

    pub fn id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(Some(text(d)?).filter(|id| !id.is_empty()))
    }

    /// A string, or `function` when it is missing or not text (`normalize` fixes the rest).
    pub fn kind<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(kind) => kind,
            _ => function_type(),
        })
    }

    /// JSON text as it is; an object (or any other value) as its JSON text; `null` as "".
    pub fn arguments<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => String::new(),
            Value::String(text) => text,
            other => other.to_string(),
        })
    }

    /// The value, or its default for `null`.
    pub fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + Default,
    {
        Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
    }
}

/// Why a history would be refused by a strict server or chat template, if it would be. The
/// same rules as `normalize` guarantees; used by tests and kept next to them so they cannot
/// drift.
#[cfg(test)]
pub fn check(history: &[Message]) -> Result<(), String> {
    let mut expected: std::collections::VecDeque<&str> = Default::default();
    let mut ids = std::collections::HashSet::new();
    for (i, message) in history.iter().enumerate() {
        if message.role != Role::Assistant && message.content.is_none() {
            return Err(format!("message {i}: content must be a string"));
        }
        if message.role != Role::Assistant && !message.tool_calls.is_empty() {
            return Err(format!(
                "message {i}: tool calls outside an assistant message"
            ));
        }
        if i > 0 && message.role == Role::User && history[i - 1].role == Role::User {
            return Err(format!("message {i}: two user messages in a row"));
        }
        match (message.role, expected.pop_front()) {
            (Role::Tool, Some(id)) if message.tool_call_id.as_deref() == Some(id) => continue,
            (Role::Tool, _) => return Err(format!("message {i}: tool result out of place")),
            (_, Some(id)) => return Err(format!("message {i}: call {id} not answered")),
            (Role::Assistant, None) => {
                if message.tool_calls.is_empty()
                    && message.content.as_deref().unwrap_or("").is_empty()
                {
                    return Err(format!("message {i}: empty assistant message"));
                }
                for call in &message.tool_calls {
                    if call.id.is_empty() || !ids.insert(call.id.as_str()) {
                        return Err(format!(
                            "message {i}: empty or repeated call id {:?}",
                            call.id
                        ));
                    }
                    if call.kind != "function" || !is_object(&call.function.arguments) {
                        return Err(format!(
                            "message {i}: Failed to parse tool call arguments as JSON"
                        ));
                    }
                }
                expected = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
            _ => {}
        }
    }
    match expected.front() {
        Some(id) => Err(format!("call {id} not answered at the end")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_look_like_openai_ones_and_differ() {
        let (a, b) = (new_call_id(), new_call_id());
        assert_eq!(a.len(), 29);
        assert!(a.starts_with("call_") && a[5..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "bash", "{}")
    }

    fn asks(ids: &[&str]) -> Message {
        Message::assistant(None, ids.iter().map(|id| call(id)).collect())
    }

    fn says(text: &str) -> Message {
        Message::assistant(Some(text.into()), vec![])
    }

    fn result(id: &str) -> Message {
        Message::tool(id, format!("out {id}"))
    }

    /// A compact picture of a history: "u" user, "a" text answer, "a(x,y)" calls, "t(x)" result.
    fn shape(history: &[Message]) -> String {
        let parts: Vec<String> = history
            .iter()
            .map(|m| match m.role {
                Role::System => "s".into(),
                Role::User => "u".into(),
                Role::Assistant if m.tool_calls.is_empty() => "a".into(),
                Role::Assistant => {
                    let ids: Vec<_> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
                    format!("a({})", ids.join(","))
                }
                Role::Tool => format!("t({})", m.tool_call_id.as_deref().unwrap_or("?")),
            })
            .collect();
        parts.join(" ")
    }

    fn normalized(mut history: Vec<Message>) -> Vec<Message> {
        normalize(&mut history);
        history
    }

    fn norm(history: Vec<Message>) -> String {
        shape(&normalized(history))
    }

    #[test]
    fn a_valid_history_is_unchanged() {
        let history = vec![
            Message::system("s"),
            Message::user("u"),
            asks(&["a", "b"]),
            result("a"),
            result("b"),
            says("done"),
        ];
        assert_eq!(normalized(history.clone()), history);
    }

    #[test]
    fn says_whether_anything_changed() {
        let mut valid = vec![
            Message::user("u"),
            asks(&["a", "b"]),
            result("a"),
            result("b"),
        ];
        assert!(!normalize(&mut valid));
        let mut reordered = vec![asks(&["a", "b"]), result("b"), result("a")];
        assert!(normalize(&mut reordered));
        let mut cut_at_end = vec![Message::user("u"), asks(&["a"])];
        assert!(normalize(&mut cut_at_end));
        assert!(
            !normalize(&mut cut_at_end),
            "the second pass finds nothing to do"
        );
    }

    #[test]
    fn unanswered_calls_are_dropped_with_their_partial_results() {
        let history = vec![
            Message::user("u"),
            asks(&["a", "b"]),
            result("a"),
            Message::user("again"),
        ];
        assert_eq!(norm(history), "u");
    }

    #[test]
    fn an_interrupted_call_at_the_end_is_dropped() {
        assert_eq!(norm(vec![Message::user("u"), asks(&["a"])]), "u");
    }

    #[test]
    fn stray_results_are_dropped() {
        let history = vec![
            result("zz"),
            Message::user("u"),
            asks(&["a"]),
            result("a"),
            result("b"),
        ];
        assert_eq!(norm(history), "u a(a) t(a)");
    }

    #[test]
    fn a_result_before_its_call_is_stray() {
        assert_eq!(norm(vec![result("a"), asks(&["a"])]), "");
    }

    #[test]
    fn results_are_put_in_call_order_right_after_their_call() {
        let history = vec![
            asks(&["a", "b", "c"]),
            result("c"),
            Message::user("x"),
            result("a"),
            result("b"),
        ];
        assert_eq!(norm(history), "a(a,b,c) t(a) t(b) t(c) u");
    }

    #[test]
    fn duplicate_results_keep_the_first() {
        let history = vec![
            asks(&["a"]),
            Message::tool("a", "first"),
            Message::tool("a", "second"),
        ];
        let out = normalized(history);
        assert_eq!(shape(&out), "a(a) t(a)");
        assert_eq!(out[1].content.as_deref(), Some("first"));
    }

    #[test]
    fn results_are_never_merged() {
        let out = normalized(vec![asks(&["a", "b"]), result("b"), result("a")]);
        assert_eq!(out.len(), 3);
        assert!(out[1..].iter().all(|m| m.tool_call_id.is_some()));
    }

    #[test]
    fn an_id_reused_later_binds_to_the_latest_call() {
        // Both calls keep their results; the later one gets a fresh id, and so does its result.
        let history = vec![asks(&["a"]), result("a"), asks(&["a"]), result("a")];
        assert_eq!(norm(history), "a(a) t(a) a(call_fix1) t(call_fix1)");
        // The first call lost its only result to the later one, so it is unanswered.
        let history = vec![asks(&["a"]), asks(&["a"]), result("a")];
        assert_eq!(norm(history), "a(call_fix1) t(call_fix1)");
    }

    #[test]
    fn a_call_naming_one_id_twice_gets_a_fresh_one_and_results_go_in_order() {
        let history = vec![
            asks(&["a", "a"]),
            Message::tool("a", "first"),
            Message::tool("a", "second"),
            says("x"),
        ];
        let out = normalized(history);
        assert_eq!(shape(&out), "a(a,call_fix1) t(a) t(call_fix1) a");
        assert_eq!(out[1].content.as_deref(), Some("first"));
        assert_eq!(out[2].content.as_deref(), Some("second"));
    }

    #[test]
    fn empty_ids_get_fresh_ones_and_results_follow_in_order() {
        let mut history = vec![Message::user("u"), asks(&["", ""])];
        history.push(Message::tool("", "one"));
        history.push(Message {
            tool_call_id: None,
            ..Message::tool("", "two")
        });
        let out = normalized(history);
        assert_eq!(
            shape(&out),
            "u a(call_fix0,call_fix1) t(call_fix0) t(call_fix1)"
        );
        assert_eq!(out[2].content.as_deref(), Some("one"));
        assert_eq!(out[3].content.as_deref(), Some("two"));
    }

    #[test]
    fn fresh_ids_avoid_the_ids_already_there() {
        let history = vec![
            asks(&["call_fix1", "call_fix1_1"]),
            result("call_fix1"),
            result("call_fix1_1"),
            asks(&["call_fix1"]),
            result("call_fix1"),
        ];
        assert_eq!(
            norm(history),
            "a(call_fix1,call_fix1_1) t(call_fix1) t(call_fix1_1) a(call_fix2) t(call_fix2)"
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_become_one_and_the_model_sees_them() {
        for (sent, note) in [
            ("{\"command\": \"ls", "they were: {\"command\": \"ls]"),
            ("[1, 2]", "they were: [1, 2]]"),
            ("\"ls\"", "they were: \"ls\"]"),
            ("{} trailing", "they were: {} trailing]"),
            ("", "this call came with no arguments"),
        ] {
            let history = vec![
                Message::user("u"),
                Message::assistant(None, vec![ToolCall::new("a", "bash", sent)]),
                Message::tool("a", "Error: bad arguments"),
            ];
            let out = normalized(history);
            assert_eq!(
                out[1].tool_calls[0].function.arguments, "{}",
                "for {sent:?}"
            );
            let result = out[2].content.as_deref().unwrap();
            assert!(result.starts_with("[turn: "), "{result}");
            assert!(result.contains(note), "{note:?} not in {result}");
            assert!(result.ends_with("]\nError: bad arguments"), "{result}");
            assert_eq!(normalized(out.clone()), out, "idempotent for {sent:?}");
        }
        // Objects stay exactly as they were written.
        let kept = "  {\"command\" : \"ls\"}\n";
        let history = vec![
            Message::assistant(None, vec![ToolCall::new("a", "bash", kept)]),
            result("a"),
        ];
        assert_eq!(normalized(history.clone()), history);
    }

    #[test]
    fn long_replaced_arguments_are_shown_in_part() {
        let sent = format!("{{\"content\": \"{}", "é".repeat(5000));
        let history = vec![
            Message::assistant(None, vec![ToolCall::new("a", "write_file", &sent)]),
            result("a"),
        ];
        let out = normalized(history);
        let result = out[1].content.as_deref().unwrap();
        assert!(result.len() < 4400, "{}", result.len());
        assert!(result.contains(&format!(" [... {} more bytes]]", sent.len() - 4095)));
    }

    #[test]
    fn contents_and_fields_are_made_plain() {
        let mut tool = Message::tool("a", "x");
        tool.content = None;
        let mut user = Message::user("u");
        user.content = None;
        user.tool_call_id = Some("a".into());
        let mut call = ToolCall::new("a", "bash", "{}");
        call.kind = "tool".into();
        let history = vec![user, Message::assistant(None, vec![call]), tool];
        let out = normalized(history);
        assert_eq!(out[0], Message::user(""));
        assert_eq!(out[1].tool_calls[0].kind, "function");
        assert_eq!(out[2], Message::tool("a", ""));
        assert!(check(&out).is_ok());
    }

    #[test]
    fn user_messages_in_a_row_become_one() {
        let history = vec![
            Message::system("s"),
            Message::user("first"),
            asks(&["a"]), // interrupted: dropped
            Message::user(""),
            Message::user("second"),
            says("ok"),
        ];
        let out = normalized(history);
        assert_eq!(shape(&out), "s u a");
        assert_eq!(out[1].content.as_deref(), Some("first\n\nsecond"));
    }

    #[test]
    fn reading_is_lenient_about_shapes_other_writers_use() {
        let read = |line: &str| serde_json::from_str::<Message>(line).unwrap();
        let m = read(
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},"b"]}"#,
        );
        assert_eq!(
            m.content.as_deref(),
            Some("a\n[image_url content omitted]\nb")
        );
        let m = read(
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":7,"function":{"name":"bash","arguments":{"command":"ls"}}},{"id":null,"type":null,"function":{"name":"bash","arguments":null}}]}"#,
        );
        assert_eq!(m.tool_calls[0].id, "7");
        assert_eq!(m.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
        assert_eq!(m.tool_calls[1].id, "");
        assert_eq!(m.tool_calls[1].kind, "function");
        assert_eq!(m.tool_calls[1].function.arguments, "");
        let m = read(r#"{"role":"tool","tool_call_id":7,"content":"x"}"#);
        assert_eq!(m.tool_call_id.as_deref(), Some("7"));
        let m = read(r#"{"role":"assistant","content":"hi","tool_calls":null}"#);
        assert!(m.tool_calls.is_empty());
        assert_eq!(
            read(r#"{"role":"developer","content":"s"}"#).role,
            Role::System
        );
        assert!(serde_json::from_str::<Message>(r#"{"role":"wizard"}"#).is_err());
    }

    #[test]
    fn empty_assistant_messages_are_dropped() {
        let empty = Message::assistant(None, vec![]);
        assert_eq!(norm(vec![Message::user("u"), empty, says("")]), "u");
    }

    #[test]
    fn serializes_as_the_wire_format() {
        let json = serde_json::to_string(&asks(&["a"])).unwrap();
        assert_eq!(
            json,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"bash","arguments":"{}"}}]}"#
        );
        let json = serde_json::to_string(&result("a")).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","content":"out a","tool_call_id":"a"}"#
        );
    }

    /// A seeded xorshift generator: `next(n)` is in `0..n`.
    fn prng(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// Many random histories with broken arguments, ids, shapes and orders: the result always
    /// passes `check`, normalizing it again changes nothing, and every result kept still
    /// answers a call its id named (each call's name and each result's text carry the id it
    /// was written with).
    #[test]
    fn random_histories_become_valid_and_stay_put() {
        let mut next = prng(0x9E37_79B9_7F4A_7C15);
        let ids = ["a", "b", "c", "d", ""];
        let arguments = [
            "{}",
            "{\"command\":\"ls\"}",
            "",
            "{\"command\": \"ls",
            "[1]",
            "\"x\"",
            " {\"a\":1} ",
            "call_fix3",
        ];
        for _ in 0..20_000 {
            let len = next(14);
            let history: Vec<Message> = (0..len)
                .map(|_| match next(8) {
                    0 => Message::user("u"),
                    1 => Message {
                        content: None,
                        ..Message::user("")
                    },
                    2 => says(["", "t"][next(2) as usize]),
                    3..=5 => {
                        let n = 1 + next(3) as usize;
                        let calls = (0..n)
                            .map(|_| {
                                let id = ids[next(5) as usize];
                                let args = arguments[next(8) as usize];
                                let mut call = ToolCall::new(id, format!("label:{id}"), args);
                                if next(6) == 0 {
                                    call.kind = "tool".into();
                                }
                                if next(10) == 0 {
                                    call.id = format!("call_fix{}", next(4));
                                    call.function.name = format!("label:{}", call.id);
                                }
                                call
                            })
                            .collect();
                        Message::assistant(None, calls)
                    }
                    _ => {
                        let id = ids[next(5) as usize];
                        let mut result = Message::tool(id, format!("label:{id}"));
                        if id.is_empty() && next(2) == 0 {
                            result.tool_call_id = None;
                        }
                        result
                    }
                })
                .collect();
            let once = normalized(history.clone());
            if let Err(why) = check(&once) {
                panic!("{why}\nin:  {}\nout: {}", shape(&history), shape(&once));
            }
            assert!(
                !normalize(&mut once.clone()),
                "a second pass reports a change for {}",
                shape(&history)
            );
            assert_eq!(
                normalized(once.clone()),
                once,
                "not idempotent for {}",
                shape(&history)
            );
            let mut calls: &[ToolCall] = &[];
            let mut answered = 0;
            for message in &once {
                if message.role == Role::Assistant {
                    calls = &message.tool_calls;
                    answered = 0;
                } else if message.role == Role::Tool {
                    let label = &calls[answered].function.name;
                    let text = message.content.as_deref().unwrap();
                    assert!(
                        text.ends_with(label.as_str()),
                        "{text:?} answers {label:?} in {}",
                        shape(&history)
                    );
                    answered += 1;
                }
            }
        }
    }

    #[test]
    fn check_catches_what_normalize_fixes() {
        assert!(check(&[asks(&["a"])]).is_err());
        assert!(check(&[result("a")]).is_err());
        assert!(check(&[asks(&["a"]), Message::user("u"), result("a")]).is_err());
        assert!(check(&[asks(&["a"]), result("a")]).is_ok());
        assert!(check(&[asks(&["a"]), result("a"), asks(&["a"]), result("a")]).is_err());
        let broken = Message::assistant(None, vec![ToolCall::new("a", "bash", "{")]);
        assert!(check(&[broken, result("a")]).is_err());
        assert!(check(&[Message::user("u"), Message::user("v")]).is_err());
    }
}
