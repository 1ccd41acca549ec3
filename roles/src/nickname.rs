//! Nicknames: a built-in list of human names and a seeded pool that draws them without
//! replacement, restarting with ordinals (`Plato the 2nd`) when it runs dry (behaviour §1).

use std::collections::BTreeSet;

/// The built-in nickname list: philosophers, scientists and writers.
pub const NICKNAMES: &[&str] = &[
    "Plato",
    "Aristotle",
    "Socrates",
    "Heraclitus",
    "Pythagoras",
    "Epicurus",
    "Diogenes",
    "Thales",
    "Hypatia",
    "Euclid",
    "Archimedes",
    "Seneca",
    "Cicero",
    "Confucius",
    "Laozi",
    "Mencius",
    "Avicenna",
    "Averroes",
    "Maimonides",
    "Aquinas",
    "Montaigne",
    "Descartes",
    "Spinoza",
    "Leibniz",
    "Pascal",
    "Locke",
    "Hume",
    "Kant",
    "Hegel",
    "Kierkegaard",
    "Nietzsche",
    "Voltaire",
    "Rousseau",
    "Diderot",
    "Wollstonecraft",
    "Arendt",
    "Beauvoir",
    "Wittgenstein",
    "Frege",
    "Russell",
    "Copernicus",
    "Galileo",
    "Kepler",
    "Newton",
    "Huygens",
    "Euler",
    "Lagrange",
    "Laplace",
    "Fourier",
    "Gauss",
    "Galois",
    "Riemann",
    "Noether",
    "Cantor",
    "Boole",
    "Lovelace",
    "Babbage",
    "Turing",
    "Hopper",
    "Shannon",
    "Faraday",
    "Maxwell",
    "Darwin",
    "Mendel",
    "Pasteur",
    "Curie",
    "Meitner",
    "Einstein",
    "Bohr",
    "Planck",
    "Dirac",
    "Fermi",
    "Ramanujan",
    "Kovalevskaya",
    "Lavoisier",
    "Mendeleev",
    "Humboldt",
    "Linnaeus",
    "Herschel",
    "Leavitt",
    "Homer",
    "Sappho",
    "Virgil",
    "Ovid",
    "Dante",
    "Chaucer",
    "Cervantes",
    "Shakespeare",
    "Milton",
    "Goethe",
    "Austen",
    "Dickens",
    "Melville",
    "Tolstoy",
    "Chekhov",
    "Woolf",
    "Kafka",
    "Borges",
    "Tagore",
    "Basho",
];

/// The English ordinal suffix of `n`: `st`, `nd`, `rd` or `th` (11th, 12th, 13th, 21st, 111th).
pub fn ordinal_suffix(n: u64) -> &'static str {
    if (11..=13).contains(&(n % 100)) {
        return "th";
    }
    match n % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

/// `n` with its ordinal suffix: `2nd`, `11th`, `101st`.
pub fn ordinal(n: u64) -> String {
    format!("{n}{}", ordinal_suffix(n))
}

/// Draws nicknames at random without replacement. Round 1 hands out the plain names; once every
/// name is used the pool starts round 2 (`Plato the 2nd`), and so on.
///
/// Deterministic: the same candidates and seed give the same sequence.
#[derive(Debug, Clone)]
pub struct NicknamePool {
    candidates: Vec<String>,
    /// Candidates not yet used in the current round.
    unused: Vec<String>,
    /// Current round, from 1.
    round: u64,
    rng: SplitMix64,
}

