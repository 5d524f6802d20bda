//! The import's report: per kind, how many records moved, were already here, conflicted or
//! were skipped at the source, and every record that did not move with the reason.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::state::import::ImportOutcome;

#[derive(Debug, Default, Clone, Serialize)]
pub struct KindTally {
    pub imported: u64,
    pub present: u64,
    pub conflicts: u64,
    pub skipped: u64,
}

/// A record that did not move.
#[derive(Debug, Clone, Serialize)]
pub struct NotMoved {
    pub kind: &'static str,
    pub record: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub dry_run: bool,
    pub kinds: BTreeMap<&'static str, KindTally>,
    /// Refused by idnode (a clash with what it holds).
    pub conflicts: Vec<NotMoved>,
    /// Left out by the reader (what idnode does not keep, or does differently).
    pub skipped: Vec<NotMoved>,
    pub seconds: f64,
}

/// Lines of each list printed; the `--report` file has them all.
const PRINTED_PER_LIST: usize = 50;

impl Report {
    pub fn count(&mut self, kind: &'static str, label: impl FnOnce() -> String, outcome: ImportOutcome) {
        let tally = self.kinds.entry(kind).or_default();
        match outcome {
            ImportOutcome::Imported => tally.imported += 1,
            ImportOutcome::Present => tally.present += 1,
            ImportOutcome::Conflict(reason) => {
                tally.conflicts += 1;
                self.conflicts.push(NotMoved { kind, record: label(), reason });
            }
        }
    }

    pub fn skip(&mut self, kind: &'static str, record: String, reason: String) {
        self.kinds.entry(kind).or_default().skipped += 1;
        self.skipped.push(NotMoved { kind, record, reason });
    }

    pub fn total(&self) -> u64 {
        self.kinds.values().map(|t| t.imported + t.present + t.conflicts).sum()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let verb = if self.dry_run { "would import" } else { "imported" };
        let _ = writeln!(out, "{:<26} {:>12} {:>12} {:>10} {:>10}", "kind", verb, "present", "conflicts", "skipped");
        for (kind, t) in &self.kinds {
            let _ =
                writeln!(out, "{kind:<26} {:>12} {:>12} {:>10} {:>10}", t.imported, t.present, t.conflicts, t.skipped);
        }
        for (title, list) in [("conflicts (not written)", &self.conflicts), ("skipped at the source", &self.skipped)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}: {}", list.len());
            for n in list.iter().take(PRINTED_PER_LIST) {
                let _ = writeln!(out, "  {} {}: {}", n.kind, n.record, n.reason);
            }
            if list.len() > PRINTED_PER_LIST {
                let _ = writeln!(out, "  … and {} more (--report FILE lists them all)", list.len() - PRINTED_PER_LIST);
            }
        }
        let rate = self.total() as f64 / self.seconds.max(1e-6);
        let _ = writeln!(out, "\n{} records in {:.1} s ({rate:.0} records/s)", self.total(), self.seconds);
        out
    }
}
