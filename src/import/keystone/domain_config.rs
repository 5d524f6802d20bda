//! Domain-specific configuration (`whitelisted_config`, `sensitive_config`): one document per
//! domain, as `resource::domain_config` stores it: `{group: {option: value}}` in the body,
//! the sensitive options (`ldap.password`) in `private`, never shown.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::db::Db;
use super::source::Source;
use crate::resource::domain_config::{IDENTITY_OPTIONS, LDAP_OPTIONS, SENSITIVE};
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Ref};

/// Where idnode keeps an option.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    Shown,
    Private,
}

/// Where `group.option` goes, as the API's merge places it (by the option, not by the table
/// Keystone kept it in); `None`: an option the API refuses.
fn place(group: &str, option: &str) -> Option<Place> {
    if SENSITIVE.contains(&(group, option)) {
        return Some(Place::Private);
    }
    let allowed = match group {
        "identity" => IDENTITY_OPTIONS,
        "ldap" => LDAP_OPTIONS,
        _ => return None,
    };
    allowed.contains(&option).then_some(Place::Shown)
}

/// One domain's configuration: the shown part and the private part.
#[derive(Default)]
struct Config {
    shown: Map<String, Value>,
    private: Map<String, Value>,
}

impl Config {
    fn set(&mut self, place: Place, group: &str, option: &str, value: Value) {
        let target = match place {
            Place::Shown => &mut self.shown,
            Place::Private => &mut self.private,
        };
        if let Some(g) = target.entry(group.to_string()).or_insert_with(|| json!({})).as_object_mut() {
            g.insert(option.to_string(), value);
        }
    }

    fn doc(self, domain_id: &str) -> Doc {
        Doc {
            kind: DocKind::DomainConfig,
            id: domain_id.to_string(),
            body: Value::Object(self.shown).to_string(),
            private: Value::Object(self.private).to_string(),
            unique: Vec::new(),
        }
    }
}

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let mut configs: BTreeMap<String, Config> = BTreeMap::new();
    let cols = ["domain_id", "group", "option", "value"];
    let order = "ORDER BY `domain_id`, `group`, `option`";
    for table in ["whitelisted_config", "sensitive_config"] {
        for r in db.rows(table, &cols, order).await? {
            let (domain_id, group, option) = (r.text("domain_id"), r.text("group"), r.text("option"));
            let label = format!("{domain_id}: {group}.{option}");
            let Some(place) = place(&group, &option) else {
                src.skip(
                    "domain configurations",
                    label,
                    "not an option idnode's domain configuration accepts (Keystone's \
                     [domain_config] additional_whitelisted_options or additional_sensitive_options let it in)",
                );
                continue;
            };
            let value = match r.opt("value").map(serde_json::from_str::<Value>) {
                Some(Ok(v)) => v,
                _ => {
                    src.skip("domain configurations", label, "its stored value is not JSON");
                    continue;
                }
            };
            configs.entry(domain_id).or_default().set(place, &group, &option, value);
        }
    }
    for (domain_id, config) in configs {
        let doc = config.doc(&domain_id);
        src.push(ImportRecord::Doc { doc, requires: vec![Ref::Domain(domain_id)] });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_placed_as_the_api_places_them() {
        assert_eq!(place("ldap", "password"), Some(Place::Private));
        assert_eq!(place("ldap", "url"), Some(Place::Shown));
        assert_eq!(place("identity", "driver"), Some(Place::Shown));
        assert_eq!(place("identity", "password"), None);
        assert_eq!(place("ldap", "custom"), None);
        assert_eq!(place("other", "url"), None);
    }

    #[test]
    fn a_config_splits_into_body_and_private() {
        let mut c = Config::default();
        c.set(Place::Shown, "identity", "driver", json!("ldap"));
        c.set(Place::Shown, "ldap", "url", json!("ldap://x"));
        c.set(Place::Private, "ldap", "password", json!("s3cret"));
        let d = c.doc("d1");
        assert_eq!((d.kind, d.id.as_str()), (DocKind::DomainConfig, "d1"));
        let body: Value = serde_json::from_str(&d.body).unwrap();
        assert_eq!(body, json!({"identity": {"driver": "ldap"}, "ldap": {"url": "ldap://x"}}));
        let private: Value = serde_json::from_str(&d.private).unwrap();
        assert_eq!(private, json!({"ldap": {"password": "s3cret"}}));
        assert!(d.unique.is_empty());
    }

    #[test]
    fn only_sensitive_options_leave_an_empty_body() {
        let mut c = Config::default();
        c.set(Place::Private, "ldap", "password", json!("p"));
        let d = c.doc("d");
        assert_eq!(d.body, "{}");
    }
}
