//! Write-time checks of a ruleset that need no state, in one place so a stored ruleset is
//! always one the engine can evaluate. The checks that read state (roles exist, the operator
//! holds them, group admin, SCIM realms, admin-only modes) belong to the API layer.

use std::collections::HashSet;

use super::model::{Authorization, ClaimCondition, DomainResolutionMode, Element, MappingRuleSet, Match};
use super::regex_cache::compile_safe;
use super::template::{self, ENCLOSING_DOMAIN};
use super::MappingError;

/// Longest rule name, in bytes.
pub const MAX_RULE_NAME: usize = 64;

/// A rule name is a handle: 1 to 64 ASCII letters, digits, `_` or `-`, starting with a letter
/// or digit (the spec says "alphanumeric handle"; `_` and `-` are allowed as separators).
pub fn is_rule_name(name: &str) -> bool {
    name.len() <= MAX_RULE_NAME
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Normalizes (`domain_id` is forced null in the claims-driven modes) and validates a ruleset.
/// The first failure is returned.
pub fn validate(rs: &mut MappingRuleSet) -> Result<(), MappingError> {
    let claims_mode = rs.domain_resolution_mode != DomainResolutionMode::Fixed;
    if claims_mode {
        rs.domain_id = None;
    }
    if claims_mode && (rs.allowed_domains.is_empty() || rs.allowed_domains.iter().any(|d| d.is_empty())) {
        return Err(MappingError::invalid(
            "allowed_domains_required",
            "claims_or_mapping and claims_only need a non-empty allowed_domains of domain ids",
        ));
    }
    if !claims_mode && !rs.allowed_domains.is_empty() {
        return Err(MappingError::invalid(
            "allowed_domains_required",
            "allowed_domains must be empty for the fixed domain resolution mode",
        ));
    }

    let mut names = HashSet::new();
    for rule in &rs.rules {
        if !is_rule_name(&rule.name) {
            return Err(MappingError::invalid(
                "invalid_rule_name",
                format!(
                    "rule name {:?} is not a handle of 1 to {MAX_RULE_NAME} letters, digits, '_' or '-' \
                     starting with a letter or digit",
                    rule.name
                ),
            ));
        }
        if !names.insert(rule.name.as_str()) {
            return Err(MappingError::invalid(
                "duplicate_rule_name",
                format!("rule name {:?} is used more than once", rule.name),
            ));
        }

        let id = &rule.identity;
        let templates = [Some(&id.user_name), id.user_id.as_ref(), id.user_domain_id.as_ref()]
            .into_iter()
            .flatten()
            .chain(rule.groups.iter().map(|g| &g.group_name));
        for t in templates {
            check_template(&rule.name, t)?;
        }
        if id.user_name.is_empty() || rule.groups.iter().any(|g| g.group_name.is_empty()) {
            return Err(MappingError::invalid(
                "invalid_template",
                format!("rule {:?}: user_name and group_name must not be empty", rule.name),
            ));
        }
        check_match(&rule.name, &rule.matcher)?;

        let domain_from_claims = id.user_domain_id.as_deref().is_some_and(template::names_claim);
        match rs.domain_resolution_mode {
            DomainResolutionMode::ClaimsOnly if !domain_from_claims => {
                return Err(MappingError::invalid(
                    "domain_claim_required",
                    format!("rule {:?}: claims_only needs a ${{claims.<key>}} template in user_domain_id", rule.name),
                ));
            }
            DomainResolutionMode::Fixed if domain_from_claims => {
                return Err(MappingError::invalid(
                    "domain_override_fixed_mode",
                    format!("rule {:?}: the fixed mode does not let claims choose user_domain_id", rule.name),
                ));
            }
            _ => {}
        }
        if !id.is_system && rule.authorizations.iter().any(|a| matches!(a, Authorization::System { .. })) {
            return Err(MappingError::invalid(
                "system_scope_requires_is_system",
                format!("rule {:?}: a system authorization needs identity.is_system true", rule.name),
            ));
        }
    }
    Ok(())
}

fn check_template(rule: &str, t: &str) -> Result<(), MappingError> {
    let parts =
        template::parse(t).map_err(|e| MappingError::invalid("invalid_template", format!("rule {rule:?}: {e}")))?;
    if parts.iter().any(|p| matches!(p, template::Part::Claim(k) if *k == ENCLOSING_DOMAIN)) {
        return Err(shadowing(rule));
    }
    Ok(())
}

fn shadowing(rule: &str) -> MappingError {
    MappingError::invalid(
        "system_token_shadowing",
        format!("rule {rule:?}: {ENCLOSING_DOMAIN} is the system macro ${{{ENCLOSING_DOMAIN}}}, not a claim"),
    )
}

fn check_match(rule: &str, m: &Match) -> Result<(), MappingError> {
    let elements = match m {
        Match::AllOf(e) | Match::AnyOf(e) => e,
        Match::AllOfStrict(s) => &s.conditions,
    };
    for e in elements {
        match e {
            Element::Match(inner) => check_match(rule, inner)?,
            Element::Condition(c) => {
                let claim = c.claim();
                if claim == ENCLOSING_DOMAIN || claim == "${enclosing_domain_id}" {
                    return Err(shadowing(rule));
                }
                if let ClaimCondition::MatchesRegex { regex, .. } = c {
                    compile_safe(regex).map_err(|why| {
                        MappingError::invalid(
                            "regex_safety_violation",
                            format!("rule {rule:?}: regex {regex:?} refused: {why}"),
                        )
                    })?;
                }
            }
        }
    }
    Ok(())
}
