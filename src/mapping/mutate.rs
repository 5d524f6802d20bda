//! `POST /v4/mappings/{mapping_id}/rules/mutate` (api-shapes §12.2): mutations apply in
//! order to a copy of the rules; the first failure refuses them all, so a ruleset is changed
//! by every mutation or by none. A rule name that names no rule (an insert's anchor, an
//! update's or delete's `rule_name`) answers 409, as NG does for an unknown anchor.

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::MappingRule;
use crate::http::error::{ApiError, ApiResult};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MutateBody {
    /// Applied in order, atomically.
    pub mutations: Vec<Mutation>,
}

#[derive(Deserialize, ToSchema, Debug)]
#[serde(tag = "operation", rename_all = "snake_case", deny_unknown_fields)]
pub enum Mutation {
    /// Without `position`, the rule goes last.
    Insert {
        rule: MappingRule,
        #[serde(default)]
        position: Option<Position>,
    },
    /// Replaces the rule named `rule_name` in place (the new rule may rename it).
    Update {
        rule_name: String,
        rule: MappingRule,
    },
    Delete {
        rule_name: String,
    },
}

#[derive(Deserialize, ToSchema, Debug)]
#[serde(deny_unknown_fields)]
pub struct Position {
    #[serde(rename = "type")]
    pub side: Side,
    /// The name of an existing rule.
    pub anchor: String,
}

#[derive(Deserialize, ToSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Before,
    After,
}

fn find(rules: &[MappingRule], name: &str, role: &str) -> ApiResult<usize> {
    rules.iter().position(|r| r.name == name).ok_or_else(|| {
        ApiError::new(axum::http::StatusCode::CONFLICT, format!("The {role} rule {name:?} is not in this ruleset."))
    })
}

/// The rules after every mutation; the caller validates the result as a whole.
pub fn apply(mut rules: Vec<MappingRule>, mutations: Vec<Mutation>) -> ApiResult<Vec<MappingRule>> {
    if mutations.is_empty() {
        return Err(ApiError::bad_request("Invalid input for field 'mutations': at least one mutation is required."));
    }
    for m in mutations {
        match m {
            Mutation::Insert { rule, position: None } => rules.push(rule),
            Mutation::Insert { rule, position: Some(p) } => {
                let at = find(&rules, &p.anchor, "anchor")?;
                rules.insert(if p.side == Side::Before { at } else { at + 1 }, rule);
            }
            Mutation::Update { rule_name, rule } => {
                let at = find(&rules, &rule_name, "updated")?;
                rules[at] = rule;
            }
            Mutation::Delete { rule_name } => {
                let at = find(&rules, &rule_name, "deleted")?;
                rules.remove(at);
            }
        }
    }
    Ok(rules)
}
