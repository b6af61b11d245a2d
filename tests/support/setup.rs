//! The set-up most integration tests share: a fake sidecar, a tandem aimed at it,
//! a port nothing listens on, and an app whose start leaves a mark.

use super::{FakeAdmin, Script, tandem};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// A fake sidecar serving `script` on a free loopback port; stopped when dropped.
pub fn start(script: Script) -> FakeAdmin {
    FakeAdmin::start(script).expect("fake admin starts")
}

/// [`tandem`] with `ENVOY_ADMIN_API` at `fake`: it waits for the fake's `/ready`
/// and quits it with `POST /quitquitquit`, the default route for a plain Envoy
/// admin (SPEC §5.2). The fake pilot-agents of `quit` run in nested PID
/// namespaces, which tandem ignores, so no test's tandem signals another's.
/// A real pilot-agent in this PID namespace would get the SIGINT instead (`quit` skips).
pub fn tandem_at(fake: &FakeAdmin) -> Command {
    tandem_at_url(&fake.url())
}

/// [`tandem_at`] for a URL that is not a fake's (credentials, a closed port).
pub fn tandem_at_url(url: &str) -> Command {
    let mut cmd = tandem();
    cmd.env("ENVOY_ADMIN_API", url);
    cmd
}

/// A loopback port that nothing listens on (bound, then released at once).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// Appends an app that creates `marker` and exits 0: its absence proves the app
/// never started.
pub fn app_touching(cmd: &mut Command, marker: &Path) {
    cmd.args(["sh", "-c", ": > \"$1\"", "sh"]).arg(marker);
}

/// Sidecar ports that are fixed by the product (Istio's 15000/15020/15021, the
/// presets' 9901, 4191, 9090, 9091): tests that bind them take turns here, so a
/// sibling test never makes one skip.
static FIXED_PORTS: Mutex<()> = Mutex::new(());

/// Holds the turn on the fixed sidecar ports until dropped.
pub fn fixed_ports_turn() -> MutexGuard<'static, ()> {
    FIXED_PORTS.lock().unwrap_or_else(|p| p.into_inner())
}
