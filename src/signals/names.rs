//! Signal names as users write them (`SIGKILL`, `SIGRTMIN+3`), for the
//! `--on-exit` program's `TANDEM_EXIT_SIGNAL` (SPEC §11).

/// The named signals below SIGRTMIN, by number as this platform's libc has them.
const NAMED: [(i32, &str); 31] = [
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGKILL, "SIGKILL"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGPIPE, "SIGPIPE"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGSTKFLT, "SIGSTKFLT"),
    (libc::SIGCHLD, "SIGCHLD"),
    (libc::SIGCONT, "SIGCONT"),
    (libc::SIGSTOP, "SIGSTOP"),
    (libc::SIGTSTP, "SIGTSTP"),
    (libc::SIGTTIN, "SIGTTIN"),
    (libc::SIGTTOU, "SIGTTOU"),
    (libc::SIGURG, "SIGURG"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGWINCH, "SIGWINCH"),
    (libc::SIGIO, "SIGIO"),
    (libc::SIGPWR, "SIGPWR"),
    (libc::SIGSYS, "SIGSYS"),
];

/// The name of signal `sig`: its own below SIGRTMIN, `SIGRTMIN+N` for the
/// real-time ones (as `kill -l` writes them), else `signal N`.
pub fn name(sig: i32) -> String {
    if let Some((_, name)) = NAMED.iter().find(|(n, _)| *n == sig) {
        return (*name).to_string();
    }
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    match sig {
        _ if sig == min => "SIGRTMIN".to_string(),
        _ if sig == max => "SIGRTMAX".to_string(),
        _ if (min..max).contains(&sig) => format!("SIGRTMIN+{}", sig - min),
        _ => format!("signal {sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_ones_kill_uses() {
        assert_eq!(name(9), "SIGKILL");
        assert_eq!(name(15), "SIGTERM");
        assert_eq!(name(libc::SIGRTMIN()), "SIGRTMIN");
        assert_eq!(name(libc::SIGRTMIN() + 3), "SIGRTMIN+3");
        assert_eq!(name(libc::SIGRTMAX()), "SIGRTMAX");
        assert_eq!(name(0), "signal 0");
        assert_eq!(name(99), "signal 99");
        for sig in 1..32 {
            assert!(name(sig).starts_with("SIG"), "{sig}");
        }
    }
}
