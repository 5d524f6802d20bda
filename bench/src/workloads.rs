//! The workloads, the same for every system and driven by the same wrk script:
//!   discovery            GET  /v3 (no token): the HTTP floor the other reads are held to
//!   validate             GET  /v3/auth/tokens, X-Subject-Token = bench-user (direct role), catalog
//!   validate_admin       the same with the admin's own token as the subject
//!   validate_rbac        the same with bench-rbac's token (roles through groups + implications)
//!   validate_rbac_nocat  the same with `?nocatalog`
//!   role_assignments     GET  /v3/role_assignments?effective&include_names&scope.project.id=…
//!   validate_trust       the same with a trust-scoped token (trustee: admin, not impersonating)
//!   issue                POST /v3/auth/tokens, password, project-scoped
//!   issue_appcred        POST /v3/auth/tokens, application credential (id + secret)
//!   create               POST /v3/projects, unique names
//! With a follower (3-node idnode), validate, password and application-credential issue, and
//! create also run against it; with
//! `--members all`, also spread over every member (`validate_members`, `create_members`).

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::fixture::Fixture;
use crate::wrk::{Wrk, WrkResult};

pub const VALIDATE: &str = "/v3/auth/tokens";
pub const VALIDATE_NOCATALOG: &str = "/v3/auth/tokens?nocatalog";

/// The effective role-assignment listing of one project, with names (Keystone's flag form).
pub fn role_assignments_path(project: &str) -> String {
    format!("/v3/role_assignments?effective&include_names&scope.project.id={project}")
}

/// Runs every workload against `base` (and validate/create against `follower`, and spread
/// over `members`, `host:port` each, when there are any); wrk output and the issue body go to
/// the Wrk's output directory. `pids` are the server processes.
pub async fn run(
    w: &Wrk,
    base: &str,
    follower: Option<&str>,
    members: &[String],
    fx: &Fixture,
    pids: &[u32],
) -> Result<BTreeMap<&'static str, WrkResult>> {
    fn spread<'a>(vars: &[(&'a str, String)], members: &[String]) -> Vec<(&'a str, String)> {
        let mut v = vars.to_vec();
        v.push(("MEMBERS", members.join(",")));
        v
    }
    let mut cases = BTreeMap::new();
    let get = |subject: &str| {
        vec![("MODE", "get".to_owned()), ("AUTH_TOKEN", fx.admin.clone()), ("SUBJECT_TOKEN", subject.to_owned())]
    };
    let floor = vec![("MODE", "get".to_owned())];
    w.add(&mut cases, "discovery", &format!("{base}/v3"), &floor, pids).await?;
    let validate = get(&fx.subject);
    w.add(&mut cases, "validate", &format!("{base}{VALIDATE}"), &validate, pids).await?;
    if let Some(f) = follower {
        w.add(&mut cases, "validate_follower", &format!("{f}{VALIDATE}"), &validate, pids).await?;
    }
    if !members.is_empty() {
        w.add(&mut cases, "validate_members", &format!("{base}{VALIDATE}"), &spread(&validate, members), pids).await?;
    }
    if fx.subject != fx.admin {
        let vars = get(&fx.admin);
        w.add(&mut cases, "validate_admin", &format!("{base}{VALIDATE}"), &vars, pids).await?;
    }
    if let Some(rbac) = &fx.rbac_subject {
        let vars = get(rbac);
        w.add(&mut cases, "validate_rbac", &format!("{base}{VALIDATE}"), &vars, pids).await?;
        w.add(&mut cases, "validate_rbac_nocat", &format!("{base}{VALIDATE_NOCATALOG}"), &vars, pids).await?;
    }
    if let Some(trust) = &fx.trust_subject {
        let vars = get(trust);
        w.add(&mut cases, "validate_trust", &format!("{base}{VALIDATE}"), &vars, pids).await?;
    }
    let list = vec![("MODE", "get".to_owned()), ("AUTH_TOKEN", fx.admin.clone())];
    let url = format!("{base}{}", role_assignments_path(&fx.project));
    w.add(&mut cases, "role_assignments", &url, &list, pids).await?;

    let issue_file = w.out.join("issue.json");
    std::fs::write(&issue_file, serde_json::to_vec(&fx.issue)?).context("write issue.json")?;
    let issue = [("MODE", "post".to_owned()), ("BODY_FILE", issue_file.display().to_string())];
    w.add(&mut cases, "issue", &format!("{base}{VALIDATE}"), &issue, pids).await?;
    if let Some(f) = follower {
        w.add(&mut cases, "issue_follower", &format!("{f}{VALIDATE}"), &issue, pids).await?;
    }
    if let Some(body) = &fx.app_cred_issue {
        let file = w.out.join("issue_appcred.json");
        std::fs::write(&file, serde_json::to_vec(body)?).context("write issue_appcred.json")?;
        let vars = [("MODE", "post".to_owned()), ("BODY_FILE", file.display().to_string())];
        w.add(&mut cases, "issue_appcred", &format!("{base}{VALIDATE}"), &vars, pids).await?;
        if let Some(f) = follower {
            w.add(&mut cases, "issue_appcred_follower", &format!("{f}{VALIDATE}"), &vars, pids).await?;
        }
    }
    let create = [("MODE", "project".to_owned()), ("AUTH_TOKEN", fx.admin.clone())];
    w.add(&mut cases, "create", &format!("{base}/v3/projects"), &create, pids).await?;
    if let Some(f) = follower {
        w.add(&mut cases, "create_follower", &format!("{f}/v3/projects"), &create, pids).await?;
    }
    if !members.is_empty() {
        w.add(&mut cases, "create_members", &format!("{base}/v3/projects"), &spread(&create, members), pids).await?;
    }
    Ok(cases)
}
