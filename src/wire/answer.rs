//! Answers that leave the task undone while claiming otherwise: the checks the loop makes on a
//! final answer (one that calls no tool) against the task, beside textcalls' shapes of answers
//! that are no answer. Four, all measured on Qwen2.5-Coder-1.5B:
//!
//! - `copies_example`: the answer is the task's own example ("Answer in one line, for example:
//!   \"5 files, most in lib/core\"" answered "5 files, most in src/lib" without a look);
//! - `unrun_command`: the task says to run a command (``make sure the tests still pass
//!   (`python3 -m unittest discover -s tests`)``) and the answer says they pass, but nothing ran
//!   it;
//! - `asks_to_compute`: the task asks for figures computed from data ("compute the total amount
//!   per region"), and the answer comes with no command run: the figures are made up;
//! - `repeats_task`: the answer is the task's own words again (after a note that restated the
//!   task, the 1.5B model answered the tree question with the question).
//!
//! Pure: the caller says which commands ran and which words are programs.

/// The example the task gives that `answer` copies, when no tool has looked at anything: the
/// answer is the example (case, quotes and end punctuation aside), or has the example's numbers
/// and most of its words. An example is a quoted or backticked span that follows "for example",
/// "e.g.", "such as" or "like" within a few words.
pub fn copies_example<'a>(answer: &str, task: &'a str) -> Option<&'a str> {
    let answer = answer.trim();
    if answer.is_empty() || answer.len() > 300 {
        return None;
    }
    examples(task).into_iter().find(|example| {
        let (a, e) = (words(answer), words(example));
        if a == e {
            return true;
        }
        let (na, ne) = (numbers(&a), numbers(&e));
        let shared = e.iter().filter(|w| a.contains(w)).count();
        !ne.is_empty() && na == ne && shared * 2 >= e.len() && a.len() <= e.len() * 2
    })
}

/// The first command the task says to run (a backticked span that starts with a program, in
/// a sentence that says run, check, verify or make sure) that none of `ran` contains: a
/// command counts as run when a command that ran holds its first three words.
pub fn unrun_command<'a>(
    task: &'a str,
    ran: &[String],
    is_program: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    for sentence in sentences(task) {
        let lower = sentence.to_ascii_lowercase();
        let cued = ["run", "check", "verify", "make sure", "ensure"]
            .iter()
            .any(|cue| contains_word(&lower, cue));
        if !cued {
            continue;
        }
        for span in backticked(sentence) {
            let head: Vec<&str> = span.split_whitespace().take(3).collect();
            let Some(program) = head.first() else {
                continue;
            };
            if !is_program(program) {
                continue;
            }
            let head = head.join(" ");
            let done = ran.iter().any(|c| {
                c.split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .contains(&head)
            });
            if !done {
                return Some(span);
            }
        }
    }
    None
}

/// Whether the task asks for figures worked out from data: it says compute, calculate, sum,
/// total or average (in any form). Small models write such figures from reading, made up
/// (measured: the 1.5B model wrote four region totals of a 46-line CSV, each wrong by
/// thousands), so an answer to such a task before any command has run is no answer.
pub fn asks_to_compute(task: &str) -> bool {
    const STEMS: [&str; 5] = ["comput", "calculat", "sum", "total", "averag"];
    // Endings that keep the word: "summary", "summer", "totally" and the like are others.
    const ENDINGS: [&str; 10] = [
        "", "s", "e", "es", "ed", "ing", "ion", "ions", "ation", "med",
    ];
    words(task).iter().any(|word| {
        STEMS.iter().any(|stem| {
            word.strip_prefix(stem)
                .is_some_and(|rest| ENDINGS.contains(&rest) || (*stem == "sum" && rest == "ming"))
        })
    })
}

/// Whether `answer` is mostly the task's own words again: at least six words, and four of
/// five of its runs of three words stand in the task too, outside its quoted spans (text the
/// task may ask to have written back: "Reply with \"all tests pass\""). An answer that names
/// what the task names ("Added the --shout flag to greet.py") shares a run or two, not most.
/// A task that asks for its own words back unquoted costs one note: the same answer after it
/// is final (see agent.rs).
pub fn repeats_task(answer: &str, task: &str) -> bool {
    let a = words(answer);
    if a.len() < 6 {
        return false;
    }
    // The task's words between its quoted spans, each stretch on its own.
    let mut stretches = Vec::new();
    let mut from = 0;
    for (start, end) in quoted(task) {
        // The closing quote is the char at `end`.
        stretches.push(words(&task[from..opening(task, start)]));
        from = task[end..]
            .chars()
            .next()
            .map_or(end, |c| end + c.len_utf8());
    }
    stretches.push(words(&task[from..]));
    let runs: std::collections::HashSet<&[String]> = stretches
        .iter()
        .flat_map(|words| words.windows(3))
        .collect();
    let shared = a.windows(3).filter(|run| runs.contains(run)).count();
    shared * 5 >= (a.len() - 2) * 4
}

