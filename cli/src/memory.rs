//! How the process pools its heap: one glibc arena, unless the user chose a number.
//!
//! glibc gives a thread that finds the arenas busy an arena of its own, up to eight per core,
//! and each arena keeps the high-water mark of its own free memory. arbor's threads hand memory
//! to one another (a turn's lines go to the log writer, then to the projector; rows go to the
//! store's writer), so with an arena per thread the process holds the sum of their peaks; one
//! arena holds one. The price is the arena's lock, which threads now sometimes wait for (small
//! allocations still come from each thread's own cache without it). The figures on both sides
//! are in docs/decisions.md, "One heap arena". Only the `arbor` binary sets this: a library
//! leaves its embedder's allocator alone.

/// Limits glibc to one arena. Runs first in `main`, before any thread exists; the arena limit is
/// read when a second thread first needs an arena. `MALLOC_ARENA_MAX` or an `arena_max` in
/// `GLIBC_TUNABLES` set by the user wins.
pub fn one_arena() {
    let set_by_user = user_sets_arenas(
        std::env::var_os("MALLOC_ARENA_MAX").is_some_and(|v| !v.is_empty()),
        std::env::var("GLIBC_TUNABLES").ok().as_deref(),
    );
    if !set_by_user {
        limit_arenas();
    }
}

/// Whether the environment already says how many arenas glibc makes (`malloc_arena_max`:
/// `MALLOC_ARENA_MAX` is set and not empty).
fn user_sets_arenas(malloc_arena_max: bool, tunables: Option<&str>) -> bool {
    malloc_arena_max
        || tunables.is_some_and(|t| {
            t.split(':')
                .any(|setting| setting.trim_start().starts_with("glibc.malloc.arena_max="))
        })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_arenas() {
    // SAFETY: mallopt only sets a parameter of the allocator; no memory is touched. It runs
    // before the process starts a thread, so no allocation races with it.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_arenas() {}

#[cfg(test)]
mod tests {
    use super::user_sets_arenas;

    #[test]
    fn the_users_own_arena_setting_wins() {
        assert!(!user_sets_arenas(false, None));
        assert!(user_sets_arenas(true, None));
        assert!(user_sets_arenas(false, Some("glibc.malloc.arena_max=4")));
        assert!(user_sets_arenas(
            false,
            Some("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=2")
        ));
        assert!(!user_sets_arenas(
            false,
            Some("glibc.malloc.tcache_count=0:glibc.malloc.arena_test=2")
        ));
    }
}
