//! `arbor mcp-server`: arbor as a stdio MCP server (rmcp's server side), so any MCP client can
//! hand a job to a tree. Tools: `start_tree {prompt, options}`, `tree_status {session}`,
//! `send {session, target, message, wake}`, `approve {session, request, decision}`,
//! `answer {session, timeout_ms}` (waits for the tree, with progress notifications). Tool
//! errors are results with `isError` and a message naming the problem. When the client goes
//! away, running trees are interrupted (state saved, resumable) before the server exits.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use super::runs::{Runs, TreeOptions};
use crate::error::CliError;

/// Serves MCP on stdin and stdout until the client closes them.
pub async fn serve(home: PathBuf) -> Result<u8, CliError> {
    let runs = Arc::new(Runs::new(home).map_err(CliError::failed)?);
    let server = ArborServer {
        runs: Arc::clone(&runs),
    };
    let service = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| CliError::failed(format!("mcp-server: the handshake failed: {err}")))?;
    let _ = service.waiting().await;
    runs.stop_all().await;
    Ok(0)
}

#[derive(Debug, Clone)]
struct ArborServer {
    runs: Arc<Runs>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArgs {
    prompt: String,
    #[serde(default)]
    options: TreeOptions,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArgs {
    session: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    session: String,
    target: String,
    message: String,
    #[serde(default)]
    wake: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveArgs {
    session: String,
    request: String,
    decision: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerArgs {
    session: String,
    timeout_ms: Option<u64>,
}

fn tools() -> Vec<Tool> {
    let schema = |value: Value| match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    };
    let session = json!({"type": "string", "description": "The session: its handle (amber-otter), its id or a unique prefix of it, or --last for the newest."});
    let tool = |name: &'static str, description: &'static str, input: Value, read_only: bool| {
        Tool::new(name, description, schema(input))
            .with_annotations(ToolAnnotations::new().read_only(read_only))
    };
    vec![
        tool(
            "start_tree",
            "Start an arbor tree: the root agent gets the prompt and the tree runs in the background. Returns the session id; follow it with tree_status and answer.",
            json!({"type": "object", "properties": {
                "prompt": {"type": "string", "description": "The root agent's task."},
                "options": {"type": "object", "description": "Flags of `arbor exec` by name.", "properties": {
                    "script": {"type": "string"}, "model": {"type": "string"},
                    "provider": {"type": "string", "enum": ["openai", "chat", "script"]},
                    "base_url": {"type": "string"}, "cwd": {"type": "string"},
                    "approval_policy": {"type": "string", "enum": ["never", "on-request", "untrusted"]},
                    "reviewer": {"type": "string", "enum": ["user", "guardian"]},
                    "sandbox": {"type": "string", "enum": ["read-only", "workspace-write", "danger-full-access"]},
                    "approval_wait": {"type": "integer", "minimum": 0, "description": "Seconds an approval request waits for `approve` (default 600)."},
                    "max_depth": {"type": "integer", "minimum": 0},
                    "max_running": {"type": "integer", "minimum": 1},
                    "max_resident": {"type": "integer", "minimum": 1},
                    "budget_tokens": {"type": "integer", "minimum": 1},
                    "no_project_docs": {"type": "boolean"}},
                    "additionalProperties": false}},
                "required": ["prompt"], "additionalProperties": false}),
            false,
        ),
        tool(
            "tree_status",
            "A session's agents (path, role, status, unread mail, pending approvals), its pending approval requests, and whether this server still runs it.",
            json!({"type": "object", "properties": {"session": session}, "required": ["session"], "additionalProperties": false}),
            true,
        ),
        tool(
            "send",
            "Mail from /root to an agent of a session. With wake, a follow-up that wakes it (a stopped session is run again until quiet); without, queued until its next turn.",
            json!({"type": "object", "properties": {"session": session,
                "target": {"type": "string", "description": "Agent path or thread id."},
                "message": {"type": "string"},
                "wake": {"type": "boolean", "default": false}},
                "required": ["session", "target", "message"], "additionalProperties": false}),
            false,
        ),
        tool(
            "approve",
            "Answer a pending approval request of a session (its id from tree_status).",
            json!({"type": "object", "properties": {"session": session,
                "request": {"type": "string", "description": "The approval request's id."},
                "decision": {"type": "string", "enum": ["approve", "deny"]}},
                "required": ["session", "request", "decision"], "additionalProperties": false}),
            false,
        ),
        tool(
            "answer",
            "Wait until a tree run by this server ends (progress notifications while it runs) and return the root's final answer; for another session, its root's last answer now.",
            json!({"type": "object", "properties": {"session": session,
                "timeout_ms": {"type": "integer", "minimum": 0, "description": "Return after this long even if the tree still runs."}},
                "required": ["session"], "additionalProperties": false}),
            true,
        ),
    ]
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|err| format!("invalid arguments for {tool}: {err}"))
}

fn done(result: Result<Value, String>) -> CallToolResponse {
    match result {
        Ok(value) => CallToolResponse::Complete(CallToolResult::structured(value)),
        Err(message) => {
            CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(message)]))
        }
    }
}

impl ServerHandler for ArborServer {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        config.server_info = Implementation::new("arbor", env!("CARGO_PKG_VERSION"));
        config.instructions = Some(
            "arbor runs a tree of coding agents. start_tree starts one and returns its session; \
             tree_status shows its agents and pending approvals; approve answers them; answer \
             waits for the final answer."
                .to_string(),
        );
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            "start_tree" => self.start_tree(arguments).await,
            "tree_status" => self.tree_status(arguments).await,
            "send" => self.send(arguments).await,
            "approve" => self.approve(arguments).await,
            "answer" => self.answer(arguments, &context).await,
            other => Err(format!(
                "unknown tool `{other}`: this server has start_tree, tree_status, send, approve and answer"
            )),
        };
        Ok(done(result))
    }
}

