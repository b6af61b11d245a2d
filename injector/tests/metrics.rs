//! `GET /metrics` over HTTPS after real reviews: the Prometheus text format
//! (version 0.0.4) read strictly by the parser below, and the counts it shows.

mod support;

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use support::pods::{self, review};
use support::{Injector, Pki, scratch};

/// One family as read: its type and its samples (name with labels → value).
#[derive(Debug, Default)]
struct Family {
    kind: String,
    help: bool,
    samples: BTreeMap<String, f64>,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Reads the exposition text; panics on anything the format does not allow.
fn parse(text: &str) -> BTreeMap<String, Family> {
    assert!(text.ends_with('\n'), "the last line ends with a newline");
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            assert!(is_name(name) && !help.is_empty(), "{line}");
            let family = families.entry(name.to_string()).or_default();
            assert!(
                !family.help && family.samples.is_empty(),
                "one HELP, first: {line}"
            );
            family.help = true;
            current = name.to_string();
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert_eq!(name, current, "TYPE after its HELP: {line}");
            assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind));
            families.get_mut(name).unwrap().kind = kind.to_string();
        } else {
            assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
            let (sample, value) = line.rsplit_once(' ').expect("sample value");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {line}"));
            let name = match sample.split_once('{') {
                Some((name, labels)) => {
                    let labels = labels.strip_suffix('}').expect("labels end with }");
                    for pair in labels.split(',') {
                        let (key, quoted) = pair.split_once('=').expect("label=value");
                        assert!(is_name(key), "{line}");
                        assert!(
                            quoted.len() >= 2 && quoted.starts_with('"') && quoted.ends_with('"')
                        );
                    }
                    name
                }
                None => sample,
            };
            assert!(is_name(name), "{line}");
            let family = families.get_mut(&current).expect("a sample after its HELP");
            let base = match family.kind.as_str() {
                "histogram" => ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .unwrap_or(name),
                _ => name,
            };
            assert_eq!(base, current, "samples of a family stay together: {line}");
            assert!(
                family.samples.insert(sample.to_string(), value).is_none(),
                "twice: {line}"
            );
        }
    }
    families
}

#[test]
fn metrics_count_reviews_skips_errors_and_latency_in_the_prometheus_format() {
    let dir = scratch("metrics");
    let pki = Pki::new();
    let injector = Injector::start(&pki, &dir);
    let client = pki.client();
    let cases = pods::cases();
    for (name, pod) in &cases {
        assert_eq!(client.review(injector.addr, &review(name, pod)).status, 200);
    }
    let secret = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "s", "kind": {"group": "", "version": "v1", "kind": "Secret"}, "operation": "CREATE"}});
    assert_eq!(client.review(injector.addr, &secret).status, 200);
    assert_eq!(client.post(injector.addr, "/mutate", b"{").status, 400);

    // A review is timed once its answer is written, so the last one's time may
    // land just after the client read it: read until all are in (hang guard 10 s).
    let latency = "tandem_injector_review_duration_seconds";
    let timed = format!("{latency}_count {}\n", cases.len() + 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = client
            .connect(injector.addr)
            .send("GET", "/metrics", b"")
            .unwrap();
        if answer.text().contains(&timed) || Instant::now() > deadline {
            break answer;
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let families = parse(&answer.text());
    let value = |family: &str, sample: &str| -> f64 {
        let f = families
            .get(family)
            .unwrap_or_else(|| panic!("no {family}"));
        *f.samples
            .get(sample)
            .unwrap_or_else(|| panic!("no {sample} in {f:?}"))
    };
    let reviews = "tandem_injector_reviews_total";
    let n = cases.len() as f64;
    assert_eq!(
        value(reviews, &format!("{reviews}{{outcome=\"changed\"}}")),
        n
    );
    assert_eq!(
        value(reviews, &format!("{reviews}{{outcome=\"unchanged\"}}")),
        1.0
    );
    // The no-command case's image is in a registry not reachable from here.
    let skipped = "tandem_injector_containers_skipped_total";
    assert_eq!(
        value(skipped, &format!("{skipped}{{reason=\"image_unread\"}}")),
        1.0
    );
    let errors = "tandem_injector_errors_total";
    assert_eq!(
        value(errors, &format!("{errors}{{kind=\"bad_review\"}}")),
        1.0
    );
    let lookups = "tandem_injector_registry_lookups_total";
    assert_eq!(
        value(lookups, &format!("{lookups}{{result=\"cache_hit\"}}")),
        0.0
    );
    assert_eq!(
        value(lookups, &format!("{lookups}{{result=\"failure\"}}")),
        1.0
    );

    let histogram = &families[latency];
    assert_eq!(histogram.kind, "histogram");
    let buckets: Vec<(f64, f64)> = histogram
        .samples
        .iter()
        .filter_map(|(k, v)| {
            let le = k
                .strip_prefix(&format!("{latency}_bucket{{le=\""))?
                .strip_suffix("\"}")?;
            Some((
                if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                },
                *v,
            ))
        })
        .collect();
    let mut sorted = buckets.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        sorted.windows(2).all(|w| w[0].1 <= w[1].1),
        "cumulative: {sorted:?}"
    );
    let count = value(latency, &format!("{latency}_count"));
    assert_eq!(sorted.last().unwrap(), &(f64::INFINITY, count));
    assert_eq!(count, n + 1.0, "every review answered 200 is timed");
    assert!(value(latency, &format!("{latency}_sum")) > 0.0);
}

