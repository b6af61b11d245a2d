//! Bad input to the configuration (SPEC §2): every bad value and list item is a
//! usage error naming its setting, and no input, however random, panics.

use super::*;

#[cfg(not(feature = "rustls"))]
#[test]
fn https_url_is_an_error_without_tls() {
    let https = "https://127.0.0.1:15000";
    let cases: &[(&str, Env, &str)] = &[
        ("", &[("ENVOY_ADMIN_API", https)], "ENVOY_ADMIN_API"),
        ("--admin https://127.0.0.1:15000", &[], "--admin"),
        ("", &[("ISTIO_QUIT_API", https)], "ISTIO_QUIT_API"),
        ("", &[("ENVOY_KILL_API", https)], "ENVOY_KILL_API"),
        ("--quit https://127.0.0.1:15000", &[], "--quit"),
        ("", &[("TANDEM_READY_URLS", https)], "TANDEM_READY_URLS"),
    ];
    for (args, env, name) in cases {
        let msg = usage_error(args, env);
        assert!(msg.contains(name) && msg.contains(https), "{msg}");
        assert!(msg.contains("rustls"), "{msg}");
    }
}

#[test]
fn every_bad_value_is_a_usage_error_naming_the_setting_and_the_value() {
    let cases: &[(&str, &str)] = &[
        ("WAIT_FOR_ENVOY_TIMEOUT", "5x"),
        ("WAIT_FOR_ENVOY_TIMEOUT", "-1s"),
        ("QUIT_WITHOUT_ENVOY_TIMEOUT", "10"),
        ("QUIT_REQUEST_TIMEOUT", "soon"),
        ("TANDEM_POLL_MAX", "1.5"),
        ("START_WITHOUT_ENVOY", "maybe"),
        ("GENERIC_QUIT_ONLY", "on"),
        ("NEVER_KILL_ISTIO", "2"),
        ("NEVER_KILL_ENVOY", "nope"),
        ("NEVER_KILL_ISTIO_ON_FAILURE", "y"),
        ("ALWAYS_KILL_ENVOY", "always"),
        ("ENVOY_ADMIN_API", "ftp://127.0.0.1:15000"),
        ("ENVOY_ADMIN_API", "127.0.0.1:15000"),
        ("ENVOY_ADMIN_API", "http://"),
        ("ENVOY_ADMIN_API", "http://:15000"),
        ("ENVOY_ADMIN_API", "http://127.0.0.1:0"),
        ("ENVOY_ADMIN_API", "http://127.0.0.1:65536"),
        ("ISTIO_QUIT_API", "http://127.0.0.1:port"),
        ("ENVOY_KILL_API", "tcp://127.0.0.1:1"),
        ("GENERIC_QUIT_ENDPOINTS", "ftp://127.0.0.1:1"),
        ("TANDEM_READY_URLS", "http://127.0.0.1:0/ready"),
        ("TANDEM_MESH", "consul"),
        ("TANDEM_LOG", "loud"),
        ("ENVOY_PREFLIGHT_LOGGING", "verbose"),
        ("SCUTTLE_LOGGING", "2"),
        ("TANDEM_LOG_FORMAT", "xml"),
        ("TANDEM_FORWARD_TO", "parent"),
    ];
    for (name, value) in cases {
        let msg = usage_error("", &[(name, value)]);
        let head = format!("invalid {name} {value:?}: expected ");
        assert!(msg.starts_with(&head), "{name}={value:?}: {msg}");
    }

    let options: &[(&str, &str)] = &[
        ("--wait-timeout", "5x"),
        ("--fail-timeout", "-2s"),
        ("--quit-timeout", "1d"),
        ("--poll-max", "fast"),
        ("--admin", "ftp://127.0.0.1:15000"),
        ("--admin", "http://127.0.0.1:65536"),
        ("--istio-quit", "http://127.0.0.1:0"),
        ("--envoy-quit", "localhost:9901/quitquitquit"),
        ("--quit", "ws://127.0.0.1:1"),
        ("--ready", "http:///ready"),
        ("--mesh", "consul"),
        ("--log", "loud"),
        ("--log-format", "xml"),
        ("--forward-to", "parent"),
    ];
    for (option, value) in options {
        let msg = usage_error(&format!("{option} {value}"), &[]);
        let head = format!("invalid {option} {value:?}: expected ");
        assert!(msg.starts_with(&head), "{option} {value:?}: {msg}");
    }
}

#[test]
fn bad_item_in_a_list_is_named_with_its_setting() {
    let cases: &[(&str, Env, &str, &str)] = &[
        (
            "",
            &[("GENERIC_QUIT_ENDPOINTS", "http://127.0.0.1:1/a, ftp://b")],
            "GENERIC_QUIT_ENDPOINTS",
            "ftp://b",
        ),
        (
            "--quit http://127.0.0.1:1/a,http://b:0",
            &[],
            "--quit",
            "http://b:0",
        ),
        (
            "",
            &[("TANDEM_MESH", "istio,consul")],
            "TANDEM_MESH",
            "consul",
        ),
        ("--mesh istio --mesh kuma", &[], "--mesh", "kuma"),
    ];
    for (args, env, name, value) in cases {
        let msg = usage_error(args, env);
        assert!(
            msg.starts_with(&format!("invalid {name} {value:?}: expected ")),
            "{args} {env:?}: {msg}"
        );
    }
}

#[test]
fn non_utf8_variable_is_a_usage_error_naming_it() {
    use std::os::unix::ffi::OsStringExt;
    let cli = crate::cli::parse(Vec::<OsString>::new()).unwrap();
    let env = |name: &str| {
        (name == "ENVOY_ADMIN_API").then(|| OsString::from_vec(b"http://\xff".to_vec()))
    };
    match build(&cli, &env) {
        Err(Error::Usage(msg)) => assert!(msg.contains("ENVOY_ADMIN_API"), "{msg}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
}

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
