//! The agent loop: send the history, run the tool calls in the reply, append their results,
//! and go again until the model answers without calling a tool (or --max-steps runs out).
//!
//! Architecture invariant: this module never spawns processes or touches files itself; tools do
//! that. It reports everything it does through one `Reporter`, so front ends (console, JSON,
//! sessions) differ only in the reporter they pass.

use crate::approve::Approver;
use crate::coach::{self, Coach};
use crate::context::{self, Keeper};
use crate::error::{Error, Result};
use crate::repeat::{self, Repeats, Verdict};
use crate::report::{Event, Origin, Reporter};
use crate::signal;
use crate::tools::{self, Context};
use crate::wire::client::{Client, Request};
use crate::wire::editblocks::{self, Found};
use crate::wire::message::{new_call_id, normalize, turn_call_id, Message, ToolCall};
use crate::wire::server;
use crate::wire::stream::Reply;
use crate::wire::textproto::{self, Protocol};
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Value};

mod answer;
pub use answer::OutputSchema;

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
    /// Notes for a model that cannot call tools well, once it has shown it (see coach).
    pub coach: Coach,
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
        self.coach.start_turn();
        if self.protocol == Protocol::Text {
            self.coach_on(coach::TEXT_PROTOCOL, reporter);
        }
        if self.preload {
            let named =
                crate::prompt::named_files(task, |path| tools::is_regular_file(&self.tools, path));
            self.read_named(&named, history, reporter);
        }
        let mut steps = 0;
        // Each message's JSON, in step with `history`: every request resends the whole history,
        // and serializing it anew each time was most of a step's CPU.
        let mut wire: Vec<Box<RawValue>> = Vec::with_capacity(history.len());
        let mut repeats = Repeats::default();
        // The main loop: one model request per pass.
        let text = loop {
            if steps == self.max_steps {
                return Err(Error::MaxSteps(self.max_steps));
            }
            steps += 1;
            let mut reply = self.ask(history, &mut wire, reporter, true, None)?;
            let (origin, found) = self.text_calls(&mut reply);
            if origin == Origin::Text && !reply.calls.is_empty() {
                self.coach_on(coach::TEXT_CALL, reporter);
            }
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
            // calls in its template's own form in later requests, not its text, which a
            // model that copies its own replies would repeat and lengthen. The text was
            // reported as it came. Edit blocks stay as the model wrote them: the text protocol
            // shows them again as they are, not as JSON with the file inside a string.
            let edits = found.iter().any(|f| f.edit);
            let content = match origin {
                Origin::Text if !kept.is_empty() && !edits => None,
                _ => reply.content.clone(),
            };
            push(history, Message::assistant(content, kept), reporter);
            if reply.calls.is_empty() {
                let text = reply.content.as_deref().unwrap_or_default();
                if let Some(note) = self.note(text, task, cut, reporter) {
                    reporter.report(Event::Notice(note.notice));
                    push(history, Message::user(note.text), reporter);
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
            let mut all_ok = true;
            repeats.reply();
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
                    _ => match found.get(i).and_then(|f| f.error.as_deref()) {
                        Some(error) => tools::Output::error(error),
                        None => self.run_tool(name, arguments, reply.calls.len()),
                    },
                };
                output.elided += self.context.fit_result(&mut output.text, reply.calls.len());
                all_ok &= output.ok;
                self.coach.observe(name, arguments, &output);
                let verdict = repeats.record(output.ok, name, arguments, &output.text);
                output.text.extend(repeat::note(&verdict));
                if let Verdict::Stop(times) = verdict {
                    repeating = Some(Error::Repeating {
                        tool: name.to_string(),
                        times,
                    });
                }
                answer(history, reporter, call, origin, &output);
            }
            if signal::interrupted() {
                return Err(Error::Interrupted);
            }
            if let Some(error) = repeating {
                return Err(error);
            }
            // Where the edit blocks are declared, a reply of edit blocks alone is the model's
            // last (the prompt says so, as aider's formats do): once they are all written it
            // is the answer. A block that failed goes back to the model with its error.
            let edits_only = !found.is_empty() && found.iter().all(|f| f.edit);
            if edits_only && all_ok && cut.is_none() && self.declared().is_some() {
                break reply.content.unwrap_or_default();
            }
        };
        Ok(text)
    }

    /// The note for a reply without calls (see coach), under the protocols that read calls
    /// written as text; none under --tool-protocol native, which takes every answer as it is.
    /// A call begun as text and not finished switches the notes on.
    fn note(
        &mut self,
        text: &str,
        task: &str,
        cut: Option<&str>,
        reporter: &mut dyn Reporter,
    ) -> Option<coach::notes::Note> {
        if !self.protocol.reads_text_calls() {
            return None;
        }
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        if coach::shapes::unfinished_call(text, &names).is_some()
            && self.coach.switch_on(coach::BEGUN_CALL)
        {
            reporter.report(Event::Coaching(coach::BEGUN_CALL));
        }
        self.coach
            .note(text, task, &names, cut, self.declared().is_some())
    }

    /// Switches the notes on for `why`, and reports it the first time (the session records
    /// it).
    fn coach_on(&mut self, why: &str, reporter: &mut dyn Reporter) {
        if self.coach.switch_on(why) {
            reporter.report(Event::Coaching(why));
        }
    }

    /// Reads the files the prompt names, as calls of turn's own (`"origin": "turn"`) in the
    /// history, one call a message: the model starts from their text instead of guessing it,
    /// and sees a call in its template's own form. A read that fails (a file that changed kind
    /// since it was found) is left in as its error.
    fn read_named(
        &mut self,
        files: &[String],
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) {
        for path in files {
            let arguments = json!({ "path": path }).to_string();
            let call = ToolCall::new(turn_call_id(), "read_file", arguments);
            let assistant = Message::assistant(None, vec![call.clone()]);
            push(history, assistant, reporter);
            let arguments = call.function.arguments.as_str();
            reporter.report(Event::ToolCall {
                id: &call.id,
                name: "read_file",
                arguments,
                origin: Origin::Turn,
            });
            let mut output = self.run_tool("read_file", arguments, files.len());
            output.elided += self.context.fit_result(&mut output.text, files.len());
            answer(history, reporter, &call, Origin::Turn, &output);
        }
    }

    /// Runs one of a reply's `calls` calls. The tool cuts its output to the window's share
    /// itself: one cut, whose note says what it took out.
    fn run_tool(&mut self, name: &str, arguments: &str, calls: usize) -> tools::Output {
        let limit = self.tools.max_output;
        if let Some(chars) = self.context.result_chars(calls) {
            self.tools.max_output = limit.min(chars.max(1));
        }
        self.tools.replace_seen_only = self.declared().is_some();
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
            // The text protocol asks for one call a reply: the reply ends after the first.
            let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
            let declared = self.declared();
            let first_call =
                |reply: &str, from: usize| textproto::first_call_end(reply, from, &names, declared);
            let request = Request {
                model: &self.model,
                messages,
                tools: (with_tools && !text).then_some(&*self.specs),
                temperature: self.temperature,
                stream: self.stream,
                max_tokens: Some(self.context.sending(messages)),
                response_format,
                ends: (text && with_tools).then_some(&first_call as _),
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
                    self.coach_on(coach::TEXT_PROTOCOL, reporter);
                }
                other => return other,
            }
        }
    }

    /// Calls the model wrote as text, when the reply has no native ones and the protocol reads
    /// them, with edit blocks when the request's system prompt declared them (see
    /// wire::editblocks): they join `reply.calls`, in step with `Found` (a block that does not
    /// parse carries its error), and run and are stored like native calls.
    fn text_calls(&self, reply: &mut Reply) -> (Origin, Vec<Found>) {
        if !reply.calls.is_empty() || !self.protocol.reads_text_calls() {
            return (Origin::Native, Vec::new());
        }
        let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
        let text = reply.content.as_deref().unwrap_or_default();
        let cut = context::cut(reply).is_some();
        let found = editblocks::read(text, &names, cut, self.declared());
        reply.calls = found
            .iter()
            .map(|f| ToolCall::new(new_call_id(), &f.name, &f.arguments))
            .collect();
        (Origin::Text, found)
    }

    /// The edit blocks requests declare: under the text protocol, with write_file and
    /// edit_file offered (see textproto::tools_prompt).
    fn declared(&self) -> Option<editblocks::Format> {
        let text = self.protocol == Protocol::Text;
        text.then(|| textproto::declared(&self.text_prompt))
            .flatten()
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

/// A message into the history, and reported.
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
