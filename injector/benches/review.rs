//! `make injector-bench`: what the injector costs the API server and the node.
//!
//! - Time to answer a review on loopback TLS, as the API server sees it (request
//!   written to response read): over one kept-alive connection, as the API
//!   server's client reuses them, and with a full TLS handshake per review (a
//!   new connection each). Goal: p99 ≤ 5 ms.
//! - Peak RSS (VmHWM) of the injector while 100 clients each send a review at
//!   the same moment, several rounds. Goal: ≤ 10 MiB.
//! - With the loopback test registry (`injector/tests/support/registry.rs`; skipped
//!   without docker-registry and buildah): a review whose job container has no
//!   `command` and whose image is cached (goal: p99 ≤ 5 ms); a cold lookup (a
//!   new client: TLS handshake, 401, login, manifest, configuration), which the
//!   2 s deadline bounds; and the RSS rounds above with the cache full
//!   (its 1024 entries, most of them cached 404s of distinct images) and each
//!   concurrent review a cache hit.
//! - Reviews during a drain: after SIGTERM, clients keep sending reviews (each
//!   on a new connection, as the injector closes each after its answer while
//!   draining) until shortly before the drain ends. Goal: every one answered.
//!
//! The review is the largest of the test cases (two job containers and
//! istio-proxy). It measures the static musl build when INJECTOR_BENCH_BIN names
//! it (`make injector-bench` does), else the bench profile's own build. Prints a
//! table and writes it to target/bench/injector.md; it never fails on a number.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::pods::{self, container, job_pod, review};
use support::registry::{Auth, Registry as TestRegistry, world};
use support::{Injector, Pki, scratch};
use tandem_injector::registry::{self, Allow, Client, Credentials, Registry};

const KEPT_ALIVE: usize = 3000;
const HANDSHAKES: usize = 500;
const CONCURRENT: usize = 100;
const ROUNDS: usize = 5;
const P99_GOAL: Duration = Duration::from_millis(5);
const RSS_GOAL_KIB: u64 = 10 * 1024;
const COLD: usize = 100;
const DRAIN: Duration = Duration::from_secs(3);
const DRAIN_CLIENTS: usize = 8;

