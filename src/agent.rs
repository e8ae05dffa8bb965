//! The agent loop: send the history, run the tool calls in the reply, append their results,
//! and go again until the model answers without calling a tool (or --max-steps runs out).
//!
//! Architecture invariant: this module never spawns processes or touches files itself; tools do
//! that. It reports everything it does through one `Reporter`, so front ends (console, JSON,
//! sessions) differ only in the reporter they pass.

use crate::approve::Approver;
use crate::context::{self, Keeper};
use crate::error::{Error, Result};
use crate::repeat::{self, Repeats, Verdict};
use crate::report::{Event, Origin, Reporter};
use crate::schema;
use crate::signal;
use crate::tools::{self, Context};
use crate::wire::client::{Client, Request};
use crate::wire::message::{normalize, Message, ToolCall};
use crate::wire::stream::Reply;
use crate::wire::textproto::{self, Protocol};
use crate::wire::{answer, server, textcalls};
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Value};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// What the model reads when its answer called no tool but showed commands or code
/// (`hands_over`), or repeated a tool's result: the task again, since a small model takes the
/// latest user message for the task (measured on Qwen2.5-Coder-1.5B: "Please provide the
/// task" after a note without it).
fn act_note(
    hands_over: bool,
    task: &str,
    answer: &str,
    is_program: impl Fn(&str) -> bool,
) -> String {
    // The commands the answer showed, offered back as the call that runs them: a small model
    // copies a call it is shown far more often than it writes one. Only when the block starts
    // with a command: the 1.5B model's blocks held `read_file mathutil.py` and a sentence of
    // the task, and were offered back as commands.
    let command = |commands: &String| {
        let first = commands
            .lines()
            .map(str::trim)
            .find(|line| !line.starts_with('#'))
            .and_then(|line| line.split_whitespace().next())
            .unwrap_or_default();
        SHELL_WORDS.contains(&first) || is_program(first)
    };
    let offer = match textcalls::shell_block(answer).filter(|_| hands_over) {
        Some(commands) if commands.len() <= 2000 && command(&commands) => format!(
            " To run the commands you showed, reply with only this call:\n{}",
            json!({"name": "bash", "arguments": {"command": commands}})
        ),
        _ => String::new(),
    };
    // No way out is offered after commands handed over: the 1.5B model, told it may answer
    // if the task is done, answered "The task is done." after only showing a script.
    let what = if hands_over {
        format!(
            "your reply called no tool, so nothing was run or changed: the task is not done \
             yet. Do not give the user commands or code: call the tool yourself now (bash, \
             write_file or edit_file).{offer}"
        )
    } else {
        "your reply repeated a tool's result. Results are for you to read, not to answer with. \
         Go on with the task: call the next tool. If the task is done, answer in one or two \
         sentences."
            .to_string()
    };
    format!("[turn: {what}]{}", restated(task))
}

/// Shell builtins and keywords a command line may start with, beside programs.
const SHELL_WORDS: [&str; 14] = [
    "cd", "echo", "export", "for", "if", "while", "printf", "set", "source", ".", "test", "[", "(",
    "{",
];

/// The task as notes restate it: its first 2,000 chars.
fn task_head(task: &str) -> String {
    task.chars().take(2000).collect()
}

/// The task again, at the end of a note.
fn restated(task: &str) -> String {
    format!("\n\nThe task: {}", task_head(task))
}

/// The task again, in the middle of repeat_task_text's note.
fn restated_within(task: &str) -> String {
    format!("The task was: {}", task_head(task))
}

/// What the model reads when its answer began a call to `tool` and did not finish it.
fn unfinished_note(tool: &str, task: &str) -> String {
    format!(
        "[turn: your reply began a call to {tool} but is not complete JSON, so nothing was run. \
         Write the whole call again, every string and brace closed: {{\"name\": \"{tool}\", \
         \"arguments\": {{...}}}}]{}",
        restated(task)
    )
}

/// What the model reads when it answers after its `tool` call on `path` failed with `error`
/// and no change to that file worked since.
fn failed_note(tool: &str, path: &str, error: &str, task: &str) -> String {
    format!(
        "[turn: your {tool} of {path} failed ({error}), and no change to {path} has worked \
         since, so it is as it was: the task is not done. Make the change now: call {tool} \
         again, right this time, or write_file with the whole new text of {path}.]{}",
        restated(task)
    )
}

/// What the model reads when it answered with nothing.
fn empty_note(task: &str) -> String {
    format!(
        "[turn: your reply was empty. Go on with the task: call the next tool, or, if the task \
         is done, answer in one or two sentences.]{}",
        restated(task)
    )
}

