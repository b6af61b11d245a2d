//! The integration test crate: one binary for every integration test module, so the
//! suite links once. Add a `mod NAME;` line here for each new `tests/NAME.rs`.

/// Usage, help, version and every bad-value class → 64 (SPEC §1, §2).
mod cli;
/// Variables of scuttle, envoy-preflight, linkerd-await and forks: honoured or warned (SPEC §2).
mod compat;
/// tandem invoked as `wait`: docker-compose-wait's variables and usage (SPEC §2).
mod compose_wait;
/// `--help` and the docs against the option table and the binary.
mod docs;
/// The committed fuzz seeds and crash reproducers, through the fuzzers' own bodies.
mod fuzz_replay;
/// Admins that hang, reset, trickle or send garbage or endless bodies (SPEC §3).
mod hostile;
/// Idle while the app runs: no wake-ups, at most two threads (SPEC §4).
mod idle;
/// Init-grade: the app's mask, SIGTTIN/SIGTTOU, faults sent with kill, real faults (SPEC §4).
mod init;
/// The readiness kinds beside HTTP: tcp://, unix://, file:// against real ones (SPEC §3).
mod kinds;
/// ARCHITECTURE.md's layout: imports in src/ and injector/src point one way, phases never reach up.
mod layout;
/// The standards' sizes: functions ≤ 60 lines, test files ≤ 700, in both crates.
mod lengths;
/// Silence without sidecars, failed quits as errors, quoted values, ureq at debug (SPEC §8).
mod levels;
/// Exit codes, stdio, modes, install, basic relay (SPEC §1, §4, §7).
mod lifecycle;
/// tandem invoked as `linkerd-await`: its command line, its meaning (SPEC §2).
mod linkerd_await;
/// Text and JSON lines, redaction, levels and their precedence (SPEC §2, §8).
mod logs;
/// The `--on-exit` program: when it runs, what it gets, signals, timeout, PID 1 (SPEC §11).
mod on_exit;
/// The `--mesh` presets on their fixed ports, skipped where a port is taken (SPEC §6).
mod presets;
/// The quit phase: targets, order, concurrency, deadline, policies (SPEC §5).
mod quit;
/// Readiness: /ready, /server_info fallback, several URLs, timeouts, backoff (SPEC §3).
mod ready;
/// The real Envoy (`TANDEM_TEST_ENVOY`), on IPv4 and IPv6, and the Istio layout.
mod real_envoy;
/// PID 1 and subreaper reaping; exit when the direct child exits (SPEC §4).
mod reaping;
/// SECURITY.md's own checks: no shell, no proxies, install and symlinks, exact pilot-agent.
mod security;
/// Several job containers in one Pod: the last to finish stops the sidecars (SPEC §9).
mod siblings;
/// The dapr, vault and cloudsql presets; hints in the user's terms (SPEC §5, §6).
mod sidecars;
/// Relay of every catchable signal, group relay, signals while waiting (SPEC §3, §4).
mod signals;
/// Seeded runs against random sidecars, quits, timeouts and app outcomes (SPEC §3–§7).
mod soak;
/// A quit that finds the sidecar gone after SIGTERM: the Pod is stopping (SPEC §5.3).
mod stopping;
/// 10,000 mixed signals while the app runs: no crash, no leak, all relayed (SPEC §4).
mod storm;
mod support;
/// The termination message: reasons, credentials, the app's file, `off` (SPEC §7).
mod termination;
/// Ctrl-C and Ctrl-Z under a real pseudo-terminal (SPEC §4).
mod tty;
/// `--version` names the commit the binary was built from, `-dirty` and all.
mod version;
