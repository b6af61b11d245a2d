//! The one reader of `/proc/PID/status` and `/proc/PID/stat`, for tests that
//! watch processes (reaping, idle, memory, terminal job control).

use std::fs;

/// Field `name` (e.g. `PPid`, `VmHWM`) of `/proc/PID/status`; `None` once the pid
/// is gone.
pub fn status_field(pid: i32, name: &str) -> Option<String> {
    field_of(&format!("/proc/{pid}/status"), name)
}

/// Field `name` of the `status` file of thread `tid` of `pid`.
pub fn task_status_field(pid: i32, tid: i32, name: &str) -> Option<String> {
    field_of(&format!("/proc/{pid}/task/{tid}/status"), name)
}

/// A `status` field with a number and maybe a unit (`1234 kB`), as the number.
pub fn status_number(pid: i32, name: &str) -> Option<u64> {
    number(status_field(pid, name)?)
}

/// [`status_number`] for thread `tid` of `pid`.
pub fn task_status_number(pid: i32, tid: i32, name: &str) -> Option<u64> {
    number(task_status_field(pid, tid, name)?)
}

fn number(value: String) -> Option<u64> {
    value.split_whitespace().next()?.parse().ok()
}

fn field_of(path: &str, name: &str) -> Option<String> {
    status_text_field(&fs::read_to_string(path).ok()?, name)
}

/// Field `name` of a `status` file's text read elsewhere (e.g. an app's
/// `cat /proc/self/status`).
pub fn status_text_field(status: &str, name: &str) -> Option<String> {
    status.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key == name).then(|| value.trim().to_owned())
    })
}

/// Fields of `/proc/PID/stat` after the command name: state, ppid, pgrp, session,
/// tty_nr, tpgid, …; empty once the pid is gone.
pub fn stat_after_comm(pid: i32) -> Vec<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name is in parentheses and may contain anything, so look after it.
    let rest = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
    rest.split_whitespace().map(str::to_owned).collect()
}

/// The state letter of `/proc/PID/stat` (`R`, `S`, `T`, `Z`…); `None` once gone.
pub fn state(pid: i32) -> Option<char> {
    stat_after_comm(pid).first()?.chars().next()
}

/// The pids whose parent is `pid` (alive or zombies), from a scan of `/proc`.
pub fn children_of(pid: i32) -> Vec<i32> {
    let parent = pid.to_string();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| stat_after_comm(*p).get(1) == Some(&parent))
        .collect()
}

/// How many file descriptors `pid` has open; `None` once it is gone.
pub fn fd_count(pid: i32) -> Option<usize> {
    Some(fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

#[test]
fn this_process_reads_as_alive_with_its_parent() {
    let me = i32::try_from(std::process::id()).expect("pid fits in i32");
    // The main thread, which `stat` describes, waits for the tests: R or S.
    assert!(matches!(state(me), Some('R' | 'S')), "{:?}", state(me));
    assert_eq!(
        stat_after_comm(me).get(1),
        Some(&std::os::unix::process::parent_id().to_string())
    );
    let parent = std::os::unix::process::parent_id().to_string();
    assert_eq!(status_field(me, "PPid"), Some(parent));
    assert!(status_number(me, "VmRSS").is_some_and(|kib| kib > 0));
    assert_eq!(status_field(me, "NoSuchField"), None);
    assert!(fd_count(me).is_some_and(|n| n >= 3), "{:?}", fd_count(me));
}

#[test]
fn a_spawned_child_is_listed_among_this_processs_children() {
    let me = i32::try_from(std::process::id()).expect("pid fits in i32");
    let mut child = std::process::Command::new("sleep")
        .arg("10")
        .spawn()
        .expect("spawn sleep");
    let pid = i32::try_from(child.id()).expect("pid fits in i32");
    let listed = children_of(me).contains(&pid);
    let _ = child.kill();
    let _ = child.wait();
    assert!(listed, "{pid} not among {:?}", children_of(me));
}
