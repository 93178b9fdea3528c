//! Execs a program N times in one process and prints the reverse-map calls one exec
//! makes; run under `valgrind --tool=callgrind` for its instruction cost:
//! `cargo run --release -p aspace-mm --example exec_cost -- /bin/sleep 200`.

use mm::{CallPattern, Files, Mm};
use rmap::{Design, Topology};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).map_or("/bin/sleep", |s| s.as_str());
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    for pattern in CallPattern::ALL {
        let files = Files::new(Design::Linux, Topology::Os, pattern);
        let prog = files.program(Path::new(path)).expect("program");
        let mm = Mm::new(files.clone());
        mm.exec_program(&prog);
        let first = mm.calls();
        let file_vmas = mm.vmas().iter().filter(|v| v.file().is_some()).count();
        for _ in 1..n {
            mm.exec_program(&prog);
        }
        println!(
            "{path} {}: {} steps; one exec: {} link calls ({} VMAs linked), {} unlink calls \
             ({} unlinked), {} lock holds; {} file VMAs at the end",
            pattern.name(),
            prog.steps().len(),
            first.insert + first.insert_batch,
            first.linked,
            first.remove + first.remove_batch,
            first.unlinked,
            first.lock_holds(),
            file_vmas
        );
    }
}
