//! Whole-tree resume: register every agent reachable through open edges from the store, with
//! its status read from its rollout's tail and its unread mail from the store — no runtime and
//! no model call. Agents are revived lazily when a turn is granted to them.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use arbor_agent_graph::{EdgeStatus, Store, ThreadRecord};
use arbor_model::ModelClient;
use arbor_protocol::{AgentStatus, SandboxMode, ThreadId};
use arbor_roles::{Capabilities, RoleSet};
use arbor_rollout::{JournalEntry, journal_path, read_journal, tail_status};

use crate::agent::{Agent, Identity};
use crate::lifecycle::instructions_for;
use crate::runtime::Inner;
use crate::{Lease, Orchestrator, OrchestratorError, RunConfig};

/// What a resume found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeInfo {
    /// Agents registered (the root included).
    pub agents: usize,
    /// The pid of a dead driver whose lease was taken over.
    pub took_over_from: Option<u32>,
    /// Things the user should know (roles that no longer exist, repaired statuses).
    pub notices: Vec<String>,
}

/// Finds a session's root by id or prefix; a child's id is refused with the root's id.
pub fn find_root(store: &Store, session: &str) -> Result<ThreadRecord, OrchestratorError> {
    if let Ok(id) = ThreadId::parse(session.trim())
        && let Some(thread) = store.thread(id)?
        && thread.parent_id.is_some()
    {
        return Err(OrchestratorError::Start(format!(
            "{id} is the agent {} of session {}, not a session; resume the whole tree with `arbor resume {}`",
            thread.path, thread.session_id, thread.session_id
        )));
    }
    Ok(store.find_session_by_prefix(session)?)
}

struct Loaded {
    store: Store,
    roles: RoleSet,
    policy: arbor_tools::Policy,
    /// Approval requests still pending from the last run.
    pending_approvals: Vec<arbor_agent_graph::ApprovalRecord>,
    lease: Lease,
    root: ThreadRecord,
    /// Journal entries before this offset are already reflected in the store.
    journal_offset: u64,
    /// Lines of the journal that are not entries, skipped.
    journal_notices: Vec<String>,
    threads: Vec<(ThreadRecord, AgentStatus)>,
    mail: HashMap<ThreadId, Vec<arbor_protocol::Mail>>,
}

fn load(home: PathBuf, cwd: PathBuf, session: String) -> Result<Loaded, OrchestratorError> {
    let store = Store::open(&home)?;
    let root = find_root(&store, &session)?;
    // Workspace roles come from the session's own workspace, wherever the user stands now.
    let workspace = if root.cwd.is_empty() {
        cwd
    } else {
        PathBuf::from(&root.cwd)
    };
    let roles = RoleSet::load(&home, &workspace)?;
    let policy = arbor_tools::Policy::load(&home, &workspace)?;
    // Probe the kernel's sandbox support here, off the async workers (once per process).
    arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    let lease = Lease::acquire(&home, root.id)?;
    let pending_approvals = store.pending_approvals(root.id)?;
    let (journal_offset, journal_notices) = store_journaled_mail(
        &store,
        root.id,
        &journal_path(std::path::Path::new(&root.rollout_path), root.id),
    )?;
    let mut open: Vec<ThreadId> = vec![root.id];
    open.extend(store.descendants(root.id, Some(EdgeStatus::Open))?);
    let mut by_id: HashMap<ThreadId, ThreadRecord> = store
        .threads_in_session(root.id)?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let mut threads = Vec::with_capacity(open.len());
    for id in open {
        let Some(record) = by_id.remove(&id) else {
            continue;
        };
        let status = tail_status(std::path::Path::new(&record.rollout_path)).map_err(|err| {
            OrchestratorError::Start(format!("cannot read the rollout of {}: {err}", record.path))
        })?;
        threads.push((record, status));
    }
    let mut mail: HashMap<ThreadId, Vec<arbor_protocol::Mail>> = HashMap::new();
    for queued in store.unconsumed_in_session(root.id)? {
        mail.entry(queued.recipient_id)
            .or_default()
            .push(queued.mail);
    }
    Ok(Loaded {
        store,
        roles,
        policy,
        pending_approvals,
        lease,
        root,
        journal_offset,
        journal_notices,
        threads,
        mail,
    })
}

/// Stores the mail of the session's journal that the store lacks: a sending process that died
/// (or whose store write failed) after journaling its mail. A mail id is stored once, so mail
/// already there is untouched, consumed or not. Returns the offset the live watch starts from,
/// and a notice for each line skipped.
fn store_journaled_mail(
    store: &Store,
    session: ThreadId,
    journal: &std::path::Path,
) -> Result<(u64, Vec<String>), OrchestratorError> {
    let read = read_journal(journal, 0).map_err(|err| {
        OrchestratorError::Start(format!("cannot read the session journal: {err}"))
    })?;
    let mails: Vec<(ThreadId, arbor_protocol::Mail)> = read
        .entries
        .into_iter()
        .filter_map(|(entry, _)| match entry {
            JournalEntry::Mail { recipient_id, mail } => Some((recipient_id, mail)),
            JournalEntry::Close { .. } | JournalEntry::Interrupt { .. } => None,
        })
        .collect();
    let ids: Vec<_> = mails.iter().map(|(_, mail)| mail.id).collect();
    let unknown: HashSet<_> = store.unknown_mail(&ids)?.into_iter().collect();
    // All handed to the writer before any is waited on: one commit for them all, each in its
    // own savepoint, so one that fails does not hold back the others.
    let tickets: Vec<_> = mails
        .iter()
        .filter(|(_, mail)| unknown.contains(&mail.id))
        .map(|(recipient_id, mail)| {
            let ticket = store.enqueue_mail_shared(session, *recipient_id, mail);
            (mail.id, ticket)
        })
        .collect();
    for (id, ticket) in tickets {
        if let Err(err) = ticket.wait() {
            // Left in the journal for `arbor doctor --rebuild`; the session still resumes.
            tracing::warn!(mail = %id, error = %err, "journaled mail not stored");
        }
    }
    Ok((read.next, read.notices))
}

