//! Workspace trust: which workspaces the user trusted (`arbor trust [DIR]`), recorded in the
//! home `config.toml` as `[[trusted_workspace]]` tables.
//!
//! A repository is written by others: until the user trusts it, its `.arbor/config.toml` may not
//! choose where the API key goes (`base_url`, `api_key_env`, `headers`, `provider`) nor what
//! the commands inherit (`[shell_environment]`), and its `.arbor/rules` may only make the
//! command policy stricter (its `allow` rules are ignored). The record is appended as
//!
//! ```toml
//! [[trusted_workspace]]
//! path = "/home/me/project"
//! ```
//!
//! at the end of the file, so the rest of the user's file is left exactly as it was. A
//! workspace is trusted when its canonical path is one of the recorded ones (exactly: trusting
//! a directory does not trust the directories below it).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The table name in the home `config.toml`.
pub const TRUST_TABLE: &str = "trusted_workspace";

/// Whether the user trusted `workspace` (recorded in `home/config.toml`). An unreadable or
/// malformed file trusts nothing (the CLI reports its errors when it loads it).
pub fn workspace_trusted(home: &Path, workspace: &Path) -> bool {
    let wanted = canonical(workspace);
    trusted_workspaces(home)
        .iter()
        .any(|path| canonical(path) == wanted)
}

/// Every workspace trusted in `home/config.toml`, as recorded.
pub fn trusted_workspaces(home: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(home.join("config.toml")) else {
        return Vec::new();
    };
    let Ok(table) = toml::from_str::<toml::Table>(&text) else {
        return Vec::new();
    };
    let Some(toml::Value::Array(entries)) = table.get(TRUST_TABLE) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| entry.get("path")?.as_str())
        .map(PathBuf::from)
        .collect()
}

/// Records `workspace` (canonical) as trusted in `home/config.toml`, appending to the file.
/// Returns false when it was trusted already.
pub fn trust_workspace(home: &Path, workspace: &Path) -> io::Result<bool> {
    let path = canonical(workspace);
    if workspace_trusted(home, &path) {
        return Ok(false);
    }
    let text = path.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not valid unicode", path.display()),
        )
    })?;
    std::fs::create_dir_all(home)?;
    let file = home.join("config.toml");
    let existing = std::fs::read_to_string(&file).unwrap_or_default();
    let mut entry = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        entry.push('\n');
    }
    entry.push_str(&format!(
        "\n[[{TRUST_TABLE}]]\npath = {}\n",
        toml_string(text)
    ));
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)?;
    out.write_all(entry.as_bytes())?;
    out.sync_all()?;
    Ok(true)
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_appended_and_read_back_exactly() {
        let home = tempfile::tempdir().expect("home");
        let ws = tempfile::tempdir().expect("workspace");
        let sub = ws.path().join("sub \"q\"");
        std::fs::create_dir(&sub).expect("sub");
        let config = home.path().join("config.toml");
        std::fs::write(
            &config,
            "# mine\nmodel = \"m\" # kept\n[roles.worker]\nmodel = \"w\"",
        )
        .expect("config");
        assert!(!workspace_trusted(home.path(), ws.path()));
        assert!(trust_workspace(home.path(), ws.path()).expect("trust"));
        assert!(
            !trust_workspace(home.path(), ws.path()).expect("again"),
            "once"
        );
        assert!(trust_workspace(home.path(), &sub).expect("quoted path"));
        assert!(workspace_trusted(home.path(), ws.path()));
        assert!(workspace_trusted(home.path(), &sub));
        assert!(!workspace_trusted(home.path(), &ws.path().join("other")));
        let text = std::fs::read_to_string(&config).expect("config");
        assert!(text.starts_with("# mine\nmodel = \"m\" # kept\n[roles.worker]\nmodel = \"w\"\n"));
        let table: toml::Table = toml::from_str(&text).expect("still valid toml");
        assert_eq!(table["roles"]["worker"]["model"].as_str(), Some("w"));
        assert_eq!(trusted_workspaces(home.path()).len(), 2);
    }
}
