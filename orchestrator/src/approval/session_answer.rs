//! "Allow for the session" given from another process (`arbor ui`): a `user_answer` line with
//! `for_session` makes the driver remember the request's command and cwd for the rest of its
//! run, as the terminal's "approve for this session" does.

use crate::ctx::Ctx;

/// Remembers request `id`'s command in its cwd as approved for the session.
pub fn approve_for_session(ctx: &Ctx, id: &str) {
    let key = ctx
        .approvals
        .ledger()
        .get(id)
        .and_then(|known| known.key.clone());
    if let Some(key) = key {
        ctx.approvals.cache_for_session(&key);
    }
}
