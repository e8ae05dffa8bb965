//! Loop detection. Small models repeat themselves: the same call, with the same arguments,
//! getting the same result, over and over until --max-steps runs out, in a row or taking turns
//! with another call (measured on Qwen2.5-Coder-1.5B: an `edit_file` whose `old_text` is not
//! there, then `read_file`, then the same `edit_file` again, fifteen steps long), or a whole
//! reply of several calls sent again. `Repeats` watches the calls of one turn; when an
//! identical call with an identical result stands `WARN_AT` times among the latest calls (the
//! last `WINDOW`, or those of the last `STOP_AT` replies when they are more) the model is told
//! so, and at `STOP_AT` the turn ends (`Error::Repeating`). A call that succeeded is spoken of
//! from its second time: small models run the tests that passed, or the count they already
//! have, again and again instead of answering (measured: `find . -name '*.py' | wc -l` five
//! times for a question it answers), so they are told at once that the step is done and how
//! to finish.
//!
//! Pure: it sees names, arguments and results, nothing else. Arguments are compared as JSON
//! values, so spacing and key order do not hide a repeat. A model whose results differ (a
//! clock in the output, a file it changes) is not caught: its work is moving.

use serde_json::Value;

/// Identical calls among the latest that get a warning with the result.
pub const WARN_AT: u32 = 3;
/// Identical calls among the latest that end the turn.
pub const STOP_AT: u32 = 5;
/// How many of the latest calls are looked at, at least: all those of the last `STOP_AT`
/// replies are, so that a reply of many calls sent `STOP_AT` times is a repeat.
pub const WINDOW: usize = 10;

/// What to do about the call just made.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Nothing to say.
    Fresh,
    /// The `n`th identical call among the latest: tell the model.
    Warn(u32),
    /// The `n`th identical call that succeeded: tell the model the step is done.
    Done(u32),
    /// Enough: end the turn.
    Stop(u32),
}

#[derive(Default)]
pub struct Repeats {
    /// The latest calls with their results and the reply each came in, oldest first.
    recent: std::collections::VecDeque<(u32, (String, String, String))>,
    /// How many replies `reply` has counted.
    replies: u32,
}

impl Repeats {
    /// Marks the start of a reply's calls.
    pub fn reply(&mut self) {
        self.replies += 1;
    }

    /// Records a call, whether it succeeded, and the result it got (before any warning is
    /// added to it).
    pub fn record(&mut self, ok: bool, name: &str, arguments: &str, result: &str) -> Verdict {
        let key = (name.to_string(), canonical(arguments), result.to_string());
        self.recent.push_back((self.replies, key));
        while self.recent.len() > WINDOW
            && self
                .recent
                .front()
                .is_some_and(|(reply, _)| reply + STOP_AT <= self.replies)
        {
            self.recent.pop_front();
        }
        let (_, last) = self.recent.back().expect("just pushed");
        let count = self.recent.iter().filter(|(_, k)| k == last).count() as u32;
        match count {
            n if n >= STOP_AT => Verdict::Stop(n),
            n if n >= WARN_AT && !ok => Verdict::Warn(n),
            // Reading a file again is how a failed edit is put right: not a repeat to speak of.
            n if n >= 2 && ok && name != "read_file" => Verdict::Done(n),
            _ => Verdict::Fresh,
        }
    }
}

/// What the model reads after the result of a call, when the verdict has something to say.
pub fn note(verdict: &Verdict) -> Option<String> {
    match *verdict {
        Verdict::Fresh => None,
        Verdict::Warn(n) => Some(warning(n)),
        Verdict::Done(n) => Some(format!(
            "\n\n[turn: call made {n} times, same result each time: this step is done. Do the \
             next step, or if the task is done, give the user your answer.]"
        )),
        Verdict::Stop(n) => Some(format!(
            "\n\n[turn: you made exactly this call {n} times among your latest calls and got \
             exactly this result each time, so turn stopped the turn.]"
        )),
    }
}

/// What the model reads after the result of its `n`th identical call.
fn warning(n: u32) -> String {
    format!(
        "\n\n[turn: you have made exactly this call {n} times among your latest calls and got \
         exactly this result each time. Repeating it will not change anything. Try a different approach: \
         read the error, change the command or the file, or answer with what you found. After \
         {STOP_AT} identical calls the turn is stopped.]"
    )
}

