//! A small HTTP/1.1 server on `127.0.0.1` for provider tests: it answers each request with a
//! scripted reply (status, headers, a body sent as separate chunks that may end by dropping the
//! connection or stalling until the client goes away) and records every request it received.
//!
//! It serves loopback only, bounds what it reads and how long it stalls, and stops when the
//! `MockServer` is dropped.
//!
//! The event streams a reply carries (a scripted model response in the Responses, Chat
//! Completions or Messages format) are built in `streams` and `messages` and re-exported
//! here; `messages` also checks requests as the Messages API does
//! ([`MockServer::messages`]).

mod messages;
mod streams;

pub use messages::{
    ANTHROPIC_VERSION, check_request, messages_error, messages_events, messages_events_cut,
    messages_events_failing, messages_events_stopping, signature_of,
};
pub use streams::{
    Output, USAGE, chat_events, chat_events_cut, responses_events, responses_events_cut,
    split_every,
};

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The most requests one server answers; past this it closes connections.
pub const MAX_REQUESTS: usize = 10_000;
/// The largest request head and body read.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// The longest a `Part::Stall` waits for the client to leave.
const MAX_STALL: Duration = Duration::from_secs(30);

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body text, and the body parsed as JSON (`Null` when it is not JSON).
    pub raw_body: String,
    pub body: Value,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A piece of a reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Bytes sent as one HTTP chunk, flushed at once.
    Bytes(Vec<u8>),
    /// Close the connection here, without ending the body.
    Drop,
    /// Send nothing more and wait (bounded) until the client closes the connection.
    Stall,
    /// Hold the body here until the file exists (bounded like `Stall`), then go on: lets a
    /// test see that the client acted on what it received before the response ended.
    UntilFile(std::path::PathBuf),
}

/// What the server answers to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<Part>,
}

impl Reply {
    /// A `200` event stream sent as `chunks`, one HTTP chunk each.
    pub fn sse<I, C>(chunks: I) -> Self
    where
        I: IntoIterator<Item = C>,
        C: Into<Vec<u8>>,
    {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: chunks.into_iter().map(|c| Part::Bytes(c.into())).collect(),
        }
    }

    /// A JSON body with `status`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![Part::Bytes(body.to_string().into_bytes())],
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Ends the body by dropping the connection.
    pub fn then_drop(mut self) -> Self {
        self.body.push(Part::Drop);
        self
    }

    /// Ends the body by stalling until the client leaves.
    pub fn then_stall(mut self) -> Self {
        self.body.push(Part::Stall);
        self
    }
}

type Responder = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

struct Shared {
    responder: Responder,
    requests: Mutex<Vec<Recorded>>,
    /// How many stalled connections the client has closed.
    left: watch::Sender<usize>,
}

impl Shared {
    fn requests(&self) -> MutexGuard<'_, Vec<Recorded>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running mock server. Dropping it stops the server and every connection.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockServer {
    /// A server that answers every request with what `responder` picks for it.
    pub async fn start(responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            responder: Box::new(responder),
            requests: Mutex::new(Vec::new()),
            left: watch::Sender::new(0),
        });
        let task = tokio::spawn(accept(listener, Arc::clone(&shared)));
        Self { addr, shared, task }
    }

    /// A server that answers requests with `replies` in order, then with a 500.
    pub async fn with_replies(replies: Vec<Reply>) -> Self {
        let queue = Mutex::new(VecDeque::from(replies));
        Self::start(move |_| {
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .unwrap_or_else(|| {
                    Reply::json(
                        500,
                        &serde_json::json!({"error": {"message": "mock: no reply queued"}}),
                    )
                })
        })
        .await
    }

    /// A Messages API server: a request the real API would refuse ([`check_request`]) gets
    /// its `400 invalid_request_error`; any other is answered by `responder`.
    pub async fn messages(responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::start(move |request| match check_request(request) {
            Ok(()) => responder(request),
            Err(message) => messages_error(400, "invalid_request_error", &message),
        })
        .await
    }

    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests().clone()
    }

    /// Waits until the client has closed `count` stalled connections.
    pub async fn wait_for_clients_to_leave(&self, count: usize) {
        let mut left = self.shared.left.subscribe();
        left.wait_for(|n| *n >= count)
            .await
            .expect("the server is running");
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // The accept task owns the connection tasks: aborting it aborts them all.
        self.task.abort();
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        if shared.requests().len() >= MAX_REQUESTS {
            break;
        }
        connections.spawn(serve(stream, Arc::clone(&shared)));
        while connections.try_join_next().is_some() {}
    }
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut reader, &mut buffer).await {
        {
            let mut requests = shared.requests();
            if requests.len() >= MAX_REQUESTS {
                return;
            }
            requests.push(request.clone());
        }
        let reply = (shared.responder)(&request);
        if !write_reply(&mut reader, &mut writer, reply, &shared).await {
            return;
        }
    }
}

/// Reads one request (head and `Content-Length` body); `None` when the client closed or sent
/// something this server does not take.
async fn read_request(reader: &mut OwnedReadHalf, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_HEAD_BYTES || !read_more(reader, buffer).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next()?.split(' ');
    let (method, path) = (start.next()?.to_string(), start.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    if length > MAX_BODY_BYTES {
        return None;
    }
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        if !read_more(reader, buffer).await {
            return None;
        }
    }
    let raw_body = String::from_utf8_lossy(&buffer[body_start..body_start + length]).into_owned();
    buffer.drain(..body_start + length);
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    })
}

async fn read_more(reader: &mut OwnedReadHalf, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0_u8; 16 * 1024];
    match reader.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buffer.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// Writes `reply` with chunked framing; `false` when the connection is finished.
async fn write_reply(
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
    reply: Reply,
    shared: &Shared,
) -> bool {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\n\r\n");
    if writer.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for part in reply.body {
        match part {
            Part::Bytes(bytes) if bytes.is_empty() => {}
            Part::Bytes(bytes) => {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                if writer.write_all(&frame).await.is_err() || writer.flush().await.is_err() {
                    return false;
                }
            }
            Part::Drop => return false,
            Part::UntilFile(path) => {
                let appeared = async {
                    while !path.exists() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                };
                let _ = tokio::time::timeout(MAX_STALL, appeared).await;
            }
            Part::Stall => {
                let mut sink = [0_u8; 1024];
                let gone =
                    async { while matches!(reader.read(&mut sink).await, Ok(n) if n > 0) {} };
                if tokio::time::timeout(MAX_STALL, gone).await.is_ok() {
                    shared.left.send_modify(|n| *n += 1);
                }
                return false;
            }
        }
    }
    writer.write_all(b"0\r\n\r\n").await.is_ok() && writer.flush().await.is_ok()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