impl NicknamePool {
    /// A pool over `candidates` (duplicates and blank names dropped; the built-in list when none
    /// is left), drawing with a PRNG seeded by `seed`.
    pub fn new<I, S>(candidates: I, seed: u64) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut seen = BTreeSet::new();
        let mut unique: Vec<String> = candidates
            .into_iter()
            .map(Into::into)
            .filter(|name| !name.trim().is_empty() && seen.insert(name.clone()))
            .collect();
        if unique.is_empty() {
            unique = NICKNAMES.iter().map(|n| (*n).to_owned()).collect();
        }
        Self {
            unused: unique.clone(),
            candidates: unique,
            round: 1,
            rng: SplitMix64(seed),
        }
    }

    /// A pool over the built-in [`NICKNAMES`].
    pub fn builtin(seed: u64) -> Self {
        Self::new(NICKNAMES.iter().copied(), seed)
    }

    /// The next nickname; starts the next round first when the current one is used up.
    pub fn draw(&mut self) -> String {
        if self.unused.is_empty() {
            self.start_round(self.round + 1);
        }
        let index = self.rng.below(self.unused.len());
        let name = self.unused.swap_remove(index);
        decorate(&name, self.round)
    }

    /// Marks a nickname handed out earlier (on resume) as used. `Plato the 3rd` moves the pool
    /// to round 3 if it is behind; names from an earlier round, or not from this pool, change
    /// nothing.
    pub fn mark_used(&mut self, nickname: &str) {
        let (name, round) = self.split(nickname);
        if round > self.round {
            self.start_round(round);
        }
        if round == self.round {
            self.unused.retain(|n| n != name);
        }
    }

    /// Whether `nickname` cannot be handed out again before the next reset.
    pub fn is_used(&self, nickname: &str) -> bool {
        let (name, round) = self.split(nickname);
        if !self.candidates.iter().any(|c| c == name) {
            return false;
        }
        round < self.round || (round == self.round && !self.unused.iter().any(|n| n == name))
    }

    /// Forgets every use: back to round 1 with all names free.
    pub fn reset(&mut self) {
        self.start_round(1);
    }

    /// The current round (1 = plain names).
    pub fn round(&self) -> u64 {
        self.round
    }

    /// The candidate names, deduplicated, in the order given.
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    fn start_round(&mut self, round: u64) {
        self.round = round;
        self.unused = self.candidates.clone();
    }

    /// Splits `Plato the 3rd` into (`Plato`, 3) when `Plato` is a candidate; anything else is a
    /// round-1 name.
    fn split<'a>(&self, nickname: &'a str) -> (&'a str, u64) {
        if let Some((name, ord)) = nickname.rsplit_once(" the ") {
            let digits = ord.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            if let Ok(n) = digits.parse::<u64>()
                && n >= 2
                && ord == ordinal(n)
                && self.candidates.iter().any(|c| c == name)
            {
                return (name, n);
            }
        }
        (nickname, 1)
    }
}

/// `name` in round `round`: plain in round 1, `name the Nth` after.
fn decorate(name: &str, round: u64) -> String {
    if round <= 1 {
        name.to_owned()
    } else {
        format!("{name} the {}", ordinal(round))
    }
}