/// The families `/metrics` shows now, read strictly.
fn scrape(client: &support::Client, injector: &Injector) -> BTreeMap<String, Family> {
    let answer = client
        .connect(injector.addr)
        .send("GET", "/metrics", b"")
        .unwrap();
    assert_eq!(answer.status, 200);
    parse(&answer.text())
}

/// The one sample of `family` named `sample`.
fn sample(families: &BTreeMap<String, Family>, family: &str, sample: &str) -> f64 {
    let f = families
        .get(family)
        .unwrap_or_else(|| panic!("no {family}"));
    *f.samples
        .get(sample)
        .unwrap_or_else(|| panic!("no {sample} in {f:?}"))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn the_certificate_gauge_counts_down_to_the_served_certificates_not_after_and_follows_a_renewal() {
    let dir = scratch("metrics-expiry");
    let pki = Pki::new();
    let (cert, key) = pki.issue_until(&dir, "first", Some((2049, 12, 31)));
    let injector = Injector::start_with(&cert, &key);
    let client = pki.client();
    let gauge = "tandem_injector_certificate_expires_in_seconds";
    let families = scrape(&client, &injector);
    assert_eq!(families[gauge].kind, "gauge");
    // 2049-12-31T00:00:00Z, a UTCTime in the certificate.
    let left = sample(&families, gauge, gauge);
    assert!(
        (left - (2_524_521_600.0 - unix_now())).abs() <= 5.0,
        "{left}"
    );

    // cert-manager renews: the files change, the next handshake (this scrape's
    // own) serves the new certificate, and the gauge follows it.
    pki.issue_until(&dir, "renewed", Some((2051, 12, 31)));
    let families = scrape(&client, &injector);
    injector.wait_log("certificate reloaded");
    // 2051-12-31T00:00:00Z, a GeneralizedTime.
    let left = sample(&families, gauge, gauge);
    assert!(
        (left - (2_587_593_600.0 - unix_now())).abs() <= 5.0,
        "{left}"
    );
}

#[test]
fn reviews_answered_after_their_timeout_or_cut_off_mid_request_are_counted_as_not_in_time() {
    let dir = scratch("metrics-late");
    let pki = Pki::new();
    let limit = [("TANDEM_INJECTOR_REQUEST_TIMEOUT", "2s")];
    let injector = Injector::start_env(&pki, &dir, &limit);
    let client = pki.client();
    let family = "tandem_injector_reviews_not_answered_in_time_total";
    let late = format!("{family}{{how=\"answered_late\"}}");
    let cut_off = format!("{family}{{how=\"cut_off\"}}");
    let (name, pod) = &pods::cases()[0];
    let body = review(name, pod).to_string();

    // The body trickles in after the client's 300 ms are over: answered, late.
    // The same with the client waiting 10 s is on time.
    for (timeout, expected_late) in [("300ms", 1.0), ("10s", 1.0)] {
        let (mut conn, rest) = client.post_half(
            injector.addr,
            &format!("/mutate?timeout={timeout}"),
            body.as_bytes(),
        );
        thread::sleep(Duration::from_millis(600));
        std::io::Write::write_all(&mut conn.tls, rest).unwrap();
        assert_eq!(conn.read_response().unwrap().status, 200);
        let families = scrape(&client, &injector);
        assert_eq!(sample(&families, family, &late), expected_late, "{timeout}");
        assert_eq!(sample(&families, family, &cut_off), 0.0);
    }
    injector.wait_log("later than its client waits (300ms)");

    // Half a review, then nothing: closed at the 2 s request limit, unanswered.
    let (mut conn, _) = client.post_half(injector.addr, "/mutate?timeout=5s", body.as_bytes());
    let started = Instant::now();
    assert!(conn.closed_by_server());
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let families = scrape(&client, &injector);
    assert_eq!(sample(&families, family, &cut_off), 1.0);
    assert_eq!(sample(&families, family, &late), 1.0);
}
