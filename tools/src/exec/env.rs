//! The environment `exec_command` children get (`[shell_environment]` in `config.toml`): arbor's
//! own environment, filtered so that secrets (API keys, tokens, passwords) never reach a command
//! and so never its output, the rollout or the model, and so that no command is told where the
//! user's session listens (a tmux server, an ssh or gpg agent, a D-Bus bus, a display), where it
//! would act outside the sandbox.
//!
//! Built in order: the variables `inherit` names (`all`, `core`, `none`); minus the default
//! excludes, unless `ignore_default_excludes` or the name matches a `keep` pattern: every name
//! that contains `KEY`, `SECRET`, `TOKEN`, `PASSWORD` or `CREDENTIAL` or ends in `_PAT`,
//! `_AUTH`, `_PASS` or `_PWD` (any case), every value that is a secret ([`secret_value`]: a URL
//! with a password, a well-known token), and the [`SESSION_VARIABLES`]; minus the names matching
//! an `exclude` pattern; when `include_only` is not empty, only the names matching one of its
//! patterns; plus `set`; minus the variables that are never passed (the model provider's key
//! variable), whatever the rest says. Patterns are case-insensitive globs (`*` any run, `?` one
//! character).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Parts of a name that mark a secret, removed by default (compared in upper case).
pub const SECRET_MARKERS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"];

/// Endings of a name that mark a secret (a personal access token, an auth string, a password),
/// and whole names that are one, removed by default (compared in upper case).
pub const SECRET_SUFFIXES: &[&str] = &["_PAT", "_AUTH", "_PASS", "_PWD"];
const SECRET_NAMES: &[&str] = &["SSHPASS"];

/// Beginnings of well-known tokens (GitHub, GitLab, Slack): a value that starts with one is a
/// secret whatever its name.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
];

/// Variables that tell a command where the user's session listens, removed by default: through
/// them a command reaches a program outside the sandbox that acts for it (`tmux run-shell`, the
/// ssh agent's keys, `systemd-run --user` over D-Bus, a container daemon, keystrokes sent to a
/// display, a window manager's or an editor's remote control). See `docs/sandbox.md`.
pub const SESSION_VARIABLES: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
];

/// The variables `inherit = "core"` keeps.
pub const CORE_VARIABLES: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG",
    "LC_ALL", "LC_CTYPE", "TERM", "TZ",
];

/// Which of arbor's variables a command starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inherit {
    /// Every variable (then filtered).
    #[default]
    All,
    /// Only [`CORE_VARIABLES`].
    Core,
    /// None: only `set`.
    None,
}

impl Inherit {
    /// Parses the config text: `all`, `core` or `none`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "all" => Some(Self::All),
            "core" => Some(Self::Core),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// How the environment of a command is built from arbor's. The default passes everything but
/// secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellEnvironment {
    pub inherit: Inherit,
    /// Keep names that look like secrets (`exclude` and the never-passed names still apply).
    pub ignore_default_excludes: bool,
    /// Patterns of names kept despite the default excludes (a secret's name or value, a session
    /// variable); `exclude`, `include_only` and the never-passed names still apply.
    pub keep: Vec<String>,
    /// Patterns of names to remove.
    pub exclude: Vec<String>,
    /// When not empty, patterns of the only names kept from what is inherited.
    pub include_only: Vec<String>,
    /// Variables set for every command.
    pub set: BTreeMap<String, String>,
    /// Names never passed, whatever the rest says (the provider's key variable).
    pub never: Vec<String>,
}

impl ShellEnvironment {
    /// The environment of a command given arbor's own `vars`, in the order given (`set` last).
    pub fn build(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = vars
            .into_iter()
            .filter(|(name, value)| self.inherits(name, value))
            .collect();
        for (name, value) in &self.set {
            out.retain(|(n, _)| n != OsStr::new(name));
            out.push((name.into(), value.into()));
        }
        out.retain(|(name, _)| !self.never.iter().any(|never| OsStr::new(never) == name));
        out
    }

