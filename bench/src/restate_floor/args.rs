//! The flags of `arbor-bench restate-floor`.

/// How many calls each measure makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Sequential calls of the one-key, step and send/call measures (`--calls`).
    pub calls: usize,
    /// Calls of one round of the many-keys measure, spread over the keys (`--spread`).
    pub spread: usize,
    /// The numbers of keys in flight at once (`--keys`, comma-separated).
    pub keys: Vec<usize>,
    /// Rounds of the many-keys measure; its throughput is their median (`--rounds`).
    pub rounds: usize,
    /// The state value sizes in bytes (`--sizes`, comma-separated).
    pub sizes: Vec<usize>,
    /// Sequential calls per state size (`--state-calls`).
    pub state_calls: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            calls: 1000,
            spread: 1024,
            keys: vec![1, 64, 512],
            rounds: 5,
            sizes: vec![0, 4 << 10, 64 << 10, 1 << 20],
            state_calls: 200,
        }
    }
}

pub const USAGE: &str = "arbor-bench restate-floor [--calls N] [--spread N] [--keys K,K,...] \
                         [--rounds N] [--sizes BYTES,...] [--state-calls N]";

impl Options {
    /// The options of `args` (the words after `restate-floor`); the defaults for the flags
    /// not given.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Self::default();
        let mut words = args.iter();
        while let Some(flag) = words.next() {
            let mut value = || {
                words
                    .next()
                    .ok_or_else(|| format!("{flag} needs a value; usage: {USAGE}"))
            };
            match flag.as_str() {
                "--calls" => options.calls = count(flag, value()?)?,
                "--spread" => options.spread = count(flag, value()?)?,
                "--keys" => options.keys = list(flag, value()?, count)?,
                "--rounds" => options.rounds = count(flag, value()?)?,
                "--sizes" => options.sizes = list(flag, value()?, bytes)?,
                "--state-calls" => options.state_calls = count(flag, value()?)?,
                other => return Err(format!("unknown flag `{other}`; usage: {USAGE}")),
            }
        }
        if let Some(keys) = options.keys.iter().find(|&&keys| keys > options.spread) {
            return Err(format!(
                "--keys {keys} is more than the {} calls of --spread: every key needs a call",
                options.spread
            ));
        }
        Ok(options)
    }
}

/// A whole number above zero.
fn count(flag: &str, text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err(format!("{flag} must be at least 1, not 0")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{flag} wants a whole number, not `{text}`")),
    }
}

/// A size in bytes (zero allowed), at most 16 MiB (Restate refuses larger messages soon after).
fn bytes(flag: &str, text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 16 << 20 => Err(format!(
            "{flag}: {n} bytes is over the 16 MiB this benchmark allows a state value"
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{flag} wants sizes in bytes, not `{text}`")),
    }
}

/// A comma-separated list of what `item` parses.
fn list(
    flag: &str,
    text: &str,
    item: fn(&str, &str) -> Result<usize, String>,
) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|part| item(flag, part.trim()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Options, String> {
        let args: Vec<String> = words.iter().map(ToString::to_string).collect();
        Options::parse(&args)
    }

    #[test]
    fn no_flags_are_the_defaults() {
        assert_eq!(parse(&[]), Ok(Options::default()));
    }

    #[test]
    fn flags_set_their_counts() {
        let options = parse(&[
            "--calls", "10", "--keys", "1, 8", "--spread", "16", "--sizes", "0,1024",
        ])
        .expect("valid flags");
        assert_eq!(options.calls, 10);
        assert_eq!(options.keys, vec![1, 8]);
        assert_eq!(options.spread, 16);
        assert_eq!(options.sizes, vec![0, 1024]);
        assert_eq!(options.rounds, Options::default().rounds);
    }

    #[test]
    fn bad_flags_are_named() {
        let error = |words: &[&str]| parse(words).expect_err("an error");
        assert!(error(&["--cals", "3"]).starts_with("unknown flag `--cals`"));
        assert!(error(&["--calls"]).starts_with("--calls needs a value"));
        assert_eq!(
            error(&["--calls", "many"]),
            "--calls wants a whole number, not `many`"
        );
        assert_eq!(
            error(&["--rounds", "0"]),
            "--rounds must be at least 1, not 0"
        );
        assert_eq!(
            error(&["--keys", "1,x"]),
            "--keys wants a whole number, not `x`"
        );
        assert!(error(&["--sizes", "99999999"]).contains("over the 16 MiB"));
        assert_eq!(
            error(&["--keys", "64", "--spread", "10"]),
            "--keys 64 is more than the 10 calls of --spread: every key needs a call"
        );
    }
}
