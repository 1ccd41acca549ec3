//! The read commands: `tree`, `agents`, `sessions`, `log`, `mail`. They read the store and
//! apply the session log's later lines in memory (`SessionView`), so they show everything the
//! log holds, write nothing and never revive anything; turns in flight under a dead driver read
//! as `interrupted: process_exit`.

use std::io::Write;
use std::path::Path;

use arbor_agent_graph::{AgentRow, EdgeStatus, SessionTree, ThreadRecord};
use arbor_orchestrator::SessionView;
use arbor_protocol::text;
use arbor_protocol::{
    AgentPath, AgentStatus, ResponseItem, RolloutItem, RolloutLine, ThreadId, Usage,
};
use arbor_rollout::read_rollout;
use serde_json::{Value, json};

use crate::args::{LogArgs, MailArgs, ReadArgs, TreeArgs, TreeFormat};
use crate::error::CliError;
use crate::output::out;
use crate::store::open_store;

/// One agent as the read commands show it.
struct Row<'a> {
    row: &'a AgentRow,
    status: AgentStatus,
    resident: bool,
    unread: u64,
    pending_approvals: u64,
    /// A worktree agent's change summary and branch.
    worktree: Option<(Result<arbor_protocol::ChangeSummary, String>, String)>,
}

impl Row<'_> {
    fn record(&self) -> &ThreadRecord {
        &self.row.record
    }

    fn to_json(&self) -> Value {
        let record = self.record();
        let mut value = json!({
            "id": record.id(),
            "path": record.path(),
            "parent_id": record.parent_id(),
            "depth": record.meta.depth,
            "nickname": record.meta.nickname,
            "role": record.meta.role,
            "model": record.meta.model,
            "provider": record.meta.provider,
            "status": self.status,
            "edge": self.row.edge.map(EdgeStatus::as_str),
            "resident": self.resident,
            "unread": self.unread,
            "pending_approvals": self.pending_approvals,
            "usage": self.row.usage,
        });
        if let Some(handle) = &record.meta.handle {
            value["handle"] = json!(handle);
        }
        if let Some((summary, branch)) = &self.worktree {
            value["changes"] = crate::worktrees::summary_json(summary);
            value["branch"] = json!(branch);
        }
        value
    }
}

/// The view of a session named by id or unique prefix.
fn open_session(home: &Path, session: &str) -> Result<SessionView, CliError> {
    open_store(home)?;
    let view = SessionView::open(home, session)?;
    for notice in &view.notices {
        eprintln!("notice: {notice}");
    }
    Ok(view)
}

/// Every agent of the session, root first, then by depth and path, with worktree agents'
/// change summaries.
fn rows<'a>(home: &Path, view: &'a SessionView) -> Vec<Row<'a>> {
    let summaries = crate::worktrees::summaries(home, view);
    let state = &view.state;
    let mut rows: Vec<Row<'_>> = state
        .threads
        .values()
        .map(|row| Row {
            status: row.reported_status(view.driven),
            resident: view.driven && row.edge != Some(EdgeStatus::Closed),
            unread: state.unread(row.record.id()).count() as u64,
            pending_approvals: state.pending_approvals(row.record.id()) as u64,
            worktree: summaries.get(&row.record.id()).map(|summary| {
                let branch = state
                    .worktree(row.record.id())
                    .map_or_else(String::new, |w| w.branch.clone());
                (summary.clone(), branch)
            }),
            row,
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.record().meta.depth, a.record().path().as_str())
            .cmp(&(b.record().meta.depth, b.record().path().as_str()))
    });
    rows
}

