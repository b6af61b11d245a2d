//! What the main thread waits for while no app runs: the relay thread
//! (`signals`), the readiness poller (`ready`) before the app, and after it the
//! `--on-exit` program's waiting thread (`on_exit`) and the watch on the other
//! job containers (`siblings`) all send on one channel.

use std::sync::mpsc;

/// Something the main thread waits for while no app runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// tandem received this signal.
    Signal(i32),
    /// Every readiness check passed.
    Ready,
    /// The wait on the other job containers ended (SPEC §9): `true` when what it
    /// waited for happened (one ended, or one started), `false` when the wait
    /// failed (the waiting thread logged why).
    Sibling(bool),
    /// The `--on-exit` program has been reaped (SPEC §11).
    OnExitEnded,
}

/// The receiving end, read by the main thread.
pub type Events = mpsc::Receiver<Event>;

/// The sending end, cloned into the relay, the poller and the siblings' watch.
pub type Sender = mpsc::Sender<Event>;

/// Both ends, kept together by the main thread: it reads `events` and lends
/// clones of `sender` to the relay and the poller.
pub struct Channel {
    /// What the main thread reads.
    pub events: Events,
    /// What the relay and the poller send on.
    pub sender: Sender,
}

/// A new, empty channel.
pub fn channel() -> Channel {
    let (sender, events) = mpsc::channel();
    Channel { events, sender }
}
