//! Server addresses as text: credentials hidden wherever an address is shown, redirect targets
//! resolved against the address that sent them, and whether two addresses share an origin
//! (the API key goes only there).
//!
//! Pure: strings in, strings out. turn needs no more of URLs than this, so no URL crate.

/// `url` with any `user:password@` replaced by `***@`, for showing it.
pub fn redact(url: &str) -> String {
    let start = url.find("://").map_or(0, |at| at + 3);
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| start + at);
    match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &url[..start], &url[start + at..]),
        None => url.to_string(),
    }
}

/// `text` with the credentials of every `scheme://user:password@host` in it hidden.
pub fn redact_all(text: &str) -> String {
    if !text.contains('@') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        // The address runs to the next space or quote; its authority to the first '/'.
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>'))
            .unwrap_or(after.len());
        let authority_end = after[..end].find(['/', '?', '#']).unwrap_or(end);
        match after[..authority_end].rfind('@') {
            Some(user_end) => {
                out.push_str("***");
                rest = &after[user_end..];
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// Where a redirect's `Location` points, as an absolute address: absolute locations as they
/// are, `//host/…` with the current scheme, `/path` on the current origin, anything else
/// beside the current path's last segment.
pub fn resolve(base: &str, location: &str) -> Option<String> {
    let location = location.trim();
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(location.to_string());
    }
    let (scheme, rest) = base.split_once("://")?;
    if let Some(elsewhere) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{elsewhere}"));
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let origin = &base[..scheme.len() + 3 + authority_end];
    if location.starts_with('/') {
        return Some(format!("{origin}{location}"));
    }
    let path = &rest[authority_end..];
    let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
    let dir = &path[..path.rfind('/').map_or(0, |at| at + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some(format!("{origin}{dir}{location}"))
}

/// Whether two absolute addresses have the same scheme, host and port (as written).
pub fn same_origin(a: &str, b: &str) -> bool {
    fn origin(url: &str) -> Option<(&str, &str)> {
        let (scheme, rest) = url.split_once("://")?;
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let host = &authority[authority.rfind('@').map_or(0, |at| at + 1)..];
        Some((scheme, host))
    }
    match (origin(a), origin(b)) {
        (Some((s1, h1)), Some((s2, h2))) => {
            s1.eq_ignore_ascii_case(s2) && h1.eq_ignore_ascii_case(h2)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_hidden() {
        let table = [
            (
                "http://u:p@127.0.0.1:8080/v1",
                "http://***@127.0.0.1:8080/v1",
            ),
            ("https://token@api.x.com/v1", "https://***@api.x.com/v1"),
            ("https://a:b@c@host/v1?x=y@z", "https://***@host/v1?x=y@z"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
            ("http://host/v1/a@b", "http://host/v1/a@b"),
            ("u:p@host:1/v1", "***@host:1/v1"),
        ];
        for (url, shown) in table {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn credentials_are_hidden_inside_text() {
        assert_eq!(
            redact_all("cannot reach http://u:p@h:1/v1/chat: refused; see https://k@x/y z@w"),
            "cannot reach http://***@h:1/v1/chat: refused; see https://***@x/y z@w"
        );
        assert_eq!(redact_all("no addresses@all"), "no addresses@all");
        assert_eq!(redact_all("http://h/a@b"), "http://h/a@b");
    }

    #[test]
    fn locations_resolve_against_the_current_address() {
        let base = "http://127.0.0.1:8080/v1/chat/completions";
        let table = [
            ("https://other:9/v2/x", "https://other:9/v2/x"),
            ("//other/v1/x", "http://other/v1/x"),
            (
                "/v2/chat/completions",
                "http://127.0.0.1:8080/v2/chat/completions",
            ),
            ("completions2", "http://127.0.0.1:8080/v1/chat/completions2"),
        ];
        for (location, url) in table {
            assert_eq!(resolve(base, location).as_deref(), Some(url), "{location}");
        }
        assert_eq!(resolve("http://h:1", "x").as_deref(), Some("http://h:1/x"));
    }

    #[test]
    fn origins() {
        assert!(same_origin("http://h:1/a", "http://H:1/b?c"));
        assert!(same_origin("http://u@h:1/a", "http://h:1/b"));
        assert!(!same_origin("http://h:1/a", "https://h:1/a"));
        assert!(!same_origin("http://h:1/a", "http://h:2/a"));
        assert!(!same_origin("http://h/a", "http://evil/a"));
    }
}
