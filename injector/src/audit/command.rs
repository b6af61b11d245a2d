//! `tandem-injector audit [FILE|-] [--output table|json]`: its run (the
//! command line is `cli`'s, as every command's). Bad usage is one line and exit
//! 64, input that is not a List of Pods one line and exit 65, a file that
//! cannot be read one line and exit 66 (sysexits' codes, as the wrapper's).

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use super::{audit, list, render};
use crate::inject::route::Route;
use crate::say;

/// sysexits' EX_DATAERR: the input is not a List of Pods.
pub const EX_DATAERR: u8 = 65;
/// sysexits' EX_NOINPUT: the input cannot be read.
pub const EX_NOINPUT: u8 = 66;
/// sysexits' EX_IOERR: the output cannot be written.
const EX_IOERR: u8 = 74;

/// How the audit is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// Two tables at 80 columns.
    #[default]
    Table,
    /// One JSON object.
    Json,
}

/// What `audit` was asked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Args {
    /// The file holding the List; `None`: standard input (`-`, or no FILE).
    pub input: Option<PathBuf>,
    /// How to print it.
    pub output: Output,
    /// The route each Pod would take unless its annotation names one (`--route`).
    pub route: Route,
}

/// Runs the audit `args` asks for: the report on stdout, or one line on
/// stderr and its exit status.
pub fn run(args: &Args) -> ExitCode {
    let text = match read(args).and_then(|data| {
        let pods = list::pods(&data)
            .map_err(|why| (EX_DATAERR, format!("audit: {}: {why}", name(args))))?;
        Ok(audit(&pods, args.route))
    }) {
        Ok(audit) => match args.output {
            Output::Table => render::table(&audit),
            Output::Json => render::json(&audit),
        },
        Err((code, line)) => {
            say!("{line}");
            return ExitCode::from(code);
        }
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that has seen enough (`| head`) is no failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            say!("audit: writing the report: {e}");
            ExitCode::from(EX_IOERR)
        }
    }
}

/// The input's bytes, or the exit status and line saying why not.
fn read(args: &Args) -> Result<Vec<u8>, (u8, String)> {
    let mut data = Vec::new();
    let done = match &args.input {
        Some(path) => std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut data)),
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                say!(
                    "audit: reading the List from standard input: kubectl get pods -A -o json | tandem-injector audit -"
                );
            }
            stdin.lock().read_to_end(&mut data)
        }
    };
    match done {
        Ok(_) => Ok(data),
        Err(e) => Err((EX_NOINPUT, format!("audit: {}: {e}", name(args)))),
    }
}

/// The input as the error lines name it.
fn name(args: &Args) -> String {
    match &args.input {
        Some(path) => path.display().to_string(),
        None => "standard input".into(),
    }
}