fn main() {
    let bin = std::env::var_os("INJECTOR_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(support::INJECTOR));
    let dir = scratch("bench");
    // The registry's world has its own CA: the injector's certificate comes
    // from it too, so one client trusts both.
    let world = world();
    let own_pki;
    let pki = match world {
        Some(world) => &world.pki,
        None => {
            own_pki = Pki::new();
            &own_pki
        }
    };
    let (cert, key) = pki.issue(&dir, "bench");
    let test_registry =
        world.map(|w| TestRegistry::start(w, &scratch("bench-registry"), Auth::Basic));
    let injector = match (world, &test_registry) {
        (Some(world), Some(r)) => {
            let auth = r.auth_file();
            let vars = [
                (
                    "TANDEM_INJECTOR_REGISTRY_AUTH",
                    auth.to_str().expect("a UTF-8 path"),
                ),
                (
                    "TANDEM_INJECTOR_REGISTRY_CA",
                    world.ca_file.to_str().expect("a UTF-8 path"),
                ),
                // The test registry is on loopback: listed, or never contacted.
                ("TANDEM_INJECTOR_REGISTRY_ALLOW", r.host.as_str()),
            ];
            Injector::start_bin_env(&bin, &cert, &key, &vars)
        }
        _ => Injector::start_bin(&bin, &cert, &key),
    };
    let client = pki.client();
    let (_, pod) = pods::cases()
        .into_iter()
        .find(|(n, _)| *n == "two-jobs")
        .expect("the case");
    let body = review("bench", &pod).to_string();
    let idle_kib = status_kib(injector.pid(), "VmRSS");

    let mut conn = client.connect(injector.addr);
    for _ in 0..100 {
        conn.send("POST", "/mutate", body.as_bytes())
            .expect("warm-up");
    }
    let kept: Vec<Duration> = (0..KEPT_ALIVE)
        .map(|_| {
            let t = Instant::now();
            let answer = conn
                .send("POST", "/mutate", body.as_bytes())
                .expect("a review");
            assert_eq!(answer.status, 200);
            t.elapsed()
        })
        .collect();
    let fresh: Vec<Duration> = (0..HANDSHAKES)
        .map(|_| {
            let t = Instant::now();
            let answer = client
                .connect(injector.addr)
                .send("POST", "/mutate", body.as_bytes())
                .expect("a review");
            assert_eq!(answer.status, 200);
            t.elapsed()
        })
        .collect();

    // With the registry: cache hits, cold lookups, then the cache filled.
    let mut rows: Vec<(String, Vec<Duration>)> = vec![
        (
            format!("review, kept-alive connection ({KEPT_ALIVE})"),
            kept,
        ),
        (format!("review with a TLS handshake ({HANDSHAKES})"), fresh),
    ];
    let mut cold_note = String::new();
    let mut round_body = body.clone();
    if let (Some(world), Some(r)) = (world, &test_registry) {
        let pod = job_pod(
            "hit",
            vec![container("job", &format!("{}/both:1", r.host), None, &[])],
            vec![],
        );
        let hit_body = review("bench-hit", &pod).to_string();
        let first = conn
            .send("POST", "/mutate", hit_body.as_bytes())
            .expect("a review");
        let patched: Value = first.json();
        assert!(
            patched["response"]["patch"].is_string(),
            "the no-command container is wrapped: {patched}"
        );
        let hits: Vec<Duration> = (0..KEPT_ALIVE)
            .map(|_| {
                let t = Instant::now();
                let answer = conn
                    .send("POST", "/mutate", hit_body.as_bytes())
                    .expect("a review");
                assert_eq!(answer.status, 200);
                t.elapsed()
            })
            .collect();
        rows.push((
            format!("review, no command, image cached ({KEPT_ALIVE})"),
            hits,
        ));

        let auth = Credentials::load(&r.auth_file()).expect("the login");
        let ca = registry::load_ca(&world.ca_file).expect("the CA");
        let image = format!("{}/multi:1", r.host);
        let allow = Allow::parse(&r.host).expect("the registry's host");
        let cold: Vec<Duration> = (0..COLD)
            .map(|_| {
                let fresh = Registry::new(
                    Client::new(auth.clone(), &ca, allow.clone()),
                    registry::CAPACITY,
                );
                let t = Instant::now();
                let (answer, _) = fresh.lookup(&image, t + fresh.deadline);
                assert!(answer.is_ok(), "{answer:?}");
                t.elapsed()
            })
            .collect();
        let max = cold.iter().max().copied().unwrap_or_default();
        cold_note = format!(
            "cold lookups bounded by the {} s deadline: max {}",
            registry::DEADLINE.as_secs(),
            ms(max)
        );
        rows.push((
            format!("cold lookup, index of 2 platforms, new client ({COLD})"),
            cold,
        ));

        // Fill the cache: one entry per image, distinct 404s, 16 per review.
        for batch in 0..(registry::CAPACITY - 2) / 16 {
            let containers = (0..16)
                .map(|i| {
                    container(
                        &format!("c{i}"),
                        &format!("{}/missing-{batch}-{i}:1", r.host),
                        None,
                        &[],
                    )
                })
                .collect();
            let pod = job_pod("fill", containers, vec![]);
            let answer = conn
                .send(
                    "POST",
                    "/mutate",
                    review("fill", &pod).to_string().as_bytes(),
                )
                .expect("a review");
            assert_eq!(answer.status, 200);
        }
        round_body = hit_body;
    }

    for _ in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(CONCURRENT));
        let threads: Vec<_> = (0..CONCURRENT)
            .map(|_| {
                let (client, body, barrier) = (client.clone(), round_body.clone(), barrier.clone());
                let addr = injector.addr;
                thread::spawn(move || {
                    let mut conn = client.connect(addr);
                    barrier.wait();
                    conn.send("POST", "/mutate", body.as_bytes())
                        .expect("a review")
                        .status
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().expect("a client thread"), 200);
        }
        // The next round starts once this one's connections have all ended in the
        // injector (its main thread alone), so at most CONCURRENT are ever open.
        let deadline = Instant::now() + Duration::from_secs(10);
        while status_kib(injector.pid(), "Threads") > 1 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
    }
    let peak_kib = status_kib(injector.pid(), "VmHWM");
    drop(injector);
    let (drained, drain_failed) = during_drain(&bin, &cert, &key, pki, &body);

    let mut table = String::new();
    let _ = writeln!(
        table,
        "| tandem-injector ({}, {} bytes) | p50 | p99 | max | goal |",
        bin.display(),
        fs::metadata(&bin).map(|m| m.len()).unwrap_or(0)
    );
    let _ = writeln!(table, "|---|---|---|---|---|");
    for (what, times) in rows {
        let cold = what.starts_with("cold");
        let (p50, p99, max) = percentiles(times);
        let met = if cold {
            cold_note.as_str()
        } else if p99 <= P99_GOAL {
            "p99 ≤ 5 ms: met"
        } else {
            "p99 ≤ 5 ms: NOT met"
        };
        let _ = writeln!(
            table,
            "| {what} | {} | {} | {} | {met} |",
            ms(p50),
            ms(p99),
            ms(max)
        );
    }
    let met = if peak_kib <= RSS_GOAL_KIB {
        "≤ 10 MiB: met"
    } else {
        "≤ 10 MiB: NOT met"
    };
    let _ = writeln!(
        table,
        "| peak RSS, {CONCURRENT} concurrent reviews × {ROUNDS} rounds{} (idle: {:.1} MiB) | | | {:.1} MiB | {met} |",
        if test_registry.is_some() {
            ", cache full, each a hit"
        } else {
            ""
        },
        idle_kib as f64 / 1024.0,
        peak_kib as f64 / 1024.0
    );
    let total = drained.len() + drain_failed;
    let (p50, p99, max) = percentiles(drained);
    let met = if drain_failed == 0 {
        "all answered: met"
    } else {
        "all answered: NOT met"
    };
    let _ = writeln!(
        table,
        "| review with a TLS handshake during a {}s drain, {DRAIN_CLIENTS} clients ({} of {total} answered) | {} | {} | {} | {met} |",
        DRAIN.as_secs(),
        total - drain_failed,
        ms(p50),
        ms(p99),
        ms(max)
    );
    print!("{table}");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    if fs::create_dir_all(&out).is_ok() {
        let _ = fs::write(out.join("injector.md"), &table);
    }
}

/// Reviews sent while an injector drains: the time of each one answered, and
/// how many were not.
fn during_drain(
    bin: &std::path::Path,
    cert: &std::path::Path,
    key: &std::path::Path,
    pki: &Pki,
    body: &str,
) -> (Vec<Duration>, usize) {
    let drain = format!("{}s", DRAIN.as_secs());
    let injector = Injector::start_bin_env(bin, cert, key, &[("TANDEM_INJECTOR_DRAIN", &drain)]);
    injector.signal(libc::SIGTERM);
    injector.wait_log("answering reviews for");
    // Stop sending well before the drain ends: what comes after it is refused.
    let until = Instant::now() + DRAIN - Duration::from_millis(500);
    let threads: Vec<_> = (0..DRAIN_CLIENTS)
        .map(|_| {
            let (client, body, addr) = (pki.client(), body.to_string(), injector.addr);
            thread::spawn(move || {
                let (mut times, mut failed) = (Vec::new(), 0);
                while Instant::now() < until {
                    let t = Instant::now();
                    let mut conn = client.connect(addr);
                    match conn.send("POST", "/mutate", body.as_bytes()) {
                        Ok(answer) if answer.status == 200 => times.push(t.elapsed()),
                        _ => failed += 1,
                    }
                }
                (times, failed)
            })
        })
        .collect();
    let mut times = Vec::new();
    let mut failed = 0;
    for t in threads {
        let (mine, lost) = t.join().expect("a client thread");
        times.extend(mine);
        failed += lost;
    }
    (times, failed)
}

/// A `/proc/PID/status` field: KiB for the memory ones, a count for `Threads`.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .expect("the field")
}

fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration, Duration) {
    if times.is_empty() {
        return Default::default();
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99), at(1.0))
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
