//! Job containers without `command` against a real registry on loopback
//! (SPEC §10.4): Debian's docker-registry with TLS from a test CA,
//! anonymous, htpasswd basic auth and a bearer challenge answered by a token
//! endpoint; images built FROM scratch with buildah (ENTRYPOINT, CMD, both,
//! neither, a multi-platform index, a mismatched one). First the lookup itself
//! (the library), then the injector binary answering reviews.

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

use support::pods::{container, job_pod, review, strings};
use support::registry::{Auth, Registry, TokenIssuer, World, world};
use support::{INJECTOR, Injector, scratch};
use tandem_injector::registry::{Allow, Client, Credentials, Failure, ImageConfig, Reference};

fn ca(world: &World) -> Vec<Vec<u8>> {
    CertificateDer::pem_file_iter(&world.ca_file)
        .unwrap()
        .map(|c| c.unwrap().as_ref().to_vec())
        .collect()
}

/// The allow-list that names `hosts` (loopback registries are reached only so).
fn listing(hosts: &[&str]) -> Allow {
    Allow::parse(&hosts.join(",")).unwrap()
}

fn lookup(client: &Client, image: &str, within: Duration) -> Result<ImageConfig, Failure> {
    client.image_config(&Reference::parse(image).unwrap(), Instant::now() + within)
}

fn config(entrypoint: &[&str], cmd: &[&str]) -> ImageConfig {
    ImageConfig {
        entrypoint: strings(entrypoint),
        cmd: strings(cmd),
    }
}

