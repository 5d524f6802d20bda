//! Policy decisions remembered on a validated token (`policy::enforce` asks and fills it). A decision is a function of the caller (the
//! `ValidToken`), the action, the target and the policy set in force; a `ValidToken` is kept
//! for one applied state only (the token caches are keyed by it) and is built afresh for every
//! request when roles come from the relationship store, so a memo on it can never outlive the
//! state its decisions were made on. The policy generation is part of each entry, so a reload
//! is never answered from the old set.

use std::collections::HashMap;
use std::sync::Mutex;

/// Entries one token remembers: a caller hitting many distinct targets stops memoizing
/// rather than growing.
const MAX_ENTRIES: usize = 64;

/// Entries keyed by `generation NUL action NUL target` (the target as compact JSON).
#[derive(Default)]
pub struct Memo(Mutex<HashMap<String, bool>>);

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl Memo {
    pub fn key(action: &str, target: &serde_json::Value, generation: u64) -> String {
        format!("{generation}\u{0}{action}\u{0}{target}")
    }

    pub fn get(&self, key: &str) -> Option<bool> {
        self.0.lock().ok()?.get(key).copied()
    }

    pub fn put(&self, key: String, allowed: bool) {
        if let Ok(mut m) = self.0.lock() {
            if m.len() < MAX_ENTRIES {
                m.insert(key, allowed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_decision_is_remembered_per_action_target_and_policy_generation_and_bounded() {
        let m = Memo::default();
        let target = json!({"token": {"user_id": "u"}});
        m.put(Memo::key("identity:validate_token", &target, 1), true);
        assert_eq!(m.get(&Memo::key("identity:validate_token", &target, 1)), Some(true));
        assert_eq!(m.get(&Memo::key("identity:validate_token", &target, 2)), None, "a reload is not answered");
        assert_eq!(m.get(&Memo::key("identity:check_token", &target, 1)), None);
        assert_eq!(m.get(&Memo::key("identity:validate_token", &json!({"token": {"user_id": "v"}}), 1)), None);
        for i in 0..100 {
            m.put(Memo::key("a", &json!(i), 1), false);
        }
        assert_eq!(m.0.lock().unwrap().len(), MAX_ENTRIES);
        assert_eq!(m.get(&Memo::key("a", &json!(99), 1)), None, "past the bound nothing is kept");
    }
}