fn total(rows: &[Row<'_>]) -> Usage {
    rows.iter().fold(Usage::default(), |mut sum, row| {
        sum.add(row.row.usage);
        sum
    })
}

/// Rows reachable from the root through open edges (all edges with `all`).
fn visible(rows: Vec<Row<'_>>, root: ThreadId, all: bool) -> Vec<Row<'_>> {
    let mut shown: std::collections::HashSet<ThreadId> = [root].into();
    let mut kept = Vec::new();
    for row in rows {
        let record = row.record();
        let parent_shown = record.parent_id().is_none_or(|p| shown.contains(&p));
        let edge_ok = all || row.row.edge != Some(EdgeStatus::Closed);
        if record.id() == root || (parent_shown && edge_ok) {
            shown.insert(record.id());
            kept.push(row);
        }
    }
    kept
}

pub fn agents(home: &Path, args: &ReadArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let rows = rows(home, &view);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let list: Vec<Value> = rows.iter().map(Row::to_json).collect();
        return out(writeln!(stdout, "{}", Value::Array(list)));
    }
    for row in &rows {
        let record = row.record();
        let line = format!(
            "{}  {}  {}  {}  edge={}  resident={}  unread={}  approvals={}  tokens={}",
            record.path(),
            record.meta.nickname.as_deref().unwrap_or("-"),
            record.meta.role,
            row.status,
            row.row.edge.map_or("-", EdgeStatus::as_str),
            row.resident,
            row.unread,
            row.pending_approvals,
            row.row.usage.input_tokens + row.row.usage.output_tokens
        );
        out(writeln!(stdout, "{}", text::visible(&line)))?;
        if let Some((summary, branch)) = &row.worktree {
            let line = format!(
                "    {} (branch {branch})",
                crate::worktrees::summary_text(summary)
            );
            out(writeln!(stdout, "{}", text::visible(&line)))?;
        }
    }
    let sum = total(&rows);
    let compaction = if sum.compaction_tokens > 0 {
        format!(", {} of them for compaction", sum.compaction_tokens)
    } else {
        String::new()
    };
    out(writeln!(
        stdout,
        "tree: {} input ({} cached) and {} output tokens{compaction}",
        sum.input_tokens, sum.cached_input_tokens, sum.output_tokens
    ))
}

pub fn tree(home: &Path, args: &TreeArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    if !args.json && args.format == TreeFormat::Text {
        let (id, handle) = (view.root.id(), view.root.meta.handle.as_deref());
        eprintln!("session: {}", crate::output::session_label(id, handle));
    }
    print_tree(home, &view, args)
}

/// Prints the tree of a view as `args` asks (also what `resume` without a prompt shows).
pub fn print_tree(home: &Path, view: &SessionView, args: &TreeArgs) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let rows = visible(rows(home, view), view.root.id(), args.all);
        let mut tree = nest(&rows, view.root.id());
        tree["tree_usage"] = serde_json::to_value(total(&rows)).unwrap_or(Value::Null);
        return out(writeln!(stdout, "{tree}"));
    }
    let Some(mut tree) = SessionTree::from_state(&view.state, args.all) else {
        return Err(CliError::failed(format!(
            "session {} has no root in its log",
            view.root.id()
        )));
    };
    let driven = view.driven;
    let state = &view.state;
    tree.adjust_records(|record| {
        if let Some(row) = state.thread(record.id()) {
            record.status = row.reported_status(driven);
        }
    });
    let summaries = crate::worktrees::summaries(home, view);
    let text = match args.format {
        TreeFormat::Text => tree.to_text_with(|record| {
            summaries
                .get(&record.id())
                .map(crate::worktrees::summary_text)
        }),
        TreeFormat::Dot => tree.to_dot(),
        TreeFormat::Mermaid => tree.to_mermaid(),
    };
    out(write!(stdout, "{text}"))?;
    if !text.ends_with('\n') {
        out(writeln!(stdout))?;
    }
    Ok(())
}

