//! A real OCI registry on loopback for the registry tests, the bench and
//! `make injector-pods`: Debian's `docker-registry` (the CNCF distribution
//! registry) serving TLS from the test CA, anonymous, with htpasswd basic auth
//! (`htpasswd -B`) or with its `silly` token auth, whose 401 is the bearer
//! challenge the big registries send (`Bearer realm,service,scope`) and whose
//! realm is [`TokenIssuer`], a small HTTPS token endpoint here. The images are
//! built FROM scratch with `buildah` (its own storage under target/, vfs) and
//! pushed once per test binary into one storage directory every registry of
//! the run serves.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::skips::skip;
use super::{Pki, scratch};

/// The basic-auth account of the registries and the token issuer.
pub const USER: &str = "robot";
/// Its password.
pub const PASSWORD: &str = "s3cret:pull";

/// One image of the test registry: repository:tag and what builds it.
pub struct Image {
    /// `repository:tag`.
    pub name: &'static str,
    /// `(arch, ENTRYPOINT, CMD)` per platform (JSON lists, `""` unset); two
    /// entries make an index of linux/amd64 and linux/arm64.
    pub platforms: &'static [(&'static str, &'static str, &'static str)],
}

/// The images every registry of the run serves.
pub const IMAGES: &[Image] = &[
    Image {
        name: "both:1",
        platforms: &[("amd64", r#"["/ep","-e"]"#, r#"["c1"]"#)],
    },
    Image {
        name: "cmd-only:1",
        platforms: &[("amd64", "", r#"["/cmd","c1"]"#)],
    },
    Image {
        name: "ep-only:1",
        platforms: &[("amd64", r#"["/ep"]"#, "")],
    },
    Image {
        name: "nothing:1",
        platforms: &[("amd64", "", "")],
    },
    Image {
        name: "multi:1",
        platforms: &[
            ("amd64", r#"["/ep"]"#, r#"["m"]"#),
            ("arm64", r#"["/ep"]"#, r#"["m"]"#),
        ],
    },
    Image {
        name: "mismatch:1",
        platforms: &[("amd64", r#"["/amd"]"#, ""), ("arm64", r#"["/arm"]"#, "")],
    },
];

/// What the tests share: the CA, its PEM file, the pushed storage and digests.
pub struct World {
    /// The CA of the registries' and token issuer's certificates.
    pub pki: Pki,
    /// The CA certificate as a PEM file (`--registry-ca`).
    pub ca_file: PathBuf,
    /// The registry storage the images were pushed to.
    storage: PathBuf,
    /// `both:1`'s manifest digest.
    pub both_digest: String,
}

/// The shared world, built once (the images pushed through an anonymous
/// registry that is stopped after); `None` after [`skip`] when a tool is missing.
pub fn world() -> Option<&'static World> {
    static WORLD: OnceLock<Result<World, String>> = OnceLock::new();
    let built = WORLD.get_or_init(|| {
        for tool in ["docker-registry", "buildah", "htpasswd"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !found {
                return Err(format!(
                    "{tool} is not installed (Debian: docker-registry buildah apache2-utils)"
                ));
            }
        }
        Ok(build_world())
    });
    match built {
        Ok(world) => Some(world),
        Err(why) => {
            skip("docker-registry, buildah and htpasswd", why);
            None
        }
    }
}

fn build_world() -> World {
    let dir = scratch("registry-world");
    let pki = Pki::new();
    let ca_file = dir.join("ca.pem");
    fs::write(&ca_file, pki.ca_pem()).unwrap();
    let certs = dir.join("certs");
    fs::create_dir_all(&certs).unwrap();
    fs::write(certs.join("ca.crt"), pki.ca_pem()).unwrap();
    let storage = dir.join("storage");
    let mut world = World {
        pki,
        ca_file,
        storage,
        both_digest: String::new(),
    };
    let registry = Registry::start(&world, &scratch("registry-push"), Auth::Anonymous);
    let buildah = Buildah {
        root: dir.join("buildah"),
    };
    for image in IMAGES {
        let mut local = Vec::new();
        for (i, (arch, entrypoint, cmd)) in image.platforms.iter().enumerate() {
            let name = format!("localhost/{}-{i}", image.name.replace(':', "-"));
            let c = buildah.run(&["from", "scratch"]);
            let mut config = vec!["config", "--os", "linux", "--arch", arch];
            if *arch == "arm64" {
                config.extend(["--variant", "v8"]);
            }
            if !entrypoint.is_empty() {
                config.extend(["--entrypoint", entrypoint]);
            }
            if !cmd.is_empty() {
                config.extend(["--cmd", cmd]);
            }
            config.push(&c);
            buildah.run(&config);
            buildah.run(&["commit", "-q", &c, &name]);
            buildah.run(&["rm", &c]);
            local.push(name);
        }
        let target = format!("docker://{}/{}", registry.host, image.name);
        let cert_dir = dir.join("certs");
        let cert_dir = cert_dir.to_str().unwrap();
        if let [one] = &local[..] {
            let digest = dir.join("digest");
            let digest_arg = format!("--digestfile={}", digest.display());
            buildah.run(&["push", "--cert-dir", cert_dir, &digest_arg, one, &target]);
            if image.name == "both:1" {
                world.both_digest = fs::read_to_string(&digest).unwrap().trim().to_string();
            }
        } else {
            let list = format!("localhost/{}-list", image.name.replace(':', "-"));
            let _ = buildah.try_run(&["manifest", "rm", &list]);
            buildah.run(&["manifest", "create", &list]);
            for one in &local {
                buildah.run(&[
                    "manifest",
                    "add",
                    &list,
                    &format!("containers-storage:{one}"),
                ]);
            }
            buildah.run(&[
                "manifest",
                "push",
                "--all",
                "--cert-dir",
                cert_dir,
                &list,
                &target,
            ]);
        }
    }
    assert!(
        world.both_digest.starts_with("sha256:"),
        "{}",
        world.both_digest
    );
    world
}

/// buildah on its own storage (vfs: no overlay mounts needed, root or not).
struct Buildah {
    root: PathBuf,
}

impl Buildah {
    fn try_run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("buildah")
            .arg("--root")
            .arg(self.root.join("storage"))
            .arg("--runroot")
            .arg(self.root.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args)
            .env("BUILDAH_ISOLATION", "chroot")
            .output()
            .map_err(|e| format!("buildah: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "buildah {args:?}: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn run(&self, args: &[&str]) -> String {
        self.try_run(args).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// How a registry asks for credentials.
pub enum Auth {
    /// Not at all.
    Anonymous,
    /// htpasswd basic auth with [`USER`]/[`PASSWORD`].
    Basic,
    /// A bearer challenge whose realm is this URL.
    Token(String),
}

/// A `docker-registry` process on a loopback port; killed on drop.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`, as image references name it.
    pub host: String,
    dir: PathBuf,
}

impl Registry {
    /// Starts a registry serving the world's storage with `auth`, its files in `dir`.
    pub fn start(world: &World, dir: &Path, auth: Auth) -> Registry {
        let (cert, key) = world.pki.issue(dir, "registry");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host = format!("127.0.0.1:{port}");
        let auth = match auth {
            Auth::Anonymous => String::new(),
            Auth::Basic => {
                let out = Command::new("htpasswd")
                    .args(["-Bbn", USER, PASSWORD])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "htpasswd: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let file = dir.join("htpasswd");
                fs::write(&file, out.stdout).unwrap();
                format!(
                    "auth:\n  htpasswd:\n    realm: test\n    path: {}\n",
                    file.display()
                )
            }
            Auth::Token(realm) => {
                format!("auth:\n  silly:\n    realm: {realm}\n    service: test-registry\n")
            }
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
             delete:\n    enabled: false\nhttp:\n  addr: {host}\n  secret: test\n  tls:\n    certificate: {}\n    key: {}\n{auth}",
            world.storage.display(),
            cert.display(),
            key.display()
        );
        let file = dir.join("config.yml");
        fs::write(&file, config).unwrap();
        let log = fs::File::create(dir.join("registry.log")).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&file)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("docker-registry starts");
        let registry = Registry {
            child,
            host,
            dir: dir.to_path_buf(),
        };
        let start = Instant::now();
        while TcpStream::connect(&registry.host).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the registry did not listen: {}",
                registry.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
        registry
    }

    /// A Docker config.json with [`USER`]'s login for this registry, written to its dir.
    pub fn auth_file(&self) -> PathBuf {
        let file = self.dir.join("config.json");
        let json = serde_json::json!({"auths": {self.host.clone(): {"username": USER, "password": PASSWORD}}});
        fs::write(&file, json.to_string()).unwrap();
        file
    }

    /// What it logged.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("registry.log")).unwrap_or_default()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token endpoint over HTTPS: checks [`USER`]'s basic login, records each
/// request's path and query, answers `{"token": …}`; or, `hang`ing, reads
/// nothing and never answers.
pub struct TokenIssuer {
    /// Its URL, the registry's realm.
    pub realm: String,
    /// Each request's path and query, with whether the login was right.
    pub asked: Arc<Mutex<Vec<(String, bool)>>>,
}

impl TokenIssuer {
    /// Starts it on a loopback port with a certificate from `world`'s CA.
    pub fn start(world: &World, dir: &Path, hang: bool) -> TokenIssuer {
        let config = world.pki.server_config(dir, "token");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let realm = format!("https://{}/token", listener.local_addr().unwrap());
        let asked = Arc::new(Mutex::new(Vec::new()));
        let record = asked.clone();
        thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().map_while(Result::ok) {
                if hang {
                    held.push(stream);
                    continue;
                }
                let (config, record) = (config.clone(), record.clone());
                thread::spawn(move || {
                    let _ = answer(config, stream, &record);
                });
            }
        });
        TokenIssuer { realm, asked }
    }
}

fn answer(
    config: Arc<ServerConfig>,
    stream: TcpStream,
    record: &Mutex<Vec<(String, bool)>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let tls = StreamOwned::new(
        ServerConnection::new(config).map_err(std::io::Error::other)?,
        stream,
    );
    let mut reader = BufReader::new(tls);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let target = line.split(' ').nth(1).unwrap_or("").to_string();
    let mut login = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            use base64::Engine as _;
            let expected =
                base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
            login = value.trim() == format!("Basic {expected}");
        }
    }
    record.lock().unwrap().push((target, login));
    let body = if login {
        r#"{"token":"t0ken-for-robot","expires_in":300}"#
    } else {
        r#"{"token":"anonymous"}"#
    };
    let mut tls = reader.into_inner();
    write!(
        tls,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    tls.flush()?;
    tls.conn.send_close_notify();
    tls.flush()
}
