//! Durability through the real binary: SIGKILL at random points, a full disk, other processes
//! and the store's lock, moved homes, interrupted rebuilds, closed pipes.

mod disk_full;
mod kills;
mod legacy;
mod outside;
mod torn_spawn;
