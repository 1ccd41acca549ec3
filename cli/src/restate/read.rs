//! `arbor tree` and `arbor agents` with `--engine restate` (the `Session` object's agents), and
//! `arbor interrupt` and `arbor close` (its handlers, called as `/root`).

use std::collections::BTreeMap;

use arbor_protocol::AgentPath;
use arbor_restate::Ingress;
use arbor_restate::wire::AgentRow;
use serde_json::Value;

use crate::args::{ReadArgs, TargetArgs, TreeArgs, TreeFormat};
use crate::error::CliError;

async fn rows(url: &str, session: &str) -> Result<Vec<AgentRow>, CliError> {
    let ingress = Ingress::new(url).map_err(super::failed)?;
    ingress.agents(session).await.map_err(|err| match err {
        arbor_restate::RestateError::Status { status: 404, .. } => {
            CliError::usage(format!("unknown session {session} on {url}"))
        }
        other => super::failed(other),
    })
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
            println!("{}", line(row));
        }
    }
    Ok(())
}

/// `arbor tree SESSION --engine restate` (text or `--json`; closed branches with `--all`).
pub async fn tree(args: &TreeArgs) -> Result<(), CliError> {
    if args.format != TreeFormat::Text {
        return Err(CliError::usage(
            "--format dot and mermaid are not available with --engine restate yet",
        ));
    }
    let rows = rows(&args.engine.url(), &args.session).await?;
    let shown: Vec<&AgentRow> = rows
        .iter()
        .filter(|row| args.all || !hidden(&rows, &row.path))
        .collect();
    if args.json {
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
    } else {
        for row in shown {
            let indent = "  ".repeat(row.depth);
            println!("{indent}{}", line(row));
        }
    }
    Ok(())
}

/// Whether `path` sits under (or on) a closed edge.
fn hidden(rows: &[AgentRow], path: &AgentPath) -> bool {
    rows.iter()
        .any(|row| row.edge.as_deref() == Some("closed") && path.is_within(&row.path))
}

/// What `act` does.
#[derive(Debug, Clone, Copy)]
pub enum Act {
    Interrupt,
    Close,
}

/// `arbor interrupt|close SESSION TARGET --engine restate`: prints `{"previous_status": …}`.
pub async fn act(args: &TargetArgs, act: Act) -> Result<u8, CliError> {
    let url = args.engine.url();
    let ingress = Ingress::new(&url).map_err(super::failed)?;
    let reply = match act {
        Act::Interrupt => ingress.interrupt(&args.session, &args.target).await,
        Act::Close => ingress.close(&args.session, &args.target).await,
    };
    match reply {
        Ok(Ok(text)) => {
            println!("{text}");
            Ok(0)
        }
        Ok(Err(refusal)) => Err(CliError::usage(refusal)),
        Err(arbor_restate::RestateError::Status { status: 404, .. }) => Err(CliError::usage(
            format!("unknown session {} on {url}", args.session),
        )),
        Err(other) => Err(super::failed(other)),
    }
}
