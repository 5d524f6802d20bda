//! What a source holds, as the readers collect it: the records in the order apply needs them,
//! and what will not move with the reason. A leaf: every reader fills it, none reads another.

use serde_json::Value;

use crate::state::import::ImportRecord;

/// A record the source holds that will not move, and why.
#[derive(Debug, Clone)]
pub struct Skip {
    pub kind: &'static str,
    pub label: String,
    pub reason: String,
}

/// What a source holds, in the order apply needs it (a record after those it names).
#[derive(Default)]
pub struct Source {
    pub records: Vec<ImportRecord>,
    pub skipped: Vec<Skip>,
}

impl Source {
    pub fn push(&mut self, record: ImportRecord) {
        self.records.push(record);
    }

    pub fn skip(&mut self, kind: &'static str, label: impl Into<String>, reason: impl Into<String>) {
        self.skipped.push(Skip { kind, label: label.into(), reason: reason.into() });
    }
}

/// A JSON object column's text (NULL or not an object: `{}`).
pub fn extra_json(raw: Option<&str>) -> String {
    match raw.and_then(|t| serde_json::from_str::<Value>(t).ok()) {
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => "{}".into(),
    }
}
