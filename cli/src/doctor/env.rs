//! `arbor doctor`'s look at the environment a run would meet: the configuration and role and
//! rule files parse, git is there and new enough, what the sandbox enforces (with the Landlock
//! ABI), every configured MCP server starts and lists its tools, and the configured model
//! server answers. `--offline` leaves out what needs the network (the model server, MCP servers
//! reached over HTTP).

use std::path::Path;

use arbor_mcp::{McpHub, Transport};
use arbor_model::{ProbeAnswer, probe_models};
use arbor_protocol::SandboxMode;

use super::Report;
use crate::args::{DoctorArgs, RunOptions};
use crate::error::CliError;

/// Checks everything a run in `workspace` depends on, line by line into `report`.
pub async fn check(
    home: &Path,
    workspace: &Path,
    args: &DoctorArgs,
    report: &mut Report,
) -> Result<(), CliError> {
    let file = match crate::config::load_quietly(home, workspace) {
        Ok((file, notices)) => {
            let files: Vec<String> = [
                home.join("config.toml"),
                workspace.join(".arbor/config.toml"),
            ]
            .into_iter()
            .filter(|path| path.exists())
            .map(|path| path.display().to_string())
            .collect();
            if files.is_empty() {
                report.ok("config: no config.toml (built-in defaults)")?;
            } else {
                report.ok(&format!("config: {} parse", files.join(" and ")))?;
            }
            for notice in notices {
                report.notice(notice.trim_start_matches("notice: "))?;
            }
            Some(file)
        }
        Err(err) => {
            report.problem(&format!("config: {err}"))?;
            None
        }
    };
    let roles = match arbor_roles::RoleSet::load(home, workspace) {
        Ok(roles) => {
            let names: Vec<&str> = roles.all().iter().map(|role| role.name.as_str()).collect();
            report.ok(&format!("roles: {}", names.join(", ")))?;
            true
        }
        Err(err) => {
            report.problem(&format!("roles: {err}"))?;
            false
        }
    };
    match arbor_tools::Policy::load(home, workspace) {
        Ok(policy) => report.ok(&format!("rules: {} command rules", policy.rules().len()))?,
        Err(err) => report.problem(&format!("rules: {err}"))?,
    }
    let run = RunOptions::defaults()
        .ok_or_else(|| CliError::failed("cannot make the default run options"))?;
    if let (Some(file), true) = (&file, roles) {
        // Everything a run checks before it starts (models, efforts, isolation, MCP servers).
        let mut run = RunOptions::defaults()
            .ok_or_else(|| CliError::failed("cannot make the default run options"))?;
        run.cwd = Some(workspace.to_path_buf());
        if let Err(err) = crate::exec::run_config(home.to_path_buf(), &run, file, false) {
            let text = err.to_string();
            match text.strip_prefix("config: ") {
                Some(rest) => report.problem(&format!("config: {rest}"))?,
                None => report.problem(&format!("config: {text}"))?,
            }
        }
    }
    match arbor_worktree::Git::system() {
        Ok(git) => report.ok(&format!("git: {}", git.version()))?,
        Err(err) => report.warning(&format!(
            "git: {err} (workers in git worktrees need it; nothing else does)"
        ))?,
    }
    // The label and the first note, which names the Landlock ABI (or why there is none).
    let sandbox = arbor_tools::sandbox_status(SandboxMode::WorkspaceWrite);
    let first = sandbox.notes.first().map_or("", String::as_str);
    if sandbox.enforced {
        report.ok(&format!("sandbox: {}; {first}", sandbox.label))?;
    } else {
        report.warning(&format!(
            "sandbox: none, commands would run unconfined: {}",
            sandbox.notes.join("; ")
        ))?;
    }
    let Some(file) = file else {
        return Ok(());
    };
    mcp_servers(home, workspace, &file, args.offline, report).await?;
    model_server(&run, &file, args.offline, report).await
}

/// Starts every configured MCP server (those over HTTP only when online) and lists its tools.
async fn mcp_servers(
    home: &Path,
    workspace: &Path,
    file: &crate::config::FileConfig,
    offline: bool,
    report: &mut Report,
) -> Result<(), CliError> {
    let Ok(mut servers) = arbor_mcp::servers_from_raw(&file.mcp_servers) else {
        // Reported with the configuration above.
        return Ok(());
    };
    if offline {
        for server in servers
            .iter()
            .filter(|s| matches!(s.transport, Transport::Http { .. }))
        {
            report.notice(&format!(
                "mcp server {}: over HTTP, not checked (--offline)",
                server.name
            ))?;
        }
        servers.retain(|server| !matches!(server.transport, Transport::Http { .. }));
    }
    if servers.is_empty() {
        return Ok(());
    }
    let dirs = arbor_mcp::ServerDirs::new(workspace.to_path_buf(), home);
    let hub = McpHub::new(servers, dirs, None, None);
    let listings = hub.listings(|_| true).await;
    hub.stop().await;
    for (config, (_, listing)) in hub.configs().zip(&listings) {
        match &listing.error {
            None => report.ok(&format!(
                "mcp server {}: started, {} tools",
                config.name,
                listing.tools.len()
            ))?,
            Some(error) => {
                report.problem(&format!(
                    "mcp server {} did not start: {error}",
                    config.name
                ))?;
            }
        }
    }
    Ok(())
}

/// Asks the configured model server for its models (a `GET`, no tokens spent).
async fn model_server(
    run: &RunOptions,
    file: &crate::config::FileConfig,
    offline: bool,
    report: &mut Report,
) -> Result<(), CliError> {
    if file.provider.is_none() && file.model.is_none() {
        return report.ok(
            "model: none configured (runs name one with --script FILE or --provider and \
             --model; see docs/models.md)",
        );
    }
    let plan = match crate::providers::Plan::new(run, file) {
        Ok(plan) => plan,
        Err(err) => return report.problem(&format!("model: {err}")),
    };
    let (kind, http) = match plan.default_http() {
        Ok(Some(found)) => found,
        Ok(None) => return report.ok("model: the scripted model"),
        Err(err) => return report.problem(&format!("model: {err}")),
    };
    let url = http.base_url.trim_end_matches('/').to_string();
    let model = plan.model().unwrap_or("(none named)");
    let what = format!("model: {model} on {url} ({})", kind.name());
    if offline {
        return report.notice(&format!("{what}: not asked (--offline)"));
    }
    match probe_models(kind, http).await {
        Ok(ProbeAnswer::Models(ids)) if ids.is_empty() => {
            report.ok(&format!("{what}: the server answers"))
        }
        Ok(ProbeAnswer::Models(ids)) if ids.iter().any(|id| id == model) => {
            report.ok(&format!("{what}: the server answers and lists the model"))
        }
        Ok(ProbeAnswer::Models(ids)) => report.warning(&format!(
            "{what}: the server answers but does not list the model (it lists {})",
            arbor_protocol::text::truncate_middle(&ids.join(", "), 200)
        )),
        Ok(ProbeAnswer::KeyRefused { status, message }) => report.problem(&format!(
            "{what}: the server refused the key (http {status}): {message}"
        )),
        Ok(ProbeAnswer::Status { status, message }) => report.problem(&format!(
            "{what}: http {status} from {url}/models: {message}"
        )),
        Err(err) => report.problem(&format!("{what}: the server does not answer: {err}")),
    }
}
