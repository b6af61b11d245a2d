//! At most a fixed number of lookups at once (SPEC §10 "Where lookups may
//! go"): a flood of distinct images cannot hold every thread on the network;
//! the others wait for a slot, each until its own deadline.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// A counting semaphore with a deadline.
pub struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
    max: usize,
}

/// A slot held; given back when dropped.
pub struct Slot<'a> {
    slots: &'a Slots,
}

impl Slots {
    /// `max` slots (at least one).
    pub fn new(max: usize) -> Slots {
        Slots {
            busy: Mutex::new(0),
            freed: Condvar::new(),
            max: max.max(1),
        }
    }

    /// A slot, waiting for one until `deadline`; `None` when none came.
    pub fn take(&self, deadline: Instant) -> Option<Slot<'_>> {
        let mut busy = self.lock();
        while *busy >= self.max {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *busy += 1;
        Some(Slot { slots: self })
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.slots.lock() -= 1;
        self.slots.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_full_set_makes_the_next_wait_until_a_slot_is_freed_or_its_deadline() {
        let slots = Slots::new(2);
        let soon = || Instant::now() + Duration::from_millis(100);
        let a = slots.take(soon()).unwrap();
        let _b = slots.take(soon()).unwrap();
        let start = Instant::now();
        assert!(slots.take(soon()).is_none());
        assert!(start.elapsed() >= Duration::from_millis(90));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                drop(a);
            });
            let start = Instant::now();
            assert!(
                slots
                    .take(Instant::now() + Duration::from_secs(10))
                    .is_some()
            );
            assert!(start.elapsed() < Duration::from_secs(5));
        });
    }
}
