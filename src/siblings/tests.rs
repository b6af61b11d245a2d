//! The shared-directory record within one process: each "container" holds its
//! own `.alive` file as `enter` returns it (the process-wide `join` takes one
//! name per process, so the real processes are tests/siblings.rs').

use super::*;
use files::DIR_LOCK;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tandem-siblings-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Container `me` among `all`, sharing `dir`.
fn jobs(dir: &Path, me: &str, all: &[&str]) -> JobContainers {
    JobContainers {
        all: all.iter().map(|s| s.to_string()).collect(),
        me: me.to_owned(),
        me_from: "TANDEM_CONTAINER_NAME",
        dir: dir.to_path_buf(),
        dir_from: "TANDEM_SHARED_DIR",
    }
}

/// Records `me`'s end and looks once: `Ok(turn)` when decided, `Err(roll)` if waiting.
fn finish_once(jobs: &JobContainers, failed: bool) -> Result<Turn, Roll> {
    let verdict = if failed { FAILED } else { SUCCEEDED };
    match call_roll(jobs, Some(verdict)).unwrap() {
        Called::Decided(turn) => Ok(turn),
        Called::Waiting(roll) => Err(roll),
    }
}

fn waiting(result: Result<Turn, Roll>) -> (Vec<String>, Vec<String>) {
    let roll = result.expect_err("should wait for the others");
    (roll.running, roll.not_started)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_first_to_finish_waits_for_the_one_still_running_which_is_last() {
    let dir = temp_dir("two");
    let all = ["migrate", "report"];
    let (a, b) = (jobs(&dir, "migrate", &all), jobs(&dir, "report", &all));
    let _a_alive = enter(&dir, "migrate").unwrap();
    let _b_alive = enter(&dir, "report").unwrap();
    assert_eq!(
        waiting(finish_once(&a, false)),
        (names(&["report"]), vec![])
    );
    assert_eq!(
        finish_once(&b, false).unwrap(),
        Turn::Last { any_failed: false }
    );
    // The first one, looking again, finds the decision taken.
    assert_eq!(
        finish_once(&a, false).unwrap(),
        Turn::Others,
        "a second look must not claim again"
    );
}

#[test]
fn a_sibling_not_started_yet_is_waited_for_and_a_failure_carries_over() {
    let dir = temp_dir("late");
    let all = ["main", "upload"];
    let _main_alive = enter(&dir, "main").unwrap();
    let main = jobs(&dir, "main", &all);
    assert_eq!(
        waiting(finish_once(&main, true)),
        (vec![], names(&["upload"]))
    );
    let _upload_alive = enter(&dir, "upload").unwrap();
    assert_eq!(
        finish_once(&jobs(&dir, "upload", &all), false).unwrap(),
        Turn::Last { any_failed: true }
    );
}

#[test]
fn a_sibling_whose_lock_was_dropped_counts_as_finished_and_failed() {
    let dir = temp_dir("gone");
    let all = ["main", "upload"];
    let _main_alive = enter(&dir, "main").unwrap();
    // Closing the file is what the kernel does for a killed tandem.
    drop(enter(&dir, "upload").unwrap());
    assert_eq!(
        finish_once(&jobs(&dir, "main", &all), false).unwrap(),
        Turn::Last { any_failed: true }
    );
}

#[test]
fn a_container_that_runs_again_has_the_quits_decided_anew() {
    let dir = temp_dir("again");
    let all = ["a", "b"];
    let (a, b) = (jobs(&dir, "a", &all), jobs(&dir, "b", &all));
    let _b_alive = enter(&dir, "b").unwrap();
    let a_alive = enter(&dir, "a").unwrap();
    assert!(finish_once(&b, false).is_err());
    assert_eq!(
        finish_once(&a, true).unwrap(),
        Turn::Last { any_failed: true }
    );
    // a fails and restarts (restartPolicy OnFailure): it is running again, so b's
    // look waits for it, and its second end decides once more, succeeded now.
    drop(a_alive);
    let _a_again = enter(&dir, "a").unwrap();
    assert_eq!(waiting(finish_once(&b, false)), (names(&["a"]), vec![]));
    assert_eq!(
        finish_once(&a, false).unwrap(),
        Turn::Last { any_failed: false }
    );
}

#[test]
fn two_live_tandems_cannot_share_a_name() {
    let dir = temp_dir("twice");
    let _first = enter(&dir, "a").unwrap();
    let second = enter(&dir, "a").unwrap_err();
    assert_eq!(second.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn a_watcher_holding_the_lock_for_an_instant_does_not_stop_a_restart() {
    let dir = temp_dir("watcher");
    drop(enter(&dir, "a").unwrap());
    // A sibling that saw the previous run end holds the lock shared, briefly.
    let watcher = File::open(dir.join("a.alive")).unwrap();
    watcher.lock_shared().unwrap();
    let released = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(watcher);
    });
    enter(&dir, "a").expect("the restart waits the watcher out");
    released.join().unwrap();
}

#[test]
fn of_many_finishing_at_once_exactly_one_is_last() {
    let dir = temp_dir("many");
    let all: Vec<String> = (0..20).map(|i| format!("job-{i}")).collect();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let alive: Vec<File> = refs.iter().map(|me| enter(&dir, me).unwrap()).collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(all.len()));
    let finishing: Vec<_> = refs
        .iter()
        .map(|me| {
            let (jobs, barrier) = (jobs(&dir, me, &refs), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                finish_once(&jobs, false).is_ok()
            })
        })
        .collect();
    let decided = finishing
        .into_iter()
        .map(|t| t.join().unwrap_or(false))
        .filter(|&last| last)
        .count();
    drop(alive);
    assert_eq!(decided, 1, "exactly one sees every container finished");
    assert!(dir.join(CLAIMED).exists());
}

#[test]
fn the_shared_files_are_open_to_every_user() {
    let dir = temp_dir("modes");
    let _alive = enter(&dir, "a").unwrap();
    let mode = fs::metadata(dir.join(DIR_LOCK))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o666);
}
