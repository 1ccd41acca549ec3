//! The Restate engine behind the orchestrator's engine seam (`arbor_orchestrator::engine`):
//! mail, closes and interrupts are calls of the session's `Session` object, the agents its
//! listing.

use arbor_orchestrator::OrchestratorError;
use arbor_orchestrator::engine::{Engine, EngineAgent};
use arbor_protocol::{AgentStatus, MailId, MailKind};
use arbor_restate::{Ingress, RestateError};

/// The tree of a session in the Restate server at `url`.
pub struct Restate {
    url: String,
    ingress: Ingress,
}

impl Restate {
    pub fn new(url: &str) -> Result<Self, OrchestratorError> {
        let ingress =
            Ingress::new(url).map_err(|err| OrchestratorError::Engine(err.to_string()))?;
        Ok(Self {
            url: url.to_string(),
            ingress,
        })
    }

    /// A failure of a call on `session`: an unknown session is refused, naming the server.
    fn failed(&self, session: &str) -> impl Fn(RestateError) -> OrchestratorError {
        let (url, session) = (self.url.clone(), session.to_string());
        move |error| match error {
            RestateError::Status { status: 404, .. } => {
                OrchestratorError::Refused(format!("unknown session {session} on {url}"))
            }
            other => OrchestratorError::Engine(other.to_string()),
        }
    }
}

/// The status a close or interrupt reply reports as the target's before.
fn previous(reply: &str) -> Result<AgentStatus, OrchestratorError> {
    serde_json::from_str::<serde_json::Value>(reply)
        .ok()
        .and_then(|value| serde_json::from_value(value["previous_status"].clone()).ok())
        .ok_or_else(|| {
            OrchestratorError::Engine(format!("unexpected reply from the session: {reply}"))
        })
}

impl Engine for Restate {
    async fn deliver(
        &self,
        session: &str,
        target: &str,
        kind: MailKind,
        text: &str,
    ) -> Result<MailId, OrchestratorError> {
        let wake = kind == MailKind::Followup;
        let sent = self
            .ingress
            .send(session, target, text, wake)
            .await
            .map_err(self.failed(session))?
            .map_err(OrchestratorError::Refused)?;
        Ok(sent.id)
    }

    async fn close(&self, session: &str, target: &str) -> Result<AgentStatus, OrchestratorError> {
        let reply = self.ingress.close(session, target).await;
        previous(
            &reply
                .map_err(self.failed(session))?
                .map_err(OrchestratorError::Refused)?,
        )
    }

    async fn interrupt(
        &self,
        session: &str,
        target: &str,
    ) -> Result<AgentStatus, OrchestratorError> {
        let reply = self.ingress.interrupt(session, target).await;
        previous(
            &reply
                .map_err(self.failed(session))?
                .map_err(OrchestratorError::Refused)?,
        )
    }

    async fn agents(&self, session: &str) -> Result<Vec<EngineAgent>, OrchestratorError> {
        let rows = self
            .ingress
            .agents(session)
            .await
            .map_err(self.failed(session))?;
        Ok(rows
            .into_iter()
            .map(|row| EngineAgent {
                path: row.path,
                status: row.status,
                unread: row.unread,
            })
            .collect())
    }
}
