//! `Orchestrator::compact`: compacting an agent's history by hand (`arbor compact`). The agent
//! must not be loaded in this process (after a resume none is until a turn is granted): its
//! last window is read from its rollout and replayed, its model writes the summary, and the
//! `compacted` line is appended; its next revival starts from the new window.

use std::sync::Arc;

use arbor_model::window::{estimate_tokens, item_bytes};
use arbor_protocol::{AgentPath, CompactionTrigger, ThreadId};
use arbor_rollout::log::Urgency;
use arbor_rollout::{Replay, read_last_window};

use super::Orchestrator;
use crate::agent::Agent;
use crate::compaction::{self, CompactReport, Source};
use crate::error::OrchestratorError;

impl Orchestrator {
    /// Compacts the history of `target` (a path or a thread id) into a new window now.
    pub async fn compact(&self, target: &str) -> Result<CompactReport, OrchestratorError> {
        let refused = |why: String| OrchestratorError::Refused(why);
        let agent = self.compact_target(target)?;
        let path = agent.path().clone();
        let snapshot = self
            .ctx
            .session
            .agent(agent.id())
            .await
            .ok_or_else(|| refused("the session stopped".into()))?;
        if snapshot.closed {
            return Err(refused(format!("{path} is closed")));
        }
        if snapshot.resident {
            return Err(refused(format!(
                "{path} is loaded in this process; it compacts on its own when its requests \
                 near its context window"
            )));
        }
        let source = self.load_source(&agent).await?;
        let compacted = compaction::compact(&self.ctx, &agent, source, CompactionTrigger::Manual)
            .await
            .map_err(|reason| refused(format!("compaction failed: {reason}")))?;
        // Durable before the command says it is done.
        let lsn = agent.last_recorded();
        self.ctx
            .log
            .durable(lsn, Urgency::Now)
            .await
            .map_err(|err| OrchestratorError::Refused(err.to_string()))?;
        let tokens_after =
            estimate_tokens(agent.identity.instructions.len() + item_bytes(&compacted.window));
        Ok(CompactReport {
            path,
            tokens_before: compacted.tokens_before,
            tokens_after,
            summary: compacted.summary,
        })
    }

    /// The agent `target` names: an open path (the guardian's too) or a thread id.
    fn compact_target(&self, target: &str) -> Result<Arc<Agent>, OrchestratorError> {
        let target = target.trim();
        let found = match ThreadId::parse(target) {
            Ok(id) => self.ctx.registry.get(id),
            Err(_) => {
                let path = AgentPath::parse(target)
                    .or_else(|_| AgentPath::root().join(target))
                    .map_err(|err| OrchestratorError::Refused(err.to_string()))?;
                self.ctx.registry.open_at(&path)
            }
        };
        found.ok_or_else(|| OrchestratorError::Refused(format!("agent `{target}` not found")))
    }

    /// The agent's last window, replayed from its rollout.
    async fn load_source(&self, agent: &Agent) -> Result<Source, OrchestratorError> {
        let failed = |err: String| {
            OrchestratorError::Refused(format!("reading {}'s history failed: {err}", agent.path()))
        };
        let recorded = agent.last_recorded();
        self.ctx
            .log
            .durable(recorded, Urgency::Now)
            .await
            .map_err(|err| failed(err.to_string()))?;
        self.ctx
            .projection
            .projected(recorded)
            .await
            .map_err(|err| failed(err.to_string()))?;
        let file = agent.identity.rollout_path.clone();
        let replay = tokio::task::spawn_blocking(move || {
            read_last_window(&file).map(|read| Replay::from_read(&read))
        })
        .await
        .map_err(|err| failed(err.to_string()))?
        .map_err(|err| failed(err.to_string()))?;
        let path = agent.path();
        let Some(last) = replay.turns.last() else {
            return Err(OrchestratorError::Refused(format!(
                "{path} has not run a turn yet: there is nothing to compact"
            )));
        };
        if replay.in_flight().is_some() {
            return Err(OrchestratorError::Refused(format!(
                "{path}'s last turn never ended (its process stopped); give it a turn first \
                 (`arbor followup`)"
            )));
        }
        let tokens_before =
            estimate_tokens(agent.identity.instructions.len() + item_bytes(&replay.history));
        Ok(Source {
            tokens_before,
            turn: last.number,
            turn_end: last.end.clone(),
            last_message: replay.last_message.clone(),
            usage: replay.usage,
            history: Arc::new(replay.history),
        })
    }
}
