//! `arbor compact SESSION TARGET`: takes the session (it must not be driven: exit 3), has
//! TARGET's model summarize its history, appends the new window and prints what it did.

use std::path::PathBuf;

use arbor_orchestrator::{Orchestrator, OrchestratorError};

use crate::args::CompactArgs;
use crate::error::CliError;
use crate::exec::{build_model, run_config, workspace_of};

pub async fn compact(home: PathBuf, args: CompactArgs) -> Result<u8, CliError> {
    let root = {
        let store = crate::read::open_store(&home)?;
        arbor_orchestrator::find_root(&store, &args.session)?
    };
    let file = crate::config::load(&home, &workspace_of(&args.run)?)?;
    let model = build_model(&args.run, &file)?;
    let mut config = run_config(home, &args.run, &file, false)?;
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
    if args.run.json {
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
