//! `arbor approvals` (the audit of every request and decision), `arbor approve` and
//! `arbor deny` (a human's answer from another process, for a live or stopped session).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use arbor_agent_graph::{ApprovalOverride, ApprovalRecord};
use arbor_orchestrator::{OrchestratorError, answer_external};
use serde_json::{Value, json};

use crate::args::{AnswerArgs, ReadArgs};
use crate::error::CliError;
use crate::fields::{command_of, field};

fn row(record: &ApprovalRecord, overridden: Option<&ApprovalOverride>) -> Value {
    json!({
        "id": record.id,
        "path": record.requester,
        "action": record.action,
        "outcome": record.outcome.as_str(),
        "decided_by": record.decided_by.map(|by| by.as_str()),
        "risk_level": record.risk_level,
        "rationale": record.rationale,
        "requested_at": record.requested_at,
        "decided_at": record.decided_at,
        "justification": record.justification,
        "tokens": record.tokens,
        "override": overridden.map(|o| json!({
            "granted_at": o.granted_at,
            "used_by": o.used_by,
            "used_at": o.used_at,
        })),
    })
}

/// `arbor approvals <SESSION> [--json]`: every request of the session, in request order (the
/// store's view with the session log's later lines applied, like every read).
pub fn list(home: &Path, args: &ReadArgs) -> Result<(), CliError> {
    crate::store::open_store(home)?;
    let view = arbor_orchestrator::SessionView::open(home, &args.session)?;
    let records = &view.state.approvals;
    let overrides: HashMap<String, &ApprovalOverride> = view
        .state
        .overrides
        .iter()
        .map(|o| (o.request_id.clone(), o))
        .collect();
    if args.json {
        let rows: Vec<Value> = records
            .iter()
            .map(|record| row(record, overrides.get(&record.id).copied()))
            .collect();
        let mut stdout = std::io::stdout().lock();
        return crate::output::out(writeln!(stdout, "{}", Value::Array(rows)));
    }
    if records.is_empty() {
        let (id, handle) = (view.root.id(), view.root.meta.handle.as_deref());
        let label = crate::output::session_label(id, handle);
        eprintln!("no approval requests in session {label}");
    }
    for record in records {
        let decided = match record.decided_by {
            Some(by) => format!("{} by {by}", record.outcome),
            None => record.outcome.to_string(),
        };
        let risk = record
            .risk_level
            .as_deref()
            .map_or_else(String::new, |risk| format!(" (risk {risk})"));
        let header = format!(
            "{}  {}  {}  {decided}{risk}",
            record.id, record.requested_at, record.requester
        );
        println!("{}", arbor_protocol::text::visible(&header));
        print!("{}", field("command", &command_of(&record.action)));
        if let Some(justification) = &record.justification {
            print!("{}", field("justification", justification));
        }
        if let Some(rationale) = &record.rationale {
            print!("{}", field("rationale", rationale));
        }
        if let Some(o) = overrides.get(&record.id) {
            match &o.used_by {
                Some(used_by) => println!("  override: used by request {used_by}"),
                None => println!("  override: the identical retry runs once"),
            }
        }
    }
    Ok(())
}

/// `arbor approve|deny <SESSION> <REQUEST_ID>`.
pub fn answer(home: &Path, args: &AnswerArgs, approve: bool) -> Result<u8, CliError> {
    crate::outside::ensure_outside_sandbox(home, "answer approval requests")?;
    crate::store::open_store(home)?;
    let answered = answer_external(home, &args.session, &args.request_id, approve).map_err(
        |err| match err {
            OrchestratorError::Refused(message) => CliError::usage(message),
            // What failed underneath a request from outside: the store or the log.
            other @ (OrchestratorError::Store(_) | OrchestratorError::Log(_)) => {
                CliError::failed(other.to_string())
            }
            other => other.into(),
        },
    )?;
    let record = &answered.record;
    let verb = if approve { "approved" } else { "denied" };
    let what = match (answered.decided, answered.override_granted) {
        (true, true) => format!(
            "{verb} request {} of {}; if it no longer waits, its identical retry runs once",
            record.id, record.requester
        ),
        (false, true) => format!(
            "override: the identical retry of request {} by {} runs once",
            record.id, record.requester
        ),
        _ => format!("{verb} request {} of {}", record.id, record.requester),
    };
    println!("{what}");
    Ok(0)
}
