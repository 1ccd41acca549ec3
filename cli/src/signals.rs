//! Ctrl-C and SIGTERM for the commands that run a tree: the first one interrupts it.

/// Ctrl-C (SIGINT) and SIGTERM, caught from the moment this is made.
pub struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Resolves on the first of them (never, for one that could not be caught).
    pub async fn first(&mut self) {
        async fn one(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = one(self.interrupt.as_mut()) => {}
            () = one(self.terminate.as_mut()) => {}
        }
    }
}
