//! `arbor approvals`, `arbor approve` and `arbor deny` with `--engine restate`: the `Session`
//! object's requests, listed and answered with the local engine's outputs and errors.

use std::io::Write;
use std::path::Path;

use arbor_restate::Ingress;
use arbor_restate::wire::ApprovalRow;

use crate::args::{AnswerArgs, ReadArgs};
use crate::error::CliError;
use crate::fields::{command_of, field};
use crate::output::out;

/// `arbor approvals SESSION --engine restate [--json]`: every request, in request order.
pub async fn approvals(args: &ReadArgs) -> Result<(), CliError> {
    let url = args.engine.url();
    let ingress = Ingress::new(&url).map_err(super::failed)?;
    let rows = ingress
        .approvals(&args.session)
        .await
        .map_err(super::call_failed(&url, &args.session))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let text = serde_json::to_string(&rows).map_err(|err| CliError::failed(err.to_string()))?;
        return out(writeln!(stdout, "{text}"));
    }
    if rows.is_empty() {
        eprintln!("no approval requests in session {}", args.session);
    }
    for row in &rows {
        out(write!(stdout, "{}", describe(row)))?;
    }
    Ok(())
}

/// One request as the local engine prints it.
fn describe(row: &ApprovalRow) -> String {
    let decided = match &row.decided_by {
        Some(by) => format!("{} by {by}", row.outcome),
        None => row.outcome.clone(),
    };
    let risk = row
        .risk_level
        .as_deref()
        .map_or_else(String::new, |risk| format!(" (risk {risk})"));
    let header = format!(
        "{}  {}  {}  {decided}{risk}",
        row.id, row.requested_at, row.path
    );
    let mut text = format!("{}\n", arbor_protocol::text::visible(&header));
    text.push_str(&field("command", &command_of(&row.action)));
    if let Some(justification) = &row.justification {
        text.push_str(&field("justification", justification));
    }
    if let Some(rationale) = &row.rationale {
        text.push_str(&field("rationale", rationale));
    }
    if let Some(grant) = &row.grant {
        match &grant.used_by {
            Some(used_by) => text.push_str(&format!("  override: used by request {used_by}\n")),
            None => text.push_str("  override: the identical retry runs once\n"),
        }
    }
    text
}

/// `arbor approve|deny SESSION ID --engine restate`: the session decides the request (its
/// waiting turn goes on at once) or, after a denial, lets the identical retry through once.
pub async fn answer(home: &Path, args: &AnswerArgs, approve: bool) -> Result<u8, CliError> {
    crate::outside::ensure_outside_sandbox(home, "answer approval requests")?;
    let url = args.engine.url();
    let ingress = Ingress::new(&url).map_err(super::failed)?;
    let answered = ingress
        .answer(&args.session, &args.request_id, approve)
        .await
        .map_err(super::call_failed(&url, &args.session))?
        .map_err(CliError::usage)?;
    let verb = if approve { "approved" } else { "denied" };
    let (id, path) = (&answered.id, &answered.path);
    let what = match (answered.decided, answered.override_granted) {
        (true, true) => format!(
            "{verb} request {id} of {path}; if it no longer waits, its identical retry runs once"
        ),
        (false, true) => {
            format!("override: the identical retry of request {id} by {path} runs once")
        }
        _ => format!("{verb} request {id} of {path}"),
    };
    println!("{what}");
    Ok(0)
}
