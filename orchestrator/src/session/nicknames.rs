//! The session's nickname pools: the built-in one, and one per role with its own candidates.
//! A resumed session marks the nicknames its agents hold, so none is handed out twice.

use std::collections::HashMap;

use arbor_protocol::ThreadId;
use arbor_roles::{NicknamePool, Role};

/// Nickname pools by role ("" for the built-in pool).
#[derive(Debug)]
pub struct Nicknames {
    seed: u64,
    pools: HashMap<String, NicknamePool>,
}

impl Nicknames {
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            pools: HashMap::new(),
        }
    }

    /// A seed that is the same for every process driving the session.
    pub fn seed_of(session: ThreadId) -> u64 {
        session
            .to_string()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            })
    }

    fn pool(&mut self, role: &Role) -> &mut NicknamePool {
        let key = if role.nickname_candidates.is_some() {
            role.name.as_str()
        } else {
            ""
        };
        let seed = self.seed;
        self.pools
            .entry(key.to_string())
            .or_insert_with(|| NicknamePool::new(role.nicknames(), seed))
    }

    /// Draws a nickname for a new agent of `role`.
    pub fn draw(&mut self, role: &Role) -> String {
        self.pool(role).draw()
    }

    /// Marks a stored agent's nickname as used in its role's pool.
    pub fn mark_used(&mut self, role: &Role, nickname: &str) {
        self.pool(role).mark_used(nickname);
    }
}
