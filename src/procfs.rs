//! Finding `pilot-agent` by reading `/proc` directly: distroless has no `pkill`
//! (SPEC §5.2, Istio ≤ 1.2 with a shared process namespace).

use std::fs;

/// Name the kernel gives pilot-agent in `/proc/PID/comm`.
const PILOT_AGENT: &str = "pilot-agent";

/// Pids of every visible process named `pilot-agent`, tandem itself excluded.
pub(crate) fn find_pilot_agents() -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|comm| comm.trim_end() == PILOT_AGENT)
                .unwrap_or(false)
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

/// Sends SIGINT to `pid` (pilot-agent's graceful stop).
pub(crate) fn interrupt(pid: i32) -> std::io::Result<()> {
    // SAFETY: kill takes plain integers; the pid was just read from /proc.
    if unsafe { libc::kill(pid, libc::SIGINT) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
