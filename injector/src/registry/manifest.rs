//! What a registry serves, read: a manifest (OCI or Docker v2) names the image's
//! configuration blob; an index (OCI index or Docker manifest list) names one
//! manifest per platform; the configuration holds `Entrypoint` and `Cmd`. Any
//! other shape is an error that says what was found.

use serde_json::Value;

use super::reference::check_digest;
use crate::string_list;

/// The media types asked for, in the `Accept` header of a manifest request.
pub const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json";

const INDEX_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
const MANIFEST_TYPES: [&str; 2] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// A manifest or an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// An index: the manifests it lists.
    Index(Vec<Entry>),
    /// A manifest: the digest of its configuration blob.
    Manifest {
        /// The configuration blob's digest.
        config: String,
    },
}

/// One manifest an index lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its digest.
    pub digest: String,
    /// `os/architecture[/variant]`, or empty when it names no platform.
    pub platform: String,
}

/// What the container runtime takes from the image configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageConfig {
    /// `Entrypoint`, empty when unset.
    pub entrypoint: Vec<String>,
    /// `Cmd`, empty when unset.
    pub cmd: Vec<String>,
}

/// Reads a manifest or index; `content_type` is the response's header, used
/// when the body does not say its own media type.
pub fn document(content_type: Option<&str>, body: &[u8]) -> Result<Document, String> {
    let json: Value =
        serde_json::from_slice(body).map_err(|e| format!("the manifest is not JSON: {e}"))?;
    let header = content_type.map(|t| t.split(';').next().unwrap_or(t).trim());
    let media = json["mediaType"].as_str().or(header).unwrap_or("");
    let is_index =
        INDEX_TYPES.contains(&media) || (media.is_empty() && json["manifests"].is_array());
    let is_manifest =
        MANIFEST_TYPES.contains(&media) || (media.is_empty() && json["config"].is_object());
    if json["schemaVersion"] != 2 {
        return Err(format!(
            "the manifest has schemaVersion {} (media type {media:?}); only schema 2 is read",
            json["schemaVersion"]
        ));
    }
    if is_index {
        let list = json["manifests"]
            .as_array()
            .ok_or("the index has no manifests list")?;
        let mut entries = Vec::with_capacity(list.len());
        for (i, m) in list.iter().enumerate() {
            let digest = m["digest"]
                .as_str()
                .ok_or_else(|| format!("the index's manifests[{i}] has no digest"))?;
            check_digest(digest).map_err(|e| format!("the index's manifests[{i}]: {e}"))?;
            let p = &m["platform"];
            let platform = match (p["os"].as_str(), p["architecture"].as_str()) {
                (Some(os), Some(arch)) => match p["variant"].as_str() {
                    Some(v) => format!("{os}/{arch}/{v}"),
                    None => format!("{os}/{arch}"),
                },
                _ => String::new(),
            };
            entries.push(Entry {
                digest: digest.to_string(),
                platform,
            });
        }
        Ok(Document::Index(entries))
    } else if is_manifest {
        let config = json["config"]["digest"]
            .as_str()
            .ok_or("the manifest has no config.digest")?;
        check_digest(config).map_err(|e| format!("the manifest's config: {e}"))?;
        Ok(Document::Manifest {
            config: config.to_string(),
        })
    } else {
        Err(format!(
            "the registry answered media type {media:?}, not an image manifest or index"
        ))
    }
}

/// Reads an image configuration blob's `config.Entrypoint` and `config.Cmd`.
pub fn config(body: &[u8]) -> Result<ImageConfig, String> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the image configuration is not JSON: {e}"))?;
    if !json.is_object() {
        return Err("the image configuration is not a JSON object".into());
    }
    let words = |name: &str| {
        string_list::owned(&json["config"][name], || {
            format!("the image configuration's {name}")
        })
    };
    Ok(ImageConfig {
        entrypoint: words("Entrypoint")?,
        cmd: words("Cmd")?,
    })
}

/// The platforms whose images the injector reads from an index: the two a
/// cluster's nodes run. Both present must agree.
pub const PLATFORMS: [&str; 2] = ["linux/amd64", "linux/arm64"];

