//! `--install-to DIR`: copy this binary to `DIR/tandem` for the init-container
//! pattern (distroless has no `cp`). Written to a temporary name and renamed,
//! so no partial file is ever left behind (SPEC §1).

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::Error;

/// Copies the running executable to `dir/tandem`, mode 0755.
pub fn install_to(dir: &Path) -> Result<(), Error> {
    let dest = dir.join("tandem");
    let temp = dir.join(format!(".tandem.{}.tmp", std::process::id()));
    let fail = |what: &str, e: io::Error| Error::Install(format!("{what} {}", dest.display()), e);
    let copied = fs::copy("/proc/self/exe", &temp)
        .and_then(|_| fs::set_permissions(&temp, fs::Permissions::from_mode(0o755)))
        .and_then(|_| fs::rename(&temp, &dest));
    if let Err(e) = copied {
        let _ = fs::remove_file(&temp);
        return Err(fail("cannot write", e));
    }
    Ok(())
}
