//! Leaf parsers of values, each in its own file, depending on nothing else in
//! tandem: `words` splits a command line given as one string.

pub mod words;