fn nest(rows: &[Row<'_>], id: ThreadId) -> Value {
    let Some(row) = rows.iter().find(|r| r.record().id() == id) else {
        return Value::Null;
    };
    let mut value = row.to_json();
    let children: Vec<Value> = rows
        .iter()
        .filter(|r| r.record().parent_id() == Some(id))
        .map(|r| nest(rows, r.record().id()))
        .collect();
    value["children"] = Value::Array(children);
    value
}

pub fn sessions(home: &Path, json: bool) -> Result<(), CliError> {
    // A fresh home has no store yet: no sessions, which is no error.
    let list = if home.join(arbor_agent_graph::STATE_FILE_NAME).exists() {
        session_list(home)?
    } else {
        Vec::new()
    };
    print_sessions(home, &list, json)
}

/// Every session of the home as `sessions --json` shows it, newest first.
fn session_list(home: &Path) -> Result<Vec<Value>, CliError> {
    let store = open_store(home)?;
    let mut list = Vec::new();
    for root in store.sessions()? {
        let view = SessionView::of(home, store.clone(), root.clone())?;
        let status = view.state.root().map_or(AgentStatus::NotFound, |row| {
            row.reported_status(view.driven)
        });
        let size = arbor_orchestrator::retention::look(home, &store, &root)?.bytes;
        list.push(json!({
            "id": root.id(),
            "handle": root.meta.handle,
            "created_at": root.created_at,
            "cwd": root.meta.cwd,
            "prompt": first_prompt(&home.join(&root.rollout_path)),
            "agents": view.state.threads.len(),
            "status": status,
            "size_bytes": size,
        }));
    }
    Ok(list)
}

fn print_sessions(home: &Path, list: &[Value], json: bool) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    if json {
        return out(writeln!(stdout, "{}", Value::Array(list.to_vec())));
    }
    if list.is_empty() {
        eprintln!(
            "no sessions yet in {}: `arbor exec` starts one",
            home.display()
        );
    }
    let width = list
        .iter()
        .map(|s| s["handle"].as_str().map_or(1, str::len))
        .max()
        .unwrap_or(0);
    for s in list {
        let prompt = s["prompt"].as_str().unwrap_or("");
        let status: AgentStatus =
            serde_json::from_value(s["status"].clone()).unwrap_or(AgentStatus::NotFound);
        out(writeln!(
            stdout,
            "{:width$}  {}  {}  {}  {}  {}  {}",
            s["handle"].as_str().unwrap_or("-"),
            s["id"].as_str().unwrap_or(""),
            s["created_at"].as_str().unwrap_or(""),
            arbor_protocol::text::count(
                usize::try_from(s["agents"].as_u64().unwrap_or(0)).unwrap_or(usize::MAX),
                "agent",
                "agents"
            ),
            status.name(),
            crate::output::human_bytes(s["size_bytes"].as_u64().unwrap_or(0)),
            text::visible(&text::truncate_middle(&prompt.replace('\n', " "), 80))
        ))?;
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

/// Finds a thread of the session by path (the open agent first) or by id.
fn find_thread<'a>(view: &'a SessionView, target: &str) -> Result<&'a AgentRow, CliError> {
    if let Ok(id) = ThreadId::parse(target) {
        return view.state.thread(id).ok_or_else(|| {
            CliError::usage(format!(
                "agent `{target}` not found in session {}",
                view.root.id()
            ))
        });
    }
    let path = AgentPath::root()
        .resolve(target)
        .map_err(|err| CliError::usage(format!("target `{target}`: {err}")))?;
    view.state.at_path(&path).ok_or_else(|| {
        CliError::usage(format!(
            "agent path `{path}` not found in session {}",
            view.root.id()
        ))
    })
}

