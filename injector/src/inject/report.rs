//! What one review did to a Pod, container by container, and the one line
//! that says it (SPEC §10): the annotation `tandem.dev/injection`, the log line,
//! the admission warnings and the metrics all read the same `Report`, so they
//! never disagree. How a command was found (`Found`) and why a container is not
//! wrapped (`Skip`) are the two lists to extend: each variant's words and its
//! counter sit beside it.

use serde_json::{Value, json};

use super::native::Moves;
use super::route::Route;
use crate::layout::{INJECTION_ANNOTATION, ROUTE_ANNOTATION};
use crate::left_alone::LeftAlone;
use crate::metrics::{self, Counter};
use crate::say;

mod fate;
pub use fate::{Found, Skip};

/// [`INJECTION_ANNOTATION`] in a JSON Pointer (RFC 6901: `/` is written `~1`).
const POINTER: &str = "/metadata/annotations/tandem.dev~1injection";

/// What became of one job container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Its command now starts with tandem; `told`: what the variables added now
    /// tell it (`added NAME=value …; keeps the sidecars on exit CODES`).
    Wrapped(Found, String),
    /// Left as it was.
    Skipped(Skip),
}

/// What one review did to a Pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Each job container by name, in the Pod's order.
    pub containers: Vec<(String, Fate)>,
    /// The containers left alone, their creator stopping them, in the Pod's order.
    pub left_alone: Vec<&'static LeftAlone>,
    /// Classic sidecars not told to quit because a job container runs without
    /// tandem (the Pod may then not complete).
    pub not_quit: Vec<String>,
    /// Why the Pod could not be read at all, when it could not.
    pub problem: Option<String>,
    /// The Pod was injected by an earlier review (a reinvocation).
    pub earlier: bool,
    /// Audit (`tandem.dev/inject: audit`): nothing was changed; the line says
    /// what would have been, starting `audit: `, and no warning goes out.
    pub audit: bool,
    /// The route the Pod took (SPEC §12), read or not.
    pub route: Route,
    /// The native route's moves, when the Pod took that route and was read.
    pub native: Option<Moves>,
    /// The Pod's `tandem.dev/route` annotation, when it named no route.
    pub route_not_understood: Option<String>,
}

impl Report {
    /// The Pod could not be read: nothing changed, for this reason.
    pub fn problem(problem: String) -> Report {
        Report {
            problem: Some(problem),
            ..Report::default()
        }
    }

    /// The one line: the annotation's value and the log's. Control characters
    /// are escaped: names in a review come before the API server checks them.
    pub fn line(&self) -> String {
        let words = self.words();
        say::escape(&if self.audit {
            format!("audit: {words}")
        } else {
            words
        })
    }

    fn words(&self) -> String {
        let mut words = match (&self.problem, &self.native) {
            (Some(problem), _) => format!("not injected: {problem}"),
            (None, Some(moves)) => format!("{}: {}", Route::Native.name(), moves.words()),
            (None, None) => self.wrap_words(),
        };
        if let Some(value) = &self.route_not_understood {
            words.push_str(&format!(
                "; {ROUTE_ANNOTATION} {value:?} not understood (expected {}): \
                 the injector's route, {}, taken",
                Route::NAMES.join(" or "),
                self.route.name()
            ));
        }
        words
    }

    fn wrap_words(&self) -> String {
        let mut parts = Vec::new();
        let wrapped: Vec<String> = self
            .containers
            .iter()
            .filter_map(|(name, fate)| match fate {
                Fate::Wrapped(found, told) if told.is_empty() => {
                    Some(format!("{name} ({})", found.words()))
                }
                Fate::Wrapped(found, told) => Some(format!("{name} ({}; {told})", found.words())),
                Fate::Skipped(_) => None,
            })
            .collect();
        if !wrapped.is_empty() {
            parts.push(format!("wrapped {}", wrapped.join(", ")));
        }
        let skipped: Vec<String> = self
            .containers
            .iter()
            .filter_map(|(name, fate)| match fate {
                Fate::Skipped(why) => Some(format!("{name}: {}", why.words())),
                Fate::Wrapped(..) => None,
            })
            .collect();
        if !skipped.is_empty() {
            parts.push(format!("not wrapped: {}", skipped.join("; ")));
        }
        if !self.not_quit.is_empty() {
            parts.push(format!(
                "the sidecars ({}) are not told to quit, as a job container runs \
                 without tandem: the Pod may not complete until they stop",
                self.not_quit.join(", ")
            ));
        }
        if parts.is_empty() {
            parts.push("no job container".into());
        }
        for l in &self.left_alone {
            parts.push(format!("left {} alone ({})", l.container, l.why));
        }
        parts.join("; ")
    }

    /// The admission warnings: one per container left unwrapped on the first
    /// review (a reinvocation repeats none).
    pub fn warnings(&self) -> Vec<String> {
        if self.audit {
            return Vec::new();
        }
        if let Some(problem) = &self.problem {
            return vec![format!("tandem-injector: Pod not injected: {problem}")];
        }
        if self.earlier {
            return Vec::new();
        }
        self.containers
            .iter()
            .filter_map(|(name, fate)| match fate {
                Fate::Skipped(why) => Some(format!(
                    "tandem-injector: container {name:?} not wrapped: {}",
                    why.words()
                )),
                Fate::Wrapped(..) => None,
            })
            .collect()
    }

    /// The operation that sets the annotation on the Pod whose `metadata` this
    /// is, if one is needed: none when it already says the same, or when an
    /// earlier review wrote it (it knew how each command was found).
    pub fn annotate(&self, metadata: &Value) -> Option<Value> {
        let line = self.line();
        match &metadata["annotations"] {
            Value::Null => Some(json!({"op": "add", "path": "/metadata/annotations",
                "value": {INJECTION_ANNOTATION: line}})),
            Value::Object(map) => match map.get(INJECTION_ANNOTATION) {
                Some(Value::String(old)) if *old == line || self.earlier => None,
                Some(Value::String(old)) if self.again_native(old) => match &self.native {
                    // A reinvocation that moved more: said after what the
                    // first review said.
                    Some(moves) if moves.any() && !self.audit => {
                        let more = format!("{old}; on reinvocation: {}", moves.words());
                        Some(json!({"op": "add", "path": POINTER, "value": say::escape(&more)}))
                    }
                    _ => None,
                },
                _ => Some(json!({"op": "add", "path": POINTER, "value": line})),
            },
            // Not a map: the API server refuses such a Pod anyway.
            _ => None,
        }
    }

    /// Whether `old`, the Pod's annotation, is an earlier native review's and
    /// this one is native too.
    fn again_native(&self, old: &str) -> bool {
        let native = format!("{}: ", Route::Native.name());
        self.native.is_some() && self.problem.is_none() && old.starts_with(&native)
    }

    /// Counts its route, and its containers, in the metrics (an audit's
    /// containers are not: none was wrapped or skipped).
    pub fn count(&self) {
        metrics::count(match self.route {
            Route::Wrap => Counter::RouteWrap,
            Route::Native => Counter::RouteNative,
        });
        if self.audit {
            return;
        }
        for (_, fate) in &self.containers {
            metrics::count(match fate {
                Fate::Wrapped(found, _) => found.counter(),
                Fate::Skipped(why) => why.counter(),
            });
        }
    }
}
