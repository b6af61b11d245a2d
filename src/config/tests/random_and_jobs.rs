//! Property tests of the configuration on random input (no panic on any), and
//! several job containers' settings (SPEC §9).

use super::*;

/// A small deterministic generator (xorshift), so the property tests below need
/// no crate and fail the same way every time.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }

    /// Up to 12 pieces of URL, duration, list and multibyte text.
    fn text(&mut self) -> String {
        const PIECES: &[&str] = &[
            "http://",
            "https://",
            "ftp://",
            "127.0.0.1",
            "[::1]",
            "[",
            "]",
            "localhost",
            ":",
            "0",
            "1",
            "65535",
            "65536",
            "@",
            "user:pw@",
            "/",
            "?",
            "#",
            ",",
            " ",
            "%",
            "s",
            "ms",
            "µs",
            "h",
            ".",
            "-",
            "+",
            "true",
            "no",
            "istio",
            "linkerd",
            "é",
            "\u{0}",
            "\n",
            "group",
            "json",
        ];
        let n = self.next() % 13;
        (0..n).map(|_| self.pick(PIECES)).collect()
    }
}

#[test]
fn no_input_makes_the_configuration_panic() {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let names = all_variables();
    let options: Vec<&str> = options::OPTIONS
        .iter()
        .map(|spec| spec.name)
        .filter(|name| !["--help", "--version"].contains(name))
        .chain(["--bogus", "--"])
        .collect();
    for _ in 0..20_000 {
        let mut vars = HashMap::new();
        for _ in 0..noise.next() % 4 {
            vars.insert(noise.pick(&names).to_string(), noise.text());
        }
        let mut args: Vec<String> = Vec::new();
        for _ in 0..noise.next() % 3 {
            args.push(noise.pick(&options).to_string());
            args.push(noise.text());
        }
        args.push("true".into());
        let env = |name: &str| vars.get(name).map(OsString::from);
        if let Ok(cli) = crate::cli::parse(args.iter().map(OsString::from)) {
            let _ = build(&cli, &env);
            let _ = log_format_hint(&cli, &env);
        }
    }
}

#[test]
fn no_text_makes_url_handling_panic() {
    let mut noise = Noise(0x2545_f491_4f6c_dd1d);
    for _ in 0..50_000 {
        let text = noise.text();
        let _ = url::redact(&text);
        if let Ok(url) = HttpUrl::parse(&text) {
            let _ = (url.is_local(), url.join("/ready"), url.with_port(15020));
            let redacted = url.redacted();
            let rest = redacted.split_once("://").map_or("", |(_, rest)| rest);
            let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
            assert!(!authority.contains('@'), "{text:?} -> {redacted:?}");
        }
    }
}

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
