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

/// Records `me`'s end with `status` and looks once: `Ok(turn)` when decided,
/// `Err(roll)` if waiting.
fn finish_once(jobs: &JobContainers, status: u8) -> Result<Turn, Roll> {
    match call_roll(jobs, Some(status)).unwrap() {
        Called::Decided(turn) => Ok(turn),
        Called::Waiting(roll) => Err(roll),
    }
}

fn waiting(result: Result<Turn, Roll>) -> (Vec<String>, Vec<String>) {
    let roll = result.expect_err("should wait for the others");
    (roll.running, roll.not_started)
}

/// A run of container `me` starts, keeping the sidecars on no status.
fn start(dir: &Path, me: &str) -> io::Result<File> {
    enter(dir, me, ExitCodes::NONE)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_first_to_finish_waits_for_the_one_still_running_which_is_last() {
    let dir = temp_dir("two");
    let all = ["migrate", "report"];
    let (a, b) = (jobs(&dir, "migrate", &all), jobs(&dir, "report", &all));
    let _a_alive = start(&dir, "migrate").unwrap();
    let _b_alive = start(&dir, "report").unwrap();
    assert_eq!(waiting(finish_once(&a, 0)), (names(&["report"]), vec![]));
    assert_eq!(finish_once(&b, 0).unwrap(), Turn::Last);
    // The first one, looking again, finds the decision taken.
    assert_eq!(
        finish_once(&a, 0).unwrap(),
        Turn::Others,
        "a second look must not claim again"
    );
}

#[test]
fn a_sibling_not_started_yet_is_waited_for() {
    let dir = temp_dir("late");
    let all = ["main", "upload"];
    let _main_alive = start(&dir, "main").unwrap();
    let main = jobs(&dir, "main", &all);
    assert_eq!(waiting(finish_once(&main, 1)), (vec![], names(&["upload"])));
    let _upload_alive = start(&dir, "upload").unwrap();
    assert_eq!(
        finish_once(&jobs(&dir, "upload", &all), 0).unwrap(),
        Turn::Last
    );
}

#[test]
fn a_sibling_whose_lock_was_dropped_counts_as_finished() {
    let dir = temp_dir("gone");
    let all = ["main", "upload"];
    let _main_alive = start(&dir, "main").unwrap();
    // Closing the file is what the kernel does for a killed tandem.
    drop(start(&dir, "upload").unwrap());
    assert_eq!(
        finish_once(&jobs(&dir, "main", &all), 0).unwrap(),
        Turn::Last
    );
}

#[test]
fn a_container_that_runs_again_has_the_quits_decided_anew() {
    let dir = temp_dir("again");
    let all = ["a", "b"];
    let (a, b) = (jobs(&dir, "a", &all), jobs(&dir, "b", &all));
    let _b_alive = start(&dir, "b").unwrap();
    let a_alive = start(&dir, "a").unwrap();
    assert!(finish_once(&b, 0).is_err());
    assert_eq!(finish_once(&a, 1).unwrap(), Turn::Last);
    // a fails and restarts (restartPolicy OnFailure): it is running again, so b's
    // look waits for it, and its second end decides once more, succeeded now.
    drop(a_alive);
    let _a_again = start(&dir, "a").unwrap();
    assert_eq!(waiting(finish_once(&b, 0)), (names(&["a"]), vec![]));
    assert_eq!(finish_once(&a, 0).unwrap(), Turn::Last);
}

#[test]
fn a_container_that_will_run_again_is_waited_for_between_its_runs() {
    let dir = temp_dir("kept");
    let all = ["a", "b"];
    let (a, b) = (jobs(&dir, "a", &all), jobs(&dir, "b", &all));
    let _b_alive = start(&dir, "b").unwrap();
    // a ends with a status in its set: recorded, then its process is gone.
    drop(start(&dir, "a").unwrap());
    run_again(&a, 3).unwrap();
    let roll = finish_once(&b, 0).expect_err("a runs again");
    assert_eq!((roll.again, roll.vanished), (names(&["a"]), vec![]));
    // Its next run replaces the record: running, then finished.
    let _a_next = start(&dir, "a").unwrap();
    assert!(!dir.join("a.again").exists());
    assert_eq!(waiting(finish_once(&b, 0)), (names(&["a"]), vec![]));
    assert_eq!(finish_once(&a, 0).unwrap(), Turn::Last);
}

#[test]
fn a_container_killed_outright_runs_again_only_when_its_set_holds_137() {
    for (keep, again) in [
        ("1-255", true),
        ("137", true),
        ("1-136", false),
        ("", false),
    ] {
        let dir = temp_dir("oom");
        let all = ["main", "upload"];
        let _main_alive = start(&dir, "main").unwrap();
        let keep = ExitCodes::parse(keep).unwrap_or(ExitCodes::NONE);
        drop(enter(&dir, "upload", keep).unwrap());
        let looked = finish_once(&jobs(&dir, "main", &all), 0);
        assert_eq!(looked.is_err(), again, "{keep}");
        assert_eq!(dir.join("upload.again").exists(), again, "{keep}");
    }
}

#[test]
fn two_live_tandems_cannot_share_a_name() {
    let dir = temp_dir("twice");
    let _first = start(&dir, "a").unwrap();
    let second = start(&dir, "a").unwrap_err();
    assert_eq!(second.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn a_watcher_holding_the_lock_for_an_instant_does_not_stop_a_restart() {
    let dir = temp_dir("watcher");
    drop(start(&dir, "a").unwrap());
    // A sibling that saw the previous run end holds the lock shared, briefly.
    let watcher = File::open(dir.join("a.alive")).unwrap();
    watcher.lock_shared().unwrap();
    let released = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(watcher);
    });
    start(&dir, "a").expect("the restart waits the watcher out");
    released.join().unwrap();
}

#[test]
fn of_many_finishing_at_once_exactly_one_is_last() {
    let dir = temp_dir("many");
    let all: Vec<String> = (0..20).map(|i| format!("job-{i}")).collect();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let alive: Vec<File> = refs.iter().map(|me| start(&dir, me).unwrap()).collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(all.len()));
    let finishing: Vec<_> = refs
        .iter()
        .map(|me| {
            let (jobs, barrier) = (jobs(&dir, me, &refs), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                finish_once(&jobs, 0).is_ok()
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
    let _alive = start(&dir, "a").unwrap();
    let mode = fs::metadata(dir.join(DIR_LOCK))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o666);
}
