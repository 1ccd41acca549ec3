//! What the driving process knows of the session's approval requests and overrides: every
//! request with its requester, its override key and how it stands, and every override with
//! whether it was used. Loaded at resume from the session's state and kept as the driver
//! appends lines, so a decision never needs a look at the store.

use std::collections::HashMap;

use arbor_agent_graph::{ApprovalOutcome, DecidedBy, OverrideKey, SessionState};
use arbor_protocol::ThreadId;

/// One request as the driver knows it.
#[derive(Debug, Clone)]
pub struct Known {
    pub requester: ThreadId,
    /// What an identical retry looks like (`None` for a request that is not a command).
    pub key: Option<OverrideKey>,
    pub outcome: ApprovalOutcome,
    pub decided_by: Option<DecidedBy>,
}

#[derive(Debug, Clone)]
struct Grant {
    request_id: String,
    key: OverrideKey,
    used: bool,
}

/// The session's requests and overrides.
#[derive(Debug, Default)]
pub struct Ledger {
    requests: HashMap<String, Known>,
    grants: Vec<Grant>,
}

impl Ledger {
    /// The ledger of a session's state (at resume).
    pub fn from_state(state: &SessionState) -> Self {
        let mut ledger = Self::default();
        for record in &state.approvals {
            ledger.requests.insert(
                record.id.clone(),
                Known {
                    requester: record.requester_id,
                    key: super::need::record_key(record),
                    outcome: record.outcome,
                    decided_by: record.decided_by,
                },
            );
        }
        for grant in &state.overrides {
            ledger.grants.push(Grant {
                request_id: grant.request_id.clone(),
                key: grant.key.clone(),
                used: grant.used_by.is_some(),
            });
        }
        ledger
    }

    pub fn get(&self, id: &str) -> Option<&Known> {
        self.requests.get(id)
    }

    /// Records a request made, pending or decided.
    pub fn insert(&mut self, id: &str, known: Known) {
        self.requests.insert(id.to_string(), known);
    }

    /// Records the decision of a request (the first one stands).
    pub fn decide(&mut self, id: &str, outcome: ApprovalOutcome, decided_by: DecidedBy) {
        if let Some(known) = self.requests.get_mut(id)
            && known.outcome == ApprovalOutcome::Pending
        {
            known.outcome = outcome;
            known.decided_by = Some(decided_by);
        }
    }

    /// Whether request `id` has an override, used or not.
    pub fn overridden(&self, id: &str) -> bool {
        self.grants.iter().any(|grant| grant.request_id == id)
    }

    /// Records an override of request `id`.
    pub fn grant(&mut self, id: &str, key: OverrideKey, used: bool) {
        if !self.overridden(id) {
            self.grants.push(Grant {
                request_id: id.to_string(),
                key,
                used,
            });
        }
    }

    /// Uses up the oldest unused override for `key`; the request it overrode.
    pub fn take(&mut self, key: &OverrideKey) -> Option<String> {
        let grant = self
            .grants
            .iter_mut()
            .find(|grant| !grant.used && &grant.key == key)?;
        grant.used = true;
        Some(grant.request_id.clone())
    }
}