/// The index entries for [`PLATFORMS`] (`linux/arm64/v8` counts as
/// `linux/arm64`); at most one each, the first listed.
pub fn pick(entries: &[Entry]) -> Vec<&Entry> {
    PLATFORMS
        .iter()
        .filter_map(|want| {
            entries.iter().find(|e| {
                e.platform == *want || e.platform == format!("{want}/v8") && want.ends_with("arm64")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn manifests_of_both_kinds_name_their_config() {
        for media in MANIFEST_TYPES {
            let body = format!(
                r#"{{"schemaVersion":2,"mediaType":"{media}","config":{{"digest":"{A}","size":1}},"layers":[]}}"#
            );
            assert_eq!(
                document(None, body.as_bytes()).unwrap(),
                Document::Manifest { config: A.into() }
            );
        }
        // No mediaType in the body (older OCI manifests): the header says it.
        let body = format!(r#"{{"schemaVersion":2,"config":{{"digest":"{A}"}}}}"#);
        let header = Some("application/vnd.oci.image.manifest.v1+json; charset=utf-8");
        assert_eq!(
            document(header, body.as_bytes()).unwrap(),
            Document::Manifest { config: A.into() }
        );
    }

    #[test]
    fn an_index_lists_platforms_and_the_two_that_matter_are_picked() {
        let body = format!(
            r#"{{"schemaVersion":2,"mediaType":"{}","manifests":[
            {{"digest":"{A}","platform":{{"os":"linux","architecture":"arm64","variant":"v8"}}}},
            {{"digest":"{B}","platform":{{"os":"linux","architecture":"amd64"}}}},
            {{"digest":"{A}","platform":{{"os":"windows","architecture":"amd64"}}}},
            {{"digest":"{B}"}}]}}"#,
            INDEX_TYPES[1]
        );
        let Document::Index(entries) = document(None, body.as_bytes()).unwrap() else {
            panic!("not an index")
        };
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[3].platform, "");
        let picked: Vec<&str> = pick(&entries).iter().map(|e| e.digest.as_str()).collect();
        assert_eq!(picked, [B, A]);
        assert!(pick(&entries[2..]).is_empty());
    }

    #[test]
    fn configs_give_entrypoint_and_cmd_empty_when_unset() {
        let c = config(br#"{"config":{"Entrypoint":["/app","-v"],"Cmd":["run"]}}"#).unwrap();
        assert_eq!(c.entrypoint, ["/app", "-v"]);
        assert_eq!(c.cmd, ["run"]);
        let c = config(br#"{"config":{"Entrypoint":null,"Cmd":["sh"]}}"#).unwrap();
        assert!(c.entrypoint.is_empty());
        assert_eq!(
            config(br#"{"architecture":"amd64"}"#).unwrap(),
            ImageConfig::default()
        );
    }

    #[test]
    fn malformed_documents_say_what_is_wrong() {
        let cases: &[(&[u8], &str)] = &[
            (b"<html>", "not JSON"),
            (br#"{"schemaVersion":1,"fsLayers":[]}"#, "schemaVersion 1"),
            (
                br#"{"schemaVersion":2,"mediaType":"text/plain"}"#,
                "text/plain",
            ),
            (
                br#"{"schemaVersion":2,"manifests":[{"digest":"sha256:x"}]}"#,
                "bad digest",
            ),
            (br#"{"schemaVersion":2,"manifests":[{}]}"#, "no digest"),
            (br#"{"schemaVersion":2,"config":{}}"#, "no config.digest"),
        ];
        for (body, why) in cases {
            let err = document(None, body).unwrap_err();
            assert!(
                err.contains(why),
                "{}: {err}",
                String::from_utf8_lossy(body)
            );
        }
        for (body, why) in [
            (&b"[]"[..], "not a JSON object"),
            (br#"{"config":{"Cmd":"sh -c x"}}"#, "Cmd is not a list"),
            (br#"{"config":{"Entrypoint":[1]}}"#, "not a list of strings"),
        ] {
            let err = config(body).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }
}