/// What the model reads when its answer copies the task's `example`: before any tool
/// `looked`, or after (small models copy the example over what their tools showed).
fn example_note(example: &str, looked: bool, task: &str) -> String {
    let what = if looked {
        "the example only shows the form of the answer. Read the tools' results above again \
         and answer from them; if they do not tell yet, call a tool that finds out"
    } else {
        "no tool has looked at anything yet, so it is a guess. Find the real answer with the \
         tools first (bash, read_file), then answer"
    };
    format!(
        "[turn: your answer copies the example the task gives (\"{example}\"): {what}.]{}",
        restated(task)
    )
}

/// What the model reads when its answer is the task's own words again (see
/// answer::repeats_task), or only a note's restatement of it: before any tool `looked`, or
/// after. Unlike the other notes it ends with what to do, not with the task: the 1.5B model's
/// repeat was the restatement a note ends with ("The task: …"), copied.
fn repeat_task_text(looked: bool, task: &str) -> String {
    let what = if looked {
        "Read the tools' results above again and answer the task from them, in the form it \
         asks for; if they do not tell yet, call a tool that finds out"
    } else {
        "No tool has looked at anything yet: find the answer with the tools first (bash, \
         read_file), then answer"
    };
    format!(
        "[turn: your answer repeats the task's words; it does not answer it.]\n\n{}\n\n\
         [turn: {what}.]",
        restated_within(task)
    )
}

/// What the model reads when the task asks for figures computed from data and it answered
/// with no command worked (see answer::asks_to_compute).
fn compute_note(task: &str) -> String {
    format!(
        "[turn: the task asks for figures computed from the data, and no command has worked \
         yet, so any figures you wrote are guesses: the task is not done. Compute them with a \
         command now: write a short Python script with write_file, run it with bash, and use \
         its output.]{}",
        restated(task)
    )
}

/// What the model reads when it answered before running the `command` the task says to run:
/// turn runs it next, as a call of its own (a user message between the answer and that call
/// keeps the roles taking turns, as strict chat templates demand).
fn unrun_note(command: &str) -> String {
    format!(
        "[turn: the task says to run `{command}`, and it has not run since the last change, so \
         turn runs it now.]"
    )
}

/// What the model reads after turn ran the command the task gives (its result stands right
/// before this note).
fn ran_note(task: &str) -> String {
    format!(
        "[turn: the output of the command the task gives is above. If it shows an error or a \
         failure, the task is not done: fix it with the tools. If it shows success, answer in \
         one or two sentences.]{}",
        restated(task)
    )
}

/// What the model reads when it answered a task that asks for `text` to be replaced everywhere
/// (see answer::replaced_everywhere): turn searches for what is left next, as a call of its own.
fn search_note(leftover: &answer::Leftover) -> String {
    let case = leftover.case();
    format!(
        "[turn: the task asks for \"{}\" to be replaced everywhere, so turn searches the files \
         for what is left of it{case} now.]",
        leftover.text
    )
}

/// What the model reads after turn's search for what is left (its result, `output`, stands
/// right before this note). Lines found: the forms and files found, and, when the task says
/// what to put in its place, the call that puts it there, to copy (told only that lines were
/// left, the 1.5B model answered "The word is still found in the file `src/net.py` on line
/// 7."; told the lines, it wrote `./src/net.py -e 's/recieve/receive/g'`, the lower-case form
/// again, for the "Recieve" left).
fn searched_note(leftover: &answer::Leftover, output: &tools::Output, task: &str) -> String {
    let (text, case) = (leftover.text, leftover.case());
    let files = answer::found_in(&output.text);
    if !output.ok {
        return format!(
            "[turn: the search for \"{text}\" failed (above), so what is left is not known: \
             look for it with the tools. If none is left and the rest of the task is done, \
             answer in one or two sentences.]{}",
            restated(task)
        );
    }
    if files.is_empty() {
        return format!(
            "[turn: the search above finds no \"{text}\" left{case}. If the rest of the task is \
             done, answer in one or two sentences.]{}",
            restated(task)
        );
    }
    let forms = leftover.forms(&output.text);
    let quoted: Vec<String> = forms.iter().map(|f| format!("\"{f}\"")).collect();
    let found = if quoted.is_empty() {
        format!("\"{text}\"")
    } else {
        quoted.join(", ")
    };
    let mut places = files.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    match files.len().saturating_sub(5) {
        0 => {}
        1 => places.push_str(" and 1 more file"),
        more => places.push_str(&format!(" and {more} more files")),
    }
    let fix = match (leftover.fix(&forms, &files), leftover.with) {
        (Some(command), Some(with)) => format!(
            " To put \"{with}\" in its place in all of them, reply with only this call:\n{}",
            json!({"name": "bash", "arguments": {"command": command}})
        ),
        _ => String::new(),
    };
    format!(
        "[turn: {found} is still found in {places}, on the lines above, so the task is not \
         done. Change each of those lines now, with edit_file or bash.{fix}]{}",
        restated(task)
    )
}

/// A command turn runs itself after a note, as a call of its own.
enum Run<'t> {
    /// One the task says to run (see answer::unrun_command).
    Task(String),
    /// The search for what is left of a text the task asks to replace everywhere.
    Search(answer::Leftover<'t>),
}

