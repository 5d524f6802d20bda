//! The state floor stays free of import cycles: every file here imports what it needs from the
//! file that defines it, never back through a `mod.rs` that re-exports its children
//! (`scripts/import-graph`, docs/architecture.md).

use std::process::Command;

#[test]
fn state_files_form_no_import_cycle() {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/scripts/import-graph");
    let out = match Command::new("python3").args([&script, "--folder", "src/state", "--max", "1"]).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: python3 is not installed, so scripts/import-graph cannot run");
            return;
        }
        Err(e) => panic!("running {script}: {e}"),
    };
    assert!(
        out.status.success(),
        "files of src/state import each other in a cycle:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
