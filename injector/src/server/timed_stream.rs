//! A TCP stream whose reads and writes all end by one deadline: each call gets
//! the time left as its socket timeout, so a client that trickles one byte at a
//! time (slow loris) still loses the connection when the deadline passes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A `TcpStream` with a deadline over all of its I/O.
#[derive(Debug)]
pub struct TimedStream {
    /// The socket.
    pub stream: TcpStream,
    until: Instant,
}

impl TimedStream {
    /// Wraps `stream` with a deadline `within` from now.
    pub fn new(stream: TcpStream, within: Duration) -> TimedStream {
        TimedStream {
            stream,
            until: Instant::now() + within,
        }
    }

    /// Moves the deadline to `within` from now.
    pub fn renew(&mut self, within: Duration) {
        self.until = Instant::now() + within;
    }

    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        Ok(left)
    }
}

/// A socket timeout is reported as `WouldBlock`; here it is the deadline.
fn timed_out(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "deadline passed")
    } else {
        e
    }
}

impl Read for TimedStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf).map_err(timed_out)
    }
}

impl Write for TimedStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}
