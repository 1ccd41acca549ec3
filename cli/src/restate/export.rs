//! `arbor export SESSION --to-local --engine restate`: a finished Restate tree becomes a local
//! session under the arbor home, with the same id, that `arbor resume SESSION` continues. Every
//! agent's rollout (`arbor_restate::rollout`: header, turns, the mail each took, statuses) is
//! written through the session log's writer (`arbor_orchestrator::import_session`), then each
//! closed edge as an `agent_closed` line of the parent, and the mail nobody has taken yet as
//! `mail_sent` lines of their authors, so it stays unread. A tree that still runs, or has
//! a pending approval, is refused, as is an id the home knows already.

use std::collections::HashMap;
use std::path::Path;

use arbor_protocol::{AgentClosed, AgentStatus, RolloutItem, ThreadId, Timestamp};
use arbor_restate::Ingress;

use crate::args::ExportArgs;
use crate::error::CliError;

/// `arbor export SESSION --to-local --engine restate`; exit 0 when exported.
pub async fn export(home: &Path, args: &ExportArgs) -> Result<u8, CliError> {
    if args.engine.engine != crate::args::EngineKind::Restate || !args.to_local {
        return Err(CliError::usage(
            "arbor export turns a Restate tree into a local session: pass --to-local --engine restate",
        ));
    }
    let url = args.engine.url();
    let session = &args.session;
    let id = ThreadId::parse(session).map_err(|_| {
        CliError::usage(format!(
            "`{session}` is not a session id: export takes the full id of a Restate session"
        ))
    })?;
    let ingress = Ingress::new(&url).map_err(super::failed)?;
    let failed = super::call_failed(&url, session);
    let page = ingress.events(session, u64::MAX).await.map_err(&failed)?;
    if !page.quiescent {
        return Err(CliError::usage(format!(
            "session {session} is still running on {url}: export it once its agents are idle \
             (follow it with `arbor resume {session} --engine restate`, or stop it with `arbor interrupt`)"
        )));
    }
    let pending: Vec<String> = ingress
        .approvals(session)
        .await
        .map_err(&failed)?
        .into_iter()
        .filter(|row| row.outcome == "pending")
        .map(|row| row.id)
        .collect();
    if !pending.is_empty() {
        return Err(CliError::usage(format!(
            "session {session} has pending approvals ({}): answer them with `arbor approve` or \
             `arbor deny` --engine restate, then export",
            pending.join(", ")
        )));
    }
    let records = super::log::records(&url, session).await?;
    let thread = |text: &str| ThreadId::parse(text).unwrap_or_default();
    let by_path: HashMap<String, ThreadId> = records
        .iter()
        .map(|(row, _)| (row.path.to_string(), thread(&row.id)))
        .collect();
    let now = Timestamp::now();
    let mut lines = Vec::new();
    for (row, history) in &records {
        let own = thread(&row.id);
        lines.extend(
            arbor_restate::rollout::items(session, row, history, "", now)
                .into_iter()
                .map(|(stamp, item)| (own, stamp, item)),
        );
    }
    for (row, history) in &records {
        let (Some("closed"), Some(parent)) = (row.edge.as_deref(), row.parent_id.as_deref()) else {
            continue;
        };
        let previous_status = history
            .turns
            .last()
            .map_or(AgentStatus::PendingInit, |mark| match &mark.outcome {
                Some(arbor_restate::wire::TurnOutcome::Completed { last_message }) => {
                    AgentStatus::Completed(last_message.clone())
                }
                Some(arbor_restate::wire::TurnOutcome::Errored { reason }) => {
                    AgentStatus::Errored(reason.clone())
                }
                Some(arbor_restate::wire::TurnOutcome::Interrupted { reason }) => {
                    AgentStatus::Interrupted(reason.clone())
                }
                None => AgentStatus::Closed,
            });
        let closed = AgentClosed {
            target_id: thread(&row.id),
            target: row.path.clone(),
            previous_status,
        };
        lines.push((thread(parent), now, RolloutItem::AgentClosed(closed)));
    }
    for (row, _) in records.iter().filter(|(row, _)| row.unread > 0) {
        let inbox = ingress
            .inbox(session, row.path.as_str())
            .await
            .map_err(&failed)?
            .map_err(CliError::usage)?;
        for mail in inbox.mail {
            let author = by_path.get(mail.author.as_str()).copied().unwrap_or(id);
            lines.push((
                author,
                mail.created_at,
                RolloutItem::MailSent(Box::new(mail)),
            ));
        }
    }
    let agents = records.len();
    let home_path = home.to_path_buf();
    tokio::task::spawn_blocking(move || arbor_orchestrator::import_session(&home_path, id, lines))
        .await
        .map_err(|err| CliError::failed(err.to_string()))??;
    eprintln!(
        "exported session {session} ({}) to {}; continue it with `arbor resume {session}`",
        arbor_protocol::text::count(agents, "agent", "agents"),
        home.display()
    );
    println!("{session}");
    Ok(0)
}
