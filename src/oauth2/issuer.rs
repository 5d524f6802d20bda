//! A domain's issuer URL and its path, as this node's public URL names them.

use crate::context::Core;

/// The issuer of a domain's authorization server, as this node's public URL names it.
pub fn issuer(node: &Core, domain_id: &str) -> String {
    format!("{}/v4/oauth2/{domain_id}", node.cfg.public_base())
}

/// The path of the domain's provider (the issuer's path: right behind a path-prefix proxy).
pub fn base_path(node: &Core, domain_id: &str) -> String {
    let iss = issuer(node, domain_id);
    match url::Url::parse(&iss) {
        Ok(u) => u.path().trim_end_matches('/').to_string(),
        Err(_) => format!("/v4/oauth2/{domain_id}"),
    }
}
