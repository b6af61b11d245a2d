//! The Pod layout both the webhook and the policy write, and the keys a user
//! or a tool reads: the opt-in label, the annotations, the names of the init
//! container and volumes, the directories the job containers see. A leaf: it
//! imports nothing, so every module that writes a Pod can import it.

/// The opt-in label, on the Pod (its Job's template) or its namespace.
pub const LABEL: &str = "tandem.dev/inject";
/// The label's value that opts in.
pub const ENABLED: &str = "enabled";
/// The label's value that asks only for the annotation: what would be done.
pub const AUDIT: &str = "audit";
/// The init container that installs tandem; it (or the image volume) marks a changed Pod.
pub const INSTALL_CONTAINER: &str = "tandem-install";
/// The volume that carries the binary: an `emptyDir` the init container
/// fills, or the tandem image itself (`--install image-volume`).
pub const BIN_VOLUME: &str = "tandem-bin";
/// The `emptyDir` where several job containers record who has finished (§9).
pub const SHARED_VOLUME: &str = "tandem-shared";
/// Where the job containers see the binary's volume.
pub const BIN_DIR: &str = "/tandem";
/// The binary in the job containers: the head of every changed command.
pub const TANDEM: &str = "/tandem/tandem";
/// Where the job containers see the shared volume.
pub const SHARED_DIR: &str = "/tandem-shared";
/// Where the init container sees the binary's volume: not `/tandem`, which is
/// the binary itself in the tandem image.
pub const INSTALL_DIR: &str = "/opt/tandem";
/// Where the ServiceAccount admission plugin mounts the API token: a mount
/// there in the init container keeps the plugin from adding one after this
/// webhook (which would call it again) and gives it no token it never uses.
pub const TOKEN_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The user the init container runs as (distroless' `nonroot`), so it passes
/// `runAsNonRoot` and Pod Security "restricted" with the root-owned tandem image.
pub const INSTALL_UID: u32 = 65532;

/// The annotation's prefix that gives a container's entrypoint; the
/// container's name follows (`tandem.dev/entrypoint.NAME`).
pub const ENTRYPOINT_ANNOTATION: &str = "tandem.dev/entrypoint.";
/// The annotation every reviewed Job Pod gets: what the review did, one line.
pub const INJECTION_ANNOTATION: &str = "tandem.dev/injection";
