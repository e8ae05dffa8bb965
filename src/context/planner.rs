//! What the history keeps when it must shrink to fit the context window: which old tool results
//! become one-line stubs, and, when that is not enough, which recent messages stay beside a
//! handoff summary. Also the transcript the summary is written from.
//!
//! Pure: messages and their sizes in tokens in, a plan or a new history out. The history it is
//! given has passed `normalize` (every call answered, results right after their call); what it
//! returns passes it too. It always keeps the system prompt and the user's own messages, never
//! separates a call from its result, and either fits the budget or says it cannot.

use crate::tools::truncate;
use crate::wire::message::{normalize, Message, Role};

/// Where a history must land, in tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Over this, the history must shrink before it is sent.
    pub high: u64,
    /// Shrinking aims here, in one batch, so the next compaction is some steps away and the
    /// server's prompt cache keeps working in between.
    pub low: u64,
    /// What every request carries besides the messages (the tool specs).
    pub fixed: u64,
}

#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Under the high-water mark: send as it is.
    Fits,
    /// Stub these tool results (indices, oldest first); the total becomes `after`.
    Elide { results: Vec<usize>, after: u64 },
    /// Stubbing every old result is not enough: the work so far must be summarized.
    Summarize,
    /// The system prompt, the tool specs and the user's messages alone need `need` tokens.
    CannotFit { need: u64 },
}

/// How messages turn writes itself (not the user) begin: summaries and notes to the model.
pub const NOTE: &str = "[turn] ";
/// How a stubbed tool result begins.
const STUB: &str = "[elided to fit the context window: ";

/// The text an old tool result is replaced with.
pub fn stub(chars: usize) -> String {
    format!("{STUB}{chars} chars of output were cut here; run the call again if you need them]")
}

/// Whether a tool result is a stub already.
pub fn is_stub(message: &Message) -> bool {
    message.role == Role::Tool && text(message).starts_with(STUB)
}

/// Whether this is one of the user's own messages (not a note turn added).
pub fn is_users(message: &Message) -> bool {
    message.role == Role::User && !text(message).starts_with(NOTE)
}

fn text(message: &Message) -> &str {
    message.content.as_deref().unwrap_or_default()
}

/// What must stay whatever happens: the tool specs, the system prompt and the user's messages.
pub fn floor(history: &[Message], sizes: &[u64], fixed: u64) -> u64 {
    let kept = history
        .iter()
        .zip(sizes)
        .filter(|(m, _)| m.role == Role::System || is_users(m))
        .map(|(_, size)| size);
    fixed + kept.sum::<u64>()
}

/// The tool results that may be stubbed, oldest first: not stubs already, larger than their
/// stub, and not the results of the latest call (the model is working with those).
fn elidable<'a>(
    history: &'a [Message],
    sizes: &'a [u64],
    stubbed: &'a dyn Fn(usize) -> u64,
) -> impl Iterator<Item = usize> + 'a {
    let latest = history
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .unwrap_or(0);
    (0..latest).filter(move |&i| {
        history[i].role == Role::Tool && !is_stub(&history[i]) && sizes[i] > stubbed(i)
    })
}

/// What to do so that `history` (message sizes in `sizes`) fits `budget`. `stubbed(i)` is the
/// size message `i` would have as a stub.
pub fn plan(
    history: &[Message],
    sizes: &[u64],
    stubbed: &dyn Fn(usize) -> u64,
    budget: &Budget,
) -> Plan {
    let total = budget.fixed + sizes.iter().sum::<u64>();
    if total <= budget.high {
        return Plan::Fits;
    }
    let need = floor(history, sizes, budget.fixed);
    if need > budget.high {
        return Plan::CannotFit { need };
    }
    let mut after = total;
    let mut results = Vec::new();
    for i in elidable(history, sizes, stubbed) {
        if after <= budget.low {
            break;
        }
        after -= sizes[i] - stubbed(i);
        results.push(i);
    }
    if after <= budget.high {
        Plan::Elide { results, after }
    } else {
        Plan::Summarize
    }
}

/// Replaces the content of the tool results at `which` with stubs.
pub fn elide(history: &mut [Message], which: &[usize]) {
    for &i in which {
        let chars = text(&history[i]).chars().count();
        history[i].content = Some(stub(chars));
    }
}

/// Every tool result `plan` could stub, for a compaction that goes all the way.
pub fn all_elidable(
    history: &[Message],
    sizes: &[u64],
    stubbed: &dyn Fn(usize) -> u64,
) -> Vec<usize> {
    elidable(history, sizes, stubbed).collect()
}

