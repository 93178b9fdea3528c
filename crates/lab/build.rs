//! Records the commit the binary is built from, so that results name the code that
//! produced them (not whatever checkout the command later runs in).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=ASPACE_BUILD_COMMIT={commit}");
    // Rebuild when HEAD moves: the worktree's HEAD (a branch switch) and its reflog
    // (every commit, checkout or reset appends to it), and the branch's ref.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        for f in ["HEAD", "logs/HEAD"] {
            println!("cargo:rerun-if-changed={}", dir.join(f).display());
        }
    }
    if let (Some(common), Some(head_ref)) = (
        git(&["rev-parse", "--git-common-dir"]).map(PathBuf::from),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        let common = if common.is_absolute() {
            common
        } else {
            std::env::current_dir()
                .map(|d| d.join(&common))
                .unwrap_or(common)
        };
        println!("cargo:rerun-if-changed={}", common.join(head_ref).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
