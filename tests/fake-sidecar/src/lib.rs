//! A scriptable fake sidecar admin server (Envoy, old Envoy, pilot-agent, Linkerd or
//! a generic helper), std and libc only, listening on loopback: the one fake that
//! tandem's integration tests, `make demo` (this crate's program, `src/main.rs`) and
//! `make bench` (`benches/costs/`) share; `listeners` has the sidecars that are
//! only a TCP port or a unix socket.
//!
//! Each parsed request is logged (method, target, header fields, body, `Instant`
//! and `CLOCK_MONOTONIC` nanoseconds) before its answer is delayed or sent, so
//! tests can assert on what tandem asked and when. Answers follow a [`Script`]: the
//! flavor's routes (one table, `routes.rs`), the script's own [`Response`]s (any
//! status, header fields and body), readiness timing, a delay, and faults (hang,
//! reset, garbage, endless body, trickle) that a robust client must survive
//! (SPEC §3: "never hangs tandem and never makes it use unbounded memory").
//!
//! Nothing spins: the accept thread blocks in `accept`, connection threads block in
//! `read`/`write` or on a condition variable. `Drop` sets the stop flag, shuts down
//! every open connection (which wakes blocked reads and writes), wakes `accept`
//! with a connect to itself, and joins the accept thread.

pub mod envoy;
mod http;
pub mod listeners;
mod routes;
mod script;
mod server;
pub mod skips;

pub use routes::{Flavor, Response};
pub use script::{Fault, OnRequest, Script};
pub use server::{FakeAdmin, Req};

use std::io::{self, Read};
use std::thread;
use std::time::{Duration, Instant};

/// The current `CLOCK_MONOTONIC` time in nanoseconds, the clock `Instant` uses on
/// Linux but cannot expose; log files of several processes can be compared with it.
pub fn mono_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a writable `struct timespec`, and CLOCK_MONOTONIC always
    // exists on Linux, so the call only writes `now`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    let secs = u64::try_from(now.tv_sec).unwrap_or_default();
    let nanos = u64::try_from(now.tv_nsec).unwrap_or_default();
    secs * 1_000_000_000 + nanos
}

/// Polls `cond` every few milliseconds until it holds or `timeout` passes; `true`
/// if it held. Tests use it instead of sleeping to synchronize (tini's `busy_wait`).
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        thread::sleep(POLL.min(deadline - now));
    }
}

/// Interval of [`wait_until`].
const POLL: Duration = Duration::from_millis(5);

/// `source.read(buf)`, retried while a signal interrupts it (`EINTR`): the kernel
/// never restarts a read that has a timeout (`SO_RCVTIMEO`), whatever `SA_RESTART`
/// says, and `read` itself does not retry as `read_exact` and `read_to_end` do.
pub fn read_retrying(source: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match source.read(buf) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            done => return done,
        }
    }
}

/// A xorshift64 generator (Marsaglia 2003): reproducible noise and jitter without
/// a crate. The tests, the fake's garbage answers and the bench's jitter all use it.
#[derive(Clone, Debug)]
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator seeded with `seed` (zero, the one fixed point, is replaced).
    pub fn new(seed: u64) -> Xorshift {
        Xorshift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in [0, 1) with 53 random bits.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `len` bytes of noise (the high byte of each draw).
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64().to_be_bytes()[0]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Xorshift;

    #[test]
    fn xorshift_is_reproducible_and_covers_every_byte_value() {
        let bytes = Xorshift::new(7).bytes(64 * 1024);
        assert_eq!(bytes, Xorshift::new(7).bytes(64 * 1024));
        let mut seen = [false; 256];
        for byte in bytes {
            seen[usize::from(byte)] = true;
        }
        assert!(seen.iter().all(|&s| s), "some byte value never drawn");
        let unit = Xorshift::new(1).next_unit();
        assert!((0.0..1.0).contains(&unit), "{unit}");
    }
}
