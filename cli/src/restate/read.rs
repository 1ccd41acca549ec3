//! `arbor tree` and `arbor agents` with `--engine restate` (the `Session` object's agents; the
//! tree drawn by the local engine's renderer).

use std::collections::BTreeMap;
use std::io::Write;

use arbor_agent_graph::{EdgeStatus, SessionTree, ThreadRecord};
use arbor_protocol::{AgentPath, SessionMeta, ThreadId, Timestamp};
use arbor_restate::Ingress;
use arbor_restate::wire::AgentRow;
use serde_json::Value;

use crate::args::{ReadArgs, TreeArgs, TreeFormat};
use crate::error::CliError;

pub(super) async fn rows(url: &str, session: &str) -> Result<Vec<AgentRow>, CliError> {
    let ingress = Ingress::new(url).map_err(super::failed)?;
    ingress
        .agents(session)
        .await
        .map_err(super::call_failed(url, session))
}

fn line(row: &AgentRow) -> String {
    format!(
        "{} [{}] {} {}{}",
        row.path,
        row.nickname.as_deref().unwrap_or("-"),
        row.role,
        row.status,
        if row.unread > 0 {
            format!(" unread={}", row.unread)
        } else {
            String::new()
        }
    )
}

/// `arbor agents SESSION --engine restate`.
pub async fn agents(args: &ReadArgs) -> Result<(), CliError> {
    let rows = rows(&args.engine.url(), &args.session).await?;
    if args.json {
        let text =
            serde_json::to_string_pretty(&rows).map_err(|err| CliError::failed(err.to_string()))?;
        println!("{text}");
    } else {
        for row in &rows {
            println!("{}", arbor_protocol::text::visible(&line(row)));
        }
    }
    Ok(())
}

/// `arbor tree SESSION --engine restate`: `--json`, or text, DOT or mermaid drawn by the local
/// engine's renderer (`SessionTree`); closed branches with `--all`.
pub async fn tree(args: &TreeArgs) -> Result<(), CliError> {
    let rows = rows(&args.engine.url(), &args.session).await?;
    if !args.json {
        let text = draw(&args.session, &rows, args.all, args.format)?;
        let mut stdout = std::io::stdout().lock();
        crate::output::out(write!(stdout, "{text}"))?;
        if !text.ends_with('\n') {
            crate::output::out(writeln!(stdout))?;
        }
        return Ok(());
    }
    let shown: Vec<&AgentRow> = rows
        .iter()
        .filter(|row| args.all || !hidden(&rows, &row.path))
        .collect();
    let mut values: BTreeMap<AgentPath, Value> = BTreeMap::new();
    for row in shown.iter().rev() {
        let mut value =
            serde_json::to_value(row).map_err(|err| CliError::failed(err.to_string()))?;
        let children: Vec<Value> = shown
            .iter()
            .filter(|child| child.path.parent().as_ref() == Some(&row.path))
            .filter_map(|child| values.remove(&child.path))
            .collect();
        value["children"] = Value::Array(children);
        values.insert(row.path.clone(), value);
    }
    let root = values.remove(&AgentPath::root()).unwrap_or(Value::Null);
    let text =
        serde_json::to_string_pretty(&root).map_err(|err| CliError::failed(err.to_string()))?;
    println!("{text}");
    Ok(())
}

/// The tree of `rows` as `format` draws it.
pub(super) fn draw(
    session: &str,
    rows: &[AgentRow],
    all: bool,
    format: TreeFormat,
) -> Result<String, CliError> {
    let bad = |what: &str| CliError::failed(format!("session {session}: {what}"));
    let session_id = ThreadId::parse(session).map_err(|err| bad(&err.to_string()))?;
    let mut records = Vec::new();
    let mut edges = Vec::new();
    for row in rows {
        let id = ThreadId::parse(&row.id).map_err(|err| bad(&err.to_string()))?;
        let parent_id = row
            .parent_id
            .as_deref()
            .map(ThreadId::parse)
            .transpose()
            .map_err(|err| bad(&err.to_string()))?;
        if let (Some(parent), Some(edge)) = (parent_id, row.edge.as_deref()) {
            let status = EdgeStatus::parse(edge).ok_or_else(|| bad("an unknown edge status"))?;
            edges.push((id, (parent, status)));
        }
        let meta = SessionMeta {
            thread_id: id,
            session_id,
            parent_id,
            path: row.path.clone(),
            depth: u32::try_from(row.depth).unwrap_or(u32::MAX),
            nickname: row.nickname.clone(),
            role: row.role.clone(),
            model: row.model.clone().unwrap_or_else(|| "script".to_string()),
            provider: None,
            effort: None,
            sandbox: String::new(),
            cwd: String::new(),
            format_version: 0,
            repository: None,
            handle: None,
        };
        let mut record = ThreadRecord::from_meta(&meta, String::new(), Timestamp::default());
        record.status = row.status.clone();
        records.push(record);
    }
    let root = records
        .iter()
        .position(|record| record.path().is_root())
        .ok_or_else(|| bad("no root"))?;
    let root = records.swap_remove(root);
    let tree = SessionTree::build(root, records, edges, all);
    Ok(match format {
        TreeFormat::Text => tree.to_text(),
        TreeFormat::Dot => tree.to_dot(),
        TreeFormat::Mermaid => tree.to_mermaid(),
    })
}

/// Whether `path` sits under (or on) a closed edge.
fn hidden(rows: &[AgentRow], path: &AgentPath) -> bool {
    rows.iter()
        .any(|row| row.edge.as_deref() == Some("closed") && path.is_within(&row.path))
}
