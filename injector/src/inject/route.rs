//! Which of the two routes a Pod takes (SPEC §12): `wrap` (tandem around each
//! job container, §10) or `native` (the sidecars moved to native sidecars,
//! tandem waiting in their `postStart`). The injector's `--route` gives it for
//! every Pod; the Pod's `tandem.dev/route` annotation, when it names one,
//! gives it for that Pod.

use serde_json::Value;

use crate::layout::ROUTE_ANNOTATION;

/// A Pod's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Route {
    /// tandem wraps each job container's command (SPEC §10).
    #[default]
    Wrap,
    /// The kubelet runs the sidecars natively; tandem waits in their `postStart`.
    Native,
}

impl Route {
    /// The values `--route` and the annotation take, as the user writes them.
    pub const NAMES: [&'static str; 2] = ["wrap", "native"];

    /// The route named `name` (one of [`Route::NAMES`]).
    pub fn from_name(name: &str) -> Option<Route> {
        match name {
            "wrap" => Some(Route::Wrap),
            "native" => Some(Route::Native),
            _ => None,
        }
    }

    /// Its name on the command line, in the annotation and in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Route::Wrap => Self::NAMES[0],
            Route::Native => Self::NAMES[1],
        }
    }
}

/// The route a Pod takes, and the annotation's value when it named none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The annotation's route, else the injector's.
    pub route: Route,
    /// The annotation's value, when it is there and names no route: the
    /// report says it was not understood.
    pub not_understood: Option<String>,
}

/// The route of the Pod whose `metadata` this is, `default` (`--route`) unless
/// its annotation names one.
pub fn choose(metadata: &Value, default: Route) -> Chosen {
    match &metadata["annotations"][ROUTE_ANNOTATION] {
        Value::Null => Chosen {
            route: default,
            not_understood: None,
        },
        Value::String(name) => match Route::from_name(name) {
            Some(route) => Chosen {
                route,
                not_understood: None,
            },
            None => Chosen {
                route: default,
                not_understood: Some(name.clone()),
            },
        },
        // The API server refuses annotations that are not strings; a review
        // still may carry one.
        other => Chosen {
            route: default,
            not_understood: Some(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn annotated(value: Value) -> Value {
        json!({"annotations": {ROUTE_ANNOTATION: value}})
    }

    #[test]
    fn each_name_reads_back_as_its_route_and_nothing_else_does() {
        for name in Route::NAMES {
            assert_eq!(Route::from_name(name).map(Route::name), Some(name));
        }
        for other in ["Native", "NATIVE", " native", "", "classic"] {
            assert_eq!(Route::from_name(other), None, "{other:?}");
        }
        assert_eq!(Route::default(), Route::Wrap);
    }

    #[test]
    fn the_annotation_wins_over_the_injectors_route() {
        for default in [Route::Wrap, Route::Native] {
            for route in [Route::Wrap, Route::Native] {
                let chosen = choose(&annotated(json!(route.name())), default);
                assert_eq!(chosen.route, route);
                assert_eq!(chosen.not_understood, None);
            }
            let none = choose(&json!({"annotations": {"other": "native"}}), default);
            assert_eq!(none.route, default);
            assert_eq!(choose(&json!({}), default).route, default);
        }
    }

    #[test]
    fn an_annotation_naming_no_route_is_kept_to_be_said_and_the_injectors_route_taken() {
        for (value, said) in [
            (json!("Native"), "Native"),
            (json!("nativ"), "nativ"),
            (json!(""), ""),
            (json!(true), "true"),
        ] {
            let chosen = choose(&annotated(value), Route::Native);
            assert_eq!(chosen.route, Route::Native);
            assert_eq!(chosen.not_understood.as_deref(), Some(said));
        }
    }
}
