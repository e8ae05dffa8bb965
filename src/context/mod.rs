//! The context window: knowing it, counting what a request holds, and keeping the history
//! inside it, so long tasks finish on local servers with small windows.
//!
//! The parts:
//! - `window`: learning the window from the server (each kind says it in its own place) and
//!   reading the errors servers send when a request did not fit;
//! - `count`: tokens from JSON bytes, at a rate learned from the server's `usage`;
//! - `planner` (pure): which old tool results become stubs, and when a summary is needed,
//!   which recent messages stay beside it.
//!
//! `Keeper`, here, is what the agent loop asks before each request (`prepare`, `sending`) and
//! tells after each reply (`observe`) or refusal (`overflowed`). It also writes the handoff
//! summary, with one request of its own.

pub mod count;
pub mod planner;
pub mod window;

use crate::error::{Error, Result};
use crate::report::{Event, Reporter};
use crate::tools::{self, truncate};
use crate::wire::client::{Client, Request};
use crate::wire::message::Message;
use crate::wire::stream::{Reply, Usage, REPETITION};
use count::Rate;
use planner::{Budget, Plan};
use serde_json::value::{to_raw_value, RawValue};
use window::Kind;

/// The reply budget, when --max-tokens does not set it: this share of the window...
const REPLY_SHARE: u64 = 4;
/// ... but no more than this; and this when the window is unknown.
const REPLY_MOST: u64 = 8192;
const REPLY_UNKNOWN: u64 = 4096;
/// The high- and low-water marks, in percent of the room the reply leaves in the window.
const HIGH: u64 = 95;
const LOW: u64 = 60;
/// Bytes of a request besides its messages and tools (model, stream, budget, brackets).
const ENVELOPE: usize = 160;
/// How many times in a row the server may refuse a request as too large before turn gives up.
const MAX_OVERFLOWS: u32 = 3;
/// A prompt count below this is not taken for a window (an old Ollama counted only the tokens
/// its cache did not hold).
const LEAST_WINDOW: u64 = 1024;
/// A request this many bytes larger than the last must count more tokens (a sixteenth of them
/// at the very least), or the server cut it.
const STALL_BYTES: usize = 2048;

const SUMMARY_SYSTEM: &str = "You write handoff notes for a coding agent whose conversation \
    must be shortened to fit its context window. You see a record of the work; you write the \
    summary the agent will continue from. You do not call tools.";

/// Knows the context window and keeps the history inside it.
pub struct Keeper {
    window: Option<u64>,
    /// Where the window came from, for people.
    source: String,
    kind: Kind,
    /// --max-tokens.
    max_tokens: Option<u64>,
    rate: Rate,
    /// Bytes of the tool specs.
    specs: usize,
    /// Bytes of the last request sent.
    sent: usize,
    /// The server's prompt count for the last request, and that request's bytes; forgotten
    /// when the history is compacted.
    last: Option<(u64, usize)>,
    /// Tokens of what must stay whatever happens (see `planner::floor`), as of `prepare`.
    floor: u64,
    overflows: u32,
    /// The server's words when it last refused a request as too large, while the window is
    /// only turn's guess from it.
    guessed_from: Option<String>,
    compactions: u32,
    /// Whether the window was asked for again once the model was loaded (Ollama, LM Studio
    /// list a model's context only then).
    asked_again: bool,
}

impl Keeper {
    pub fn new(window: Option<u64>, source: &str, kind: Kind, max_tokens: Option<u64>) -> Keeper {
        Keeper {
            window: window.map(|w| w.min(window::MOST)),
            source: source.to_string(),
            kind,
            max_tokens,
            rate: Rate::default(),
            specs: 0,
            sent: 0,
            last: None,
            floor: 0,
            overflows: 0,
            guessed_from: None,
            compactions: 0,
            asked_again: false,
        }
    }