#[test]
fn every_kind_of_image_is_read_through_basic_auth_and_tls_from_the_given_ca() {
    let Some(world) = world() else { return };
    let registry = Registry::start(world, &scratch("registry-basic"), Auth::Basic);
    let creds = Credentials::load(&registry.auth_file()).unwrap();
    let h = &registry.host;
    let client = Client::new(creds, &ca(world), listing(&[h]));
    let second = Duration::from_secs(10);
    assert_eq!(
        lookup(&client, &format!("{h}/both:1"), second),
        Ok(config(&["/ep", "-e"], &["c1"]))
    );
    assert_eq!(
        lookup(&client, &format!("{h}/cmd-only:1"), second),
        Ok(config(&[], &["/cmd", "c1"]))
    );
    assert_eq!(
        lookup(&client, &format!("{h}/ep-only:1"), second),
        Ok(config(&["/ep"], &[]))
    );
    assert_eq!(
        lookup(&client, &format!("{h}/nothing:1"), second),
        Ok(config(&[], &[]))
    );
    assert_eq!(
        lookup(&client, &format!("{h}/multi:1"), second),
        Ok(config(&["/ep"], &["m"]))
    );
    let pinned = format!("{h}/both@{}", world.both_digest);
    assert_eq!(
        lookup(&client, &pinned, second),
        Ok(config(&["/ep", "-e"], &["c1"]))
    );
    match lookup(&client, &format!("{h}/mismatch:1"), second) {
        Err(Failure::Disagree(why)) => assert!(
            why.contains("linux/amd64 runs entrypoint [\"/amd\"]")
                && why.contains("linux/arm64/v8 entrypoint [\"/arm\"]"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        lookup(&client, &format!("{h}/missing:1"), second),
        Err(Failure::NotFound(_))
    ));
    assert!(matches!(
        lookup(&client, &format!("{h}/both:2"), second),
        Err(Failure::NotFound(_))
    ));

    // Without the login, or without the CA, the answer says so.
    let anonymous = Client::new(Credentials::default(), &ca(world), listing(&[h]));
    match lookup(&anonymous, &format!("{h}/both:1"), second) {
        Err(Failure::Denied(why)) => assert!(
            why.contains(&format!("--registry-auth has none for {h}")),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let creds = Credentials::load(&registry.auth_file()).unwrap();
    let untrusting = Client::new(creds, &[], listing(&[h]));
    match lookup(&untrusting, &format!("{h}/both:1"), second) {
        Err(Failure::Tls(why)) => assert!(why.contains("certificate"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bearer_challenge_is_answered_with_a_token_from_its_realm() {
    let Some(world) = world() else { return };
    let dir = scratch("registry-token");
    let issuer = TokenIssuer::start(world, &sub(&dir, "issuer"), false);
    let registry = Registry::start(world, &dir, Auth::Token(issuer.realm.clone()));
    let creds = Credentials::load(&registry.auth_file()).unwrap();
    let host = issuer
        .realm
        .trim_start_matches("https://")
        .trim_end_matches("/token");
    let allow = || listing(&[&registry.host, host]);
    let client = Client::new(creds, &ca(world), allow());
    let image = format!("{}/multi:1", registry.host);
    assert_eq!(
        lookup(&client, &image, Duration::from_secs(10)),
        Ok(config(&["/ep"], &["m"]))
    );
    let asked = issuer.asked.lock().unwrap().clone();
    // One token per lookup, asked with the login, for pull on the repository.
    assert_eq!(asked.len(), 1, "{asked:?}");
    let (target, login) = &asked[0];
    assert!(login, "{target}");
    assert!(target.starts_with("/token?"), "{target}");
    assert!(
        target.contains("scope=repository%3Amulti%3Apull")
            && target.contains("service=test-registry"),
        "{target}"
    );
    // Anonymous: the token is asked without a login, as for public images.
    let anonymous = Client::new(Credentials::default(), &ca(world), allow());
    assert_eq!(
        lookup(&anonymous, &image, Duration::from_secs(10)),
        Ok(config(&["/ep"], &["m"]))
    );
    assert!(!issuer.asked.lock().unwrap()[1].1);
}

#[test]
fn a_registry_or_token_endpoint_that_hangs_costs_the_deadline_and_no_more() {
    let Some(world) = world() else { return };
    let dir = scratch("registry-hang");
    let hanging = TokenIssuer::start(world, &sub(&dir, "issuer"), true);
    let registry = Registry::start(world, &dir, Auth::Token(hanging.realm.clone()));
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_host = silent.local_addr().unwrap().to_string();
    let realm_host = hanging
        .realm
        .trim_start_matches("https://")
        .trim_end_matches("/token");
    let allow = listing(&[&registry.host, &silent_host, realm_host]);
    let client = Client::new(Credentials::default(), &ca(world), allow);
    for image in [
        format!("{}/both:1", registry.host),
        format!("{}/both:1", silent.local_addr().unwrap()),
    ] {
        let start = Instant::now();
        assert_eq!(
            lookup(&client, &image, Duration::from_millis(500)),
            Err(Failure::Timeout),
            "{image}"
        );
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(450) && took < Duration::from_millis(1500),
            "{image}: {took:?}"
        );
    }
}

/// The injector with the registry's login and CA, given by their variables,
/// and `allow` (the loopback registries it may reach) as its allow-list.
fn injector(world: &World, dir: &Path, registry: Option<&Registry>, allow: &[&str]) -> Injector {
    let (cert, key) = world.pki.issue(dir, "injector");
    let ca = world.ca_file.to_str().unwrap().to_string();
    let auth = registry.map(|r| r.auth_file().to_str().unwrap().to_string());
    let allow = allow.join(",");
    let mut vars = vec![
        ("TANDEM_INJECTOR_REGISTRY_CA", ca.as_str()),
        ("TANDEM_INJECTOR_REGISTRY_ALLOW", allow.as_str()),
    ];
    if let Some(auth) = &auth {
        vars.push(("TANDEM_INJECTOR_REGISTRY_AUTH", auth.as_str()));
    }
    Injector::start_bin_env(Path::new(INJECTOR), &cert, &key, &vars)
}

/// The review of `pod`, its patch applied: the response and the Pod.
fn reviewed(world: &World, injector: &Injector, pod: &Value) -> (Value, Value) {
    let answer = world
        .pki
        .client()
        .review(injector.addr, &review("uid-r", pod))
        .json();
    let (out, response) = support::answered(pod, &answer);
    (response, out)
}

fn runs(c: &Value) -> Vec<String> {
    let mut all: Vec<String> = serde_json::from_value(c["command"].clone()).unwrap_or_default();
    all.extend(serde_json::from_value::<Vec<String>>(c["args"].clone()).unwrap_or_default());
    all
}

#[test]
fn the_injector_wraps_each_row_of_the_table_from_the_registry_and_says_why_not() {
    let Some(world) = world() else { return };
    let dir = scratch("registry-injector");
    let registry = Registry::start(world, &dir, Auth::Basic);
    let injector = injector(
        world,
        &sub(&dir, "injector"),
        Some(&registry),
        &[&registry.host],
    );
    let h = &registry.host;
    let image = |name: &str| format!("{h}/{name}");
    let rows: &[(&str, &str, &[&str], &[&str])] = &[
        ("a", "both:1", &[], &["/ep", "-e", "c1"]),
        ("b", "both:1", &["a1", "a2"], &["/ep", "-e", "a1", "a2"]),
        ("c", "cmd-only:1", &[], &["/cmd", "c1"]),
        ("d", "cmd-only:1", &["/x", "a1"], &["/x", "a1"]),
        ("e", "ep-only:1", &[], &["/ep"]),
        ("f", "multi:1", &["z"], &["/ep", "z"]),
    ];
    let mut containers: Vec<Value> = rows
        .iter()
        .map(|(n, i, args, _)| container(n, &image(i), None, args))
        .collect();
    containers.push(container("g", &image("mismatch:1"), None, &[]));
    containers.push(container("h", &image("missing:1"), None, &[]));
    containers.push(container(
        "i",
        "unreachable.invalid/app:1",
        None,
        &["--now"],
    ));
    let mut pod = job_pod("table", containers, vec![]);
    pod["metadata"]["annotations"]["tandem.dev/entrypoint.i"] = json!("[\"/app/run\"]");
    let (response, out) = reviewed(world, &injector, &pod);
    for (i, (name, _, _, expected)) in rows.iter().enumerate() {
        let c = &out["spec"]["containers"][i];
        let mut want = strings(&["/tandem/tandem", "--"]);
        want.extend(strings(expected));
        assert_eq!(runs(c), want, "{name}");
    }
    assert_eq!(
        runs(&out["spec"]["containers"][8]),
        strings(&["/tandem/tandem", "--", "/app/run", "--now"])
    );
    for i in [6, 7] {
        assert_eq!(out["spec"]["containers"][i], pod["spec"]["containers"][i]);
    }
    let warnings: Vec<String> = serde_json::from_value(response["warnings"].clone()).unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains(&format!("container \"g\" not wrapped: it has no command and its image {h}/mismatch:1 was not read: not guessed")), "{}", warnings[0]);
    assert!(
        warnings[0].contains("(set the entrypoint annotation, or command)"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("not found (check the image name"),
        "{}",
        warnings[1]
    );
    let log = injector.wait_log("i (entrypoint from its annotation");
    assert!(log.contains("a (entrypoint from the registry"), "{log}");

    // The same review again comes from the cache: the registry is not asked.
    drop(registry);
    let (_, again) = reviewed(world, &injector, &pod);
    assert_eq!(again, out);
}

#[test]
fn an_anonymous_registry_needs_no_login_and_a_denied_image_is_left_with_the_fix() {
    let Some(world) = world() else { return };
    let dir = scratch("registry-anonymous");
    let open = Registry::start(world, &sub(&dir, "open"), Auth::Anonymous);
    let closed = Registry::start(world, &sub(&dir, "closed"), Auth::Basic);
    let injector = injector(
        world,
        &sub(&dir, "injector"),
        None,
        &[&open.host, &closed.host],
    );
    let pod = job_pod(
        "anon",
        vec![
            container("job", &format!("{}/ep-only:1", open.host), None, &["x"]),
            container("private", &format!("{}/ep-only:1", closed.host), None, &[]),
        ],
        vec![],
    );
    let (response, out) = reviewed(world, &injector, &pod);
    assert_eq!(
        runs(&out["spec"]["containers"][0]),
        strings(&["/tandem/tandem", "--", "/ep", "x"])
    );
    assert_eq!(out["spec"]["containers"][1], pod["spec"]["containers"][1]);
    let warning = response["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("unauthorized") && warning.contains("--registry-auth"),
        "{warning}"
    );
}

#[test]
fn a_silent_registry_delays_the_review_by_the_lookup_deadline_at_most() {
    let Some(world) = world() else { return };
    let dir = scratch("registry-silent");
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = silent.local_addr().unwrap().to_string();
    let injector = injector(world, &dir, None, &[&host]);
    let pod = job_pod(
        "silent",
        vec![container("job", &format!("{host}/app:1"), None, &[])],
        vec![],
    );
    let start = Instant::now();
    let (response, out) = reviewed(world, &injector, &pod);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_eq!(out["spec"], pod["spec"]);
    let line = out["metadata"]["annotations"]["tandem.dev/injection"]
        .as_str()
        .unwrap();
    assert!(
        line.contains("was not read: timeout: the registry did not answer"),
        "{line}"
    );
    let warning = response["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("did not answer within the lookup's deadline"),
        "{warning}"
    );
}

/// A fresh directory under `dir` for one more process.
fn sub(dir: &Path, name: &str) -> PathBuf {
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).unwrap();
    sub
}