impl Orchestrator {
    /// Resumes a stopped session: takes its lease and registers its open tree without loading
    /// any runtime or calling the model. `session` is the root id, a unique prefix of it, or
    /// `--last` handled by the caller.
    pub async fn resume(
        mut config: RunConfig,
        model: Arc<dyn ModelClient>,
        session: &str,
    ) -> Result<(Self, ResumeInfo), OrchestratorError> {
        let (home, cwd, session) = (config.home.clone(), config.cwd.clone(), session.to_string());
        let loaded = tokio::task::spawn_blocking(move || load(home, cwd, session))
            .await
            .map_err(|err| OrchestratorError::Start(err.to_string()))??;
        config.cwd = PathBuf::from(&loaded.root.cwd);
        let took_over_from = loaded.lease.took_over_from;
        let inner = Arc::new(Inner::new(
            config,
            loaded.root.id,
            loaded.store,
            model,
            loaded.roles,
            loaded.policy,
        ));
        let mut notices = loaded.journal_notices;
        if let Some(pid) = took_over_from {
            notices.push(format!(
                "took over the lease of process {pid}, which is gone"
            ));
        }
        let mut mail = loaded.mail;
        let mut registered: HashMap<ThreadId, Arc<Agent>> = HashMap::new();
        for (record, status) in loaded.threads {
            let parent = record.parent_id.and_then(|id| registered.get(&id).cloned());
            if record.parent_id.is_some() && parent.is_none() {
                continue;
            }
            let agent = register(&inner, &record, status, parent.as_ref(), &mut notices);
            if let Some(mails) = mail.remove(&record.id) {
                agent.state().mailbox.restore(mails);
            }
            registered.insert(record.id, agent);
        }
        let root = registered
            .get(&loaded.root.id)
            .cloned()
            .ok_or_else(|| OrchestratorError::Start("the session's root is missing".into()))?;
        if !loaded.pending_approvals.is_empty() {
            notices.push(format!(
                "{} approval request(s) still pending from the last run: `arbor approve` lets \
                 the identical retry through once",
                loaded.pending_approvals.len()
            ));
        }
        let info = ResumeInfo {
            agents: registered.len(),
            took_over_from,
            notices,
        };
        crate::approval::restore_orphans(&inner, loaded.pending_approvals);
        let orch = Orchestrator::assemble(inner, loaded.lease, Some((root, loaded.journal_offset)));
        Ok((orch, info))
    }
}

/// Registers one stored agent (not resident), persisting a status its rollout corrects.
fn register(
    inner: &Arc<Inner>,
    record: &ThreadRecord,
    status: AgentStatus,
    parent: Option<&Arc<Agent>>,
    notices: &mut Vec<String>,
) -> Arc<Agent> {
    let role = match inner.roles.get(&record.role) {
        Ok(role) => role.clone(),
        Err(_) if record.role == arbor_roles::GUARDIAN_ROLE => inner.roles.guardian().clone(),
        Err(_) => {
            notices.push(format!(
                "{}: role '{}' is no longer defined; it keeps its stored settings with the default role's instructions",
                record.path, record.role
            ));
            inner
                .roles
                .get(arbor_roles::DEFAULT_ROLE)
                .cloned()
                .unwrap_or_else(|_| inner.roles.guardian().clone())
        }
    };
    let sandbox = SandboxMode::parse(&record.sandbox).unwrap_or(SandboxMode::ReadOnly);
    let mut caps = match parent {
        Some(parent) => parent.identity.caps.narrow_for(&role),
        None => Capabilities::root(sandbox, inner.config.approval_policy).narrow_for(&role),
    };
    caps.sandbox = sandbox;
    let identity = Identity {
        id: record.id,
        path: record.path.clone(),
        parent: record.parent_id,
        depth: record.depth,
        nickname: record.nickname.clone(),
        role: record.role.clone(),
        model: record.model.clone(),
        effort: record.effort.clone(),
        caps,
        cwd: PathBuf::from(&record.cwd),
        rollout_path: PathBuf::from(&record.rollout_path),
        instructions: instructions_for(&role),
        internal: record.role == arbor_roles::GUARDIAN_ROLE,
    };
    let token = match parent {
        Some(parent) => parent.token.child_token(),
        None => inner.root_token.child_token(),
    };
    if status != record.status {
        inner.persist_status_id(record.id, &status);
    }
    let agent = Agent::new(identity, token, status.clone());
    if let AgentStatus::Completed(message) = status {
        agent.state().last_message = message;
    }
    if let Some(nickname) = &record.nickname {
        inner.mark_nickname_used(&role, nickname);
    }
    inner.registry.insert(Arc::clone(&agent));
    agent
}
