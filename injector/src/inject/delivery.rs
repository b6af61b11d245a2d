//! How tandem's binary reaches the job containers (SPEC §10), for the webhook
//! and the policy alike: an init container that copies it into an `emptyDir`,
//! or the tandem image itself mounted as an `image` volume (Kubernetes 1.35+).
//! Either way the job containers see it at `/tandem/tandem`.

use serde_json::{Value, json};

use super::route::Route;
use crate::layout::{
    BIN_DIR, BIN_VOLUME, IMAGE_BINARY, INSTALL_CONTAINER, INSTALL_DIR, INSTALL_UID, SHARED_DIR,
    SHARED_VOLUME, TOKEN_DIR,
};

/// The route of the binary into the Pod (`--install`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// An init container from the tandem image copies the binary into an `emptyDir`.
    #[default]
    EmptyDir,
    /// The tandem image is the volume: its `/tandem` file is `/tandem/tandem`
    /// under the mount, nothing is copied and no init container runs.
    ImageVolume,
}

impl Mode {
    /// The values `--install` takes, as the user writes them.
    pub const NAMES: [&'static str; 2] = ["emptydir", "image-volume"];

    /// The mode named `name` (one of [`Mode::NAMES`]).
    pub fn from_name(name: &str) -> Option<Mode> {
        match name {
            "emptydir" => Some(Mode::EmptyDir),
            "image-volume" => Some(Mode::ImageVolume),
            _ => None,
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::EmptyDir => Self::NAMES[0],
            Mode::ImageVolume => Self::NAMES[1],
        }
    }
}

/// What the injection adds to a Pod: the tandem image, how its binary gets in,
/// and the route a Pod takes unless its annotation names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// The tandem image (`--image`).
    pub image: String,
    /// How the binary gets in (`--install`).
    pub mode: Mode,
    /// The Pods' route (`--route`, SPEC §12).
    pub route: Route,
}

impl Install {
    /// The Pod volume that carries the binary, named [`BIN_VOLUME`]. The image
    /// volume's `pullPolicy` is left to the API server's defaulting, which
    /// gives it the same rule as the init container's `imagePullPolicy`.
    pub fn volume(&self) -> Value {
        match self.mode {
            Mode::EmptyDir => json!({"name": BIN_VOLUME, "emptyDir": {"sizeLimit": "16Mi"}}),
            Mode::ImageVolume => json!({"name": BIN_VOLUME, "image": {"reference": self.image}}),
        }
    }

    /// The init container that copies the binary, when the route has one.
    pub fn init_container(&self) -> Option<Value> {
        match self.mode {
            Mode::EmptyDir => Some(install_container(&self.image)),
            Mode::ImageVolume => None,
        }
    }
}

/// The `emptyDir` where several job containers record who has finished (SPEC §9).
pub fn shared_volume() -> Value {
    json!({"name": SHARED_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}})
}

/// A wrapped container's mount of the binary's volume, read-only.
pub fn bin_mount() -> Value {
    json!({"name": BIN_VOLUME, "mountPath": BIN_DIR, "readOnly": true})
}

/// A wrapped container's mount of the shared volume (SPEC §9).
pub fn shared_mount() -> Value {
    json!({"name": SHARED_VOLUME, "mountPath": SHARED_DIR})
}

/// Whether `volume` is the binary's image volume: with no init container, it
/// is what marks a Pod already changed (an `emptyDir` of that name alone is
/// not ours: the init container marks those).
pub fn is_bin_image_volume(volume: &Value) -> bool {
    volume["name"] == BIN_VOLUME && volume["image"].is_object()
}

/// The init container that copies tandem into the binary's volume, shaped to
/// pass Pod Security "restricted" whatever the Pod's own settings.
fn install_container(image: &str) -> Value {
    json!({
        "name": INSTALL_CONTAINER,
        "image": image,
        "command": [IMAGE_BINARY, "--install-to", INSTALL_DIR],
        "volumeMounts": [
            {"name": BIN_VOLUME, "mountPath": INSTALL_DIR},
            {"name": BIN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": true},
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"memory": "16Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "runAsUser": INSTALL_UID,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_reads_back_as_its_mode_and_nothing_else_does() {
        for name in Mode::NAMES {
            assert_eq!(Mode::from_name(name).map(Mode::name), Some(name));
        }
        assert_eq!(Mode::from_name("image"), None);
        assert_eq!(Mode::default(), Mode::EmptyDir);
    }

    #[test]
    fn the_image_volume_route_has_the_image_as_volume_and_no_init_container() {
        let install = Install {
            image: "ghcr.io/x/tandem:1".into(),
            mode: Mode::ImageVolume,
            route: Route::Wrap,
        };
        let volume = install.volume();
        assert_eq!(volume["image"]["reference"], "ghcr.io/x/tandem:1");
        assert!(is_bin_image_volume(&volume));
        assert_eq!(install.init_container(), None);
        let copy = Install {
            mode: Mode::EmptyDir,
            ..install
        };
        assert!(!is_bin_image_volume(&copy.volume()));
        assert_eq!(
            copy.init_container().unwrap()["image"],
            "ghcr.io/x/tandem:1"
        );
    }
}
