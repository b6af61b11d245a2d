//! The recorder app, a small Python script that counts the signals it gets (a
//! shell `trap` cannot), for the signal and terminal tests.

use super::{REACT, tandem, temp_dir, wait_until};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The recorder app: it handles the signals given as arguments by appending their
/// numbers to `DIR/log-WHO`, announces itself by writing its pid to `DIR/ready-WHO`,
/// and exits with the code in `DIR/stop-WHO` on the first signal after that file
/// exists. With `fork`, a grandchild (WHO = `grandchild`) does the same in the app's
/// process group.
const RECORDER: &str = r#"
import os, signal, sys
d, mode, sigs = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
who = 'app'
if mode == 'fork' and os.fork() == 0:
    who = 'grandchild'
def on_signal(n, _):
    stop = os.path.join(d, 'stop-' + who)
    if os.path.exists(stop):
        with open(stop) as f:
            os._exit(int(f.read()))
    with open(os.path.join(d, 'log-' + who), 'a') as f:
        f.write('%d\n' % n)
for s in sigs:
    signal.signal(s, on_signal)
tmp = os.path.join(d, 'ready-' + who + '.tmp')
with open(tmp, 'w') as f:
    f.write(str(os.getpid()))
os.rename(tmp, os.path.join(d, 'ready-' + who))
while True:
    signal.pause()
"#;

/// A recorder app's files.
pub struct Recorder {
    pub dir: PathBuf,
}

impl Recorder {
    pub fn new(name: &str) -> Recorder {
        Recorder {
            dir: temp_dir(name),
        }
    }

    /// `tandem [OPTIONS] python3 -c RECORDER DIR MODE SIGS...`.
    pub fn command(&self, python: &Path, options: &[&str], fork: bool, sigs: &[i32]) -> Command {
        let mut cmd = tandem();
        cmd.args(options)
            .arg(python)
            .args(["-c", RECORDER])
            .arg(&self.dir)
            .arg(if fork { "fork" } else { "nofork" })
            .args(sigs.iter().map(i32::to_string));
        cmd
    }

    /// The pid `who` announced, once it has installed its handlers.
    pub fn wait_ready(&self, who: &str) -> i32 {
        let path = self.dir.join(format!("ready-{who}"));
        let mut pid = None;
        let ready = wait_until(REACT, || {
            pid = fs::read_to_string(&path).ok().and_then(|s| s.parse().ok());
            pid.is_some()
        });
        assert!(ready, "the recorder's {who} did not start within {REACT:?}");
        pid.unwrap_or_default()
    }

    /// Signal numbers `who` has recorded, in order.
    pub fn log(&self, who: &str) -> Vec<i32> {
        fs::read_to_string(self.dir.join(format!("log-{who}")))
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().expect("a signal number per line"))
            .collect()
    }

    /// Waits until `who` has recorded `count` signals; returns them.
    pub fn wait_log(&self, who: &str, count: usize) -> Vec<i32> {
        let mut log = Vec::new();
        let reached = wait_until(REACT, || {
            log = self.log(who);
            log.len() >= count
        });
        assert!(
            reached,
            "{who} recorded {log:?}, expected {count} signals within {REACT:?}"
        );
        log
    }

    /// The next signal `who` gets makes it exit with `code`.
    pub fn stop(&self, who: &str, code: i32) {
        fs::write(self.dir.join(format!("stop-{who}")), code.to_string()).expect("write stop");
    }
}
