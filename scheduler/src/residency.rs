//! Residency: at most `cap` agents hold a loaded runtime. A claim for a slot is granted while
//! there is room; at the cap, the least recently used agent the caller says may go is named
//! as the victim; when none may go, the claim waits.

use arbor_protocol::ThreadId;
use lru::LruCache;

/// The answer to a claim for a residency slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The agent holds a slot (it may already have had one).
    Granted,
    /// Evict this agent first, then claim again.
    Evict(ThreadId),
    /// Every resident agent is busy: claim again when one is not.
    Wait,
}

/// The agents holding a slot, most recently used first.
#[derive(Debug)]
pub struct Residency {
    cap: usize,
    order: LruCache<ThreadId, ()>,
}

impl Residency {
    /// Room for `cap` resident agents (at least one).
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            order: LruCache::unbounded(),
        }
    }

    /// Claims a slot for `id`. `evictable` says whether a resident agent may be evicted now;
    /// the least recently used one that may is the victim.
    pub fn claim(&mut self, id: ThreadId, evictable: impl Fn(ThreadId) -> bool) -> Claim {
        if self.order.contains(&id) || self.order.len() < self.cap {
            self.order.put(id, ());
            return Claim::Granted;
        }
        match self
            .order
            .iter()
            .rev()
            .map(|(candidate, ())| *candidate)
            .find(|candidate| evictable(*candidate))
        {
            Some(victim) => Claim::Evict(victim),
            None => Claim::Wait,
        }
    }

    /// `id` was just used: it is evicted last.
    pub fn touch(&mut self, id: ThreadId) {
        if self.order.contains(&id) {
            self.order.promote(&id);
        }
    }

    /// `id` gave its slot up (evicted, closed, or its load failed).
    pub fn release(&mut self, id: ThreadId) {
        self.order.pop(&id);
    }

    /// Whether `id` holds a slot.
    pub fn holds(&self, id: ThreadId) -> bool {
        self.order.contains(&id)
    }

    /// Agents holding a slot.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no agent holds a slot.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_evictable_agent_is_the_victim() {
        let [a, b, c, d] = [(); 4].map(|()| ThreadId::new());
        let mut r = Residency::new(3);
        for id in [a, b, c] {
            assert_eq!(r.claim(id, |_| true), Claim::Granted);
        }
        r.touch(a);
        // b is the least recently used now, but it is busy: c goes.
        assert_eq!(r.claim(d, |id| id != b), Claim::Evict(c));
        assert_eq!(r.claim(d, |_| false), Claim::Wait);
        r.release(c);
        assert_eq!(r.claim(d, |_| false), Claim::Granted);
        assert_eq!(
            r.claim(d, |_| false),
            Claim::Granted,
            "a holder claims again freely"
        );
        assert_eq!(r.len(), 3);
        assert!(!r.holds(c));
    }
}
