//! pilot-agent's SIGINT (SPEC §5.2, Istio ≤ 1.2 with a shared process
//! namespace): found by reading `/proc` directly, since distroless has no `pkill`.

use std::fs;
use std::path::PathBuf;

use crate::kill;

/// Name the kernel gives pilot-agent in `/proc/PID/comm`.
const PILOT_AGENT: &str = "pilot-agent";

/// Pids of every visible process named `pilot-agent` in tandem's own PID
/// namespace, tandem itself excluded.
///
/// A process of a nested PID namespace shows up in `/proc` too, but it belongs to
/// another container's tree, not to this Pod's sidecar: it is skipped when its
/// namespace can be read and differs. An unreadable namespace (a sidecar running
/// as another user) counts as shared, since that is the case SPEC §5.2 is for.
fn find_pilot_agents() -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let my_ns = fs::read_link("/proc/self/ns/pid").ok();
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|comm| comm.trim_end() == PILOT_AGENT)
                .unwrap_or(false)
        })
        .filter(|pid| in_namespace(*pid, my_ns.as_ref()))
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

fn in_namespace(pid: u32, mine: Option<&PathBuf>) -> bool {
    match (fs::read_link(format!("/proc/{pid}/ns/pid")), mine) {
        (Ok(theirs), Some(mine)) => &theirs == mine,
        // Gone since its name was read: nothing to signal.
        (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => false,
        _ => true,
    }
}

/// SIGINTs every visible pilot-agent; true when one got the signal (one that
/// vanished in between does not count, so the POST is still tried).
pub(super) fn interrupt_all() -> bool {
    let mut delivered = false;
    for pid in find_pilot_agents() {
        match kill::send(pid, libc::SIGINT) {
            Ok(()) => {
                log::info!("sent SIGINT to pilot-agent (pid {pid})");
                delivered = true;
            }
            Err(e) => log::warn!("could not signal pilot-agent (pid {pid}): {e}"),
        }
    }
    delivered
}
