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
//!   task, the 1.5B model answered the tree question with the question);
//! - `replaced_everywhere`: the task asks for a text to be replaced everywhere ("misspelled as
//!   \"recieve\" … Fix every occurrence"), and the answer says it is, while some are left (the
//!   1.5B model's `sed 's/recieve/receive/g'` left "Recieve" in a docstring): turn searches.
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

/// A text the task asks to have replaced everywhere (see `replaced_everywhere`).
#[derive(Debug, PartialEq)]
pub struct Leftover<'a> {
    /// What should be found nowhere once the task is done.
    pub text: &'a str,
    /// What the task says to put in its place, when it says.
    pub with: Option<&'a str>,
    /// Whether it counts in any case: a misspelling is one in any case ("Recieve" too); a text
    /// to rename or replace is its own case ("Foo" may well be another name than "foo").
    pub any_case: bool,
}

impl Leftover<'_> {
    /// The command that lists each line of the workspace where the text is still found
    /// (`file:line:text`, not in `.git` or `.turn`, which holds the session and so the task),
    /// or says "none left"; a grep that fails (exit 2) fails.
    pub fn search(&self) -> String {
        format!(
            "grep -rnF{} --exclude-dir=.git --exclude-dir=.turn -e {} . || {{ [ $? = 1 ] && echo 'none left'; }}",
            if self.any_case { "i" } else { "" },
            quote(self.text)
        )
    }

    /// " (in any case)" where any case counts, for notes that name the text.
    pub fn case(&self) -> &'static str {
        if self.any_case {
            " (in any case)"
        } else {
            ""
        }
    }

    /// The forms of the text that the `search`'s `output` shows, each once: the text itself,
    /// or, in any case, as its lines spell it ("Recieve" in a docstring).
    pub fn forms<'o>(&self, output: &'o str) -> Vec<&'o str> {
        let mut forms: Vec<&str> = Vec::new();
        let needle = self.text.to_ascii_lowercase();
        for line in output.lines().filter(|line| numbered(line).is_some()) {
            let lower = line.to_ascii_lowercase();
            for (i, _) in lower.match_indices(&needle) {
                let form = &line[i..i + needle.len()];
                if (self.any_case || form == self.text) && !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
        forms
    }

    /// The command that puts what the task says in place of each of `forms` in `files` (a
    /// `sed -i` with one `s///g` a form), the replacement in the form's case (lower, upper,
    /// or capitalized). None when the task does not say what to put in its place, or a form's
    /// case is none of those.
    pub fn fix(&self, forms: &[&str], files: &[&str]) -> Option<String> {
        let with = self.with?;
        if forms.is_empty() || files.is_empty() {
            return None;
        }
        let mut script = Vec::new();
        for form in forms {
            let put = recase(form, self.text, with)?;
            script.push(format!(
                "s/{}/{}/g",
                sed_pattern(form),
                sed_replacement(&put)
            ));
        }
        let files: Vec<String> = files.iter().map(|f| quote(f)).collect();
        Some(format!(
            "sed -i {} -- {}",
            quote(&script.join("; ")),
            files.join(" ")
        ))
    }
}

/// `put` in the case `form` has `text` in: as it is where form is text, else lower case, upper
/// case, or capitalized, as form is. None for any other case.
fn recase(form: &str, text: &str, put: &str) -> Option<String> {
    let capitalized = |s: &str| {
        let mut chars = s.chars();
        chars.next().map_or_else(String::new, |first| {
            first
                .to_uppercase()
                .chain(chars.flat_map(char::to_lowercase))
                .collect()
        })
    };
    if form == text {
        Some(put.to_string())
    } else if form == text.to_lowercase() {
        Some(put.to_lowercase())
    } else if form == text.to_uppercase() {
        Some(put.to_uppercase())
    } else if form == capitalized(text) {
        Some(capitalized(put))
    } else {
        None
    }
}

