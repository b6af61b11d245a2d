//! `GET /metrics` (SPEC §10): counters, the review latency histogram and the
//! serving certificate's time left, in the Prometheus text format (version 0.0.4). Plain atomics in statics, so any
//! module counts with one call and no lock; no metrics crate.
//!
//! A new counter is one line in `counters!` below: its name in code, its family
//! and its label value. A new family is one line in `FAMILIES`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The content type of the answer to `GET /metrics`.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family: its name, its help text and the name of its one label.
struct Family {
    name: &'static str,
    help: &'static str,
    label: &'static str,
}

/// Every counter family, in the order `/metrics` lists them.
const FAMILIES: &[Family] = &[
    Family {
        name: "tandem_injector_reviews_total",
        help: "Reviews answered, by outcome: changed (answered with a patch), unchanged, \
               or audited (tandem.dev/inject: audit: only the annotation).",
        label: "outcome",
    },
    Family {
        name: "tandem_injector_reviews_by_route_total",
        help: "Reviews of Pods in scope (audited ones too), by the route they took: \
               wrap (tandem around the job containers) or native (the \
               sidecars moved to native sidecars).",
        label: "route",
    },
    Family {
        name: "tandem_injector_containers_wrapped_total",
        help: "Job containers wrapped in tandem, by how their command was found.",
        label: "found",
    },
    Family {
        name: "tandem_injector_containers_skipped_total",
        help: "Job containers left unwrapped, by reason.",
        label: "reason",
    },
    Family {
        name: "tandem_injector_reviews_not_answered_in_time_total",
        help: "Reviews the API server had given up on: answered_late, read whole but \
               answered after the time it waits (its request's timeout, else the \
               webhook's 5 s) from the request's first byte; cut_off, a request begun \
               but not read whole within the request limit, closed unanswered.",
        label: "how",
    },
    Family {
        name: "tandem_injector_errors_total",
        help: "Requests and connections that failed, by kind.",
        label: "kind",
    },
    Family {
        name: "tandem_injector_registry_lookups_total",
        help: "Image configuration lookups in a registry, by result.",
        label: "result",
    },
];

macro_rules! counters {
    ($($id:ident = $family:literal $value:literal,)*) => {
        /// A counter: a family and one value of its label.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Counter {
            $(#[doc = concat!($family, "{", $value, "}")] $id,)*
        }
        /// Each counter's family name and label value, in `Counter` order.
        const COUNTERS: &[(&str, &str)] = &[$(($family, $value),)*];
    };
}

counters! {
    ReviewChanged = "tandem_injector_reviews_total" "changed",
    ReviewUnchanged = "tandem_injector_reviews_total" "unchanged",
    ReviewAudited = "tandem_injector_reviews_total" "audited",
    RouteWrap = "tandem_injector_reviews_by_route_total" "wrap",
    RouteNative = "tandem_injector_reviews_by_route_total" "native",
    WrappedSpec = "tandem_injector_containers_wrapped_total" "spec",
    WrappedEarlier = "tandem_injector_containers_wrapped_total" "earlier",
    WrappedRegistry = "tandem_injector_containers_wrapped_total" "registry",
    WrappedAnnotation = "tandem_injector_containers_wrapped_total" "annotation",
    SkippedNoCommand = "tandem_injector_containers_skipped_total" "no_command",
    SkippedImageUnread = "tandem_injector_containers_skipped_total" "image_unread",
    SkippedNotAllowed = "tandem_injector_containers_skipped_total" "registry_not_allowed",
    SkippedBadAnnotation = "tandem_injector_containers_skipped_total" "bad_annotation",
    SkippedNothingToRun = "tandem_injector_containers_skipped_total" "nothing_to_run",
    SkippedOwnTandem = "tandem_injector_containers_skipped_total" "own_tandem",
    SkippedAddedLater = "tandem_injector_containers_skipped_total" "added_later",
    ReviewAnsweredLate = "tandem_injector_reviews_not_answered_in_time_total" "answered_late",
    ReviewCutOff = "tandem_injector_reviews_not_answered_in_time_total" "cut_off",
    ErrorBadReview = "tandem_injector_errors_total" "bad_review",
    ErrorBadRequest = "tandem_injector_errors_total" "bad_request",
    ErrorTls = "tandem_injector_errors_total" "tls",
    ErrorConnection = "tandem_injector_errors_total" "connection",
    // Registry lookups (SPEC §10): one line per result.
    RegistryCacheHit = "tandem_injector_registry_lookups_total" "cache_hit",
    RegistryCacheMiss = "tandem_injector_registry_lookups_total" "cache_miss",
    RegistryFailure = "tandem_injector_registry_lookups_total" "failure",
    RegistryNotAllowed = "tandem_injector_registry_lookups_total" "not_allowed",
}

static VALUES: [AtomicU64; COUNTERS.len()] = [const { AtomicU64::new(0) }; COUNTERS.len()];

/// Adds one to `counter`.
pub fn count(counter: Counter) {
    VALUES[counter as usize].fetch_add(1, Ordering::Relaxed);
}

