//! Which note an answer gets, and its words (pure). An answer here is a reply that called no
//! tool; it gets a note when its shape says it is no answer (see `shapes`), or when it comes
//! after a change that failed for its arguments and was not made since. A note says what the
//! reply looked like and what to do next, and ends with the task again: a model that takes the
//! latest user message for the task then still has it. What a note says never depends on what
//! the task's words say; the task is only restated, as it is.

use super::shapes;
use serde_json::json;

/// What the turn has done so far that bears on its answer.
pub struct Done<'a> {
    /// A write_file or edit_file worked.
    pub changed: bool,
    /// The last tool result the model read.
    pub last_result: &'a str,
    /// A write_file or edit_file that failed for its arguments, and no change to its file has
    /// worked since.
    pub failed: Option<&'a Failure>,
    /// The request's prompt declared the edit blocks (wire::textproto::edits): a file is
    /// written as a block there, not as a JSON string.
    pub blocks: bool,
}

/// A change that failed for its arguments (`tools::fixable`).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub tool: String,
    pub path: String,
    /// The error's first sentence.
    pub error: String,
}

/// A note for an answer that is no answer.
#[derive(Debug, PartialEq)]
pub struct Note {
    /// What the user reads on stderr (a `notice` event).
    pub notice: &'static str,
    /// What the model reads, as a user message.
    pub text: String,
    /// Whether it is the note about `Done::failed` (given once a failure).
    pub failure: bool,
}

impl Note {
    fn new(notice: &'static str, text: String) -> Note {
        Note {
            notice,
            text,
            failure: false,
        }
    }
}

/// The note for `answer`, called no tool, given the turn's `task`, the offered `tools` and what
/// was `done`: it is empty, begins a call it does not finish, hands over commands or code when
/// nothing was written, comes after a change that failed and was not made since, or repeats a
/// tool's result. None: it is the answer.
pub fn judge(answer: &str, task: &str, tools: &[&str], done: &Done) -> Option<Note> {
    if answer.trim().is_empty() {
        return Some(Note::new(
            "the model answered with nothing; asking it to go on",
            empty(task),
        ));
    }
    if let Some(tool) = shapes::unfinished_call(answer, tools) {
        return Some(Note::new(
            "the answer begins a tool call it does not finish; asking the model to write it whole",
            unfinished(tool, task, done.blocks),
        ));
    }
    if !done.changed && shapes::hands_over_commands(answer) {
        return Some(Note::new(
            "the answer shows commands or code but called no tool; asking the model to act",
            handed_over(answer, task),
        ));
    }
    if let Some(failure) = done.failed {
        return Some(Note {
            failure: true,
            ..Note::new(
                "the answer comes after a change that failed and was not made since; asking the model to make it",
                failed(failure, task),
            )
        });
    }
    if shapes::echoes_result(answer, done.last_result) {
        return Some(Note::new(
            "the answer repeats a tool's result; asking the model to go on",
            echoed(task),
        ));
    }
    None
}

/// Most chars of the task a note restates.
const MAX_RESTATED: usize = 2000;

/// The task again, at the end of a note.
fn restated(task: &str) -> String {
    let head: String = task.chars().take(MAX_RESTATED).collect();
    format!("\n\nThe task: {head}")
}

fn empty(task: &str) -> String {
    format!(
        "[turn: your reply was empty. Go on with the task: call the next tool, or, if the task \
         is done, answer in one or two sentences.]{}",
        restated(task)
    )
}

/// A call begun and not finished. Where the edit blocks are declared, a write or an edit is
/// asked for as its block: a file's lines in a JSON string (every newline and quote escaped) is
/// the form a call is most often left unfinished in.
fn unfinished(tool: &str, task: &str, blocks: bool) -> String {
    let again = match tool {
        "write_file" | "edit_file" if blocks => {
            "Write it as a block instead: the file's path alone on a line, then a fenced block \
             with its whole new content."
                .to_string()
        }
        _ => format!(
            "Write the whole call again, every string and brace closed: {{\"name\": \"{tool}\", \
             \"arguments\": {{...}}}}"
        ),
    };
    format!(
        "[turn: your reply began a call to {tool} but is not complete JSON, so nothing was run. \
         {again}]{}",
        restated(task)
    )
}

/// Commands or code shown instead of run. The commands of a block marked as shell are offered
/// back as the bash call that would run them, for the model to send if it means to: the note
/// runs nothing.
fn handed_over(answer: &str, task: &str) -> String {
    let offer = match shapes::shell_block(answer) {
        Some(commands) if commands.len() <= 2000 => format!(
            " To run the commands you showed, reply with only this call:\n{}",
            json!({"name": "bash", "arguments": {"command": commands}})
        ),
        _ => String::new(),
    };
    format!(
        "[turn: your reply called no tool, so nothing was run or changed. If the task needs \
         commands run or files changed, call the tool yourself (bash, write_file or edit_file) \
         instead of showing them.{offer} If the reply is your answer, send it again as it \
         is.]{}",
        restated(task)
    )
}

