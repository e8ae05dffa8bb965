//! Learning the context window: from the server before the first request (each kind of local
//! server tells it in its own place), and from the error a server sends when a request did not
//! fit. The parsers are pure; `learn` does the few GETs, one try each, and never fails the run
//! because of them.
//!
//! Where each server says it:
//! - llama-server: `GET <root>/props` → `default_generation_settings.n_ctx` (per slot);
//! - vLLM: `GET /v1/models` → the model's `max_model_len`;
//! - Ollama: `GET <root>/api/ps` → the loaded model's `context_length` (only once it is loaded);
//! - LM Studio: `GET <root>/api/v0/models` → the loaded model's `loaded_context_length`.
//!
//! `<root>` is the base URL without its `/v1`. Which server it is comes from `/v1/models`
//! (`owned_by` is `llamacpp`, `library`/`ollama`, `organization_owner`, or `max_model_len` is
//! there).

use crate::error::Result;
use crate::wire::client::Client;
use serde_json::Value;

/// The kinds of server whose window turn knows how to ask for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    LlamaServer,
    Vllm,
    Ollama,
    LmStudio,
    Unknown,
}

impl Kind {
    /// Where the window is read, for people.
    pub fn source(self) -> &'static str {
        match self {
            Kind::LlamaServer => "llama-server /props",
            Kind::Vllm => "vLLM /v1/models",
            Kind::Ollama => "Ollama /api/ps",
            Kind::LmStudio => "LM Studio /api/v0/models",
            Kind::Unknown => "the server",
        }
    }
}

/// What the server said about its window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Learned {
    pub kind: Kind,
    pub tokens: Option<u64>,
}

/// The base URL without a trailing `/v1`: where the servers' own endpoints live.
pub fn root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// The largest window believed: a server that says more is not taken at its word.
pub const MOST: u64 = 1 << 30;

/// A positive whole number of tokens, whether sent as a number or as text, at most `MOST`.
fn tokens(value: Option<&Value>) -> Option<u64> {
    let n = match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.filter(|&n| n > 0).map(|n| n.min(MOST))
}

/// The entry in a model list that is `model`: by id or name, also with Ollama's `:latest`
/// left off or added; else the only entry.
fn entry<'a>(list: &'a [Value], model: &str, keys: &[&str]) -> Option<&'a Value> {
    let same = |a: &str| {
        a == model
            || a.strip_suffix(":latest") == Some(model)
            || model.strip_suffix(":latest") == Some(a)
    };
    let found = list.iter().find(|m| {
        keys.iter()
            .any(|k| m.get(*k).and_then(Value::as_str).is_some_and(same))
    });
    found.or(if list.len() == 1 { list.first() } else { None })
}

/// Which server answered `GET /v1/models`, and the window when the answer holds it (vLLM).
pub fn from_models(body: &Value, model: &str) -> Learned {
    let list = body.get("data").and_then(Value::as_array);
    let Some(found) = list.and_then(|list| entry(list, model, &["id"])) else {
        return Learned {
            kind: Kind::Unknown,
            tokens: None,
        };
    };
    if let Some(tokens) = tokens(found.get("max_model_len")) {
        return Learned {
            kind: Kind::Vllm,
            tokens: Some(tokens),
        };
    }
    let kind = match found.get("owned_by").and_then(Value::as_str) {
        Some("llamacpp") => Kind::LlamaServer,
        Some("vllm") => Kind::Vllm,
        Some("library" | "ollama") => Kind::Ollama,
        Some("organization_owner") => Kind::LmStudio,
        _ => Kind::Unknown,
    };
    Learned { kind, tokens: None }
}

/// llama-server's `/props`: the context of one slot.
pub fn from_props(body: &Value) -> Option<u64> {
    tokens(body.pointer("/default_generation_settings/n_ctx")).or(tokens(body.get("n_ctx")))
}

/// Ollama's `/api/ps`: the context the model was loaded with (absent until it is loaded).
pub fn from_ollama_ps(body: &Value, model: &str) -> Option<u64> {
    let list = body.get("models")?.as_array()?;
    tokens(entry(list, model, &["name", "model"])?.get("context_length"))
}

/// LM Studio's `/api/v0/models`: the context of the loaded model.
pub fn from_lm_studio(body: &Value, model: &str) -> Option<u64> {
    let list = body.get("data")?.as_array()?;
    let loaded: Vec<Value> = list
        .iter()
        .filter(|m| m.get("state").and_then(Value::as_str) == Some("loaded"))
        .cloned()
        .collect();
    tokens(entry(&loaded, model, &["id"])?.get("loaded_context_length"))
}

