//! The state floor stays free of import cycles: every file here imports what it needs from the
//! file that defines it, never back through a `mod.rs` that re-exports its children
//! (`scripts/import-graph`, docs/architecture.md). Feature folders keep their cycles small
//! (shared state and helpers live in leaf files, not in `mod.rs`).

use std::process::Command;

/// Runs `scripts/import-graph --folder <folder> --max <max>`; the script's report when a
/// cycle touching the folder has more than `max` files (nothing when python3 is missing).
fn cycles_over(folder: &str, max: usize) -> Option<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/scripts/import-graph");
    let out = match Command::new("python3").args([&script, "--folder", folder, "--max", &max.to_string()]).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: python3 is not installed, so scripts/import-graph cannot run");
            return None;
        }
        Err(e) => panic!("running {script}: {e}"),
    };
    (!out.status.success())
        .then(|| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn state_files_form_no_import_cycle() {
    if let Some(report) = cycles_over("src/state", 1) {
        panic!("files of src/state import each other in a cycle:\n{report}");
    }
}

#[test]
fn feature_folders_have_no_cycle_over_three_files() {
    for folder in ["src/scim", "src/token", "src/mapped_auth"] {
        if let Some(report) = cycles_over(folder, 3) {
            panic!("files of {folder} import each other in a cycle of more than 3 files:\n{report}");
        }
    }
}
