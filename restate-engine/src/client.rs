//! The command line's side: arbor's handlers called through Restate's HTTP ingress, and the
//! admin API (registering a worker deployment).

use std::sync::Once;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::RestateError;
use crate::session::agent_key;
use crate::wire::{
    AgentHistory, AgentRow, AnswerReply, AnswerRequest, ApprovalRow, CloseRequest, EventsPage,
    EventsRequest, InboxReply, OutsideMail, ResumeReply, ResumeRequest, SentMail, StartRequest,
    Summary, ToolReply,
};
use arbor_protocol::{AgentPath, EventLine};

/// At most this many event lines in one page.
const PAGE: usize = 500;

/// reqwest is built without a bundled crypto provider; ring becomes the default once.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn http() -> Result<reqwest::Client, RestateError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|error| RestateError::Unreachable {
            url: String::new(),
            reason: error.to_string(),
        })
}

/// A key as one path segment of an ingress URL.
fn segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A POST with a JSON body; `None` sends none (a handler without input wants no body and no
/// content type).
async fn post<Req: Serialize + ?Sized, Res: DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
    body: Option<&Req>,
) -> Result<Res, RestateError> {
    let mut request = client.post(url);
    if let Some(body) = body {
        let body = serde_json::to_vec(body).map_err(|error| RestateError::Decode {
            url: url.to_string(),
            reason: error.to_string(),
        })?;
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request
        .send()
        .await
        .map_err(|error| RestateError::Unreachable {
            url: url.to_string(),
            reason: error.to_string(),
        })?;
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .map_err(|error| RestateError::Unreachable {
            url: url.to_string(),
            reason: error.to_string(),
        })?;
    if !(200..300).contains(&status) {
        return Err(RestateError::Status {
            url: url.to_string(),
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    let bytes = if bytes.is_empty() {
        &b"null"[..]
    } else {
        &bytes
    };
    serde_json::from_slice(bytes).map_err(|error| RestateError::Decode {
        url: url.to_string(),
        reason: error.to_string(),
    })
}

/// arbor's handlers through one Restate ingress (`--restate-url`).
#[derive(Debug, Clone)]
pub struct Ingress {
    http: reqwest::Client,
    base: String,
}

impl Ingress {
    pub fn new(url: &str) -> Result<Self, RestateError> {
        Ok(Self {
            http: http()?,
            base: url.trim_end_matches('/').to_string(),
        })
    }

    fn url(&self, service: &str, key: &str, handler: &str) -> String {
        format!("{}/{service}/{}/{handler}", self.base, segment(key))
    }

    /// Starts `session` (the root gets the prompt and begins its turn).
    pub async fn start(&self, session: &str, request: &StartRequest) -> Result<(), RestateError> {
        post(
            &self.http,
            &self.url("Session", session, "start"),
            Some(request),
        )
        .await
    }

    /// The session's events from number `from` on: its summary, then the lines numbered
    /// before its tail from their `Events` chunks (a page stops at a line still travelling),
    /// then the tail's (the summary holds the lines not sent to a chunk yet).
    pub async fn events(&self, session: &str, from: u64) -> Result<EventsPage, RestateError> {
        let summary: Summary =
            post::<(), _>(&self.http, &self.url("Session", session, "summary"), None).await?;
        let tail_from = summary.events - summary.tail.len() as u64;
        let mut events = Vec::new();
        let mut next = from;
        while next < tail_from && events.len() < PAGE {
            let request = EventsRequest {
                from: next,
                limit: (tail_from - next).min((PAGE - events.len()) as u64),
            };
            let key = crate::events::chunk_key(session, next);
            let lines: Vec<EventLine> = post(
                &self.http,
                &self.url("Events", &key, "page"),
                Some(&request),
            )
            .await?;
            if lines.is_empty() {
                break;
            }
            for mut line in lines {
                line.lsn = next;
                next += 1;
                events.push(line);
            }
        }
        if next >= tail_from {
            let skip = usize::try_from(next - tail_from).unwrap_or(usize::MAX);
            for mut line in summary.tail.into_iter().skip(skip) {
                if events.len() >= PAGE {
                    break;
                }
                line.lsn = next;
                next += 1;
                events.push(line);
            }
        }
        let all = next >= summary.events;
        Ok(EventsPage {
            events,
            next,
            completed: summary.completed && all,
            final_message: summary.final_message,
            root_status: summary.root_status,
            quiescent: summary.idle && all,
        })
    }

    /// The session's agents, root first.
    pub async fn agents(&self, session: &str) -> Result<Vec<AgentRow>, RestateError> {
        post::<(), _>(&self.http, &self.url("Session", session, "agents"), None).await
    }

    /// `interrupt_agent` on `target`, as `/root`.
    pub async fn interrupt(&self, session: &str, target: &str) -> Result<ToolReply, RestateError> {
        let request = CloseRequest {
            caller: AgentPath::root(),
            target: target.to_string(),
        };
        let url = self.url("Session", session, "interrupt");
        post(&self.http, &url, Some(&request)).await
    }

    /// `close_agent` on `target`, as `/root`.
    pub async fn close(&self, session: &str, target: &str) -> Result<ToolReply, RestateError> {
        let request = CloseRequest {
            caller: AgentPath::root(),
            target: target.to_string(),
        };
        let url = self.url("Session", session, "close");
        post(&self.http, &url, Some(&request)).await
    }

    /// Every approval request of the session and its decision.
    pub async fn approvals(&self, session: &str) -> Result<Vec<ApprovalRow>, RestateError> {
        post::<(), _>(&self.http, &self.url("Session", session, "approvals"), None).await
    }

    /// `arbor approve` (`approve`) or `arbor deny` of request `id`.
    pub async fn answer(
        &self,
        session: &str,
        id: &str,
        approve: bool,
    ) -> Result<Result<AnswerReply, String>, RestateError> {
        let request = AnswerRequest {
            id: id.to_string(),
            approve,
        };
        let url = self.url("Session", session, "answer");
        post(&self.http, &url, Some(&request)).await
    }

    /// Mail from `/root` to `target`: queue only, or a follow-up that wakes it.
    pub async fn send(
        &self,
        session: &str,
        target: &str,
        content: &str,
        followup: bool,
    ) -> Result<Result<SentMail, String>, RestateError> {
        let request = OutsideMail {
            target: target.to_string(),
            content: content.to_string(),
            followup,
        };
        post(
            &self.http,
            &self.url("Session", session, "send"),
            Some(&request),
        )
        .await
    }

    /// A new run of the root with `prompt`.
    pub async fn resume(&self, session: &str, prompt: &str) -> Result<ResumeReply, RestateError> {
        let request = ResumeRequest {
            prompt: prompt.to_string(),
        };
        post(
            &self.http,
            &self.url("Session", session, "resume"),
            Some(&request),
        )
        .await
    }

    /// The mail `target` has not taken yet.
    pub async fn inbox(
        &self,
        session: &str,
        target: &str,
    ) -> Result<Result<InboxReply, String>, RestateError> {
        let url = self.url("Session", session, "inbox");
        post(&self.http, &url, Some(target)).await
    }

    /// An agent's model history.
    pub async fn history(
        &self,
        session: &str,
        path: &AgentPath,
    ) -> Result<AgentHistory, RestateError> {
        let key = agent_key(session, path);
        post::<(), _>(&self.http, &self.url("Agent", &key, "history"), None).await
    }
}

/// Registers the worker deployment at `uri` with the admin API at `admin` (again, with
/// `force`, when it is known already: its services are discovered anew).
pub async fn register_deployment(admin: &str, uri: &str) -> Result<(), RestateError> {
    let client = http()?;
    let url = format!("{}/deployments", admin.trim_end_matches('/'));
    let _: serde_json::Value =
        post(&client, &url, Some(&json!({"uri": uri, "force": true}))).await?;
    Ok(())
}

/// Whether `url` answers 200 now.
pub async fn healthy(url: &str) -> bool {
    let Ok(client) = http() else {
        return false;
    };
    matches!(client.get(url).send().await, Ok(response) if response.status().is_success())
}
