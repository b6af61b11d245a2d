//! Lookups remembered: at most [`Cache::capacity`] entries, each for its time to
//! live (a digest's answer for good, a failure briefly), the least recently
//! used evicted first; reviews that want the same image at once share one
//! lookup (the others wait for it, each until its own deadline).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How an answer was come by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Remembered.
    Hit,
    /// Looked up by this review.
    Miss,
    /// Looked up by another review at the same time, and shared.
    Shared,
}

enum Slot<V> {
    /// Someone is looking it up.
    Pending,
    Ready {
        value: V,
        expires: Option<Instant>,
        used: u64,
    },
}

struct State<V> {
    slots: HashMap<String, Slot<V>>,
    clock: u64,
}

/// A bounded cache of lookups by key.
pub struct Cache<V> {
    state: Mutex<State<V>>,
    done: Condvar,
    capacity: usize,
}

impl<V: Clone> Cache<V> {
    /// A cache of at most `capacity` answers (at least one).
    pub fn new(capacity: usize) -> Cache<V> {
        Cache {
            state: Mutex::new(State {
                slots: HashMap::new(),
                clock: 0,
            }),
            done: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// At most this many answers are kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Answers kept now.
    pub fn len(&self) -> usize {
        self.lock()
            .slots
            .values()
            .filter(|s| matches!(s, Slot::Ready { .. }))
            .count()
    }

    /// Whether it keeps no answer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The answer for `key`: remembered, shared with a lookup in flight, or
    /// looked up by `look`, which says how long its answer lives (`None`: for
    /// good). `None` when a lookup in flight has not ended by `deadline`.
    pub fn get(
        &self,
        key: &str,
        deadline: Instant,
        look: impl FnOnce() -> (V, Option<Duration>),
    ) -> Option<(V, Source)> {
        let mut state = self.lock();
        let mut waited = false;
        loop {
            let now = Instant::now();
            state.clock += 1;
            let clock = state.clock;
            match state.slots.get_mut(key) {
                Some(Slot::Ready {
                    value,
                    expires,
                    used,
                }) if expires.is_none_or(|e| e > now) => {
                    *used = clock;
                    let source = if waited { Source::Shared } else { Source::Hit };
                    return Some((value.clone(), source));
                }
                Some(Slot::Pending) => {
                    let left = deadline.saturating_duration_since(now);
                    if left.is_zero() {
                        return None;
                    }
                    waited = true;
                    state = self
                        .done
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                _ => break,
            }
        }
        state.slots.insert(key.to_string(), Slot::Pending);
        drop(state);
        // Should `look` unwind, the guard clears the pending slot and wakes the waiters.
        let mut guard = Pending {
            cache: self,
            key,
            armed: true,
        };
        let (value, ttl) = look();
        guard.armed = false;
        self.store(key, value.clone(), ttl);
        Some((value, Source::Miss))
    }

    /// Keeps `value` for `key` for `ttl` (`None`: for good) and wakes the waiters.
    fn store(&self, key: &str, value: V, ttl: Option<Duration>) {
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        let expires = ttl.map(|ttl| Instant::now() + ttl);
        state.slots.insert(
            key.to_string(),
            Slot::Ready {
                value,
                expires,
                used,
            },
        );
        self.evict(&mut state);
        drop(state);
        self.done.notify_all();
    }

    /// Drops the expired answers, then the least recently used, down to capacity.
    fn evict(&self, state: &mut State<V>) {
        let now = Instant::now();
        let ready = |s: &Slot<V>| matches!(s, Slot::Ready { .. });
        if state.slots.values().filter(|s| ready(s)).count() <= self.capacity {
            return;
        }
        state
            .slots
            .retain(|_, s| !matches!(s, Slot::Ready { expires: Some(e), .. } if *e <= now));
        while state.slots.values().filter(|s| ready(s)).count() > self.capacity {
            let oldest = state
                .slots
                .iter()
                .filter_map(|(k, s)| match s {
                    Slot::Ready { used, .. } => Some((*used, k.clone())),
                    Slot::Pending => None,
                })
                .min();
            match oldest {
                Some((_, key)) => state.slots.remove(&key),
                None => break,
            };
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<V>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Pending<'a, V: Clone> {
    cache: &'a Cache<V>,
    key: &'a str,
    armed: bool,
}

impl<V: Clone> Drop for Pending<'_, V> {
    fn drop(&mut self) {
        if self.armed {
            self.cache.lock().slots.remove(self.key);
            self.cache.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::thread;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[test]
    fn answers_are_remembered_for_their_time_to_live_or_for_good() {
        let cache = Cache::new(10);
        assert_eq!(
            cache.get("a", soon(), || (1, None)),
            Some((1, Source::Miss))
        );
        assert_eq!(cache.get("a", soon(), || (2, None)), Some((1, Source::Hit)));
        let brief = Some(Duration::from_millis(20));
        assert_eq!(
            cache.get("b", soon(), || (3, brief)),
            Some((3, Source::Miss))
        );
        thread::sleep(Duration::from_millis(40));
        assert_eq!(
            cache.get("b", soon(), || (4, brief)),
            Some((4, Source::Miss))
        );
        assert_eq!(cache.get("a", soon(), || (5, None)), Some((1, Source::Hit)));
    }

    #[test]
    fn the_least_recently_used_goes_first_past_capacity() {
        let cache = Cache::new(2);
        cache.get("a", soon(), || (1, None));
        cache.get("b", soon(), || (2, None));
        cache.get("a", soon(), || (0, None));
        cache.get("c", soon(), || (3, None));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get("a", soon(), || (9, None)), Some((1, Source::Hit)));
        assert_eq!(
            cache.get("b", soon(), || (9, None)),
            Some((9, Source::Miss))
        );
    }

    #[test]
    fn concurrent_reviews_of_one_image_share_one_lookup() {
        let cache = Arc::new(Cache::new(10));
        let looks = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, looks) = (cache.clone(), looks.clone());
                thread::spawn(move || {
                    cache.get("img", soon(), || {
                        looks.fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(200));
                        (7, None)
                    })
                })
            })
            .collect();
        let sources: Vec<Source> = threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap().1)
            .collect();
        assert_eq!(looks.load(Ordering::SeqCst), 1);
        assert_eq!(sources.iter().filter(|s| **s == Source::Miss).count(), 1);
    }

    #[test]
    fn a_waiter_gives_up_at_its_deadline_and_a_failed_lookup_frees_the_key() {
        // The lookup in flight is held until the test releases it (10 s at
        // most, a hang guard), so the waiter's answer can only be its own
        // deadline's: order, not a window of time.
        let cache = Arc::new(Cache::new(10));
        let (entered, in_flight) = mpsc::channel();
        let (release, held) = mpsc::channel::<()>();
        let slow = {
            let cache = cache.clone();
            thread::spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    cache.get("img", soon(), || {
                        entered.send(()).unwrap();
                        let _ = held.recv_timeout(Duration::from_secs(10));
                        panic!("lookup died")
                    })
                }));
            })
        };
        in_flight.recv().unwrap();
        let start = Instant::now();
        assert_eq!(
            cache.get("img", start + Duration::from_millis(50), || (1, None)),
            None
        );
        // Back before the lookup was released: had it waited for the lookup,
        // it would have come back after the hang guard's 10 s.
        assert!(start.elapsed() < Duration::from_secs(5));
        release.send(()).unwrap();
        slow.join().unwrap();
        assert_eq!(
            cache.get("img", soon(), || (2, None)),
            Some((2, Source::Miss))
        );
    }
}
