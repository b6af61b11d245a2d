//! Reaping (SPEC §4): as PID 1 of a new PID namespace tandem reaps every orphan;
//! not PID 1 it is a child subreaper; and it exits as soon as its direct child
//! exits, whatever grandchildren still run.

use crate::support::{
    REACT, RUN_TIMEOUT, SIGKILL, children_of, in_new_pid_namespace, kill, pid_namespace_available,
    run, spawn, state, status_field, tandem, temp_dir, wait_until,
};
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bound on a whole run of 1,000 orphans.
const RUN: Duration = RUN_TIMEOUT.saturating_mul(2);

/// Whether `pid` is `parent`'s child, alive or a zombie.
fn is_child_of(pid: i32, parent: i32) -> bool {
    status_field(pid, "PPid").is_some_and(|ppid| ppid == parent.to_string())
}

/// Reads the pid a script wrote to `path` (written to a temp name, then renamed).
fn wait_pid_file(path: &Path) -> i32 {
    let mut pid = None;
    let found = wait_until(REACT, || {
        pid = fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    });
    assert!(found, "{} was not written within {REACT:?}", path.display());
    pid.unwrap_or_default()
}

/// The app: double-forks 1,000 short-lived orphans (they are re-parented to PID 1,
/// tandem), then waits until only tandem, itself and its census subshell remain
/// and no zombie is left (or about 10 s pass), records `processes zombies` and its
/// parent's pid, and exits 42.
const ORPHANS: &str = r#"
d=$0
echo "$PPID" > "$d/ppid"
i=0
while [ $i -lt 1000 ]; do ( true & ); i=$((i+1)); done
census() {
    n=0; z=0
    for f in /proc/[0-9]*/stat; do
        read -r l 2>/dev/null < "$f" || continue
        n=$((n+1)); set -- $l; [ "$3" = Z ] && z=$((z+1))
    done
    echo "$n $z"
}
t=0
while c=$(census); set -- $c; [ "$1" -gt 3 ] || [ "$2" != 0 ]; do
    t=$((t+1)); [ $t -gt 500 ] && break
    sleep 0.02
done
echo "$c" > "$d/census"
exit 42
"#;

#[test]
fn as_pid_1_reaps_a_thousand_orphans_and_exits_with_the_apps_code() {
    if !pid_namespace_available() {
        return;
    }
    let dir = temp_dir("pid1");
    let mut cmd = in_new_pid_namespace();
    cmd.arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["sh", "-c", ORPHANS])
        .arg(&dir);
    let out = run(&mut cmd, RUN);
    let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap_or_default();
    assert_eq!(
        read("ppid").trim(),
        "1",
        "tandem was not PID 1\n{}",
        out.dump()
    );
    let census = read("census");
    let (processes, zombies) = census.trim().split_once(' ').unwrap_or_default();
    assert_eq!(
        zombies,
        "0",
        "zombies left (census {census:?})\n{}",
        out.dump()
    );
    assert_eq!(
        processes,
        "3",
        "orphans still running (census {census:?})\n{}",
        out.dump()
    );
    assert_eq!(out.code, Some(42), "{}", out.dump());
}

/// The app of the "at once" test: 1,000 orphans (double-forked, so re-parented
/// to tandem), each reading the FIFO `go` as its stdin, so that they all end
/// together when the test closes its writing end; then it waits on the FIFO
/// `end` and exits 42.
const ORPHANS_AT_ONCE: &str = r#"
d=$0
i=0
while [ $i -lt 1000 ]; do ( read x < "$d/go" & ); i=$((i+1)); done
read y < "$d/end"
exit 42
"#;

/// How many orphans the "at once" test starts.
const AT_ONCE: usize = 1000;

