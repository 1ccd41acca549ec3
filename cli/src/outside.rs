//! Commands that decide what agents may do (`approve`, `deny`, `trust`) refuse to run from
//! inside an agent's sandbox: an agent must not answer its own approval request, nor trust the
//! workspace it works in.
//!
//! Two checks: the marker every sandboxed command carries (`ARBOR_SANDBOX`, for a clear
//! message), and, since a command can unset it, whether the arbor home can be written here at
//! all; the sandbox keeps the home read-only wherever it lies, so from inside it cannot.

use std::path::Path;

use crate::error::CliError;

/// Refuses `action` (e.g. `answer approval requests`) from inside an agent's sandbox.
pub fn ensure_outside_sandbox(home: &Path, action: &str) -> Result<(), CliError> {
    if std::env::var_os(arbor_tools::SANDBOX_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(CliError::usage(format!(
            "cannot {action} from inside an agent's sandbox ({} is set): run it in your own \
             terminal",
            arbor_tools::SANDBOX_ENV
        )));
    }
    let probe = home.join(format!(".arbor-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(err)
            if matches!(
                err.raw_os_error(),
                Some(libc::EROFS | libc::EACCES | libc::EPERM)
            ) =>
        {
            Err(CliError::usage(format!(
                "cannot {action}: the arbor home {} is not writable here (is this an agent's \
                 sandbox?): {err}",
                home.display()
            )))
        }
        // A missing home is reported by whatever opens it next.
        Err(_) => Ok(()),
    }
}
