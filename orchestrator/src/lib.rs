//! The arbor runtime: the `Orchestrator` facade, the agent registry, one task per resident agent,
//! the turn loop, multi-agent tools, residency and revival, the approval broker and the lease.
