//! Rollout files: round trips, torn tails, bad lines.
