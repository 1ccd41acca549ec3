//! The one error type of the Restate engine's client and worker side.

/// What went wrong talking to Restate or serving it.
#[derive(Debug, thiserror::Error)]
pub enum RestateError {
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot reach Restate at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Restate answered {status} to {url}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("unexpected answer from {url}: {reason}")]
    Decode { url: String, reason: String },
    #[error("the Restate server did not become ready within {seconds} s: {detail}")]
    NotReady { seconds: u64, detail: String },
    #[error("cannot start the Restate server {program}: {reason}")]
    Server { program: String, reason: String },
}
