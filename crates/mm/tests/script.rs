//! exec of a `#!` script maps its interpreter, as the kernel's `binfmt_script`
//! does; a bad `#!` line or too many levels fails with the address space unchanged.

use mm::error::ENOEXEC;
use mm::{CallPattern, Error, Files, Mm, Prot};
use rmap::{Design, Topology};
use std::path::PathBuf;

fn layout(mm: &Mm) -> Vec<(u64, u64, Prot, Option<PathBuf>)> {
    mm.vmas()
        .iter()
        .map(|v| {
            let file = v.file().map(|(f, _)| f.path().to_path_buf());
            (v.start, v.end, v.prot, file)
        })
        .collect()
}

fn script(dir: &std::path::Path, name: &str, first_line: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("{first_line}\necho unused\n")).unwrap();
    p
}

#[test]
fn a_script_execs_its_interpreter_and_bad_scripts_change_nothing() {
    let dir = std::env::temp_dir().join(format!("aspace-mm-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);

    // The layout of `/bin/true` itself.
    let direct = Mm::new(files.clone());
    direct.exec(std::path::Path::new("/bin/true")).unwrap();
    let want = layout(&direct);

    // One script, then a chain of four scripts: both map exactly /bin/true's image.
    let one = script(&dir, "one", "#! /bin/true -x");
    let mut chain = script(&dir, "s0", "#!/bin/true");
    for i in 1..4 {
        chain = script(&dir, &format!("s{i}"), &format!("#!{}", chain.display()));
    }
    for p in [&one, &chain] {
        let mm = Mm::new(files.clone());
        mm.exec(p).unwrap();
        assert_eq!(layout(&mm), want, "{}", p.display());
        // The script itself is read, never mapped.
        assert!(!mm
            .vmas()
            .iter()
            .any(|v| v.file().is_some_and(|(f, _)| f.path() == p.as_path())));
        mm.check_invariants().unwrap();
    }

    // Bad scripts: an empty `#!` line, five levels, a missing interpreter. Each
    // fails and leaves the running image (/bin/true) exactly as it was.
    let empty = script(&dir, "empty", "#!   ");
    let five = script(&dir, "s4", &format!("#!{}", chain.display()));
    let missing = script(&dir, "missing", "#!/no/such/interpreter");
    let mm = Mm::new(files.clone());
    mm.exec(std::path::Path::new("/bin/true")).unwrap();
    for (p, errno) in [(&empty, Some(ENOEXEC)), (&five, None), (&missing, None)] {
        let err: Error = mm.exec(p).unwrap_err();
        if let Some(e) = errno {
            assert_eq!(err.errno(), e, "{}: {err}", p.display());
        }
        assert_eq!(
            layout(&mm),
            want,
            "{} changed the address space",
            p.display()
        );
        mm.check_invariants().unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
