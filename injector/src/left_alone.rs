//! The containers the injector leaves alone because whoever creates them also
//! stops them, after the job containers have ended: neither wrapped, nor a job
//! container (§9), nor a sidecar tandem waits for or quits (SPEC §10). Waiting
//! for one would hang the Pod, since its creator stops it only once the job
//! containers have terminated.
//!
//! The one home of that list: the webhook (`inject`), the policy's CEL
//! (`policy::cel`) and the audit (`audit::stuck`) read it here. It lives in the
//! injector, not beside the sidecar table in `tandem-common`: the wrapper never
//! meets these names, as no variable the injector writes holds them. A new one
//! is one row here, plus its tests.

/// A container that its creator stops itself.
#[derive(Debug, PartialEq, Eq)]
pub struct LeftAlone {
    /// Its name in the Pod, as its creator gives it.
    pub container: &'static str,
    /// Why it is left alone, in a few words, for the annotation.
    pub why: &'static str,
}

/// Every container left alone.
pub const LEFT_ALONE: &[LeftAlone] = &[
    // Airflow's KubernetesPodOperator with do_xcom_push: it waits for `base` to
    // terminate, reads /airflow/xcom/return.json through this container, then
    // sends its shell SIGINT.
    LeftAlone {
        container: "airflow-xcom-sidecar",
        why: "Airflow stops it after reading the XCom",
    },
];

/// The row of the container named `container`, if it is left alone.
pub fn by_container(container: &str) -> Option<&'static LeftAlone> {
    LEFT_ALONE.iter().find(|l| l.container == container)
}

/// The names of the containers left alone, in table order.
pub fn names() -> impl Iterator<Item = &'static str> {
    LEFT_ALONE.iter().map(|l| l.container)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn airflows_xcom_container_is_left_alone_and_no_sidecar_is() {
        assert!(by_container("airflow-xcom-sidecar").is_some());
        assert_eq!(by_container("base"), None);
        for name in names() {
            assert_eq!(crate::sidecars::by_container(name), None, "{name}");
            assert!(!crate::inject::is_job(name), "{name}");
        }
    }
}
