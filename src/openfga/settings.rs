//! `[assignment] driver` and `[openfga]`: where role assignments live. `raft` (the default)
//! keeps them in the replicated state; `openfga` sends every grant, revoke, check and listing
//! to an OpenFGA store. A missing or inconsistent setting stops the node at startup with a
//! message naming it, so a node never serves with half a driver.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use url::Url;

use crate::state::model::GUARDED_ROLE_NAMES;

/// Which store holds role assignments.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AssignmentDriver {
    #[default]
    Raft,
    OpenFga(Box<OpenFgaSettings>),
}

/// The five kinds of Keystone object a relationship names, each as one or more store types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    User,
    Group,
    Project,
    Domain,
    System,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::User, Kind::Group, Kind::Project, Kind::Domain, Kind::System];

    fn key(self) -> &'static str {
        match self {
            Kind::User => "kinds_user",
            Kind::Group => "kinds_group",
            Kind::Project => "kinds_project",
            Kind::Domain => "kinds_domain",
            Kind::System => "kinds_system",
        }
    }

    fn default_type(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Group => "group",
            Kind::Project => "project",
            Kind::Domain => "domain",
            Kind::System => "system",
        }
    }
}

/// How Keystone ids are spelled in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdTransform {
    /// As Keystone spells them.
    #[default]
    None,
    /// A 32-hex-digit id is written with the canonical UUID dashes and read back without.
    UuidDashes,
}

/// The bearer token the store expects; never printed.
#[derive(Clone, PartialEq)]
pub struct ApiToken(pub String);

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpenFgaSettings {
    /// The store's HTTP API base (`api_url`), without a trailing slash.
    pub api_url: Url,
    pub store_id: String,
    /// `authorization_model_id`; none: the store's latest model.
    pub model_id: Option<String>,
    pub api_token: Option<ApiToken>,
    /// One request's bound (`request_timeout_ms`, default 5000).
    pub timeout: Duration,
    /// Store type names per kind; the first is where writes go, all are read.
    pub kinds: BTreeMap<Kind, Vec<String>>,
    pub id_transform: IdTransform,
    /// Role id (or a global role's name) to the relation that stands for it, as read at
    /// startup.
    pub role_to_relation: BTreeMap<String, String>,
    /// `role_to_relation_file`: where the table lives instead, re-read when it changes (a
    /// role created at run time can be mapped without restarting the cluster).
    pub role_to_relation_file: Option<PathBuf>,
    /// The relation a group's members hold (`group_member_relation`, default `member`): a
    /// group is granted a role as the userset `group:<id>#member`.
    pub group_member_relation: String,
    pub max_retries: u32,
    pub retry_backoff: Duration,
    pub max_concurrency: usize,
}

