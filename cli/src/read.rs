//! The read commands: `tree`, `agents`, `sessions`, `log`, `mail`. They only read the store and
//! the rollouts, never revive anything, and report turns in flight under a dead driver as
//! `interrupted: process_exit`. A mail counts as unread only while the store shows it
//! unconsumed *and* its recipient's rollout has no `mail_consumed` line for it: the store's
//! consumed mark is committed a little after that line, and a process killed in between leaves
//! the mark behind until the next driver deduplicates.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use arbor_agent_graph::{EdgeStatus, SessionTree, Store, ThreadRecord};
use arbor_orchestrator::{Lease, reported_status};
use arbor_protocol::{AgentPath, AgentStatus, MailId, ResponseItem, RolloutItem, ThreadId, Usage};
use arbor_rollout::{Replay, read_rollout};
use serde_json::{Value, json};

use crate::args::{LogArgs, MailArgs, ReadArgs, TreeArgs, TreeFormat};
use crate::error::CliError;

/// One agent as the read commands show it.
struct Row {
    record: ThreadRecord,
    status: AgentStatus,
    edge: Option<EdgeStatus>,
    resident: bool,
    unread: u64,
    pending_approvals: u64,
    usage: Usage,
}

impl Row {
    fn to_json(&self) -> Value {
        json!({
            "id": self.record.id,
            "path": self.record.path,
            "parent_id": self.record.parent_id,
            "depth": self.record.depth,
            "nickname": self.record.nickname,
            "role": self.record.role,
            "model": self.record.model,
            "status": self.status,
            "edge": self.edge.map(EdgeStatus::as_str),
            "resident": self.resident,
            "unread": self.unread,
            "pending_approvals": self.pending_approvals,
            "usage": self.usage,
        })
    }
}

/// A session's store and root, found by id or unique prefix.
struct SessionView {
    store: Store,
    root: ThreadRecord,
    driven: bool,
}

fn open_session(home: &Path, session: &str) -> Result<SessionView, CliError> {
    let store = open_store(home)?;
    let root = store
        .find_session_by_prefix(session)
        .map_err(|err| CliError::usage(err.to_string()))?;
    let driven = Lease::holder(home, root.id).is_some();
    Ok(SessionView {
        store,
        root,
        driven,
    })
}

pub fn open_store(home: &Path) -> Result<Store, CliError> {
    if !home.join(arbor_agent_graph::STATE_FILE_NAME).exists() {
        return Err(CliError::usage(format!(
            "no arbor state in {}: run `arbor exec` first, or pass --home",
            home.display()
        )));
    }
    Ok(Store::open(home)?)
}

fn rows(view: &SessionView) -> Result<Vec<Row>, CliError> {
    let session = view.root.session_id;
    let threads = view.store.threads_in_session(session)?;
    let mut unread: HashMap<ThreadId, Vec<MailId>> = HashMap::new();
    for queued in view.store.unconsumed_in_session(session)? {
        unread
            .entry(queued.recipient_id)
            .or_default()
            .push(queued.mail.id);
    }
    let mut approvals: HashMap<ThreadId, u64> = HashMap::new();
    for request in view.store.pending_approvals(session)? {
        *approvals.entry(request.requester_id).or_default() += 1;
    }
    let mut rows = Vec::with_capacity(threads.len());
    for record in threads {
        let edge = view.store.edge(record.id)?.map(|(_, status)| status);
        let status = reported_status(&record, view.driven);
        let (usage, consumed) = replayed(Path::new(&record.rollout_path));
        let unread = unread.get(&record.id).map_or(0, |ids| {
            ids.iter().filter(|id| !consumed.contains(id)).count() as u64
        });
        rows.push(Row {
            usage,
            edge,
            resident: view.driven && edge != Some(EdgeStatus::Closed),
            unread,
            pending_approvals: approvals.get(&record.id).copied().unwrap_or(0),
            status,
            record,
        });
    }
    rows.sort_by(|a, b| {
        (a.record.depth, a.record.path.as_str()).cmp(&(b.record.depth, b.record.path.as_str()))
    });
    Ok(rows)
}

