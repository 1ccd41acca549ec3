//! Colours and emphasis. With `NO_COLOR` set (to anything but the empty string) nothing is
//! coloured; selection and emphasis then use reverse video and bold, which are not colours.

use arbor_protocol::AgentStatus;
use ratatui::style::{Color, Modifier, Style};

use crate::transcript::Kind;

/// The styles the UI draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub colour: bool,
}

impl Theme {
    /// Colours unless `NO_COLOR` asks for none.
    pub fn from_env() -> Self {
        let off = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Self { colour: !off }
    }

    pub fn plain() -> Self {
        Self { colour: false }
    }

    fn fg(self, colour: Color) -> Style {
        if self.colour {
            Style::default().fg(colour)
        } else {
            Style::default()
        }
    }

    pub fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    pub fn title(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    pub fn dim(self) -> Style {
        if self.colour {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }

    pub fn warn(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red)
    }

    pub fn good(self) -> Style {
        self.fg(Color::Green)
    }

    /// The colour of a status.
    pub fn status(self, status: &AgentStatus) -> Style {
        match status {
            AgentStatus::Running => self.fg(Color::Green),
            AgentStatus::Waiting | AgentStatus::Queued | AgentStatus::PendingInit => {
                self.fg(Color::Cyan)
            }
            AgentStatus::AwaitingApproval => self.warn(),
            AgentStatus::Completed(_) => self.fg(Color::Blue),
            AgentStatus::Errored(_) => self.error(),
            AgentStatus::Interrupted(_) => self.fg(Color::Magenta),
            AgentStatus::Closed | AgentStatus::NotFound => self.dim(),
        }
    }

    /// The colour of a transcript entry's label.
    pub fn kind(self, kind: Kind) -> Style {
        match kind {
            Kind::Header | Kind::Turn | Kind::TurnEnd => self.dim(),
            Kind::TurnFailed => self.error(),
            Kind::User => self.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Kind::Assistant => self.fg(Color::Green).add_modifier(Modifier::BOLD),
            Kind::Reasoning => self.dim(),
            Kind::Call => self.fg(Color::Yellow),
            Kind::Output => self.fg(Color::Blue),
            Kind::MailIn | Kind::MailOut => self.fg(Color::Magenta),
            Kind::Approval | Kind::Decision => self.warn(),
            Kind::Closed => self.dim(),
        }
    }
}
