//! Names the build for `idnode --version`, version discovery and `idnode_build_info`: the git
//! commit the binary was built from. `IDNODE_GIT_COMMIT` overrides it (a build from a source
//! tarball, or an image built outside the checkout); outside a git checkout it is `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=IDNODE_GIT_COMMIT");
    let commit = std::env::var("IDNODE_GIT_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        let commit = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !commit.is_empty()).then_some(commit)
    });
    println!("cargo:rustc-env=IDNODE_GIT_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    // Built again when the checkout moves to another commit (only files that exist are named:
    // cargo reruns a script whose named file is missing on every build).
    let git = Path::new(".git");
    let mut watched = vec![git.join("HEAD"), git.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            watched.push(git.join(branch));
        }
    }
    for file in watched.iter().filter(|f| f.is_file()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