    /// The window as given (--context or TURN_CONTEXT), or else as the server tells it.
    pub fn learn(
        client: &Client,
        model: &str,
        given: Option<u64>,
        max_tokens: Option<u64>,
    ) -> Result<Keeper> {
        if given.is_some() {
            return Ok(Keeper::new(given, "--context", Kind::Unknown, max_tokens));
        }
        let learned = window::learn(client, model)?;
        Ok(Keeper::new(
            learned.tokens,
            learned.kind.source(),
            learned.kind,
            max_tokens,
        ))
    }

    /// Counts the tool specs every request carries.
    pub fn with_specs(mut self, specs: &RawValue) -> Keeper {
        self.specs = specs.get().len();
        self
    }

    /// The context window in tokens, when known.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// The most tokens a reply may take: --max-tokens, else a quarter of the window (at most
    /// 8192), else 4096.
    pub fn reply_budget(&self) -> u64 {
        self.max_tokens.unwrap_or(match self.window {
            Some(window) => (window / REPLY_SHARE).clamp(1, REPLY_MOST),
            None => REPLY_UNKNOWN,
        })
    }

    fn budget(&self) -> Option<Budget> {
        let room = self.window?.saturating_sub(self.reply_budget());
        Some(Budget {
            high: room * HIGH / 100,
            low: room * LOW / 100,
            fixed: self.rate.tokens(self.specs + ENVELOPE),
        })
    }

    fn size(&self, json_bytes: usize) -> u64 {
        self.rate.tokens(json_bytes + 1) // and its comma
    }

    fn sizes(&self, wire: &[Box<RawValue>]) -> Vec<u64> {
        wire.iter().map(|m| self.size(m.get().len())).collect()
    }

    fn message_size(&self, message: &Message) -> u64 {
        self.size(serde_json::to_string(message).map_or(0, |s| s.len()))
    }

    /// The tokens `history` makes in a request, tool specs included.
    pub fn estimate(&self, history: &[Message]) -> u64 {
        let messages: u64 = history.iter().map(|m| self.message_size(m)).sum();
        self.rate.tokens(self.specs + ENVELOPE) + messages
    }

    /// Before a request: compacts `history` (serialized in `wire`) if it would not fit the
    /// window. Says whether it changed `history`, so the caller serializes it anew.
    pub fn prepare(
        &mut self,
        client: &Client,
        model: &str,
        history: &mut Vec<Message>,
        wire: &[Box<RawValue>],
        reporter: &mut dyn Reporter,
    ) -> Result<bool> {
        let Some(budget) = self.budget() else {
            return Ok(false);
        };
        let sizes = self.sizes(wire);
        self.floor = planner::floor(history, &sizes, budget.fixed);
        let before = budget.fixed + sizes.iter().sum::<u64>();
        let stubbed = |i: usize| self.stubbed(history, i);
        match planner::plan(history, &sizes, &stubbed, &budget) {
            Plan::Fits => Ok(false),
            Plan::CannotFit { need } => Err(self.too_small(need)),
            Plan::Elide { results, .. } => {
                planner::elide(history, &results);
                self.compacted("elide", before, history, reporter);
                Ok(true)
            }
            Plan::Summarize => {
                self.summarize(client, model, history, budget, reporter)?;
                Ok(true)
            }
        }
    }

    /// The size message `i` of `history` would have as a stub.
    fn stubbed(&self, history: &[Message], i: usize) -> u64 {
        let chars = history[i]
            .content
            .as_deref()
            .unwrap_or_default()
            .chars()
            .count();
        let id = history[i].tool_call_id.as_deref().unwrap_or_default();
        self.message_size(&Message::tool(id, planner::stub(chars)))
    }

    fn too_small(&self, need: u64) -> Error {
        if let Some(message) = &self.guessed_from {
            return Error::Context(format!(
                "the request does not fit the server's context window ({message}), and turn \
                 cannot make it smaller: the system prompt, the tool descriptions and your \
                 messages take about {need} tokens"
            ));
        }
        Error::Context(format!(
            "the context window of {} tokens is too small: the system prompt, the tool \
             descriptions and your messages take about {need} tokens, and {} more are kept for \
             the reply",
            self.window.unwrap_or_default(),
            self.reply_budget()
        ))
    }