const LATENCY: &str = "tandem_injector_review_duration_seconds";
/// The histogram's upper bounds, in microseconds: a review takes about 1 ms,
/// the API server gives up at the webhook's 5 s.
const BOUNDS_US: [u64; 12] = [
    250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
];
/// Reviews per bucket (not cumulative; the last is above every bound).
static BUCKETS: [AtomicU64; BOUNDS_US.len() + 1] =
    [const { AtomicU64::new(0) }; BOUNDS_US.len() + 1];
static SUM_US: AtomicU64 = AtomicU64::new(0);

/// Records how long a review took, from its request read to its answer written.
pub fn observe(took: Duration) {
    let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    let bucket = BOUNDS_US
        .iter()
        .position(|&b| us <= b)
        .unwrap_or(BOUNDS_US.len());
    BUCKETS[bucket].fetch_add(1, Ordering::Relaxed);
    SUM_US.fetch_add(us, Ordering::Relaxed);
}

const EXPIRY: &str = "tandem_injector_certificate_expires_in_seconds";
/// The served certificate's `notAfter` in Unix seconds; `i64::MIN` while
/// unknown (none loaded, or one whose date could not be read).
static NOT_AFTER: AtomicI64 = AtomicI64::new(i64::MIN);

/// Records the `notAfter` of the certificate now served (`None`: unreadable),
/// at the first load and at each reload.
pub fn serving_until(not_after: Option<i64>) {
    NOT_AFTER.store(not_after.unwrap_or(i64::MIN), Ordering::Relaxed);
}

/// The gauge of the certificate's time left, computed at each scrape; nothing
/// while its date is unknown, so an alert on it never fires on a made-up value.
fn render_expiry(out: &mut String) {
    let not_after = NOT_AFTER.load(Ordering::Relaxed);
    if not_after == i64::MIN {
        return;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let _ = writeln!(
        out,
        "# HELP {EXPIRY} Seconds until the served TLS certificate's notAfter (negative \
         once expired), of the certificate served now, after any reload."
    );
    let _ = writeln!(out, "# TYPE {EXPIRY} gauge");
    let _ = writeln!(out, "{EXPIRY} {}", not_after.saturating_sub(now));
}

/// The text `GET /metrics` answers.
pub fn render() -> String {
    let mut out = String::new();
    for family in FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(out, "# TYPE {} counter", family.name);
        for (i, (name, value)) in COUNTERS.iter().enumerate() {
            if *name == family.name {
                let n = VALUES[i].load(Ordering::Relaxed);
                let _ = writeln!(out, "{name}{{{}=\"{value}\"}} {n}", family.label);
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP {LATENCY} Time to answer a review, from its request read to its answer written."
    );
    let _ = writeln!(out, "# TYPE {LATENCY} histogram");
    let mut total = 0;
    for (i, bucket) in BUCKETS.iter().enumerate() {
        total += bucket.load(Ordering::Relaxed);
        let le = BOUNDS_US
            .get(i)
            .map_or("+Inf".to_string(), |us| format!("{}", *us as f64 / 1e6));
        let _ = writeln!(out, "{LATENCY}_bucket{{le=\"{le}\"}} {total}");
    }
    let sum = SUM_US.load(Ordering::Relaxed) as f64 / 1e6;
    let _ = writeln!(out, "{LATENCY}_sum {sum}");
    let _ = writeln!(out, "{LATENCY}_count {total}");
    render_expiry(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_belongs_to_a_listed_family_and_is_rendered_once() {
        let text = render();
        for (name, value) in COUNTERS {
            assert!(FAMILIES.iter().any(|f| f.name == *name), "{name}");
            let family = FAMILIES.iter().find(|f| f.name == *name).unwrap();
            let sample = format!("{name}{{{}=\"{value}\"}} ", family.label);
            assert_eq!(text.matches(&sample).count(), 1, "{sample}");
        }
    }

    #[test]
    fn counts_and_latencies_show_in_the_text() {
        let before = render();
        count(Counter::RegistryFailure);
        observe(Duration::from_millis(3));
        let after = render();
        let value = |text: &str, sample: &str| -> f64 {
            let line = text.lines().find(|l| l.starts_with(sample)).unwrap();
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        let failure = "tandem_injector_registry_lookups_total{result=\"failure\"}";
        assert_eq!(value(&after, failure), value(&before, failure) + 1.0);
        let le5 = format!("{LATENCY}_bucket{{le=\"0.005\"}}");
        let le1 = format!("{LATENCY}_bucket{{le=\"0.001\"}}");
        assert!(value(&after, &le5) > value(&before, &le5));
        assert!(value(&after, &le1) <= value(&after, &le5));
    }

    #[test]
    fn the_certificate_gauge_shows_the_time_left_and_nothing_while_unknown() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let gauge = |text: &str| -> Option<i64> {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{EXPIRY} ")))?;
            line.rsplit(' ').next()?.parse().ok()
        };
        serving_until(Some(now + 3_600));
        let left = gauge(&render()).expect("the gauge");
        assert!((3_598..=3_600).contains(&left), "{left}");
        serving_until(Some(now - 60));
        let left = gauge(&render()).expect("the gauge");
        assert!((-62..=-60).contains(&left), "{left}");
        serving_until(None);
        assert!(!render().contains(EXPIRY));
    }
}
