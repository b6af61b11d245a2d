//! The Pod layout both the injector's webhook and its policy write and the
//! wrapper runs in, and the keys a user or a tool reads: the opt-in label, the
//! annotations, the names of the init container and volumes, the directories
//! the job containers see, where the tandem image keeps its binary (SPEC §10).

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
/// Where the job containers see the binary's volume (not [`IMAGE_BINARY`],
/// which is a file of the same name in the tandem image).
pub const BIN_DIR: &str = "/tandem";
/// The binary in the job containers, in [`BIN_DIR`]: the head of every changed
/// command.
pub const TANDEM: &str = "/tandem/tandem";
/// The binary in the tandem image (its Dockerfile's `COPY`): what the init
/// container runs, and what [`TANDEM`] is when the image itself is the volume.
pub const IMAGE_BINARY: &str = "/tandem";
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
/// The Pod annotation that chooses its route (SPEC §12): `native` or `wrap`,
/// over the injector's `--route`.
pub const ROUTE_ANNOTATION: &str = "tandem.dev/route";
/// The annotation every reviewed Job Pod gets: what the review did, one line.
pub const INJECTION_ANNOTATION: &str = "tandem.dev/injection";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_is_in_its_directory_under_the_images_name() {
        let name = IMAGE_BINARY.trim_start_matches('/');
        assert_eq!(TANDEM, format!("{BIN_DIR}/{name}"));
        assert_ne!(INSTALL_DIR, BIN_DIR);
        assert!(ENTRYPOINT_ANNOTATION.starts_with(LABEL.split('/').next().unwrap_or("")));
    }
}
