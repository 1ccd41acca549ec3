//! `arbor doctor [--rebuild]`: check the store against the rollouts (the source of truth), or
//! rebuild the store from the rollouts and session journals alone.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use arbor_agent_graph::{
    ApprovalOutcome, ApprovalRecord, DecidedBy, EdgeStatus, STATE_FILE_NAME, Store, ThreadRecord,
};
use arbor_orchestrator::Lease;
use arbor_protocol::{AgentStatus, Mail, MailId, RolloutItem, ThreadId, Timestamp};
use arbor_rollout::{
    JournalEntry, Replay, RolloutRead, journal_path, list_rollouts, read_journal, read_rollout,
};

use crate::error::CliError;

/// Everything the rollouts and journals say about the state.
struct Scan {
    threads: Vec<(ThreadRecord, Replay)>,
    /// Approval requests and decisions, from the requesters' rollouts.
    approvals: Vec<ApprovalRecord>,
    journals: HashMap<ThreadId, Vec<JournalEntry>>,
    notices: Vec<String>,
}

fn scan(home: &Path) -> Result<Scan, CliError> {
    let mut threads = Vec::new();
    let mut approvals = Vec::new();
    let mut notices = Vec::new();
    let paths = list_rollouts(home).map_err(|err| CliError::failed(err.to_string()))?;
    for path in paths {
        let read = match read_rollout(&path) {
            Ok(read) => read,
            Err(err) => {
                notices.push(format!("skipped: {err}"));
                continue;
            }
        };
        notices.extend(read.notices.iter().cloned());
        let created = read
            .lines
            .first()
            .map_or_else(Timestamp::now, |(_, line)| line.timestamp);
        let replay = Replay::from_read(&read);
        let mut record = ThreadRecord::from_meta(&replay.meta, path.display().to_string(), created);
        record.status = replay.status.clone();
        approvals.extend(approvals_of(&record, &read));
        threads.push((record, replay));
    }
    threads.sort_by_key(|(record, _)| (record.depth, record.created_at, record.id));
    let mut journals = HashMap::new();
    for (record, _) in threads.iter().filter(|(r, _)| r.parent_id.is_none()) {
        let path = journal_path(Path::new(&record.rollout_path), record.id);
        let read = read_journal(&path, 0).map_err(|err| CliError::failed(err.to_string()))?;
        notices.extend(read.notices);
        journals.insert(
            record.id,
            read.entries.into_iter().map(|(entry, _)| entry).collect(),
        );
    }
    approvals.sort_by_key(|a| a.requested_at);
    Ok(Scan {
        threads,
        approvals,
        journals,
        notices,
    })
}

/// The approval requests a thread's rollout records, with their decisions.
fn approvals_of(thread: &ThreadRecord, read: &RolloutRead) -> Vec<ApprovalRecord> {
    let mut found: Vec<ApprovalRecord> = Vec::new();
    for (_, line) in &read.lines {
        match &line.item {
            RolloutItem::ApprovalRequested(asked) => {
                let mut record = ApprovalRecord::pending(
                    asked.request_id.clone(),
                    thread.session_id,
                    thread.id,
                    thread.path.clone(),
                    asked.action.clone(),
                    asked.justification.clone(),
                );
                record.requested_at = line.timestamp;
                found.push(record);
            }
            RolloutItem::ApprovalDecided(decided) => {
                let outcome = ApprovalOutcome::parse(&decided.outcome)
                    .filter(|outcome| *outcome != ApprovalOutcome::Pending);
                if let Some(outcome) = outcome
                    && let Some(record) = found.iter_mut().find(|r| r.id == decided.request_id)
                {
                    record.outcome = outcome;
                    record.decided_by = decided.decided_by.as_deref().and_then(DecidedBy::parse);
                    record.risk_level = decided.risk_level.clone();
                    record.rationale = decided.rationale.clone();
                    record.tokens = decided.tokens;
                    record.decided_at = Some(line.timestamp.max(record.requested_at));
                }
            }
            _ => {}
        }
    }
    found
}

/// The agents closed by another agent (rollouts) or by the user (journals).
fn closes(scan: &Scan) -> HashSet<ThreadId> {
    let by_agents = scan
        .threads
        .iter()
        .flat_map(|(_, replay)| replay.closed.iter().map(|close| close.target_id));
    let by_users = scan
        .journals
        .values()
        .flatten()
        .filter_map(|entry| match entry {
            JournalEntry::Close { target_id, .. } => Some(*target_id),
            _ => None,
        });
    by_agents.chain(by_users).collect()
}

/// Mail sent and never consumed, with its session and recipient id, in send order.
fn pending_mail(scan: &Scan) -> Vec<(ThreadId, ThreadId, Mail)> {
    let consumed: HashSet<MailId> = scan
        .threads
        .iter()
        .flat_map(|(_, replay)| replay.consumed.iter().copied())
        .collect();
    let mut pending = Vec::new();
    for (record, replay) in &scan.threads {
        for mail in &replay.sent {
            if consumed.contains(&mail.id) {
                continue;
            }
            // The recipient is the newest thread at that path created before the mail.
            let recipient = scan
                .threads
                .iter()
                .filter(|(r, _)| {
                    r.session_id == record.session_id
                        && r.path == mail.recipient
                        && r.created_at <= mail.created_at
                })
                .max_by_key(|(r, _)| (r.created_at, r.id))
                .map(|(r, _)| r.id);
            if let Some(recipient) = recipient {
                pending.push((record.session_id, recipient, mail.clone()));
            }
        }
    }
    for (session, entries) in &scan.journals {
        for entry in entries {
            if let JournalEntry::Mail { recipient_id, mail } = entry
                && !consumed.contains(&mail.id)
            {
                pending.push((*session, *recipient_id, mail.clone()));
            }
        }
    }
    pending.sort_by_key(|(_, _, mail)| (mail.created_at, mail.id));
    pending
}

