//! Approvals and the sandbox for `exec_command` (behaviour §7, §8): the command policy decides
//! whether a command runs in the agent's sandbox, never runs, or needs approval; requests from
//! any depth go to the session's one broker, where only the requester waits for the user (at
//! the terminal or from another process) or the guardian.
//!
//! Order of checks: a `forbidden` rule refuses; a command that needs no approval runs in the
//! sandbox; the guardian may not ask; policy `never` refuses; a user's approval for the session
//! or an override from `arbor approve` lets it through; otherwise the reviewer decides. An
//! approved escalation runs outside the sandbox, any other approved command inside it.

mod broker;
mod guardian;
mod human;
mod ledger;
mod mcp;
mod need;
mod patch;
mod review;
mod watch;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arbor_agent_graph::{ApprovalOutcome, DecidedBy, OverrideKey};
use arbor_protocol::{ApprovalPolicy, SandboxMode, ThreadId};
use arbor_tools::{
    ExecArgs, GIT_HARDENING_ENV, Launcher, PlainLauncher, Policy, SandboxLauncher,
    SandboxPermissions, SandboxStatus, WithEnv,
};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::runtime::Inner;
pub(crate) use broker::override_line;
use broker::{Request, Settled};
pub use human::{ApprovalPrompt, TerminalAnswer};
use ledger::Ledger;
pub use need::{FORBIDDEN_SENTENCE, GUARDIAN_CANNOT_ASK_SENTENCE, record_key};
pub use mcp::gate_mcp;
pub use patch::gate_patch;
use watch::Watched;
pub use watch::{answered, restore};

/// The session's approval state.
#[derive(Debug)]
pub struct Approvals {
    policy: Policy,
    /// One sandbox launcher per (mode, workspace), built on first use.
    launchers: Mutex<HashMap<(SandboxMode, PathBuf), Arc<SandboxLauncher>>>,
    allow_network: bool,
    /// Paths no sandbox may write, wherever they lie: the arbor home (its store holds the
    /// approvals, so a sandboxed agent could otherwise approve its own request).
    protected: Vec<PathBuf>,
    /// Commands the user approved for the session: (canonical command, cwd, escalated).
    for_session: Mutex<HashSet<(String, String, bool)>>,
    /// Consecutive denials per agent turn (guardian reviews).
    breaker: Mutex<arbor_guardian::DenialBreaker<ThreadId>>,
    prompts: Option<mpsc::UnboundedSender<ApprovalPrompt>>,
    prompts_rx: Mutex<Option<mpsc::UnboundedReceiver<ApprovalPrompt>>>,
    watched: Arc<Watched>,
    /// Every request of the session and every override, as the driver knows them.
    ledger: Mutex<Ledger>,
    /// Serialises reviews through the one guardian.
    review: tokio::sync::Mutex<()>,
    root_task: Mutex<Option<String>>,
}

impl Approvals {
    /// The approval state of a session under `policy`; `terminal` when a terminal answers.
    pub fn new(policy: Policy, allow_network: bool, terminal: bool) -> Self {
        let (prompts, prompts_rx) = if terminal {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        Self {
            policy,
            launchers: Mutex::new(HashMap::new()),
            allow_network,
            protected: Vec::new(),
            for_session: Mutex::new(HashSet::new()),
            breaker: Mutex::new(arbor_guardian::DenialBreaker::new()),
            prompts,
            prompts_rx: Mutex::new(prompts_rx),
            watched: Arc::new(Watched::default()),
            ledger: Mutex::new(Ledger::default()),
            review: tokio::sync::Mutex::new(()),
            root_task: Mutex::new(None),
        }
    }

    /// Keeps `home` read-only in every sandbox of the session, wherever it lies.
    pub fn protecting_home(mut self, home: &Path) -> Self {
        self.protected = vec![home.to_path_buf()];
        self
    }

    /// The terminal's queue of approval prompts, once.
    pub fn take_prompts(&self) -> Option<mpsc::UnboundedReceiver<ApprovalPrompt>> {
        self.prompts_rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn prompt(&self, prompt: ApprovalPrompt) {
        if let Some(prompts) = &self.prompts {
            let _ = prompts.send(prompt);
        }
    }

    /// The session's requests and overrides.
    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sandbox of `mode` rooted at `workspace`.
    pub fn launcher(&self, mode: SandboxMode, workspace: &Path) -> Arc<SandboxLauncher> {
        let mut launchers = self
            .launchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            launchers
                .entry((mode, workspace.to_path_buf()))
                .or_insert_with(|| {
                    Arc::new(
                        SandboxLauncher::new(mode, workspace, self.allow_network)
                            .protecting(self.protected.clone()),
                    )
                }),
        )
    }

    /// What the sandbox of `mode` at `workspace` really enforces.
    pub fn sandbox_status(&self, mode: SandboxMode, workspace: &Path) -> SandboxStatus {
        self.launcher(mode, workspace).status().clone()
    }

    fn cached_for_session(&self, key: &OverrideKey) -> bool {
        self.for_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(key.command.clone(), key.cwd.clone(), key.escalated))
    }

