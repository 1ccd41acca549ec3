//! The Restate engine behind the orchestrator's engine seam (`arbor_orchestrator::engine`):
//! mail, closes and interrupts are calls of the session's `Session` object, the agents its
//! listing.

use arbor_orchestrator::engine::{Engine, EngineAgent, EngineError};
use arbor_protocol::{AgentStatus, MailId, MailKind};
use arbor_restate::{Ingress, RestateError};

/// The tree of a session in the Restate server at `url`.
pub struct Restate {
    url: String,
    ingress: Ingress,
}

impl Restate {
    pub fn new(url: &str) -> Result<Self, EngineError> {
        let ingress = Ingress::new(url).map_err(|err| EngineError::Failed(err.to_string()))?;
        Ok(Self {
            url: url.to_string(),
            ingress,
        })
    }

    /// A failure of a call on `session`: an unknown session is refused, naming the server.
    fn failed(&self, session: &str) -> impl Fn(RestateError) -> EngineError {
        let (url, session) = (self.url.clone(), session.to_string());
        move |error| match error {
            RestateError::Status { status: 404, .. } => {
                EngineError::Refused(format!("unknown session {session} on {url}"))
            }
            other => EngineError::Failed(other.to_string()),
        }
    }
}

/// The status a close or interrupt reply reports as the target's before.
fn previous(reply: &str) -> Result<AgentStatus, EngineError> {
    serde_json::from_str::<serde_json::Value>(reply)
        .ok()
        .and_then(|value| serde_json::from_value(value["previous_status"].clone()).ok())
        .ok_or_else(|| EngineError::Failed(format!("unexpected reply from the session: {reply}")))
}

impl Engine for Restate {
    async fn deliver(
        &self,
        session: &str,
        target: &str,
        kind: MailKind,
        text: &str,
    ) -> Result<MailId, EngineError> {
        let wake = kind == MailKind::Followup;
        let sent = self
            .ingress
            .send(session, target, text, wake)
            .await
            .map_err(self.failed(session))?
            .map_err(EngineError::Refused)?;
        Ok(sent.id)
    }

    async fn close(&self, session: &str, target: &str) -> Result<AgentStatus, EngineError> {
        let reply = self.ingress.close(session, target).await;
        previous(
            &reply
                .map_err(self.failed(session))?
                .map_err(EngineError::Refused)?,
        )
    }

    async fn interrupt(&self, session: &str, target: &str) -> Result<AgentStatus, EngineError> {
        let reply = self.ingress.interrupt(session, target).await;
        previous(
            &reply
                .map_err(self.failed(session))?
                .map_err(EngineError::Refused)?,
        )
    }

    async fn agents(&self, session: &str) -> Result<Vec<EngineAgent>, EngineError> {
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