/// JSON in one spelling (serde_json's maps keep keys sorted); other text as it is.
fn canonical(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => value.to_string(),
        Err(_) => arguments.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_and_result_warns_then_stops() {
        let mut repeats = Repeats::default();
        let verdicts: Vec<Verdict> = (0..6)
            .map(|_| repeats.record(false, "bash", r#"{"command":"python hello.py"}"#, "boom"))
            .collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Fresh,
                Verdict::Fresh,
                Verdict::Warn(3),
                Verdict::Warn(4),
                Verdict::Stop(5),
                Verdict::Stop(6)
            ]
        );
    }

    #[test]
    fn spelling_of_the_arguments_does_not_matter() {
        let mut repeats = Repeats::default();
        repeats.record(false, "bash", r#"{"command":"ls","x":1}"#, "r");
        repeats.record(false, "bash", r#"{ "x": 1, "command": "ls" }"#, "r");
        assert_eq!(
            repeats.record(false, "bash", "{\"x\":1,\n\"command\":\"ls\"}", "r"),
            Verdict::Warn(3)
        );
    }

    #[test]
    fn anything_different_starts_over() {
        let mut repeats = Repeats::default();
        for _ in 0..4 {
            repeats.record(false, "bash", r#"{"command":"ls"}"#, "r");
        }
        // A different result, tool or argument each breaks the run.
        assert_eq!(
            repeats.record(false, "bash", r#"{"command":"ls"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record(false, "read_file", r#"{"command":"ls"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record(false, "read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record(false, "read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record(false, "read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Warn(3)
        );
    }

    #[test]
    fn a_call_taking_turns_with_another_is_a_repeat_too() {
        // Measured: edit_file fails, read_file, the same edit_file again, and so on.
        let mut repeats = Repeats::default();
        let verdicts: Vec<Verdict> = (0..10)
            .map(|i| {
                let command = if i % 2 == 0 { "a" } else { "b" };
                let args = format!("{{\"command\":\"{command}\"}}");
                repeats.record(false, "bash", &args, "same")
            })
            .collect();
        assert!(verdicts[..4].iter().all(|v| *v == Verdict::Fresh));
        assert_eq!(verdicts[4], Verdict::Warn(3));
        assert_eq!(verdicts[8], Verdict::Stop(5));
    }

    #[test]
    fn repeats_older_than_the_window_are_forgotten() {
        let mut repeats = Repeats::default();
        let mut n = 0;
        let mut fresh = || {
            n += 1;
            format!("{{\"command\":\"c{n}\"}}")
        };
        let call = |repeats: &mut Repeats, args: &str| {
            repeats.reply();
            repeats.record(false, "bash", args, "r")
        };
        call(&mut repeats, r#"{"command":"x"}"#);
        call(&mut repeats, r#"{"command":"x"}"#);
        for _ in 0..WINDOW - 1 {
            call(&mut repeats, &fresh());
        }
        // One of the two x calls left the window.
        assert_eq!(call(&mut repeats, r#"{"command":"x"}"#), Verdict::Fresh);
    }

    #[test]
    fn a_reply_of_many_calls_sent_again_and_again_is_a_repeat() {
        let mut repeats = Repeats::default();
        let mut last = Vec::new();
        for _ in 0..5 {
            repeats.reply();
            last = (0..4)
                .map(|i| {
                    repeats.record(false, "write_file", &format!("{{\"path\":\"f{i}\"}}"), "no")
                })
                .collect();
        }
        assert!(last.iter().all(|v| *v == Verdict::Stop(5)), "{last:?}");
        // Calls older than both the window and the last STOP_AT replies are forgotten.
        let mut repeats = Repeats::default();
        repeats.reply();
        repeats.record(false, "bash", r#"{"command":"x"}"#, "r");
        for n in 0..WINDOW {
            repeats.reply();
            repeats.record(false, "bash", &format!("{{\"command\":\"c{n}\"}}"), "r");
        }
        assert_eq!(repeats.recent.len(), WINDOW);
    }

    #[test]
    fn arguments_that_are_not_json_compare_as_text() {
        let mut repeats = Repeats::default();
        repeats.record(false, "bash", "{oops", "Error");
        repeats.record(false, "bash", "{oops", "Error");
        assert_eq!(
            repeats.record(false, "bash", "{oops", "Error"),
            Verdict::Warn(3)
        );
        assert_eq!(
            repeats.record(false, "bash", "{oops ", "Error"),
            Verdict::Fresh
        );
    }

    #[test]
    fn a_call_that_succeeded_is_spoken_of_from_its_second_time() {
        let mut repeats = Repeats::default();
        let verdicts: Vec<Verdict> = (0..5)
            .map(|_| repeats.record(true, "bash", r#"{"command":"wc -l a"}"#, "8\n"))
            .collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Fresh,
                Verdict::Done(2),
                Verdict::Done(3),
                Verdict::Done(4),
                Verdict::Stop(5)
            ]
        );
        let note = note(&verdicts[1]).unwrap();
        assert!(note.contains("call made 2 times, same result"), "{note}");
        assert!(note.contains("give the user your answer"), "{note}");
        // Reading a file again after a failed edit is no repeat to speak of.
        repeats.record(true, "read_file", r#"{"path":"a"}"#, "1\tx");
        assert_eq!(
            repeats.record(true, "read_file", r#"{"path":"a"}"#, "1\tx"),
            Verdict::Fresh
        );
    }

    #[test]
    fn the_warning_says_it_plainly() {
        assert_eq!(note(&Verdict::Fresh), None);
        assert!(note(&Verdict::Stop(5))
            .unwrap()
            .contains("5 times among your latest calls"));
        let text = note(&Verdict::Warn(3)).unwrap();
        assert!(
            text.contains("exactly this call 3 times among your latest calls"),
            "{text}"
        );
        assert!(text.contains("different approach"));
    }
}
