//! Mail between agents (behaviour §4): one type for spawn tasks, messages, follow-ups and
//! results.

use serde::{Deserialize, Serialize};

use crate::{AgentPath, MailId, Timestamp};

/// What a mail is for; decides whether it wakes an idle recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailKind {
    /// A child's first task, sent by `spawn_agent`.
    Spawn,
    /// Queue-only mail from `send_message` or `arbor send`.
    Message,
    /// Wake-up mail from `followup_task` or `arbor followup`.
    Followup,
    /// A child's final answer (or failure) to its direct parent.
    Result,
}

impl MailKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Message => "message",
            Self::Followup => "followup",
            Self::Result => "result",
        }
    }

    /// Parses the wire name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "spawn" => Some(Self::Spawn),
            "message" => Some(Self::Message),
            "followup" => Some(Self::Followup),
            "result" => Some(Self::Result),
            _ => None,
        }
    }

    /// Whether mail of this kind wakes an idle recipient by default.
    pub fn default_trigger(self) -> bool {
        match self {
            Self::Spawn | Self::Followup => true,
            Self::Message | Self::Result => false,
        }
    }

    /// The `Message Type:` line of the model-visible form.
    pub fn model_label(self) -> &'static str {
        match self {
            Self::Spawn | Self::Followup => "NEW_TASK",
            Self::Message => "MESSAGE",
            Self::Result => "FINAL_ANSWER",
        }
    }
}

/// One mail, exactly as stored and journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mail {
    pub id: MailId,
    pub author: AgentPath,
    pub recipient: AgentPath,
    pub kind: MailKind,
    pub trigger_turn: bool,
    pub content: String,
    pub created_at: Timestamp,
    /// Sent by the user from outside the tree (`arbor send`, `arbor followup`, the UI). Its
    /// author is `/root`, whose place the user speaks from (and what the recipient's model
    /// reads); people are shown it as the user's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_user: bool,
}

impl Mail {
    /// A new mail with a fresh id, the kind's default trigger and the current time.
    pub fn new(author: AgentPath, recipient: AgentPath, kind: MailKind, content: String) -> Self {
        Self {
            id: MailId::new(),
            author,
            recipient,
            kind,
            trigger_turn: kind.default_trigger(),
            content,
            created_at: Timestamp::now(),
            from_user: false,
        }
    }

    /// A new mail from the user to `recipient`, sent from the root's place.
    pub fn from_user(recipient: AgentPath, kind: MailKind, content: String) -> Self {
        Self {
            from_user: true,
            ..Self::new(AgentPath::root(), recipient, kind, content)
        }
    }

    /// Who sent it, as people read it: `the user`, or the author's path.
    pub fn sender(&self) -> &str {
        if self.from_user {
            "the user"
        } else {
            self.author.as_str()
        }
    }

    /// The text the recipient's model sees as one input item.
    pub fn model_text(&self) -> String {
        format!(
            "Message Type: {}\nTask name: {}\nSender: {}\nPayload:\n{}",
            self.kind.model_label(),
            self.recipient,
            self.author,
            self.content
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_trigger_as_documented() {
        for kind in [
            MailKind::Spawn,
            MailKind::Message,
            MailKind::Followup,
            MailKind::Result,
        ] {
            assert_eq!(MailKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).expect("ser");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert!(MailKind::Spawn.default_trigger());
        assert!(MailKind::Followup.default_trigger());
        assert!(!MailKind::Message.default_trigger());
        assert!(!MailKind::Result.default_trigger());
    }

    #[test]
    fn model_text_has_the_documented_lines() {
        let root = AgentPath::root();
        let child = root.join("w").expect("join");
        let mail = Mail::new(root, child, MailKind::Message, "hello\nthere".into());
        assert_eq!(
            mail.model_text(),
            "Message Type: MESSAGE\nTask name: /root/w\nSender: /root\nPayload:\nhello\nthere"
        );
    }
}
