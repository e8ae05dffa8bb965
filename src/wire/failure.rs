//! Reading a server's refusal: whether trying the same request again can change the answer,
//! and which message of the request the server blames, where its error says so.
//!
//! Pure: status codes and body text in, verdicts out. A 500 is usually a passing fault, but
//! llama-server also answers 500 when it cannot parse or render the request itself ("Failed to
//! parse tool call arguments as JSON", a chat template's `raise_exception`); sending the same
//! bytes again gets the same 500, so those are not retried.

/// What llama-server, vLLM and chat templates say when the request itself is at fault, in
/// lowercase. Kept to messages about the request: "Failed to parse input" is llama-server
/// failing on the model's own output, which a new sample may fix.
const REQUEST_FAULTS: &[&str] = &[
    "failed to parse tool call arguments",
    "failed to parse messages",
    "failed to parse tools",
    "jinja exception",
    "raise_exception",
    "conversation roles must alternate",
    "invalid 'content' type",
    "expected 'content'",
    "unsupported content part type",
    "missing content part type",
    "cannot specify both content and content_parts",
    "error rendering chat template",
    "failed to apply chat template",
];

/// Whether a failed request is worth sending again: a timeout (408), a rate limit (429), or
/// a server fault (5xx) whose message is not about the request itself (nor 501, "not
/// implemented", which will stay so). Other 4xx are the request's fault and final.
pub fn retryable(status: u16, message: &str) -> bool {
    match status {
        408 | 429 => true,
        501 => false,
        500..=599 => !about_the_request(message),
        _ => false,
    }
}

/// Whether an error that came inside a reply says the server's cache ran out of room while
/// it generated: llama-server's "Context size has been exceeded." (its slots share one
/// cache, so a reply still running for another request can take the room). The request
/// itself fit, or the server would have refused it before generating; trying again later
/// can pass.
pub fn cache_full(message: &str) -> bool {
    message
        .to_ascii_lowercase()
        .contains("context size has been exceeded")
}

/// Whether an error message says the server could not parse or render the request.
pub fn about_the_request(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    REQUEST_FAULTS.iter().any(|fault| message.contains(fault))
}

/// The index of the request message an error body points at, as servers write it:
/// `messages[3]` (OpenAI's messages), `messages.[3]` (OpenAI's `param`), `messages.3` (vLLM's
/// and pydantic's locations), `messages/3` (JSON pointers).
pub fn blamed_message(body: &str) -> Option<usize> {
    let mut rest = body;
    while let Some(at) = rest.find("messages") {
        rest = &rest[at + "messages".len()..];
        let after = rest
            .strip_prefix(".[")
            .or_else(|| rest.strip_prefix('['))
            .or_else(|| rest.strip_prefix('.'))
            .or_else(|| rest.strip_prefix('/'));
        let Some(after) = after else { continue };
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && digits < 10 {
            return after[..digits].parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        let llama =
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] \
                     parse error at line 1, column 13: syntax error while parsing object";
        let template = "\n------------\nWhile executing CallExpression at line 189, column 32 in \
                        source:\n...{{- raise_exception('After the optional system message, \
                        con...\nError: Jinja Exception: After the optional system message, \
                        conversation roles must alternate user and assistant roles";
        let table: &[(u16, &str, bool)] = &[
            (500, "overloaded", true),
            (502, "Bad Gateway", true),
            (503, "Loading model", true),
            (429, "rate limited", true),
            (408, "Request Timeout", true),
            (500, llama, false),
            (500, template, false),
            (
                500,
                "Failed to parse messages: Missing 'role' in message",
                false,
            ),
            // The model's output failed to parse: a new sample may differ.
            (500, "Failed to parse input at pos 12: <tool_call>", true),
            (501, "Not Implemented", false),
            (400, "bad request", false),
            (401, "invalid key", false),
            (404, "no such model", false),
            (413, "payload too large", false),
            (422, "unprocessable", false),
        ];
        for &(status, message, retried) in table {
            assert_eq!(retryable(status, message), retried, "{status} {message}");
        }
    }

    #[test]
    fn finds_the_message_a_body_blames() {
        let table: &[(&str, Option<usize>)] = &[
            (
                r#"{"error":{"message":"Invalid 'messages[3].content': string too long.","param":"messages.[3].content"}}"#,
                Some(3),
            ),
            (r#"{"param":"messages.[12].tool_calls"}"#, Some(12)),
            (
                "1 validation error for ChatCompletionRequest\nmessages.5.content",
                Some(5),
            ),
            ("/messages/7/role: invalid", Some(7)),
            ("messages must alternate; see messages[2]", Some(2)),
            ("Failed to parse tool call arguments as JSON", None),
            ("messages[]", None),
            ("messages.99999999999", None),
        ];
        for &(body, index) in table {
            assert_eq!(blamed_message(body), index, "{body}");
        }
    }
}
