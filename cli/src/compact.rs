//! `arbor compact SESSION TARGET`: takes the session (it must not be driven: exit 3), has
//! TARGET's model summarize its history, appends the new window and prints what it did.

use std::path::PathBuf;

use arbor_orchestrator::{Orchestrator, OrchestratorError};

use clap::{Args, FromArgMatches};

use crate::args::{CompactArgs, RunOptions};
use crate::error::CliError;
use crate::exec::{build_model, run_config, workspace_of};

/// The run options of a compaction: its model options, every other one at `exec`'s default
/// (parsed from nothing, so the defaults have one source: the flags' own).
fn run_options(args: &CompactArgs) -> Result<RunOptions, CliError> {
    let command = RunOptions::augment_args(clap::Command::new("compact"));
    let matches = command
        .try_get_matches_from(["compact"])
        .and_then(|matches| RunOptions::from_arg_matches(&matches))
        .map_err(|err| CliError::failed(format!("the default run options: {err}")))?;
    Ok(RunOptions {
        script: args.script.clone(),
        model: args.model.clone(),
        provider: args.provider,
        base_url: args.base_url.clone(),
        cwd: args.cwd.clone(),
        json: args.json,
        ..matches
    })
}

pub async fn compact(home: PathBuf, args: CompactArgs) -> Result<u8, CliError> {
    let root = {
        let store = crate::store::open_store(&home)?;
        arbor_orchestrator::find_root(&store, &args.session)?
    };
    let run = run_options(&args)?;
    let file = crate::config::load(&home, &workspace_of(&run)?)?;
    let model = build_model(&run, &file)?;
    let mut config = run_config(home, &run, &file, false)?;
    config.root_driven = false;
    let (orch, info) = Orchestrator::resume(config, model, &root.id().to_string()).await?;
    for notice in &info.notices {
        eprintln!("notice: {notice}");
    }
    let result = orch.compact(&args.target).await;
    orch.shutdown("compacted").await;
    let report = match result {
        Ok(report) => report,
        // The model failing is the run failing; anything else is what was asked.
        Err(OrchestratorError::Refused(message)) if message.starts_with("compaction failed") => {
            return Err(CliError::failed(message));
        }
        Err(err) => return Err(err.into()),
    };
    if args.json {
        let line = serde_json::json!({
            "path": report.path,
            "tokens_before": report.tokens_before,
            "tokens_after": report.tokens_after,
            "summary": report.summary,
        });
        println!("{line}");
    } else {
        eprintln!(
            "compacted {}: about {} tokens → {}",
            report.path, report.tokens_before, report.tokens_after
        );
        println!("{}", crate::output::answer(&report.summary));
    }
    Ok(0)
}
