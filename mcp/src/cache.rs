//! The tool lists servers last gave, kept in the arbor home (`mcp/tools.json`), so a session
//! can offer a server's tools without starting it: the server starts when an agent first
//! calls one of them. An entry is used only for the same server started the same way (a
//! fingerprint of its command, arguments, environment, directory or URL as configured); when the server is
//! started and lists something else, the entry is replaced and the new list applies from the
//! next session (a session's tool list never changes under its agents).
//!
//! A session reads the file once, when it opens ([`ToolCache::snapshot`], with its other
//! files, off the async workers). The file is a cache: losing it costs one start per server.
//! It is written whole, to a new file renamed into place, each read-modify-write under an
//! exclusive lock on `tools.json.lock` (so servers listed at once, by one session or several,
//! all keep their entries).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{ServerConfig, Transport};
use crate::naming::ListedTool;

/// The cache file's name in its folder.
const FILE: &str = "tools.json";
/// The lock file every write holds.
const LOCK: &str = "tools.json.lock";
/// Bumped when the file's shape changes; other versions are ignored.
const VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    tools: Vec<ListedTool>,
}

/// The cache in one folder.
#[derive(Debug, Clone)]
pub struct ToolCache {
    dir: PathBuf,
}

/// The tool lists of one reading of the cache file.
#[derive(Debug, Clone, Default)]
pub struct CachedTools {
    servers: BTreeMap<String, Entry>,
}

impl CachedTools {
    /// The tools `server` listed last, if it was started the same way.
    pub fn get(&self, server: &str, fingerprint: &str) -> Option<Vec<ListedTool>> {
        let entry = self.servers.get(server)?;
        (entry.fingerprint == fingerprint).then(|| entry.tools.clone())
    }
}

impl ToolCache {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The cache of the arbor home `home` (`mcp/tools.json`).
    pub fn in_home(home: &Path) -> Self {
        Self::new(home.join("mcp"))
    }

    /// Reads the file once (blocking): what a session offers without starting servers.
    pub fn snapshot(&self) -> CachedTools {
        CachedTools {
            servers: self.read().servers,
        }
    }

    fn read(&self) -> File {
        std::fs::read(self.dir.join(FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<File>(&bytes).ok())
            .filter(|file| file.version == VERSION)
            .unwrap_or_default()
    }

    /// The tools `server` listed last, if it was started the same way.
    pub fn load(&self, server: &str, fingerprint: &str) -> Option<Vec<ListedTool>> {
        self.snapshot().get(server, fingerprint)
    }

    /// Records what `server` listed; true when that differs from what was recorded.
    pub fn store(&self, server: &str, fingerprint: &str, tools: &[ListedTool]) -> bool {
        // Held until the new file is in place; released when dropped.
        let _lock = self
            .lock()
            .inspect_err(|err| {
                tracing::warn!(dir = %self.dir.display(), error = %err, "cannot lock the MCP tool cache");
            })
            .ok();
        let mut file = self.read();
        let entry = Entry {
            fingerprint: fingerprint.to_string(),
            tools: tools.to_vec(),
        };
        let changed = file
            .servers
            .get(server)
            .is_none_or(|old| old.fingerprint != entry.fingerprint || old.tools != entry.tools);
        if !changed {
            return false;
        }
        file.version = VERSION;
        file.servers.insert(server.to_string(), entry);
        if let Err(err) = write(&self.dir, &file) {
            tracing::warn!(dir = %self.dir.display(), error = %err, "cannot cache MCP tool lists");
        }
        true
    }
}

impl ToolCache {
    /// The exclusive lock writers hold (blocking until it is free).
    fn lock(&self) -> std::io::Result<std::fs::File> {
        std::fs::create_dir_all(&self.dir)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK))?;
        file.lock()?;
        Ok(file)
    }
}

fn write(dir: &Path, file: &File) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
    let temp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, dir.join(FILE))
}

/// What identifies how a server is started: its transport as configured (`{workspace}`
/// unexpanded: the same server offers the same tools in every workspace).
pub fn fingerprint(config: &ServerConfig) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            "stdio".hash(&mut hasher);
            command.hash(&mut hasher);
            args.hash(&mut hasher);
            env.hash(&mut hasher);
            cwd.hash(&mut hasher);
        }
        Transport::Http {
            url,
            bearer_token_env_var,
        } => {
            "http".hash(&mut hasher);
            url.hash(&mut hasher);
            bearer_token_env_var.hash(&mut hasher);
        }
    }
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawServer;

    fn server(args: &[&str]) -> ServerConfig {
        let raw = RawServer {
            command: Some("srv".into()),
            args: Some(args.iter().map(|a| (*a).to_string()).collect()),
            ..RawServer::default()
        };
        ServerConfig::from_raw("s", &raw)
            .expect("valid")
            .expect("enabled")
    }

    fn tool(name: &str) -> ListedTool {
        ListedTool {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            read_only: true,
        }
    }

    #[test]
    fn entries_are_used_for_the_same_start_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ToolCache::new(dir.path().join("mcp"));
        let print = fingerprint(&server(&["{workspace}"]));
        assert_eq!(cache.load("s", &print), None);
        assert!(cache.store("s", &print, &[tool("a")]));
        assert!(!cache.store("s", &print, &[tool("a")]), "unchanged");
        assert_eq!(cache.load("s", &print), Some(vec![tool("a")]));
        // Other arguments: another start.
        assert_ne!(print, fingerprint(&server(&["--other"])));
        assert_eq!(cache.load("s", "elsewhere"), None);
        assert!(cache.store("s", &print, &[tool("a"), tool("b")]), "changed");
    }

    #[test]
    fn servers_stored_at_once_all_keep_their_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ToolCache::new(dir.path().join("mcp"));
        let names: Vec<String> = (0..8).map(|n| format!("s{n}")).collect();
        std::thread::scope(|scope| {
            for name in &names {
                let cache = cache.clone();
                scope.spawn(move || cache.store(name, "print", &[tool(name)]));
            }
        });
        let snapshot = cache.snapshot();
        for name in &names {
            assert_eq!(
                snapshot.get(name, "print"),
                Some(vec![tool(name)]),
                "{name}"
            );
        }
    }
}
