//! Keystone's resource options (`user_option`, `project_option`, `role_option`): rows of a
//! four-character option id and a JSON value, turned into the `options` object idnode keeps
//! (option names as the API shows them).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::db::Db;

/// Keystone's option registry: id → name (`keystone/identity/backends/resource_options.py`,
/// `keystone/common/resource_options/options/immutable.py`).
const NAMES: [(&str, &str); 8] = [
    ("1000", "ignore_change_password_upon_first_use"),
    ("1001", "ignore_password_expiry"),
    ("1002", "ignore_lockout_failure_attempts"),
    ("1003", "lock_password"),
    ("1004", "ignore_user_inactivity"),
    ("MFAR", "multi_factor_auth_rules"),
    ("MFAE", "multi_factor_auth_enabled"),
    ("IMMU", "immutable"),
];

/// Each owner's options as a JSON object's text, by owner id. An option id Keystone does not
/// register is left out (Keystone ignores it too).
pub async fn options_json(db: &Db, table: &str, owner: &'static str) -> anyhow::Result<HashMap<String, String>> {
    let mut by_owner: HashMap<String, Map<String, Value>> = HashMap::new();
    for r in db.rows(table, &[owner, "option_id", "option_value"], "").await? {
        let Some((_, name)) = NAMES.iter().find(|(id, _)| Some(*id) == r.opt("option_id")) else { continue };
        let value = r.opt("option_value").and_then(|v| serde_json::from_str(v).ok()).unwrap_or(Value::Null);
        if !value.is_null() {
            by_owner.entry(r.text(owner)).or_default().insert(name.to_string(), value);
        }
    }
    Ok(by_owner.into_iter().map(|(k, v)| (k, Value::Object(v).to_string())).collect())
}
