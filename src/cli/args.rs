//! The command line as read (SPEC §1, §2): the `Task` it asks for, the usage it
//! was read under, and the options as given, values still raw. `own`,
//! `linkerd_await` and `compose_wait` make one; `config` reads it.

use std::ffi::OsString;

use super::options::Spec;
use super::task::Task;

/// The name tandem was invoked under, where a peer's usage comes with it (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokedAs {
    /// tandem's own (any name but the two below).
    Tandem,
    /// `linkerd-await`: its command line, translated (`linkerd_await`).
    LinkerdAwait,
    /// `wait`: docker-compose-wait's usage (`compose_wait`), its 30 s default
    /// timeout and `WAIT_COMMAND` with it.
    Wait,
}

/// The command line as given: option values are still raw strings.
#[derive(Debug, PartialEq, Eq)]
pub struct Cli {
    /// Each option as given, in order, by its table name; flags have no value.
    pub(super) given: Vec<(&'static str, Option<OsString>)>,
    /// What to do.
    pub task: Task,
    /// Under which usage the arguments were read.
    pub invoked_as: InvokedAs,
}

impl Cli {
    /// No options and no task: what is known when the arguments did not parse.
    pub fn empty() -> Cli {
        Cli {
            given: Vec::new(),
            task: Task::NoCommand,
            invoked_as: InvokedAs::Tandem,
        }
    }

    /// tandem's own command line: `given` options, then `task`.
    pub(super) fn new(given: Vec<(&'static str, Option<OsString>)>, task: Task) -> Cli {
        Cli {
            given,
            task,
            invoked_as: InvokedAs::Tandem,
        }
    }

    /// Whether the flag `spec` was given.
    pub fn flag(&self, spec: &Spec) -> bool {
        self.given.iter().any(|(name, _)| *name == spec.name)
    }

    /// The value of `spec` given last, if any.
    pub fn value(&self, spec: &Spec) -> Option<&OsString> {
        self.values(spec).last()
    }

    /// Every value given for `spec`, in order.
    pub fn values(&self, spec: &Spec) -> impl Iterator<Item = &OsString> {
        let wanted = spec.name;
        self.given
            .iter()
            .filter(move |(name, _)| *name == wanted)
            .filter_map(|(_, value)| value.as_ref())
    }
}
