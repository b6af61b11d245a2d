//! Where the injector may connect (SPEC §10 "Where lookups may go"), against
//! real listeners on loopback that record every connection: a loopback
//! registry is never contacted unless `--registry-allow` names it, whether
//! the image names its address or a name that resolves to it; a redirect to a
//! refused address is not followed; credentials never go to the host a
//! registry redirects to; no proxy from the environment is used; at most
//! `MAX_LOOKUPS` lookups run at once, and a lookup is turned away `busy` only
//! while all of them are in flight. (The real
//! `docker-registry` once listed: `registry.rs`.)

mod support;

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use support::listener::{Asked, Counter, Holder, Https, Reply, most_open};
use support::pods::{container, job_pod, review};
use support::{INJECTOR, Injector, Pki, scratch};
use tandem_injector::registry::{
    Allow, CAPACITY, Client, Credentials, Failure, ImageConfig, MAX_LOOKUPS, Reference, Registry,
};

/// The injector with `TANDEM_INJECTOR_REGISTRY_ALLOW` = `allow` (unset if
/// empty), and these variables.
fn injector_env(pki: &Pki, dir: &Path, allow: &str, vars: &[(&str, &str)]) -> Injector {
    let (cert, key) = pki.issue(dir, "injector");
    let mut all = vec![("TANDEM_INJECTOR_REGISTRY_ALLOW", allow)];
    all.extend_from_slice(vars);
    Injector::start_bin_env(Path::new(INJECTOR), &cert, &key, &all)
}

fn injector(pki: &Pki, dir: &Path, allow: &str) -> Injector {
    injector_env(pki, dir, allow, &[])
}

/// The `tandem.dev/injection` annotation the review of `pod` sets.
fn annotation(pki: &Pki, injector: &Injector, pod: &Value) -> String {
    let answer = pki.client().review(injector.addr, &review("u", pod)).json();
    let patch = answer["response"]["patch"].as_str().unwrap_or_default();
    let ops = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .unwrap();
    let ops: Vec<Value> = serde_json::from_slice(&ops).unwrap();
    let op = ops
        .iter()
        .find(|op| {
            op["path"]
                .as_str()
                .unwrap()
                .starts_with("/metadata/annotations")
        })
        .unwrap_or_else(|| panic!("no annotation in {ops:?}"));
    op["value"]
        .as_str()
        .or(op["value"]["tandem.dev/injection"].as_str())
        .unwrap()
        .to_string()
}

fn pod_of(images: &[String]) -> Value {
    let containers = images
        .iter()
        .enumerate()
        .map(|(i, image)| container(&format!("c{i}"), image, None, &[]))
        .collect();
    job_pod("reach", containers, vec![])
}

#[test]
fn a_loopback_registry_is_never_contacted_unless_an_entry_names_it() {
    let dir = scratch("reach-loopback");
    let pki = Pki::new();
    let counter = Counter::start("127.0.0.1");
    let port = counter.addr.port();
    let images: Vec<String> = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("127.0.0.2:{port}"),
    ]
    .iter()
    .map(|host| format!("{host}/app:1"))
    .collect();
    let pod = pod_of(&images);
    let other_port = format!("127.0.0.1:{},registry.example.com,*.localhost", port + 1);
    for allow in ["", other_port.as_str()] {
        let injector = injector(&pki, &dir, allow);
        let line = annotation(&pki, &injector, &pod);
        assert_eq!(
            line.matches("was not read: registry not allowed (list the registry in the injector's --registry-allow, or set the entrypoint annotation)").count(),
            images.len(),
            "{allow:?}: {line}"
        );
        // What the Pod's readers see names no address kind, no system error.
        for detail in ["loopback", "os error", "resolves", "is at"] {
            assert!(!line.contains(detail), "{detail}: {line}");
        }
        let log = injector.wait_log(&format!("registry lookup of localhost:{port}/app:1 failed"));
        assert!(log.contains("registry not allowed"), "{log}");
        assert_eq!(counter.count(), 0, "{allow:?}: contacted");
        let metrics = pki
            .client()
            .connect(injector.addr)
            .send("GET", "/metrics", b"")
            .unwrap();
        let text = metrics.text();
        let skipped = "tandem_injector_containers_skipped_total{reason=\"registry_not_allowed\"} 4";
        let looked = "tandem_injector_registry_lookups_total{result=\"not_allowed\"} 4";
        assert!(text.contains(skipped) && text.contains(looked), "{text}");
    }
    // Named by address (any port) or by name with its port: contacted, the
    // listener closing at once (a failure of another kind), directly: a proxy
    // from the environment would connect out of the address rule's sight.
    let proxy = Counter::start("127.0.0.1");
    let proxy_url = format!("http://{}", proxy.addr);
    let proxies =
        ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "HTTP_PROXY"].map(|v| (v, proxy_url.as_str()));
    for (allow, image) in [
        ("127.0.0.1".to_string(), &images[0]),
        (format!("localhost:{port}"), &images[1]),
    ] {
        let before = counter.count();
        let injector = injector_env(&pki, &dir, &allow, &proxies);
        let line = annotation(&pki, &injector, &pod_of(std::slice::from_ref(image)));
        assert!(!line.contains("not allowed"), "{allow}: {line}");
        assert!(counter.count() > before, "{allow}: not contacted: {line}");
        assert_eq!(proxy.count(), 0, "{allow}: through the proxy");
    }
}

