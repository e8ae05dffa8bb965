//! How turn reaches its server across real networks: which proxy it goes through (curl's
//! rules), which certificate authorities it trusts (the compiled-in roots, the system's bundle,
//! `SSL_CERT_FILE`/`SSL_CERT_DIR` as OpenSSL reads them, `--ca-cert`), and what a failed
//! connection means, so the error points the user at the certificate, the proxy, the address
//! or the server, whichever it is.
//!
//! The choices (`proxy_for`, `bypassed`, `host_of`, `is_loopback`, `trust_files`) are pure, over
//! the environment as a function; only `load_trust` reads files.

use crate::error::{Error, Reach};
use crate::wire::url;
use std::path::{Path, PathBuf};

/// A proxy from the environment, and the variable it came from (named in errors).
#[derive(Clone, Debug, PartialEq)]
pub struct Proxy {
    pub var: &'static str,
    pub url: String,
}

/// The proxy for `base_url`, as curl chooses it: `https_proxy`/`HTTPS_PROXY` for https,
/// `http_proxy`/`HTTP_PROXY` for http, then `all_proxy`/`ALL_PROXY`; none when `no_proxy`/
/// `NO_PROXY` covers the host. Empty values count as unset.
pub fn proxy_for(base_url: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<Proxy> {
    let get = |name: &'static str| {
        env(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name, v.trim().to_string()))
    };
    let (host, _) = host_of(base_url);
    let no_proxy = get("no_proxy").or_else(|| get("NO_PROXY"));
    if no_proxy.is_some_and(|(_, list)| bypassed(&list, &host)) {
        return None;
    }
    let scheme_vars: [&'static str; 2] = if base_url.starts_with("https://") {
        ["https_proxy", "HTTPS_PROXY"]
    } else {
        ["http_proxy", "HTTP_PROXY"]
    };
    scheme_vars
        .into_iter()
        .chain(["all_proxy", "ALL_PROXY"])
        .find_map(get)
        .map(|(var, url)| Proxy { var, url })
}

/// Whether `host` is in a NO_PROXY list: `*`, exact names, and domain suffixes (`example.com`
/// and `.example.com` both cover `api.example.com`); a `:port` on an entry is ignored.
pub fn bypassed(list: &str, host: &str) -> bool {
    let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
    list.split([',', ' '])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.trim_start_matches("*.");
            // Drop a port, but not the colons of a bare IPv6 address.
            let entry = match entry.strip_prefix('[') {
                Some(rest) => rest.split(']').next().unwrap_or_default(),
                None => entry,
            };
            let entry = match entry.rsplit_once(':') {
                Some((name, port))
                    if !name.contains(':') && port.chars().all(|c| c.is_ascii_digit()) =>
                {
                    name
                }
                _ => entry,
            };
            let entry = entry.trim_matches(['[', ']']).to_ascii_lowercase();
            let domain = entry.trim_start_matches('.');
            host == domain || host.ends_with(&format!(".{domain}"))
        })
}

/// The host (without brackets for IPv6) and port of an http(s) URL, without its user info.
pub fn host_of(url: &str) -> (String, u16) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let default = if scheme == "https" { 443 } else { 80 };
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (host.to_string(), port.unwrap_or(default));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), port.parse().unwrap_or(default)),
        None => (authority.to_string(), default),
    }
}

/// Whether `host` names this machine over loopback: `localhost` (and `*.localhost`),
/// 127.0.0.0/8, `::1`.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

#[cfg_attr(not(feature = "tls"), allow(dead_code))]
/// The host an API key would reach in the clear: plain http:// to a host that is not loopback.
pub fn key_in_clear(base_url: &str) -> Option<String> {
    let (host, _) = host_of(base_url);
    (base_url.starts_with("http://") && !is_loopback(&host)).then_some(host)
}

/// The usual places of the system's CA bundle (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine
/// and others), as Go's crypto/x509 lists them.
const SYSTEM_BUNDLES: [&str; 6] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/tls/cacert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

#[cfg_attr(not(feature = "tls"), allow(dead_code))]
/// Where trusted CAs come from, in the order they are read.
#[derive(Debug, PartialEq)]
pub enum Source {
    /// The system's bundle, found at one of the usual paths: skipped quietly if unreadable.
    System(PathBuf),
    /// A file the user named (SSL_CERT_FILE or --ca-cert, said in `from`): must be usable.
    File { path: PathBuf, from: &'static str },
    /// A directory of PEM files (SSL_CERT_DIR): every file in it that holds certificates.
    Dir(PathBuf),
}

#[cfg_attr(not(feature = "tls"), allow(dead_code))]
/// The trust sources: `SSL_CERT_FILE` in place of the system bundle when set (as OpenSSL
/// does), else the first system bundle that exists; each `SSL_CERT_DIR` entry
/// (colon-separated); then every `--ca-cert` file.
pub fn trust_files(
    env: &dyn Fn(&str) -> Option<String>,
    ca_certs: &[PathBuf],
    exists: impl Fn(&Path) -> bool,
) -> Vec<Source> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut sources = Vec::new();
    match set("SSL_CERT_FILE") {
        Some(file) => sources.push(Source::File {
            path: PathBuf::from(file),
            from: "SSL_CERT_FILE",
        }),
        None => sources.extend(
            SYSTEM_BUNDLES
                .iter()
                .map(Path::new)
                .find(|p| exists(p))
                .map(|p| Source::System(p.to_path_buf())),
        ),
    }
    if let Some(dirs) = set("SSL_CERT_DIR") {
        sources.extend(
            dirs.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Source::Dir(PathBuf::from(d))),
        );
    }
    sources.extend(ca_certs.iter().map(|path| Source::File {
        path: path.clone(),
        from: "--ca-cert",
    }));
    sources
}

