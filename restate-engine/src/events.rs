//! The `Events` virtual object (key: `<session>/<chunk>`): one chunk of a session's event
//! list, [`CHUNK`] lines numbered by the session. The session sends each invocation's lines
//! one-way to their chunks; the follower reads pages of them (shared) without receiving the
//! tree. A line is stored under its number, so lines that arrive out of order land in place,
//! and a page stops at the first line not yet arrived. State is loaded lazily: an append
//! writes its lines without reading the chunk.

use arbor_protocol::EventLine;
use restate_sdk::prelude::*;

use crate::wire::EventsRequest;

/// How many lines one chunk holds.
pub const CHUNK: u64 = 256;

/// The key of the chunk that holds line `lsn` of `session`.
pub fn chunk_key(session: &str, lsn: u64) -> String {
    format!("{session}/{}", lsn / CHUNK)
}

fn line_key(lsn: u64) -> String {
    format!("l{}", lsn % CHUNK)
}

/// The `Events` object.
#[derive(Debug, Default)]
pub struct Events;

#[restate_sdk::object(name = "Events", lazy_state)]
impl Events {
    /// Stores lines of this chunk, each under its number (a line's own `lsn` is not
    /// serialized, so the number travels beside it).
    #[handler]
    async fn append(
        &self,
        ctx: ObjectContext<'_>,
        lines: Json<Vec<(u64, EventLine)>>,
    ) -> HandlerResult<()> {
        for (lsn, line) in lines.into_inner() {
            ctx.set(&line_key(lsn), Json(line));
        }
        Ok(())
    }

    /// Lines from number `from` on, at most `limit`, up to the first one not yet arrived or
    /// the end of the chunk.
    #[handler]
    async fn page(
        &self,
        ctx: SharedObjectContext<'_>,
        request: Json<EventsRequest>,
    ) -> HandlerResult<Json<Vec<EventLine>>> {
        let request = request.into_inner();
        let end = (request.from / CHUNK + 1) * CHUNK;
        let end = end.min(request.from.saturating_add(request.limit));
        // Every read is sent before the first answer is awaited (one round trip).
        let keys: Vec<String> = (request.from..end).map(line_key).collect();
        let gets: Vec<_> = keys
            .iter()
            .map(|key| ctx.get::<Json<EventLine>>(key))
            .collect();
        let mut lines = Vec::new();
        for get in gets {
            match get.await? {
                Some(line) => lines.push(line.into_inner()),
                None => break,
            }
        }
        Ok(Json(lines))
    }
}
