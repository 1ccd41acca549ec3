//! Rollouts: one append-only JSONL file per thread, and a reader that tolerates a torn tail.