/// The CAs to trust, read from `sources`: `None` means the compiled-in roots (no source gave
/// a certificate). A file the user named that cannot be read or holds no certificate is an
/// error naming it.
#[cfg(feature = "tls")]
pub fn load_trust(
    sources: &[Source],
) -> Result<Option<Vec<ureq::tls::Certificate<'static>>>, Error> {
    let mut certs = Vec::new();
    for source in sources {
        match source {
            Source::System(path) => {
                if let Ok(bytes) = std::fs::read(path) {
                    certs.extend(pem_certs(&bytes));
                }
            }
            Source::File { path, from } => {
                let bad =
                    |detail: String| Error::Usage(format!("{from} {}: {detail}", path.display()));
                let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
                let found = pem_certs(&bytes);
                if found.is_empty() {
                    return Err(bad(
                        "no PEM certificate in it (-----BEGIN CERTIFICATE-----)".into(),
                    ));
                }
                certs.extend(found);
            }
            Source::Dir(dir) => {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    if path.is_file() {
                        if let Ok(bytes) = std::fs::read(&path) {
                            certs.extend(pem_certs(&bytes));
                        }
                    }
                }
            }
        }
    }
    Ok((!certs.is_empty()).then_some(certs))
}

#[cfg(feature = "tls")]
fn pem_certs(bytes: &[u8]) -> Vec<ureq::tls::Certificate<'static>> {
    ureq::tls::parse_pem(bytes)
        .filter_map(|item| match item {
            Ok(ureq::tls::PemItem::Certificate(cert)) => Some(cert),
            _ => None,
        })
        .collect()
}

/// What a connection failure means for the user, from ureq's error and whether a proxy was
/// in the way: a certificate problem, the proxy's failure, or the server's address.
pub fn explain(error: &ureq::Error, url: &str, proxy: Option<&Proxy>) -> Error {
    use std::io::ErrorKind as K;
    use ureq::Error as E;
    let (host, _) = host_of(url);
    if let Some(detail) = certificate_problem(error) {
        let unknown_ca = detail.contains("does not trust");
        return Error::Tls {
            host,
            detail,
            unknown_ca,
        };
    }
    let reach = match error {
        E::Io(io) => match io.kind() {
            K::ConnectionRefused => Reach::Refused,
            K::TimedOut => Reach::TimedOut,
            _ => Reach::Broken,
        },
        E::HostNotFound => Reach::NotFound,
        E::Timeout(_) => Reach::TimedOut,
        E::ConnectionFailed => Reach::Refused,
        _ => Reach::Broken,
    };
    let detail = match error {
        E::Io(io) => io.to_string(),
        E::HostNotFound => "host not found".to_string(),
        E::ConnectionFailed => "connection failed".to_string(),
        E::Timeout(what) => format!("timed out ({what})"),
        other => other.to_string(),
    };
    if let Some(proxy) = proxy {
        // ureq reaches the proxy first: a refusal, a name that does not resolve or a CONNECT
        // the proxy turned down are the proxy's.
        let proxy_failed = matches!(error, E::ConnectProxyFailed(_) | E::InvalidProxyUrl)
            || matches!(reach, Reach::Refused | Reach::NotFound | Reach::TimedOut);
        if proxy_failed {
            return Error::Proxy {
                var: proxy.var,
                proxy: url::redact(&proxy.url),
                detail,
            };
        }
    }
    Error::Connect {
        url: url::redact(url),
        detail,
        reach,
    }
}