    /// Summarizes the work so far and rebuilds `history` around the summary: the system
    /// prompt, the user's messages, the summary, the recent messages that fit.
    fn summarize(
        &mut self,
        client: &Client,
        model: &str,
        history: &mut Vec<Message>,
        budget: Budget,
        reporter: &mut dyn Reporter,
    ) -> Result<()> {
        let before = self.estimate(history);
        let sizes: Vec<u64> = history.iter().map(|m| self.message_size(m)).collect();
        let stubbed = |i: usize| self.stubbed(history, i);
        let all = planner::all_elidable(history, &sizes, &stubbed);
        planner::elide(history, &all);
        let sizes: Vec<u64> = history.iter().map(|m| self.message_size(m)).collect();
        let floor = planner::floor(history, &sizes, budget.fixed);
        let text = self.ask_summary(client, model, history, reporter)?;
        // A summary may take half of the room the floor leaves; a longer one is cut.
        let most = budget.high.saturating_sub(floor) / 2;
        let mut summary = planner::summary_message(&text);
        let mut chars = text.chars().count();
        while self.message_size(&summary) > most && chars > 0 {
            chars = chars * 3 / 4;
            summary = planner::summary_message(&truncate::middle(&text, chars).text);
        }
        let summary_size = self.message_size(&summary);
        let Some(keep) = planner::tail(history, &sizes, summary_size, &budget) else {
            return Err(self.too_small(floor + summary_size));
        };
        *history = planner::rebuild(history, keep, summary);
        self.compacted("summary", before, history, reporter);
        Ok(())
    }

