//! Every option of the injector, once: its flag, its variable, its value's
//! name, its `--help` line, the commands that take it and the field of
//! [`Given`] it fills. `parse` reads by flag, `--help` prints in this order,
//! and a command refuses the rows that do not name it.

use std::ffi::OsString;

/// What the command line asks the injector to do (its first free word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// No word: serve the webhook.
    Serve,
    /// `policy`: print the admission policies.
    Policy,
    /// `webhook`: print the webhook's configuration.
    Webhook,
    /// `audit [FILE|-]`: read a List of Pods, print what injection would do.
    Audit,
}

impl Command {
    /// The commands named by a word, with that word.
    pub const NAMED: [(&'static str, Command); 3] = [
        ("policy", Command::Policy),
        ("webhook", Command::Webhook),
        ("audit", Command::Audit),
    ];

    /// Whether it takes one free word after its own (`audit`'s FILE).
    pub fn takes_file(self) -> bool {
        self == Command::Audit
    }

    /// Its word on the command line, for the error lines.
    pub fn word(self) -> &'static str {
        match self {
            Command::Serve => "the server",
            Command::Policy => "policy",
            Command::Webhook => "webhook",
            Command::Audit => "audit",
        }
    }
}

/// One setting as given: where it came from (the flag or the variable, for
/// the error lines) and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// `--listen` or `TANDEM_INJECTOR_LISTEN`.
    pub from: String,
    /// What followed it.
    pub value: OsString,
}

/// The settings as given, one named field per option; `None` when given
/// neither way (or not a setting of the command). Each is named by the
/// `field` of its row in [`OPTIONS`].
#[derive(Debug, Default)]
pub struct Given {
    pub listen: Option<Setting>,
    pub tls_cert: Option<Setting>,
    pub tls_key: Option<Setting>,
    pub image: Option<Setting>,
    pub install: Option<Setting>,
    pub drain: Option<Setting>,
    pub registry_auth: Option<Setting>,
    pub registry_ca: Option<Setting>,
    pub registry_allow: Option<Setting>,
    pub output: Option<Setting>,
    pub failure_policy: Option<Setting>,
    pub route: Option<Setting>,
    /// `audit`'s FILE: the free word after the command's.
    pub input: Option<OsString>,
}

/// One option: its flag, its variable, its value's name, its help line, the
/// commands that take it, and its field.
pub struct Opt {
    /// `--listen`.
    pub flag: &'static str,
    /// Its variable: `TANDEM_INJECTOR_LISTEN`.
    pub var: &'static str,
    /// Its value's name in `--help`: `HOST:PORT`.
    pub value: &'static str,
    /// Its `--help` text; the variable follows it in brackets.
    pub help: &'static str,
    /// The commands that take it; any other refuses it, and does not read
    /// its variable.
    pub commands: &'static [Command],
    /// Where its value goes.
    pub field: fn(&mut Given) -> &mut Option<Setting>,
}

const SERVE: &[Command] = &[Command::Serve];

pub(super) const LISTEN: Opt = Opt {
    flag: "--listen",
    var: "TANDEM_INJECTOR_LISTEN",
    value: "HOST:PORT",
    help: "address to serve HTTPS on, an IP and a port (default 0.0.0.0:8443)",
    commands: SERVE,
    field: |g| &mut g.listen,
};
pub(super) const CERT: Opt = Opt {
    flag: "--tls-cert",
    var: "TANDEM_INJECTOR_TLS_CERT",
    value: "PEM",
    help: "certificate chain file, leaf first (reloaded when it changes)",
    commands: SERVE,
    field: |g| &mut g.tls_cert,
};
pub(super) const KEY: Opt = Opt {
    flag: "--tls-key",
    var: "TANDEM_INJECTOR_TLS_KEY",
    value: "PEM",
    help: "its private key file (reloaded when it changes)",
    commands: SERVE,
    field: |g| &mut g.tls_key,
};
pub(super) const IMAGE: Opt = Opt {
    flag: "--image",
    var: "TANDEM_INJECTOR_IMAGE",
    value: "IMAGE",
    help: "the tandem image (the init container's, or the image volume)",
    commands: &[Command::Serve, Command::Policy],
    field: |g| &mut g.image,
};
pub(super) const INSTALL: Opt = Opt {
    flag: "--install",
    var: "TANDEM_INJECTOR_INSTALL",
    value: "MODE",
    help: "emptydir (an init container copies tandem; default) or image-volume (1.35+)",
    commands: &[Command::Serve, Command::Policy, Command::Webhook],
    field: |g| &mut g.install,
};
pub(super) const DRAIN: Opt = Opt {
    flag: "--drain",
    var: "TANDEM_INJECTOR_DRAIN",
    value: "DUR",
    help: "on SIGTERM, keep answering reviews this long, /healthz 503 (default 10s)",
    commands: SERVE,
    field: |g| &mut g.drain,
};
pub(super) const REGISTRY_AUTH: Opt = Opt {
    flag: "--registry-auth",
    var: "TANDEM_INJECTOR_REGISTRY_AUTH",
    value: "FILE",
    help: "Docker config.json with logins for the registries of job images",
    commands: SERVE,
    field: |g| &mut g.registry_auth,
};
pub(super) const REGISTRY_CA: Opt = Opt {
    flag: "--registry-ca",
    var: "TANDEM_INJECTOR_REGISTRY_CA",
    value: "PEM",
    help: "extra CA certificates for those registries",
    commands: SERVE,
    field: |g| &mut g.registry_ca,
};
pub(super) const REGISTRY_ALLOW: Opt = Opt {
    flag: "--registry-allow",
    var: "TANDEM_INJECTOR_REGISTRY_ALLOW",
    value: "HOST[:PORT],…",
    help: "the registries that may be looked up (*.example.com: the names below it; \
           default any); loopback and link-local ones only when named",
    commands: SERVE,
    field: |g| &mut g.registry_allow,
};
pub(super) const OUTPUT: Opt = Opt {
    flag: "--output",
    var: "TANDEM_INJECTOR_AUDIT_OUTPUT",
    value: "FORMAT",
    help: "audit's report: table (80 columns; default) or json",
    commands: &[Command::Audit],
    field: |g| &mut g.output,
};
pub(super) const FAILURE_POLICY: Opt = Opt {
    flag: "--failure-policy",
    var: "TANDEM_INJECTOR_FAILURE_POLICY",
    value: "POLICY",
    help: "webhook's failurePolicy: Fail (no opted-in Pod while no replica answers; \
           default) or Ignore (such Pods created without tandem)",
    commands: &[Command::Webhook],
    field: |g| &mut g.failure_policy,
};
pub(super) const ROUTE: Opt = Opt {
    flag: "--route",
    var: "TANDEM_INJECTOR_ROUTE",
    value: "ROUTE",
    help: "wrap (tandem around the job containers; default) or native (the sidecars \
           moved to native sidecars, kubelets 1.29+); a Pod's tandem.dev/route wins",
    commands: &[Command::Serve, Command::Policy, Command::Audit],
    field: |g| &mut g.route,
};
/// Every option, in the order `--help` lists them.
pub(super) const OPTIONS: [&Opt; 12] = [
    &LISTEN,
    &CERT,
    &KEY,
    &IMAGE,
    &INSTALL,
    &ROUTE,
    &DRAIN,
    &REGISTRY_AUTH,
    &REGISTRY_CA,
    &REGISTRY_ALLOW,
    &OUTPUT,
    &FAILURE_POLICY,
];