/// The quoted or backticked spans that a cue ("for example", "e.g.", "such as", "like")
/// introduces within 20 bytes before their opening quote.
fn examples(task: &str) -> Vec<&str> {
    const CUES: [&str; 5] = ["for example", "e.g.", "such as", "like", "for instance"];
    let mut out = Vec::new();
    for (start, end) in quoted(task) {
        let open = opening(task, start);
        let from = task[..open]
            .char_indices()
            .rev()
            .nth(20)
            .map_or(0, |(i, _)| i);
        let before = task[from..open].to_ascii_lowercase();
        if CUES.iter().any(|cue| contains_word(&before, cue)) {
            out.push(&task[start..end]);
        }
    }
    out
}

/// Where the quote that opens the span `quoted` found at `start` begins: the char before it.
fn opening(text: &str, start: usize) -> usize {
    text[..start]
        .char_indices()
        .next_back()
        .map_or(start, |(i, _)| i)
}

/// Byte ranges of the text inside `"…"`, `“…”` and `` `…` `` spans, quotes excluded.
fn quoted(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (i, c) in text.char_indices() {
        match open {
            Some((close, start)) if c == close => {
                out.push((start, i));
                open = None;
            }
            Some(_) => {}
            None => {
                let close = match c {
                    '"' => '"',
                    '`' => '`',
                    '“' => '”',
                    _ => continue,
                };
                open = Some((close, i + c.len_utf8()));
            }
        }
    }
    out
}