    /// The environment of a command from arbor's current environment.
    pub fn build_from_process(&self) -> Vec<(OsString, OsString)> {
        self.build(std::env::vars_os())
    }

    fn inherits(&self, name: &OsStr, value: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            // A name that is not UTF-8 cannot be matched against patterns: leave it out.
            return false;
        };
        let kept = match self.inherit {
            Inherit::All => true,
            Inherit::Core => CORE_VARIABLES.contains(&name),
            Inherit::None => false,
        };
        let excluded_by_default = looks_secret(name)
            || secret_value(&value.to_string_lossy())
            || SESSION_VARIABLES.contains(&name);
        kept && (!excluded_by_default
            || self.ignore_default_excludes
            || self.keep.iter().any(|p| glob(p, name)))
            && !self.exclude.iter().any(|p| glob(p, name))
            && (self.include_only.is_empty() || self.include_only.iter().any(|p| glob(p, name)))
    }
}

/// Whether a variable name marks a secret by default.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
        || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || SECRET_NAMES.contains(&upper.as_str())
}

/// Whether a value is a secret whatever its name: it holds a URL with a password
/// (`scheme://user:password@host`, anywhere in it: lists of URLs too), or starts with a
/// well-known token's prefix.
pub fn secret_value(value: &str) -> bool {
    if TOKEN_PREFIXES
        .iter()
        .any(|prefix| value.starts_with(prefix))
    {
        return true;
    }
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        // The authority ends at the path, query, fragment or a blank.
        let end = rest
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        authority
            .rsplit_once('@')
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .is_some_and(|(_, password)| !password.is_empty())
    })
}

