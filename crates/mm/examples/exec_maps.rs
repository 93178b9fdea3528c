//! Prints the model's address space after `exec` of each path given, in the
//! format of `/proc/PID/maps` (file mappings and named anonymous areas), one
//! section per path:
//!
//! ```text
//! == /usr/bin/ls dynamic
//! 555555554000-555555558000 r--p 00000000 /usr/bin/ls
//! ...
//! ```
//!
//! A path the model cannot exec prints `== PATH error: MESSAGE`. Used by
//! `scripts/exec-sweep.sh`; run with
//! `cargo run --release -p aspace-mm --example exec_maps -- /bin/ls /bin/sed`.

use mm::{Backing, CallPattern, Files, Mm};
use rmap::{Design, Topology};
use std::io::Write as _;
use std::path::Path;

fn main() {
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    let mut out = std::io::stdout().lock();
    let paths: Vec<String> = std::env::args().skip(1).collect();
    for p in &paths {
        let prog = match files.program(Path::new(p)) {
            Ok(prog) => prog,
            Err(e) => {
                let _ = writeln!(out, "== {p} error: {e}");
                continue;
            }
        };
        mm.exec_program(&prog);
        let _ = writeln!(out, "== {p} {}", prog.linkage().name());
        for v in mm.vmas() {
            let (off, name) = match &v.backing {
                Backing::File { file, pgoff } => {
                    (pgoff * mm::PAGE_SIZE, file.path().display().to_string())
                }
                Backing::Anon(k) => (0, k.name().unwrap_or("").to_string()),
            };
            let s = if v.flags.shared { 's' } else { 'p' };
            let _ = writeln!(
                out,
                "{:x}-{:x} {}{s} {off:08x} {name}",
                v.start, v.end, v.prot
            );
        }
        mm.exit();
    }
}
