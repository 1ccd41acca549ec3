//! Looking inside the commands that run other commands: wrappers (`timeout`, `env`, `nohup`,
//! `xargs`, `find -exec`, `sudo`, …), `eval`, and `git` (`-c` values, aliases, `rebase --exec`,
//! `submodule foreach`, …), down to what they run.
//!
//! A wrapper's words are searched at every position (each later word may start the command it
//! runs), and any argument that is itself a command line (`sh -c 'rm -rf d'`, `env -S '…'`,
//! `su -c '…'`) is split like a script. What is found is judged like any plain command. What
//! cannot be followed (a script that is not plain, nesting past the limit, too many commands)
//! is kept as rough words, matched anywhere, and makes the evaluation unparsed: the strictest
//! reading.

use std::collections::HashSet;

use super::readonly::long_option;
use super::shell::{self, MAX_NESTING, ShellScript, basename, rough_words};

/// Command names that run another command given in their arguments (`env git push`,
/// `timeout 5 git push`, `xargs rm`, `find . -exec rm`).
pub(crate) const WRAPPERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "nice",
    "ionice",
    "nohup",
    "timeout",
    "xargs",
    "command",
    "exec",
    "builtin",
    "stdbuf",
    "setsid",
    "chroot",
    "unbuffer",
    "watch",
    "strace",
    "ltrace",
    "busybox",
    "parallel",
    "find",
    "flock",
    "script",
    "su",
    "runuser",
    "eval",
    "source",
    ".",
    "nsenter",
    "unshare",
    "taskset",
    "chrt",
    "prlimit",
    "systemd-run",
    "firejail",
];

/// The most commands one string may make the search look at before it gives up (and judges
/// the rest whole).
const MAX_CANDIDATES: usize = 512;

/// `find` actions that run a command, which ends at `;` or `+`.
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// What the search found beyond the plain commands themselves.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Commands run by wrappers, `eval`, nested scripts and `git`, in the order found.
    pub(crate) commands: Vec<Vec<String>>,
    /// Rough words of what could not be followed.
    pub(crate) opaque: Vec<Vec<String>>,
}

/// Looks inside every command of `commands` (plain commands at nesting `depth` 0).
pub(crate) fn resolve(commands: &[Vec<String>]) -> Found {
    let mut walker = Walker::default();
    for words in commands {
        walker.look_inside(words, 0);
    }
    walker.found
}

/// Whether `words` runs through a wrapper, so that rules are matched at every position.
pub(crate) fn is_wrapper(words: &[String]) -> bool {
    words
        .first()
        .is_some_and(|w| WRAPPERS.contains(&basename(w)))
}

#[derive(Default)]
struct Walker {
    found: Found,
    /// Commands already found (and judged).
    judged: HashSet<Vec<String>>,
    /// Suffixes of wrappers already looked inside (the wrapper itself is matched anywhere, so
    /// they need no judging of their own).
    explored: HashSet<Vec<String>>,
    looked: usize,
}

impl Walker {
    /// A command found inside another: judged, then looked inside in turn.
    fn found(&mut self, words: Vec<String>, depth: usize) {
        if words.is_empty() || !self.judged.insert(words.clone()) {
            return;
        }
        self.found.commands.push(words.clone());
        self.look_inside(&words, depth);
    }

    fn opaque(&mut self, words: Vec<String>) {
        self.found.opaque.push(words);
    }

    /// The commands `words` runs, if it runs any.
    fn look_inside(&mut self, words: &[String], depth: usize) {
        self.looked += 1;
        if self.looked > MAX_CANDIDATES {
            if self.looked == MAX_CANDIDATES + 1 {
                self.opaque(words.to_vec());
            }
            return;
        }
        let Some(first) = words.first() else { return };
        match shell::shell_script(words) {
            ShellScript::Script(text) => return self.script(text, depth),
            ShellScript::Unrecognised => return self.opaque(rough_words(&words.join(" "))),
            ShellScript::None => {}
        }
        let name = basename(first);
        if name == "git" {
            self.git(words, depth);
        } else if name == "find" {
            self.find(words, depth);
        } else if WRAPPERS.contains(&name) {
            self.wrapper(name, words, depth);
        }
    }

    /// A command line given as one string: its plain commands, or its rough words.
    fn script(&mut self, text: &str, depth: usize) {
        if depth >= MAX_NESTING {
            return self.opaque(rough_words(text));
        }
        match shell::parse_nested(text, depth + 1) {
            Some(script) => {
                for words in script.flatten() {
                    self.found(words, depth + 1);
                }
            }
            None => self.opaque(rough_words(text)),
        }
    }

