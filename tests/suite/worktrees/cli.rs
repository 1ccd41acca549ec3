//! `arbor diff`, `arbor merge`, `arbor tree` and `arbor doctor` on worktree agents.
