//! Evaluation of a ruleset against an external identity's claims: pure (no I/O, no clock
//! except the regex deadline), so every login path and the property test share one answer.
//!
//! Semantics where the spec is silent, chosen here:
//! - A claim is *present* when it has at least one value after normalization ([`Claims`]).
//!   A condition on an absent claim is false.
//! - `all_of` of nothing holds, `any_of` of nothing does not.
//! - `all_of_strict` with `require_all_keys`: every claim named by a condition anywhere under
//!   it (nested matches included, whatever their kind) must be present, and every element
//!   must hold. Without `require_all_keys` it is `all_of`. (So `require_all_keys` matters for
//!   claims named inside a nested `any_of`: they must exist even when another branch holds.)
//! - `matches_regex` is an unanchored search; a match past its deadline counts as no match and
//!   is listed in [`Evaluation::regex_timeouts`]. Evaluation short-circuits, so only the
//!   matches actually run are listed.
//! - Rules are tried in order; the first whose match holds *and* whose templates resolve wins.
//!   A rule resolves unless, in this order:
//!   1. a template names an absent claim: the rule does not match, the next one is tried
//!      (exception: `user_domain_id` under `claims_or_mapping` falls back to the mapping's
//!      domain);
//!   2. an identifier (`user_id`, `user_domain_id`) is over 256 characters: evaluation stops
//!      with 400 `interpolated_value_too_long`. Display fields (`user_name`, `group_name`)
//!      over 256 characters are cut to their first 253 plus `...`, so every resolved value
//!      fits in 256 characters;
//!   3. a resolved value is empty: the rule does not match;
//!   4. the domain is refused: the rule does not match. `fixed`: the domain is the mapping's
//!      `domain_id` (or, for a global mapping, the enclosing domain) and a `user_domain_id`
//!      resolving elsewhere is refused; `claims_or_mapping` / `claims_only`: the domain must
//!      be in `allowed_domains`. "The mapping's domain" of the claims modes, whose `domain_id`
//!      is null, is the enclosing domain the caller passes (the provider's domain).
//! - A group's domain is its `group_domain_id`, else the resolved domain. `enabled` is the
//!   caller's business (`mapping_disabled`): a disabled ruleset still evaluates here.

use std::collections::BTreeMap;
use std::time::Duration;

use super::model::{
    Authorization, ClaimCondition, DomainResolutionMode, Element, GroupStrategy, IdentityMode, MappingRule,
    MappingRuleSet, Match,
};
use super::regex_cache::{Outcome, RegexCache};
use super::template::{self, Part};
use super::MappingError;

pub use super::model::MAX_CLAIM_VALUE_BYTES;
/// Longest resolved template value, in characters.
pub const MAX_INTERPOLATED_CHARS: usize = 256;
/// What a too-long display field keeps, followed by [`ELLIPSIS`] (253 + 3 = 256).
pub const DISPLAY_KEEP_CHARS: usize = 253;
pub const ELLIPSIS: &str = "...";

/// Normalized claims: each claim's values as strings, oversize values dropped, claims left
/// without a value removed (so a present claim always has a first value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims(BTreeMap<String, Vec<String>>);

impl Claims {
    pub fn from_map(map: BTreeMap<String, Vec<String>>) -> Self {
        let mut out = BTreeMap::new();
        for (k, mut values) in map {
            values.retain(|v| v.len() <= MAX_CLAIM_VALUE_BYTES);
            if !values.is_empty() {
                out.insert(k, values);
            }
        }
        Claims(out)
    }

    /// From a token's JSON claims: a scalar is one value, an array of scalars many (its
    /// non-scalar items skipped); objects and null are ignored. Numbers and booleans become
    /// the strings conditions compare with ([`super::model::scalar_string`]).
    pub fn from_json(obj: &serde_json::Map<String, serde_json::Value>) -> Self {
        use super::model::scalar_string;
        let map = obj
            .iter()
            .map(|(k, v)| {
                let values = match v {
                    serde_json::Value::Array(items) => items.iter().filter_map(scalar_string).collect(),
                    other => scalar_string(other).into_iter().collect(),
                };
                (k.clone(), values)
            })
            .collect();
        Self::from_map(map)
    }

    /// The claim's values; `None` when absent (never an empty slice).
    pub fn get(&self, claim: &str) -> Option<&[String]> {
        self.0.get(claim).map(Vec::as_slice)
    }

