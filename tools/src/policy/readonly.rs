//! The built-in list of known read-only commands: what `untrusted` runs without asking.
//!
//! A command is read-only here only when its name is on the list *and* none of its arguments
//! makes it write or run something else (`find -exec`, `sort -o`, `sed -i`, `git branch NAME`,
//! `rg --pre`, …). Long options count in every abbreviation GNU tools and git accept
//! (`sort --compress-prog`, `--out=F`), and a command given by a path outside the system's
//! `bin` dirs is not the program its name says. The list errs on the side of asking.

use super::shell::basename;

/// Commands that only read, whatever their arguments.
const ALWAYS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "stat",
    "cd",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "nl",
    "cut",
    "tr",
    "column",
    "cmp",
    "diff",
    "du",
    "df",
    "which",
    "whoami",
    "id",
    "uname",
    "seq",
    "printenv",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "od",
    "hexdump",
    "rev",
    "tac",
    "paste",
    "comm",
    "fold",
    "expand",
    "unexpand",
    "nproc",
    "uptime",
    "type",
];

/// `find` predicates that write files, delete them or run commands.
const FIND_WRITES: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// `git` subcommands that only read (their writing options are checked separately).
const GIT_READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "rev-parse",
    "ls-files",
    "blame",
    "shortlog",
    "describe",
];

/// `git branch` options that only list.
const GIT_BRANCH_LISTS: &[&str] = &[
    "-a",
    "-r",
    "-l",
    "-v",
    "-vv",
    "--all",
    "--remotes",
    "--list",
    "--verbose",
    "--show-current",
    "--no-color",
    "--color",
    "--merged",
    "--no-merged",
    "--contains",
    "--no-contains",
    "--column",
    "--no-column",
];

/// Where a command given by path may live and still count as the known program of its name:
/// a path elsewhere (`./cat`, `/tmp/x/ls`) may be anything.
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

/// Whether one plain command (its words after parsing) is known to be read-only.
pub(crate) fn is_read_only_command(words: &[String]) -> bool {
    let Some((name, args)) = words.split_first() else {
        return false;
    };
    if name.contains('/')
        && !SYSTEM_DIRS.iter().any(|dir| {
            name.strip_prefix(dir)
                .is_some_and(|rest| !rest.contains('/'))
        })
    {
        return false;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match basename(name) {
        name if ALWAYS.contains(&name) => true,
        "find" => !args.iter().any(|a| FIND_WRITES.contains(a)),
        "rg" => !args
            .iter()
            .any(|a| has_option(a, "--pre") || has_option(a, "--hostname-bin")),
        "sort" => !args.iter().any(|a| {
            has_option(a, "--output")
                || has_option(a, "--compress-program")
                || short_flags(a).is_some_and(|f| f.contains('o'))
        }),
        "tree" => !args.contains(&"-o"),
        "file" => !args
            .iter()
            .any(|a| has_option(a, "--compile") || short_flags(a).is_some_and(|f| f.contains('C'))),
        "date" => !args
            .iter()
            .any(|a| has_option(a, "--set") || short_flags(a).is_some_and(|f| f.contains('s'))),
        "sed" => sed_prints_only(&args),
        "git" => git_reads_only(&args),
        _ => false,
    }
}

/// Whether `arg` is the long option `name` (`--output`), spelled out or abbreviated the way
/// GNU `getopt_long` and git accept (`--out`, `--outp=F`), with or without `=value`.
fn has_option(arg: &str, name: &str) -> bool {
    long_option(arg, name).is_some()
}

/// `arg` as the long option `name` (given with its `--`), spelled out or abbreviated to any
/// prefix: `None` when it is not that option, `Some(value)` when it is, with the text after
/// `=` when there is one. Any prefix counts, even one that would be ambiguous to the program
/// (which then refuses it): judging it as the dangerous option errs on the strict side.
pub(crate) fn long_option<'a>(arg: &'a str, name: &str) -> Option<Option<&'a str>> {
    let body = arg.strip_prefix("--")?;
    let wanted = name.strip_prefix("--")?;
    let (given, value) = match body.split_once('=') {
        Some((given, value)) => (given, Some(value)),
        None => (body, None),
    };
    (!given.is_empty() && wanted.starts_with(given)).then_some(value)
}

/// The letters of a short-option cluster (`-abc` → `abc`), or `None` for anything else.
fn short_flags(arg: &str) -> Option<&str> {
    arg.strip_prefix('-').filter(|f| !f.starts_with('-'))
}

/// `sed -n 'N,Mp' FILE…`: only print commands on line numbers, no `-i`, no `w` or `e`.
fn sed_prints_only(args: &[&str]) -> bool {
    let mut quiet = false;
    let mut script = None;
    for arg in args {
        match *arg {
            "-n" | "--quiet" | "--silent" => quiet = true,
            "-E" | "-r" | "-u" | "-z" | "--regexp-extended" => {}
            a if a.starts_with('-') => return false,
            a if script.is_none() => script = Some(a),
            _ => {}
        }
    }
    quiet && script.is_some_and(|s| s.split(';').all(is_line_print))
}

/// `10p`, `1,20p`, `$p`, `5,$p`.
fn is_line_print(command: &str) -> bool {
    let Some(range) = command.trim().strip_suffix('p') else {
        return false;
    };
    let line = |s: &str| s == "$" || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()));
    match range.split_once(',') {
        Some((from, to)) => line(from) && line(to),
        None => line(range),
    }
}

/// `git [-C DIR] [--no-pager] SUBCOMMAND …` with a read-only subcommand and no writing option.
fn git_reads_only(args: &[&str]) -> bool {
    let mut rest = args;
    let sub = loop {
        match rest {
            ["-C", _, tail @ ..] => rest = tail,
            ["--no-pager" | "-P", tail @ ..] => rest = tail,
            [sub, tail @ ..] => {
                rest = tail;
                break *sub;
            }
            [] => return false,
        }
    };
    if !GIT_READS.contains(&sub) {
        return false;
    }
    // Options that write a file or run a program, whatever the subcommand.
    if rest.iter().any(|a| {
        has_option(a, "--output") || has_option(a, "--ext-diff") || has_option(a, "--exec")
    }) {
        return false;
    }
    match sub {
        // `git branch NAME` creates a branch; only listing forms are read-only.
        "branch" => {
            let listing = rest
                .iter()
                .any(|a| matches!(*a, "-l" | "--list" | "-a" | "-r" | "--all" | "--remotes"));
            rest.iter().all(|a| {
                GIT_BRANCH_LISTS.contains(a)
                    || a.starts_with("--sort=")
                    || a.starts_with("--format=")
                    || a.starts_with("--color=")
                    || (listing && !a.starts_with('-'))
            })
        }
        _ => true,
    }
}
