//! Splitting a `bash -c` string into plain commands, or saying that it is not plain.
//!
//! A string is *plain* when it is nothing but words (unquoted, `'single'`, `"double"` without
//! `$` or backticks, backslash escapes) joined by `&&`, `||`, `;`, `|` and newlines, with
//! `#` comments. Anything the shell would expand or redirect makes it not plain: `$`, backticks,
//! `<`, `>`, `(`, `)`, `{`, `}`, `&` alone, `!`, globs (`*`, `?`, `[`), a leading `~`, an
//! assignment in command position (`A=b cmd`) and reserved words (`if`, `for`, `while`, `time`,
//! …). A plain command that runs a shell script (`bash -lc "…"`, `sh -c '…'`) is replaced by the
//! plain commands of that script, which must be plain too.

/// How nested `sh -c` scripts may go before the string is judged not plain.
pub(crate) const MAX_NESTING: usize = 3;

/// Words that start a compound command or change how the next one runs.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "time", "coproc", "in", "[[", "]]",
];

/// Shells whose `-c` script is split too.
const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "ksh"];

/// An operator between two plain commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    And,
    Or,
    Seq,
    Pipe,
}

impl Op {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Op::And => "&&",
            Op::Or => "||",
            Op::Seq => ";",
            Op::Pipe => "|",
        }
    }
}

/// A plain command; `script` is set when it runs a shell on a script that was split too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    pub(crate) words: Vec<String>,
    pub(crate) script: Option<Script>,
}

/// Plain commands and the operators between them (`ops.len() + 1 == commands.len()`, or both
/// empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Script {
    pub(crate) commands: Vec<Command>,
    pub(crate) ops: Vec<Op>,
}

impl Script {
    /// Every plain command, nested scripts replaced by their own commands.
    pub(crate) fn flatten(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for command in &self.commands {
            match &command.script {
                Some(script) => out.extend(script.flatten()),
                None => out.push(command.words.clone()),
            }
        }
        out
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Op(Op),
}

/// Parses `src` as a plain script; `None` when it is not plain.
pub(crate) fn parse(src: &str) -> Option<Script> {
    parse_nested(src, 0)
}

/// Parses `src` as a plain script found `depth` shells deep; `None` when it is not plain or
/// nests past [`MAX_NESTING`].
pub(crate) fn parse_nested(src: &str, depth: usize) -> Option<Script> {
    let tokens = lex(src)?;
    let mut script = Script::default();
    let mut words: Vec<String> = Vec::new();
    for token in tokens {
        match token {
            Token::Word(word) => words.push(word),
            Token::Op(op) => {
                if words.is_empty() {
                    return None;
                }
                script
                    .commands
                    .push(command(std::mem::take(&mut words), depth)?);
                script.ops.push(op);
            }
        }
    }
    if words.is_empty() {
        // Only `;` and newlines may end a script; they end the last command, nothing follows.
        match script.ops.pop() {
            None | Some(Op::Seq) => {}
            Some(Op::And | Op::Or | Op::Pipe) => return None,
        }
    } else {
        script.commands.push(command(words, depth)?);
    }
    Some(script)
}

fn command(words: Vec<String>, depth: usize) -> Option<Command> {
    let first = words.first()?;
    if RESERVED.contains(&first.as_str()) || is_assignment(first) {
        return None;
    }
    let script = match shell_script(&words) {
        ShellScript::None => None,
        ShellScript::Script(text) if depth < MAX_NESTING => Some(parse_nested(text, depth + 1)?),
        ShellScript::Script(_) | ShellScript::Unrecognised => return None,
    };
    Some(Command { words, script })
}

pub(crate) enum ShellScript<'a> {
    /// Not a shell running a `-c` script.
    None,
    Script(&'a str),
    /// A shell with `-c` in a form not followed here (no script, an unknown long option).
    Unrecognised,
}

/// Long options of `bash` that take no argument.
const SHELL_LONG_FLAGS: &[&str] = &[
    "--login",
    "--noprofile",
    "--norc",
    "--posix",
    "--restricted",
    "--verbose",
    "--noediting",
    "--debugger",
    "--dump-strings",
    "--dump-po-strings",
    "--pretty-print",
];

/// Recognises `bash [OPTIONS] -c SCRIPT [NAME [ARGS…]]` in its usual spellings: option
/// clusters (`-lc`, `-ec`), options with an argument (`-o pipefail`, `+O extglob`,
/// `--rcfile F`), long flags (`--login`) and `--`. The words after the script are its `$0`
/// and arguments.
pub(crate) fn shell_script(words: &[String]) -> ShellScript<'_> {
    let Some(first) = words.first() else {
        return ShellScript::None;
    };
    if !SHELLS.contains(&basename(first)) {
        return ShellScript::None;
    }
    let mut has_c = false;
    let mut rest = &words[1..];
    while let Some((word, tail)) = rest.split_first() {
        let word = word.as_str();
        let mut needs = 0;
        if word == "--" || word == "-" {
            rest = tail;
            break;
        } else if matches!(word, "--rcfile" | "--init-file") {
            needs = 1;
        } else if word.starts_with("--") {
            if !SHELL_LONG_FLAGS.contains(&word) {
                return if has_c || words.iter().any(|w| is_c_flag(w)) {
                    ShellScript::Unrecognised
                } else {
                    ShellScript::None
                };
            }
        } else if let Some(flags) = word.strip_prefix('-').or_else(|| word.strip_prefix('+')) {
            if flags.is_empty() || !flags.chars().all(|c| c.is_ascii_alphabetic()) {
                break;
            }
            has_c |= word.starts_with('-') && flags.contains('c');
            needs = flags.chars().filter(|c| matches!(c, 'o' | 'O')).count();
        } else {
            break;
        }
        if tail.len() < needs {
            return ShellScript::Unrecognised;
        }
        rest = &tail[needs..];
    }
    match (has_c, rest.first()) {
        (false, _) => ShellScript::None,
        (true, Some(script)) => ShellScript::Script(script),
        (true, None) => ShellScript::Unrecognised,
    }
}