/// After a summary of `summary` tokens: the index from which recent messages are kept, chosen
/// so the new history stays at or under the low-water mark (under the high one with no recent
/// messages at all, if that is the best there is). `None` when even that does not fit.
pub fn tail(history: &[Message], sizes: &[u64], summary: u64, budget: &Budget) -> Option<usize> {
    let mut need = floor(history, sizes, budget.fixed) + summary;
    // Walking back from the end: a kept message adds its size, except the system prompt and
    // the user's messages, which are counted already.
    let mut best = None;
    for i in (1..=history.len()).rev() {
        if i < history.len() {
            let m = &history[i];
            if m.role != Role::System && !is_users(m) {
                need += sizes[i];
            }
        }
        let starts_well = i == history.len() || history[i].role != Role::Tool;
        if starts_well && need <= budget.low {
            best = Some(i);
        }
        if need > budget.low {
            break;
        }
    }
    let empty = floor(history, sizes, budget.fixed) + summary;
    best.or((empty <= budget.high).then_some(history.len()))
}

/// The history after a summary: the system prompt, the user's messages before `keep_from` in
/// their order, the summary, then every message from `keep_from` on.
pub fn rebuild(history: &[Message], keep_from: usize, summary: Message) -> Vec<Message> {
    let before = history[..keep_from.min(history.len())]
        .iter()
        .filter(|m| m.role == Role::System || is_users(m));
    let mut out: Vec<Message> = before.cloned().collect();
    out.push(summary);
    out.extend(history[keep_from.min(history.len())..].iter().cloned());
    // The user's messages that were apart may now stand next to each other: normalization
    // joins them (templates refuse two in a row), their words kept.
    normalize(&mut out);
    out
}

/// The summary as the message that stands for the work it covers. It is the assistant's (a
/// handoff note to itself): as a user message, normalization would join it to the user's task
/// before it (templates refuse two user messages in a row), and the next compaction would keep
/// it as the user's own words, summaries piling up.
pub fn summary_message(text: &str) -> Message {
    Message::assistant(
        Some(format!(
        "{NOTE}The conversation so far was compacted to fit the context window. Summary of the \
         work up to here, for you to continue from:\n\n{}",
        text.trim()
    )),
        Vec::new(),
    )
}

/// The most one tool result may keep of a transcript, and one call's arguments.
const TRANSCRIPT_RESULT: usize = 1500;
const TRANSCRIPT_ARGUMENTS: usize = 600;

