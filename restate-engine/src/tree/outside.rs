//! What commands from outside the tree do to a `Tree`: `arbor send` and `arbor followup` (mail
//! from `/root`), `arbor resume PROMPT` (a new run of the root), and the reads of `arbor mail`.

use arbor_protocol::{AgentPath, MailId, ThreadId};

use super::{Effect, Entry, Fresh, Tree};
use crate::wire::{Input, MailRequest, OutsideMail, ResumeReply, ResumeRequest, SentMail};

impl Tree {
    /// Whether a run of the root (`exec`, `resume PROMPT`) is in progress.
    pub fn run_in_progress(&self) -> bool {
        self.root_driven && !self.completed
    }

    /// `arbor send` (queue only) and `arbor followup` (wakes the target), from `/root`. The
    /// root is not woken by the results of a follow-up unless a run of it is in progress.
    pub fn send_outside(
        &mut self,
        request: &OutsideMail,
        fresh: &Fresh,
    ) -> (Result<SentMail, String>, Vec<Effect>) {
        let from = self.events;
        let mail = MailRequest {
            author: AgentPath::root(),
            target: request.target.trim().to_string(),
            content: request.content.clone(),
            followup: request.followup,
        };
        let recipient = self
            .resolve(&mail.author, &mail.target)
            .map(|entry| entry.path.clone());
        let (reply, effects) = self.mail(&mail, fresh);
        let sent = match (reply, recipient) {
            (Ok(_), Ok(recipient)) => MailId::parse(&fresh.mail_id)
                .map(|id| SentMail {
                    id,
                    recipient,
                    handed: self.run_in_progress(),
                    from,
                })
                .map_err(|error| error.to_string()),
            (Err(error), _) | (Ok(_), Err(error)) => Err(self.outside_error(&mail.target, error)),
        };
        (sent, effects)
    }

    /// A refusal as the local engine words it for a command from outside.
    fn outside_error(&self, target: &str, error: String) -> String {
        if ThreadId::parse(target).is_ok() && error.starts_with("agent id ") {
            return format!("agent `{target}` not found in session {}", self.session);
        }
        error
    }

    /// `arbor resume SESSION PROMPT`: the root takes the prompt (with any mail waiting for it)
    /// in a new run, which ends like `exec`'s. Refused while a run is in progress. Answers the
    /// number of the first event of the run.
    pub fn resume(&mut self, request: &ResumeRequest) -> (ResumeReply, Vec<Effect>) {
        let mut effects = Vec::new();
        if request.prompt.trim().is_empty() {
            let error = "Empty message can't be sent to an agent".to_string();
            return (ResumeReply::Refused { error }, effects);
        }
        if self.run_in_progress() {
            let error = format!(
                "session {} is still running its last prompt: wait for it to complete",
                self.session
            );
            return (ResumeReply::Running { error }, effects);
        }
        let from = self.events;
        let root = AgentPath::root();
        self.root_driven = true;
        self.completed = false;
        self.final_message = None;
        effects.push(Effect::Deliver(
            root.clone(),
            Input::User {
                text: request.prompt.clone(),
            },
        ));
        self.wake(&root, &mut effects);
        self.settle(&mut effects);
        (ResumeReply::Started { from }, effects)
    }

    /// The agent `target` names for the read commands: a thread id, or a path from `/root`
    /// (closed agents included), with the local engine's errors.
    pub fn find_agent(&self, target: &str) -> Result<&Entry, String> {
        let target = target.trim();
        if let Ok(id) = ThreadId::parse(target) {
            return self
                .agents
                .path_of(&id.as_string())
                .and_then(|path| self.agents.get(&path))
                .ok_or_else(|| format!("agent `{target}` not found in session {}", self.session));
        }
        let path = AgentPath::root()
            .resolve(target)
            .map_err(|error| format!("target `{target}`: {error}"))?;
        self.agents
            .get(&path)
            .ok_or_else(|| format!("agent path `{path}` not found in session {}", self.session))
    }
}