#[test]
fn as_pid_1_a_thousand_orphans_exiting_at_once_leave_no_zombie() {
    if !pid_namespace_available() {
        return;
    }
    let dir = temp_dir("pid1-at-once");
    let (go, end) = (dir.join("go"), dir.join("end"));
    mkfifo(&go);
    mkfifo(&end);
    let mut cmd = in_new_pid_namespace();
    cmd.arg(env!("CARGO_BIN_EXE_tandem"))
        .args(["sh", "-c", ORPHANS_AT_ONCE])
        .arg(&dir);
    let unshare = spawn(&mut cmd);
    // tandem is unshare's one child; seen from here, under its outer pid.
    let mut tandem_pid = 0;
    let found = wait_until(REACT, || {
        tandem_pid = children_of(unshare.pid()).first().copied().unwrap_or(0);
        tandem_pid != 0
    });
    assert!(found, "unshare started no tandem");
    // Holding `go` open for writing lets every orphan's open return; each then
    // blocks in `read` until the last writer closes.
    let writer = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&go)
        .expect("open the go FIFO");
    let reads_go = |pid: &i32| fs::read_link(format!("/proc/{pid}/fd/0")).is_ok_and(|l| l == go);
    let mut orphans = Vec::new();
    let all_waiting = wait_until(RUN, || {
        orphans = children_of(tandem_pid)
            .into_iter()
            .filter(reads_go)
            .collect();
        orphans.len() == AT_ONCE
    });
    if !all_waiting {
        kill(tandem_pid, SIGKILL);
        panic!("{} of {AT_ONCE} orphans were waiting on go", orphans.len());
    }
    // Every orphan is tandem's child now, none through the app.
    drop(writer);
    let released = Instant::now();
    let mut most_zombies = 0;
    let mut left = orphans.clone();
    let reaped = wait_until(REACT, || {
        left.retain(|pid| state(*pid).is_some());
        let zombies = left.iter().filter(|pid| state(**pid) == Some('Z')).count();
        most_zombies = most_zombies.max(zombies);
        left.is_empty()
    });
    let took = released.elapsed();
    if !reaped {
        kill(tandem_pid, SIGKILL);
        panic!(
            "{} of {AT_ONCE} orphans not reaped within {REACT:?} (states {:?})",
            left.len(),
            left.iter()
                .take(5)
                .map(|pid| state(*pid))
                .collect::<Vec<_>>()
        );
    }
    eprintln!(
        "{AT_ONCE} orphans gone {took:?} after release (at most {most_zombies} zombies seen)"
    );
    let zombies: Vec<i32> = children_of(tandem_pid)
        .into_iter()
        .filter(|pid| state(*pid) == Some('Z'))
        .collect();
    assert!(zombies.is_empty(), "zombies left: {zombies:?}");
    fs::write(&end, "\n").expect("release the app");
    let out = unshare.wait(RUN);
    assert_eq!(out.code, Some(42), "{}", out.dump());
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c_path = CString::new(path.as_os_str().as_bytes()).expect("no NUL in a temp path");
    // SAFETY: c_path is a valid NUL-terminated string.
    let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// Lets an app blocked in `read x < FIFO` go on, once it has opened the FIFO.
fn release(fifo: &Path) {
    let mut writer = None;
    let opened = wait_until(REACT, || {
        // Non-blocking: fails with ENXIO until the app has opened its end.
        writer = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .ok();
        writer.is_some()
    });
    assert!(opened, "the app never opened {}", fifo.display());
    if let Some(mut w) = writer {
        w.write_all(b"go\n").expect("write to the fifo");
    }
}

#[test]
fn not_pid_1_an_orphaned_grandchild_is_reparented_to_tandem_and_reaped() {
    let dir = temp_dir("subreaper");
    let fifo = dir.join("go");
    mkfifo(&fifo);
    let script = r#"(sleep 30 </dev/null >/dev/null 2>&1 & echo $! > "$0/gc.tmp" && mv "$0/gc.tmp" "$0/gc")
read x < "$0/go"
exit 7"#;
    let mut cmd = tandem();
    cmd.args(["sh", "-c", script]).arg(&dir);
    let mut app = spawn(&mut cmd);
    let grandchild = wait_pid_file(&dir.join("gc"));
    let tandem_pid = app.pid();
    assert!(
        wait_until(REACT, || is_child_of(grandchild, tandem_pid)),
        "the orphan {grandchild} was not re-parented to tandem {tandem_pid} (PPid {:?})",
        status_field(grandchild, "PPid")
    );
    kill(grandchild, libc::SIGKILL);
    assert!(
        wait_until(REACT, || !is_child_of(grandchild, tandem_pid)),
        "the orphan {grandchild} was not reaped (state {:?})",
        state(grandchild)
    );
    assert!(app.is_running(), "tandem exited before its child");
    release(&fifo);
    let out = app.wait(RUN);
    assert_eq!(out.code, Some(7), "{}", out.dump());
}

#[test]
fn exits_when_the_direct_child_exits_although_a_grandchild_still_runs() {
    let dir = temp_dir("exit-first");
    let script = r#"(sleep 30 </dev/null >/dev/null 2>&1 & echo $! > "$0/gc.tmp" && mv "$0/gc.tmp" "$0/gc")
exit 5"#;
    let mut cmd = tandem();
    cmd.args(["sh", "-c", script]).arg(&dir);
    let out = run(&mut cmd, Duration::from_secs(10));
    let grandchild = wait_pid_file(&dir.join("gc"));
    let still_running = state(grandchild).is_some_and(|s| s != 'Z')
        && fs::read(format!("/proc/{grandchild}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"));
    if still_running {
        kill(grandchild, libc::SIGKILL);
    }
    assert_eq!(out.code, Some(5), "{}", out.dump());
    assert!(
        still_running,
        "the grandchild {grandchild} should have outlived tandem"
    );
    assert!(
        out.elapsed < Duration::from_secs(5),
        "tandem waited for the grandchild: {:?}\n{}",
        out.elapsed,
        out.dump()
    );
}
