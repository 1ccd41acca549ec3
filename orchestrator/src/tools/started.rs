//! A slow tool call started while its response still streams: the handle the turn collects its
//! output from, which stops the call when dropped (a cut turn stops it).

use tokio::task::JoinHandle;

/// A running call that is stopped when its handle is dropped (a cut turn stops it).
#[derive(Debug)]
pub struct Started(pub JoinHandle<String>);

impl Started {
    /// Waits for the call's output.
    pub async fn output(mut self) -> String {
        (&mut self.0)
            .await
            .unwrap_or_else(|err| format!("the tool failed to run: {err}"))
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.0.abort();
    }
}