fn is_c_flag(word: &str) -> bool {
    word.strip_prefix('-')
        .is_some_and(|f| !f.starts_with('-') && f.contains('c'))
}

/// The last path component of a command name (`/usr/bin/git` → `git`).
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Characters that make an unquoted word not plain.
fn is_special(c: char) -> bool {
    matches!(
        c,
        '$' | '`' | '<' | '>' | '(' | ')' | '{' | '}' | '*' | '?' | '[' | '!'
    )
}

/// Splits `src` into words and operators; `None` at the first thing that is not plain.
fn lex(src: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = src.chars().peekable();
    // The word being read; `Some` once it has started, even if empty (`''`).
    let mut word: Option<String> = None;
    let end_word = |word: &mut Option<String>, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut word, &mut tokens),
            '\n' => {
                end_word(&mut word, &mut tokens);
                // A newline ends a command, unless it follows an operator or nothing.
                if matches!(tokens.last(), Some(Token::Word(_))) {
                    tokens.push(Token::Op(Op::Seq));
                }
            }
            '#' if word.is_none() => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '~' if word.is_none() => return None,
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(escaped) => word.get_or_insert_with(String::new).push(escaped),
                None => return None,
            },
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => w.push(other),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            '\n' => {}
                            e @ ('$' | '`' | '"' | '\\') => w.push(e),
                            other => {
                                w.push('\\');
                                w.push(other);
                            }
                        },
                        other => w.push(other),
                    }
                }
            }
            '&' | '|' | ';' => {
                end_word(&mut word, &mut tokens);
                let op = match (c, chars.peek()) {
                    ('&', Some('&')) => Op::And,
                    ('|', Some('|')) => Op::Or,
                    ('&', _) | ('|', Some('&')) | (';', Some(';' | '&')) => return None,
                    ('|', _) => Op::Pipe,
                    _ => Op::Seq,
                };
                if matches!(op, Op::And | Op::Or) {
                    chars.next();
                }
                // `a && ; b`, `; a`: an operator needs a command before it.
                if !matches!(tokens.last(), Some(Token::Word(_))) {
                    return None;
                }
                tokens.push(Token::Op(op));
            }
            c if is_special(c) => return None,
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    end_word(&mut word, &mut tokens);
    Some(tokens)
}

/// The words of a string that is not plain, for judging it whole: every run of characters that
/// are neither blank, quotes nor shell punctuation, so that `echo $(rm -rf x)` gives
/// `echo rm -rf x` and the words inside quotes and substitutions are seen too.
pub(crate) fn rough_words(src: &str) -> Vec<String> {
    src.split(|c: char| c.is_whitespace() || "'\"`$()<>|&;{}\\".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Quotes `word` for a shell only when it needs it.
pub(crate) fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The canonical text of a plain script: words quoted only where needed, single spaces,
/// nested scripts canonical too.
pub(crate) fn render(script: &Script) -> String {
    let mut out = String::new();
    for (i, command) in script.commands.iter().enumerate() {
        if i > 0 {
            let op = script.ops.get(i - 1).copied().unwrap_or(Op::Seq);
            if op != Op::Seq {
                out.push(' ');
            }
            out.push_str(op.as_str());
            out.push(' ');
        }
        let words: Vec<String> = match &command.script {
            Some(inner) => {
                let mut words = command.words.clone();
                if let Some(last) = words.last_mut() {
                    *last = render(inner);
                }
                words
            }
            None => command.words.clone(),
        };
        let quoted: Vec<String> = words.iter().map(|w| quote(w)).collect();
        out.push_str(&quoted.join(" "));
    }
    out
}
