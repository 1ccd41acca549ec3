//! `arbor log SESSION [TARGET] --engine restate`: an agent's rollout as the Restate engine
//! keeps it (its `Agent` object's history and turn marks, with its `Session` entry), printed
//! line for line as the local `arbor log` prints a rollout (`--json`: the rollout lines).

use std::io::Write;

use arbor_protocol::{AgentPath, RolloutLine, ThreadId, Timestamp};
use arbor_restate::Ingress;
use arbor_restate::wire::{AgentHistory, AgentRow};

use crate::args::LogArgs;
use crate::error::CliError;

/// Every agent of `session` with its object's state, root first.
pub(super) async fn records(
    url: &str,
    session: &str,
) -> Result<Vec<(AgentRow, AgentHistory)>, CliError> {
    let ingress = Ingress::new(url).map_err(super::failed)?;
    let rows = super::read::rows(url, session).await?;
    let mut records = Vec::with_capacity(rows.len());
    for row in rows {
        let history = ingress
            .history(session, &row.path)
            .await
            .map_err(super::call_failed(url, session))?;
        records.push((row, history));
    }
    Ok(records)
}

/// The rollout lines of one agent, as its local rollout would hold them (no `status` lines:
/// those are the session log's), unnumbered (a Restate agent has no log).
pub(super) fn lines(session: &str, row: &AgentRow, history: &AgentHistory) -> Vec<RolloutLine> {
    let thread = ThreadId::parse(&row.id).ok();
    arbor_restate::rollout::items(session, row, history, "", Timestamp::now())
        .into_iter()
        .filter(|(_, item)| item.in_rollout())
        .map(|(timestamp, item)| RolloutLine {
            seq: None,
            thread,
            timestamp,
            item,
        })
        .collect()
}

/// `arbor log SESSION [TARGET] --engine restate`.
pub async fn log(args: &LogArgs) -> Result<(), CliError> {
    let url = args.engine.url();
    let target = args.target.as_deref().unwrap_or("/root");
    let rows = super::read::rows(&url, &args.session).await?;
    let row = if ThreadId::parse(target).is_ok() {
        rows.iter().find(|row| row.id == target).ok_or_else(|| {
            CliError::usage(format!(
                "agent `{target}` not found in session {}",
                args.session
            ))
        })?
    } else {
        let path = AgentPath::root()
            .resolve(target)
            .map_err(|err| CliError::usage(format!("target `{target}`: {err}")))?;
        rows.iter().find(|row| row.path == path).ok_or_else(|| {
            CliError::usage(format!(
                "agent path `{path}` not found in session {}",
                args.session
            ))
        })?
    };
    let ingress = Ingress::new(&url).map_err(super::failed)?;
    let history = ingress
        .history(&args.session, &row.path)
        .await
        .map_err(super::call_failed(&url, &args.session))?;
    let mut stdout = std::io::stdout().lock();
    let out = |err: std::io::Error| CliError::failed(format!("cannot write the log: {err}"));
    for line in lines(&args.session, row, &history) {
        if args.json {
            let text = serde_json::to_string(&line).unwrap_or_default();
            writeln!(stdout, "{text}").map_err(out)?;
        } else {
            let text = crate::logtext::line(&line.item);
            writeln!(stdout, "{} {text}", line.timestamp).map_err(out)?;
        }
    }
    Ok(())
}
