//! Waiting until a deadline: a channel read that gives up at an `Instant`, and
//! work on threads of their own whose answers are awaited until one. The quit
//! phase keeps its bound to the millisecond this way, whatever a socket timeout
//! or a `/proc` scan would add (SPEC §5.3), and the wait for readiness ends at
//! its timeout (SPEC §3).

use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Instant;

/// The next message on `rx`, waited for until `deadline` at most (`None`: as
/// long as it takes).
pub fn recv_by<T>(rx: &Receiver<T>, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
    match deadline {
        Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
    }
}

/// Jobs, each on a thread of its own, whose answers are read in the order they
/// come. A job still running when its answer is no longer awaited is left to
/// finish, or to end with the process.
pub struct Jobs<T> {
    answers: Receiver<(usize, T)>,
    pending: Vec<bool>,
}

impl<T: Send + 'static> Jobs<T> {
    /// Starts each of `jobs` on a thread named `name`; the i-th answers as job `i`.
    /// A job whose thread cannot start never answers: it is returned with its
    /// number and why.
    pub fn start<F>(
        name: &str,
        jobs: impl IntoIterator<Item = F>,
    ) -> (Jobs<T>, Vec<(usize, io::Error)>)
    where
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, answers) = mpsc::channel();
        let mut pending = Vec::new();
        let mut not_started = Vec::new();
        for (i, job) in jobs.into_iter().enumerate() {
            let tx = tx.clone();
            let spawned = thread::Builder::new().name(name.into()).spawn(move || {
                let _ = tx.send((i, job()));
            });
            pending.push(spawned.is_ok());
            if let Err(e) = spawned {
                not_started.push((i, e));
            }
        }
        (Jobs { answers, pending }, not_started)
    }

    /// The next answer and its job's number, waited for until `deadline` at most
    /// (`None`: as long as it takes); `None` once every job has answered or the
    /// deadline has passed.
    pub fn next_by(&mut self, deadline: Option<Instant>) -> Option<(usize, T)> {
        if !self.pending.contains(&true) {
            return None;
        }
        let (i, answer) = recv_by(&self.answers, deadline).ok()?;
        self.pending[i] = false;
        Some((i, answer))
    }

    /// The numbers of the started jobs that have not answered yet.
    pub fn unanswered(&self) -> impl Iterator<Item = usize> + '_ {
        let numbered = self.pending.iter().enumerate();
        numbered.filter(|(_, pending)| **pending).map(|(i, _)| i)
    }
}

/// `job`'s answer, run on a thread named `name` and waited for until `deadline`
/// at most; `None` when the deadline came first (the job is left running).
/// Without a deadline, or when no thread can be started, `job` runs on this one.
pub fn run_by<T, F>(name: &str, deadline: Option<Instant>, job: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Clone + Send + 'static,
{
    if deadline.is_none() {
        return Some(job());
    }
    let (mut jobs, not_started) = Jobs::start(name, [job.clone()]);
    if let Some((_, e)) = not_started.first() {
        log::debug!("cannot start a {name} thread, running it on this one: {e}");
        return Some(job());
    }
    jobs.next_by(deadline).map(|(_, answer)| answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A bound only a hung wait reaches.
    const HANG: Duration = Duration::from_secs(5);

    fn soon() -> Option<Instant> {
        Some(Instant::now() + Duration::from_millis(200))
    }

    /// Jobs that each finish when their gate opens (or is dropped).
    fn gated(n: usize) -> (Jobs<()>, Vec<mpsc::Sender<()>>) {
        let (gates, waits): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel::<()>()).unzip();
        let jobs = waits.into_iter().map(|wait| {
            move || {
                let _ = wait.recv();
            }
        });
        let (jobs, not_started) = Jobs::start("test", jobs);
        assert!(not_started.is_empty());
        (jobs, gates)
    }

    #[test]
    fn answers_come_in_the_order_the_jobs_finish() {
        let (mut jobs, gates) = gated(3);
        let deadline = Some(Instant::now() + HANG);
        for i in [1, 2, 0] {
            gates[i].send(()).unwrap();
            assert_eq!(jobs.next_by(deadline), Some((i, ())));
        }
        assert_eq!(jobs.unanswered().count(), 0);
        assert_eq!(jobs.next_by(None), None, "nothing is pending");
    }

    #[test]
    fn a_passed_deadline_leaves_the_other_jobs_unanswered() {
        let (mut jobs, gates) = gated(3);
        gates[1].send(()).unwrap();
        let deadline = soon();
        assert_eq!(jobs.next_by(deadline), Some((1, ())));
        assert_eq!(jobs.next_by(deadline), None);
        assert!(Instant::now() < deadline.unwrap() + HANG);
        assert_eq!(jobs.unanswered().collect::<Vec<_>>(), [0, 2]);
    }

    #[test]
    fn run_by_returns_the_answer_or_nothing_at_the_deadline() {
        assert_eq!(run_by("test", soon(), || 7), Some(7));
        assert_eq!(run_by("test", None, || 8), Some(8));
        let before = Instant::now();
        let slow = || thread::sleep(HANG * 2);
        assert_eq!(run_by("test", soon(), slow), None);
        assert!(before.elapsed() < HANG, "waited for the job");
    }

    #[test]
    fn recv_by_gives_up_at_the_deadline_and_not_before() {
        let (tx, rx) = mpsc::channel::<u8>();
        let deadline = Instant::now() + Duration::from_millis(100);
        assert_eq!(recv_by(&rx, Some(deadline)), Err(RecvTimeoutError::Timeout));
        assert!(Instant::now() >= deadline);
        tx.send(1).unwrap();
        assert_eq!(recv_by(&rx, None), Ok(1));
        drop(tx);
        assert_eq!(recv_by(&rx, None), Err(RecvTimeoutError::Disconnected));
    }
}
