//! The environment `exec_command` children get (`[shell_environment]` in `config.toml`): arbor's
//! own environment, filtered so that secrets (API keys, tokens, passwords) never reach a command
//! and so never its output, the rollout or the model.
//!
//! Built in order: the variables `inherit` names (`all`, `core`, `none`); minus every name that
//! contains `KEY`, `SECRET`, `TOKEN`, `PASSWORD` or `CREDENTIAL` (any case), unless
//! `ignore_default_excludes`; minus the names matching an `exclude` pattern; when `include_only`
//! is not empty, only the names matching one of its patterns; plus `set`; minus the variables
//! that are never passed (the model provider's key variable), whatever the rest says. Patterns
//! are case-insensitive globs (`*` any run, `?` one character).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Parts of a name that mark a secret, removed by default (compared in upper case).
pub const SECRET_MARKERS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"];

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
            .filter(|(name, _)| self.inherits(name))
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

    fn inherits(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            // A name that is not UTF-8 cannot be matched against patterns: leave it out.
            return false;
        };
        let kept = match self.inherit {
            Inherit::All => true,
            Inherit::Core => CORE_VARIABLES.contains(&name),
            Inherit::None => false,
        };
        kept && (self.ignore_default_excludes || !looks_secret(name))
            && !self.exclude.iter().any(|p| glob(p, name))
            && (self.include_only.is_empty() || self.include_only.iter().any(|p| glob(p, name)))
    }
}

/// Whether a variable name marks a secret by default.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
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