impl OpenFgaSettings {
    /// The store types of a kind (at least one).
    pub fn types(&self, kind: Kind) -> &[String] {
        self.kinds.get(&kind).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// A store type or relation name: what OpenFGA's model language accepts.
fn valid_name(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 50
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && v.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// A role table: `<role id or global role name>:<relation>` entries separated by commas or
/// line breaks; in a file, `#` starts a comment. An empty table is refused, and so is a key
/// other than a guarded role's name (`admin`, `service`) on the relation such a name maps to:
/// a grant of that role, which a domain manager may make, would make an administrator. (A key
/// that is a role id is checked against the roles when used, `tuples::Vocabulary::new`.)
pub fn parse_role_table(text: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut table = BTreeMap::new();
    for line in text.lines().map(|l| l.split_once('#').map_or(l, |(kept, _)| kept)) {
        for pair in list(line) {
            let (role, relation) = pair
                .split_once(':')
                .map(|(r, rel)| (r.trim(), rel.trim()))
                .filter(|(r, rel)| !r.is_empty() && !rel.is_empty())
                .ok_or_else(|| anyhow!("entry {pair:?} is not <role id>:<relation>"))?;
            if !valid_name(relation) {
                bail!("{relation:?} is not a relation name");
            }
            if table.insert(role.to_string(), relation.to_string()).is_some() {
                bail!("role {role:?} is named twice");
            }
        }
    }
    if table.is_empty() {
        bail!("no role is mapped: map each role to its relation");
    }
    let guarded = |role: &str| GUARDED_ROLE_NAMES.contains(&role);
    for (role, relation) in table.iter().filter(|(role, _)| !guarded(role)) {
        if let Some((name, _)) = table.iter().find(|(other, rel)| guarded(other) && *rel == relation) {
            bail!(
                "role {role:?} is mapped to {relation:?}, the relation of the {name} role: a grant of it would make an \
                 {name}; map it to a relation of its own"
            );
        }
    }
    Ok(table)
}

fn list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

impl AssignmentDriver {
    /// `[assignment] driver` through `assignment`, and the `[openfga]` section through
    /// `openfga` (a key's value, if set). `openfga_set` says whether the section has any key,
    /// so a section left behind under another driver is named instead of ignored.
    pub fn from_sections<'a>(
        assignment: impl Fn(&str) -> Option<&'a str>,
        openfga: impl Fn(&str) -> Option<&'a str>,
        openfga_set: bool,
        read_file: impl Fn(&str) -> std::io::Result<String>,
    ) -> anyhow::Result<Self> {
        match assignment("driver").map(str::trim).unwrap_or("raft") {
            "" | "raft" | "sql" | "relational" => {
                if openfga_set {
                    bail!("[openfga] is set but [assignment] driver is raft: set driver = openfga or remove [openfga]");
                }
                Ok(AssignmentDriver::Raft)
            }
            "openfga" => Ok(AssignmentDriver::OpenFga(Box::new(parse(openfga, read_file)?))),
            other => bail!("[assignment] driver = {other:?}: use raft or openfga"),
        }
    }
}

fn parse<'a>(
    get: impl Fn(&str) -> Option<&'a str>,
    read_file: impl Fn(&str) -> std::io::Result<String>,
) -> anyhow::Result<OpenFgaSettings> {
    let text = |k: &str| get(k).map(str::trim).filter(|v| !v.is_empty());
    let number = |k: &str, default: u64| -> anyhow::Result<u64> {
        text(k).map_or(Ok(default), |v| v.parse().map_err(|_| anyhow!("[openfga] {k} = {v:?} is not a whole number")))
    };
    let url_text = text("api_url").ok_or_else(|| anyhow!("[openfga] api_url is required with driver = openfga"))?;
    let api_url = Url::parse(url_text).map_err(|e| anyhow!("[openfga] api_url {url_text:?}: {e}"))?;
    if !matches!(api_url.scheme(), "http" | "https") || api_url.host().is_none() {
        bail!("[openfga] api_url {url_text:?}: an http(s) URL with a host");
    }
    let store_id = text("store_id").ok_or_else(|| anyhow!("[openfga] store_id is required with driver = openfga"))?;
    let api_token = match (text("api_token"), text("api_token_file")) {
        (Some(_), Some(_)) => bail!("[openfga] api_token and api_token_file: set one, not both"),
        (Some(t), None) => Some(ApiToken(t.to_string())),
        (None, Some(f)) => {
            let t = read_file(f).with_context(|| format!("[openfga] api_token_file {f}"))?;
            let t = t.trim();
            if t.is_empty() {
                bail!("[openfga] api_token_file {f} is empty");
            }
            Some(ApiToken(t.to_string()))
        }
        (None, None) => None,
    };
    let mut kinds = BTreeMap::new();
    let mut owner: BTreeMap<String, Kind> = BTreeMap::new();
    for kind in Kind::ALL {
        let types = text(kind.key()).map(list).unwrap_or_else(|| vec![kind.default_type().to_string()]);
        if types.is_empty() {
            bail!("[openfga] {} names no store type", kind.key());
        }
        for t in &types {
            if !valid_name(t) {
                bail!("[openfga] {} = {t:?} is not a store type name", kind.key());
            }
            if let Some(other) = owner.insert(t.clone(), kind) {
                bail!("[openfga] store type {t:?} is in both {} and {}", other.key(), kind.key());
            }
        }
        kinds.insert(kind, types);
    }
    let id_transform = match text("id_transform") {
        None | Some("none") => IdTransform::None,
        Some("uuid-dashes") => IdTransform::UuidDashes,
        Some(other) => bail!("[openfga] id_transform = {other:?}: use uuid-dashes or leave it unset"),
    };
    let (role_to_relation, role_to_relation_file) = match (text("role_to_relation"), text("role_to_relation_file")) {
        (Some(_), Some(_)) => bail!("[openfga] role_to_relation and role_to_relation_file: set one, not both"),
        (Some(inline), None) => {
            (parse_role_table(inline).map_err(|e| anyhow!("[openfga] role_to_relation: {e}"))?, None)
        }
        (None, Some(f)) => {
            let content = read_file(f).with_context(|| format!("[openfga] role_to_relation_file {f}"))?;
            let table = parse_role_table(&content).map_err(|e| anyhow!("[openfga] role_to_relation_file {f}: {e}"))?;
            (table, Some(PathBuf::from(f)))
        }
        (None, None) => {
            bail!("[openfga] role_to_relation (or role_to_relation_file) is required with driver = openfga: map each role to its relation")
        }
    };
    let group_member_relation = text("group_member_relation").unwrap_or("member").to_string();
    if !valid_name(&group_member_relation) {
        bail!("[openfga] group_member_relation = {group_member_relation:?} is not a relation name");
    }
    let timeout_ms = number("request_timeout_ms", 5000)?;
    let max_concurrency = number("max_concurrency", 10)?;
    if timeout_ms == 0 || max_concurrency == 0 {
        bail!("[openfga] request_timeout_ms and max_concurrency must be positive");
    }
    let max_retries = number("max_retries", 0)?;
    if max_retries > 10 {
        bail!("[openfga] max_retries = {max_retries}: at most 10");
    }
    Ok(OpenFgaSettings {
        api_url,
        store_id: store_id.to_string(),
        model_id: text("authorization_model_id").map(str::to_string),
        api_token,
        timeout: Duration::from_millis(timeout_ms),
        kinds,
        id_transform,
        role_to_relation,
        role_to_relation_file,
        group_member_relation,
        max_retries: max_retries as u32,
        retry_backoff: Duration::from_millis(number("retry_backoff_ms", 100)?),
        max_concurrency: max_concurrency as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(assignment: &[(&str, &str)], openfga: &[(&str, &str)]) -> anyhow::Result<AssignmentDriver> {
        let a: BTreeMap<String, String> = assignment.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let o: BTreeMap<String, String> = openfga.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        AssignmentDriver::from_sections(
            |k| a.get(k).map(String::as_str),
            |k| o.get(k).map(String::as_str),
            !o.is_empty(),
            |f| match f {
                "/token" => Ok(" s3cret \n".into()),
                "/roles" => Ok("# the cloud's roles\nr1:admin  # the first\nmember:member, reader:reader\n".into()),
                "/no-roles" => Ok("# nothing yet\n".into()),
                _ => Err(std::io::ErrorKind::NotFound.into()),
            },
        )
    }

    const BASE: [(&str, &str); 3] = [
        ("api_url", "http://127.0.0.1:8080"),
        ("store_id", "01STORE"),
        ("role_to_relation", "r1:admin, member:member"),
    ];

    fn fga(extra: &[(&str, &str)]) -> anyhow::Result<OpenFgaSettings> {
        let mut all = BASE.to_vec();
        all.extend_from_slice(extra);
        match driver(&[("driver", "openfga")], &all)? {
            AssignmentDriver::OpenFga(s) => Ok(*s),
            AssignmentDriver::Raft => bail!("raft"),
        }
    }

    #[test]
    fn raft_is_the_default_and_refuses_a_stray_openfga_section() {
        assert_eq!(driver(&[], &[]).unwrap(), AssignmentDriver::Raft);
        let err = driver(&[], &[("api_url", "http://x")]).unwrap_err().to_string();
        assert!(err.contains("[openfga] is set but [assignment] driver is raft"), "{err}");
        let err = driver(&[("driver", "ldap")], &[]).unwrap_err().to_string();
        assert!(err.contains("[assignment] driver = \"ldap\""), "{err}");
    }

    #[test]
    fn defaults_follow_the_spec() {
        let s = fga(&[]).unwrap();
        assert_eq!((s.max_retries, s.retry_backoff, s.max_concurrency), (0, Duration::from_millis(100), 10));
        assert_eq!(s.types(Kind::Project), ["project"]);
        assert_eq!(s.id_transform, IdTransform::None);
        assert_eq!(s.model_id, None);
        assert_eq!(s.role_to_relation.values().collect::<Vec<_>>(), ["member", "admin"]);
        assert_eq!(s.role_to_relation_file, None);
    }

    #[test]
    fn each_missing_or_inconsistent_setting_is_named() {
        for (extra, expect) in [
            (vec![("api_url", "")], "[openfga] api_url is required"),
            (vec![("api_url", "ftp://x")], "[openfga] api_url \"ftp://x\""),
            (vec![("store_id", " ")], "[openfga] store_id is required"),
            (vec![("role_to_relation", "")], "[openfga] role_to_relation (or role_to_relation_file) is required"),
            (vec![("role_to_relation_file", "/roles")], "role_to_relation and role_to_relation_file: set one"),
            (vec![("role_to_relation", "r1")], "entry \"r1\" is not <role id>:<relation>"),
            (vec![("role_to_relation", "r1:a, r1:b")], "role \"r1\" is named twice"),
            (vec![("role_to_relation", "r1:a b")], "\"a b\" is not a relation name"),
            (vec![("kinds_group", "user")], "store type \"user\" is in both kinds_user and kinds_group"),
            (vec![("kinds_project", " , ")], "kinds_project names no store type"),
            (vec![("id_transform", "base64")], "id_transform = \"base64\""),
            (vec![("max_concurrency", "0")], "max_concurrency must be positive"),
            (vec![("max_retries", "many")], "max_retries = \"many\" is not a whole number"),
            (vec![("api_token", "t"), ("api_token_file", "/token")], "set one, not both"),
            (vec![("api_token_file", "/missing")], "[openfga] api_token_file /missing"),
        ] {
            let err = format!("{:#}", fga(&extra).unwrap_err());
            assert!(err.contains(expect), "{extra:?}: {err}");
        }
    }

    #[test]
    fn the_role_table_may_live_in_a_file() {
        let without = |extra: &[(&str, &str)]| {
            let mut all: Vec<(&str, &str)> = BASE.iter().copied().filter(|(k, _)| *k != "role_to_relation").collect();
            all.extend_from_slice(extra);
            match driver(&[("driver", "openfga")], &all) {
                Ok(AssignmentDriver::OpenFga(s)) => Ok(*s),
                Ok(AssignmentDriver::Raft) => bail!("raft"),
                Err(e) => Err(e),
            }
        };
        let s = without(&[("role_to_relation_file", "/roles")]).unwrap();
        let want: BTreeMap<String, String> =
            [("r1", "admin"), ("member", "member"), ("reader", "reader")].map(|(a, b)| (a.into(), b.into())).into();
        assert_eq!((s.role_to_relation, s.role_to_relation_file), (want, Some(PathBuf::from("/roles"))));
        let err = format!("{:#}", without(&[("role_to_relation_file", "/no-roles")]).unwrap_err());
        assert!(err.contains("role_to_relation_file /no-roles: no role is mapped"), "{err}");
        let err = format!("{:#}", without(&[("role_to_relation_file", "/missing")]).unwrap_err());
        assert!(err.contains("[openfga] role_to_relation_file /missing"), "{err}");
    }

    /// A role named in the table onto the relation `admin` (or `service`) maps to is refused at
    /// load: a domain manager may grant it, and the store would resolve an administrator.
    #[test]
    fn no_role_is_mapped_onto_a_guarded_roles_relation() {
        for table in ["admin:admin, member:admin", "member:member, r-custom:admin, admin:admin", "service:svc, x:svc"] {
            let err = format!("{:#}", fga(&[("role_to_relation", table)]).unwrap_err());
            assert!(
                err.contains("[openfga] role_to_relation:") && err.contains("the relation of the"),
                "{table}: {err}"
            );
        }
        let err = parse_role_table("admin:admin\nreader:reader\nmember:admin\n").unwrap_err().to_string();
        assert_eq!(
            err,
            "role \"member\" is mapped to \"admin\", the relation of the admin role: a grant of it would make an \
             admin; map it to a relation of its own"
        );
        assert!(parse_role_table("admin:admin, service:admin, member:member").is_ok(), "guarded roles may share");
    }

    #[test]
    fn the_token_comes_from_its_file_and_is_never_printed() {
        let s = fga(&[("api_token_file", "/token"), ("kinds_user", "user, keystone_user")]).unwrap();
        assert_eq!(s.api_token, Some(ApiToken("s3cret".into())));
        assert!(!format!("{s:?}").contains("s3cret"));
        assert_eq!(s.types(Kind::User), ["user", "keystone_user"]);
    }
}
