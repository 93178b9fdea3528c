//! exec of crafted ELF files. The input is the start of an ELF file (seed the
//! corpus with real ones: `scripts/fuzz-exec-seed.sh` copies the first 64 KiB of
//! `/bin/true`, libc and friends; the file is taken to be as long as the real file
//! it stands for, zeros after the input); it is
//! exec'd twice in a process that already runs `/bin/sleep`: once as the program,
//! once as the `libc.so.6` that `/bin/true` loads. Each time:
//! - no panic;
//! - a failed exec leaves the old address space (every VMA, its protection, file,
//!   page offset and reverse-map id) and the reverse maps of its files unchanged,
//!   and `check_invariants` clean;
//! - a successful exec passes `check_invariants`, and after `exit` no reverse map
//!   holds any entry (nothing stray).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm::elf::ElfImage;
use mm::ldso::{LoadPlan, SearchPath};
use mm::{CallPattern, Files, Mm, Program, Prot};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

type Shape = Vec<(u64, u64, Prot, Option<(PathBuf, u64)>, Option<u64>)>;

fn shape(mm: &Mm) -> Shape {
    mm.vmas()
        .iter()
        .map(|v| {
            (
                v.start,
                v.end,
                v.prot,
                v.file().map(|(f, p)| (f.path().to_path_buf(), p)),
                v.rmap_id(),
            )
        })
        .collect()
}

struct World {
    sleep: LoadPlan,
    search: SearchPath,
    true_plan: LoadPlan,
    libc_index: usize,
    true_path: PathBuf,
    true_len: u64,
    libc_len: u64,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let search = SearchPath::default();
        let sleep = LoadPlan::resolve(Path::new("/bin/sleep"), &search).expect("/bin/sleep");
        let true_plan = LoadPlan::resolve(Path::new("/bin/true"), &search).expect("/bin/true");
        let libc_index = true_plan
            .libs
            .iter()
            .position(|l| l.path.ends_with("libc.so.6"))
            .expect("true needs libc");
        World {
            sleep,
            search,
            libc_index,
            true_path: std::fs::canonicalize("/bin/true").unwrap(),
            true_len: std::fs::metadata("/bin/true").unwrap().len(),
            libc_len: std::fs::metadata(&true_plan.libs[libc_index].path)
                .unwrap()
                .len(),
            true_plan,
        }
    })
}

fn check(w: &World, plan: Result<LoadPlan, mm::Error>, pattern: CallPattern) {
    // A fresh registry each time: check_invariants walks every registered file.
    let files = Files::new(Design::Linux, Topology::Os, pattern);
    let sleep = Program::new(&files, w.sleep.clone()).expect("sleep plans");
    let mm = Mm::new(files.clone());
    mm.exec_program(&sleep);
    let before = shape(&mm);
    let lens: Vec<usize> = sleep.files().map(|f| f.rmap().len()).collect();
    match plan.and_then(|p| mm.exec_plan(p)) {
        Err(e) => {
            assert!(e.errno() > 0);
            assert_eq!(shape(&mm), before, "failed exec changed the space: {e}");
            let after: Vec<usize> = sleep.files().map(|f| f.rmap().len()).collect();
            assert_eq!(after, lens, "failed exec changed a reverse map: {e}");
            if let Err(bad) = mm.check_invariants() {
                panic!("after failed exec ({e}): {bad}");
            }
        }
        Ok(()) => {
            if let Err(bad) = mm.check_invariants() {
                panic!("after exec: {bad}");
            }
        }
    }
    drop(mm); // exit
    for f in files.all() {
        assert!(
            f.rmap().is_empty(),
            "{}: entry left after exit",
            f.path().display()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let w = world();
    // As the program.
    // The input is the file's start; it is as long as the real file it stands for
    // (or the input), the rest zeros: exec reads only headers.
    let plan = ElfImage::parse_prefix(&w.true_path, data, w.true_len.max(data.len() as u64))
        .and_then(|exe| LoadPlan::resolve_image(Arc::new(exe), &w.search));
    check(w, plan, CallPattern::PerVma);
    // As the library /bin/true loads.
    let libc_path = w.true_plan.libs[w.libc_index].path.clone();
    let len = w.libc_len.max(data.len() as u64);
    let plan = ElfImage::parse_prefix(&libc_path, data, len).map(|lib| {
        let mut p = w.true_plan.clone();
        p.libs[w.libc_index] = Arc::new(lib);
        p
    });
    check(w, plan, CallPattern::Batched);
});
