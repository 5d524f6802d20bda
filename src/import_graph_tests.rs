//! The floors stay untied (`scripts/import-graph`, docs/architecture.md): the state floor has no
//! import cycle at all (every file imports from the file that defines what it uses, never back
//! through a `mod.rs` that re-exports its children), and elsewhere a cycle stays inside one
//! folder and small (shared state and helpers live in leaf files, not in `mod.rs`).

use std::process::Command;

/// Runs `scripts/import-graph --folder <folder> --max <max>` (and `--one-folder`: no cycle may
/// span folders); the script's report when a cycle breaks that (nothing when python3 is missing).
fn cycles_over(folder: &str, max: usize) -> Option<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/scripts/import-graph");
    let max = max.to_string();
    let out = match Command::new("python3").args([&script, "--one-folder", "--folder", folder, "--max", &max]).output()
    {
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

/// One feature, one room: across the whole crate no cycle spans two folders or holds more
/// than three files.
#[test]
fn no_cycle_spans_folders_or_exceeds_three_files() {
    if let Some(report) = cycles_over("src", 3) {
        panic!("an import cycle spans folders or holds more than 3 files:\n{report}");
    }
}
