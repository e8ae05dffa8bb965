//! What turn knows about each kind of local server: its usual address, how it names itself in
//! its model list, the words it uses to refuse native tool calls, and how to switch those on.
//! One table, `SERVERS`, so adding a kind (or a fact about one) is adding a row.
//!
//! `refusal` and `probes` are pure. `discover` is the one piece of I/O here: a GET /models on
//! each address with a short connect timeout, for zero-config use with a local server.

use serde_json::Value;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    LlamaServer,
    Ollama,
    LmStudio,
    Vllm,
}

pub struct Server {
    pub kind: Kind,
    /// What people call it.
    pub name: &'static str,
    /// Where it listens unless told otherwise (on 127.0.0.1, under /v1).
    pub port: u16,
    /// The `owned_by` of the models it lists, when that names the server.
    pub owner: Option<&'static str>,
    /// Error texts (as it words them) that mean "no native tool calls here", each with how to
    /// switch them on.
    pub refusals: &'static [(&'static str, &'static str)],
}

/// The servers turn looks for, in the order it looks.
pub const SERVERS: [Server; 4] = [
    Server {
        kind: Kind::LlamaServer,
        name: "llama-server",
        port: 8080,
        owner: Some("llamacpp"),
        refusals: &[
            // HTTP 500 from llama-server started without --jinja.
            (
                "tools param requires --jinja flag",
                "start llama-server with --jinja for native tool calls",
            ),
            // Older llama-server builds could not stream tool calls at all.
            (
                "Cannot use tools with stream",
                "this llama-server cannot stream tool calls: update it, or run turn with --no-stream",
            ),
        ],
    },
    Server {
        kind: Kind::Ollama,
        name: "Ollama",
        port: 11434,
        owner: None,
        // HTTP 400: "registry.ollama.ai/library/qwen2.5-coder:1.5b-base does not support tools"
        // (older versions: "llama3.1 does not support tools").
        refusals: &[(
            "does not support tools",
            "this Ollama model's template has no tool support; models tagged 'tools' on \
             ollama.com have native tool calls",
        )],
    },
    Server {
        kind: Kind::LmStudio,
        name: "LM Studio",
        port: 1234,
        owner: Some("organization_owner"),
        refusals: &[],
    },
    Server {
        kind: Kind::Vllm,
        name: "vLLM",
        port: 8000,
        owner: Some("vllm"),
        // HTTP 400: "\"auto\" tool choice requires --enable-auto-tool-choice and
        // --tool-call-parser to be set" (vLLM assumes "auto" whenever tools are sent).
        refusals: &[(
            "--enable-auto-tool-choice",
            "start vLLM with --enable-auto-tool-choice --tool-call-parser NAME (hermes for \
             Qwen, llama3_json for Llama 3.x) for native tool calls",
        )],
    },
];

/// A server error that refuses native tool calls: which server says that, and how to switch
/// them on there.
pub fn refusal(message: &str) -> Option<(&'static Server, &'static str)> {
    let message = message.to_ascii_lowercase();
    SERVERS.iter().find_map(|server| {
        server
            .refusals
            .iter()
            .find(|(text, _)| message.contains(&text.to_ascii_lowercase()))
            .map(|(_, hint)| (server, *hint))
    })
}

/// One address to look for a server at.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub base_url: String,
    pub kind: Option<Kind>,
}

/// The addresses to probe: the usual ports of `SERVERS` on 127.0.0.1, or the list given in
/// TURN_LOCAL_SERVERS (`HOST:PORT`, `PORT` or `http://` URLs, separated by commas or spaces;
/// `off` probes nothing).
pub fn probes(setting: Option<&str>) -> Result<Vec<Probe>, String> {
    let Some(setting) = setting.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(SERVERS
            .iter()
            .map(|s| Probe {
                base_url: format!("http://127.0.0.1:{}/v1", s.port),
                kind: Some(s.kind),
            })
            .collect());
    };
    if setting == "off" || setting == "none" {
        return Ok(Vec::new());
    }
    setting
        .split([',', ' ', '\t', '\n'])
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let base_url = if entry.starts_with("http://") {
                let url = entry.trim_end_matches('/');
                let has_path = url["http://".len()..].contains('/');
                if has_path {
                    url.to_string()
                } else {
                    format!("{url}/v1")
                }
            } else if entry.parse::<u16>().is_ok_and(|port| port > 0) {
                format!("http://127.0.0.1:{entry}/v1")
            } else if entry.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok()
            }) {
                format!("http://{entry}/v1")
            } else {
                return Err(format!(
                    "TURN_LOCAL_SERVERS: '{entry}' is not HOST:PORT, PORT or an http:// URL"
                ));
            };
            Ok(Probe {
                base_url,
                kind: None,
            })
        })
        .collect()
}