impl Run<'_> {
    fn command(&self) -> String {
        match self {
            Run::Task(command) => command.clone(),
            Run::Search(leftover) => leftover.search(),
        }
    }
}

/// Most notes (`act_note`, `unfinished_note`, `failed_note`, `empty_note`, `example_note`,
/// `repeat_task_text`, `compute_note`, `search_note` with `searched_note`, `unrun_note` with
/// `ran_note`) one turn gets.
const MAX_ACT_NOTES: u32 = 2;

/// What a turn has done so far, for judging its answer (see Agent::answer_note).
struct Done<'a> {
    /// A file was written or edited.
    changed: bool,
    /// The model called a tool.
    looked: bool,
    last_result: &'a str,
    /// The commands bash ran.
    ran: &'a [String],
    /// A bash command worked (exit 0).
    computed: bool,
    /// A write_file or edit_file that failed for its arguments (`tools::fixable`), and no
    /// change to its file has worked since: (tool, path, the error's first sentence).
    failed: Option<&'a (String, String, String)>,
}

/// A note for an answer that is no answer (see Agent::answer_note).
struct Note<'t> {
    /// What the user reads on stderr (a `notice` event).
    notice: &'static str,
    /// What the model reads.
    text: String,
    /// Whether the next request requires a call (`tool_choice: "required"`).
    call: bool,
    /// A command turn runs itself after the note (and another note after its result).
    run: Option<Run<'t>>,
    /// Whether the note is about the failed change (`Done::failed`): one note a failure.
    failure: bool,
}

impl Note<'_> {
    /// A note that requires no call and runs nothing.
    fn new(notice: &'static str, text: String) -> Self {
        Note {
            notice,
            text,
            call: false,
            run: None,
            failure: false,
        }
    }
}

/// The note for an answer that repeats the task. As with the example: with nothing looked
/// at, the next reply must call a tool.
fn repeat_task_note<'t>(task: &str, done: &Done) -> Note<'t> {
    Note {
        call: !done.looked,
        ..Note::new(
            "the answer repeats the task; asking the model to answer it",
            repeat_task_text(done.looked, task),
        )
    }
}

/// Everything that stays the same from one request to the next.
pub struct Agent<'a> {
    pub client: &'a Client,
    pub model: String,
    pub tools: Context<'a>,
    /// The tool specs, serialized once.
    pub specs: Box<RawValue>,
    pub max_steps: u32,
    pub stream: bool,
    pub temperature: Option<f64>,
    /// Asks the user before tools act, as --approve says.
    pub approver: Approver,
    /// The context window, and what keeps the history inside it.
    pub context: Keeper,
    /// --tool-protocol; `Auto` becomes `Text` when the server refuses tools.
    pub protocol: Protocol,
    /// The offered tools' names, for calls written as text.
    pub tool_names: Vec<String>,
    /// What the text protocol adds to the system prompt (see textproto::tools_prompt).
    pub text_prompt: String,
    /// The workspace's files, added to the next prompt once (see prompt::file_list).
    pub file_list: Option<String>,
    /// Whether the files a prompt names are read before its first request.
    pub preload: bool,
}

