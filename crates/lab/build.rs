//! Records the commit the binary is built from, so that results name the code that
//! produced them (not whatever checkout the command later runs in): `git rev-parse
//! HEAD` at build time, with `-dirty` when tracked files differ from it, or "unknown"
//! outside a git checkout.

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
    let commit = match git(&["rev-parse", "HEAD"]) {
        // Uncommitted changes to tracked files: the binary is not that commit.
        Some(head) if git(&["status", "--porcelain", "--untracked-files=no"]).is_some() => {
            format!("{head}-dirty")
        }
        Some(head) => head,
        None => "unknown".to_owned(),
    };
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
    // Any source change may make the tree dirty or clean: cargo scans these
    // directories for modified files.
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    for p in ["../../crates", "../../Cargo.toml", "../../Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