/// Tokens an agent used, summed from its rollout's `usage` lines, and the mail its rollout
/// shows consumed. An unreadable rollout counts as empty (the row still shows the store's view).
fn replayed(rollout: &Path) -> (Usage, HashSet<MailId>) {
    read_rollout(rollout)
        .map(|read| {
            let replay = Replay::from_read(&read);
            (replay.usage, replay.consumed)
        })
        .unwrap_or_default()
}

fn total(rows: &[Row]) -> Usage {
    rows.iter().fold(Usage::default(), |mut sum, row| {
        sum.input_tokens += row.usage.input_tokens;
        sum.cached_input_tokens += row.usage.cached_input_tokens;
        sum.output_tokens += row.usage.output_tokens;
        sum
    })
}

/// Rows reachable from the root through open edges (all edges with `all`).
fn visible(rows: Vec<Row>, root: ThreadId, all: bool) -> Vec<Row> {
    let mut shown: std::collections::HashSet<ThreadId> = [root].into();
    let mut out = Vec::new();
    for row in rows {
        let parent_shown = row.record.parent_id.is_none_or(|p| shown.contains(&p));
        let edge_ok = all || row.edge != Some(EdgeStatus::Closed);
        if row.record.id == root || (parent_shown && edge_ok) {
            shown.insert(row.record.id);
            out.push(row);
        }
    }
    out
}

pub fn agents(home: &Path, args: &ReadArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let rows = rows(&view)?;
    if args.json {
        let list: Vec<Value> = rows.iter().map(Row::to_json).collect();
        println!("{}", Value::Array(list));
        return Ok(());
    }
    for row in &rows {
        println!(
            "{}  {}  {}  {}  edge={}  resident={}  unread={}  approvals={}  tokens={}",
            row.record.path,
            row.record.nickname.as_deref().unwrap_or("-"),
            row.record.role,
            row.status,
            row.edge.map_or("-", EdgeStatus::as_str),
            row.resident,
            row.unread,
            row.pending_approvals,
            row.usage.input_tokens + row.usage.output_tokens
        );
    }
    let sum = total(&rows);
    println!(
        "tree: {} input ({} cached) and {} output tokens",
        sum.input_tokens, sum.cached_input_tokens, sum.output_tokens
    );
    Ok(())
}

