//! Helpers shared by the CLI test files.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `aspace` binary with `args`.
pub fn aspace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aspace"))
        .args(args)
        .output()
        .expect("run aspace")
}

/// A fresh, empty temporary directory named after this process and `name`.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("aspace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