/// A case-insensitive glob: `*` matches any run of characters, `?` one character.
fn glob(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.to_ascii_uppercase().chars().collect();
    let name: Vec<char> = name.to_ascii_uppercase().chars().collect();
    // Greedy matching with backtracking to the last `*`.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect()
    }

    fn names(env: &ShellEnvironment, from: &[(&str, &str)]) -> Vec<String> {
        env.build(vars(from))
            .into_iter()
            .map(|(n, v)| format!("{}={}", n.to_string_lossy(), v.to_string_lossy()))
            .collect()
    }

    const ARBOR: &[(&str, &str)] = &[
        ("PATH", "/bin"),
        ("HOME", "/h"),
        ("OPENAI_API_KEY", "sk-1"),
        ("GITHUB_TOKEN", "t"),
        ("db_password", "p"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/c.json"),
        ("LLM_ACCESS", "k"),
        ("CARGO_HOME", "/c"),
        ("EDITOR", "vi"),
        ("TMUX", "/tmp/tmux-0/default,1,0"),
        ("SSH_AUTH_SOCK", "/run/user/0/ssh"),
        ("DATABASE_URL", "postgres://u:pw@h/db"),
        ("GITHUB_PAT", "p"),
        ("NPM_CONFIG__AUTH", "a"),
        ("MYSQL_PWD", "w"),
    ];

    #[test]
    fn by_default_everything_but_secrets_is_passed() {
        assert_eq!(
            names(&ShellEnvironment::default(), ARBOR),
            [
                "PATH=/bin",
                "HOME=/h",
                "LLM_ACCESS=k",
                "CARGO_HOME=/c",
                "EDITOR=vi"
            ]
        );
    }

    #[test]
    fn the_never_passed_names_win_over_everything() {
        let env = ShellEnvironment {
            ignore_default_excludes: true,
            set: BTreeMap::from([("LLM_ACCESS".to_string(), "again".to_string())]),
            never: vec!["LLM_ACCESS".into(), "OPENAI_API_KEY".into()],
            ..ShellEnvironment::default()
        };
        let got = names(&env, ARBOR);
        assert!(
            !got.iter()
                .any(|v| v.starts_with("LLM_ACCESS") || v.starts_with("OPENAI"))
        );
        assert!(got.contains(&"GITHUB_TOKEN=t".to_string()), "{got:?}");
    }

    #[test]
    fn inherit_core_and_none_then_exclude_include_only_and_set() {
        let core = ShellEnvironment {
            inherit: Inherit::Core,
            ..ShellEnvironment::default()
        };
        assert_eq!(names(&core, ARBOR), ["PATH=/bin", "HOME=/h"]);
        let none = ShellEnvironment {
            inherit: Inherit::None,
            set: BTreeMap::from([("CI".to_string(), "1".to_string())]),
            ..ShellEnvironment::default()
        };
        assert_eq!(names(&none, ARBOR), ["CI=1"]);
        let picky = ShellEnvironment {
            exclude: vec!["cargo_*".into()],
            include_only: vec!["*A*".into(), "EDIT?R".into()],
            set: BTreeMap::from([("PATH".to_string(), "/usr/bin".to_string())]),
            ..ShellEnvironment::default()
        };
        assert_eq!(
            names(&picky, ARBOR),
            ["LLM_ACCESS=k", "EDITOR=vi", "PATH=/usr/bin"]
        );
    }

    #[test]
    fn secrets_by_ending_and_by_value() {
        for name in [
            "GITHUB_PAT",
            "npm_config__auth",
            "SMTP_PASS",
            "MYSQL_PWD",
            "SSHPASS",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PWD", "OLDPWD", "PATH", "XAUTHORITY", "COMPASS"] {
            assert!(!looks_secret(name), "{name}");
        }
        for value in [
            "postgres://u:pw@h/db",
            "https://x-access-token:abc@github.com/o/r.git",
            "https://pypi.org/simple https://me:pw@private.example/simple",
            "redis://:hunter2@cache:6379",
            "ghp_0123456789abcdef",
            "glpat-abc",
        ] {
            assert!(secret_value(value), "{value}");
        }
        for value in [
            "https://example.com/a:b@c",
            "ssh://git@github.com/o/r.git",
            "https://user@host/",
            "mailto:me@example.com",
            "/usr/bin:/bin",
            "u:@h://x",
        ] {
            assert!(!secret_value(value), "{value}");
        }
    }

    #[test]
    fn keep_brings_back_what_the_default_excludes_drop_and_nothing_more() {
        let env = ShellEnvironment {
            keep: vec![
                "ssh_auth_sock".into(),
                "DATABASE_*".into(),
                "MYSQL_PWD".into(),
            ],
            exclude: vec!["MYSQL_*".into()],
            ..ShellEnvironment::default()
        };
        let got = names(&env, ARBOR);
        assert!(
            got.contains(&"SSH_AUTH_SOCK=/run/user/0/ssh".to_string()),
            "{got:?}"
        );
        assert!(
            got.contains(&"DATABASE_URL=postgres://u:pw@h/db".to_string()),
            "{got:?}"
        );
        // `exclude` still applies; the rest of the defaults too.
        assert!(!got.iter().any(|v| v.starts_with("MYSQL_PWD")), "{got:?}");
        assert!(!got.iter().any(|v| v.starts_with("TMUX")), "{got:?}");
        assert!(
            !got.iter().any(|v| v.starts_with("GITHUB_TOKEN")),
            "{got:?}"
        );
    }

    #[test]
    fn globs() {
        for (pattern, name, expect) in [
            ("AWS_*", "aws_region", true),
            ("*_KEY", "MY_KEY", true),
            ("*_KEY", "MY_KEYS", false),
            ("A?C", "ABC", true),
            ("A?C", "AC", false),
            ("*", "", true),
            ("a*b*c", "aXXbYc", true),
            ("a*b*c", "aXXbY", false),
        ] {
            assert_eq!(glob(pattern, name), expect, "{pattern} {name}");
        }
    }
}
