//! Per-agent mailboxes: ordering, delivery phases (current turn or next turn), wake decisions
//! and unread counts. Filled by the "agents run" work; persistence stays behind a trait.
