//! The injector's options: each flag with its variable, its value's name and
//! its help line, in the order `--help` lists them and `parse` reads them.

/// One option: its flag, its variable, its value's name and its help line.
pub(super) struct Opt {
    pub flag: &'static str,
    pub var: &'static str,
    pub value: &'static str,
    pub help: &'static str,
}

pub(super) const LISTEN: Opt = Opt {
    flag: "--listen",
    var: "TANDEM_INJECTOR_LISTEN",
    value: "HOST:PORT",
    help: "address to serve HTTPS on, an IP and a port (default 0.0.0.0:8443)",
};
pub(super) const CERT: Opt = Opt {
    flag: "--tls-cert",
    var: "TANDEM_INJECTOR_TLS_CERT",
    value: "PEM",
    help: "certificate chain file, leaf first (reloaded when it changes)",
};
pub(super) const KEY: Opt = Opt {
    flag: "--tls-key",
    var: "TANDEM_INJECTOR_TLS_KEY",
    value: "PEM",
    help: "its private key file (reloaded when it changes)",
};
pub(super) const IMAGE: Opt = Opt {
    flag: "--image",
    var: "TANDEM_INJECTOR_IMAGE",
    value: "IMAGE",
    help: "the tandem image (the init container's, or the image volume)",
};
pub(super) const INSTALL: Opt = Opt {
    flag: "--install",
    var: "TANDEM_INJECTOR_INSTALL",
    value: "MODE",
    help: "emptydir (an init container copies tandem; default) or image-volume (1.35+)",
};
pub(super) const DRAIN: Opt = Opt {
    flag: "--drain",
    var: "TANDEM_INJECTOR_DRAIN",
    value: "DUR",
    help: "on SIGTERM, keep answering reviews this long, /healthz 503 (default 10s)",
};
pub(super) const REGISTRY_AUTH: Opt = Opt {
    flag: "--registry-auth",
    var: "TANDEM_INJECTOR_REGISTRY_AUTH",
    value: "FILE",
    help: "Docker config.json with logins for the registries of job images",
};
pub(super) const REGISTRY_CA: Opt = Opt {
    flag: "--registry-ca",
    var: "TANDEM_INJECTOR_REGISTRY_CA",
    value: "PEM",
    help: "extra CA certificates for those registries",
};
pub(super) const REGISTRY_ALLOW: Opt = Opt {
    flag: "--registry-allow",
    var: "TANDEM_INJECTOR_REGISTRY_ALLOW",
    value: "HOST[:PORT],…",
    help: "the registries that may be looked up (*.example.com: the names below); default any",
};
pub(super) const OPTIONS: [&Opt; 9] = [
    &LISTEN,
    &CERT,
    &KEY,
    &IMAGE,
    &INSTALL,
    &DRAIN,
    &REGISTRY_AUTH,
    &REGISTRY_CA,
    &REGISTRY_ALLOW,
];
/// The options of `policy`, at their places in `OPTIONS`.
pub(super) const POLICY_OPTIONS: [usize; 2] = [3, 4];