/// A registry at 127.0.0.1 serving `app:1` (entrypoint `/ep`) behind a basic
/// login, its blob redirected to `blob_at` (a URL) or served itself.
fn registry(pki: &Pki, dir: &Path, blob_at: Option<String>) -> Https {
    let config = br#"{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/ep"]}}"#;
    let digest = sha256(config);
    let manifest = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest, "size": config.len()},
        "layers": []})
    .to_string();
    let login = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("robot:s3cret")
    );
    let blob = format!("/v2/app/blobs/{digest}");
    let route = move |asked: &Asked| -> Reply {
        let typed = |body: &[u8]| {
            let kind = "application/vnd.oci.image.manifest.v1+json".to_string();
            (200, vec![("Content-Type".into(), kind)], body.to_vec())
        };
        if asked.authorization.as_deref() != Some(login.as_str()) {
            let challenge = ("WWW-Authenticate".into(), "Basic realm=\"r\"".into());
            return (401, vec![challenge], Vec::new());
        }
        match (asked.target.as_str(), &blob_at) {
            ("/v2/app/manifests/1", _) => typed(manifest.as_bytes()),
            (target, Some(to)) if target == blob => {
                (307, vec![("Location".into(), to.clone())], Vec::new())
            }
            (target, None) if target == blob => typed(config),
            _ => (404, Vec::new(), Vec::new()),
        }
    };
    Https::start(pki, dir, route)
}