/// Every line of an agent: its rollout, then the lines of the log its rollout does not hold
/// yet (the projections may lag the log).
fn lines_of(home: &Path, view: &SessionView, row: &AgentRow) -> Result<Vec<RolloutLine>, CliError> {
    let path = home.join(&row.record.rollout_path);
    let mut lines: Vec<RolloutLine> = Vec::new();
    // A rollout the projection has not made (or begun) yet holds nothing, and one that cannot
    // be read is passed over: every line of the agent is in the log.
    let made = std::fs::metadata(&path).is_ok_and(|meta| meta.len() > 0);
    if made {
        match read_rollout(&path) {
            // A rollout with a line it had to skip is read from the log instead, whole.
            Ok(read) if read.notices.is_empty() => {
                lines = read.lines.into_iter().map(|(_, line)| line).collect();
            }
            Ok(read) => {
                for notice in &read.notices {
                    eprintln!("notice: {notice}; the agent's lines are read from the session log");
                }
            }
            Err(err) => eprintln!("notice: {err}; the agent's lines are read from the session log"),
        }
    }
    let last = lines.iter().filter_map(|line| line.seq).max().unwrap_or(0);
    if row.last_seq > last {
        // A rollout holds a prefix of its agent's lines and at least what the store holds:
        // the rest is after the store's position (from the start, if a rollout lost more).
        let from = if last >= view.stored.seq {
            view.stored.offset
        } else {
            0
        };
        let id = row.record.id();
        let tail = arbor_rollout::log::read_log(&view.log_path, from)
            .map_err(|err| CliError::failed(err.to_string()))?;
        lines.extend(tail.lines.into_iter().map(|(line, _)| line).filter(|line| {
            line.thread == Some(id)
                && line.seq.is_some_and(|seq| seq > last)
                && line.item.in_rollout()
        }));
    }
    worktree_facts(view, row.record.id(), &mut lines)?;
    Ok(lines)
}

/// A worktree agent's worktree facts (made, merged, removed) are lines of the session log, not
/// of its rollout: they join its other lines in log order, so its log ends with what became of
/// its work, not with what its last turn's summary said of it then.
fn worktree_facts(
    view: &SessionView,
    id: ThreadId,
    lines: &mut Vec<RolloutLine>,
) -> Result<(), CliError> {
    if !view.state.worktrees.contains_key(&id) || lines.iter().any(|line| line.seq.is_none()) {
        return Ok(());
    }
    let read = arbor_rollout::log::read_log(&view.log_path, 0)
        .map_err(|err| CliError::failed(err.to_string()))?;
    lines.extend(
        read.lines.into_iter().map(|(line, _)| line).filter(|line| {
            line.thread == Some(id) && matches!(line.item, RolloutItem::Worktree(_))
        }),
    );
    lines.sort_by_key(|line| line.seq);
    lines.dedup_by_key(|line| line.seq);
    Ok(())
}

pub fn log(home: &Path, args: &LogArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let row = find_thread(&view, args.target.as_deref().unwrap_or("/root"))?;
    let lines = lines_of(home, &view, row)?;
    let mut stdout = std::io::stdout().lock();
    for line in &lines {
        if args.json {
            out(writeln!(
                stdout,
                "{}",
                serde_json::to_string(line).unwrap_or_default()
            ))?;
        } else {
            out(writeln!(
                stdout,
                "{} {}",
                line.timestamp,
                crate::logtext::line(&line.item)
            ))?;
        }
    }
    Ok(())
}

pub fn mail(home: &Path, args: &MailArgs) -> Result<(), CliError> {
    let view = open_session(home, &args.session)?;
    let row = find_thread(&view, args.target.as_deref().unwrap_or("/root"))?;
    let mail: Vec<_> = view.state.unread(row.record.id()).collect();
    print_mail(row.record.path(), &mail, args.json)
}

/// An agent's unread mail as `arbor mail` prints it (either engine): a JSON array, or each mail
/// with its header line, or a note on stderr that there is none.
pub fn print_mail<M: std::borrow::Borrow<arbor_protocol::Mail> + serde::Serialize>(
    path: &AgentPath,
    mail: &[M],
    json: bool,
) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    if json {
        return out(writeln!(
            stdout,
            "{}",
            serde_json::to_string(mail).unwrap_or_else(|_| "[]".into())
        ));
    }
    if mail.is_empty() {
        eprintln!("no unread mail for {path}");
    }
    for m in mail.iter().map(std::borrow::Borrow::borrow) {
        out(writeln!(
            stdout,
            "{}  {}  {} → {}{}\n{}\n",
            m.id,
            m.kind.as_str(),
            m.sender(),
            m.recipient,
            if m.trigger_turn { "  (wakes)" } else { "" },
            text::visible_lines(&m.content, "")
        ))?;
    }
    Ok(())
}
