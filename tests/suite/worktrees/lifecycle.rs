//! Worktrees across eviction, resume and close.
