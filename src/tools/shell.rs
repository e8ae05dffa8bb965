//! The `bash` tool: screens the command, asks for approval where --approve says so, runs it
//! through `sandbox::exec`, and turns how it ended into the text the model reads. Declared
//! tools run their command lines through the same `run_line`.

use super::{Context, Output};
use crate::approve::{Action, Approver};
use crate::sandbox;
use crate::sandbox::exec::End;
use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct BashArgs {
    command: String,
}

pub(super) fn bash(
    args: BashArgs,
    ctx: &Context,
    approver: &mut Approver,
) -> Result<Output, String> {
    let danger = sandbox::check_command(&args.command, ctx.workspace).err();
    approver.check(Action::Command {
        command: &args.command,
        danger: danger.as_deref(),
    })?;
    run_line(&args.command, ctx)
}

/// Runs a shell line (a `bash` command, or a declared tool's) in the sandbox, and says how it
/// ended in the text the model reads.
pub(super) fn run_line(command: &str, ctx: &Context) -> Result<Output, String> {
    let outcome = ctx
        .sandbox
        .run(command, ctx.timeout, ctx.max_output)
        .map_err(|e| format!("could not run the command: {e}"))?;
    let mut text = outcome.output;
    let note = match outcome.end {
        End::Exited(0) => None,
        End::Exited(code) => Some(format!("[exit code {code}]")),
        End::Signaled(sig) => Some(format!("[killed by signal {sig}]")),
        End::TimedOut => Some(format!(
            "[timed out after {}s; the command and its process group were killed]",
            ctx.timeout.as_secs()
        )),
        End::TooMuchOutput => {
            Some("[stopped: the command wrote more than 256 MiB of output]".into())
        }
        End::Interrupted => Some("[interrupted by the user; the command was killed]".into()),
    };
    let ok = note.is_none();
    if let Some(note) = note {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
    } else if text.is_empty() {
        text.push_str("(no output)");
    }
    Ok(Output {
        ok,
        text,
        elided: outcome.elided,
    })
}
