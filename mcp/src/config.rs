//! `[mcp_servers.NAME]` in `config.toml`: one MCP server, stdio (`command`, `args`, `env`,
//! `cwd`) or streamable HTTP (`url`, `bearer_token_env_var`), with its tool filters and
//! timeouts. [`RawServer`] is the table as written; [`ServerConfig::from_raw`] checks it and
//! names the key that is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// Longest wait for a server to start and list its tools, unless its config says otherwise.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 10_000;
/// Longest wait for one tool call, unless the server's config says otherwise.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 60_000;
/// The token in `args` and `cwd` that stands for the session's workspace.
pub const WORKSPACE_TOKEN: &str = "{workspace}";

/// One `[mcp_servers.NAME]` table as written; every key optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub bearer_token_env_var: Option<String>,
    pub enabled: Option<bool>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    pub startup_timeout_ms: Option<u64>,
    pub tool_timeout_ms: Option<u64>,
}

/// How arbor reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// `None`: the session's workspace.
        cwd: Option<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// The variable that holds a bearer token, sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
    },
}

/// One checked server configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
}

impl ServerConfig {
    /// Checks one table. `None` for a server switched off with `enabled = false`. The error
    /// names the table and the key: `mcp_servers.fs: ...`.
    pub fn from_raw(name: &str, raw: &RawServer) -> Result<Option<Self>, String> {
        let at = |message: String| format!("mcp_servers.{name}: {message}");
        check_name(name).map_err(|message| at(format!("the server name {message}")))?;
        if raw.enabled == Some(false) {
            return Ok(None);
        }
        let transport = match (&raw.command, &raw.url) {
            (Some(_), Some(_)) => {
                return Err(at(
                    "give either `command` (a stdio server) or `url` (streamable HTTP), not both"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(at(
                    "give `command` (a stdio server) or `url` (streamable HTTP)".into(),
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(at("`command` must not be empty".into()));
                }
                if raw.bearer_token_env_var.is_some() {
                    return Err(at(
                        "`bearer_token_env_var` is for `url` servers; a stdio server takes `env`"
                            .into(),
                    ));
                }
                Transport::Stdio {
                    command: command.clone(),
                    args: raw.args.clone().unwrap_or_default(),
                    env: raw.env.clone().unwrap_or_default(),
                    cwd: raw.cwd.clone(),
                }
            }
            (None, Some(url)) => {
                for (key, set) in [
                    ("args", raw.args.is_some()),
                    ("env", raw.env.is_some()),
                    ("cwd", raw.cwd.is_some()),
                ] {
                    if set {
                        return Err(at(format!(
                            "`{key}` is for stdio servers (`command`), not for `url`"
                        )));
                    }
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(at(format!(
                        "`url` must start with http:// or https://, not `{url}`"
                    )));
                }
                Transport::Http {
                    url: url.clone(),
                    bearer_token_env_var: raw.bearer_token_env_var.clone(),
                }
            }
        };
        let timeout = |key: &str, value: Option<u64>, default: u64| match value {
            Some(0) => Err(at(format!("`{key}` must be at least 1"))),
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Ok(Duration::from_millis(default)),
        };
        Ok(Some(Self {
            name: name.to_string(),
            transport,
            enabled_tools: raw.enabled_tools.clone(),
            disabled_tools: raw.disabled_tools.clone().unwrap_or_default(),
            startup_timeout: timeout(
                "startup_timeout_ms",
                raw.startup_timeout_ms,
                DEFAULT_STARTUP_TIMEOUT_MS,
            )?,
            tool_timeout: timeout(
                "tool_timeout_ms",
                raw.tool_timeout_ms,
                DEFAULT_TOOL_TIMEOUT_MS,
            )?,
        }))
    }

    /// Whether the filters let `tool` through.
    pub fn offers(&self, tool: &str) -> bool {
        let enabled = self
            .enabled_tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool));
        enabled && !self.disabled_tools.iter().any(|n| n == tool)
    }

    /// A short description of how the server is reached, for listings.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut words = vec![command.clone()];
                words.extend(args.iter().cloned());
                words.join(" ")
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// Every checked server of a configuration, in name order (switched-off ones left out).
pub fn servers_from_raw(raw: &BTreeMap<String, RawServer>) -> Result<Vec<ServerConfig>, String> {
    let mut servers = Vec::new();
    for (name, table) in raw {
        if let Some(server) = ServerConfig::from_raw(name, table)? {
            servers.push(server);
        }
    }
    Ok(servers)
}

/// A server name: letters, digits, `-` and `_`, without `__` (which separates the parts of a
/// tool's name) and without a leading or trailing `_`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "`{name}` must use only letters, digits, `-` and `_`"
        ));
    }
    if name.contains("__") || name.starts_with('_') || name.ends_with('_') {
        return Err(format!(
            "`{name}` must not contain `__` or start or end with `_` (`__` separates the parts of a tool name)"
        ));
    }
    Ok(())
}

