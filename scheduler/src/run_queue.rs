//! The running cap: turns that count against `max_running` either hold a slot or wait in a
//! FIFO for one; a freed slot goes to the longest waiting turn.

use std::collections::VecDeque;

use arbor_protocol::ThreadId;

/// Slots under the cap and the turns waiting for one, in arrival order.
#[derive(Debug)]
pub struct RunQueue {
    cap: usize,
    running: usize,
    queue: VecDeque<ThreadId>,
}

impl RunQueue {
    /// A queue for at most `cap` running turns (at least one).
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            running: 0,
            queue: VecDeque::new(),
        }
    }

    /// Asks for a slot for `id`'s turn: true when it got one, false when it waits at the back.
    pub fn request(&mut self, id: ThreadId) -> bool {
        if self.running < self.cap {
            self.running += 1;
            true
        } else {
            self.queue.push_back(id);
            false
        }
    }

    /// A turn that held a slot ended: the slot goes to the waiting turns, oldest first.
    /// Returns the ids granted, in order.
    pub fn release(&mut self) -> Vec<ThreadId> {
        self.running = self.running.saturating_sub(1);
        let mut granted = Vec::new();
        while self.running < self.cap {
            let Some(next) = self.queue.pop_front() else {
                break;
            };
            self.running += 1;
            granted.push(next);
        }
        granted
    }

    /// Takes `id`'s waiting turn out of the queue; true when it was there (it held no slot).
    pub fn dequeue(&mut self, id: ThreadId) -> bool {
        let before = self.queue.len();
        self.queue.retain(|queued| *queued != id);
        before != self.queue.len()
    }

    /// Whether `id`'s turn waits for a slot.
    pub fn is_queued(&self, id: ThreadId) -> bool {
        self.queue.contains(&id)
    }

    /// Position (from 1) of `id`'s turn in the queue.
    pub fn position(&self, id: ThreadId) -> Option<usize> {
        self.queue
            .iter()
            .position(|queued| *queued == id)
            .map(|p| p + 1)
    }

    /// Turns holding a slot.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Turns waiting for a slot.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<ThreadId> {
        (0..n).map(|_| ThreadId::new()).collect()
    }

    #[test]
    fn turns_over_the_cap_wait_in_order_and_take_freed_slots_oldest_first() {
        let id = ids(4);
        let mut q = RunQueue::new(2);
        assert!(q.request(id[0]));
        assert!(q.request(id[1]));
        assert!(!q.request(id[2]));
        assert!(!q.request(id[3]));
        assert_eq!(q.position(id[3]), Some(2));
        assert_eq!(q.release(), [id[2]]);
        assert_eq!(q.position(id[3]), Some(1));
        assert_eq!(q.running(), 2);
        assert!(q.dequeue(id[3]));
        assert!(!q.dequeue(id[3]), "already out");
        assert_eq!(q.release(), Vec::<ThreadId>::new());
        assert_eq!(q.running(), 1);
    }

    #[test]
    fn a_cap_of_zero_still_runs_one_turn() {
        let id = ids(2);
        let mut q = RunQueue::new(0);
        assert!(q.request(id[0]));
        assert!(!q.request(id[1]));
        assert_eq!(q.release(), [id[1]]);
    }
}
