//! Replays recordings made with `scripts/record.sh` and compares the final layout of
//! every recorded process with the model's, every field of every line:
//!
//! ```text
//! == sh-two-commands: /usr/bin/sh (4 processes, 3 with maps)
//! processes 3/3 identical, 92 VMAs compared; placed 24/24 at the kernel's address; 0 not expressed, 0 results differ, 0 files changed
//! ```
//!
//! then each difference, each area the kernel kept apart for a reason the trace does
//! not show (`mm::maps::kept_apart`: not counted as a difference), call the model
//! could not express, misplaced `mmap` and changed file. Exit status 1 if any layout
//! differs.
//!
//! `cargo run --release -p aspace-mm --example replay_recording -- OUT...` where each
//! `OUT` names `OUT.strace` and `OUT.maps/` (or an `OUT.maps` file for the first
//! process). Output into a closed pipe (`| head`) ends the run quietly.

use mm::placement::Placement;
use mm::recording::Recording;
use mm::{CallPattern, Files};
use rmap::{Design, Topology};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// Writes one recording's lines to stdout; a reader that went away (`| head`) ends
/// the run with the status so far, as Unix tools do, and not with a panic.
fn emit(text: &str, all_same: bool) {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        std::process::exit(if all_same { 0 } else { 1 });
    }
}

fn main() {
    let outs: Vec<String> = std::env::args().skip(1).collect();
    if outs.is_empty() {
        eprintln!(
            "usage: replay_recording OUT... (OUT.strace and OUT.maps/ from scripts/record.sh)"
        );
        std::process::exit(2);
    }
    let mut all_same = true;
    for out in &outs {
        let trace = PathBuf::from(format!("{out}.strace"));
        let rec = match Recording::load(&trace, None) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{out}: {e}");
                std::process::exit(2);
            }
        };
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let check = rec.check(files, Placement::LINUX_THP);
        let rep = &check.report;
        let pids: BTreeSet<u32> = rec
            .events
            .iter()
            .map(|e| e.pid)
            .filter(|&p| p != 0)
            .collect();
        let compared = check.processes.iter().filter(|p| !p.randomized).count();
        let same = check
            .processes
            .iter()
            .filter(|p| !p.randomized && p.differences.is_empty())
            .count();
        let vmas: usize = check.processes.iter().map(|p| p.compared).sum();
        let mut text = String::new();
        // (Writing into a String cannot fail.)
        let _ = writeln!(
            text,
            "== {out}: {} ({} processes, {} with maps)",
            rec.program().unwrap_or("?"),
            pids.len(),
            check.processes.len()
        );
        let _ = writeln!(
            text,
            "processes {same}/{compared} identical, {vmas} VMAs compared; placed {}/{} at the kernel's address; \
             {} not expressed, {} results differ, {} files changed{}",
            rep.placed_same,
            rep.placed,
            rep.not_expressed.len(),
            rep.result_differs.len(),
            rep.files_changed.len(),
            match check.processes.len() - compared {
                0 => String::new(),
                n => format!("; {n} laid out at random by the kernel (set-id), not compared"),
            }
        );
        for p in &check.processes {
            for d in &p.differences {
                let _ = writeln!(text, "  pid {}: {d}", p.pid);
            }
            for d in &p.kept_apart {
                let _ = writeln!(text, "  pid {}: not a difference: {d}", p.pid);
            }
        }
        for (line, why) in &rep.not_expressed {
            let _ = writeln!(text, "  line {line}: could not express: {why}");
        }
        for (line, what) in &rep.result_differs {
            let _ = writeln!(text, "  line {line}: result differs: {what}");
        }
        for (line, k, m, len) in &rep.misplaced {
            let _ = writeln!(
                text,
                "  line {line}: mmap of {len:#x}: kernel {k:#x}, model {m:#x}"
            );
        }
        for (line, what) in &rep.files_changed {
            let _ = writeln!(text, "  line {line}: {what}");
        }
        for (line, what) in &rep.randomized {
            let _ = writeln!(text, "  line {line}: {what}");
        }
        all_same &= check.layouts_identical();
        emit(&text, all_same);
    }
    std::process::exit(if all_same { 0 } else { 1 });
}
