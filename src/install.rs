//! `--install-to DIR`: copy this binary to `DIR/tandem` for the init-container
//! pattern (distroless has no `cp`). Written to a temporary name and renamed,
//! so no partial file is ever left behind (SPEC §1).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;

use crate::exit::{self, Error};

/// Copies the running executable to `dir/tandem`; a failure exits 73 and is told
/// in the termination message (SPEC §1, §7).
pub fn install_to(dir: &Path) -> ExitCode {
    copy_to(dir).map_or_else(exit::fail, |()| ExitCode::SUCCESS)
}

/// Copies the running executable to `dir/tandem`, mode 0755.
fn copy_to(dir: &Path) -> Result<(), Error> {
    let dest = dir.join("tandem");
    let temp = dir.join(format!(".tandem.{}.tmp", std::process::id()));
    let fail = |what: &str, e: io::Error| Error::Install(format!("{what} {}", dest.display()), e);
    let file = create_new(&temp).map_err(|e| fail("cannot write", e))?;
    let copied = copy_exe_into(file).and_then(|_| fs::rename(&temp, &dest));
    if let Err(e) = copied {
        let _ = fs::remove_file(&temp);
        return Err(fail("cannot write", e));
    }
    Ok(())
}

/// Creates `temp` afresh. `O_EXCL` fails on any name already there, a symlink
/// included, so the copy never lands where a planted link points (the directory
/// may be shared, and tandem often runs as root). A leftover is unlinked, not
/// followed, and creation tried once more.
fn create_new(temp: &Path) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(temp)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(temp)?;
            open()
        }
        other => other,
    }
}

/// Copies `/proc/self/exe` into `file` and makes it 0755 through the handle, so
/// no path is looked up again.
fn copy_exe_into(mut file: File) -> io::Result<()> {
    // Read whole, into the heap: a copy buffer on the stack would sit in the frame
    // of `main`, where every run's calls are made, and not only under --install-to.
    let exe = fs::read("/proc/self/exe")?;
    file.write_all(&exe)?;
    file.set_permissions(fs::Permissions::from_mode(0o755))
}
