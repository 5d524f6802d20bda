//! `idnode mapping test --ruleset FILE --claims FILE`: a ruleset evaluated offline, as
//! `keystone-manage mapping_engine --rules FILE --input FILE` does, so an operator can try a
//! ruleset against a provider's claims before it is written. The same parser (`model`), the
//! same stateless validation (`validate`) and the same engine (`engine`) as the API and the
//! logins; the checks that read the cluster (roles exist, the writer's own rights) are left
//! to the API. Like Keystone's, no matching rule is a failure (non-zero exit).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::engine::{self, Claims};
use super::model::{Authorization, GroupStrategy, IdentityMode, MappingRuleSet, Source};
use super::regex_cache::{RegexCache, DEFAULT_DEADLINE};
use super::validate;

#[derive(Args, Debug)]
pub struct TestArgs {
    /// The ruleset: the JSON the mapping API accepts (`{"mapping": {…}}`, or the ruleset alone).
    #[arg(long)]
    pub ruleset: PathBuf,
    /// The claims: one JSON object, as the provider's token carries them.
    #[arg(long)]
    pub claims: PathBuf,
    /// The provider's domain (`${enclosing_domain_id}`, and the mapping's domain when its
    /// `domain_id` is null). Default: the ruleset's `domain_id`, else `default`.
    #[arg(long)]
    pub domain: Option<String>,
    /// Evaluate this rule only (as a login's `rule_name` hint does).
    #[arg(long)]
    pub rule: Option<String>,
}

/// What `mapping test` prints (JSON).
#[derive(Debug, Serialize, PartialEq)]
pub struct TestReport {
    pub matched: bool,
    /// The winning rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<UserReport>,
    pub groups: Vec<GroupReport>,
    /// Projects, domains or the system, each with the roles granted there.
    pub authorizations: Vec<Authorization>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_restriction_id: Option<String>,
    /// `matches_regex` conditions that outlived their deadline (counted as no match).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub regex_timeouts: Vec<String>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct RuleReport {
    pub index: usize,
    pub name: String,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct UserReport {
    pub name: String,
    /// From the rule's `user_id` template; None: the login derives it from the provider and
    /// the subject (docs/mapping.md, "Claims").
    pub id: Option<String>,
    pub domain_id: String,
    pub identity_mode: IdentityMode,
    /// An `ephemeral` principal: a shadow-registry record, not a user record.
    #[serde(rename = "virtual")]
    pub is_virtual: bool,
    pub is_system: bool,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct GroupReport {
    pub id: Option<String>,
    pub name: String,
    pub domain_id: String,
    pub strategy: GroupStrategy,
}

/// The ruleset in `text`, parsed and validated as the API does; errors name where they are.
pub fn parse_ruleset(text: &str) -> anyhow::Result<MappingRuleSet> {
    let value: Value = serde_json::from_str(text).context("the ruleset is not JSON")?;
    let (value, prefix) = match value {
        Value::Object(mut o) if o.len() == 1 && o.contains_key("mapping") => {
            (o.remove("mapping").unwrap_or_default(), "mapping.")
        }
        other => (other, ""),
    };
    let mut rs: MappingRuleSet = serde_path_to_error::deserialize(value)
        .map_err(|e| anyhow!("invalid ruleset at {prefix}{}: {}", e.path(), e.inner()))?;
    validate::validate(&mut rs).map_err(|e| anyhow!("invalid ruleset: {e}"))?;
    Ok(rs)
}

/// A principal's kind when the rule does not say, as the logins decide it: a person from an
/// OIDC provider is a real user, a Kubernetes or SPIFFE workload a virtual one.
fn default_mode(source: &Source) -> IdentityMode {
    match source {
        Source::Federation { .. } => IdentityMode::Local,
        Source::K8s { .. } | Source::Spiffe { .. } => IdentityMode::Ephemeral,
    }
}

/// Evaluates the ruleset `ruleset` (text) against the claims `claims` (text): `Ok` with
/// `matched: false` when no rule matches, `Err` for an invalid input.
pub fn evaluate(ruleset: &str, claims: &str, domain: Option<&str>, rule: Option<&str>) -> anyhow::Result<TestReport> {
    let mut rs = parse_ruleset(ruleset)?;
    if let Some(name) = rule {
        rs.rules.retain(|r| r.name == name);
        if rs.rules.is_empty() {
            bail!("the ruleset has no rule named {name:?}");
        }
    }
    let claims = match serde_json::from_str(claims).context("the claims are not JSON")? {
        Value::Object(map) => Claims::from_json(&map),
        _ => bail!("the claims must be one JSON object (claim name -> value or list of values)"),
    };
    let enclosing = domain.map(str::to_string).or_else(|| rs.domain_id.clone()).unwrap_or_else(|| "default".into());
    let evaluation = engine::evaluate(&rs, &claims, &enclosing, &RegexCache::new(), DEFAULT_DEADLINE);
    let regex_timeouts = evaluation
        .regex_timeouts
        .iter()
        .map(|t| format!("rule {:?}, claim {:?}, regex {:?}", t.rule_name, t.claim, t.regex))
        .collect();
    let Some(m) = evaluation.result.map_err(|e| anyhow!("evaluation failed: {e}"))? else {
        return Ok(TestReport {
            matched: false,
            rule: None,
            user: None,
            groups: Vec::new(),
            authorizations: Vec::new(),
            token_restriction_id: None,
            regex_timeouts,
        });
    };
    let mode = m.identity.identity_mode.unwrap_or_else(|| default_mode(&rs.source));
    let token_restriction_id = rs.rules.get(m.rule_index).and_then(|r| r.token_restriction_id.clone());
    Ok(TestReport {
        matched: true,
        rule: Some(RuleReport { index: m.rule_index, name: m.rule_name }),
        user: Some(UserReport {
            name: m.identity.user_name,
            id: m.identity.user_id,
            domain_id: m.identity.user_domain_id,
            identity_mode: mode,
            is_virtual: mode == IdentityMode::Ephemeral,
            is_system: m.identity.is_system,
        }),
        groups: m
            .groups
            .into_iter()
            .map(|g| GroupReport {
                id: g.group_id,
                name: g.group_name,
                domain_id: g.group_domain_id,
                strategy: g.strategy,
            })
            .collect(),
        authorizations: m.authorizations,
        token_restriction_id,
        regex_timeouts,
    })
}

fn read(path: &Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading the {what} {}", path.display()))
}

/// `idnode mapping test`: prints the report; no matching rule exits non-zero.
pub fn test(args: &TestArgs, format: crate::output::Format) -> anyhow::Result<()> {
    let ruleset = read(&args.ruleset, "ruleset")?;
    let claims = read(&args.claims, "claims")?;
    let report = evaluate(&ruleset, &claims, args.domain.as_deref(), args.rule.as_deref())
        .with_context(|| format!("{}", args.ruleset.display()))?;
    crate::output::print(format, &serde_json::to_value(&report)?)?;
    if !report.matched {
        bail!("no rule matched: the claims map to no user (as Keystone's \"Could not map any federated user properties\")");
    }
    Ok(())
}