/// `text` as a sed basic regular expression that matches it and nothing else.
fn sed_pattern(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escape = matches!(c, '\\' | '/' | '.' | '*' | '[' | ']' | '^' | '$');
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// `text` as a sed replacement that puts exactly it.
fn sed_replacement(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escape = matches!(c, '\\' | '/' | '&');
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// `value` as one shell word.
fn quote(value: &str) -> String {
    crate::tools::declared::quote(value)
}

/// The file a grep line `file:line:text` names, `./` taken off; None for any other line.
fn numbered(line: &str) -> Option<&str> {
    let (file, rest) = line.split_once(':')?;
    let (n, _) = rest.split_once(':')?;
    let file = file.strip_prefix("./").unwrap_or(file);
    (!file.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(file)
}

/// The files a `Leftover::search` found lines in, in order, each once: what its grep prints
/// before the first `:` of each `file:line:text`, `./` taken off.
pub fn found_in(output: &str) -> Vec<&str> {
    let mut files: Vec<&str> = Vec::new();
    for file in output.lines().filter_map(numbered) {
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// What a task that asks to replace a text everywhere wants gone: the quoted or backticked
/// span right after "misspelled as", "misspelt as" or "mistyped as" (in any case; the right
/// spelling is the span right before, as in "\"receive\" is misspelled as \"recieve\""), or
/// right after "replace", "rename" or "change" (and maybe "every", "all", "each", "every
/// occurrence of" and the like; in its own case; what to put in its place is
/// the span after it and "with", "by", "to" or "into"), in a task that says every,
/// everywhere, all, each or throughout. None for any other task, and for a span that is empty,
/// has no letter or digit, spans lines or is over 200 bytes.
pub fn replaced_everywhere(task: &str) -> Option<Leftover<'_>> {
    const ANY_CASE: [&str; 3] = ["misspelled as", "misspelt as", "mistyped as"];
    const OWN_CASE: [&str; 3] = ["replace", "rename", "change"];
    let lower = task.to_ascii_lowercase();
    let everywhere = ["every", "everywhere", "all", "each", "throughout"]
        .iter()
        .any(|word| contains_word(&lower, word));
    if !everywhere {
        return None;
    }
    let spans: Vec<(usize, usize)> = quoted(task)
        .into_iter()
        .filter(|&(start, end)| {
            let text = &task[start..end];
            text.len() <= 200 && !text.contains('\n') && text.chars().any(char::is_alphanumeric)
        })
        .collect();
    // What stands between the closing quote of a span ending at `end` and `until`.
    let between = |end: usize, until: usize| {
        let after = task[end..]
            .chars()
            .next()
            .map_or(end, |c| end + c.len_utf8());
        lower.get(after..until).map(str::trim)
    };
    spans.iter().enumerate().find_map(|(i, &(start, end))| {
        let text = &task[start..end];
        let open = opening(task, start);
        let mut before = lower[..open].trim_end();
        // "replace every `foo`", "change all occurrences of `foo`".
        for quantity in [
            "every occurrence of",
            "all occurrences of",
            "each occurrence of",
            "every",
            "all",
            "each",
        ] {
            if let Some(rest) = before.strip_suffix(quantity) {
                if !rest.ends_with(char::is_alphanumeric) {
                    before = rest.trim_end();
                    break;
                }
            }
        }
        let cued = |cue: &&str| {
            before.ends_with(cue)
                && !before[..before.len() - cue.len()]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphanumeric)
        };
        if ANY_CASE.iter().any(cued) {
            let with = i.checked_sub(1).map(|j| spans[j]).filter(|&(_, e)| {
                between(e, open)
                    .is_some_and(|b| b.len() <= 30 && ANY_CASE.iter().any(|c| b.ends_with(c)))
            });
            Some(Leftover {
                text,
                with: with.map(|(s, e)| &task[s..e]),
                any_case: true,
            })
        } else if OWN_CASE.iter().any(cued) {
            let with = spans.get(i + 1).filter(|&&(s, _)| {
                between(end, opening(task, s))
                    .is_some_and(|b| ["with", "by", "to", "into"].contains(&b))
            });
            Some(Leftover {
                text,
                with: with.map(|&(s, e)| &task[s..e]),
                any_case: false,
            })
        } else {
            None
        }
    })
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
    fn a_text_the_task_asks_to_replace_everywhere_is_found() {
        // The live suite's typo task, word for word.
        let task = "The word \"receive\" is misspelled as \"recieve\" in several files of this \
                    project (code and docs). Fix every occurrence so that it is spelled \
                    \"receive\" everywhere, and make sure the tests still pass (`python3 -m \
                    unittest discover -s tests`).";
        assert_eq!(
            replaced_everywhere(task),
            Some(Leftover {
                text: "recieve",
                with: Some("receive"),
                any_case: true
            })
        );
        let typo = "Fix every \"teh\": it is \"the\" misspelled as \"teh\".";
        let got = replaced_everywhere(typo).unwrap();
        assert_eq!((got.text, got.with), ("teh", Some("the")));
        let typo = "Every line has a typo, misspelled as \"teh\".";
        assert_eq!(replaced_everywhere(typo).unwrap().with, None);
        for (task, text, with) in [
            (
                "Rename `get_user` to `fetch_user` everywhere.",
                "get_user",
                Some("fetch_user"),
            ),
            (
                "Replace \"http://old.example\" with \"https://new.example\" in all files.",
                "http://old.example",
                Some("https://new.example"),
            ),
            (
                "Change “colour” to “color” throughout the docs.",
                "colour",
                Some("color"),
            ),
            ("In each file, replace `foo` by `bar`.", "foo", Some("bar")),
            ("Replace every `foo`, then run `make`.", "foo", None),
        ] {
            assert_eq!(
                replaced_everywhere(task),
                Some(Leftover {
                    text,
                    with,
                    any_case: false
                }),
                "{task}"
            );
        }
        for task in [
            // No word that says everywhere.
            "Rename `get_user` to `fetch_user` in api.py.",
            "The word \"recieve\" is misspelled as \"recieve\" in README.md.",
            // The span does not follow a cue.
            "Fix every test in `tests/`, then run `make`.",
            "Change the port to \"8080\" in all config files.",
            "Every occurrence of the word, exchange \"a\" for \"b\".",
            // A span with no letter, or over lines.
            "Replace \"--\" with \"-\" everywhere.",
            "Replace `a\nb` with `c` everywhere.",
            TREE,
        ] {
            assert_eq!(replaced_everywhere(task), None, "{task}");
        }
    }

    #[test]
    fn the_search_for_what_is_left_quotes_the_text() {
        let typo = Leftover {
            text: "recieve",
            with: Some("receive"),
            any_case: true,
        };
        assert_eq!(
            typo.search(),
            "grep -rnFi --exclude-dir=.git --exclude-dir=.turn -e 'recieve' . || { [ $? = 1 ] && echo 'none left'; }"
        );
        let name = Leftover {
            text: "it's",
            with: None,
            any_case: false,
        };
        assert!(name
            .search()
            .starts_with(r"grep -rnF --exclude-dir=.git --exclude-dir=.turn -e 'it'\''s' . "));
    }

    const FOUND: &str = "./src/net.py:7:    \"\"\"Recieve one packet.\"\"\"\n\
                         ./src/net.py:9:def recieve_all(): RECIEVE\n\
                         ./docs/a b.md:1:to recieve: now\nnone left\n\n[output cut]\n";

    #[test]
    fn the_files_and_forms_the_search_found() {
        assert_eq!(found_in(FOUND), ["src/net.py", "docs/a b.md"]);
        assert!(found_in("none left\n").is_empty());
        assert!(found_in("grep: x: Permission denied\n").is_empty());
        let typo =
            replaced_everywhere("\"receive\" is misspelled as \"recieve\" everywhere.").unwrap();
        assert_eq!(typo.forms(FOUND), ["Recieve", "recieve", "RECIEVE"]);
        let own = Leftover {
            text: "recieve",
            with: Some("receive"),
            any_case: false,
        };
        assert_eq!(own.forms(FOUND), ["recieve"]);
        assert!(typo.forms("none left\n").is_empty());
    }

    #[test]
    fn the_fix_puts_the_replacement_in_each_forms_case() {
        let typo =
            replaced_everywhere("\"receive\" is misspelled as \"recieve\" everywhere.").unwrap();
        assert_eq!(
            typo.fix(&typo.forms(FOUND), &found_in(FOUND)).as_deref(),
            Some("sed -i 's/Recieve/Receive/g; s/recieve/receive/g; s/RECIEVE/RECEIVE/g' -- 'src/net.py' 'docs/a b.md'")
        );
        // A form in a case of its own has no known replacement.
        assert_eq!(typo.fix(&["reCieve"], &["a"]), None);
        assert_eq!(typo.fix(&[], &["a"]), None);
        // What the task did not say cannot be put.
        let bare = Leftover { with: None, ..typo };
        assert_eq!(bare.fix(&["recieve"], &["a"]), None);
        // Text that means something to sed or the shell is put as it is.
        let url = replaced_everywhere("Replace \"a.b/c*\" with \"x&y/z's\" in all files.").unwrap();
        let fix = url.fix(&["a.b/c*"], &["f"]).unwrap();
        assert_eq!(fix, r"sed -i 's/a\.b\/c\*/x\&y\/z'\''s/g' -- 'f'");
        let ws = std::env::temp_dir().join(format!("turn-fix-{}", std::process::id()));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("f"), "see a.b/c* and a.bbc\n").unwrap();
        let ran = std::process::Command::new("sh")
            .arg("-c")
            .arg(&fix)
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(ran.success());
        assert_eq!(
            std::fs::read_to_string(ws.join("f")).unwrap(),
            "see x&y/z's and a.bbc\n"
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn sentences_end_at_stops_outside_backticks() {
        let got = sentences("Run `a.b c.` now. Then x.\n\nLast");
        assert_eq!(got[..2], ["Run `a.b c.` now.", " Then x."]);
        assert_eq!(got.last().map(|s| s.trim()), Some("Last"));
        assert_eq!(sentences("v1.2 is out"), vec!["v1.2 is out"]);
    }
}
