//! The `scope` of a token request: exactly one of project (by id, or name + domain), domain
//! (id or name), system, or the string "unscoped"; omitted means the user's default project
//! when usable, else unscoped.

use serde_json::Value;

use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::openfga::DriverError;
use crate::reads::effective;
use crate::state::keys::ns;
use crate::state::model::{Target, User};
use crate::state::Reader;
use crate::token::TokenScope;

fn domain_ref(node: &Core, d: &Value) -> ApiResult<Option<String>> {
    match (d.get("id").and_then(Value::as_str), d.get("name").and_then(Value::as_str)) {
        (Some(id), _) => Ok(Some(id.to_string())),
        (None, Some(n)) => Ok(node.engine.read().id_by_name(ns::DOMAIN_NAME, "", n)?),
        _ => Err(ApiError::bad_request("A domain reference needs an 'id' or a 'name'.")),
    }
}

/// Parses the requested scope; targets that do not exist become 401 like Keystone.
pub async fn requested(node: &Core, scope: Option<&Value>, user: &User) -> ApiResult<TokenScope> {
    let scope = match scope {
        None => return default_scope(node, user).await,
        Some(Value::String(s)) if s == "unscoped" => return Ok(TokenScope::Unscoped),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(ApiError::bad_request("Invalid input for field 'scope'.")),
    };
    let kinds = ["project", "domain", "system", "OS-TRUST:trust"].iter().filter(|k| scope.contains_key(**k)).count();
    if kinds != 1 {
        return Err(ApiError::bad_request("Specify exactly one of project, domain or system as the scope."));
    }
    let denied = || ApiError::unauthorized("The request you have made requires authentication.");
    if let Some(p) = scope.get("project") {
        let view = node.engine.read();
        let id = match (p.get("id").and_then(Value::as_str), p.get("name").and_then(Value::as_str)) {
            (Some(id), _) => Some(id.to_string()),
            (None, Some(name)) => {
                let d = p.get("domain").ok_or_else(|| ApiError::bad_request("A project name needs a 'domain'."))?;
                match domain_ref(node, d)? {
                    Some(did) => view.id_by_name(ns::PROJECT_NAME, &did, name)?,
                    None => None,
                }
            }
            _ => return Err(ApiError::bad_request("'project' needs an 'id' or a 'name'.")),
        };
        let id = id.ok_or_else(denied)?;
        view.project(&id)?.filter(|p| !p.is_domain).ok_or_else(denied)?;
        return Ok(TokenScope::Project(id));
    }
    if let Some(d) = scope.get("domain") {
        let id = domain_ref(node, d)?.ok_or_else(denied)?;
        return Ok(TokenScope::Domain(id));
    }
    if let Some(s) = scope.get("system") {
        if s.get("all").and_then(Value::as_bool) == Some(true) {
            return Ok(TokenScope::System);
        }
        return Err(ApiError::bad_request("Only the 'all' system scope exists."));
    }
    Err(ApiError::forbidden("Trust-scoped tokens are not supported."))
}

async fn default_scope(node: &Core, user: &User) -> ApiResult<TokenScope> {
    let Some(pid) = &user.default_project_id else { return Ok(TokenScope::Unscoped) };
    let enabled = node.engine.read().project(pid)?.is_some_and(|p| p.enabled);
    let usable = enabled
        && !effective::user_roles(node, &user.id, &Target::Project(pid.clone()))
            .await
            .map_err(DriverError::or_unavailable)?
            .is_empty();
    Ok(if usable { TokenScope::Project(pid.clone()) } else { TokenScope::Unscoped })
}
