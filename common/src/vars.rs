//! The `TANDEM_` variables the injector sets in a job container and the wrapper
//! reads there (SPEC §2, §9, §10), so the two spell each one the same way.

/// The prefix that marks a variable as tandem's.
pub const PREFIX: &str = "TANDEM_";
/// tandem-injector's own settings start so (SPEC §10); the wrapper ignores them.
pub const INJECTOR_PREFIX: &str = "TANDEM_INJECTOR_";

/// The presets whose sidecars tandem waits for and quits (`--mesh`).
pub const MESH: &str = "TANDEM_MESH";
/// Readiness checks tandem waits for, comma-separated (`--ready`).
pub const READY_URLS: &str = "TANDEM_READY_URLS";
/// The exit statuses after which the kubelet runs the container again in the
/// same Pod, so tandem stops nothing (`--keep-on-exit`; [`crate::exit_codes`]).
pub const KEEP_ON_EXIT: &str = "TANDEM_KEEP_ON_EXIT";
/// scuttle's switch that keeps the sidecars after a failure (`--keep-on-failure`,
/// the same as `TANDEM_KEEP_ON_EXIT=1-255`): a container that sets it chose for
/// itself, so the injector writes no [`KEEP_ON_EXIT`] there.
pub const KEEP_ON_FAILURE: &str = "NEVER_KILL_ISTIO_ON_FAILURE";
/// The variables by which a container chose its own restart statuses: the
/// injector (webhook and policy alike) writes no [`KEEP_ON_EXIT`] where one is set.
pub const OWN_KEEP: [&str; 2] = [KEEP_ON_EXIT, KEEP_ON_FAILURE];
/// Every job container of the Pod, comma-separated (SPEC §9).
pub const JOB_CONTAINERS: &str = "TANDEM_JOB_CONTAINERS";
/// This job container's own name among them (SPEC §9).
pub const CONTAINER_NAME: &str = "TANDEM_CONTAINER_NAME";
/// The directory the job containers share to say who has finished (SPEC §9).
pub const SHARED_DIR: &str = "TANDEM_SHARED_DIR";

/// The three a Pod with several job containers needs (SPEC §9): the injector
/// sets all or none of them.
pub const SEVERAL: [&str; 3] = [JOB_CONTAINERS, CONTAINER_NAME, SHARED_DIR];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_tandems_and_none_the_injectors() {
        for name in [MESH, READY_URLS, KEEP_ON_EXIT].iter().chain(&SEVERAL) {
            assert!(name.starts_with(PREFIX), "{name}");
            assert!(!name.starts_with(INJECTOR_PREFIX), "{name}");
        }
    }
}