fn sha256(body: &[u8]) -> String {
    let sum = ring::digest::digest(&ring::digest::SHA256, body);
    let hex: String = sum.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A client trusting `pki`, with the login for `host`, allowed `allow`.
fn client(pki: &Pki, dir: &Path, host: &str, allow: &str) -> Client {
    let auth = json!({"auths": {host: {"username": "robot", "password": "s3cret"}}});
    let creds = Credentials::parse(auth.to_string().as_bytes()).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    let roots = tandem_injector::registry::load_ca(&ca).unwrap();
    Client::new(creds, &roots, Allow::parse(allow).unwrap())
}

fn lookup(client: &Client, image: &str) -> Result<ImageConfig, Failure> {
    let deadline = Instant::now() + Duration::from_secs(10);
    client.image_config(&Reference::parse(image).unwrap(), deadline)
}

#[test]
fn credentials_never_follow_a_redirect_to_another_host() {
    let dir = scratch("reach-credentials");
    let pki = Pki::new();
    let storage = Https::start(&pki, &dir, |_: &Asked| {
        let config = br#"{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/ep"]}}"#;
        (200, Vec::new(), config.to_vec())
    });
    let sub = dir.join("registry");
    std::fs::create_dir_all(&sub).unwrap();
    let to = format!("https://{}/storage/blob?signed=1", storage.host);
    let registry = registry(&pki, &sub, Some(to));
    let allow = format!("{},{}", registry.host, storage.host);
    let client = client(&pki, &dir, &registry.host, &allow);
    let found = lookup(&client, &format!("{}/app:1", registry.host)).unwrap();
    assert_eq!(found.entrypoint, vec!["/ep".to_string()]);
    let asked = registry.asked();
    let with_login = asked.iter().filter(|a| a.authorization.is_some()).count();
    assert!(
        with_login >= 2,
        "manifest and blob asked with the login: {asked:?}"
    );
    let stored = storage.asked();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(stored[0].target.starts_with("/storage/blob"), "{stored:?}");
    assert_eq!(
        stored[0].authorization, None,
        "the login went to the storage"
    );
}

#[test]
fn a_redirect_to_a_refused_address_is_not_followed() {
    let dir = scratch("reach-redirect");
    let pki = Pki::new();
    let counter = Counter::start("127.0.0.1");
    let port = counter.addr.port();
    for (i, to) in [
        format!("https://localhost:{port}/blob"),
        format!("https://127.0.0.1:{port}/blob"),
        "https://169.254.169.254/latest/meta-data".to_string(),
        "https://[fe80::1]/x".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let sub = dir.join(format!("r{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        let registry = registry(&pki, &sub, Some(to.clone()));
        let client = client(&pki, &dir, &registry.host, &registry.host);
        let start = Instant::now();
        match lookup(&client, &format!("{}/app:1", registry.host)) {
            Err(Failure::NotAllowed(why)) => assert!(why.contains("is at"), "{to}: {why}"),
            other => panic!("{to}: {other:?}"),
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{to}");
        assert_eq!(counter.count(), 0, "{to}: contacted");
    }
}

/// At most `MAX_LOOKUPS` lookups run at once, a lookup finds no slot (`busy`)
/// only while every slot is held, and a waiting lookup takes the slot a
/// finished one frees. The fake registry holds each connection until the test
/// releases it, so the test, not the clock, decides when a slot frees; the
/// property is read from the order of its accepts and releases. Each lookup's
/// deadline is either far off (only a hang reaches it: the test releases the
/// lookup long before) or short (it must answer `busy`, every slot held
/// throughout). `Registry::lookup` is what every review calls; it logs each
/// failed lookup on stderr, which the test harness does not capture, so the
/// lookups run in a child of this test binary, whose output shows on failure.
#[test]
fn at_most_max_lookups_run_at_once_and_a_lookup_is_busy_only_while_every_slot_is_held() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            "lookups_against_a_registry_that_holds_them",
        ])
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[test]
#[ignore = "run by at_most_max_lookups_run_at_once_and_a_lookup_is_busy_only_while_every_slot_is_held"]
fn lookups_against_a_registry_that_holds_them() {
    let dir = scratch("reach-bound");
    let pki = Pki::new();
    let fake = Holder::start("127.0.0.1");
    let host = fake.addr.to_string();
    let registry = Arc::new(Registry::new(client(&pki, &dir, &host, &host), CAPACITY));
    let far = Duration::from_secs(60);
    let (answered, answers) = mpsc::channel();
    let look = |i: usize, within: Duration| {
        let (registry, answered) = (registry.clone(), answered.clone());
        let image = format!("{host}/app-{i}:1");
        thread::spawn(move || {
            let answer = registry.lookup(&image, Instant::now() + within).0;
            answered.send((i, answer)).unwrap();
        });
    };
    let next = || answers.recv_timeout(far).expect("a lookup answered");
    let events = |fake: &Holder| format!("{:?}", fake.events());

    // Three lookups for each slot at once, none due before the test releases it.
    let many = 3 * MAX_LOOKUPS;
    (0..many).for_each(|i| look(i, far));
    fake.wait_accepted(MAX_LOOKUPS, far);

    // Every slot held, nothing released: more lookups find none free, and
    // answer busy without contacting the registry.
    let short = (many..many + 4).collect::<Vec<_>>();
    for &i in &short {
        look(i, Duration::from_millis(100));
    }
    for _ in &short {
        let (i, answer) = next();
        assert!(
            short.contains(&i),
            "lookup {i} answered {answer:?} while held"
        );
        assert_eq!(answer, Err(Failure::Busy), "lookup {i}");
    }
    assert_eq!(fake.accepted(), MAX_LOOKUPS, "{}", events(&fake));

    // Each release frees one slot, which a waiting lookup takes: it connects.
    for freed in 1..=many - MAX_LOOKUPS {
        fake.release_oldest();
        let (i, answer) = next();
        assert!(i < many, "lookup {i}");
        assert!(
            !matches!(answer, Err(Failure::Busy | Failure::Timeout)),
            "lookup {i}, released: {answer:?}"
        );
        fake.wait_accepted(MAX_LOOKUPS + freed, far);
    }

    // No one waiting and one slot free: a new lookup is not busy, it connects.
    fake.release_oldest();
    let (i, answer) = next();
    assert!(
        !matches!(answer, Err(Failure::Busy | Failure::Timeout)),
        "lookup {i}, released: {answer:?}"
    );
    look(many + short.len(), far);
    fake.wait_accepted(many + 1, far);

    fake.release_all();
    let rest: Vec<_> = (0..MAX_LOOKUPS).map(|_| next()).collect();
    for (i, answer) in &rest {
        assert!(
            !matches!(answer, Err(Failure::Busy | Failure::Timeout)),
            "lookup {i}: {answer:?}"
        );
    }
    assert_eq!(
        most_open(&fake.events()),
        MAX_LOOKUPS,
        "connections open at once: {}",
        events(&fake)
    );
}
