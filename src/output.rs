//! `-w json|table` (`--write-out`, as etcdctl): how operator commands print what they got.
//! JSON is what scripts parse; a table is for people (comfy-table, ASCII borders).

use comfy_table::{presets, Table};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Table,
}

/// A table with `header`, ASCII borders and no wrapping (the terminal is not asked).
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_FULL_CONDENSED);
    t.set_header(header.iter().map(|h| h.to_uppercase()));
    t
}

/// A value in one cell: strings bare, null as `-`, anything else as compact JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Any JSON as a table: an array of objects gives a row each (the columns are their keys in
/// order of first appearance); an object gives a row per key; anything else one cell.
pub fn any_table(value: &Value) -> Table {
    match value {
        Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
            let mut columns: Vec<&str> = Vec::new();
            for key in items.iter().filter_map(Value::as_object).flat_map(|o| o.keys()) {
                if !columns.contains(&key.as_str()) {
                    columns.push(key);
                }
            }
            let mut t = table(&columns);
            for item in items {
                t.add_row(columns.iter().map(|c| cell(item.get(*c).unwrap_or(&Value::Null))));
            }
            t
        }
        Value::Object(map) => {
            let mut t = table(&["field", "value"]);
            for (k, v) in map {
                t.add_row([k.clone(), cell(v)]);
            }
            t
        }
        other => {
            let mut t = table(&["value"]);
            t.add_row([cell(other)]);
            t
        }
    }
}

/// Prints `value` as pretty JSON or as [`any_table`].
pub fn print(format: Format, value: &Value) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(value)?),
        Format::Table => println!("{}", any_table(value)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_of_objects_get_a_row_each_and_objects_a_row_per_field() {
        let rows = json!([{"id": 1, "leader": true}, {"id": 2, "error": "no answer"}]);
        let text = any_table(&rows).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].contains("ID") && lines[1].contains("LEADER") && lines[1].contains("ERROR"), "{text}");
        assert!(text.lines().any(|l| l.contains("| 1 ") && l.contains("true") && l.contains("| - ")), "{text}");
        assert!(text.lines().any(|l| l.contains("| 2 ") && l.contains("no answer")), "{text}");
        let fields = any_table(&json!({"file": "x.backup", "bytes": 12, "ids": [1, 2]})).to_string();
        assert!(fields.lines().any(|l| l.contains("| bytes ") && l.contains("12")), "{fields}");
        assert!(fields.contains("[1,2]"), "nested values are compact JSON: {fields}");
    }
}