impl ArborServer {
    async fn start_tree(&self, arguments: Value) -> Result<Value, String> {
        let args: StartArgs = parse("start_tree", arguments)?;
        if args.prompt.trim().is_empty() {
            return Err("the prompt is empty: give the root agent a task".to_string());
        }
        let session = self.runs.start(&args.prompt, args.options).await?;
        Ok(json!({"session": session, "running": true}))
    }

    async fn tree_status(&self, arguments: Value) -> Result<Value, String> {
        let args: SessionArgs = parse("tree_status", arguments)?;
        let agents = self
            .runs
            .command(&["agents", &args.session, "--json"])
            .await?;
        let agents: Value = serde_json::from_str(&agents).map_err(|err| err.to_string())?;
        let approvals = self
            .runs
            .command(&["approvals", &args.session, "--json"])
            .await?;
        let approvals: Value = serde_json::from_str(&approvals).map_err(|err| err.to_string())?;
        let pending: Vec<Value> = approvals
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["outcome"] == "pending")
            .map(|a| json!({"id": a["id"], "path": a["path"], "action": a["action"]}))
            .collect();
        let session = agents[0]["id"].clone();
        let run = self.runs.run(&args.session).map(|(_, run)| run);
        let progress = run.map(|run| run.progress.borrow().clone());
        Ok(json!({
            "session": session,
            "running": progress.as_ref().is_some_and(|p| p.exit_code.is_none()),
            "exit_code": progress.as_ref().and_then(|p| p.exit_code),
            "final_message": progress.as_ref().and_then(|p| p.final_message.clone()),
            "agents": agents,
            "pending_approvals": pending,
        }))
    }

    async fn send(&self, arguments: Value) -> Result<Value, String> {
        let args: SendArgs = parse("send", arguments)?;
        if !args.wake {
            let id = self
                .runs
                .command(&["send", &args.session, &args.target, &args.message])
                .await?;
            return Ok(json!({"mail_id": id, "woke": false}));
        }
        let running = self
            .runs
            .run(&args.session)
            .is_some_and(|(_, run)| run.progress.borrow().exit_code.is_none());
        if running {
            // The live run takes the follow-up; `arbor followup` hands it over and prints its id.
            let id = self
                .runs
                .command(&["followup", &args.session, &args.target, &args.message])
                .await?;
            return Ok(json!({"mail_id": id, "woke": true}));
        }
        let session = self
            .runs
            .follow_up(&args.session, &args.target, &args.message)
            .await?;
        Ok(json!({"session": session, "woke": true, "running": true}))
    }

    async fn approve(&self, arguments: Value) -> Result<Value, String> {
        let args: ApproveArgs = parse("approve", arguments)?;
        let command = match args.decision.as_str() {
            "approve" | "allow" => "approve",
            "deny" => "deny",
            other => {
                return Err(format!("decision must be approve or deny, not `{other}`"));
            }
        };
        let said = self
            .runs
            .command(&[command, &args.session, &args.request])
            .await?;
        Ok(json!({"result": said}))
    }

    async fn answer(
        &self,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, String> {
        let args: AnswerArgs = parse("answer", arguments)?;
        let Some((session, run)) = self.runs.run(&args.session) else {
            return self.stored_answer(&args.session).await;
        };
        let token = context.meta.get_progress_token();
        let mut progress = run.progress.clone();
        let mut sent = 0;
        let deadline = args
            .timeout_ms
            .map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
        loop {
            let (lines, ended) = {
                let now = progress.borrow_and_update();
                (
                    now.lines[sent.min(now.lines.len())..].to_vec(),
                    now.exit_code.is_some(),
                )
            };
            if let Some(token) = &token {
                for line in lines {
                    sent += 1;
                    let note = ProgressNotificationParam::new(token.clone(), sent as f64)
                        .with_message(line);
                    let _ = context.peer.notify_progress(note).await;
                }
            } else {
                sent += lines.len();
            }
            if ended {
                break;
            }
            let changed = progress.changed();
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        return Ok(json!({"session": session, "running": true}));
                    }
                }
                None => {
                    if changed.await.is_err() {
                        break;
                    }
                }
            }
        }
        let end = run.progress.borrow().clone();
        let status = self
            .runs
            .command(&["agents", &session, "--json"])
            .await
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .map(|agents| agents[0]["status"].clone())
            .unwrap_or(Value::Null);
        let mut result = json!({
            "session": session,
            "running": false,
            "exit_code": end.exit_code,
            "final_message": end.final_message,
            "status": status,
        });
        if end.exit_code.is_some_and(|code| code != 0) && !end.stderr.trim().is_empty() {
            result["stderr"] = json!(end.stderr.trim());
        }
        Ok(result)
    }

    /// The answer of a session this server does not run: its root's last answer now.
    async fn stored_answer(&self, session: &str) -> Result<Value, String> {
        let agents = self.runs.command(&["agents", session, "--json"]).await?;
        let agents: Value = serde_json::from_str(&agents).map_err(|err| err.to_string())?;
        let root = &agents[0];
        Ok(json!({
            "session": root["id"],
            "running": false,
            "final_message": root["status"]["completed"],
            "status": root["status"],
        }))
    }
}