/// The server a model list came from, when it says.
pub fn identify(models: &Value) -> Option<Kind> {
    let owner = models
        .get("data")?
        .as_array()?
        .first()?
        .get("owned_by")?
        .as_str()?;
    SERVERS
        .iter()
        .find(|s| s.owner == Some(owner))
        .map(|s| s.kind)
}

/// What people call a server of `kind`.
pub fn name(kind: Option<Kind>) -> &'static str {
    kind.and_then(|kind| SERVERS.iter().find(|s| s.kind == kind))
        .map_or("an OpenAI-compatible server", |s| s.name)
}

/// The first probe that answers GET /models with a model list: its base URL and the server's
/// name. Each try gives up after a short connect timeout, so looking costs little when nothing
/// listens.
pub fn discover(probes: &[Probe]) -> Option<(String, &'static str)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_millis(300)))
        .timeout_global(Some(Duration::from_millis(1500)))
        .user_agent(concat!("turn/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    probes.iter().find_map(|probe| {
        let url = format!("{}/models", probe.base_url);
        let mut response = agent.get(&url).call().ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(4 * 1024 * 1024)
            .read_to_string()
            .ok()?;
        let models: Value = serde_json::from_str(&body).ok()?;
        if !(models.get("data").is_some() || models.get("models").is_some()) {
            return None;
        }
        let kind = identify(&models).or(probe.kind);
        Some((probe.base_url.clone(), name(kind)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn real_refusals_are_recognized_with_the_right_hint() {
        let cases = [
            (
                "registry.ollama.ai/library/qwen2.5-coder:1.5b-base does not support tools",
                Kind::Ollama,
                "ollama.com",
            ),
            (
                "llama3.1 does not support tools",
                Kind::Ollama,
                "tools",
            ),
            ("tools param requires --jinja flag", Kind::LlamaServer, "--jinja"),
            ("Cannot use tools with stream", Kind::LlamaServer, "--no-stream"),
            (
                "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                Kind::Vllm,
                "--enable-auto-tool-choice --tool-call-parser",
            ),
        ];
        for (message, kind, in_hint) in cases {
            let (server, hint) = refusal(message).unwrap_or_else(|| panic!("{message}"));
            assert_eq!(server.kind, kind, "{message}");
            assert!(hint.contains(in_hint), "{hint}");
        }
    }

    #[test]
    fn other_errors_are_not_refusals() {
        for message in [
            "the request exceeds the available context size",
            "model 'qwen' not found, try pulling it first",
            "Invalid API key",
            "tool_call_id 'x' has no response message",
            "",
        ] {
            assert!(refusal(message).is_none(), "{message}");
        }
    }

    #[test]
    fn default_probes_are_the_usual_ports_in_order() {
        let list = probes(None).unwrap();
        let urls: Vec<&str> = list.iter().map(|p| p.base_url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:8080/v1",
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:1234/v1",
                "http://127.0.0.1:8000/v1"
            ]
        );
        assert_eq!(list[1].kind, Some(Kind::Ollama));
        assert_eq!(probes(Some("  ")).unwrap().len(), 4, "blank is unset");
    }

    #[test]
    fn the_probe_list_can_be_given() {
        let list = probes(Some("127.0.0.1:41000, 41001 http://box:9/v2 http://h:7")).unwrap();
        let urls: Vec<&str> = list.iter().map(|p| p.base_url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:41000/v1",
                "http://127.0.0.1:41001/v1",
                "http://box:9/v2",
                "http://h:7/v1"
            ]
        );
        assert!(list.iter().all(|p| p.kind.is_none()));
        assert!(probes(Some("off")).unwrap().is_empty());
        let err = probes(Some("localhost")).unwrap_err();
        assert!(err.contains("'localhost'"), "{err}");
        assert!(probes(Some("https://x:1")).is_err());
        assert!(probes(Some("0")).is_err());
    }

    #[test]
    fn model_lists_name_their_server() {
        let list =
            |owner: &str| json!({"object": "list", "data": [{"id": "m", "owned_by": owner}]});
        assert_eq!(identify(&list("llamacpp")), Some(Kind::LlamaServer));
        assert_eq!(identify(&list("vllm")), Some(Kind::Vllm));
        assert_eq!(identify(&list("organization_owner")), Some(Kind::LmStudio));
        assert_eq!(identify(&list("library")), None);
        assert_eq!(identify(&json!({"data": []})), None);
        assert_eq!(name(Some(Kind::Ollama)), "Ollama");
        assert_eq!(name(None), "an OpenAI-compatible server");
    }
}
