//! Help for models that cannot call tools well: a note, as a user message, after an answer that
//! is no answer (empty, a call begun and not finished, commands or code handed over instead of
//! called, a change that failed for its arguments and was not made since, a tool's result
//! echoed, a reply cut short), so the model can go on.
//!
//! A model gets notes only once it has shown in this session that it needs them: it wrote a
//! call as text, began one and did not finish it, or the tools go as text (the server refused
//! `tools`, or --tool-protocol text). Until then a reply without calls is the answer, after
//! one request. The switch is recorded in the session (see session.rs), so `turn -c` resumes
//! with it; --tool-protocol native never gives notes.
//!
//! Notes offer, they never act: turn runs no command and writes no file for a note, and what a
//! note says depends on the shape of the reply, never on what the task's words say. A turn
//! gets at most `MAX_NOTES`, and the same answer again after a note is final.
//!
//! `shapes` (pure) tells what a reply looks like; `notes` (pure) picks a note and words it;
//! this file holds the switch, the budget and what the turn has done.

pub mod notes;
pub mod shapes;

use crate::tools;
use notes::{Done, Failure, Note};

/// Why the notes are on: the model wrote a call as text.
pub const TEXT_CALL: &str = "the model wrote a tool call as text";
/// Why the notes are on: the model began a call as text and did not finish it.
pub const BEGUN_CALL: &str = "the model began a tool call as text and did not finish it";
/// Why the notes are on: the tools go as text (the server refused them, or --tool-protocol).
pub const TEXT_PROTOCOL: &str = "the tools are offered as text (the text tool protocol)";

/// Most notes one turn gets.
pub const MAX_NOTES: u32 = 2;

/// The switch, kept for the session, and what the current turn has done.
#[derive(Default)]
pub struct Coach {
    /// Why notes are on; `None`: they are off.
    why: Option<String>,
    turn: Turn,
}

/// What one turn has done, as far as its notes go.
#[derive(Default)]
struct Turn {
    notes: u32,
    /// The answer the last note was about.
    noted: Option<String>,
    /// A write_file or edit_file worked.
    changed: bool,
    failed: Option<Failure>,
    last_result: String,
}

impl Coach {
    /// Notes on for `why` (a resumed session's record), or off.
    pub fn resumed(why: Option<&str>) -> Coach {
        Coach {
            why: why.map(String::from),
            turn: Turn::default(),
        }
    }

    /// Switches the notes on for `why`; true when they were off (the caller records it).
    pub fn switch_on(&mut self, why: &str) -> bool {
        let off = self.why.is_none();
        if off {
            self.why = Some(why.to_string());
        }
        off
    }

    /// A new turn: its budget is whole, and nothing is done yet.
    pub fn start_turn(&mut self) {
        self.turn = Turn::default();
    }

    /// A call to `name` with `arguments` ran with `output`: what it changed, or failed to.
    pub fn observe(&mut self, name: &str, arguments: &str, output: &tools::Output) {
        let turn = &mut self.turn;
        if matches!(name, "write_file" | "edit_file") {
            let path = serde_json::from_str::<serde_json::Value>(arguments)
                .ok()
                .and_then(|args| Some(args.get("path")?.as_str()?.to_string()))
                .unwrap_or_default();
            if output.ok {
                turn.changed = true;
                if turn.failed.as_ref().is_some_and(|f| f.path == path) {
                    turn.failed = None;
                }
            } else if tools::fixable(&output.text) {
                turn.failed = Some(Failure {
                    tool: name.to_string(),
                    path,
                    error: first_sentence(&output.text),
                });
            }
        }
        turn.last_result.clone_from(&output.text);
    }

