//! Mail delivery as pure data (behaviour §4), with no I/O and no runtime. Two halves:
//!
//! - [`Mailbox`], kept by the session for every agent: arrival order, whether a mail wakes the
//!   agent, joins its running turn or waits, what a turn is handed, unread counts, and the
//!   wake-once rule ([`wake_once_due`]).
//! - [`Inbox`], kept by a running turn: the delivery phases of that turn (`CurrentTurn` until a
//!   final answer, `NextTurn` after it), so mail handed over after the final answer waits for
//!   the next turn.
//!
//! A mail is in the session log before it reaches either.

mod inbox;
mod mailbox;

pub use inbox::{DeliveryPhase, Inbox};
pub use mailbox::{Arrival, Mailbox, wake_once_due};