/// The backticked spans of `text`, trimmed.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// `text` cut after each `.`, `!` or `?` that ends a sentence (one followed by white space or
/// the end, outside backticks), and at blank lines.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut ticks) = (0, false);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'`' => ticks = !ticks,
            b'.' | b'!' | b'?' | b'\n' if !ticks => {
                let ends = bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
                let blank = b == b'\n' && bytes.get(i + 1) == Some(&b'\n');
                if (b != b'\n' && ends) || blank {
                    out.push(&text[start..=i]);
                    start = i + 1;
                }
            }
            _ => {}
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Whether `phrase` occurs in `text` with no letter right before or after it.
fn contains_word(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + phrase.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The lower-case words of `text`, quotes and punctuation at their ends taken off.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '_')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The words of `words` that are numbers.
fn numbers(words: &[String]) -> Vec<&str> {
    words
        .iter()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "How many Python source files (ending in .py) are in this directory tree, \
        counting all subdirectories? And which directory holds the most of them? Answer in one \
        line, for example: \"5 files, most in lib/core\".";

    #[test]
    fn an_answer_with_the_examples_figures_copies_it() {
        let example = Some("5 files, most in lib/core");
        // What Qwen2.5-Coder-1.5B answered, without a look.
        assert_eq!(copies_example("5 files, most in src/lib", TREE), example);
        assert_eq!(
            copies_example("\"5 files, most in lib/core\".", TREE),
            example
        );
        assert_eq!(copies_example("5 Files, most in LIB/CORE", TREE), example);
    }

    #[test]
    fn a_real_answer_does_not_copy_the_example() {
        for answer in [
            "8 files, most in src/app",
            "There are 5 Python files in this tree; src/app holds most of them, with the \
             rest spread over scripts, tests and src/lib, as find shows.",
            "",
            "I could not tell.",
        ] {
            assert_eq!(copies_example(answer, TREE), None, "{answer}");
        }
    }

    #[test]
    fn only_a_span_a_cue_introduces_is_an_example() {
        // A quoted span that is not offered as an example: the answer may well be it.
        let task = "Print \"hello world\" from main.py and tell me what it printed.";
        assert_eq!(copies_example("hello world", task), None);
        let task = "Write the result in the form `path:line: text`, e.g. `src/a.py:3: TODO`.";
        assert_eq!(
            copies_example("src/a.py:3: TODO", task),
            Some("src/a.py:3: TODO")
        );
        // Curly quotes and "such as".
        let task = "Name the largest file, such as “big.bin”.";
        assert_eq!(copies_example("big.bin", task), Some("big.bin"));
        // A cue too far before the quote.
        let task = "For example, look at every file in the tree and then say \"big.bin\".";
        assert_eq!(copies_example("big.bin", task), None);
    }

    fn programs(word: &str) -> bool {
        ["python3", "make", "cargo", "./run.sh"].contains(&word)
    }

    #[test]
    fn a_command_the_task_says_to_run_that_did_not_run() {
        let task = "The word \"receive\" is misspelled. Fix every occurrence, and make sure the \
                    tests still pass (`python3 -m unittest discover -s tests`).";
        let sed = ["find . -name '*.py' -exec sed -i 's/a/b/g' {} \\;".to_string()];
        assert_eq!(
            unrun_command(task, &sed, programs),
            Some("python3 -m unittest discover -s tests")
        );
        assert_eq!(
            unrun_command(task, &[], programs),
            Some("python3 -m unittest discover -s tests")
        );
        // Its first three words ran, with other arguments or inside a longer line.
        for ran in [
            "python3 -m unittest discover tests",
            "cd . &&  python3  -m unittest -v",
        ] {
            assert_eq!(
                unrun_command(task, &[ran.to_string()], programs),
                None,
                "{ran}"
            );
        }
        let task = "Add tests for clamp, then run them with `python3 -m unittest` to make sure \
                    they pass.";
        assert_eq!(
            unrun_command(task, &sed, programs),
            Some("python3 -m unittest")
        );
        assert_eq!(
            unrun_command("Run `make test`.", &sed, programs),
            Some("make test")
        );
    }

    #[test]
    fn backticks_that_are_no_command_to_run_are_left_alone() {
        let none: [String; 0] = [];
        for task in [
            // Not a program.
            "Write totals.csv with the header `region,total`, and check it.",
            "Check every line has the form `path:line: text`.",
            // No cue in its sentence: the command is named, not asked for.
            "Explain what `make test` does. Keep it short.",
            "`python3 -m unittest` fails in this project. Find out why and fix the code.",
            // "run" only inside another word.
            "Explain what `make test` does to a running server.",
        ] {
            assert_eq!(unrun_command(task, &none, programs), None, "{task}");
        }
    }

    #[test]
    fn tasks_that_ask_for_computed_figures_are_told() {
        for task in [
            "From sales.csv, compute the total amount per region.",
            "Calculate the average latency in log.txt",
            "What is the sum of column 3?",
            "Write the totals to totals.csv",
            "Summing up the sizes: how big is it?",
            "the computation of averages",
        ] {
            assert!(asks_to_compute(task), "{task}");
        }
        for task in [
            "Write a summary of README.md",
            "How many Python files are there?",
            "The function totally ignores its argument; fix it",
            "Add a --shout flag to greet.py",
            "The sumo wrestlers table is misspelled",
            "",
        ] {
            assert!(!asks_to_compute(task), "{task}");
        }
    }

    #[test]
    fn an_answer_that_is_the_task_again_repeats_it() {
        // What the 1.5B model answered after a note, and shapes of it.
        for answer in [
            TREE,
            "How many Python source files (ending in .py) are in this directory tree, counting \
             all subdirectories? And which directory holds the most of them?",
            "how many python source files are in this directory tree, counting all \
             subdirectories",
            "The task: How many Python source files (ending in .py) are in this directory \
             tree, counting all subdirectories?",
        ] {
            assert!(repeats_task(answer, TREE), "{answer}");
        }
        for answer in [
            "8 files, most in src/app",
            "There are 8 Python source files in this directory tree; src/app holds the most \
             of them.",
            "5 files, most in lib/core",
            "",
        ] {
            assert!(!repeats_task(answer, TREE), "{answer}");
        }
        // Words the task quotes, to be written back, are no repeat.
        let task = "Reply with \"all the tests in the suite pass now\" once they do.";
        assert!(!repeats_task("All the tests in the suite pass now.", task));
        let task = "Add a --shout flag to greet.py that prints the greeting in upper case.";
        assert!(!repeats_task(
            "I added the --shout flag to greet.py; it prints the greeting upper-cased.",
            task
        ));
    }

    #[test]
    fn sentences_end_at_stops_outside_backticks() {
        let got = sentences("Run `a.b c.` now. Then x.\n\nLast");
        assert_eq!(got[..2], ["Run `a.b c.` now.", " Then x."]);
        assert_eq!(got.last().map(|s| s.trim()), Some("Last"));
        assert_eq!(sentences("v1.2 is out"), vec!["v1.2 is out"]);
    }
}