/// `text` with every [`WORKSPACE_TOKEN`] replaced by `workspace`.
pub fn expand(text: &str, workspace: &Path) -> String {
    text.replace(WORKSPACE_TOKEN, &workspace.display().to_string())
}

/// Where a session's stdio servers run: the workspace (for `{workspace}` and a `cwd` relative
/// to it) and the folder they start in when their config names no `cwd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDirs {
    pub workspace: PathBuf,
    /// `$ARBOR_HOME/mcp/run`: no agent can write there (the home is read-only in every
    /// sandbox), so nothing planted in the workspace (a `json.py` that `python3 -m server`
    /// would import, an `.npmrc` that `npx` would read) is on a server's way.
    pub run: PathBuf,
}

impl ServerDirs {
    /// The dirs of a session in `workspace` whose arbor home is `home`.
    pub fn new(workspace: PathBuf, home: &Path) -> Self {
        Self {
            workspace,
            run: home.join("mcp").join("run"),
        }
    }
}

/// The directory a stdio server runs in: its `cwd` (relative to the workspace), else the
/// home's MCP folder.
pub fn server_cwd(cwd: Option<&str>, dirs: &ServerDirs) -> PathBuf {
    match cwd {
        Some(dir) => dirs.workspace.join(expand(dir, &dirs.workspace)),
        None => dirs.run.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<ServerConfig>, String> {
        #[derive(Deserialize)]
        struct File {
            mcp_servers: BTreeMap<String, RawServer>,
        }
        let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
        servers_from_raw(&file.mcp_servers)
    }

    #[test]
    fn stdio_and_http_servers_parse_with_defaults() {
        let servers = parse(
            "[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"fs\", \"{workspace}\"]\n\
             [mcp_servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\ntool_timeout_ms = 500\n\
             [mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
        )
        .expect("valid");
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "fs");
        assert_eq!(servers[0].startup_timeout, Duration::from_millis(10_000));
        assert_eq!(servers[1].tool_timeout, Duration::from_millis(500));
        assert!(matches!(servers[1].transport, Transport::Http { .. }));
    }

    #[test]
    fn bad_tables_name_the_server_and_key() {
        let check = |text: &str, expect: &str| {
            let err = parse(text).expect_err(text);
            assert!(err.contains(expect), "{err}");
        };
        check(
            "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
            "mcp_servers.a: give either `command`",
        );
        check(
            "[mcp_servers.a]\nargs = []\n",
            "mcp_servers.a: give `command`",
        );
        check(
            "[mcp_servers.a]\nurl = \"http://h\"\nenv = {}\n",
            "`env` is for stdio servers",
        );
        check(
            "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 0\n",
            "`startup_timeout_ms` must be at least 1",
        );
        check(
            "[mcp_servers.a__b]\ncommand = \"x\"\n",
            "must not contain `__`",
        );
        check("[mcp_servers.\"a.b\"]\ncommand = \"x\"\n", "only letters");
        check(
            "[mcp_servers.a]\nurl = \"ftp://h\"\n",
            "must start with http",
        );
        check(
            "[mcp_servers.a]\ncomand = \"x\"\n",
            "unknown field `comand`",
        );
    }

    #[test]
    fn filters_and_the_workspace_token() {
        let server = &parse(
            "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"r\", \"w\"]\ndisabled_tools = [\"w\"]\n",
        )
        .expect("valid")[0];
        assert!(server.offers("r"));
        assert!(!server.offers("w"));
        assert!(!server.offers("other"));
        assert_eq!(expand("{workspace}/sub", Path::new("/w")), "/w/sub");
        let dirs = ServerDirs::new(PathBuf::from("/w"), Path::new("/home/u/.arbor"));
        assert_eq!(
            server_cwd(None, &dirs),
            PathBuf::from("/home/u/.arbor/mcp/run")
        );
        assert_eq!(server_cwd(Some("tools"), &dirs), PathBuf::from("/w/tools"));
    }
}
