//! Session handles: a short name a person can read and type, such as `amber-otter`, that a
//! session gets when it is made and keeps in its root's header. Every command that takes a
//! session accepts it beside the id. Uniqueness is the store's to check; this module draws
//! candidates and says what a handle looks like.

/// How many random word pairs [`pick_handle`] tries before it numbers one.
const PAIR_TRIES: usize = 32;

/// The first word of a handle.
const ADJECTIVES: [&str; 128] = [
    "agile", "amber", "azure", "bold", "brave", "breezy", "brisk", "calm", "cheery", "chilly",
    "clever", "coral", "cosmic", "crafty", "crisp", "curly", "dapper", "daring", "deft", "dreamy",
    "dusty", "eager", "early", "easy", "fair", "fancy", "fast", "fierce", "fluffy", "fond",
    "frank", "free", "fresh", "frosty", "fuzzy", "gentle", "giddy", "glad", "glossy", "golden",
    "grand", "green", "gusty", "happy", "hardy", "hazy", "hearty", "humble", "icy", "jaunty",
    "jolly", "keen", "kind", "lively", "lofty", "loyal", "lucky", "lunar", "mellow", "merry",
    "mighty", "misty", "modest", "neat", "nifty", "nimble", "noble", "odd", "olive", "peppy",
    "plain", "plucky", "polite", "proud", "quick", "quiet", "rapid", "rare", "ready", "regal",
    "rosy", "royal", "ruby", "rustic", "sandy", "shiny", "silent", "silver", "simple", "sleek",
    "slow", "smart", "snowy", "snug", "solar", "solid", "spry", "steady", "stellar", "stoic",
    "sturdy", "sunny", "super", "sweet", "swift", "tall", "tame", "tidy", "tiny", "tough",
    "tranquil", "true", "upbeat", "urban", "valiant", "vast", "velvet", "vivid", "warm", "wary",
    "wavy", "wild", "windy", "wise", "witty", "young", "zany", "zesty",
];

/// The second word of a handle.
const NOUNS: [&str; 128] = [
    "acorn", "aspen", "badger", "beaver", "bee", "birch", "bison", "bramble", "brook", "canyon",
    "cedar", "cliff", "clover", "cobra", "comet", "coyote", "crane", "cricket", "daisy", "delta",
    "dingo", "dolphin", "dune", "eagle", "elk", "ember", "falcon", "fern", "finch", "fjord", "fox",
    "gecko", "glacier", "grove", "gull", "harbor", "hare", "hawk", "heron", "hippo", "ibis",
    "iris", "island", "jaguar", "kestrel", "kiwi", "koala", "lagoon", "lark", "lemur", "lily",
    "lion", "llama", "lotus", "lynx", "magpie", "mango", "maple", "marlin", "marten", "meadow",
    "mesa", "mink", "mole", "moose", "moth", "nebula", "newt", "oak", "orca", "orchid", "oriole",
    "osprey", "otter", "owl", "panda", "parrot", "pebble", "pelican", "pine", "plover", "pond",
    "prairie", "puffin", "python", "quail", "quartz", "rabbit", "raven", "reef", "ridge", "river",
    "robin", "rook", "salmon", "seal", "sequoia", "shore", "shrew", "sloth", "sparrow", "spruce",
    "squid", "stork", "summit", "swan", "tapir", "tern", "thistle", "thrush", "tiger", "toad",
    "trout", "tulip", "tundra", "turtle", "valley", "viper", "vole", "walnut", "walrus", "wasp",
    "whale", "willow", "wolf", "wren", "yak", "zebra",
];

/// A handle that `taken` does not refuse: a random word pair, or when every pair tried is
/// taken, a pair with the first free number from 2 (`amber-otter-2`).
pub fn pick_handle(mut taken: impl FnMut(&str) -> bool) -> String {
    for _ in 0..PAIR_TRIES {
        let handle = draw_pair();
        if !taken(&handle) {
            return handle;
        }
    }
    let pair = draw_pair();
    (2u64..)
        .map(|n| format!("{pair}-{n}"))
        .find(|handle| !taken(handle))
        .unwrap_or(pair)
}

fn draw_pair() -> String {
    let bits = crate::ids::random_bits();
    let adjective = ADJECTIVES[(bits % 128) as usize];
    let noun = NOUNS[((bits >> 7) % 128) as usize];
    format!("{adjective}-{noun}")
}

/// Whether `text` has the shape of a handle: two or more words of lowercase letters joined by
/// `-`, the last of which may be a number (`amber-otter`, `amber-otter-2`).
pub fn is_handle(text: &str) -> bool {
    let words: Vec<&str> = text.split('-').collect();
    let Some((last, first)) = words.split_last() else {
        return false;
    };
    let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase());
    let number = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    let last_ok = word(last) || (number(last) && first.len() >= 2);
    !first.is_empty() && first.iter().all(|w| word(w)) && last_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_lists_are_distinct_lowercase_words() {
        for list in [&ADJECTIVES, &NOUNS] {
            let unique: std::collections::BTreeSet<_> = list.iter().collect();
            assert_eq!(unique.len(), list.len());
            assert!(list.iter().all(|w| is_handle(&format!("{w}-{w}"))));
        }
    }

    #[test]
    fn a_drawn_handle_has_the_shape_of_one() {
        for _ in 0..100 {
            let handle = pick_handle(|_| false);
            assert!(is_handle(&handle), "{handle}");
            assert_eq!(handle.split('-').count(), 2, "{handle}");
        }
    }

    #[test]
    fn drawn_handles_vary() {
        let drawn: std::collections::BTreeSet<String> =
            (0..64).map(|_| pick_handle(|_| false)).collect();
        // 64 draws from 16 384 pairs: all but a few differ.
        assert!(
            drawn.len() >= 48,
            "{} distinct of 64: {drawn:?}",
            drawn.len()
        );
    }

    #[test]
    fn taken_handles_are_passed_over_then_numbered() {
        let mut seen = Vec::new();
        let handle = pick_handle(|h| {
            seen.push(h.to_string());
            seen.len() <= 5
        });
        assert_eq!(seen.len(), 6);
        assert_eq!(seen.last(), Some(&handle));
        let numbered = pick_handle(|h| h.split('-').count() < 3 || h.ends_with("-2"));
        assert!(numbered.ends_with("-3"), "{numbered}");
        assert!(is_handle(&numbered));
    }

    #[test]
    fn shapes() {
        for good in ["amber-otter", "amber-otter-2", "a-b-c"] {
            assert!(is_handle(good), "{good}");
        }
        for bad in [
            "",
            "amber",
            "Amber-otter",
            "amber--otter",
            "-otter",
            "amber-",
            "2-otter",
            "0195f3a2-7c4e",
            "amber-2",
            "amber otter",
        ] {
            assert!(!is_handle(bad), "{bad}");
        }
    }
}
