//! Following a Restate session's events: every page of the `Session` object's `events`
//! handler from event `from` on, printed as it comes (JSON Lines with `--json`, progress on
//! stderr otherwise, with how to answer each approval request), until the run completes or the
//! tree is quiescent. While the server is
//! unreachable (a restart) it keeps asking, for up to two minutes; the tree itself survives.

use std::time::{Duration, Instant};

use arbor_restate::Ingress;
use arbor_restate::wire::EventsPage;

use crate::error::CliError;
use crate::output::{Mode, print};

/// How often the session's events are read while nothing new came.
const POLL: Duration = Duration::from_millis(50);

/// How long the server may be unreachable (restarting) before the command gives up.
const OUTAGE: Duration = Duration::from_secs(120);

/// When following stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The root's run is over and the tree quiescent (`exec`, `resume PROMPT`).
    Completed,
    /// No agent has an active or owed turn (`followup`).
    Quiescent,
}

/// Prints the session's events from number `from` on until `until`; returns the last page.
pub async fn follow(
    ingress: &Ingress,
    session: &str,
    from: u64,
    mode: Mode,
    until: Until,
) -> Result<EventsPage, CliError> {
    let mut next = from;
    let mut reached = Instant::now();
    loop {
        let page = match ingress.events(session, next).await {
            Ok(page) => {
                reached = Instant::now();
                page
            }
            // The tree lives in the server: while it restarts, keep asking.
            Err(err) if transient(&err) && reached.elapsed() < OUTAGE => {
                tokio::time::sleep(POLL * 4).await;
                continue;
            }
            Err(err) => return Err(super::failed(err)),
        };
        let fresh = !page.events.is_empty();
        for line in &page.events {
            if mode == Mode::Json
                || !matches!(line.event, arbor_protocol::Event::SessionStarted { .. })
            {
                print(mode, line);
            }
            // Nothing answers at this terminal: say how to answer from any.
            if mode == Mode::Human
                && let arbor_protocol::Event::ApprovalRequested { id, .. } = &line.event
            {
                eprintln!("  answer with: arbor approve|deny {session} {id} --engine restate");
            }
        }
        next = page.next;
        let done = match until {
            Until::Completed => page.completed,
            Until::Quiescent => page.quiescent,
        };
        if done {
            return Ok(page);
        }
        if !fresh {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A failure that a restarting server gives: no connection, or an unavailable answer.
fn transient(error: &arbor_restate::RestateError) -> bool {
    match error {
        arbor_restate::RestateError::Unreachable { .. } => true,
        arbor_restate::RestateError::Status { status, .. } => *status >= 500,
        _ => false,
    }
}

/// After a run: prints the root's answer (human mode) and returns the exit code, 0 when the
/// root's last turn completed.
pub fn finish_run(page: &EventsPage, mode: Mode) -> u8 {
    if mode == Mode::Human
        && let Some(answer) = &page.final_message
    {
        println!("{}", crate::output::answer(answer));
    }
    match &page.root_status {
        Some(arbor_protocol::AgentStatus::Completed(_)) => 0,
        status => {
            let status = status
                .as_ref()
                .map_or_else(|| "unknown".to_string(), ToString::to_string);
            eprintln!("root: {status}");
            1
        }
    }
}