/// The certificate problem behind a TLS failure, in words, if that is what it was. rustls's
/// errors are read from their text ("invalid peer certificate: UnknownIssuer"), which needs no
/// direct dependency on rustls; ureq hands them over as its own variant or inside an I/O error.
fn certificate_problem(error: &ureq::Error) -> Option<String> {
    let text = match error {
        ureq::Error::Io(io) => io.get_ref().map(|inner| inner.to_string())?,
        ureq::Error::Tls(what) => return Some(format!("the TLS set-up failed ({what})")),
        other if format!("{other:?}").starts_with("Rustls") => other.to_string(),
        _ => return None,
    };
    if let Some(reason) = text.split("invalid peer certificate: ").nth(1) {
        let words = match reason.trim() {
            "UnknownIssuer" => "issued by a CA this machine does not trust",
            r if r.starts_with("NotValidForName") => "it is not valid for this host name",
            r if r.starts_with("certificate not valid for name") => r,
            r if r.starts_with("Expired") => "it has expired",
            r if r.starts_with("NotValidYet") => "it is not valid yet",
            "Revoked" => "it was revoked",
            "BadSignature" => "its signature is bad",
            other => other,
        };
        return Some(format!("its certificate is not accepted: {words}"));
    }
    let tls_words = [
        "handshake",
        "peer sent",
        "received fatal alert",
        "certificate",
        "tls",
    ];
    tls_words
        .iter()
        .any(|w| text.to_ascii_lowercase().contains(w))
        .then(|| format!("the TLS handshake failed ({text})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn proxies_are_chosen_as_curl_does() {
        let all = env(&[
            ("HTTPS_PROXY", "http://secure:1"),
            ("http_proxy", "http://plain:2"),
            ("ALL_PROXY", "http://all:3"),
        ]);
        let chosen = |url: &str, e: &dyn Fn(&str) -> Option<String>| {
            proxy_for(url, e).map(|p| (p.var, p.url))
        };
        assert_eq!(
            chosen("https://api.example.com/v1", &all),
            Some(("HTTPS_PROXY", "http://secure:1".to_string()))
        );
        assert_eq!(
            chosen("http://gpu-box:8000/v1", &all),
            Some(("http_proxy", "http://plain:2".to_string()))
        );
        let only_all = env(&[("ALL_PROXY", "socks5://all:3"), ("HTTPS_PROXY", " ")]);
        assert_eq!(
            chosen("https://x/v1", &only_all),
            Some(("ALL_PROXY", "socks5://all:3".to_string()))
        );
        assert_eq!(chosen("https://x/v1", &env(&[])), None);
        let bypass = env(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "localhost,.internal, 10.0.0.1:8000"),
        ]);
        assert_eq!(chosen("https://llm.internal/v1", &bypass), None);
        assert_eq!(chosen("https://10.0.0.1:8443/v1", &bypass), None);
        assert!(chosen("https://internal.example/v1", &bypass).is_some());
    }

    #[test]
    fn no_proxy_entries() {
        let cases = [
            ("*", "anything", true),
            ("example.com", "example.com", true),
            ("example.com", "api.example.com", true),
            (".example.com", "api.example.com", true),
            ("*.example.com", "api.example.com", true),
            ("example.com", "badexample.com", false),
            ("example.com:443", "example.com", true),
            ("::1", "[::1]", true),
            ("[::1]:8080", "::1", true),
            ("LOCALHOST", "localhost", true),
            ("", "localhost", false),
        ];
        for (list, host, expected) in cases {
            assert_eq!(bypassed(list, host), expected, "{list} / {host}");
        }
    }

    #[test]
    fn hosts_and_loopback() {
        assert_eq!(host_of("https://a.b/v1"), ("a.b".to_string(), 443));
        assert_eq!(host_of("http://u:p@h:8080/v1?x"), ("h".to_string(), 8080));
        assert_eq!(host_of("http://[::1]:9/v1"), ("::1".to_string(), 9));
        assert_eq!(host_of("http://[::1]/v1"), ("::1".to_string(), 80));
        for host in [
            "localhost",
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "[::1]",
            "a.localhost",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "10.0.0.1",
            "example.com",
            "0.0.0.0",
            "localhost.example.com",
            "::",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn keys_in_the_clear_are_noticed_off_loopback_only() {
        assert_eq!(key_in_clear("http://gpu:8000/v1"), Some("gpu".into()));
        assert_eq!(key_in_clear("http://10.1.2.3/v1"), Some("10.1.2.3".into()));
        assert_eq!(key_in_clear("http://127.0.0.1:8080/v1"), None);
        assert_eq!(key_in_clear("http://localhost:11434/v1"), None);
        assert_eq!(key_in_clear("http://[::1]:1234/v1"), None);
        assert_eq!(key_in_clear("https://api.openai.com/v1"), None);
    }

    #[test]
    fn trust_sources_follow_openssl() {
        let ca = vec![PathBuf::from("/my/ca.pem")];
        let system = |p: &Path| p == Path::new("/etc/pki/tls/certs/ca-bundle.crt");
        assert_eq!(
            trust_files(&env(&[]), &ca, system),
            [
                Source::System("/etc/pki/tls/certs/ca-bundle.crt".into()),
                Source::File {
                    path: "/my/ca.pem".into(),
                    from: "--ca-cert"
                }
            ]
        );
        // SSL_CERT_FILE replaces the system bundle; SSL_CERT_DIR adds directories.
        let set = env(&[("SSL_CERT_FILE", "/x.pem"), ("SSL_CERT_DIR", "/d1::/d2")]);
        assert_eq!(
            trust_files(&set, &[], system),
            [
                Source::File {
                    path: "/x.pem".into(),
                    from: "SSL_CERT_FILE"
                },
                Source::Dir("/d1".into()),
                Source::Dir("/d2".into()),
            ]
        );
        assert_eq!(trust_files(&env(&[]), &[], |_| false), []);
    }
}