/// splitmix64: a tiny, well-mixed, seedable PRNG (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`), by multiply-shift (Lemire).
    fn below(&mut self, bound: usize) -> usize {
        ((u128::from(self.next()) * bound as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn ordinals() {
        let table = [
            (1, "1st"),
            (2, "2nd"),
            (3, "3rd"),
            (4, "4th"),
            (10, "10th"),
            (11, "11th"),
            (12, "12th"),
            (13, "13th"),
            (21, "21st"),
            (22, "22nd"),
            (23, "23rd"),
            (101, "101st"),
            (111, "111th"),
            (112, "112th"),
            (113, "113th"),
            (1002, "1002nd"),
        ];
        for (n, expect) in table {
            assert_eq!(ordinal(n), expect);
        }
        assert_eq!(ordinal_suffix(22), "nd");
    }

    #[test]
    fn builtin_list_is_about_a_hundred_unique_names() {
        let unique: BTreeSet<_> = NICKNAMES.iter().collect();
        assert_eq!(unique.len(), NICKNAMES.len());
        assert!((90..=120).contains(&NICKNAMES.len()));
        assert!(NICKNAMES.iter().all(|n| !n.is_empty() && n.trim() == *n));
    }

    #[test]
    fn rounds_have_no_duplicates_then_ordinals() {
        let names = ["Plato", "Kant", "Hume"];
        let mut pool = NicknamePool::new(names, 7);
        for round in 1..=4u64 {
            let drawn: BTreeSet<String> = (0..names.len()).map(|_| pool.draw()).collect();
            let expect: BTreeSet<String> = names
                .iter()
                .map(|n| match round {
                    1 => (*n).to_owned(),
                    r => format!("{n} the {}", ordinal(r)),
                })
                .collect();
            assert_eq!(drawn, expect, "round {round}");
            assert_eq!(pool.round(), round);
        }
        assert!(pool.draw().ends_with(" the 5th"));
    }

    #[test]
    fn builtin_pool_exhausts_into_second_round() {
        let mut pool = NicknamePool::builtin(42);
        let first: BTreeSet<String> = (0..NICKNAMES.len()).map(|_| pool.draw()).collect();
        assert_eq!(first.len(), NICKNAMES.len());
        let next = pool.draw();
        let base = next.strip_suffix(" the 2nd").expect("second round");
        assert!(NICKNAMES.contains(&base), "{next}");
    }

    #[test]
    fn same_seed_same_sequence() {
        let draw = |seed| {
            let mut pool = NicknamePool::builtin(seed);
            (0..150).map(|_| pool.draw()).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
    }

    #[test]
    fn mark_used_on_resume() {
        let mut pool = NicknamePool::new(["Ada", "Alan", "Grace"], 3);
        pool.mark_used("Ada");
        pool.mark_used("Grace");
        assert!(pool.is_used("Ada"));
        assert!(!pool.is_used("Alan"));
        assert_eq!(pool.draw(), "Alan");
        assert_eq!(pool.round(), 1);

        // A stored second-round nickname moves the pool on and is itself used.
        let mut pool = NicknamePool::new(["Ada", "Alan", "Grace"], 3);
        pool.mark_used("Ada");
        pool.mark_used("Alan the 2nd");
        pool.mark_used("Grace"); // an earlier round: no effect
        assert_eq!(pool.round(), 2);
        assert!(pool.is_used("Alan the 2nd"));
        assert!(pool.is_used("Grace"));
        let drawn: BTreeSet<String> = (0..2).map(|_| pool.draw()).collect();
        assert_eq!(
            drawn,
            BTreeSet::from(["Ada the 2nd".to_owned(), "Grace the 2nd".to_owned()])
        );
        assert_eq!(pool.draw().split(" the ").nth(1), Some("3rd"));

        // Foreign names and malformed ordinals are plain names and change nothing.
        let mut pool = NicknamePool::new(["Ada"], 3);
        for name in [
            "Bob",
            "Bob the 2nd",
            "Ada the 2th",
            "Ada the 1st",
            "Ada the x",
        ] {
            pool.mark_used(name);
        }
        assert_eq!(pool.round(), 1);
        assert_eq!(pool.draw(), "Ada");
    }

    #[test]
    fn reset_frees_every_name() {
        let mut pool = NicknamePool::new(["Ada"], 9);
        assert_eq!(pool.draw(), "Ada");
        assert_eq!(pool.draw(), "Ada the 2nd");
        pool.reset();
        assert_eq!(pool.round(), 1);
        assert_eq!(pool.draw(), "Ada");
    }

    #[test]
    fn new_dedups_and_falls_back_to_builtin() {
        let pool = NicknamePool::new(["Ada", "Ada", " ", "Alan"], 0);
        assert_eq!(pool.candidates(), ["Ada", "Alan"]);
        let pool = NicknamePool::new(Vec::<String>::new(), 0);
        assert_eq!(pool.candidates().len(), NICKNAMES.len());
    }
}