impl Agent<'_> {
    /// Adds `prompt` to the history and runs the loop until the model is done; returns the
    /// model's final text.
    pub fn turn(
        &mut self,
        history: &mut Vec<Message>,
        prompt: &str,
        reporter: &mut dyn Reporter,
    ) -> Result<String> {
        let task = prompt;
        let prompt = match self.file_list.take() {
            Some(list) => format!("{prompt}\n\n{list}"),
            None => prompt.to_string(),
        };
        push(history, Message::user(prompt.as_str()), reporter);
        if self.preload {
            let named = crate::prompt::named_files(task, self.tools.workspace);
            self.read_named(&named, history, reporter);
        }
        let mut steps = 0;
        // Each message's JSON, in step with `history`: every request resends the whole history,
        // and serializing it anew each time was most of a step's CPU.
        let mut wire: Vec<Box<RawValue>> = Vec::with_capacity(history.len());
        let mut repeats = Repeats::default();
        // How often the model was asked to act on an answer (and the answer it last was asked
        // about), whether a file was written, and the last tool result (an answer that only
        // repeats it is no answer).
        let (mut asked, mut changed, mut looked) = (0, false, false);
        let mut noted: Option<String> = None;
        // The commands bash ran this turn since the last write_file or edit_file (turn's own
        // included).
        let mut ran: Vec<String> = Vec::new();
        // Whether a bash command worked (exit 0) this turn.
        let mut computed = false;
        // The last write_file or edit_file that failed for its arguments, until a change to its
        // file works.
        let mut failed: Option<(String, String, String)> = None;
        let mut last_result = String::new();
        // Whether the next reply must call a tool: told to look before answering, a small model
        // at temperature 0 tends to give the same answer again; `tool_choice: "required"`
        // makes a server that honors it (llama-server, vLLM, OpenAI) hold the model to a call.
        let mut require_call = false;
        // The main loop: one model request per pass.
        let text = loop {
            if steps == self.max_steps {
                return Err(Error::MaxSteps(self.max_steps));
            }
            steps += 1;
            let mut reply = self.ask(history, &mut wire, reporter, true, require_call, None)?;
            require_call = false;
            let origin = self.text_calls(&mut reply, task);
            // A reply cut short (its budget ran out, or it looped) is not acted on in full:
            // its last call may be cut in the middle, so it is answered, not run.
            let cut = context::cut(&reply);
            if let Some(why) = cut {
                reporter.report(Event::Notice(why));
            }
            // The history keeps arguments that parse, so strict servers accept it; the tool
            // run below still sees what the model sent and can say what was wrong with it.
            let kept: Vec<ToolCall> = reply
                .calls
                .iter()
                .map(|c| {
                    ToolCall::new(
                        &c.id,
                        &c.function.name,
                        tools::sanitize_arguments(&c.function.arguments),
                    )
                })
                .collect();
            // Calls written as text are kept as native calls only: the model then sees its
            // calls in its template's own form in later requests (and takes that form up),
            // not its text, which it copies and lengthens reply after reply (measured on
            // Qwen2.5-Coder-1.5B). The text was reported as it came.
            let content = match origin {
                Origin::Text if !kept.is_empty() => None,
                _ => reply.content.clone(),
            };
            push(history, Message::assistant(content, kept), reporter);
            if reply.calls.is_empty() {
                if let Some(why) = cut {
                    let note = Message::user(context::cut_note(why, false));
                    push(history, note, reporter);
                    continue;
                }
                // An answer that leaves the task undone (see answer_note: empty, commands or
                // code handed over, a call begun and not finished, after a change that
                // failed, a result repeated, the task's example copied or the task repeated,
                // a command the task says to run skipped) gets a note and the task again
                // (twice a turn at most; not under --tool-protocol native, which takes every
                // answer as it is).
                let text = reply.content.as_deref().unwrap_or_default();
                // The same answer again after a note (temperature 0) will not change with
                // another note: it is final.
                let again = noted.as_deref() == Some(text);
                let done = Done {
                    changed,
                    looked,
                    last_result: &last_result,
                    ran: &ran,
                    computed,
                    failed: failed.as_ref(),
                };
                let note = (self.protocol.reads_text_calls() && asked < MAX_ACT_NOTES && !again)
                    .then(|| self.answer_note(text, task, &done))
                    .flatten();
                if let Some(Note {
                    notice,
                    text: note,
                    call,
                    run,
                    failure,
                }) = note
                {
                    asked += 1;
                    if failure {
                        failed = None;
                    }
                    require_call = call;
                    noted = Some(text.to_string());
                    reporter.report(Event::Notice(notice));
                    push(history, Message::user(note), reporter);
                    if let Some(run) = run {
                        let command = run.command();
                        let arguments = json!({ "command": command }).to_string();
                        let output = self.own_call("bash", arguments, 1, history, reporter);
                        let after = match &run {
                            Run::Task(_) => ran_note(task),
                            Run::Search(leftover) => searched_note(leftover, &output, task),
                        };
                        last_result = output.text;
                        ran.push(command);
                        push(history, Message::user(after), reporter);
                    }
                    continue;
                }
                if reply.content.is_none() {
                    reporter.report(Event::Notice("the model answered with nothing"));
                }
                break reply.content.unwrap_or_default();
            }
            // After Ctrl-C the remaining calls are answered without running, so the history
            // still says what happened and what did not.
            let mut repeating = None;
            for (i, call) in reply.calls.iter().enumerate() {
                let (id, name, arguments) = (
                    call.id.as_str(),
                    call.function.name.as_str(),
                    call.function.arguments.as_str(),
                );
                reporter.report(Event::ToolCall {
                    id,
                    name,
                    arguments,
                    origin,
                });
                let mut output = match cut {
                    _ if signal::interrupted() => {
                        tools::Output::error("not run: the user interrupted the turn")
                    }
                    Some(why) if i + 1 == reply.calls.len() => tools::Output {
                        ok: false,
                        text: context::cut_note(why, true),
                        elided: 0,
                    },
                    _ => self.run_tool(name, arguments, reply.calls.len()),
                };
                output.elided += self.context.fit_result(&mut output.text, reply.calls.len());
                if matches!(name, "write_file" | "edit_file") {
                    let path = string_argument(arguments, "path").unwrap_or_default();
                    if output.ok {
                        // A command the task says to run checks the work as it is now: one
                        // that ran before this change has to run again.
                        changed = true;
                        ran.clear();
                        if failed.as_ref().is_some_and(|(_, p, _)| *p == path) {
                            failed = None;
                        }
                    } else if tools::fixable(&output.text) {
                        // The error's first sentence: what follows shows the file, which
                        // the result the model just read holds already.
                        let error = output.text.lines().next().unwrap_or_default();
                        let error = error.trim_start_matches("Error: ");
                        let error = error.split(". ").next().unwrap_or_default();
                        let error = error.trim_end_matches(['.', ':']);
                        failed = Some((name.to_string(), path, error.chars().take(300).collect()));
                    }
                }
                looked = true;
                if name == "bash" {
                    ran.extend(string_argument(arguments, "command"));
                    computed |= output.ok;
                }
                let verdict = repeats.record(output.ok, name, arguments, &output.text);
                output.text.extend(repeat::note(&verdict));
                if let Verdict::Stop(times) = verdict {
                    repeating = Some(Error::Repeating {
                        tool: name.to_string(),
                        times,
                    });
                }
                answer(history, reporter, call, origin, &output);
                last_result = output.text;
            }
            if signal::interrupted() {
                return Err(Error::Interrupted);
            }
            if let Some(error) = repeating {
                return Err(error);
            }
        };
        Ok(text)
    }

    /// The note for an answer, called no tool, that leaves the task undone: it is empty,
    /// begins a call it does not finish, hands over commands or code when nothing was
    /// written, comes after a change that failed for its arguments and was not made since,
    /// repeats a result, copies the task's example, repeats the task, gives figures the task
    /// asks to compute when no command has worked, comes before turn searched for what is
    /// left of a text the task asks to replace everywhere, or before a command the task says
    /// to run has run.
    /// None: it is an answer.
    fn answer_note<'t>(&self, text: &str, task: &'t str, done: &Done) -> Option<Note<'t>> {
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        // An answer that copies a note's restatement of the task ("The task: …", or
        // repeat_task_text's "The task was: …") is judged without it (the 1.5B model began
        // its answer with one, then gave the example).
        let stripped = text.replacen(restated(task).trim_start(), "", 1).replacen(
            &restated_within(task),
            "",
            1,
        );
        if stripped.trim().is_empty() && !text.trim().is_empty() {
            // Nothing but the restatement (measured: the 1.5B model's answer after six
            // results, and again after a note that took it for empty).
            return Some(repeat_task_note(task, done));
        }
        let text = &stripped;
        if text.trim().is_empty() {
            // Nothing at all (measured: the 1.5B model's reply to a note, more than once).
            return Some(Note::new(
                "the model answered with nothing; asking it to go on",
                empty_note(task),
            ));
        }
        if let Some(tool) = textcalls::unfinished_call(text, &names) {
            return Some(Note::new(
                "the answer begins a tool call it does not finish; asking the model to write it whole",
                unfinished_note(tool, task),
            ));
        }
        if !done.changed && textcalls::hands_over_commands(text) {
            return Some(Note::new(
                "the answer shows commands or code but called no tool; asking the model to act",
                act_note(true, task, text, |w| tools::is_program(&self.tools, w)),
            ));
        }
        if let Some((tool, path, error)) = done.failed {
            return Some(Note {
                failure: true,
                ..Note::new(
                    "the answer comes after a change that failed and was not made since; asking the model to make it",
                    failed_note(tool, path, error, task),
                )
            });
        }
        if textcalls::echoes_result(text, done.last_result) {
            return Some(Note::new(
                "the answer repeats a tool's result; asking the model to go on",
                act_note(false, task, text, |_| false),
            ));
        }
        if let Some(example) = answer::copies_example(text, task) {
            if done.looked {
                // The tools' results may well say the example is the answer.
                return Some(Note::new(
                    "the answer copies the task's example; asking the model to answer from what the tools showed",
                    example_note(example, true, task),
                ));
            }
            // Nothing was looked at: the next reply must call a tool. Only here, where the
            // model has made no call this turn: on llama-server a required call is one the
            // model must reach after whatever text it writes first, and the 1.5B model,
            // held to it after its text, wrote newlines until it was cut as a loop.
            return Some(Note {
                call: true,
                ..Note::new(
                    "the answer copies the task's example before looking; asking the model to look",
                    example_note(example, false, task),
                )
            });
        }
        if answer::repeats_task(text, task) {
            return Some(repeat_task_note(task, done));
        }
        if !done.computed && answer::asks_to_compute(task) {
            return Some(Note::new(
                "the task asks for computed figures and no command has worked; asking the model to compute them",
                compute_note(task),
            ));
        }
        // The search for what is left of a text to replace everywhere, before the command the
        // task gives, which then checks all of the work. Once until the next write_file or
        // edit_file: a `sed` the model runs on what the search found does not bring it back,
        // so the command the task gives runs next.
        if let Some(leftover) = answer::replaced_everywhere(task) {
            let search = leftover.search();
            if !done.ran.contains(&search) && tools::is_program(&self.tools, "grep") {
                let text = search_note(&leftover);
                return Some(Note {
                    run: Some(Run::Search(leftover)),
                    ..Note::new(
                        "the task asks for a text to be replaced everywhere; turn searches for what is left",
                        text,
                    )
                });
            }
        }
        let command = answer::unrun_command(task, done.ran, |w| tools::is_program(&self.tools, w))?;
        Some(Note {
            run: Some(Run::Task(command.to_string())),
            ..Note::new(
                "the task says to run a command that has not run since the last change; turn runs it",
                unrun_note(command),
            )
        })
    }

    /// Reads the files the prompt names, as calls of turn's own in the history: the model
    /// starts from their text instead of guessing it (small models edit a file they have not
    /// read, with old_text made up), and sees a call in its template's own form. A read that
    /// fails (a file that changed kind since it was found) is left in as its error.
    fn read_named(
        &mut self,
        files: &[String],
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) {
        if files.is_empty() {
            return;
        }
        // One call a message: after two results side by side (one message with two calls),
        // Qwen2.5-Coder-1.5B wrote `<tool_response>` blocks until its budget ran out.
        for path in files {
            let arguments = json!({ "path": path }).to_string();
            self.own_call("read_file", arguments, files.len(), history, reporter);
        }
    }

    /// Runs a call of turn's own (`"origin": "turn"`), one of `calls` made together, and puts
    /// it and its result in the history like the model's calls; returns the result.
    fn own_call(
        &mut self,
        name: &str,
        arguments: String,
        calls: usize,
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) -> tools::Output {
        let call = ToolCall::new(new_call_id(), name, arguments);
        push(
            history,
            Message::assistant(None, vec![call.clone()]),
            reporter,
        );
        let arguments = call.function.arguments.as_str();
        reporter.report(Event::ToolCall {
            id: &call.id,
            name,
            arguments,
            origin: Origin::Turn,
        });
        let mut output = self.run_tool(name, arguments, calls);
        output.elided += self.context.fit_result(&mut output.text, calls);
        answer(history, reporter, &call, Origin::Turn, &output);
        output
    }

    /// Runs one of a reply's `calls` calls. The tool cuts its output to the window's share
    /// itself: one cut, whose note says what it took out.
    fn run_tool(&mut self, name: &str, arguments: &str, calls: usize) -> tools::Output {
        let limit = self.tools.max_output;
        if let Some(chars) = self.context.result_chars(calls) {
            self.tools.max_output = limit.min(chars.max(1));
        }
        let output = tools::run(name, arguments, &self.tools, &mut self.approver);
        self.tools.max_output = limit;
        output
    }

    /// One model request for `history` (serialized in `wire`, kept in step): normalized and
    /// fitted to the context window first, and rendered for the text protocol when that is
    /// the one in use. A request the server refuses as too large (or silently cuts) is
    /// compacted and made again, a few times at most; one that refuses tools (under `auto`)
    /// is made again with the text protocol, for the rest of the run.
    fn ask(
        &mut self,
        history: &mut Vec<Message>,
        wire: &mut Vec<Box<RawValue>>,
        reporter: &mut dyn Reporter,
        with_tools: bool,
        require_call: bool,
        response_format: Option<&Value>,
    ) -> Result<Reply> {
        let client = self.client;
        loop {
            if normalize(history) {
                wire.clear();
            }
            encode(history, wire)?;
            if self
                .context
                .prepare(client, &self.model, history, wire, reporter)?
            {
                wire.clear();
                encode(history, wire)?;
            }
            // The text protocol sends its own rendering of the history, and no tools.
            let text = self.protocol == Protocol::Text;
            let rendered = if text {
                Some(self.render(history)?)
            } else {
                None
            };
            let messages = rendered.as_deref().unwrap_or(wire);
            let request = Request {
                model: &self.model,
                messages,
                tools: (with_tools && !text).then_some(&*self.specs),
                temperature: self.temperature,
                stream: self.stream,
                max_tokens: Some(self.context.sending(messages)),
                response_format,
                require_call,
            };
            let result = client
                .complete(&request, &mut new_call_id, reporter)
                .and_then(|reply| {
                    if let Some(usage) = reply.usage {
                        reporter.report(Event::Usage(usage));
                    }
                    self.context.observe(client, &self.model, reply.usage)?;
                    Ok(reply)
                });
            match result {
                Err(Error::Overflow {
                    window,
                    prompt,
                    message,
                }) => self
                    .context
                    .overflowed(window, prompt, &message, reporter)?,
                Err(Error::Api { message, .. })
                    if with_tools
                        && self.protocol == Protocol::Auto
                        && server::refusal(&message).is_some() =>
                {
                    // The refusal costs a request, not a step.
                    let hint = server::refusal(&message).map_or("", |(_, hint)| hint);
                    reporter.report(Event::Fallback {
                        reason: &message,
                        hint,
                    });
                    self.protocol = Protocol::Text;
                }
                other => return other,
            }
        }
    }

    /// Calls the model wrote as text, when the reply has no native ones and the protocol reads
    /// them: they join `reply.calls`, and run and are stored like native calls (the text stays
    /// the message's content).
    fn text_calls(&self, reply: &mut Reply, task: &str) -> Origin {
        if !reply.calls.is_empty() || !self.protocol.reads_text_calls() {
            return Origin::Native;
        }
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        let text = reply.content.as_deref().unwrap_or_default();
        let mut calls = textcalls::recognize(text, &names);
        if calls.is_empty() && context::cut(reply).is_some() {
            // A reply cut short may end in a half-written call: the whole lines before it are
            // read (and, the reply being cut, its last call is answered, not run).
            if let Some((whole, _)) = text.trim_end().rsplit_once('\n') {
                calls = textcalls::recognize(whole, &names);
            }
        }
        // A whole file written out after a line naming it is a write_file call, when the file
        // is there and the block is plainly that file rewritten (see tools::is_rewrite).
        if calls.is_empty() && context::cut(reply).is_none() {
            calls = textcalls::whole_files(text)
                .into_iter()
                .filter(|whole| tools::is_rewrite(&self.tools, &whole.path, &whole.content))
                .map(|whole| textcalls::TextCall {
                    name: "write_file".into(),
                    arguments: json!({ "path": whole.path, "content": whole.content }).to_string(),
                })
                .collect();
        }
        if calls.is_empty() && context::cut(reply).is_none() {
            calls = self.answer_edits(text, task);
        }
        // The same call written again and again in one reply (a small model's loop) runs once.
        let mut seen = std::collections::HashSet::new();
        calls.retain(|call| seen.insert((call.name.clone(), call.arguments.clone())));
        reply.calls = calls
            .into_iter()
            .map(|call| ToolCall::new(new_call_id(), call.name, call.arguments))
            .collect();
        Origin::Text
    }

    /// What an answer without calls means to be done, for small models that show it instead
    /// of calling a tool: Python definitions shown in a block, put in place in the one file
    /// that has them (the file the line before names, else any of the workspace's `.py`
    /// files), as a write_file, or a block that is one of those files written out anew, as
    /// its write_file; else a script shown for a new file, as its write_file, and the
    /// command the answer shows to run it (`python3 totals.py`), as a bash call after it;
    /// else a shell block every line of which the task itself gives (`Run \`python3
    /// run_checks.py\``), as a bash call.
    fn answer_edits(&self, text: &str, task: &str) -> Vec<textcalls::TextCall> {
        // The workspace's .py files, walked once however many blocks need them.
        let mut python_files: Option<Vec<String>> = None;
        for block in textcalls::code_blocks(text) {
            if !["", "python", "py", "python3"].contains(&block.info.to_ascii_lowercase().as_str())
            {
                continue;
            }
            let named: Vec<String> = block
                .before
                .map(|b| {
                    textcalls::path_words(b)
                        .filter(|w| w.ends_with(".py"))
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let candidates = match named.len() {
                1 => &named,
                _ => python_files.get_or_insert_with(|| {
                    crate::prompt::files_ending(self.tools.workspace, ".py")
                }),
            };
            let spliced = tools::splice_definitions(&self.tools, candidates, &block.body);
            // A whole file with no line naming it (measured: "Here's the updated code:" and
            // all of greet.py with the new flag, from the 1.5B model) is that file rewritten
            // when it is plainly a rewrite of exactly one of them.
            let rewritten = || {
                let mut of = candidates
                    .iter()
                    .filter(|path| tools::is_rewrite(&self.tools, path, &block.body));
                match (of.next(), of.next()) {
                    (Some(path), None) => Some((path.clone(), block.body.clone())),
                    _ => None,
                }
            };
            if let Some((path, content)) = spliced.or_else(rewritten) {
                return vec![textcalls::TextCall {
                    name: "write_file".into(),
                    arguments: json!({ "path": path, "content": content }).to_string(),
                }];
            }
        }
        // A script shown for a file that is not there yet, and the command the answer shows
        // to run it: both calls, in order.
        if let Some(script) = textcalls::new_script(text) {
            let path = self.tools.workspace.join(&script.path);
            if std::fs::symlink_metadata(path).is_err() {
                let write = textcalls::TextCall {
                    name: "write_file".into(),
                    arguments: json!({ "path": script.path, "content": script.content })
                        .to_string(),
                };
                let run = script.run.map(|command| textcalls::TextCall {
                    name: "bash".into(),
                    arguments: json!({ "command": command }).to_string(),
                });
                return std::iter::once(write).chain(run).collect();
            }
        }
        match textcalls::shell_block(text) {
            Some(commands) if commands.lines().all(|line| task.contains(line.trim())) => {
                vec![textcalls::TextCall {
                    name: "bash".into(),
                    arguments: json!({ "command": commands }).to_string(),
                }]
            }
            _ => Vec::new(),
        }
    }

    /// The history as the text protocol sends it, serialized.
    fn render(&self, history: &[Message]) -> Result<Vec<Box<RawValue>>> {
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        textproto::render(history, &self.text_prompt, &names)
            .iter()
            .map(|message| {
                to_raw_value(message)
                    .map_err(|e| Error::Protocol(format!("cannot encode a message: {e}")))
            })
            .collect()
    }

    pub fn compact(
        &mut self,
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) -> Result<()> {
        normalize(history);
        let (client, model) = (self.client, self.model.as_str());
        self.context.compact(client, model, history, reporter)
    }
}

/// Serializes the messages of `history` that `wire` does not hold yet.
fn encode(history: &[Message], wire: &mut Vec<Box<RawValue>>) -> Result<()> {
    for message in &history[wire.len()..] {
        wire.push(
            to_raw_value(message)
                .map_err(|e| Error::Protocol(format!("cannot encode a message: {e}")))?,
        );
    }
    Ok(())
}

impl Agent<'_> {
    /// --output-schema: once the loop is done, asks for the final answer as one JSON value
    /// matching `schema`, on a request without tools (llama-server refuses a grammar beside
    /// tools), checks it, and asks once more with what was wrong. A server that refuses
    /// `response_format` is asked again without it: the schema is in the prompt either way.
    pub fn answer_as(
        &mut self,
        schema: &OutputSchema,
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) -> Result<Value> {
        let format = json!({
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": schema.schema, "strict": true}
        });
        let ask = format!(
            "Now give your final answer as one JSON value that matches this JSON Schema:\n{}\n\
             Reply with the JSON value only: no prose, no code fence.",
            schema.schema
        );
        push(history, Message::user(ask), reporter);
        let mut use_format = true;
        let mut reasked = false;
        loop {
            let mut wire = Vec::new();
            let format = use_format.then_some(&format);
            let reply = match self.ask(history, &mut wire, reporter, false, false, format) {
                Ok(reply) => reply,
                Err(Error::Api {
                    status: Some(400 | 404 | 415 | 422 | 501),
                    message,
                }) if use_format => {
                    let notice = format!(
                        "the server refused response_format ({}); asking for the JSON in the prompt only",
                        message.chars().take(200).collect::<String>()
                    );
                    reporter.report(Event::Notice(&notice));
                    use_format = false;
                    continue;
                }
                Err(error) => return Err(error),
            };
            let text = reply.content.unwrap_or_default();
            push(
                history,
                Message::assistant(Some(text.clone()), Vec::new()),
                reporter,
            );
            let problems = match schema::parse_answer(&text) {
                Ok(value) => {
                    let problems = schema::validate(&schema.schema, &value);
                    if problems.is_empty() {
                        return Ok(value);
                    }
                    problems
                }
                Err(problem) => vec![problem],
            };
            if reasked {
                return Err(Error::Schema(problems.join("; ")));
            }
            reasked = true;
            let notice = format!(
                "the answer does not match the schema ({}); asking once more",
                problems.join("; ")
            );
            reporter.report(Event::Notice(&notice));
            let again = format!(
                "That answer does not match the schema:\n- {}\nReply again with only the corrected JSON value.",
                problems.join("\n- ")
            );
            push(history, Message::user(again), reporter);
        }
    }
}

