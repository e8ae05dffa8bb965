//! The chat history: serde types for OpenAI-compatible messages, and `normalize`, which turns any
//! history (an interrupted run, a hand-edited session) into one every server accepts.
//!
//! Pure: no I/O. The wire format is the Chat Completions one, so a history can be sent as it is.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// `None` only on an assistant message that carries tool calls alone (sent as `null`).
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// Always a JSON text, as strict servers require (never an object).
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

/// Returns a history every OpenAI-compatible server accepts, in O(n):
/// - an assistant message whose tool calls are not all answered (an interrupted run) is dropped
///   together with its partial results, and so is one that names the same call id twice;
/// - a tool result with no earlier call of its id is dropped, as is a second result for one id;
/// - results sit right after their assistant message, in call order, one message per id;
/// - an assistant message with neither text nor calls is dropped: it carries nothing;
/// - everything else keeps its order. Normalizing twice changes nothing.
///
/// Works in place and says whether anything changed, so callers can keep what they derived
/// from an unchanged history (the agent keeps each message's serialized form).
pub fn normalize(history: &mut Vec<Message>) -> bool {
    const NONE: usize = usize::MAX;
    // One slot per tool call, holding the index of the result that answers it (or NONE);
    // an assistant message's calls own a run of slots starting at `first_slot[i]`.
    let mut slots: Vec<usize> = Vec::new();
    let mut first_slot = vec![NONE; history.len()];
    // Which slot a result for each id fills: the latest call made with that id.
    let mut calls: HashMap<&str, usize> = HashMap::with_capacity(history.len());
    let mut broken = vec![false; history.len()];
    for (i, message) in history.iter().enumerate() {
        match message.role {
            Role::Assistant if !message.tool_calls.is_empty() => {
                first_slot[i] = slots.len();
                for call in &message.tool_calls {
                    let earlier = calls.insert(&call.id, slots.len());
                    broken[i] |= earlier.is_some_and(|slot| slot >= first_slot[i]);
                    slots.push(NONE);
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                if let Some(&slot) = calls.get(id) {
                    if slots[slot] == NONE {
                        slots[slot] = i;
                    }
                }
            }
            _ => {}
        }
    }

    let mut taken: Vec<Option<Message>> = std::mem::take(history).into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(taken.len());
    // Whether some message left its place: a drop shifts every later one, a move is a move.
    let mut moved = false;
    let mut keep = |out: &mut Vec<Message>, from: usize, message: Message| {
        moved |= from != out.len();
        out.push(message);
    };
    for i in 0..taken.len() {
        let Some(message) = taken[i].take() else {
            continue;
        };
        match message.role {
            Role::Tool => {} // placed with its call below, or stray
            Role::Assistant if !message.tool_calls.is_empty() => {
                let answers = &slots[first_slot[i]..first_slot[i] + message.tool_calls.len()];
                if broken[i] || answers.contains(&NONE) {
                    continue;
                }
                keep(&mut out, i, message);
                for &result in answers {
                    if let Some(message) = taken[result].take() {
                        keep(&mut out, result, message);
                    }
                }
            }
            Role::Assistant if message.content.as_deref().unwrap_or_default().is_empty() => {}
            _ => keep(&mut out, i, message),
        }
    }
    let changed = moved || out.len() != taken.len();
    *history = out;
    changed
}

/// Why a history would be refused by a strict server, if it would be. The same rules as
/// `normalize` guarantees; used by tests and kept next to them so they cannot drift.
#[cfg(test)]
pub fn check(history: &[Message]) -> Result<(), String> {
    let mut expected: std::collections::VecDeque<&str> = Default::default();
    for (i, message) in history.iter().enumerate() {
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
                expected = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
                let mut ids: Vec<_> = expected.iter().collect();
                ids.sort();
                if ids.windows(2).any(|w| w[0] == w[1]) {
                    return Err(format!("message {i}: duplicate call id"));
                }
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
        assert_eq!(norm(history), "u u");
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
        let history = vec![asks(&["a"]), result("a"), asks(&["a"]), result("a")];
        assert_eq!(norm(history), "a(a) t(a) a(a) t(a)");
        // The first call lost its only result to the later one, so it is unanswered.
        let history = vec![asks(&["a"]), asks(&["a"]), result("a")];
        assert_eq!(norm(history), "a(a) t(a)");
    }

    #[test]
    fn a_call_naming_one_id_twice_is_dropped() {
        assert_eq!(
            norm(vec![asks(&["a", "a"]), result("a"), result("a"), says("x")]),
            "a"
        );
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

    /// Many random histories: the result always passes `check`, and normalizing again is a no-op.
    #[test]
    fn random_histories_become_valid_and_stay_put() {
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let ids = ["a", "b", "c", "d"];
        for _ in 0..5000 {
            let len = next(12);
            let history: Vec<Message> = (0..len)
                .map(|_| match next(6) {
                    0 => Message::user("u"),
                    1 => says(if next(4) == 0 { "" } else { "t" }),
                    2 | 3 => {
                        let n = 1 + next(3) as usize;
                        let picked: Vec<&str> = (0..n).map(|_| ids[next(4) as usize]).collect();
                        asks(&picked)
                    }
                    _ => result(ids[next(4) as usize]),
                })
                .collect();
            let once = normalized(history.clone());
            assert!(
                !normalize(&mut once.clone()),
                "a second pass reports no change"
            );
            if let Err(why) = check(&once) {
                panic!("{why}\nin:  {}\nout: {}", shape(&history), shape(&once));
            }
            assert_eq!(
                normalized(once.clone()),
                once,
                "not idempotent for {}",
                shape(&history)
            );
        }
    }

    #[test]
    fn check_catches_what_normalize_fixes() {
        assert!(check(&[asks(&["a"])]).is_err());
        assert!(check(&[result("a")]).is_err());
        assert!(check(&[asks(&["a"]), Message::user("u"), result("a")]).is_err());
        assert!(check(&[asks(&["a"]), result("a")]).is_ok());
    }
}
