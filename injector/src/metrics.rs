//! `GET /metrics` (SPEC §10): counters and the review latency histogram, in the
//! Prometheus text format (version 0.0.4). Plain atomics in statics, so any
//! module counts with one call and no lock; no metrics crate.
//!
//! A new counter is one line in `counters!` below: its name in code, its family
//! and its label value. A new family is one line in `FAMILIES`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
}