    fn cache_for_session(&self, key: &OverrideKey) {
        self.for_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((key.command.clone(), key.cwd.clone(), key.escalated));
    }

    fn root_task(&self) -> Option<String> {
        self.root_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_root_task(&self, task: &str) {
        *self
            .root_task
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task.to_string());
    }
}

/// Decides whether `agent` may run the `exec_command` of `args` in `workdir`, asking for
/// approval when it must: the launcher to run it with, or the text its model reads instead.
pub async fn gate_exec(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    args: &ExecArgs,
    workdir: &Path,
) -> Result<Arc<dyn Launcher>, String> {
    let approvals = &inner.approvals;
    let caps = &agent.identity.caps;
    let escalated = args.permissions() == SandboxPermissions::RequireEscalated;
    let evaluation = approvals.policy.evaluate(&args.cmd);
    let sandboxed: Arc<dyn Launcher> = approvals.launcher(caps.sandbox, &agent.identity.cwd);
    let mut need = need::assess(&evaluation, caps.approval_policy, escalated);
    if caps.approval_policy == ApprovalPolicy::Untrusted && need == need::Need::Run {
        need = untrusted_git(&evaluation, workdir).await;
        if need == need::Need::Run {
            // Read-only git still reads the repository's config: run it with hooks, the
            // fsmonitor and pagers off.
            return Ok(Arc::new(WithEnv::new(sandboxed, GIT_HARDENING_ENV)));
        }
    }
    let reason = match need {
        need::Need::Run => return Ok(sandboxed),
        need::Need::Approval(reason) => reason,
        need::Need::Forbidden(rule) => {
            let request = new_request(agent, args, workdir, &format!("forbidden by {rule}"));
            return Err(refuse_forbidden(inner, agent, &request, &rule).await);
        }
    };
    let request = new_request(agent, args, workdir, &reason);
    seek_approval(inner, agent, &request).await?;
    Ok(if escalated {
        Arc::new(PlainLauncher)
    } else {
        sandboxed
    })
}

/// Under `untrusted`, a command judged read-only that runs git asks after all when the
/// repository's config could make git run a program.
async fn untrusted_git(evaluation: &arbor_tools::Evaluation, workdir: &Path) -> need::Need {
    let runs_git = evaluation.commands.iter().any(|words| {
        words
            .first()
            .is_some_and(|w| w.rsplit('/').next() == Some("git"))
    });
    if !runs_git {
        return need::Need::Run;
    }
    let (evaluation, workdir) = (evaluation.clone(), workdir.to_path_buf());
    let risk =
        tokio::task::spawn_blocking(move || arbor_tools::git_config_risk(&evaluation, &workdir))
            .await
            .unwrap_or_else(|err| Some(format!("the check failed: {err}")));
    match risk {
        None => need::Need::Run,
        Some(risk) => need::Need::Approval(format!(
            "approval policy untrusted: git could run a program its repository chose ({risk})"
        )),
    }
}

/// Records the refusal of an action a `forbidden` rule matches; the text its model reads.
async fn refuse_forbidden(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    request: &Request,
    rule: &str,
) -> String {
    let message = need::forbidden_message(rule);
    let settled = Settled::refuse(
        ApprovalOutcome::Deny,
        DecidedBy::Policy,
        Some(format!("forbidden by {rule}")),
        message.clone(),
    );
    match broker::record_settled(inner, agent, request, &settled).await {
        Ok(()) => message,
        Err(err) => err,
    }
}

/// Asks for approval of `request` (the guardian never asks): policy `never` refuses, the
/// user's approval for the session allows, otherwise the reviewer decides. `Err` is the text
/// the requester's model reads instead of the action's result.
async fn seek_approval(
    inner: &Arc<Inner>,
    agent: &Arc<Agent>,
    request: &Request,
) -> Result<(), String> {
    let approvals = &inner.approvals;
    if agent.identity.internal {
        return Err(GUARDIAN_CANNOT_ASK_SENTENCE.to_string());
    }
    if agent.identity.caps.approval_policy == ApprovalPolicy::Never {
        let settled = Settled::refuse(
            ApprovalOutcome::Deny,
            DecidedBy::Policy,
            Some("approval policy never".to_string()),
            arbor_guardian::policy_never_message(),
        );
        broker::record_settled(inner, agent, request, &settled).await?;
        return Err(arbor_guardian::policy_never_message());
    }
    if approvals.cached_for_session(&request.key) {
        let settled = Settled::allow(DecidedBy::User, Some("approved for the session".into()));
        broker::record_settled(inner, agent, request, &settled).await?;
        return Ok(());
    }
    let settled = review::decide(inner, agent, request).await?;
    match settled.message {
        None => Ok(()),
        Some(message) => Err(message),
    }
}

fn new_request(agent: &Agent, args: &ExecArgs, workdir: &Path, reason: &str) -> Request {
    Request {
        id: ThreadId::new().to_string(),
        action: need::exec_action(args, workdir, agent.identity.caps.sandbox, reason),
        justification: args.justification.clone(),
        key: need::override_key(agent.path(), args, workdir),
        turn: agent.state().turn_no,
    }
}
