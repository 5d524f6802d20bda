//! The machine-readable API description (`GET /api-docs/openapi.json`) and the interactive
//! reference (`/swagger-ui/`). Operations come from the handlers' `#[utoipa::path]`
//! annotations through `utoipa_axum::routes!`, the same declarations the router is built from,
//! so a route cannot be served without being described, nor described without being served.
//! This module holds the document's info, security schemes and tags; the error bodies and
//! responses annotations refer to are the toolkit's (`http::openapi`).

use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::http::openapi::{CollectionLinks, ErrorBody, ErrorDetail, SelfLink};
use crate::scim::schemas::ApiKeyBearer;

/// Where the description is served; Swagger UI loads it from here.
pub const SPEC_PATH: &str = "/api-docs/openapi.json";
/// Where Swagger UI is served (its page is `/swagger-ui/`).
pub const UI_PATH: &str = "/swagger-ui";

/// The document's fixed parts. `openapi: 3.1.0` is utoipa's default; the API document version
/// is the spec's.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idnode identity API",
        version = "4.0.1",
        description = "A Keystone v3 compatible identity service. Every operation except discovery, \
                       token issue and revocation, signed-request tokens and this description needs \
                       a token in `X-Auth-Token`. Any operation answers 503 with `Retry-After` when it \
                       does not complete within the node's request timeout (`[api] request_timeout_s`).",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    modifiers(&TokenHeader, &ApiKeyBearer),
    security(("x-auth" = []), ("X-Auth-Token" = [])),
    components(schemas(ErrorBody, ErrorDetail, CollectionLinks, SelfLink, crate::scim::schemas::ScimErrorBody)),
    tags(
        (name = "discovery", description = "Version discovery"),
        (name = "auth", description = "Tokens: issue, validate, revoke; scopes available to a token"),
        (name = "domains", description = "Domains"),
        (name = "projects", description = "Projects"),
        (name = "users", description = "Users and password change"),
        (name = "application_credentials", description = "Application credentials and their access rules"),
        (name = "groups", description = "Groups and group membership"),
        (name = "roles", description = "Roles and role inference rules"),
        (name = "role_assignments", description = "Grants of roles and the role assignment listing"),
        (name = "catalog", description = "Regions, services and endpoints"),
        (name = "federation", description = "OS-FEDERATION identity providers, protocols, mappings and service providers"),
        (name = "oauth1", description = "OS-OAUTH1 consumers, request and access tokens"),
        (name = "trusts", description = "OS-TRUST trusts: delegation of a user's roles to another user"),
        (name = "credentials", description = "Credentials, signature credentials (OS-EC2) and signed-request tokens"),
        (name = "oauth2", description = "The OAuth2 authorization server and OpenID Connect provider of each domain"),
        (name = "identity_providers", description = "v4 federation: external OpenID Connect identity providers"),
        (name = "k8s_auth", description = "v4 Kubernetes cluster issuers whose service-account tokens authenticate"),
        (name = "spiffe", description = "v4 SPIFFE workload trust domains whose JWT-SVIDs authenticate"),
        (name = "mappings", description = "Mapping rulesets: how external identities (OIDC, Kubernetes, SPIFFE) become users, groups and authorizations"),
        (name = "scim", description = "SCIM realms: per-provider SCIM v2 provisioning of a domain"),
        (name = "api_keys", description = "v4 API keys: domain-owned bearer credentials bound to a provider (SCIM provisioning)"),
        (name = "unified_limits", description = "Unified limits: registered limits (a service's default per resource), project and domain limits, and the enforcement model"),
        (name = "token_restrictions", description = "v4 token restrictions: the project, roles, renewal and re-scoping a mapping rule's tokens are held to"),
        (name = "account", description = "The account page of each domain: HTML pages where users manage their own passkeys, password, applications, sessions and application credentials"),
        (name = "meta", description = "This description"),
    )
)]
pub struct ApiDoc;

/// The token header under both names the spec gives (`x-auth` and `X-Auth-Token`); either
/// satisfies an operation's security requirement.
struct TokenHeader;

impl Modify for TokenHeader {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        for name in ["x-auth", "X-Auth-Token"] {
            let key = ApiKeyValue::with_description("X-Auth-Token", "A token issued by POST /v3/auth/tokens.");
            components.add_security_scheme(name, SecurityScheme::ApiKey(ApiKey::Header(key)));
        }
    }
}

/// The serialized description, rendered once at router assembly.
#[derive(Clone)]
pub struct SpecJson(pub Arc<String>);

#[utoipa::path(get, path = "/api-docs/openapi.json", tag = "meta", operation_id = "openapi_json",
    security(()),
    responses((status = 200, description = "This OpenAPI 3.1 description.", content_type = "application/json", body = Object)))]
pub async fn spec(Extension(json): Extension<SpecJson>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], json.0.as_str().to_string())
}

/// Swagger UI served from the assets vendored into the binary; the validator badge is off so
/// the page makes no request to another host.
pub fn swagger_ui<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    let config = utoipa_swagger_ui::Config::from(SPEC_PATH).validator_url("none");
    utoipa_swagger_ui::SwaggerUi::new(UI_PATH).config(config).into()
}