pub fn tree(home: &Path, args: &TreeArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    if args.json {
        let rows = visible(rows(&view)?, view.root.id, args.all);
        let mut tree = nest(&rows, view.root.id);
        tree["tree_usage"] = serde_json::to_value(total(&rows)).unwrap_or(Value::Null);
        println!("{tree}");
        return Ok(());
    }
    let mut tree = SessionTree::load(&view.store, view.root.id, args.all)?;
    let driven = view.driven;
    tree.adjust_records(|record| record.status = reported_status(record, driven));
    let text = match args.format {
        TreeFormat::Text => tree.to_text(),
        TreeFormat::Dot => tree.to_dot(),
        TreeFormat::Mermaid => tree.to_mermaid(),
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(())
}

fn nest(rows: &[Row], id: ThreadId) -> Value {
    let Some(row) = rows.iter().find(|r| r.record.id == id) else {
        return Value::Null;
    };
    let mut value = row.to_json();
    let children: Vec<Value> = rows
        .iter()
        .filter(|r| r.record.parent_id == Some(id))
        .map(|r| nest(rows, r.record.id))
        .collect();
    value["children"] = Value::Array(children);
    value
}

pub fn sessions(home: &Path, json: bool) -> Result<(), CliError> {
    let store = open_store(home)?;
    let mut list = Vec::new();
    for root in store.sessions()? {
        let driven = Lease::holder(home, root.id).is_some();
        let agents = store.threads_in_session(root.session_id)?.len();
        list.push(json!({
            "id": root.id,
            "created_at": root.created_at,
            "cwd": root.cwd,
            "prompt": first_prompt(Path::new(&root.rollout_path)),
            "agents": agents,
            "status": reported_status(&root, driven),
        }));
    }
    if json {
        println!("{}", Value::Array(list));
        return Ok(());
    }
    for s in &list {
        let prompt = s["prompt"].as_str().unwrap_or("");
        let status: AgentStatus =
            serde_json::from_value(s["status"].clone()).unwrap_or(AgentStatus::NotFound);
        println!(
            "{}  {}  {} agents  {}  {}",
            s["id"].as_str().unwrap_or(""),
            s["created_at"].as_str().unwrap_or(""),
            s["agents"],
            status.name(),
            arbor_protocol::text::truncate_middle(&prompt.replace('\n', " "), 80)
        );
    }
    Ok(())
}

fn first_prompt(rollout: &Path) -> Option<String> {
    let read = read_rollout(rollout).ok()?;
    read.items().find_map(|item| match item {
        RolloutItem::ResponseItem(ResponseItem::Message { role, content }) if role == "user" => {
            Some(content.clone())
        }
        _ => None,
    })
}

/// Finds a thread of the session by path (open agents first) or by id.
fn find_thread(view: &SessionView, target: &str) -> Result<ThreadRecord, CliError> {
    let threads = view.store.threads_in_session(view.root.session_id)?;
    if let Ok(id) = ThreadId::parse(target) {
        return threads.into_iter().find(|t| t.id == id).ok_or_else(|| {
            CliError::usage(format!(
                "agent `{target}` not found in session {}",
                view.root.id
            ))
        });
    }
    let path = AgentPath::root()
        .resolve(target)
        .map_err(|err| CliError::usage(format!("target `{target}`: {err}")))?;
    let mut matches: Vec<ThreadRecord> = threads.into_iter().filter(|t| t.path == path).collect();
    let mut open = None;
    for (index, record) in matches.iter().enumerate() {
        let edge = view.store.edge(record.id)?;
        if record.parent_id.is_none() || edge.is_some_and(|(_, s)| s == EdgeStatus::Open) {
            open = Some(index);
        }
    }
    match open {
        Some(index) => Ok(matches.swap_remove(index)),
        None => matches.pop().ok_or_else(|| {
            CliError::usage(format!(
                "agent path `{path}` not found in session {}",
                view.root.id
            ))
        }),
    }
}

pub fn log(home: &Path, args: &LogArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let thread = find_thread(&view, args.target.as_deref().unwrap_or("/root"))?;
    let read = read_rollout(Path::new(&thread.rollout_path))
        .map_err(|err| CliError::failed(err.to_string()))?;
    for notice in &read.notices {
        eprintln!("notice: {notice}");
    }
    for (_, line) in &read.lines {
        if args.json {
            println!("{}", serde_json::to_string(line).unwrap_or_default());
        } else {
            println!(
                "{} {}",
                line.timestamp,
                crate::logtext::describe(&line.item)
            );
        }
    }
    Ok(())
}

pub fn mail(home: &Path, args: &MailArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let thread = find_thread(&view, &args.target)?;
    let (_, consumed) = replayed(Path::new(&thread.rollout_path));
    let mail: Vec<_> = view
        .store
        .unconsumed_mail(thread.id)?
        .into_iter()
        .filter(|m| !consumed.contains(&m.id))
        .collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&mail).unwrap_or_else(|_| "[]".into())
        );
        return Ok(());
    }
    if mail.is_empty() {
        eprintln!("no unread mail for {}", thread.path);
    }
    for m in &mail {
        println!(
            "{}  {}  {} → {}{}\n{}\n",
            m.id,
            m.kind.as_str(),
            m.author,
            m.recipient,
            if m.trigger_turn { "  (wakes)" } else { "" },
            m.content
        );
    }
    Ok(())
}
