//! tandem: wait for the sidecars, run the app, quit the sidecars, exit with the app's status.

mod log;
mod values;

fn main() {}
