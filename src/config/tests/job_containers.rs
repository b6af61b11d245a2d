//! Several job containers in the configuration (SPEC §9): the three settings,
//! from variables or options, all or none, with valid names.

use super::*;

/// The three settings of several job containers (SPEC §9), as variables.
const JOBS: Env = &[
    ("TANDEM_JOB_CONTAINERS", "migrate, report"),
    ("TANDEM_CONTAINER_NAME", "report"),
    ("TANDEM_SHARED_DIR", "/tandem-shared"),
];

#[test]
fn job_containers_come_from_the_three_variables_or_options() {
    let expected = JobContainers {
        all: vec!["migrate".into(), "report".into()],
        me: "report".into(),
        me_from: "TANDEM_CONTAINER_NAME",
        dir: "/tandem-shared".into(),
        dir_from: "TANDEM_SHARED_DIR",
    };
    assert_eq!(config("", JOBS).quit.job_containers, Some(expected));
    let from_options = config(
        "--job-containers migrate --job-containers report --container-name report \
         --shared-dir /tandem-shared",
        &[],
    );
    let jobs = from_options.quit.job_containers.expect("set by options");
    assert_eq!(
        (jobs.me_from, jobs.dir_from),
        ("--container-name", "--shared-dir")
    );
    assert_eq!(jobs.all, ["migrate", "report"]);
    // An option replaces its variable, list and all.
    let mixed = config("--job-containers a,b --container-name b", JOBS);
    let jobs = mixed.quit.job_containers.expect("set");
    assert_eq!(
        (jobs.all, jobs.me),
        (vec!["a".into(), "b".into()], "b".into())
    );
    assert_eq!(config("", &[]).quit.job_containers, None);
}

#[test]
fn job_containers_need_all_three_settings_and_valid_names() {
    let cases: &[(&str, Env, &str, &str)] = &[
        (
            "",
            &[("TANDEM_JOB_CONTAINERS", "a,b")],
            "invalid TANDEM_JOB_CONTAINERS \"a,b\": expected TANDEM_CONTAINER_NAME",
            "TANDEM_SHARED_DIR (--shared-dir) too",
        ),
        (
            "--shared-dir /x",
            &[],
            "invalid --shared-dir \"/x\": expected TANDEM_JOB_CONTAINERS",
            "TANDEM_CONTAINER_NAME (--container-name) too",
        ),
        (
            "",
            &[("TANDEM_CONTAINER_NAME", "a"), ("TANDEM_SHARED_DIR", "/x")],
            "invalid TANDEM_CONTAINER_NAME \"a\": expected TANDEM_JOB_CONTAINERS",
            "all three",
        ),
        (
            "--container-name c",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,b"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid --container-name \"c\": expected one of the names in TANDEM_JOB_CONTAINERS",
            "(a,b)",
        ),
        (
            "",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,Report"),
                ("TANDEM_CONTAINER_NAME", "a"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid TANDEM_JOB_CONTAINERS \"Report\": expected container names",
            "lowercase",
        ),
        (
            "--container-name a_b --job-containers a_b --shared-dir /x",
            &[],
            "invalid --job-containers \"a_b\": expected container names",
            "63 characters",
        ),
        (
            "",
            &[
                ("TANDEM_JOB_CONTAINERS", "a,b,a"),
                ("TANDEM_CONTAINER_NAME", "a"),
                ("TANDEM_SHARED_DIR", "/x"),
            ],
            "invalid TANDEM_JOB_CONTAINERS \"a,b,a\": expected each job container once",
            "a is listed twice",
        ),
    ];
    for (args, env, head, detail) in cases {
        let msg = usage_error(args, env);
        assert!(msg.starts_with(head), "{args} {env:?}: {msg}");
        assert!(msg.contains(detail), "{args} {env:?}: {msg}");
    }
}
