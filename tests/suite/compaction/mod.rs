//! Context compaction: a new history window when a request would pass `compact_at` of the
//! model's context window (`docs/compaction.md`), on the scripted model, against the mock
//! servers of both HTTP providers, for the guardian, and by hand (`arbor compact`).

mod guardian;
mod http;
mod manual;
mod scripted;