    /// The model's handoff summary of `history`: one request without tools, whose record of
    /// the work is cut to fit the window.
    fn ask_summary(
        &mut self,
        client: &Client,
        model: &str,
        history: &[Message],
        reporter: &mut dyn Reporter,
    ) -> Result<String> {
        let window = self.window.unwrap_or(32_768);
        let reply = (window / 8).clamp(128, 2048).min(self.reply_budget());
        let words = reply * 3 / 5;
        let ask = format!(
            "Above is the record of the work so far. Write a handoff summary for whoever \
             continues it: what the task is, what was done, which files were changed and how, \
             what was found out (errors, facts, decisions), and what is left to do. Be concise \
             and specific (file names, commands, values); plain text, at most {words} words."
        );
        let fixed = self
            .rate
            .tokens(SUMMARY_SYSTEM.len() + ask.len() + ENVELOPE + 64);
        let room = window.saturating_sub(reply).saturating_sub(fixed) * 9 / 10;
        let mut max = self.rate.bytes(room).max(256);
        for _ in 0..MAX_OVERFLOWS {
            let record = planner::transcript(history, max);
            let messages = [
                Message::system(SUMMARY_SYSTEM),
                Message::user(format!("{record}\n\n---\n\n{ask}")),
            ];
            let wire: Vec<Box<RawValue>> = messages
                .iter()
                .filter_map(|m| to_raw_value(m).ok())
                .collect();
            let request = Request {
                model,
                messages: &wire,
                tools: None,
                temperature: None,
                stream: false,
                max_tokens: Some(reply),
                response_format: None,
                ends: None,
            };
            match client.complete(&request, &mut String::new, &mut Quiet(reporter)) {
                Ok(reply) => {
                    let text = reply.content.unwrap_or_default();
                    return Ok(if text.trim().is_empty() {
                        steps_taken(history)
                    } else {
                        text
                    });
                }
                Err(Error::Overflow { window, .. }) => {
                    if let Some(window) = window.filter(|&w| Some(w) < self.window) {
                        self.window = Some(window);
                    }
                    max /= 2;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(steps_taken(history))
    }

    fn compacted(
        &mut self,
        stage: &'static str,
        before: u64,
        history: &[Message],
        reporter: &mut dyn Reporter,
    ) {
        self.last = None;
        self.compactions += 1;
        reporter.report(Event::Compacted {
            stage,
            before,
            after: self.estimate(history),
            window: self.window,
            history,
        });
    }

    /// Just before a request goes out with `wire`: remembers its size, and says the reply
    /// budget to send (no more than the window leaves).
    pub fn sending(&mut self, wire: &[Box<RawValue>]) -> u64 {
        self.sent = self.specs + ENVELOPE + wire.iter().map(|m| m.get().len() + 1).sum::<usize>();
        let budget = self.reply_budget();
        match self.window {
            Some(window) => budget
                .min(window.saturating_sub(self.rate.tokens(self.sent)))
                .max(16),
            None => budget,
        }
    }

    /// After a reply: learns the counting rate from its usage. A prompt count far below what
    /// was sent means the server cut the prompt's front without a word (Ollama does): that is
    /// an overflow, with the count as the window.
    pub fn observe(&mut self, client: &Client, model: &str, usage: Option<Usage>) -> Result<()> {
        if self.window.is_none() && !self.asked_again && self.kind != Kind::Unknown {
            self.asked_again = true;
            let root = window::root(client.base_url()).to_string();
            self.window = window::ask(client, self.kind, &root, model)?;
        }
        let Some(Usage { prompt_tokens, .. }) = usage.filter(|u| u.prompt_tokens > 0) else {
            self.overflows = 0;
            return Ok(());
        };
        let least = (self.sent / 4) as u64; // the fewest tokens the request can have had
                                            // Or the request grew by kilobytes and the count barely moved: a cut at the same size.
        let stalled = self.last.is_some_and(|(tokens, bytes)| {
            let grown = self.sent.saturating_sub(bytes);
            grown >= STALL_BYTES && prompt_tokens < tokens.saturating_add((grown / 16) as u64)
        });
        let cut = self.window.is_none()
            && (LEAST_WINDOW..=window::MOST).contains(&prompt_tokens)
            && (prompt_tokens.saturating_mul(2) < least || stalled);
        if cut {
            return Err(Error::Overflow {
                window: Some(prompt_tokens),
                prompt: None,
                message: format!(
                    "the server counted {prompt_tokens} prompt tokens where about {least} or more \
                     were sent: it cut the front of the prompt without saying so (Ollama does; \
                     raise its num_ctx or OLLAMA_CONTEXT_LENGTH)"
                ),
            });
        }
        self.rate.learn(prompt_tokens, self.sent);
        self.last = Some((prompt_tokens, self.sent));
        self.overflows = 0;
        Ok(())
    }

    /// The server refused the last request as too large (or cut it): learns what it can, so
    /// the next `prepare` compacts; gives up after a few times in a row.
    pub fn overflowed(
        &mut self,
        window: Option<u64>,
        prompt: Option<u64>,
        message: &str,
        reporter: &mut dyn Reporter,
    ) -> Result<()> {
        self.overflows += 1;
        let estimate = self.rate.tokens(self.sent);
        if let Some(prompt) = prompt.filter(|&p| p <= window::MOST) {
            self.rate.learn(prompt, self.sent);
        }
        let said = window;
        let window = match (window, self.window) {
            (Some(said), _) => said,
            // The server did not say its window: assume less than what was refused.
            (None, known) => known.unwrap_or(estimate).min(estimate) * 3 / 4,
        };
        if prompt.is_none() && estimate <= window {
            // By turn's count it fitted: count more tokens per byte from now on.
            self.rate.raise(1.25);
        }
        self.window = Some(window);
        self.source = "the server's error".to_string();
        self.guessed_from = said.is_none().then(|| message.to_string());
        if self.overflows > MAX_OVERFLOWS {
            return Err(Error::Context(format!(
                "the request still does not fit the context window of {window} tokens after \
                 {MAX_OVERFLOWS} compactions: {message}"
            )));
        }
        let notice = format!("{message}; compacting to fit {window} tokens and trying again");
        reporter.report(Event::Notice(&notice));
        Ok(())
    }

    /// A tool result's share of the window, in JSON bytes: the results of one reply's `calls`
    /// share half the room the system prompt, tools and user's messages leave.
    fn result_share(&self, calls: usize) -> Option<usize> {
        let budget = self.budget()?;
        let room = budget.high.saturating_sub(self.floor) / 2;
        Some(self.rate.bytes(room / calls.max(1) as u64))
    }

    /// The most chars a tool should return for one of `calls`, so that its own cut (which
    /// knows what it cut, and quotes the failures in it) is the only one: a little under its
    /// share, since JSON escapes make text longer. `None` when the window is not known.
    pub fn result_chars(&self, calls: usize) -> Option<usize> {
        self.result_share(calls).map(|share| share / 10 * 9)
    }

    /// Cuts a tool result larger than its share of the window to fit, head and tail, whatever
    /// --max-output said. Returns how many chars were cut.
    pub fn fit_result(&self, text: &mut String, calls: usize) -> usize {
        let Some(share) = self.result_share(calls) else {
            return 0;
        };
        let json_len = |t: &str| serde_json::to_string(t).map_or(t.len(), |j| j.len());
        if json_len(text) <= share {
            return 0;
        }
        let total = text.chars().count();
        let mut keep = share.min(total);
        loop {
            let cut = truncate::middle(text, keep);
            if json_len(&cut.text) <= share || keep == 0 {
                *text = cut.text;
                return cut.elided;
            }
            keep = keep * 3 / 4;
        }
    }

    /// A forced summary (the REPL's /compact), whether or not the history is over the mark.
    pub fn compact(
        &mut self,
        client: &Client,
        model: &str,
        history: &mut Vec<Message>,
        reporter: &mut dyn Reporter,
    ) -> Result<()> {
        let now = self.estimate(history);
        // With no window known, the summary and the recent messages may take what the
        // history takes now, and the tail kept aims at half of it.
        let budget = self.budget().unwrap_or(Budget {
            high: now.saturating_mul(2).saturating_add(REPLY_UNKNOWN),
            low: now / 2,
            fixed: self.rate.tokens(self.specs + ENVELOPE),
        });
        self.summarize(client, model, history, budget, reporter)
    }

    /// One line on the window and how full `history` makes it (the REPL's /status).
    pub fn status(&self, history: &[Message]) -> String {
        let used = self.estimate(history);
        let window = match self.window {
            Some(window) => format!(
                "context: about {used} of {window} tokens ({}%; window from {})",
                used * 100 / window.max(1),
                self.source
            ),
            None => format!("context: about {used} tokens; window unknown (set it with --context)"),
        };
        format!(
            "{window}; replies up to {} tokens; {} compaction(s); {:.1} bytes a token",
            self.reply_budget(),
            self.compactions,
            self.rate.bytes_per_token()
        )
    }
}

/// Why a reply was cut short, if it was: the reply budget ran out, or turn stopped a reply
/// that repeated itself.
pub fn cut(reply: &Reply) -> Option<&'static str> {
    match reply.finish_reason.as_deref() {
        Some("length") => Some("the reply was cut off at its token limit (--max-tokens)"),
        Some(REPETITION) => Some("the reply was stopped: it repeated the same lines over and over"),
        _ => None,
    }
}

/// What the model is told of a cut reply: as the result of the call that was cut (`call`),
/// or as a note when it called nothing.
pub fn cut_note(why: &str, call: bool) -> String {
    // "Go on", not "say it again": a model told to say it again may repeat the task instead.
    let (prefix, what, next) = if call {
        (
            "Error: not run. ",
            "this tool call was cut off before it was complete",
            "If you still need it, call it again with shorter arguments",
        )
    } else {
        (
            planner::NOTE,
            "it is not complete",
            "Go on with the task in shorter replies",
        )
    };
    format!(
        "{prefix}Your last reply was cut short ({why}), so {what}. {next}: one tool call at a \
         time, small files or edit_file for parts of large ones, and no repeated lines."
    )
}

/// A record of the calls made, for when the model gives no summary.
fn steps_taken(history: &[Message]) -> String {
    let mut text = String::from("(No summary was written.) The tool calls made so far:");
    for message in history {
        for call in &message.tool_calls {
            let what = tools::describe(&call.function.name, &call.function.arguments);
            text.push_str(&format!("\n- {}: {what}", call.function.name));
        }
    }
    text
}

/// Passes on only notices (retries) and usage, for the summary request: its text is not the
/// model's answer and must not reach stdout.
struct Quiet<'a>(&'a mut dyn Reporter);

impl Reporter for Quiet<'_> {
    fn report(&mut self, event: Event<'_>) {
        if matches!(event, Event::Notice(_) | Event::Usage(_)) {
            self.0.report(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_budgets() {
        let keeper = |window, given| Keeper::new(window, "x", Kind::Unknown, given);
        assert_eq!(keeper(Some(4096), None).reply_budget(), 1024);
        assert_eq!(keeper(Some(131_072), None).reply_budget(), 8192);
        assert_eq!(keeper(None, None).reply_budget(), 4096);
        assert_eq!(keeper(Some(4096), Some(300)).reply_budget(), 300);
        let budget = keeper(Some(4096), None).budget().unwrap();
        assert_eq!(
            (budget.high, budget.low),
            (3072 * 95 / 100, 3072 * 60 / 100)
        );
    }

    #[test]
    fn the_budget_sent_leaves_the_prompt_its_room() {
        let mut keeper = Keeper::new(Some(2000), "x", Kind::Unknown, Some(1000));
        let wire = vec![to_raw_value(&Message::user("u".repeat(3000))).unwrap()];
        let sent = keeper.sending(&wire);
        assert!(
            sent < 1000 && sent + keeper.rate.tokens(keeper.sent) <= 2000,
            "{sent}"
        );
    }

    #[test]
    fn cut_notes_say_why() {
        let reply = Reply {
            finish_reason: Some("length".into()),
            ..Reply::default()
        };
        let why = cut(&reply).unwrap();
        assert!(why.contains("--max-tokens"));
        assert!(cut_note(why, false).starts_with(planner::NOTE));
        assert!(cut_note(why, true).starts_with("Error: not run."));
        assert_eq!(cut(&Reply::default()), None);
    }

    struct Nothing;
    impl Reporter for Nothing {
        fn report(&mut self, _: Event<'_>) {}
    }

    fn usage(prompt_tokens: u64) -> Option<Usage> {
        Some(Usage {
            prompt_tokens,
            completion_tokens: 1,
            cached_tokens: None,
        })
    }

    /// A client that is never asked anything (nothing to probe for an unknown kind).
    fn client() -> Client {
        Client::new("http://127.0.0.1:9/v1", None, 1, None, Default::default()).unwrap()
    }

    #[test]
    fn usage_teaches_the_rate_and_a_silent_cut_is_an_overflow() {
        let client = client();
        let mut keeper = Keeper::new(None, "x", Kind::Unknown, None);
        keeper.sent = 40_000;
        keeper.observe(&client, "m", usage(10_000)).unwrap();
        assert_eq!(
            keeper.rate.tokens(4000),
            1000,
            "4 bytes a token, as counted"
        );
        // The request grew by 10 KB and the count did not move: the server cut it.
        keeper.sent = 50_000;
        match keeper.observe(&client, "m", usage(10_000)) {
            Err(Error::Overflow {
                window: Some(10_000),
                message,
                ..
            }) => assert!(message.contains("OLLAMA_CONTEXT_LENGTH"), "{message}"),
            other => panic!("{other:?}"),
        }
        // Far fewer tokens than bytes allow: a cut too.
        let mut keeper = Keeper::new(None, "x", Kind::Unknown, None);
        keeper.sent = 80_000;
        assert!(keeper.observe(&client, "m", usage(4096)).is_err());
        // Small counts are not taken for windows (an old Ollama counted cache misses only).
        keeper.sent = 80_000;
        keeper.observe(&client, "m", usage(300)).unwrap();
        // With the window known, turn's own planning keeps requests inside it.
        let mut keeper = Keeper::new(Some(8192), "x", Kind::Unknown, None);
        keeper.sent = 80_000;
        keeper.observe(&client, "m", usage(4096)).unwrap();
        // A reply, even one without usage, ends a run of overflows.
        let mut nothing = Nothing;
        for _ in 0..10 {
            keeper
                .overflowed(Some(8192), None, "no", &mut nothing)
                .unwrap();
            keeper.observe(&client, "m", None).unwrap();
        }
    }

    #[test]
    fn overflows_teach_the_window_and_give_up_after_three() {
        let mut nothing = Nothing;
        let mut keeper = Keeper::new(None, "x", Kind::Unknown, None);
        keeper.sent = 30_000; // 10_000 tokens at 3 bytes a token
        keeper
            .overflowed(Some(4096), Some(9000), "too long", &mut nothing)
            .unwrap();
        assert_eq!(keeper.window(), Some(4096));
        assert_eq!(keeper.rate.tokens(30_000), 9000, "the count came with it");
        assert_eq!(keeper.guessed_from, None);
        // No window named: three quarters of what was sent, and the server's words kept.
        let mut keeper = Keeper::new(None, "x", Kind::Unknown, None);
        keeper.sent = 30_000;
        keeper
            .overflowed(None, None, "too long", &mut nothing)
            .unwrap();
        assert_eq!(keeper.window(), Some(7500));
        assert_eq!(keeper.guessed_from.as_deref(), Some("too long"));
        assert!(keeper.too_small(9000).to_string().contains("(too long)"));
        // A window the count says was kept: the count must be too low.
        let mut keeper = Keeper::new(Some(4096), "x", Kind::Unknown, None);
        keeper.sent = 3000;
        keeper
            .overflowed(Some(4096), None, "no", &mut nothing)
            .unwrap();
        assert_eq!(keeper.rate.tokens(3000), 1250, "25% more tokens a byte");
        keeper
            .overflowed(Some(4096), None, "no", &mut nothing)
            .unwrap();
        keeper
            .overflowed(Some(4096), None, "no", &mut nothing)
            .unwrap();
        let error = keeper
            .overflowed(Some(4096), None, "no", &mut nothing)
            .unwrap_err();
        assert!(error
            .to_string()
            .contains("context window of 4096 tokens after 3"));
    }

    #[test]
    fn status_says_the_window_and_the_fill() {
        let history = [Message::system("s"), Message::user("u")];
        let keeper = Keeper::new(Some(4096), "llama-server /props", Kind::LlamaServer, None);
        let status = keeper.status(&history);
        assert!(status.starts_with("context: about "), "{status}");
        assert!(status.contains("of 4096 tokens") && status.contains("llama-server /props"));
        assert!(status.contains("replies up to 1024 tokens"));
        let unknown = Keeper::new(None, "x", Kind::Unknown, None).status(&history);
        assert!(
            unknown.contains("window unknown (set it with --context)"),
            "{unknown}"
        );
    }

    #[test]
    fn an_oversized_result_is_cut_to_its_share() {
        let mut keeper = Keeper::new(Some(4096), "x", Kind::Unknown, None);
        keeper.floor = 800;
        let mut text = "line of output\n".repeat(2000);
        let mut second = text.clone();
        let cut = keeper.fit_result(&mut text, 1);
        assert!(cut > 0);
        let share = keeper.rate.bytes((3072 * 95 / 100 - 800) / 2);
        assert!(serde_json::to_string(&text).unwrap().len() <= share);
        keeper.fit_result(&mut second, 2);
        assert!(
            serde_json::to_string(&second).unwrap().len() <= share / 2,
            "two share it"
        );
        assert!(text.contains("chars elided"), "cut like --max-output cuts");
        let mut small = "ok".to_string();
        assert_eq!(keeper.fit_result(&mut small, 1), 0);
        assert_eq!(small, "ok");
    }
}
