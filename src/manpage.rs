//! The manual page that `turn --generate man` prints: roff with the man(7) macros, made from the
//! tables in cli.rs that --help prints, so the page and the help cannot disagree about a flag.
//!
//! Text is escaped for roff (backslashes, hyphens as `\-` so they copy as ASCII minus signs,
//! a `\&` before a leading `.` or `'`) and each sentence starts a source line, so the page
//! passes `mandoc -Tlint` and `groff -man -ww` without warnings (tests/docs.rs runs them).

use crate::cli::{ABOUT, DESCRIPTION, EXAMPLES, EXIT_CODES, FLAGS, USAGE};

/// The environment variables turn reads, for ENVIRONMENT.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "OPENAI_BASE_URL",
        "The server address, as --base-url gives it.",
    ),
    (
        "OPENAI_API_KEY",
        "Sent as Authorization: Bearer; unset, no such header is sent (local servers).",
    ),
    ("TURN_MODEL", "The model, as --model gives it."),
    (
        "TURN_LOCAL_SERVERS",
        "Where to look for a local server when no address or key is set: a comma list of \
         HOST:PORT, PORT or http:// URLs, or off.",
    ),
    ("TURN_TOOL_PROTOCOL", "As --tool-protocol."),
    ("TURN_EDIT_FORMAT", "As --edit-format."),
    (
        "TURN_CONTEXT",
        "The context window in tokens, as --context.",
    ),
    ("TURN_SANDBOX", "As --sandbox."),
    (
        "TURN_CHECKPOINTS",
        "off: no checkpoints at all. TURN_CHECKPOINT_MAX_FILE and TURN_CHECKPOINT_MAX_TOTAL \
         (bytes) and TURN_CHECKPOINT_MAX_FILES (a count) cap what is kept.",
    ),
    (
        "XDG_STATE_HOME",
        "Where turn keeps its state outside the workspace (default ~/.local/state).",
    ),
    (
        "SSL_CERT_FILE, SSL_CERT_DIR",
        "CA certificates to trust in place of the system's bundle, as curl and OpenSSL read them.",
    ),
    (
        "https_proxy, http_proxy, all_proxy, no_proxy",
        "Proxies, as curl picks them (also in upper case).",
    ),
];

/// The files turn reads and writes in the workspace, for FILES.
const FILES: &[(&str, &str)] = &[
    (
        ".turn/sessions/",
        "Every run's history, one message per line; --continue resumes the newest.",
    ),
    (
        ".turn/history",
        "The lines sent in the REPL (mode 0600, the newest 1000).",
    ),
    (
        ".turn/tools.json",
        "Tools of your own, read beside --tools (its MCP servers only when passed with --tools).",
    ),
    (
        "$XDG_STATE_HOME/turn/",
        "The tools files vouched for (vouched/), the session each workspace ran last \
         (sessions/) and each workspace's checkpoints (checkpoints/).",
    ),
    (
        "AGENTS.md",
        "Added to the system prompt, from the workspace and its parents up to the git root.",
    ),
];

/// Where more is written.
const SEE_ALSO: &str = "The guides in docs/ of turn's source: local-models.md, servers.md, \
                        sandbox.md, undo.md, context.md, scripting.md, sessions.md, tools.md, building.md, \
                        performance.md, options.md.";

/// The whole page.
pub fn page() -> String {
    let long = env!("TURN_LONG_VERSION");
    let date = long.rsplit("built ").next().unwrap_or("");
    let mut out = String::new();
    let version = concat!(
        " \"turn ",
        env!("CARGO_PKG_VERSION"),
        "\" \"User Commands\"\n"
    );
    put(
        &mut out,
        &[".TH TURN 1 ", date.trim_end_matches(')'), version],
    );
    put(
        &mut out,
        &[".nh\n.SH NAME\nturn \\- ", &text(ABOUT), ".SH SYNOPSIS\n"],
    );
    for (i, (line, _)) in USAGE.iter().enumerate() {
        put(
            &mut out,
            &[if i > 0 { ".br\n" } else { "" }, &synopsis(line), "\n"],
        );
    }
    put(&mut out, &[".SH DESCRIPTION\n", &text(DESCRIPTION)]);
    for (line, what) in USAGE {
        put(&mut out, &[".TP\n", &synopsis(line), "\n", &text(what)]);
    }
    out += ".SH OPTIONS\n";
    for (names, paragraphs) in FLAGS {
        put(&mut out, &[".TP\n", &synopsis(names), "\n"]);
        for (i, paragraph) in paragraphs.iter().enumerate() {
            put(
                &mut out,
                &[if i > 0 { ".br\n" } else { "" }, &text(paragraph)],
            );
        }
    }
    list(&mut out, "EXIT STATUS", EXIT_CODES);
    list(&mut out, "ENVIRONMENT", ENVIRONMENT);
    list(&mut out, "FILES", FILES);
    out += ".SH EXAMPLES\n";
    for (i, (line, what)) in EXAMPLES.iter().enumerate() {
        // A paragraph macro right after a section heading is one too many.
        let pp = if i > 0 { ".PP\n" } else { "" };
        put(
            &mut out,
            &[
                pp,
                &text(what),
                ".RS 4\n.EX\n",
                &self::line(line),
                "\n.EE\n.RE\n",
            ],
        );
    }
    put(&mut out, &[".SH SEE ALSO\n", &text(SEE_ALSO)]);
    out
}

