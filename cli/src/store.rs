//! Opening the store of a home to read it, as every command on existing sessions does first.

use std::path::Path;

use arbor_agent_graph::Store;

use crate::error::CliError;

/// The store of `home`, to read; a home without one is a usage error.
pub fn open_store(home: &Path) -> Result<Store, CliError> {
    if !home.join(arbor_agent_graph::STATE_FILE_NAME).exists() {
        return Err(CliError::usage(format!(
            "no arbor state in {}: run `arbor exec` first, or pass --home",
            home.display()
        )));
    }
    Ok(Store::open_read_only(home)?)
}
