//! The leaf parsers of a setting's value, below both the command line (`cli`) and
//! the configuration (`config`), and read by the log and the phases too: each kind
//! of value has its file (`boolean`, `duration`, `url`, `list`, `words`: a command
//! line given as one string, split as `sh` splits it), and none of them knows where
//! a value came from: the caller names the option or variable.

pub mod boolean;
/// Go's durations (SPEC §2): the syntax the injector reads too, in `tandem-common`.
pub use tandem_common::duration;
pub mod list;
pub mod url;
pub mod words;