fn put(out: &mut String, pieces: &[&str]) {
    for piece in pieces {
        out.push_str(piece);
    }
}

/// A section of tagged paragraphs: the tag in bold, then its text.
fn list(out: &mut String, title: &str, items: &[(&str, &str)]) {
    put(out, &[".SH ", title, "\n"]);
    for (tag, what) in items {
        put(out, &[".TP\n.B ", &escape(tag), "\n", &text(what)]);
    }
}

/// A command line or a flag's names: flags, `turn` and literal words in bold, placeholders
/// (upper case) in italics, the rest as it is.
fn synopsis(line: &str) -> String {
    let mut out = String::new();
    for (i, word) in line.split(' ').enumerate() {
        out += if i > 0 { " " } else { "" };
        let (word, comma) = match word.strip_suffix(',') {
            Some(word) => (word, ","),
            None => (word, ""),
        };
        let core = word.trim_start_matches('[').trim_end_matches([']', '.']);
        let font = match core.chars().next() {
            Some('A'..='Z') => "\\fI",
            Some('a'..='z' | '-') if core != "echo" => "\\fB",
            _ => "",
        };
        let (lead, tail) = word.split_once(core).unwrap_or(("", ""));
        match font {
            "" => put(&mut out, &[&escape(word), comma]),
            _ => put(
                &mut out,
                &[lead, font, &escape(core), "\\fR", &escape(tail), comma],
            ),
        }
    }
    out
}

/// Running text: the lines of a paragraph joined, then each sentence on source lines of its
/// own of at most 80 bytes (mandoc's style checks ask for both).
fn text(paragraph: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        if !line.is_empty() && escape(&line).len() + 1 + escape(word).len() > 80 {
            out += &self::line(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line += word;
        // A sentence ends at a full stop before a capital letter.
        let next = words.get(i + 1).and_then(|w| w.chars().next());
        if word.ends_with('.') && next.is_some_and(|c| c.is_ascii_uppercase()) {
            out += &self::line(&line);
            out.push('\n');
            line.clear();
        }
    }
    if !line.is_empty() {
        out += &self::line(&line);
        out.push('\n');
    }
    out
}

/// Text escaped for roff: a backslash prints as one, a hyphen as an ASCII minus.
fn escape(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// A source line of text: escaped, and kept from reading as a request when it starts with
/// `.` or `'`.
fn line(text: &str) -> String {
    let escaped = escape(text);
    match escaped.starts_with(['.', '\'']) {
        true => format!("\\&{escaped}"),
        false => escaped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_is_escaped() {
        assert_eq!(line(".turn/x"), "\\&.turn/x");
        assert_eq!(line("'off' a\\b --x"), "\\&'off' a\\eb \\-\\-x");
        assert_eq!(
            synopsis("-o, --output-last-message FILE"),
            "\\fB\\-o\\fR, \\fB\\-\\-output\\-last\\-message\\fR \\fIFILE\\fR"
        );
        assert_eq!(
            synopsis("turn [OPTIONS] PROMPT..."),
            "\\fBturn\\fR [\\fIOPTIONS\\fR] \\fIPROMPT\\fR..."
        );
        assert_eq!(
            synopsis("echo PROMPT | turn"),
            "echo \\fIPROMPT\\fR | \\fBturn\\fR"
        );
    }

    #[test]
    fn a_sentence_starts_a_line() {
        assert_eq!(
            text("One line\nand more. Next one, e.g. this. .dot"),
            "One line and more.\nNext one, e.g. this. .dot\n"
        );
        let long = "a-word ".repeat(40);
        let lines = text(&format!("{long}. 'quoted"));
        assert!(lines.lines().all(|l| l.len() <= 80), "{lines}");
        assert_eq!(lines.lines().count(), 5, "{lines}");
        assert!(
            !lines.contains("\n."),
            "a line that starts with . is escaped"
        );
    }

    #[test]
    fn every_flag_is_on_the_page() {
        let page = page();
        assert!(page.starts_with(".TH TURN 1 "));
        for (names, _) in FLAGS {
            assert!(page.contains(&synopsis(names)), "{names}");
        }
        assert!(!page.contains("\n\n"), "no blank lines in fill mode");
    }
}
