//! `--on-exit` and `--on-exit-timeout` in the configuration (SPEC §11): the words,
//! the default and zero timeout, and every bad value.

use super::*;

/// The configuration of a command line given as separate arguments (a value with
/// blanks in it stays one argument).
fn from_args(args: &[&str], env: Env) -> Result<Config, Error> {
    let cli = crate::cli::parse(args.iter().map(OsString::from)).unwrap();
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    build(&cli, &lookup)
}

fn hook(words: &[&str], timeout: Option<Duration>) -> Option<OnExit> {
    Some(OnExit {
        words: words.iter().map(|w| w.to_string()).collect(),
        timeout,
    })
}

#[test]
fn the_command_is_split_into_words_and_bounded_by_30s_unless_told() {
    let line = r#"upload --to 's3://b/out dir' "x\"y" a\ b #c;"#;
    let want = &["upload", "--to", "s3://b/out dir", "x\"y", "a b", "#c;"];
    let c = from_args(&["--on-exit", line, "app"], &[]).unwrap();
    assert_eq!(c.on_exit, hook(want, Some(30 * SEC)));
    let c = from_args(&["app"], &[("TANDEM_ON_EXIT", line)]).unwrap();
    assert_eq!(c.on_exit, hook(want, Some(30 * SEC)));
    let env = [("TANDEM_ON_EXIT", "x"), ("TANDEM_ON_EXIT_TIMEOUT", "1m")];
    let c = from_args(&["--on-exit", "y", "--on-exit-timeout", "2s", "app"], &env).unwrap();
    assert_eq!(c.on_exit, hook(&["y"], Some(2 * SEC)), "options win");
    let c = from_args(&["app"], &env).unwrap();
    assert_eq!(c.on_exit, hook(&["x"], Some(60 * SEC)));
    let c = from_args(&["--on-exit-timeout", "0", "--on-exit", "x", "app"], &[]).unwrap();
    assert_eq!(c.on_exit, hook(&["x"], None), "0 means no timeout");
}

#[test]
fn an_empty_variable_is_unset() {
    let c = from_args(&["app"], &[("TANDEM_ON_EXIT", "")]).unwrap();
    assert_eq!(c.on_exit, None);
}

#[test]
fn bad_values_name_the_setting_the_value_and_what_was_expected() {
    let cases: &[(&[&str], Env, &str)] = &[
        (
            &["--on-exit", ""],
            &[],
            r#"invalid --on-exit "": expected a command"#,
        ),
        (
            &["--on-exit", " \t"],
            &[],
            r#"invalid --on-exit " \t": expected a command"#,
        ),
        (
            &[],
            &[("TANDEM_ON_EXIT", "  ")],
            r#"invalid TANDEM_ON_EXIT "  ": expected a command"#,
        ),
        (
            &["--on-exit", "upload 'out"],
            &[],
            r#"invalid --on-exit "upload 'out": expected a command line with its quotes closed"#,
        ),
        (
            &[],
            &[("TANDEM_ON_EXIT", "upload \"out")],
            "invalid TANDEM_ON_EXIT \"upload \\\"out\": expected a command line",
        ),
        (
            &["--on-exit-timeout", "soon"],
            &[],
            r#"invalid --on-exit-timeout "soon": expected a duration"#,
        ),
        (
            &[],
            &[("TANDEM_ON_EXIT", "x"), ("TANDEM_ON_EXIT_TIMEOUT", "30")],
            r#"invalid TANDEM_ON_EXIT_TIMEOUT "30": expected a duration"#,
        ),
        (
            &[],
            &[("TANDEM_ON_EXIT_TIMEOUT", "-1s")],
            "invalid TANDEM_ON_EXIT_TIMEOUT \"-1s\"",
        ),
    ];
    for (args, env, want) in cases {
        let mut argv = args.to_vec();
        argv.push("app");
        match from_args(&argv, env) {
            Err(e @ Error::Usage(_)) => {
                let line = e.to_string();
                assert!(line.starts_with(want), "{args:?} {env:?}: {line}");
                assert_eq!(e.exit_code(), crate::exit::EX_USAGE);
            }
            other => panic!("{args:?} {env:?}: {other:?}"),
        }
    }
}