/// Asks the server for its window: `/v1/models` first, then the kind's own endpoint. An
/// answer that is missing or unreadable is simply no answer; only Ctrl-C is an error.
pub fn learn(client: &Client, model: &str) -> Result<Learned> {
    let base = client.base_url().trim_end_matches('/').to_string();
    let root = root(&base).to_string();
    let mut learned = match client.probe(&format!("{base}/models"))? {
        Some(body) => from_models(&body, model),
        None => Learned {
            kind: Kind::Unknown,
            tokens: None,
        },
    };
    if learned.tokens.is_none() {
        learned.tokens = ask(client, learned.kind, &root, model)?;
    }
    // An older llama-server says nothing of itself in /v1/models; a local server is worth
    // the one more question.
    if learned.kind == Kind::Unknown && base.starts_with("http://") {
        if let Some(tokens) = ask(client, Kind::LlamaServer, &root, model)? {
            learned = Learned {
                kind: Kind::LlamaServer,
                tokens: Some(tokens),
            };
        }
    }
    Ok(learned)
}

/// The window from the endpoint of server `kind`, if it says.
pub fn ask(client: &Client, kind: Kind, root: &str, model: &str) -> Result<Option<u64>> {
    let path = match kind {
        Kind::LlamaServer => "/props",
        Kind::Ollama => "/api/ps",
        Kind::LmStudio => "/api/v0/models",
        Kind::Vllm | Kind::Unknown => return Ok(None),
    };
    let Some(body) = client.probe(&format!("{root}{path}"))? else {
        return Ok(None);
    };
    Ok(match kind {
        Kind::LlamaServer => from_props(&body),
        Kind::Ollama => from_ollama_ps(&body, model),
        _ => from_lm_studio(&body, model),
    })
}

/// What an overflow error says: the window, and how many tokens the request had, when given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overflow {
    pub window: Option<u64>,
    pub prompt: Option<u64>,
}

/// Phrases that mean "the request does not fit the context window", lowercase.
const OVERFLOW: [&str; 9] = [
    "exceeds the available context size", // llama-server
    "exceed_context_size",                // llama-server's error type
    "maximum context length",             // vLLM, OpenAI
    "context_length_exceeded",            // OpenAI's code
    "context length exceeded",
    "exceeds the context window", // OpenAI, newer
    "input exceeds the context window",
    "greater than the context length", // LM Studio
    "context length of only",          // LM Studio
];

/// Whether an error is a context overflow, and what it says of sizes. `body` is the error's
/// JSON when there is one (llama-server puts `n_ctx` and `n_prompt_tokens` there, OpenAI its
/// `code`); `message` is its text.
pub fn overflow(message: &str, body: Option<&Value>) -> Option<Overflow> {
    let error = body.and_then(|b| b.get("error")).filter(|e| e.is_object());
    let named = error.is_some_and(|e| {
        ["type", "code"].iter().any(|k| {
            matches!(
                e.get(*k).and_then(Value::as_str),
                Some("exceed_context_size_error" | "context_length_exceeded")
            )
        })
    });
    let lower = message.to_ascii_lowercase();
    if !named && !OVERFLOW.iter().any(|phrase| lower.contains(phrase)) {
        return None;
    }
    let window = error
        .and_then(|e| tokens(e.get("n_ctx")))
        .or_else(|| number_after(&lower, "context size ("))
        .or_else(|| number_after(&lower, "maximum context length is "))
        .or_else(|| number_after(&lower, "context length of only "))
        .or_else(|| number_after(&lower, "context window of "));
    let prompt = error
        .and_then(|e| tokens(e.get("n_prompt_tokens")))
        .or_else(|| number_after(&lower, "request ("))
        .or_else(|| number_after(&lower, "your request has "))
        .or_else(|| number_after(&lower, "messages resulted in "))
        .or_else(|| number_after(&lower, "tokens ("));
    Some(Overflow { window, prompt })
}

