//! `send_message` (queue only) and `followup_task` (wakes the target).

use std::sync::Arc;

use arbor_protocol::MailKind;
use serde::Deserialize;

use super::args::{ToolResult, parse_args, resolve_target};
use crate::agent::Agent;
use crate::ctx::Ctx;
use crate::mail;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageArgs {
    target: String,
    message: String,
}

pub async fn send_message(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: MessageArgs = parse_args("send_message", arguments)?;
    mail::check_content(&args.message)?;
    let target = resolve_target(ctx, caller, &args.target)?;
    mail::send(ctx, caller, &target, MailKind::Message, &args.message)?;
    Ok(String::new())
}

pub async fn followup_task(ctx: &Arc<Ctx>, caller: &Arc<Agent>, arguments: &str) -> ToolResult {
    let args: MessageArgs = parse_args("followup_task", arguments)?;
    mail::check_content(&args.message)?;
    let target = resolve_target(ctx, caller, &args.target)?;
    mail::check_recipient(MailKind::Followup, target.path())?;
    mail::send(ctx, caller, &target, MailKind::Followup, &args.message)?;
    Ok(String::new())
}
