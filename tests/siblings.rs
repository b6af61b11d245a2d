//! Several job containers in one Pod (SPEC §9): real tandem processes sharing a
//! directory, each with an app held at a gate until the test opens it, and one
//! generic fake sidecar that counts the quit requests. Only the last to finish
//! sends them, exactly once however close together they finish; a sibling killed
//! outright counts as finished, one not started yet does not, and one that ends
//! with a status the kubelet runs it again on (`--keep-on-exit`) has not.

use crate::support::{
    FakeAdmin, Out, REACT, RUN_TIMEOUT, Running, SIGKILL, SIGTERM, Script, app_touching, kill, run,
    spawn, start, tandem, temp_dir, wait_until,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The quit path the fake counts.
const QUIT: &str = "/quit";

/// A Pod's shared directory and its one sidecar, which counts the quits.
struct Pod {
    shared: PathBuf,
    sidecar: FakeAdmin,
    /// Where the apps' gates are (apart from the shared directory, which is tandem's).
    gates: PathBuf,
}

impl Pod {
    fn new(name: &str) -> Pod {
        let root = temp_dir(name);
        let (shared, gates) = (root.join("shared"), root.join("gates"));
        fs::create_dir_all(&shared).unwrap();
        fs::create_dir_all(&gates).unwrap();
        Pod {
            shared,
            sidecar: start(Script::generic()),
            gates,
        }
    }

    /// tandem as job container `me` of `all` (comma-separated), stopping the
    /// sidecar through a generic quit; the app is still to be appended.
    fn tandem(&self, me: &str, all: &str) -> Command {
        let mut cmd = tandem();
        cmd.env(
            "GENERIC_QUIT_ENDPOINTS",
            format!("{}{QUIT}", self.sidecar.url()),
        )
        .env("TANDEM_JOB_CONTAINERS", all)
        .env("TANDEM_CONTAINER_NAME", me)
        .env("TANDEM_SHARED_DIR", &self.shared);
        cmd
    }

    /// Starts job container `me` of `all` whose app, once started, waits at its
    /// own gate, then exits with `code`.
    fn job(&self, me: &str, all: &str, code: i32, env: &[(&str, &str)]) -> Job {
        self.job_at(me, all, code, env, &self.gates.join(format!("{me}.go")))
    }

    /// [`Pod::job`] with the gate `go`, which several apps may share.
    fn job_at(&self, me: &str, all: &str, code: i32, env: &[(&str, &str)], go: &Path) -> Job {
        let started = self.gates.join(format!("{me}.started"));
        let _ = fs::remove_file(&started);
        let mut cmd = self.tandem(me, all);
        cmd.envs(env.iter().copied())
            .args(["sh", "-c", GATED_APP, "sh"])
            .arg(&started)
            .arg(go)
            .arg(code.to_string());
        Job {
            name: me.to_owned(),
            started,
            go: go.to_owned(),
            tandem: spawn(&mut cmd),
        }
    }

    /// The kubelet's next run of job container `me` (its gate closed again), started.
    fn rerun(&self, me: &str, all: &str, code: i32, env: &[(&str, &str)]) -> Job {
        fs::remove_file(self.gates.join(format!("{me}.go"))).unwrap();
        let job = self.job(me, all, code, env);
        wait_started(&[&job]);
        job
    }

    /// Job containers `a` and `b` of the list `a,b`, each with `env`, both started.
    fn pair(&self, a: &str, b: &str, env: &[(&str, &str)]) -> (Job, Job) {
        let all = format!("{a},{b}");
        let (a, b) = (self.job(a, &all, 0, env), self.job(b, &all, 0, env));
        wait_started(&[&a, &b]);
        (a, b)
    }

    fn quits(&self) -> usize {
        self.sidecar.count("POST", QUIT)
    }

    /// The outputs and the sidecar's requests, for assertion messages.
    fn dump(&self, outs: &[&Out]) -> String {
        let outs: String = outs.iter().map(|out| out.dump()).collect();
        outs + &self.sidecar.dump()
    }
}

/// Creates the file `$1`, waits for the file `$2` to exist, exits with `$3`.
const GATED_APP: &str = r#": > "$1"; while [ ! -e "$2" ]; do sleep 0.01; done; exit "$3""#;

/// One job container's tandem and its app's gate.
struct Job {
    name: String,
    /// Made when the app has started.
    started: PathBuf,
    /// The app ends once this exists.
    go: PathBuf,
    tandem: Running,
}

impl Job {
    fn started(&self) -> bool {
        self.started.exists()
    }

    /// Lets the app end.
    fn release(&self) {
        fs::write(&self.go, "").unwrap();
    }

    /// Waits until this tandem logs `text`; panics with its stderr otherwise.
    fn wait_for_line(&self, text: &str) {
        let seen = wait_until(REACT, || self.tandem.stderr_so_far().contains(text));
        assert!(
            seen,
            "{}: no {text:?} within {REACT:?}\n{}",
            self.name,
            self.tandem.stderr_so_far()
        );
    }

    fn wait(self) -> Out {
        self.tandem.wait(RUN_TIMEOUT)
    }

    /// SIGKILLs this tandem (as an OOM kill of the container would), lets its
    /// orphaned app end, and reaps the tandem.
    fn kill_outright(self) {
        kill(self.tandem.pid(), SIGKILL);
        self.release();
        drop(self);
    }
}

fn wait_started(jobs: &[&Job]) {
    let all = wait_until(REACT, || jobs.iter().all(|job| job.started()));
    assert!(all, "not every app started within {REACT:?}");
}

#[test]
fn the_mesh_outlives_the_first_to_finish_and_stops_after_the_last() {
    let pod = Pod::new("two");
    let (mut migrate, report) = pod.pair("migrate", "report", &[]);
    migrate.release();
    migrate.wait_for_line(
        "leaving the sidecars to the last job container to finish; still running: report",
    );
    assert_eq!(pod.quits(), 0, "the first to finish stopped the sidecar");
    assert!(
        migrate.tandem.is_running(),
        "migrate waits for report, so a report killed later still gets the quits"
    );

    report.release();
    let (report, migrate) = (report.wait(), migrate.wait());
    let dump = pod.dump(&[&migrate, &report]);
    assert_eq!((migrate.code, report.code), (Some(0), Some(0)), "{dump}");
    assert_eq!(pod.quits(), 1, "{dump}");
    assert!(
        report
            .stderr
            .contains(&format!("quit POST {}{QUIT}: 200", pod.sidecar.url())),
        "{dump}"
    );
    assert!(
        migrate
            .stderr
            .contains("every job container has finished: report sees to the sidecars"),
        "{dump}"
    );
}

#[test]
fn of_twenty_finishing_at_once_exactly_one_sends_the_quits() {
    let pod = Pod::new("twenty");
    let names: Vec<String> = (0..20).map(|i| format!("job-{i}")).collect();
    let all = names.join(",");
    // One gate for all: every app ends within a few milliseconds of the others.
    let go = pod.gates.join("all.go");
    let jobs: Vec<Job> = names
        .iter()
        .enumerate()
        .map(|(i, me)| pod.job_at(me, &all, i32::from(i == 7), &[], &go))
        .collect();
    wait_started(&jobs.iter().collect::<Vec<_>>());
    fs::write(&go, "").unwrap();
    let outs: Vec<(String, Out)> = jobs
        .into_iter()
        .map(|j| (j.name.clone(), j.wait()))
        .collect();
    let dump: String = outs.iter().map(|(_, out)| out.dump()).collect();
    for (name, out) in &outs {
        let own = if name == "job-7" { 1 } else { 0 };
        assert_eq!(out.code, Some(own), "{name} keeps its app's status\n{dump}");
    }
    assert_eq!(pod.quits(), 1, "exactly one quit request\n{dump}");
    let senders = outs
        .iter()
        .filter(|(_, out)| out.stderr.contains("quit POST"))
        .count();
    assert_eq!(senders, 1, "{dump}");
}

/// Waits for `main`, which exits 0 after counting `upload`, killed outright, as
/// finished and sending the one quit.
fn assert_counted_upload_finished(pod: &Pod, main: Job) {
    let out = main.wait();
    let dump = pod.dump(&[&out]);
    assert_eq!(out.code, Some(0), "{dump}");
    let line = "upload ended without recording that it finished";
    assert!(out.stderr.contains(line), "{dump}");
    assert_eq!(pod.quits(), 1, "{dump}");
}

#[test]
fn a_sibling_killed_while_running_counts_as_finished() {
    let pod = Pod::new("killed-first");
    let (main, upload) = pod.pair("main", "upload", &[]);
    upload.kill_outright();
    main.release();
    assert_counted_upload_finished(&pod, main);
}

#[test]
fn a_sibling_killed_outright_that_keeps_137_is_waited_for_until_its_next_run() {
    // An OOM kill under restartPolicy OnFailure: the kubelet sees 137 and runs the
    // container again, so the mesh must still be there for that run.
    let pod = Pod::new("oom-again");
    let keep = [("NEVER_KILL_ISTIO_ON_FAILURE", "true")];
    let (mut main, upload) = pod.pair("main", "upload", &keep);
    upload.kill_outright();
    main.release();
    main.wait_for_line("upload was killed outright and the kubelet runs it again on exit 137");
    main.wait_for_line("to run again: upload");
    assert_eq!(pod.quits(), 0, "upload runs again");
    assert!(main.tandem.is_running(), "main waits for upload's next run");

    let again = pod.rerun("upload", "main,upload", 0, &keep);
    assert_eq!(pod.quits(), 0, "upload runs now");
    again.release();
    let (again, main) = (again.wait(), main.wait());
    let dump = pod.dump(&[&main, &again]);
    assert_eq!((main.code, again.code), (Some(0), Some(0)), "{dump}");
    assert_eq!(
        pod.quits(),
        1,
        "upload's next run ended outside its set\n{dump}"
    );
}

#[test]
fn a_sibling_killed_after_this_one_finished_still_gets_the_quits_sent() {
    let pod = Pod::new("killed-later");
    let (main, upload) = pod.pair("main", "upload", &[]);
    main.release();
    main.wait_for_line("still running: upload");
    assert_eq!(pod.quits(), 0);

    upload.kill_outright();
    assert_counted_upload_finished(&pod, main);
}

#[test]
fn a_sibling_not_started_yet_is_waited_for() {
    let pod = Pod::new("late");
    let main = pod.job("main", "main,report", 3, &[]);
    wait_started(&[&main]);
    let mut main = main;
    main.release();
    main.wait_for_line("not started yet: report");
    assert_eq!(pod.quits(), 0, "report has not even started");
    assert!(main.tandem.is_running());

    let report = pod.job("report", "main,report", 0, &[]);
    wait_started(&[&report]);
    assert_eq!(pod.quits(), 0, "report runs now");
    report.release();
    let (report, main) = (report.wait(), main.wait());
    let dump = pod.dump(&[&main, &report]);
    assert_eq!((main.code, report.code), (Some(3), Some(0)), "{dump}");
    assert_eq!(pod.quits(), 1, "{dump}");
}

#[test]
fn a_terminating_signal_ends_the_wait_and_leaves_the_quits_to_the_others() {
    let pod = Pod::new("term");
    let main = pod.job("main", "main,report", 4, &[]);
    let report = pod.job("report", "main,report", 0, &[]);
    wait_started(&[&main, &report]);
    main.release();
    main.wait_for_line("still running: report");
    let mut main = main;
    main.tandem.signal(SIGTERM);
    let out = main.wait();
    let dump = pod.dump(&[&out]);
    assert_eq!(out.code, Some(4), "the app's own status\n{dump}");
    assert!(
        out.stderr
            .contains("signal 15 while waiting for the other job containers"),
        "{dump}"
    );
    assert_eq!(pod.quits(), 0, "{dump}");

    report.release();
    let out = report.wait();
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert_eq!(pod.quits(), 1, "main recorded its end: report is last");
}

#[test]
fn a_container_run_again_after_a_kept_failure_sends_the_quits_when_it_succeeds() {
    // restartPolicy OnFailure: kubelet runs the failed container again, in the
    // same Pod, with the same emptyDir; its first run kept the mesh for it.
    let pod = Pod::new("again");
    let keep = [("NEVER_KILL_ISTIO_ON_FAILURE", "true")];
    let flaky = pod.job("flaky", "flaky,steady", 1, &keep);
    let mut steady = pod.job("steady", "flaky,steady", 0, &keep);
    wait_started(&[&flaky, &steady]);
    steady.release();
    steady.wait_for_line("still running: flaky");
    flaky.release();
    let first = flaky.wait();
    let dump = pod.dump(&[&first]);
    assert_eq!(first.code, Some(1), "{dump}");
    assert!(
        first.stderr.contains(
            "the kubelet restarts this container on exit 1 (--keep-on-exit 1-255): keeping the sidecars"
        ),
        "{dump}"
    );
    assert_eq!(pod.quits(), 0, "flaky runs again\n{dump}");
    assert!(
        steady.tandem.is_running(),
        "steady waits for flaky's next run"
    );

    let again = pod.rerun("flaky", "flaky,steady", 0, &keep);
    again.release();
    let (again, steady) = (again.wait(), steady.wait());
    let dump = pod.dump(&[&again, &steady]);
    assert_eq!((again.code, steady.code), (Some(0), Some(0)), "{dump}");
    assert_eq!(pod.quits(), 1, "the retry succeeded and is last\n{dump}");
}

#[test]
fn a_kept_container_exits_at_once_and_its_sibling_keeps_the_mesh_for_its_next_run() {
    // The kept one ends first; its sibling ends later and must not stop the mesh
    // while the kept one is between runs, nor after a next run that is kept again.
    let pod = Pod::new("kept-first");
    let keep = [("TANDEM_KEEP_ON_EXIT", "3,42")];
    let all = "retry,report";
    let retry = pod.job("retry", all, 3, &keep);
    let mut report = pod.job("report", all, 0, &keep);
    wait_started(&[&retry, &report]);
    retry.release();
    let first = retry.wait();
    assert_eq!(first.code, Some(3), "{}", pod.dump(&[&first]));
    assert!(report.tandem.is_running());
    report.release();
    report.wait_for_line("to run again: retry");
    assert_eq!(
        pod.quits(),
        0,
        "retry is between runs\n{}",
        pod.dump(&[&first])
    );

    for (code, quits) in [(42, 0), (0, 1)] {
        let next = pod.rerun("retry", all, code, &keep);
        next.release();
        let next = next.wait();
        let dump = pod.dump(&[&next]);
        assert_eq!(next.code, Some(code), "{dump}");
        assert!(
            wait_until(REACT, || pod.quits() == quits),
            "after exit {code}: {quits} quits expected\n{dump}"
        );
        if quits == 0 {
            assert!(
                report.tandem.is_running(),
                "exit {code} is kept: report waits"
            );
        }
    }
    let report = report.wait();
    let dump = pod.dump(&[&report]);
    assert_eq!(report.code, Some(0), "{dump}");
    assert_eq!(pod.quits(), 1, "{dump}");
}

#[test]
fn quit_only_takes_part_as_a_container_that_succeeded() {
    // `myjob; tandem --quit-only` in a script: the quits wait for the others too.
    let pod = Pod::new("quit-only");
    let main = pod.job("main", "main,script", 0, &[]);
    wait_started(&[&main]);
    let script = spawn(pod.tandem("script", "main,script").arg("--quit-only"));
    let seen = wait_until(REACT, || {
        script.stderr_so_far().contains("still running: main")
    });
    assert!(seen, "{}", script.stderr_so_far());
    assert_eq!(pod.quits(), 0);
    main.release();
    let (main, script) = (main.wait(), script.wait(RUN_TIMEOUT));
    let dump = pod.dump(&[&main, &script]);
    assert_eq!((main.code, script.code), (Some(0), Some(0)), "{dump}");
    assert_eq!(pod.quits(), 1, "{dump}");
}

// ---------------------------------------------------------------------------
// Bad values: 64, naming the setting and the value, nothing contacted or started
// ---------------------------------------------------------------------------

/// Runs tandem with the three settings (`dir` as the shared directory) and an
/// app that leaves a mark; checks 64, that nothing started or was contacted, and
/// returns the error output.
fn refused(pod: &Pod, cmd: &mut Command) -> String {
    let marker = pod.gates.join("app-ran");
    app_touching(cmd, &marker);
    let out = run(cmd, RUN_TIMEOUT);
    let dump = pod.dump(&[&out]);
    assert_eq!(out.code, Some(64), "{dump}");
    assert!(!marker.exists(), "the app started\n{dump}");
    assert!(
        pod.sidecar.requests().is_empty(),
        "the sidecar was contacted\n{dump}"
    );
    assert_eq!(out.stderr.lines().count(), 1, "one line\n{dump}");
    out.stderr
}

#[test]
fn a_shared_dir_that_cannot_be_used_is_a_bad_value() {
    let pod = Pod::new("bad-dir");
    let missing = pod.gates.join("missing");
    let err = refused(
        &pod,
        pod.tandem("a", "a,b").env("TANDEM_SHARED_DIR", &missing),
    );
    let head = format!(
        "invalid TANDEM_SHARED_DIR {:?}: expected a directory",
        missing.display().to_string()
    );
    assert!(err.contains(&head), "{err}");

    let file = pod.gates.join("a-file");
    fs::write(&file, "").unwrap();
    let err = refused(&pod, pod.tandem("a", "a,b").arg("--shared-dir").arg(&file));
    assert!(err.contains("invalid --shared-dir"), "{err}");
    assert!(err.contains("this container can write"), "{err}");
}

#[test]
fn the_three_settings_come_together_with_valid_names() {
    let pod = Pod::new("bad-values");
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[("TANDEM_JOB_CONTAINERS", "a,b")],
            "invalid TANDEM_JOB_CONTAINERS \"a,b\"",
        ),
        (
            &[
                ("TANDEM_CONTAINER_NAME", "c"),
                ("TANDEM_JOB_CONTAINERS", "a,b"),
            ],
            "invalid TANDEM_CONTAINER_NAME \"c\": expected one of the names",
        ),
        (
            &[
                ("TANDEM_JOB_CONTAINERS", "a,B_2"),
                ("TANDEM_CONTAINER_NAME", "a"),
            ],
            "invalid TANDEM_JOB_CONTAINERS \"B_2\": expected container names",
        ),
        (
            &[
                ("TANDEM_JOB_CONTAINERS", "a,a"),
                ("TANDEM_CONTAINER_NAME", "a"),
            ],
            "a is listed twice",
        ),
    ];
    for (env, expected) in cases {
        let mut cmd = pod.tandem("a", "a,b");
        cmd.env_remove("TANDEM_JOB_CONTAINERS")
            .env_remove("TANDEM_CONTAINER_NAME")
            .envs(env.iter().copied());
        if env.len() == 1 {
            cmd.env_remove("TANDEM_SHARED_DIR");
        }
        let err = refused(&pod, &mut cmd);
        assert!(err.contains(expected), "{env:?}: {err}");
    }
}

#[test]
fn two_running_tandems_with_one_name_is_a_bad_value() {
    let pod = Pod::new("twice");
    let first = pod.job("a", "a,b", 0, &[]);
    wait_started(&[&first]);
    let err = refused(
        &pod,
        pod.tandem("a", "a,b").arg("--container-name").arg("a"),
    );
    assert!(
        err.contains("invalid --container-name \"a\": expected a name no other running tandem has"),
        "{err}"
    );
    first.release();
    drop(first);
}

#[test]
fn wait_only_takes_no_part() {
    // It ends without recording: taking part, it would count as a container that
    // vanished, and cut the mesh under its app run after it.
    let pod = Pod::new("wait-only");
    let out = run(pod.tandem("a", "a,b").arg("--wait-only"), RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let left: Vec<_> = fs::read_dir(&pod.shared).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // Nor does it use the directory: the check is the run's.
    let out = run(
        pod.tandem("a", "a,b")
            .env("TANDEM_SHARED_DIR", pod.gates.join("missing"))
            .arg("--wait-only"),
        RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.dump());
}
