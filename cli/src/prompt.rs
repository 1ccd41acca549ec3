//! Approval prompts at the terminal: one request at a time, in request order, shown on stderr
//! (path, action, justification) and answered on stdin: approve once, approve for the session,
//! or deny. Stdin is read on its own thread, so a prompt left open never holds up the exit.

use std::io::BufRead;
use std::time::Duration;

use arbor_orchestrator::{ApprovalPrompt, TerminalAnswer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::approvals::field;

/// How often an open prompt checks whether its request was decided elsewhere.
const CLOSED_CHECK: Duration = Duration::from_millis(500);

/// Answers prompts from the terminal until the queue closes.
pub fn spawn(mut prompts: mpsc::UnboundedReceiver<ApprovalPrompt>) -> JoinHandle<()> {
    let mut lines = stdin_lines();
    tokio::spawn(async move {
        while let Some(prompt) = prompts.recv().await {
            if !prompt.is_open() {
                continue;
            }
            crate::summary::PROMPT_OPEN.store(true, std::sync::atomic::Ordering::SeqCst);
            crate::summary::clear_line();
            eprint!("{}{CHOICES}", describe(&prompt));
            let answer = loop {
                let line = tokio::select! {
                    line = lines.recv() => line,
                    () = tokio::time::sleep(CLOSED_CHECK) => {
                        if prompt.is_open() {
                            continue;
                        }
                        eprintln!("\nrequest {} no longer waits for an answer", prompt.id);
                        break None;
                    }
                };
                match line {
                    // The terminal is gone: deny, as nobody can approve any more.
                    None => break Some(TerminalAnswer::Deny),
                    Some(line) => match parse(&line) {
                        Some(answer) => break Some(answer),
                        None => eprint!("please answer y, a or n: "),
                    },
                }
            };
            crate::summary::PROMPT_OPEN.store(false, std::sync::atomic::Ordering::SeqCst);
            if let Some(answer) = answer
                && let Err(message) = prompt.answer(answer).await
            {
                eprintln!("{message}");
            }
        }
    })
}

const CHOICES: &str = "approve once [y], approve for this session [a], deny [n]: ";

/// The prompt's text: who asks, what, and why, every value the model or the workspace chose
/// shown as `text::visible_lines` shows it (`\r`, `\x1b`, `\u{202e}`), so what runs is what
/// the user reads.
fn describe(prompt: &ApprovalPrompt) -> String {
    let mut text = format!(
        "\napproval request {} from {}{}\n",
        prompt.id,
        prompt.path,
        if prompt.from_before {
            " (asked before this run; approving lets the identical retry run once)"
        } else {
            ""
        }
    );
    let command = prompt.action["command"].as_str();
    match command {
        Some(command) => text.push_str(&field("command", command)),
        None => text.push_str(&field("action", &prompt.action.to_string())),
    }
    for (label, key) in [
        ("cwd", "cwd"),
        ("permissions", "sandbox_permissions"),
        ("why approval", "approval_reason"),
    ] {
        if let Some(value) = prompt.action[key].as_str() {
            text.push_str(&field(label, value));
        }
    }
    if let Some(justification) = &prompt.justification {
        text.push_str(&field("justification", justification));
    }
    text
}

/// Reads one answer: `y`/`yes`, `a`/`always`/`s`/`session`, `n`/`no`/`d`/`deny`.
fn parse(line: &str) -> Option<TerminalAnswer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "o" | "once" => Some(TerminalAnswer::ApproveOnce),
        "a" | "always" | "s" | "session" => Some(TerminalAnswer::ApproveForSession),
        "n" | "no" | "d" | "deny" => Some(TerminalAnswer::Deny),
        _ => None,
    }
}

/// Lines of stdin, read on a thread of their own; the channel closes at end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("arbor-stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    if let Err(err) = spawned {
        tracing::error!(error = %err, "cannot read the terminal: approvals wait for `arbor approve`");
    }
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        assert_eq!(parse("y\n"), Some(TerminalAnswer::ApproveOnce));
        assert_eq!(parse(" A "), Some(TerminalAnswer::ApproveForSession));
        assert_eq!(parse("no"), Some(TerminalAnswer::Deny));
        assert_eq!(parse("maybe"), None);
    }
}
