//! The `Floor` virtual object the benchmark calls: handlers that do as little as Restate lets
//! them, each adding one thing (a journaled step, a state value, a call to another object).

use restate_sdk::prelude::*;

/// The state key of `state`.
const BLOB: &str = "blob";

/// The benchmark's object; it holds nothing of its own.
#[derive(Debug)]
pub struct Floor;

#[restate_sdk::object(name = "Floor")]
impl Floor {
    /// Nothing: the cost of an invocation.
    #[handler]
    async fn noop(&self, _ctx: ObjectContext<'_>) -> HandlerResult<()> {
        Ok(())
    }

    /// One journaled step that does nothing.
    #[handler]
    async fn step(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        ctx.run(|| async { Ok(()) }).name("nothing").await?;
        Ok(())
    }

    /// Reads the state value and writes it back changed (a new one of `size` bytes when the
    /// held one has another size).
    #[handler]
    async fn state(&self, ctx: ObjectContext<'_>, size: u64) -> HandlerResult<()> {
        let size = usize::try_from(size).map_err(|_| TerminalError::new("size too large"))?;
        let mut value = match ctx.get::<Vec<u8>>(BLOB).await? {
            Some(held) if held.len() == size => held,
            _ => vec![0x5a; size],
        };
        if let Some(first) = value.first_mut() {
            *first = first.wrapping_add(1);
        }
        ctx.set(BLOB, value);
        Ok(())
    }

    /// A one-way send of `noop` to the object `target`.
    #[handler]
    async fn send_to(&self, ctx: ObjectContext<'_>, target: String) -> HandlerResult<()> {
        ctx.object_client::<FloorClient>(target).noop().send();
        Ok(())
    }

    /// A request-response call of `noop` on the object `target`.
    #[handler]
    async fn call_to(&self, ctx: ObjectContext<'_>, target: String) -> HandlerResult<()> {
        ctx.object_client::<FloorClient>(target)
            .noop()
            .call()
            .await?;
        Ok(())
    }
}
