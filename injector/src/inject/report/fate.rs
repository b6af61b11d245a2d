//! How a wrapped container's command was found (`Found`) and why a job
//! container is not wrapped (`Skip`): the two lists to extend, each variant's
//! words and its counter beside it.

use crate::metrics::Counter;
use crate::registry::Failure;

/// How a wrapped container's command was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Its `command` in the Pod spec.
    Spec,
    /// Wrapped by an earlier review of the same Pod (a reinvocation).
    Earlier,
    /// No `command`: its image's entrypoint, read from the registry.
    Registry,
    /// No `command`: the entrypoint its `tandem.dev/entrypoint.NAME` annotation gives.
    Annotation,
    /// No `command`, and its image not looked up (`tandem-injector audit`
    /// makes no network call): wrapped when its registry answers.
    Lookup,
}

impl Found {
    pub(super) fn words(self) -> &'static str {
        match self {
            Found::Spec => "command from the spec",
            Found::Earlier => "by an earlier review",
            Found::Registry => "entrypoint from the registry",
            Found::Annotation => "entrypoint from its annotation",
            Found::Lookup => "needs its image's entrypoint",
        }
    }

    pub(super) fn counter(self) -> Counter {
        match self {
            Found::Spec => Counter::WrappedSpec,
            Found::Earlier => Counter::WrappedEarlier,
            Found::Registry => Counter::WrappedRegistry,
            Found::Annotation => Counter::WrappedAnnotation,
            // Never counted: only `tandem-injector audit` leaves a lookup undone.
            Found::Lookup => Counter::WrappedRegistry,
        }
    }
}

/// Why a job container is not wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// No `command`: it runs its image's entrypoint, which the Pod does not
    /// name, and its image was not looked up.
    NoCommand,
    /// No `command`, and its image's configuration could not be read (or
    /// its registry may not be contacted): the kind of failure and the fix.
    Unread {
        /// The container's `image`.
        image: String,
        /// Why it was not read.
        failure: Failure,
    },
    /// No `command`, and its entrypoint annotation is malformed (this says how).
    BadAnnotation(String),
    /// No `command`, and its image has neither `ENTRYPOINT` nor `CMD`.
    NothingToRun,
    /// Its command runs tandem already, with its own settings.
    OwnTandem,
    /// It has a command but came after tandem was injected (a later webhook).
    AddedLater,
}

impl Skip {
    /// Why, and the fix when there is one.
    pub(super) fn words(&self) -> String {
        let fixed = match self {
            Skip::Unread { image, failure } => {
                let why = failure.words();
                return format!("it has no command and its image {image} was not read: {why}");
            }
            Skip::BadAnnotation(why) => {
                return format!("it has no command and its {why} (fix it, or set command)");
            }
            Skip::NothingToRun => {
                "it has no command and its image has neither ENTRYPOINT nor CMD (set command)"
            }
            Skip::NoCommand => "it has no command (set command to its image's entrypoint)",
            Skip::OwnTandem => "it already runs tandem (left as is)",
            Skip::AddedLater => {
                "it was added after tandem was injected (by a webhook called later: \
                 prefix its command with /tandem/tandem -- in that webhook's template)"
            }
        };
        fixed.to_string()
    }

    /// Whether the container runs without tandem: then no other job container
    /// may stop the sidecars under it.
    pub fn runs_without_tandem(&self) -> bool {
        !matches!(self, Skip::OwnTandem)
    }

    pub(super) fn counter(&self) -> Counter {
        match self {
            Skip::NoCommand => Counter::SkippedNoCommand,
            Skip::Unread {
                failure: Failure::NotAllowed(_),
                ..
            } => Counter::SkippedNotAllowed,
            Skip::Unread { .. } => Counter::SkippedImageUnread,
            Skip::BadAnnotation(_) => Counter::SkippedBadAnnotation,
            Skip::NothingToRun => Counter::SkippedNothingToRun,
            Skip::OwnTandem => Counter::SkippedOwnTandem,
            Skip::AddedLater => Counter::SkippedAddedLater,
        }
    }
}
