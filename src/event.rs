//! What the main thread waits for before the app starts: the relay thread
//! (`signals`) and the readiness poller (`ready`) both send on one channel.

use std::sync::mpsc;

/// Something the main thread waits for before the app starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// tandem received this signal.
    Signal(i32),
    /// Every readiness check passed.
    Ready,
}

/// The receiving end, read by the main thread.
pub type Events = mpsc::Receiver<Event>;

/// The sending end, cloned into the relay and the poller.
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
