//! Times `message::normalize` on histories of 1k, 10k and 100k messages, to show it stays
//! linear. Built by `cargo bench --bench normalize` (harness-free); prints one JSON line per size.

#[allow(dead_code)]
#[path = "../src/wire/message.rs"]
mod message;

use message::{normalize, Message, ToolCall};
use std::time::Instant;

/// Ids as OpenAI makes them: `call_` and 24 characters, whatever the history's length.
fn id(n: u64, i: u64) -> String {
    format!("call_{n:020}{i:04}")
}

/// A realistic mix: prompts, answers, calls of one to three tools with their results, and now
/// and then an interrupted call (which normalization has to drop).
fn history(len: usize) -> Vec<Message> {
    let mut out = vec![Message::system("system prompt")];
    let mut n = 0u64;
    while out.len() < len {
        n += 1;
        match n % 7 {
            0 => out.push(Message::user("next task")),
            3 => out.push(Message::assistant(Some("thinking out loud".into()), vec![])),
            5 => out.push(Message::assistant(
                None,
                vec![ToolCall::new(id(n, 9), "bash", "{}")],
            )),
            k => {
                let calls: Vec<ToolCall> = (0..=k % 3)
                    .map(|i| ToolCall::new(id(n, i), "bash", r#"{"command":"ls"}"#))
                    .collect();
                let results: Vec<Message> = calls
                    .iter()
                    .rev()
                    .map(|c| Message::tool(c.id.clone(), "output\n".repeat(4)))
                    .collect();
                out.push(Message::assistant(None, calls));
                out.extend(results);
            }
        }
    }
    out.truncate(len);
    out
}

/// Kept out of line so callgrind can count exactly this (`--toggle-collect='*measured*'`).
#[inline(never)]
fn measured(mut history: Vec<Message>) -> Vec<Message> {
    normalize(&mut history);
    history
}

fn main() {
    // `--once N`: normalize one history of N messages, for counting instructions under
    // callgrind, which no cache or clock can blur.
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--once") {
        let size = args
            .get(at + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        println!("{}", measured(history(size)).len());
        return;
    }
    for size in [1_000, 10_000, 100_000] {
        let input = history(size);
        let reps = (2_000_000 / size).clamp(5, 200);
        let mut times = Vec::with_capacity(reps);
        let mut kept = 0;
        for _ in 0..reps {
            let copy = input.clone();
            let start = Instant::now();
            let out = measured(copy);
            times.push(start.elapsed().as_nanos() as f64);
            kept = out.len();
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let median = times[times.len() / 2];
        println!(
            "{{\"messages\": {size}, \"kept\": {kept}, \"median_us\": {:.1}, \"ns_per_message\": {:.1}}}",
            median / 1000.0,
            median / size as f64
        );
    }
}
