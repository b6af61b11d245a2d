//! tandem-injector's story: read the command line, load the certificate, listen,
//! arm SIGTERM, serve until it comes, exit 0 (SPEC §10); or print the policies,
//! or audit a List of Pods.

use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::Arc;

use tandem_injector::cli::{self, EX_USAGE, Task};
use tandem_injector::registry::{self, Client, Registry};
use tandem_injector::server::{self, tls};
use tandem_injector::{audit, policy, say, webhook};

/// sysexits' EX_OSERR: the port cannot be bound, the signal not armed.
const EX_OSERR: u8 = 71;

fn main() -> ExitCode {
    let config = match cli::parse(std::env::args_os().skip(1), |name| std::env::var_os(name)) {
        Ok(Task::Run(config)) => config,
        Ok(Task::Policy(install)) => {
            print!("{}", policy::render(&install));
            return ExitCode::SUCCESS;
        }
        Ok(Task::Webhook(mode, failure)) => {
            print!("{}", webhook::render(mode, failure));
            return ExitCode::SUCCESS;
        }
        Ok(Task::Audit(args)) => return audit::command::run(&args),
        Ok(Task::Help) => {
            print!("{}", cli::help());
            return ExitCode::SUCCESS;
        }
        Ok(Task::Version) => {
            println!("tandem-injector {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(line) => return fail(EX_USAGE, &line),
    };
    let tls = match tls::server_config(config.files) {
        Ok(tls) => tls,
        Err(line) => return fail(EX_USAGE, &line),
    };
    let listener = match TcpListener::bind(config.listen) {
        Ok(listener) => listener,
        Err(e) => return fail(EX_OSERR, &format!("--listen {}: {e}", config.listen)),
    };
    // SIGTERM (kubelet) and SIGINT write a byte to `stop`'s peer: the server
    // and every idle connection wait on `stop` beside their sockets.
    let armed = UnixStream::pair().and_then(|(stop, peer)| {
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::low_level::pipe::register(signal, peer.try_clone()?)?;
        }
        Ok(stop)
    });
    let stop = match armed {
        Ok(stop) => stop,
        Err(e) => return fail(EX_OSERR, &format!("arming SIGTERM: {e}")),
    };
    match listener.local_addr() {
        Ok(addr) => say!(
            "listening on {addr}; tandem image {} ({})",
            config.install.image,
            config.install.mode.name()
        ),
        Err(e) => return fail(EX_OSERR, &format!("--listen {}: {e}", config.listen)),
    }
    let (auth, allow) = (config.registry_auth, config.registry_allow);
    let client = Client::new(auth, &config.registry_ca, allow);
    let registry = Arc::new(Registry::new(client, registry::CAPACITY));
    if let Err(e) = server::run(listener, tls, config.install, registry, config.limits, stop) {
        return fail(EX_OSERR, &format!("serving: {e}"));
    }
    say!("stopped");
    ExitCode::SUCCESS
}

fn fail(code: u8, line: &str) -> ExitCode {
    say!("{line}");
    ExitCode::from(code)
}
