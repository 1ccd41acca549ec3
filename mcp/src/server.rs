//! One configured server for one session: started when first needed and shared by every agent;
//! its tool list fixed by its first listing (so every request offers the same tools); started
//! at most [`MAX_STARTS`] times — after a crash or a failed start it is started once more, then
//! its tools answer with the reason it is unavailable. Stopping kills its process tree.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::Value;

use crate::cache::ToolCache;
use crate::config::{ServerConfig, ServerDirs};
use crate::connection::Connection;
use crate::listing::{Listing, listed_tool, offer_all};
use crate::naming::{ListedTool, McpTool};

/// A server is started at most this often in a session: once, and once more after it crashed
/// or failed to start.
pub const MAX_STARTS: u32 = 2;

/// Why no connection could be had.
enum Unavailable {
    /// Given up on for the session, with the reason.
    Dead(String),
    /// This start failed; one is left.
    Failed(String),
    /// The session is ending.
    Stopped,
}

impl Unavailable {
    /// The reason alone (for a listing).
    fn why(&self) -> String {
        match self {
            Self::Dead(why) | Self::Failed(why) => why.clone(),
            Self::Stopped => "the session is ending".to_string(),
        }
    }

    /// What a call's model reads.
    fn message(&self, server: &str) -> String {
        match self {
            Self::Dead(why) => {
                format!("mcp server `{server}` is unavailable in this session: {why}")
            }
            Self::Failed(why) => format!(
                "mcp server `{server}` did not start: {why}; it is started again at the next call"
            ),
            Self::Stopped => format!("mcp server `{server}` is stopped: the session is ending"),
        }
    }
}

enum State {
    /// Not running: never started, or crashed with a start left.
    Idle,
    Running(Arc<Connection>),
    /// Given up on, with the reason.
    Dead(String),
    /// The session stopped.
    Stopped,
}

struct Slot {
    state: State,
    starts: u32,
}

/// One server of one session.
pub(crate) struct Server {
    pub(crate) config: ServerConfig,
    dirs: ServerDirs,
    /// Where the tool lists it gives are cached.
    cache: Option<ToolCache>,
    /// What it listed last, from the cache: offered without starting it.
    cached: Option<Vec<ListedTool>>,
    fingerprint: String,
    /// What the started server listed, when its listing came from the cache.
    live: tokio::sync::OnceCell<Result<Vec<ListedTool>, String>>,
    slot: tokio::sync::Mutex<Slot>,
    listing: tokio::sync::OnceCell<Arc<Listing>>,
    /// Things the user should hear about (starts, crashes, tools left out), taken by the caller.
    notices: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    pub(crate) fn new(
        config: ServerConfig,
        dirs: ServerDirs,
        cache: Option<ToolCache>,
        cached: Option<Vec<ListedTool>>,
    ) -> Self {
        Self {
            fingerprint: crate::cache::fingerprint(&config),
            config,
            dirs,
            cache,
            cached,
            live: tokio::sync::OnceCell::new(),
            slot: tokio::sync::Mutex::new(Slot {
                state: State::Idle,
                starts: 0,
            }),
            listing: tokio::sync::OnceCell::new(),
            notices: Mutex::new(Vec::new()),
        }
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    fn notice(&self, message: String) {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message);
    }

    pub(crate) fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether the server has been started in this session (and not given up on).
    pub(crate) async fn running(&self) -> bool {
        matches!(self.slot.lock().await.state, State::Running(_))
    }

    /// The listing, if the server has been listed.
    pub(crate) fn listed(&self) -> Option<Arc<Listing>> {
        self.listing.get().cloned()
    }

    /// The tools this session offers, fixed by the first listing (which starts the server).
    pub(crate) async fn listing(&self) -> Arc<Listing> {
        let listing = self.listing.get_or_init(|| async {
            let listing = self.list().await;
            for notice in &listing.notices {
                self.notice(notice.clone());
            }
            Arc::new(listing)
        });
        Arc::clone(listing.await)
    }

