//! The flags as users read about them are the flags the parser takes. Every flag the argument
//! parser matches on (its `Long("…")` and `Short('…')` arms, found in the source) must be in
//! `turn --help`, in the man page (`turn --generate man`) and in the guides in docs/; and every
//! `--flag` that --help, the man page, the guides or README.md name must be one the built
//! binary's parser accepts. Whether it does is asked of the binary itself: `turn FLAG --help -h`
//! prints the help when FLAG is a flag (with or without a value), and fails with "invalid
//! option" only when it is none. Flags of other programs that the docs name are listed in
//! `FOREIGN`, and must stay flags turn does not take.
//!
//! A flag added to the parser fails this test until it is documented in all three places.

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use util::*;

/// Flags of other programs that README.md and docs/ show (llama-server, cargo, the live and
/// bench scripts, sha256sum, rm, systemd-run, Gemini CLI, aider, the programs of live tasks
/// and examples): not turn's.
const FOREIGN: &[&str] = &[
    "--jinja",
    "--no-repack",
    "--host",
    "--port",
    "--no-default-features",
    "--no-eh-frame-hdr",
    "--icf",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "--ignore-missing",
    "--no-preserve-root",
    "--check-checkers",
    "--build-only",
    "--window",
    "--all-targets",
    "--locked",
    "--release",
    "--target",
    "--lib",
    "--test",
    "--check",
    "--shout",
    "--verbose",
    "--user",
    "--checkpointing",
    "--ctx",
    "--no-write",
    "--set",
    "--task",
    "--agent",
    "--yes-always",
    "--message",
    "--no-check-update",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-gitignore",
    "--seed",
    "--seeds",
    "--runs",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The flags the parser matches on, from its match arms in src/.
fn parser_flags() -> (BTreeSet<String>, BTreeSet<char>) {
    let (mut long, mut short) = (BTreeSet::new(), BTreeSet::new());
    for file in rust_files(&root().join("src")) {
        let source = std::fs::read_to_string(&file).unwrap();
        for piece in source.split("Long(\"").skip(1) {
            long.insert(format!("--{}", piece.split('"').next().unwrap()));
        }
        for piece in source.split("Short('").skip(1) {
            short.insert(piece.chars().next().unwrap());
        }
    }
    assert!(long.contains("--model") && short.contains(&'m'), "{long:?}");
    (long, short)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Every `--word` in a text (not `--` alone, nor a Markdown table's `---`).
fn named_flags(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let word: String = text[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        let word = word.trim_end_matches('-');
        if word.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.insert(format!("--{word}"));
        }
    }
    found
}

/// Whether the built binary's parser takes `flag` (see the module's opening).
fn parser_takes(flag: &str) -> bool {
    let ws = Workspace::new();
    let mock = Mock::start(vec![]);
    let run = go(&ws, &mock, &[flag, "--help", "-h"]);
    let unknown = run.stderr.contains(&format!("invalid option '{flag}'"));
    // A flag shows the help or the version (exit 0), or refuses "--help" as its value (exit 2).
    assert!(
        run.code == 2 || (run.code == 0 && run.stdout.starts_with("turn")),
        "{flag}: exit {} and {}",
        run.code,
        run.stderr
    );
    assert!(mock.received().is_empty(), "{flag} asked the server");
    !unknown
}

fn output(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_turn"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "turn {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The guides, by file name.
fn guides() -> BTreeMap<String, String> {
    let mut guides = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            guides.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    assert!(!guides.is_empty(), "no guides in docs/");
    guides
}

#[test]
fn every_flag_the_parser_takes_is_documented_and_every_flag_documented_is_taken() {
    let (long, short) = parser_flags();
    let help = output(&["--help"]);
    // The page as it reads: minus signs as hyphens, no font changes.
    let roff = output(&["--generate", "man"]).replace("\\-", "-");
    let man = ["\\fB", "\\fI", "\\fR"]
        .iter()
        .fold(roff.clone(), |text, font| text.replace(font, ""));
    let guides = guides();
    let all_guides: String = guides.values().cloned().collect();
    let mut missing = Vec::new();
    for flag in &long {
        assert!(
            parser_takes(flag),
            "the parser has an arm for {flag} but refuses it"
        );
        for (place, text) in [
            ("--help", &help),
            ("the man page", &man),
            ("docs/", &all_guides),
        ] {
            if !named_flags(text).contains(flag) {
                missing.push(format!("{flag} is not in {place}"));
            }
        }
    }
    for c in &short {
        let flag = format!("-{c}");
        assert!(
            parser_takes(&flag),
            "the parser has an arm for {flag} but refuses it"
        );
        if !help.contains(&format!("  {flag}, --")) {
            missing.push(format!("{flag} is not in --help"));
        }
        if !roff.contains(&format!("\\fB{flag}\\fR, ")) {
            missing.push(format!("{flag} is not in the man page"));
        }
    }
    let mut sources = vec![
        ("--help".to_string(), help.clone()),
        ("the man page".to_string(), man.clone()),
    ];
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    sources.push(("README.md".to_string(), readme));
    sources.extend(
        guides
            .into_iter()
            .map(|(name, text)| (format!("docs/{name}"), text)),
    );
    let mut checked = BTreeMap::new();
    for (place, text) in &sources {
        for flag in named_flags(text) {
            let documents_turn = place == "--help" || place == "the man page";
            if !documents_turn && FOREIGN.contains(&flag.as_str()) {
                continue;
            }
            let taken = *checked
                .entry(flag.clone())
                .or_insert_with(|| long.contains(&flag) || parser_takes(&flag));
            if !taken {
                missing.push(format!(
                    "{place} names {flag}, which turn does not take (another program's flag \
                     belongs in FOREIGN in tests/docs.rs)"
                ));
            }
        }
    }
    for flag in FOREIGN {
        assert!(
            !parser_takes(flag),
            "{flag} is in FOREIGN, but turn takes it: take it out of FOREIGN"
        );
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_word_finder_finds_flags_only() {
    let found = named_flags("turn --json -o x --sandbox-check | --- | --, a--b --x=1 `--no-` ");
    let want = ["--json", "--sandbox-check", "--x", "--no"];
    assert_eq!(found, want.iter().map(|s| s.to_string()).collect());
    assert!(!parser_takes("--surely-no-flag"));
    assert!(parser_takes("--model") && parser_takes("--json") && parser_takes("-q"));
}

/// The man page passes a roff linter with no warnings: mandoc's, else groff's.
#[test]
fn the_man_page_lints_clean() {
    let ws = Workspace::new();
    let page = ws.path("turn.1");
    std::fs::write(&page, output(&["--generate", "man"])).unwrap();
    let linters: [(&str, &[&str]); 2] = [
        ("mandoc", &["-Tlint", "-Wall"]),
        ("groff", &["-man", "-ww", "-z"]),
    ];
    let mut linted = false;
    for (program, args) in linters {
        let Ok(out) = Command::new(program).args(args).arg(&page).output() else {
            continue;
        };
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.trim().is_empty(),
            "{program}: {said}"
        );
        linted = true;
    }
    if !linted {
        println!("skipped: neither mandoc nor groff is installed to lint the man page");
    }
}