fn failed(failure: &Failure, task: &str) -> String {
    let Failure { tool, path, error } = failure;
    format!(
        "[turn: your {tool} of {path} failed ({error}), and no change to {path} has worked \
         since, so it is as it was. Make the change now: call {tool} again, right this time, or \
         write_file with the whole new text of {path}.]{}",
        restated(task)
    )
}

fn echoed(task: &str) -> String {
    format!(
        "[turn: your reply repeated a tool's result. Results are for you to read, not to answer \
         with. Go on with the task: call the next tool. If the task is done, answer in one or \
         two sentences.]{}",
        restated(task)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 4] = ["bash", "read_file", "write_file", "edit_file"];
    const NOTHING: Done = Done {
        changed: false,
        last_result: "",
        failed: None,
        blocks: false,
    };

    fn notice(answer: &str, done: &Done) -> Option<&'static str> {
        judge(answer, "TASK", &TOOLS, done).map(|note| note.notice)
    }

    #[test]
    fn plain_answers_get_no_note_whatever_the_task_says() {
        for task in [
            "Do not run `rm -rf build`. Just check what it would remove and tell me.",
            "What is the total of 2 and 3? For example \"5\".",
            "Replace every `foo` with `bar`, then make sure the tests pass (`pytest`).",
        ] {
            for answer in ["5", "It would remove build/ and its 3 files.", task] {
                assert_eq!(judge(answer, task, &TOOLS, &NOTHING), None, "{answer}");
            }
        }
    }

    #[test]
    fn each_shape_gets_its_note_and_every_note_restates_the_task() {
        let failure = Failure {
            tool: "edit_file".into(),
            path: "a.py".into(),
            error: "old_text was not found in a.py".into(),
        };
        let failed = Done {
            failed: Some(&failure),
            ..NOTHING
        };
        let result = "x".repeat(100);
        let echoed = Done {
            last_result: &result,
            ..NOTHING
        };
        for (answer, done, starts) in [
            ("  \n", &NOTHING, "[turn: your reply was empty."),
            (
                r#"{"name": "bash", "arguments": {"command": "ls"#,
                &NOTHING,
                "[turn: your reply began a call to bash",
            ),
            (
                "Run:\n```bash\nls\n```",
                &NOTHING,
                "[turn: your reply called no tool",
            ),
            ("Done.", &failed, "[turn: your edit_file of a.py failed"),
            (result.as_str(), &echoed, "[turn: your reply repeated"),
        ] {
            let note = judge(answer, "TASK", &TOOLS, done).expect(answer);
            assert!(note.text.starts_with(starts), "{}", note.text);
            assert!(note.text.ends_with("\n\nThe task: TASK"), "{}", note.text);
            assert_eq!(note.failure, done.failed.is_some());
        }
    }

    #[test]
    fn an_unfinished_write_is_asked_for_as_a_block_where_blocks_are_declared() {
        let cut = r#"{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1
y"#;
        let blocks = Done {
            blocks: true,
            ..NOTHING
        };
        let note = judge(cut, "T", &TOOLS, &blocks).unwrap();
        assert!(
            note.text.contains("Write it as a block instead"),
            "{}",
            note.text
        );
        let note = judge(cut, "T", &TOOLS, &NOTHING).unwrap();
        assert!(
            note.text.contains("Write the whole call again"),
            "{}",
            note.text
        );
        // Another tool's call is asked for whole, blocks or not.
        let bash = r#"{"name": "bash", "arguments": {"command": "ls"#;
        let note = judge(bash, "T", &TOOLS, &blocks).unwrap();
        assert!(
            note.text.contains("Write the whole call again"),
            "{}",
            note.text
        );
    }

    #[test]
    fn code_shown_after_a_change_is_an_answer() {
        let changed = Done {
            changed: true,
            ..NOTHING
        };
        assert_eq!(
            notice("It now reads:\n```python\nx = 1\n```", &changed),
            None
        );
    }

    #[test]
    fn shell_commands_shown_are_offered_as_a_call_and_nothing_else_is() {
        let note = judge("You can run:\n```bash\nls -R\n```", "T", &TOOLS, &NOTHING).unwrap();
        assert!(
            note.text.contains(
                "reply with only this call:\n{\"arguments\":{\"command\":\"ls -R\"},\"name\":\"bash\"}"
            ),
            "{}",
            note.text
        );
        for answer in ["```python\nprint(1)\n```", "```\nls\n```"] {
            let note = judge(answer, "T", &TOOLS, &NOTHING).unwrap();
            assert!(!note.text.contains("this call"), "{}", note.text);
        }
        let long = format!("```sh\n{}\n```", "echo x\n".repeat(400));
        let note = judge(&long, "T", &TOOLS, &NOTHING).unwrap();
        assert!(
            !note.text.contains("this call"),
            "a long block is not offered"
        );
    }

    #[test]
    fn the_task_is_restated_up_to_its_first_2000_chars() {
        let task = "é".repeat(2500);
        let note = judge("", &task, &TOOLS, &NOTHING).unwrap();
        assert!(note.text.ends_with(&"é".repeat(MAX_RESTATED)));
        assert!(!note.text.contains(&"é".repeat(MAX_RESTATED + 1)));
    }
}