    async fn list(&self) -> Listing {
        if let Some(tools) = &self.cached {
            let mut listing = offer_all(&self.config, tools);
            listing.cached = true;
            return listing;
        }
        let conn = match self.connection().await {
            Ok(conn) => conn,
            Err(unavailable) => {
                return Listing {
                    error: Some(unavailable.why()),
                    ..Listing::default()
                };
            }
        };
        let listed =
            match tokio::time::timeout(self.config.startup_timeout, conn.peer().list_all_tools())
                .await
            {
                Ok(Ok(tools)) => tools,
                Ok(Err(err)) => {
                    let error = format!("it did not list its tools: {err}");
                    self.failed(&conn, &error).await;
                    return Listing {
                        error: Some(error),
                        ..Listing::default()
                    };
                }
                Err(_) => {
                    let error = format!(
                        "it did not list its tools within {} ms (startup_timeout_ms)",
                        self.config.startup_timeout.as_millis()
                    );
                    self.failed(&conn, &error).await;
                    return Listing {
                        error: Some(error),
                        ..Listing::default()
                    };
                }
            };
        let listed: Vec<ListedTool> = listed.iter().map(listed_tool).collect();
        self.remember(&listed).await;
        offer_all(&self.config, &listed)
    }

    /// Caches what the server listed; true when it differs from what was cached.
    async fn remember(&self, listed: &[ListedTool]) -> bool {
        let Some(cache) = &self.cache else {
            return false;
        };
        let (cache, name, print) = (
            cache.clone(),
            self.name().to_string(),
            self.fingerprint.clone(),
        );
        let listed = listed.to_vec();
        tokio::task::spawn_blocking(move || cache.store(&name, &print, &listed))
            .await
            .unwrap_or(false)
    }

    /// `tool` as offered, checked against the running server when the offer came from the
    /// cache: the server is started (it is needed now), lists its tools once, and a tool it
    /// no longer has, or no longer marks read-only, is refused or judged by what it says now.
    pub(crate) async fn current(&self, tool: &McpTool) -> Result<McpTool, String> {
        let listing = self.listing().await;
        if !listing.cached {
            return Ok(tool.clone());
        }
        let live = self
            .live
            .get_or_init(|| async {
                let conn = self
                    .connection()
                    .await
                    .map_err(|unavailable| unavailable.message(self.name()))?;
                let listed = tokio::time::timeout(
                    self.config.startup_timeout,
                    conn.peer().list_all_tools(),
                )
                .await
                .map_err(|_| {
                    format!(
                        "mcp server `{}` did not list its tools within {} ms (startup_timeout_ms)",
                        self.name(),
                        self.config.startup_timeout.as_millis()
                    )
                })?
                .map_err(|err| format!("mcp server `{}` did not list its tools: {err}", self.name()))?;
                let listed: Vec<ListedTool> = listed.iter().map(listed_tool).collect();
                if self.remember(&listed).await {
                    self.notice(format!(
                        "mcp server `{}` lists other tools than it did when they were cached; this session keeps the tools it offered, the new list applies from the next session",
                        self.name()
                    ));
                }
                Ok(listed)
            })
            .await;
        let live = match live {
            Ok(live) => live,
            Err(error) => return Err(error.clone()),
        };
        match live.iter().find(|listed| listed.name == tool.name) {
            Some(now) => Ok(McpTool {
                read_only: tool.read_only && now.read_only,
                ..tool.clone()
            }),
            None => Err(format!(
                "tool `{}` is no longer offered by mcp server `{}`: its tools changed since they were cached (the new list applies from the next session)",
                tool.qualified,
                self.name()
            )),
        }
    }