/// Rebuilds `state.sqlite` from the rollouts and journals; the old file is kept aside.
pub fn rebuild(home: &Path) -> Result<u8, CliError> {
    let scan = scan(home)?;
    for notice in &scan.notices {
        eprintln!("notice: {notice}");
    }
    for root in scan.threads.iter().filter(|(r, _)| r.parent_id.is_none()) {
        if let Some(pid) = Lease::holder(home, root.0.id) {
            return Err(CliError {
                code: 3,
                message: format!(
                    "session {} is driven by process {pid}; stop it before rebuilding",
                    root.0.id
                ),
            });
        }
    }
    let state = home.join(STATE_FILE_NAME);
    if state.exists() {
        let stamp = Timestamp::now().file_stamp();
        for suffix in ["", "-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", state.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}.bak-{stamp}", state.display()));
                std::fs::rename(&from, &to).map_err(|err| {
                    CliError::failed(format!("cannot move {} aside: {err}", from.display()))
                })?;
            }
        }
        eprintln!("kept the old store as {}.bak-{stamp}", state.display());
    }
    let store = Store::open(home)?;
    let closed = closes(&scan);
    for (record, _) in &scan.threads {
        let mut record = record.clone();
        if closed.contains(&record.id) {
            record.status = AgentStatus::Closed;
        }
        store.upsert_thread(record).wait()?;
    }
    for (record, _) in &scan.threads {
        if let Some(parent) = record.parent_id {
            let status = if closed.contains(&record.id) {
                EdgeStatus::Closed
            } else {
                EdgeStatus::Open
            };
            store.upsert_edge(parent, record.id, status).wait()?;
        }
    }
    let pending = pending_mail(&scan);
    let mail_count = pending.len();
    store.enqueue_mail_batch(pending).wait()?;
    for approval in &scan.approvals {
        store.record_approval_request(approval.clone()).wait()?;
    }
    store.close();
    println!(
        "rebuilt {} from {} rollouts: {} threads, {} closed, {} unread mail, {} approval requests",
        state.display(),
        scan.threads.len(),
        scan.threads.len(),
        closed.len(),
        mail_count,
        scan.approvals.len()
    );
    Ok(0)
}

/// Compares the store with the rollouts and reports every difference.
pub fn check(home: &Path) -> Result<u8, CliError> {
    let store = crate::read::open_store(home)?;
    let scan = scan(home)?;
    let mut problems = Vec::new();
    let closed = closes(&scan);
    for (record, _) in &scan.threads {
        let stored = store.thread(record.id)?;
        let Some(stored) = stored else {
            problems.push(format!(
                "{} ({}) has a rollout but no row in the store",
                record.path, record.id
            ));
            continue;
        };
        if stored.parent_id != record.parent_id || stored.path != record.path {
            problems.push(format!(
                "{} ({}): the store's parent or path differs from the rollout header",
                record.path, record.id
            ));
        }
        let driven = Lease::holder(home, record.session_id).is_some();
        let expected = if closed.contains(&record.id) {
            AgentStatus::Closed
        } else {
            record.status.clone()
        };
        if !driven && stored.status != expected {
            problems.push(format!(
                "{}: the store says {} but the rollout says {}",
                record.path, stored.status, expected
            ));
        }
        if let Some(parent) = record.parent_id {
            let edge = store.edge(record.id)?;
            let want = if closed.contains(&record.id) {
                EdgeStatus::Closed
            } else {
                EdgeStatus::Open
            };
            if edge != Some((parent, want)) {
                problems.push(format!(
                    "{}: edge is {:?}, the rollouts say {}",
                    record.path,
                    edge.map(|e| e.1.as_str()),
                    want.as_str()
                ));
            }
        }
    }
    let pending: HashSet<MailId> = pending_mail(&scan).iter().map(|(_, _, m)| m.id).collect();
    let sessions: HashSet<ThreadId> = scan.threads.iter().map(|(r, _)| r.session_id).collect();
    for session in sessions {
        for queued in store.unconsumed_in_session(session)? {
            if !pending.contains(&queued.mail.id) {
                problems.push(format!(
                    "mail {} to {} is unread in the store but consumed in a rollout",
                    queued.mail.id, queued.mail.recipient
                ));
            }
        }
    }
    for notice in &scan.notices {
        println!("notice: {notice}");
    }
    if problems.is_empty() {
        println!(
            "ok: {} threads agree with their rollouts",
            scan.threads.len()
        );
        Ok(0)
    } else {
        for problem in &problems {
            println!("problem: {problem}");
        }
        println!(
            "{} problems; `arbor doctor --rebuild` rebuilds the store from the rollouts",
            problems.len()
        );
        Ok(1)
    }
}