/// The whole number right after `phrase` in `text`.
fn number_after(text: &str, phrase: &str) -> Option<u64> {
    let at = text.find(phrase)? + phrase.len();
    let digits: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .map(|n: u64| n.min(MOST))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_lose_their_v1() {
        assert_eq!(root("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080");
        assert_eq!(root("http://h:11434/v1/"), "http://h:11434");
        assert_eq!(root("http://h/api"), "http://h/api");
    }

    #[test]
    fn models_lists_tell_the_kind_and_vllm_its_window() {
        let vllm = json!({"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "root": "Qwen/Qwen3-8B", "max_model_len": 8192}]});
        assert_eq!(
            from_models(&vllm, "Qwen/Qwen3-8B"),
            Learned {
                kind: Kind::Vllm,
                tokens: Some(8192)
            }
        );
        let llama = json!({"object": "list", "data": [{"id": "qwen2.5-coder", "object": "model", "owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}]});
        assert_eq!(from_models(&llama, "other").kind, Kind::LlamaServer);
        let ollama = json!({"object": "list", "data": [{"id": "qwen3:8b", "owned_by": "library"}, {"id": "llama3:latest", "owned_by": "library"}]});
        assert_eq!(from_models(&ollama, "llama3").kind, Kind::Ollama);
        assert_eq!(from_models(&ollama, "nothing").kind, Kind::Unknown);
        let lm = json!({"data": [{"id": "qwen2.5-7b-instruct", "object": "model", "owned_by": "organization_owner"}], "object": "list"});
        assert_eq!(from_models(&lm, "qwen2.5-7b-instruct").kind, Kind::LmStudio);
        let openai = json!({"data": [{"id": "gpt-4o", "owned_by": "system"}, {"id": "gpt-4o-mini", "owned_by": "system"}]});
        assert_eq!(from_models(&openai, "gpt-4o-mini").kind, Kind::Unknown);
        assert_eq!(from_models(&json!("junk"), "m").kind, Kind::Unknown);
    }

    #[test]
    fn each_servers_endpoint() {
        let props = json!({"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 1, "model_path": "m.gguf"});
        assert_eq!(from_props(&props), Some(4096));
        assert_eq!(from_props(&json!({"n_ctx": 2048})), Some(2048));
        assert_eq!(
            from_props(&json!({"default_generation_settings": {"n_ctx": 0}})),
            None
        );
        let ps = json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "size": 6591830464u64, "size_vram": 5333539264u64, "context_length": 4096, "expires_at": "2025-10-17T16:47:07.93355-07:00"}]});
        assert_eq!(from_ollama_ps(&ps, "qwen3:8b"), Some(4096));
        assert_eq!(from_ollama_ps(&json!({"models": []}), "qwen3:8b"), None);
        let lm = json!({"data": [
            {"id": "qwen2.5-coder-7b-instruct", "type": "llm", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 16384},
            {"id": "llama-3.2-1b-instruct", "type": "llm", "state": "not-loaded", "max_context_length": 131072}]});
        assert_eq!(
            from_lm_studio(&lm, "qwen2.5-coder-7b-instruct"),
            Some(16384)
        );
        assert_eq!(
            from_lm_studio(&lm, "llama-3.2-1b-instruct"),
            Some(16384),
            "the one loaded model"
        );
    }

    #[test]
    fn overflow_errors_in_every_shape() {
        // llama-server, current: the numbers in the message and beside it.
        let body = json!({"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size (4096 tokens)", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}});
        let message = body["error"]["message"].as_str().unwrap();
        let both = Overflow {
            window: Some(4096),
            prompt: Some(4476),
        };
        assert_eq!(overflow(message, Some(&body)), Some(both));
        assert_eq!(
            overflow(message, None),
            Some(both),
            "the message alone says it"
        );
        // llama-server, older: no numbers.
        assert_eq!(
            overflow(
                "the request exceeds the available context size, try increasing it",
                None
            ),
            Some(Overflow::default())
        );
        // vLLM, three wordings.
        let vllm = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.";
        assert_eq!(
            overflow(vllm, None),
            Some(Overflow {
                window: Some(4096),
                prompt: Some(4000)
            })
        );
        let vllm = "This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens. Please reduce the length of the input messages.";
        assert_eq!(
            overflow(vllm, None),
            Some(Overflow {
                window: Some(8192),
                prompt: Some(9000)
            })
        );
        let vllm = "'max_tokens' or 'max_completion_tokens' is too large: 2000. This model's maximum context length is 4096 tokens and your request has 2104 input tokens (2000 > 4096 - 2104).";
        assert_eq!(overflow(vllm, None).unwrap().window, Some(4096));
        // OpenAI: the code, and the old and new messages.
        let openai = json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
        assert_eq!(
            overflow(
                "Your input exceeds the context window of this model.",
                Some(&openai)
            ),
            Some(Overflow::default())
        );
        let old = "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.";
        assert_eq!(
            overflow(old, None),
            Some(Overflow {
                window: Some(8192),
                prompt: Some(8227)
            })
        );
        // LM Studio.
        let lm = "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input";
        assert_eq!(overflow(lm, None).unwrap().window, Some(4096));
        // Not overflows.
        assert_eq!(overflow("model 'x' not found", None), None);
        // Absurd numbers are capped, not trusted to do arithmetic with.
        let huge = "This model's maximum context length is 99999999999999999999 tokens.";
        assert_eq!(overflow(huge, None).unwrap().window, None, "not a u64");
        let big = json!({"default_generation_settings": {"n_ctx": u64::MAX}});
        assert_eq!(from_props(&big), Some(MOST));
        assert_eq!(
            overflow("Rate limit reached for tokens per min", None),
            None
        );
    }
}
