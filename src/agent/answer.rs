//! `--output-schema`: the final answer asked for again as one JSON value that matches the
//! user's schema, checked, and asked for once more with what was wrong.

use super::{push, Agent};
use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::schema;
use crate::wire::message::Message;
use serde_json::{json, Value};

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
            let reply = match self.ask(history, &mut wire, reporter, false, format) {
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