    /// The note for `answer`, a reply without calls to `task` (`cut` says why it was cut
    /// short, if it was), when notes are on, the turn has budget left and the answer is not the
    /// one the last note was about. None: the answer stands.
    pub fn note(
        &mut self,
        answer: &str,
        task: &str,
        tools: &[&str],
        cut: Option<&str>,
        blocks: bool,
    ) -> Option<Note> {
        let turn = &mut self.turn;
        let again = turn.noted.as_deref() == Some(answer);
        if self.why.is_none() || turn.notes >= MAX_NOTES || again {
            return None;
        }
        let note = match cut {
            Some(why) => Note {
                notice: "the reply was cut short; asking the model to go on",
                text: crate::context::cut_note(why, false),
                failure: false,
            },
            None => {
                let done = Done {
                    changed: turn.changed,
                    last_result: &turn.last_result,
                    failed: turn.failed.as_ref(),
                    blocks,
                };
                notes::judge(answer, task, tools, &done)?
            }
        };
        turn.notes += 1;
        turn.noted = Some(answer.to_string());
        if note.failure {
            turn.failed = None;
        }
        Some(note)
    }
}

/// An error's first sentence, `Error: ` and end punctuation taken off (what follows shows the
/// file, which the result the model read holds already), at most 300 chars.
fn first_sentence(error: &str) -> String {
    let line = error.lines().next().unwrap_or_default();
    let line = line.trim_start_matches("Error: ");
    let sentence = line.split(". ").next().unwrap_or_default();
    let sentence = sentence.trim_end_matches(['.', ':']);
    sentence.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 1] = ["bash"];

    fn output(ok: bool, text: &str) -> tools::Output {
        tools::Output {
            ok,
            text: text.into(),
            elided: 0,
        }
    }

    #[test]
    fn off_until_switched_on_and_then_for_good() {
        let mut coach = Coach::default();
        assert_eq!(
            coach.note("", "T", &TOOLS, None, false),
            None,
            "off: no note"
        );
        assert!(coach.switch_on(TEXT_CALL));
        assert!(!coach.switch_on(BEGUN_CALL), "already on");
        assert_eq!(coach.why.as_deref(), Some(TEXT_CALL));
        assert!(coach.note("", "T", &TOOLS, None, false).is_some());
        let resumed = Coach::resumed(Some(TEXT_PROTOCOL));
        assert_eq!(resumed.why.as_deref(), Some(TEXT_PROTOCOL));
    }

    #[test]
    fn a_turn_gets_two_notes_and_the_same_answer_again_is_final() {
        let mut coach = Coach::resumed(Some(TEXT_CALL));
        assert!(coach.note("", "T", &TOOLS, None, false).is_some());
        assert_eq!(
            coach.note("", "T", &TOOLS, None, false),
            None,
            "the same answer"
        );
        assert!(coach.note(" ", "T", &TOOLS, None, false).is_some());
        assert_eq!(
            coach.note("  ", "T", &TOOLS, None, false),
            None,
            "budget spent"
        );
        coach.start_turn();
        assert!(coach.note("  ", "T", &TOOLS, Some("cut"), false).is_some());
    }

    #[test]
    fn a_failed_change_is_noted_once_and_forgotten_once_made() {
        let mut coach = Coach::resumed(Some(TEXT_CALL));
        let missed = output(
            false,
            "Error: old_text was not found in a.py. The file holds:",
        );
        coach.observe("edit_file", r#"{"path": "a.py"}"#, &missed);
        let note = coach.note("Done.", "T", &TOOLS, None, false).unwrap();
        assert!(
            note.text.contains("(old_text was not found in a.py)"),
            "{}",
            note.text
        );
        assert_eq!(
            coach.note("Done!", "T", &TOOLS, None, false),
            None,
            "once a failure"
        );
        coach.start_turn();
        coach.observe("edit_file", r#"{"path": "a.py"}"#, &missed);
        let wrote = output(true, "wrote a.py");
        coach.observe("write_file", r#"{"path": "a.py"}"#, &wrote);
        assert_eq!(coach.note("Done.", "T", &TOOLS, None, false), None);
    }
}
