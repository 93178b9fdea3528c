//! A description of the machine, for the JSON and the report.

use crate::results::Machine;

/// Reads CPU model, core and node counts and kernel; adds the commit `aspace` was
/// built from. Never fails: what
/// cannot be read is "unknown" or 0.
pub fn describe() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix("node")
                        .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0)
        .max(1);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    // The build's own commit (build.rs), not the checkout the command runs in.
    let commit = env!("ASPACE_BUILD_COMMIT").to_owned();
    Machine {
        cpu_model,
        cores: nproc(),
        nodes,
        kernel,
        commit,
        build: build(),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    }
}

/// How this binary was compiled, in the terms that change its figures: the
/// profile (a debug build's assertions cost time in every design) and the
/// CPU it targets (the maple tree's lookups use a vector pivot search when
/// it is built for AVX2, as with `RUSTFLAGS="-C target-cpu=native"`; every
/// design in one run shares the build, but runs from two builds do not
/// compare).
pub fn build() -> String {
    let profile = if cfg!(debug_assertions) {
        "debug build (assertions on)"
    } else {
        "release build"
    };
    let cpu = if aspace_maple::VECTOR_PIVOT_SEARCH {
        "for AVX2 (maple: vector pivot search)"
    } else if cfg!(target_arch = "x86_64") {
        "for baseline x86-64 (maple: binary pivot search)"
    } else {
        "for a non-x86-64 CPU (maple: binary pivot search)"
    };
    format!("{profile}, {cpu}")
}

/// CPUs available to this process.
pub fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
