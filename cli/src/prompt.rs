//! Approval prompts at the terminal: one request at a time, in request order, shown on stderr
//! (path, action, justification, the files a patch or a merge writes) with the keys that
//! answer it, and answered on stdin: approve once, approve for the session, deny, or `d` to
//! see the diff of a patch or a merge first. The prompt owns the bottom of the terminal while
//! it is open (`screen.rs`), so nothing redrawn erases it. Stdin is read on its own thread, so
//! a prompt left open never holds up the exit.

use std::io::BufRead;
use std::time::Duration;

use arbor_orchestrator::{ApprovalPrompt, TerminalAnswer, action_diff};
use arbor_protocol::AgentPath;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::fields::field;
use crate::screen;

/// How often an open prompt checks whether its request was decided elsewhere.
const CLOSED_CHECK: Duration = Duration::from_millis(500);

/// What a line typed at a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typed {
    Answer(TerminalAnswer),
    ShowDiff,
}

/// Starts answering approval requests at the terminal, when the session has one; says whether
/// it did.
pub fn start(orch: &arbor_orchestrator::Orchestrator) -> bool {
    match orch.take_approval_prompts() {
        Some(prompts) => {
            spawn(prompts);
            true
        }
        None => false,
    }
}

/// Answers prompts from the terminal until the queue closes.
pub fn spawn(mut prompts: mpsc::UnboundedReceiver<ApprovalPrompt>) -> JoinHandle<()> {
    let mut lines = stdin_lines();
    tokio::spawn(async move {
        while let Some(prompt) = prompts.recv().await {
            if !prompt.is_open() {
                continue;
            }
            let diff = action_diff(&prompt.action).map(str::to_string);
            let keys = choices(diff.is_some());
            let text = describe(
                &prompt.id,
                &prompt.path,
                &prompt.action,
                prompt.justification.as_deref(),
            );
            let before = if prompt.from_before {
                "  (asked before this run; approving lets the identical retry run once)\n"
            } else {
                ""
            };
            screen::open_prompt(&format!("\n{text}{before}{keys}"));
            let answer = loop {
                let line = tokio::select! {
                    line = lines.recv() => line,
                    () = tokio::time::sleep(CLOSED_CHECK) => {
                        if prompt.is_open() {
                            continue;
                        }
                        screen::prompt_more(&format!(
                            "\nrequest {} no longer waits for an answer\n",
                            prompt.id
                        ));
                        break None;
                    }
                };
                match line {
                    // The terminal is gone: deny, as nobody can approve any more.
                    None => break Some(TerminalAnswer::Deny),
                    Some(line) => match parse(&line, diff.is_some()) {
                        Some(Typed::Answer(answer)) => break Some(answer),
                        Some(Typed::ShowDiff) => {
                            let diff = diff.as_deref().unwrap_or_default();
                            let diff = arbor_protocol::text::visible_lines(diff.trim_end(), "");
                            screen::prompt_more(&format!("{diff}\n{keys}"));
                        }
                        None => screen::prompt_more(&format!("please answer: {keys}")),
                    },
                }
            };
            screen::close_prompt();
            if let Some(answer) = answer
                && let Err(message) = prompt.answer(answer).await
            {
                screen::line(&message);
            }
        }
    })
}

/// The keys of a prompt, said in full.
fn choices(has_diff: bool) -> String {
    let diff = if has_diff { ", show the diff [d]" } else { "" };
    format!("approve once [y], approve for this session [a], deny [n]{diff}: ")
}

/// A request as a person reads it: who asks, what, where, why, and (for a patch or a merge)
/// which files it writes. Every line ends with a newline; nothing is cut. Every value the model
/// or the workspace chose is shown as `text::visible_lines` shows it (`\r`, `\x1b`,
/// `\u{202e}`), so what runs is what the user reads.
pub fn describe(id: &str, path: &AgentPath, action: &Value, justification: Option<&str>) -> String {
    let mut text = format!("approval request {id} from {path}\n");
    match action["command"].as_str() {
        Some(command) => text.push_str(&field("command", command)),
        None => text.push_str(&field("action", &action.to_string())),
    }
    for (label, key) in [
        ("cwd", "cwd"),
        ("permissions", "sandbox_permissions"),
        ("why approval", "approval_reason"),
    ] {
        if let Some(value) = action[key].as_str() {
            text.push_str(&field(label, value));
        }
    }
    if let Some(paths) = action["paths"].as_array() {
        let paths: Vec<&str> = paths.iter().filter_map(Value::as_str).collect();
        if !paths.is_empty() {
            text.push_str(&field("writes", &paths.join(", ")));
        }
    }
    if let Some(justification) = justification {
        text.push_str(&field("justification", justification));
    }
    text
}

/// Reads one line: `y`/`yes`, `a`/`always`/`s`/`session`, `n`/`no`/`deny`, and `d`/`diff`
/// when there is a diff to show.
fn parse(line: &str, has_diff: bool) -> Option<Typed> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "o" | "once" => Some(Typed::Answer(TerminalAnswer::ApproveOnce)),
        "a" | "always" | "s" | "session" => Some(Typed::Answer(TerminalAnswer::ApproveForSession)),
        "n" | "no" | "deny" => Some(Typed::Answer(TerminalAnswer::Deny)),
        "d" | "diff" if has_diff => Some(Typed::ShowDiff),
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
    use serde_json::json;

    #[test]
    fn answers_parse() {
        let answer = |a| Some(Typed::Answer(a));
        assert_eq!(parse("y\n", false), answer(TerminalAnswer::ApproveOnce));
        assert_eq!(
            parse(" A ", false),
            answer(TerminalAnswer::ApproveForSession)
        );
        assert_eq!(parse("no", false), answer(TerminalAnswer::Deny));
        assert_eq!(parse("d", true), Some(Typed::ShowDiff));
        assert_eq!(parse("d", false), None, "no diff to show");
        assert_eq!(parse("maybe", true), None);
    }

    #[test]
    fn a_request_is_described_whole_with_the_files_it_writes() {
        let action = json!({"tool": "apply_patch", "command": "apply_patch a.txt b.txt",
            "paths": ["a.txt", "b.txt"], "patch": "*** Begin Patch\n", "cwd": "/w",
            "approval_reason": "approval policy untrusted"});
        let path = AgentPath::parse("/root/w").expect("path");
        assert_eq!(
            describe("r1", &path, &action, Some("tidy up")),
            "approval request r1 from /root/w\n  command: apply_patch a.txt b.txt\n  cwd: /w\n  \
             why approval: approval policy untrusted\n  writes: a.txt, b.txt\n  justification: \
             tidy up\n"
        );
        assert_eq!(
            choices(true),
            "approve once [y], approve for this session [a], deny [n], show the diff [d]: "
        );
    }
}