/// The history as plain text for the summary request, at most `max` bytes: every message
/// (long results and arguments cut), and when that is too long, the oldest steps left out
/// before any of the user's messages are.
pub fn transcript(history: &[Message], max: usize) -> String {
    let cut = |text: &str, max: usize| truncate::middle(text, max).text;
    let mut entries: Vec<(bool, String)> = Vec::new();
    for message in history {
        let body = text(message);
        match message.role {
            Role::System => continue,
            Role::User if is_users(message) => entries.push((true, format!("## User\n{body}"))),
            Role::User => entries.push((false, format!("## Note\n{body}"))),
            Role::Assistant => {
                let mut entry = String::from("## Assistant");
                if !body.trim().is_empty() {
                    entry.push('\n');
                    entry.push_str(&cut(body.trim(), TRANSCRIPT_RESULT));
                }
                for call in &message.tool_calls {
                    let args = cut(&call.function.arguments, TRANSCRIPT_ARGUMENTS);
                    entry.push_str(&format!("\ncalls {} {args}", call.function.name));
                }
                entries.push((false, entry));
            }
            Role::Tool => {
                let result = cut(body, TRANSCRIPT_RESULT);
                entries.push((false, format!("## Result\n{result}")));
            }
        }
    }
    let size = |entries: &[(bool, String)]| entries.iter().map(|(_, e)| e.len() + 2).sum::<usize>();
    let mut left_out = 0;
    while size(&entries) > max {
        let Some(oldest) = entries.iter().position(|(users, _)| !users) else {
            break;
        };
        entries.remove(oldest);
        left_out += 1;
    }
    let mut text: Vec<String> = entries.into_iter().map(|(_, e)| e).collect();
    if left_out > 0 {
        let at = text
            .iter()
            .position(|e| !e.starts_with("## User"))
            .unwrap_or(0);
        text.insert(at, format!("[... {left_out} earlier entries left out ...]"));
    }
    let text = text.join("\n\n");
    if text.len() > max {
        // Only the user's own messages are left, and they are too long: keep head and tail.
        return cut(&text, max / 4);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::{check, ToolCall};

    fn asks(ids: &[&str]) -> Message {
        Message::assistant(
            None,
            ids.iter()
                .map(|id| ToolCall::new(*id, "bash", "{}"))
                .collect(),
        )
    }

    fn result(id: &str, len: usize) -> Message {
        Message::tool(id, "x".repeat(len))
    }

    /// Sizes as the tests count them: a token per 4 chars of content, plus 4.
    fn sizes(history: &[Message]) -> Vec<u64> {
        history
            .iter()
            .map(|m| 4 + text(m).len() as u64 / 4)
            .collect()
    }

    fn stubbed(history: &[Message]) -> impl Fn(usize) -> u64 + '_ {
        move |i| {
            let chars = text(&history[i]).chars().count();
            4 + stub(chars).len() as u64 / 4
        }
    }

    fn total(history: &[Message], fixed: u64) -> u64 {
        fixed + sizes(history).iter().sum::<u64>()
    }

    fn plan_of(history: &[Message], budget: &Budget) -> Plan {
        plan(history, &sizes(history), &stubbed(history), budget)
    }

    /// A task of `steps` calls, each with a result of `len` chars.
    fn task(steps: usize, len: usize) -> Vec<Message> {
        let mut history = vec![Message::system("sys"), Message::user("the task")];
        for i in 0..steps {
            let id = format!("c{i}");
            history.push(asks(&[&id]));
            history.push(result(&id, len));
        }
        history
    }

    const BUDGET: Budget = Budget {
        high: 1000,
        low: 600,
        fixed: 100,
    };

    #[test]
    fn a_small_history_fits() {
        assert_eq!(plan_of(&task(2, 100), &BUDGET), Plan::Fits);
    }

    #[test]
    fn old_results_are_elided_oldest_first_down_to_the_low_mark() {
        let history = task(9, 400); // 9 results of 104 tokens: over 1000 with the rest
        let before = total(&history, 100);
        assert!(before > BUDGET.high, "{before}");
        let Plan::Elide { results, after } = plan_of(&history, &BUDGET) else {
            panic!("{:?}", plan_of(&history, &BUDGET))
        };
        assert_eq!(results[0], 3, "the oldest result goes first");
        assert!(results.windows(2).all(|w| w[0] < w[1]));
        assert!(after <= BUDGET.low, "{after}");
        let mut elided = history.clone();
        elide(&mut elided, &results);
        assert_eq!(total(&elided, 100), after);
        assert!(is_stub(&elided[3]));
        assert_eq!(
            elided[3].content.as_deref(),
            Some(stub(400).as_str()),
            "the stub says how much was cut"
        );
        assert_eq!(plan_of(&elided, &BUDGET), Plan::Fits);
    }

    #[test]
    fn the_latest_results_are_never_elided() {
        let mut history = task(1, 40);
        history.push(asks(&["a", "b"]));
        history.push(result("a", 3000));
        history.push(result("b", 3000));
        let plan = plan_of(&history, &BUDGET);
        assert_eq!(plan, Plan::Summarize, "only the latest results are large");
    }

    #[test]
    fn too_little_room_for_the_users_messages_cannot_fit() {
        let history = vec![Message::system("s"), Message::user("u".repeat(4000))];
        assert_eq!(
            plan_of(&history, &BUDGET),
            Plan::CannotFit {
                need: 100 + 4 + 4 + 1000
            }
        );
    }

    #[test]
    fn a_summary_keeps_the_users_messages_and_the_recent_steps_that_fit() {
        let mut history = task(12, 400);
        history.push(Message::user("and then this"));
        history.push(asks(&["z"]));
        history.push(result("z", 100));
        let summary = summary_message("did things");
        let summary_size = sizes(std::slice::from_ref(&summary))[0];
        let keep = tail(&history, &sizes(&history), summary_size, &BUDGET).unwrap();
        let rebuilt = rebuild(&history, keep, summary);
        check(&rebuilt).unwrap();
        assert_eq!(rebuilt[0].role, Role::System);
        assert_eq!(text(&rebuilt[1]), "the task");
        assert!(text(&rebuilt[2]).starts_with(NOTE), "then the summary");
        let users: Vec<&str> = rebuilt.iter().filter(|m| is_users(m)).map(text).collect();
        assert_eq!(users, ["the task", "and then this"]);
        assert!(total(&rebuilt, 100) <= BUDGET.low);
        assert!(rebuilt.len() < history.len());
        assert_eq!(rebuilt.last(), history.last(), "the latest step stays");
    }

    #[test]
    fn transcripts_leave_out_old_steps_before_the_users_words() {
        let mut history = task(30, 2000);
        history.push(Message::user("second request"));
        let text = transcript(&history, 6000);
        assert!(text.len() <= 6000, "{}", text.len());
        assert!(text.starts_with("## User\nthe task"), "{text:.100}");
        assert!(text.contains("earlier entries left out"));
        assert!(text.ends_with("## User\nsecond request"));
        let whole = transcript(&task(2, 10), 10_000);
        assert_eq!(
            whole,
            "## User\nthe task\n\n## Assistant\ncalls bash {}\n\n## Result\nxxxxxxxxxx\n\n\
             ## Assistant\ncalls bash {}\n\n## Result\nxxxxxxxxxx"
        );
    }

    /// Random normalized histories and budgets: whatever the plan, applying it (with a summary
    /// of random size) gives a valid history that keeps the system prompt and the user's
    /// messages verbatim and fits the budget, or the plan says it cannot; and planning the
    /// result again finds nothing to do.
    #[test]
    fn plans_keep_histories_valid_and_are_stable() {
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        for round in 0..3000 {
            let mut history = vec![Message::system("s".repeat(next(400) as usize))];
            let mut id = 0;
            for _ in 0..next(30) {
                match next(7) {
                    0 | 1 => history.push(Message::user("u".repeat(1 + next(300) as usize))),
                    2 => history.push(Message::assistant(
                        Some("t".repeat(1 + next(200) as usize)),
                        vec![],
                    )),
                    3 => history.push(summary_message(&"s".repeat(next(300) as usize))),
                    _ => {
                        let n = 1 + next(3) as usize;
                        let ids: Vec<String> = (0..n).map(|k| format!("c{id}_{k}")).collect();
                        id += 1;
                        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                        history.push(asks(&refs));
                        for call in &ids {
                            let mut r = result(call, next(3000) as usize);
                            if next(5) == 0 {
                                r.content = Some(stub(99));
                            }
                            history.push(r);
                        }
                    }
                }
            }
            normalize(&mut history);
            let high = 50 + next(1500);
            let budget = Budget {
                high,
                low: high * (40 + next(60)) / 100,
                fixed: next(100),
            };
            let users: Vec<Message> = history.iter().filter(|m| is_users(m)).cloned().collect();
            let shown = format!("round {round}, {budget:?}, {} messages", history.len());
            let new = match plan_of(&history, &budget) {
                Plan::Fits => {
                    assert!(total(&history, budget.fixed) <= budget.high, "{shown}");
                    continue;
                }
                Plan::CannotFit { need } => {
                    assert!(need > budget.high, "{shown}");
                    assert_eq!(need, floor(&history, &sizes(&history), budget.fixed));
                    continue;
                }
                Plan::Elide { results, after } => {
                    let mut new = history.clone();
                    elide(&mut new, &results);
                    assert_eq!(total(&new, budget.fixed), after, "{shown}");
                    new
                }
                Plan::Summarize => {
                    let mut new = history.clone();
                    let all = all_elidable(&new, &sizes(&new), &stubbed(&new));
                    elide(&mut new, &all);
                    let summary = summary_message(&"w".repeat(next(200) as usize));
                    let summary_size = sizes(std::slice::from_ref(&summary))[0];
                    match tail(&new, &sizes(&new), summary_size, &budget) {
                        Some(keep) => rebuild(&new, keep, summary),
                        None => {
                            let floor = floor(&new, &sizes(&new), budget.fixed);
                            assert!(floor + summary_size > budget.high, "{shown}");
                            continue;
                        }
                    }
                }
            };
            check(&new).unwrap_or_else(|why| panic!("{why}: {shown}"));
            assert!(
                total(&new, budget.fixed) <= budget.high,
                "{shown}: {} over",
                total(&new, budget.fixed)
            );
            assert_eq!(new[0], history[0], "the system prompt stays: {shown}");
            // Verbatim, though user messages that end up side by side are joined into one.
            let words = |list: &[Message]| {
                list.iter()
                    .filter(|m| is_users(m))
                    .map(|m| text(m).to_string())
                    .collect::<Vec<_>>()
                    .join("\n\n")
            };
            assert_eq!(
                words(&new),
                words(&users),
                "the user's messages stay: {shown}"
            );
            assert_eq!(
                plan_of(&new, &budget),
                Plan::Fits,
                "planning again: {shown}"
            );
            let mut again = new.clone();
            assert!(!normalize(&mut again), "the result is normalized: {shown}");
        }
    }
}