    pub fn first(&self, claim: &str) -> Option<&str> {
        self.0.get(claim).and_then(|v| v.first()).map(String::as_str)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedIdentity {
    pub identity_mode: Option<IdentityMode>,
    pub is_system: bool,
    pub user_name: String,
    pub user_id: Option<String>,
    /// The domain resolved per `domain_resolution_mode`.
    pub user_domain_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedGroup {
    pub group_id: Option<String>,
    pub group_name: String,
    pub group_domain_id: String,
    pub strategy: GroupStrategy,
}

/// The winning rule and what it grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    pub rule_index: usize,
    pub rule_name: String,
    pub identity: ResolvedIdentity,
    pub groups: Vec<ResolvedGroup>,
    pub authorizations: Vec<Authorization>,
}

/// One `matches_regex` match that outlived its deadline: the caller emits `RegexMatchTimeout`.
/// The claim's value is left out (it may be personal data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexTimeout {
    pub rule_name: String,
    pub claim: String,
    pub regex: String,
    pub elapsed: Duration,
}

#[derive(Debug)]
pub struct Evaluation {
    /// `Ok(None)`: no rule matched.
    pub result: Result<Option<Matched>, MappingError>,
    /// Reported whatever the result, so the audit events are never lost to an error.
    pub regex_timeouts: Vec<RegexTimeout>,
}

/// Evaluates `rs` against `claims`. `enclosing_domain_id` is the value of
/// `${enclosing_domain_id}` and the mapping's domain when `domain_id` is null.
pub fn evaluate(
    rs: &MappingRuleSet,
    claims: &Claims,
    enclosing_domain_id: &str,
    cache: &RegexCache,
    regex_deadline: Duration,
) -> Evaluation {
    let mut timeouts = Vec::new();
    let mut result = Ok(None);
    for (index, rule) in rs.rules.iter().enumerate() {
        let mut ctx = Ctx { claims, cache, deadline: regex_deadline, rule: &rule.name, timeouts: &mut timeouts };
        if !ctx.matches(&rule.matcher) {
            continue;
        }
        match resolve(rs, index, rule, claims, enclosing_domain_id) {
            Ok(Some(m)) => {
                result = Ok(Some(m));
                break;
            }
            Ok(None) => continue,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    Evaluation { result, regex_timeouts: timeouts }
}

struct Ctx<'a> {
    claims: &'a Claims,
    cache: &'a RegexCache,
    deadline: Duration,
    rule: &'a str,
    timeouts: &'a mut Vec<RegexTimeout>,
}

impl Ctx<'_> {
    fn matches(&mut self, m: &Match) -> bool {
        match m {
            Match::AllOf(elements) => elements.iter().all(|e| self.element(e)),
            Match::AnyOf(elements) => elements.iter().any(|e| self.element(e)),
            Match::AllOfStrict(s) => {
                (!s.require_all_keys || s.conditions.iter().all(|e| self.keys_present(e)))
                    && s.conditions.iter().all(|e| self.element(e))
            }
        }
    }

    fn keys_present(&self, e: &Element) -> bool {
        match e {
            Element::Condition(c) => self.claims.get(c.claim()).is_some(),
            Element::Match(Match::AllOf(es) | Match::AnyOf(es)) => es.iter().all(|e| self.keys_present(e)),
            Element::Match(Match::AllOfStrict(s)) => s.conditions.iter().all(|e| self.keys_present(e)),
        }
    }

    fn element(&mut self, e: &Element) -> bool {
        match e {
            Element::Match(m) => self.matches(m),
            Element::Condition(c) => self.condition(c),
        }
    }

    fn condition(&mut self, c: &ClaimCondition) -> bool {
        let Some(values) = self.claims.get(c.claim()) else { return false };
        match c {
            ClaimCondition::Equals { value, .. } => values.iter().any(|v| v == value.as_str()),
            ClaimCondition::AnyOf { values: wanted, .. } => {
                values.iter().any(|v| wanted.iter().any(|w| w.as_str() == v))
            }
            ClaimCondition::MatchesRegex { claim, regex } => {
                values.iter().any(|v| match self.cache.is_match(regex, v, self.deadline) {
                    Outcome::Match => true,
                    Outcome::NoMatch | Outcome::Invalid => false,
                    Outcome::TimedOut { elapsed } => {
                        self.timeouts.push(RegexTimeout {
                            rule_name: self.rule.to_owned(),
                            claim: claim.clone(),
                            regex: regex.clone(),
                            elapsed,
                        });
                        false
                    }
                })
            }
        }
    }
}

/// A template's value; `None` when it names an absent claim or is malformed.
fn interpolate(t: &str, claims: &Claims, enclosing: &str) -> Option<String> {
    let mut out = String::new();
    for part in template::parse(t).ok()? {
        match part {
            Part::Text(s) => out.push_str(s),
            Part::Claim(k) => out.push_str(claims.first(k)?),
            Part::EnclosingDomain => out.push_str(enclosing),
        }
    }
    Some(out)
}

fn too_long(s: &str) -> bool {
    s.chars().count() > MAX_INTERPOLATED_CHARS
}

fn check_id(field: &str, rule: &str, s: &str) -> Result<(), MappingError> {
    if too_long(s) {
        return Err(MappingError::new(
            400,
            "interpolated_value_too_long",
            format!("rule {rule:?}: {field} resolves to more than {MAX_INTERPOLATED_CHARS} characters"),
        ));
    }
    Ok(())
}

/// A display field over the limit keeps its first 253 characters plus `...`.
pub fn display(s: String) -> String {
    if too_long(&s) {
        let mut cut: String = s.chars().take(DISPLAY_KEEP_CHARS).collect();
        cut.push_str(ELLIPSIS);
        cut
    } else {
        s
    }
}

/// Resolves a rule whose match held: `Ok(None)` when it does not match after all (module
/// doc, steps 1, 3 and 4), `Err` for step 2.
fn resolve(
    rs: &MappingRuleSet,
    index: usize,
    rule: &MappingRule,
    claims: &Claims,
    enclosing: &str,
) -> Result<Option<Matched>, MappingError> {
    let id = &rule.identity;
    let mode = rs.domain_resolution_mode;
    // Step 1: every template, an absent claim ends here.
    let Some(user_name) = interpolate(&id.user_name, claims, enclosing) else { return Ok(None) };
    let user_id = match &id.user_id {
        None => None,
        Some(t) => match interpolate(t, claims, enclosing) {
            Some(v) => Some(v),
            None => return Ok(None),
        },
    };
    let named_domain = match &id.user_domain_id {
        None => None,
        Some(t) => match (interpolate(t, claims, enclosing), mode) {
            (Some(v), _) => Some(v),
            (None, DomainResolutionMode::ClaimsOrMapping) => None,
            (None, _) => return Ok(None),
        },
    };
    let mut group_names = Vec::with_capacity(rule.groups.len());
    for g in &rule.groups {
        let Some(name) = interpolate(&g.group_name, claims, enclosing) else { return Ok(None) };
        group_names.push(name);
    }

    // Step 2: identifiers error out, display fields are cut.
    if let Some(v) = &user_id {
        check_id("user_id", &rule.name, v)?;
    }
    if let Some(v) = &named_domain {
        check_id("user_domain_id", &rule.name, v)?;
    }
    let user_name = display(user_name);
    let group_names: Vec<String> = group_names.into_iter().map(display).collect();

    // Step 3: nothing resolves to an empty value.
    if user_name.is_empty()
        || user_id.as_ref().is_some_and(String::is_empty)
        || named_domain.as_ref().is_some_and(String::is_empty)
        || group_names.iter().any(String::is_empty)
    {
        return Ok(None);
    }

    // Step 4: the domain.
    let domain = match mode {
        DomainResolutionMode::Fixed => {
            let locked = rs.domain_id.as_deref().unwrap_or(enclosing);
            if named_domain.as_deref().is_some_and(|d| d != locked) {
                return Ok(None);
            }
            locked.to_owned()
        }
        DomainResolutionMode::ClaimsOrMapping => named_domain.unwrap_or_else(|| enclosing.to_owned()),
        DomainResolutionMode::ClaimsOnly => {
            // Must come from the claims: a template without a claim does not count.
            if !id.user_domain_id.as_deref().is_some_and(template::names_claim) {
                return Ok(None);
            }
            let Some(d) = named_domain else { return Ok(None) };
            d
        }
    };
    if domain.is_empty() || (mode != DomainResolutionMode::Fixed && !rs.allowed_domains.contains(&domain)) {
        return Ok(None);
    }

    let groups = rule
        .groups
        .iter()
        .zip(group_names)
        .map(|(g, group_name)| ResolvedGroup {
            group_id: g.group_id.clone(),
            group_name,
            group_domain_id: g.group_domain_id.clone().unwrap_or_else(|| domain.clone()),
            strategy: g.strategy,
        })
        .collect();
    Ok(Some(Matched {
        rule_index: index,
        rule_name: rule.name.clone(),
        identity: ResolvedIdentity {
            identity_mode: id.identity_mode,
            is_system: id.is_system,
            user_name,
            user_id,
            user_domain_id: domain,
        },
        groups,
        authorizations: rule.authorizations.clone(),
    }))
}