/// --output-schema, read and checked: the schema and the name it is sent under.
pub struct OutputSchema {
    pub schema: Value,
    pub name: String,
}

fn push(history: &mut Vec<Message>, message: Message, reporter: &mut dyn Reporter) {
    reporter.report(Event::Message(&message));
    history.push(message);
}

/// A call's result into the history, and reported.
fn answer(
    history: &mut Vec<Message>,
    reporter: &mut dyn Reporter,
    call: &ToolCall,
    origin: Origin,
    output: &tools::Output,
) {
    push(
        history,
        Message::tool(&call.id, output.text.as_str()),
        reporter,
    );
    reporter.report(Event::ToolResult {
        id: &call.id,
        name: &call.function.name,
        arguments: &call.function.arguments,
        ok: output.ok,
        output: &output.text,
        elided: output.elided,
        origin,
    });
}

/// The string argument `key` of a call's arguments (a bash call's `command`, a file tool's
/// `path`), if they hold one.
fn string_argument(arguments: &str, key: &str) -> Option<String> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    Some(value.get(key)?.as_str()?.to_string())
}

/// `call_` and 24 letters or digits, for calls the server sent without a usable id. Random per
/// process (std's hasher keys are), so resumed histories do not collide.
fn new_call_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::from("call_");
    let mut bits = 0u64;
    for i in 0..24 {
        if i % 8 == 0 {
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_usize(i);
            bits = hasher.finish();
        }
        id.push(ALPHABET[(bits % 62) as usize] as char);
        bits /= 62;
    }
    id
}

#[cfg(test)]
mod tests {
    #[test]
    fn call_ids_look_like_openai_ones_and_differ() {
        let (a, b) = (super::new_call_id(), super::new_call_id());
        assert_eq!(a.len(), 29);
        assert!(a.starts_with("call_") && a[5..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }
}