    /// A live connection: the running one, or a new start if one is left.
    async fn connection(&self) -> Result<Arc<Connection>, Unavailable> {
        let mut slot = self.slot.lock().await;
        loop {
            match &slot.state {
                State::Running(conn) if !conn.closed() => return Ok(Arc::clone(conn)),
                State::Running(conn) => {
                    // It died between two calls.
                    let conn = Arc::clone(conn);
                    let why = format!("it exited{}", conn.diagnostics().describe(false));
                    conn.shutdown().await;
                    slot.state = self.after_failure(slot.starts, &why);
                }
                State::Dead(why) => return Err(Unavailable::Dead(why.clone())),
                State::Stopped => return Err(Unavailable::Stopped),
                State::Idle => {
                    slot.starts += 1;
                    let attempt = slot.starts;
                    match crate::connection::connect(&self.config, &self.dirs).await {
                        Ok(conn) => {
                            if attempt > 1 {
                                self.notice(format!(
                                    "mcp server `{}` restarted (start {attempt} of {MAX_STARTS})",
                                    self.name()
                                ));
                            }
                            slot.state = State::Running(Arc::clone(&conn));
                            return Ok(conn);
                        }
                        Err(why) => {
                            slot.state = self.after_failure(attempt, &why);
                            return Err(match &slot.state {
                                State::Dead(why) => Unavailable::Dead(why.clone()),
                                _ => Unavailable::Failed(why),
                            });
                        }
                    }
                }
            }
        }
    }

    /// The state after a crash or a failed start, with a notice.
    fn after_failure(&self, starts: u32, why: &str) -> State {
        if starts >= MAX_STARTS {
            self.notice(format!(
                "mcp server `{}` is unavailable for the rest of the session: {why}",
                self.name()
            ));
            State::Dead(format!("{why} (it was started {starts} times)"))
        } else {
            self.notice(format!("mcp server `{}` failed: {why}", self.name()));
            State::Idle
        }
    }

    /// Marks `conn` as failed (if it is still the running one) and kills it.
    async fn failed(&self, conn: &Arc<Connection>, why: &str) {
        let mut slot = self.slot.lock().await;
        if let State::Running(running) = &slot.state
            && Arc::ptr_eq(running, conn)
        {
            slot.state = self.after_failure(slot.starts, why);
        }
        drop(slot);
        conn.shutdown().await;
    }

    /// Calls `tool` with `arguments` (a JSON object or nothing); the model-visible result.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<Value>,
    ) -> Result<String, String> {
        let arguments = match arguments {
            None => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => return Err("the arguments must be one JSON object".to_string()),
        };
        let conn = self
            .connection()
            .await
            .map_err(|unavailable| unavailable.message(self.name()))?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let timeout = self.config.tool_timeout;
        // Dropping the request (a timeout, an interrupted turn) tells the server to cancel it.
        // A server that exits fails the call at once, even if something it started still
        // holds its stdout open.
        let answered = async {
            tokio::select! {
                result = conn.peer().call_tool(params) => result,
                () = conn.diagnostics().exited() => Err(ServiceError::TransportClosed),
            }
        };
        match tokio::time::timeout(timeout, answered).await {
            Err(_) => Err(format!(
                "mcp server `{}` did not answer `{tool}` within {} ms (tool_timeout_ms); the call was cancelled",
                self.name(),
                timeout.as_millis()
            )),
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(value) => crate::render::render(&value),
                Err(err) => Err(format!("the result could not be read: {err}")),
            },
            Ok(Err(ServiceError::McpError(error))) => Err(format!(
                "mcp server `{}` refused the call: {}",
                self.name(),
                error.message
            )),
            Ok(Err(err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                // Give the process watcher a moment to see the exit, for the message.
                let why = format!("it exited{}", conn.exit_reason().await);
                self.failed(&conn, &why).await;
                let next = if matches!(self.slot.lock().await.state, State::Dead(_)) {
                    "it is not started again in this session"
                } else {
                    "it is started again at the next call"
                };
                tracing::debug!(error = %err, server = self.name(), "mcp call failed");
                Err(format!(
                    "mcp server `{}` stopped during `{tool}`: {why}; whether the call took effect is unknown; {next}",
                    self.name()
                ))
            }
            Ok(Err(err)) => Err(format!("mcp server `{}`: {err}", self.name())),
        }
    }

    /// Stops the server for good (the session ends): its process tree is killed.
    pub(crate) async fn stop(&self) {
        let mut slot = self.slot.lock().await;
        let previous = std::mem::replace(&mut slot.state, State::Stopped);
        drop(slot);
        if let State::Running(conn) = previous {
            conn.shutdown().await;
        }
    }
}
