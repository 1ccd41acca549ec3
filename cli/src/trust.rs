//! `arbor trust [DIR]`: the user trusts a workspace, recorded in the home `config.toml`, so that
//! its `.arbor/config.toml` and `.arbor/rules` apply in full (see `docs/sandbox.md`).

use std::path::Path;

use crate::args::TrustArgs;
use crate::error::CliError;

/// Records the workspace as trusted; says so, or that it already was.
pub fn trust(home: &Path, args: &TrustArgs) -> Result<u8, CliError> {
    crate::outside::ensure_outside_sandbox(home, "trust a workspace")?;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|err| CliError::usage(format!("cannot read the current directory: {err}")))?,
    };
    let workspace = dir
        .canonicalize()
        .map_err(|err| CliError::usage(format!("{}: {err}", dir.display())))?;
    if !workspace.is_dir() {
        return Err(CliError::usage(format!(
            "{}: not a directory",
            dir.display()
        )));
    }
    let config = home.join("config.toml");
    let added = arbor_tools::trust_workspace(home, &workspace).map_err(|err| {
        CliError::failed(format!(
            "cannot record the trust in {}: {err}",
            config.display()
        ))
    })?;
    if added {
        println!(
            "trusted {}: its .arbor/config.toml and .arbor/rules now apply in full (recorded in {})",
            workspace.display(),
            config.display()
        );
    } else {
        println!("{} is trusted already", workspace.display());
    }
    Ok(0)
}
