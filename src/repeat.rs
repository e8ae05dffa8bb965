//! Loop detection. Small models repeat themselves: the same call, with the same arguments,
//! getting the same result, over and over until --max-steps runs out. `Repeats` watches the
//! calls of one turn; from the `WARN_AT`th identical call in a row the model is told so, and at
//! the `STOP_AT`th the turn ends (`Error::Repeating`).
//!
//! Pure: it sees names, arguments and results, nothing else. Arguments are compared as JSON
//! values, so spacing and key order do not hide a repeat. A model that alternates between two
//! calls is not caught; neither is one whose results differ (a clock in the output).

use serde_json::Value;

/// The identical call in a row that gets a warning with its result.
pub const WARN_AT: u32 = 3;
/// The identical call in a row that ends the turn.
pub const STOP_AT: u32 = 5;

/// What to do about the call just made.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Nothing to say.
    Fresh,
    /// The `n`th identical call in a row: tell the model.
    Warn(u32),
    /// Enough: end the turn.
    Stop(u32),
}

#[derive(Default)]
pub struct Repeats {
    last: Option<(String, String, String)>,
    count: u32,
}

impl Repeats {
    /// Records a call and the result it got (before any warning is added to it).
    pub fn record(&mut self, name: &str, arguments: &str, result: &str) -> Verdict {
        let key = (name.to_string(), canonical(arguments), result.to_string());
        if self.last.as_ref() == Some(&key) {
            self.count += 1;
        } else {
            self.last = Some(key);
            self.count = 1;
        }
        match self.count {
            n if n >= STOP_AT => Verdict::Stop(n),
            n if n >= WARN_AT => Verdict::Warn(n),
            _ => Verdict::Fresh,
        }
    }
}

/// What the model reads after the result of a call, when the verdict has something to say.
pub fn note(verdict: &Verdict) -> Option<String> {
    match *verdict {
        Verdict::Fresh => None,
        Verdict::Warn(n) => Some(warning(n)),
        Verdict::Stop(n) => Some(format!(
            "\n\n[turn: you made exactly this call {n} times in a row and got exactly this \
             result each time, so turn stopped the turn.]"
        )),
    }
}

/// What the model reads after the result of its `n`th identical call.
fn warning(n: u32) -> String {
    format!(
        "\n\n[turn: you have made exactly this call {n} times in a row and got exactly this \
         result each time. Repeating it will not change anything. Try a different approach: \
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
            .map(|_| repeats.record("bash", r#"{"command":"python hello.py"}"#, "boom"))
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
        repeats.record("bash", r#"{"command":"ls","x":1}"#, "r");
        repeats.record("bash", r#"{ "x": 1, "command": "ls" }"#, "r");
        assert_eq!(
            repeats.record("bash", "{\"x\":1,\n\"command\":\"ls\"}", "r"),
            Verdict::Warn(3)
        );
    }

    #[test]
    fn anything_different_starts_over() {
        let mut repeats = Repeats::default();
        for _ in 0..4 {
            repeats.record("bash", r#"{"command":"ls"}"#, "r");
        }
        // A different result, tool or argument each breaks the run.
        assert_eq!(
            repeats.record("bash", r#"{"command":"ls"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record("read_file", r#"{"command":"ls"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record("read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record("read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Fresh
        );
        assert_eq!(
            repeats.record("read_file", r#"{"command":"ls -a"}"#, "other"),
            Verdict::Warn(3)
        );
    }

    #[test]
    fn alternating_calls_are_not_a_repeat() {
        let mut repeats = Repeats::default();
        for i in 0..10 {
            let command = if i % 2 == 0 { "a" } else { "b" };
            let args = format!("{{\"command\":\"{command}\"}}");
            assert_eq!(repeats.record("bash", &args, "same"), Verdict::Fresh);
        }
    }

    #[test]
    fn arguments_that_are_not_json_compare_as_text() {
        let mut repeats = Repeats::default();
        repeats.record("bash", "{oops", "Error");
        repeats.record("bash", "{oops", "Error");
        assert_eq!(repeats.record("bash", "{oops", "Error"), Verdict::Warn(3));
        assert_eq!(repeats.record("bash", "{oops ", "Error"), Verdict::Fresh);
    }

    #[test]
    fn the_warning_says_it_plainly() {
        assert_eq!(note(&Verdict::Fresh), None);
        assert!(note(&Verdict::Stop(5))
            .unwrap()
            .contains("5 times in a row"));
        let text = note(&Verdict::Warn(3)).unwrap();
        assert!(
            text.contains("exactly this call 3 times in a row"),
            "{text}"
        );
        assert!(text.contains("different approach"));
    }
}