    /// Every later position may start the wrapped command; every argument that is a command
    /// line is one.
    fn wrapper(&mut self, name: &str, words: &[String], depth: usize) {
        let args = &words[1..];
        if matches!(name, "eval" | "watch") && !args.is_empty() {
            // Both hand their arguments, joined by spaces, to a shell.
            self.script(&args.join(" "), depth);
        }
        for at in 1..words.len() {
            let suffix: Vec<String> = words[at..]
                .iter()
                .take_while(|w| w.as_str() != ";")
                .cloned()
                .collect();
            if !suffix.is_empty() && self.explored.insert(suffix.clone()) {
                self.look_inside(&suffix, depth);
            }
        }
        for arg in args.iter().filter(|a| is_command_line(a)) {
            self.script(arg, depth);
        }
    }

    /// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`, ending at `;` or `+`).
    fn find(&mut self, words: &[String], depth: usize) {
        let mut rest = words;
        while let Some(at) = rest.iter().position(|w| FIND_EXEC.contains(&w.as_str())) {
            let after = &rest[at + 1..];
            let end = after
                .iter()
                .position(|w| w == ";" || w == "+")
                .unwrap_or(after.len());
            self.found(after[..end].to_vec(), depth);
            rest = &after[end..];
        }
    }

    /// `git`: values of `-c` (aliases with `!` and every other value are command lines to git
    /// or to the shell), alias expansion, and the subcommands that run commands.
    fn git(&mut self, words: &[String], depth: usize) {
        let mut aliases: Vec<(String, String)> = Vec::new();
        let mut at = 1;
        while let Some(word) = words.get(at) {
            let word = word.as_str();
            let takes_value = matches!(
                word,
                "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
            );
            if word == "-c" {
                if let Some(pair) = words.get(at + 1) {
                    self.git_config(pair, &mut aliases, depth);
                }
            } else if !word.starts_with('-') {
                break;
            }
            at += if takes_value { 2 } else { 1 };
        }
        let Some(sub) = words.get(at) else { return };
        let rest = &words[at + 1..];
        if let Some((_, value)) = aliases.iter().find(|(name, _)| name == sub) {
            if !value.starts_with('!') {
                let mut expanded = vec![words[0].clone()];
                match shell::parse(value) {
                    Some(script) if script.commands.len() == 1 => {
                        expanded.extend(script.commands[0].words.iter().cloned());
                        expanded.extend(rest.iter().cloned());
                        self.found(expanded, depth);
                    }
                    _ => self.opaque(rough_words(value)),
                }
            }
            return;
        }
        match sub.as_str() {
            "rebase" | "difftool" | "mergetool" | "filter-branch" | "clone" | "fetch" | "pull"
            | "push" | "ls-remote" | "archive" | "submodule" | "bisect" => {}
            _ => return,
        }
        let mut args = rest.iter();
        while let Some(arg) = args.next() {
            let arg = arg.as_str();
            if sub == "submodule" && arg == "foreach" {
                let script: Vec<&str> = args
                    .by_ref()
                    .map(String::as_str)
                    .skip_while(|a| matches!(*a, "--recursive" | "-q" | "--quiet"))
                    .collect();
                self.script(&script.join(" "), depth);
                return;
            }
            if sub == "bisect" && arg == "run" {
                self.found(args.by_ref().cloned().collect(), depth);
                return;
            }
            let code_option = ["--exec", "--extcmd", "--upload-pack", "--receive-pack"]
                .into_iter()
                .find_map(|name| long_option(arg, name))
                .or_else(|| {
                    (arg.starts_with("--") && arg.contains("-filter"))
                        .then(|| arg.split_once('=').map(|(_, v)| v))
                });
            let short = matches!(arg, "-x" | "-u")
                && matches!(sub.as_str(), "rebase" | "difftool" | "ls-remote");
            match code_option {
                Some(Some(inline)) => self.script(inline, depth),
                Some(None) => {
                    if let Some(value) = args.next() {
                        self.script(value, depth);
                    }
                }
                None if short => {
                    if let Some(value) = args.next() {
                        self.script(value, depth);
                    }
                }
                None => {}
            }
        }
    }

    /// One `git -c KEY=VALUE`: an alias is remembered; every value is judged as a command line
    /// (without its leading `!`), since many keys name programs git runs (`core.pager`,
    /// `core.fsmonitor`, `core.sshCommand`, `diff.external`, `credential.helper`, …).
    fn git_config(&mut self, pair: &str, aliases: &mut Vec<(String, String)>, depth: usize) {
        let Some((key, value)) = pair.split_once('=') else {
            return;
        };
        if let Some(name) = key
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("alias."))
            .map(|_| &key[6..])
        {
            aliases.push((name.to_string(), value.to_string()));
        }
        let code = value.strip_prefix('!').unwrap_or(value);
        if !code.trim().is_empty() {
            self.script(code, depth);
        }
    }
}

/// An argument that is itself a command line: it has blanks or shell operators in it.
fn is_command_line(arg: &str) -> bool {
    arg.chars()
        .any(|c| c.is_whitespace() || matches!(c, ';' | '|' | '&'))
}
