//! The live role table. Inline (`role_to_relation`) it is fixed at startup; in a file
//! (`role_to_relation_file`) it is re-read whenever the file changes, checked before each use
//! by its modification time and size (one `stat`), so an operator maps a role created at run
//! time by editing the file on every node, without a restart. A file that no longer parses,
//! or cannot be read, leaves the last good table in force and says so once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use super::settings::{parse_role_table, OpenFgaSettings};

pub type RoleTable = BTreeMap<String, String>;

pub struct Mapping {
    file: Option<PathBuf>,
    loaded: RwLock<Loaded>,
}

struct Loaded {
    table: Arc<RoleTable>,
    /// The file's (modified, length) when last read, good or not.
    stamp: Option<(SystemTime, u64)>,
}

fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl Mapping {
    pub fn new(settings: &OpenFgaSettings) -> Self {
        let file = settings.role_to_relation_file.clone();
        let stamp = file.as_deref().and_then(stamp_of);
        Mapping { file, loaded: RwLock::new(Loaded { table: Arc::new(settings.role_to_relation.clone()), stamp }) }
    }

    /// The table in force, after re-reading the file if it changed.
    pub fn table(&self) -> Arc<RoleTable> {
        if let Some(path) = &self.file {
            self.refresh(path);
        }
        match self.loaded.read() {
            Ok(l) => l.table.clone(),
            Err(poisoned) => poisoned.into_inner().table.clone(),
        }
    }

    fn refresh(&self, path: &Path) {
        let stamp = stamp_of(path);
        let current = match self.loaded.read() {
            Ok(l) => l.stamp,
            Err(poisoned) => poisoned.into_inner().stamp,
        };
        if stamp == current {
            return;
        }
        let mut l = match self.loaded.write() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        if l.stamp == stamp {
            return; // another request re-read it meanwhile
        }
        l.stamp = stamp;
        let read = std::fs::read_to_string(path).map_err(anyhow::Error::from).and_then(|t| parse_role_table(&t));
        match read {
            Ok(table) => {
                tracing::info!(file = %path.display(), roles = table.len(), "[openfga] role_to_relation_file re-read");
                l.table = Arc::new(table);
            }
            Err(e) => tracing::error!(
                file = %path.display(),
                "[openfga] role_to_relation_file: {e:#}; the previous table ({} roles) stays in force",
                l.table.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(file: &Path) -> OpenFgaSettings {
        let get = |k: &str| match k {
            "api_url" => Some("http://127.0.0.1:1"),
            "store_id" => Some("01STORE"),
            "role_to_relation_file" => file.to_str(),
            _ => None,
        };
        match super::super::settings::AssignmentDriver::from_sections(
            |k| (k == "driver").then_some("openfga"),
            get,
            true,
            |f| std::fs::read_to_string(f),
        ) {
            Ok(super::super::settings::AssignmentDriver::OpenFga(s)) => *s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_last_good_table() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("roles");
        std::fs::write(&file, "member:member\n").unwrap();
        let m = Mapping::new(&settings(&file));
        assert_eq!(m.table().get("member").map(String::as_str), Some("member"));
        assert_eq!(m.table().get("r-new"), None);
        std::fs::write(&file, "member:member\nr-new:operator\n").unwrap();
        assert_eq!(m.table().get("r-new").map(String::as_str), Some("operator"), "read again once changed");
        std::fs::write(&file, "member:member\nbroken line, here\n").unwrap();
        assert_eq!(m.table().len(), 2, "a file that no longer parses changes nothing");
        std::fs::write(&file, "admin:admin\nmember:admin\nr-new:operator\n").unwrap();
        assert_eq!(m.table().get("member").map(String::as_str), Some("member"), "member onto admin is refused");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(m.table().len(), 2, "nor does a missing one");
    }
}
