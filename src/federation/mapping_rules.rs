//! The shape of OS-FEDERATION mapping rules (Keystone's attribute mapping schema, versions
//! 1.0 to 3.0): checked on every write so a stored mapping is always one the engine can read.

use serde_json::Value;

use crate::http::error::{ApiError, ApiResult};

pub const VERSIONS: [&str; 3] = ["1.0", "2.0", "3.0"];

fn fail(msg: String) -> ApiError {
    // Keystone joins its schema errors, each ending in a newline.
    ApiError::bad_request(format!("{msg}\n"))
}

fn object<'a>(v: &'a Value, allowed: &[&str]) -> ApiResult<&'a serde_json::Map<String, Value>> {
    let o = v.as_object().ok_or_else(|| fail(format!("{v} is not of type 'object'")))?;
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(fail(format!("Additional properties are not allowed ('{k}' was unexpected)")));
    }
    Ok(o)
}

fn string(o: &serde_json::Map<String, Value>, key: &str) -> ApiResult<()> {
    match o.get(key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(v) => Err(fail(format!("{v} is not of type 'string'"))),
    }
}

fn array(v: &Value, non_empty: bool) -> ApiResult<&Vec<Value>> {
    let a = v.as_array().ok_or_else(|| fail(format!("{v} is not of type 'array'")))?;
    if non_empty && a.is_empty() {
        return Err(fail("[] should be non-empty".into()));
    }
    Ok(a)
}

fn domain(v: &Value) -> ApiResult<()> {
    let o = object(v, &["id", "name"])?;
    string(o, "id")?;
    string(o, "name")
}

fn projects(v: &Value, version: &str) -> ApiResult<()> {
    let allowed: &[&str] = if version == "1.0" { &["name", "roles"] } else { &["name", "roles", "domain"] };
    for p in array(v, false)? {
        let o = object(p, allowed)?;
        for key in ["name", "roles"] {
            if !o.contains_key(key) {
                return Err(fail(format!("'{key}' is a required property")));
            }
        }
        string(o, "name")?;
        for r in array(&o["roles"], false)? {
            let ro = object(r, &["name"])?;
            if !ro.contains_key("name") {
                return Err(fail("'name' is a required property".into()));
            }
            string(ro, "name")?;
        }
        if let Some(d) = o.get("domain") {
            domain(d)?;
        }
    }
    Ok(())
}

fn local(v: &Value, version: &str) -> ApiResult<()> {
    let allowed: &[&str] = if version == "3.0" {
        &["user", "projects", "group", "groups", "group_ids", "domain", "projects_json"]
    } else {
        &["user", "projects", "group", "groups", "group_ids", "domain"]
    };
    for item in array(v, false)? {
        let o = object(item, allowed)?;
        if let Some(u) = o.get("user") {
            let uo = object(u, &["id", "name", "email", "domain", "type"])?;
            for k in ["id", "name", "email"] {
                string(uo, k)?;
            }
            if let Some(d) = uo.get("domain") {
                domain(d)?;
            }
            if let Some(t) = uo.get("type") {
                if !matches!(t.as_str(), Some("ephemeral" | "local")) {
                    return Err(fail(format!("{t} is not one of ['ephemeral', 'local']")));
                }
            }
        }
        if let Some(p) = o.get("projects") {
            projects(p, version)?;
        }
        if let Some(g) = o.get("group") {
            let by_id = object(g, &["id"]).ok().filter(|g| g.get("id").is_some_and(Value::is_string)).is_some();
            let by_name = object(g, &["name", "domain"]).ok().is_some_and(|g| {
                g.get("name").is_some_and(Value::is_string) && g.get("domain").is_some_and(|d| domain(d).is_ok())
            });
            if !by_id && !by_name {
                return Err(fail(format!("{g} is not valid under any of the given schemas")));
            }
        }
        for k in ["groups", "group_ids", "projects_json"] {
            string(o, k)?;
        }
        if let Some(d) = o.get("domain") {
            domain(d)?;
        }
    }
    Ok(())
}

fn remote(v: &Value) -> ApiResult<()> {
    for item in array(v, true)? {
        let o = item.as_object().ok_or_else(|| fail(format!("{item} is not of type 'object'")))?;
        let lists: Vec<&str> =
            ["any_one_of", "not_any_of", "blacklist", "whitelist"].into_iter().filter(|k| o.contains_key(*k)).collect();
        let valid = o.get("type").is_some_and(Value::is_string)
            && lists.len() <= 1
            && lists.iter().all(|k| o[*k].is_array())
            && o.keys().all(|k| k == "type" || lists.contains(&k.as_str()) || k == "regex")
            && o.get("regex").is_none_or(|r| {
                r.is_boolean() && lists.first().is_some_and(|k| *k == "any_one_of" || *k == "not_any_of")
            });
        if !valid {
            return Err(fail(format!("{item} is not valid under any of the given schemas")));
        }
    }
    Ok(())
}

/// Checks `rules` against the schema of `version`.
pub fn check(rules: Option<&Value>, version: &str) -> ApiResult<()> {
    if !VERSIONS.contains(&version) {
        return Err(fail(format!("'{version}' is not a supported mapping schema version ({})", VERSIONS.join(", "))));
    }
    let Some(rules) = rules else { return Err(fail("'rules' is a required property".into())) };
    for rule in array(rules, true)? {
        let o = object(rule, &["local", "remote"])?;
        for key in ["local", "remote"] {
            if !o.contains_key(key) {
                return Err(fail(format!("'{key}' is a required property")));
            }
        }
        local(&o["local"], version)?;
        remote(&o["remote"])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check;

    #[test]
    fn tempest_rules_pass_and_broken_ones_fail() {
        let good = json!([{"local": [{"user": {"name": "{0}"}}, {"group_ids": "{1}"}],
                           "remote": [{"type": "openstack_username"}, {"type": "group_ids", "whitelist": ["abc", "123"]}]}]);
        check(Some(&good), "1.0").unwrap();
        let group = json!([{"local": [{"group": {"id": "g1"}}], "remote": [{"type": "x"}]}]);
        check(Some(&group), "1.0").unwrap();
        for (bad, why) in [
            (json!([]), "non-empty"),
            (json!([{"local": []}]), "'remote' is a required"),
            (json!([{"local": [], "remote": [{"type": "a", "bogus": 1}]}]), "not valid under any"),
            (json!([{"local": [{"group": {"name": "x"}}], "remote": [{"type": "a"}]}]), "not valid under any"),
            (json!([{"local": [], "remote": [{"type": "a", "whitelist": [], "blacklist": []}]}]), "not valid"),
            (json!([{"local": [{"user": {"type": "robot"}}], "remote": [{"type": "a"}]}]), "not one of"),
        ] {
            let e = check(Some(&bad), "1.0").unwrap_err();
            assert_eq!(e.status.as_u16(), 400);
            assert!(e.message.contains(why), "{bad}: {}", e.message);
        }
        assert!(check(None, "1.0").unwrap_err().message.contains("'rules' is a required property"));
        assert!(check(Some(&good), "9.9").is_err());
    }
}
