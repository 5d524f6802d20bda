use std::sync::Arc;

use idnode_keys::TokenKeyRing;

use super::cache::AppliedCache;
use super::footprint;
use super::payload::{TokenPayload, TokenScope};
use super::rulesets::{self, Live, MappingError};
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::metrics::labels;
use crate::openfga::DriverError;
use crate::reads::{appcred, effective, listing, mapped, oauth1};
use crate::state::model::{Project, Role, Target, User};
use crate::state::read::{IdentityReads, TokenReads};
use crate::state::Reader;

/// A token that opened, is not revoked, and whose user and scope are still valid, with
/// everything needed to answer validation and to authorize its bearer.
#[derive(Debug)]
pub struct ValidToken {
    pub payload: TokenPayload,
    pub user: User,
    pub user_domain: Project,
    pub project: Option<Project>,
    /// The domain of the scoped project, or the scoped domain.
    pub scope_domain: Option<Project>,
    pub roles: Vec<Role>,
    /// Scoped to the configured admin project: Keystone's `is_admin_project`, which makes an
    /// admin there a cloud administrator.
    pub is_admin_project: bool,
    /// The node's `[policy] admin_scope`: carried with the caller so every decision about it
    /// uses the same mode.
    pub admin_scope: crate::policy::admin_scope::AdminScope,
    /// The application credential the token was issued for.
    pub app_cred: Option<TokenAppCred>,
    /// The trust the token was issued for.
    pub trust: Option<TokenTrust>,
    /// The OS-OAUTH1 access token a Keystone OAuth1 token was issued for.
    pub oauth1: Option<TokenOAuth1>,
    /// Policy decisions made for this caller while it stands (`memo`).
    pub decisions: super::memo::Memo,
}

/// What a token shows of its trust.
#[derive(Debug, Clone)]
pub struct TokenTrust {
    pub id: String,
    pub trustor_user_id: String,
    pub trustee_user_id: String,
    pub impersonation: bool,
}

/// What a token shows of its OAuth1 access token.
#[derive(Debug, Clone)]
pub struct TokenOAuth1 {
    pub access_token_id: String,
    pub consumer_id: String,
}

/// What a token shows of its application credential.
#[derive(Debug, Clone)]
pub struct TokenAppCred {
    pub id: String,
    pub name: String,
    pub unrestricted: bool,
    /// `{id, service, path, method}` of each access rule.
    pub access_rules: Vec<serde_json::Value>,
}

impl ValidToken {
    pub fn has_role(&self, name: &str) -> bool {
        self.roles.iter().any(|r| r.name == name && r.domain_id.is_none())
    }
}

#[derive(Debug)]
pub enum TokenError {
    /// Unknown, malformed, revoked, expired or no longer valid: callers answer 404 (subject
    /// token) or 401 (caller token), without saying which.
    Invalid(&'static str),
    /// An authentic token naming state this node does not have (yet): a user, scope or grant
    /// created on another node an instant ago may not be applied here.
    Lagging(&'static str),
    /// A token minted from a mapping rule whose ruleset no longer stands behind it: the
    /// spec's own status and detail key (`rulesets::live_rule`).
    Mapping(MappingError),
    Storage(idnode_storage::StorageError),
    /// Validation needs the relationship store's roles of `holder` on `target`.
    NeedsRoles {
        holder: Holder,
        target: Target,
    },
}

/// Whose roles the relationship store is asked for: a user's, or (for a virtual user) the
/// groups its mapping rule binds it to.
#[derive(Debug, Clone, PartialEq)]
pub enum Holder {
    User(String),
    Groups(Vec<String>),
    /// A Keystone federated login: the user's own roles and its login's groups'.
    UserAndGroups(String, Vec<String>),
}

/// Where validation takes a token's roles from.
enum RoleSource {
    /// The replicated grants, read as the token is validated.
    Replicated,
    /// The relationship store, not asked yet.
    Ask,
    /// The relationship store's answer for this holder and target.
    Fetched { holder: Holder, target: Target, roles: Vec<Role> },
}

impl From<idnode_storage::StorageError> for TokenError {
    fn from(e: idnode_storage::StorageError) -> Self {
        TokenError::Storage(e)
    }
}

/// Byte budgets of the per-node token caches. A validated token carries its user, projects and
/// roles (free-form attributes up to 64 KiB each), a body its catalog: counted in entries
/// alone, 100,000 of them could hold gigabytes. 16 MiB each holds some 4,000 bodies with a
/// six-service catalog and many more validated tokens; the whole node aims at 64 MiB
/// (docs/operations.md, "Memory"), and any write empties both anyway.
const TOKEN_CACHE_BYTES: usize = 16 << 20;
const TOKEN_BODIES_BYTES: usize = 16 << 20;

/// The token layer's per-node state: the key ring and validation caches, over the core
/// context (`tokens.engine` and `&tokens` as `&Core` reach it through `Deref`).
pub struct Tokens {
    pub core: Arc<Core>,
    pub token_cache: AppliedCache<String, Arc<ValidToken>>,
    pub ring_cache: AppliedCache<(), Arc<TokenKeyRing>>,
    /// Serialized token objects per (token, nocatalog), for the validation they came from.
    pub token_bodies: AppliedCache<(String, bool), (Arc<ValidToken>, axum::body::Bytes)>,
    /// The parsed mapping rulesets, per revision: mapped tokens are checked against them and
    /// mapped logins evaluate them ([`rulesets`]).
    pub rulesets: AppliedCache<(), Arc<Vec<Arc<Live>>>>,
    /// The service catalog tokens carry, rebuilt only when the state has moved
    /// (`Tokens::catalog`, in `catalog`).
    pub catalog_cache: AppliedCache<(), Arc<serde_json::Value>>,
}

impl std::ops::Deref for Tokens {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

impl Tokens {
    /// Drops what the caches computed before the state at `applied` (see
    /// [`AppliedCache::forget_before`]).
    pub fn forget_before(&self, applied: u64) {
        self.token_cache.forget_before(applied);
        self.token_bodies.forget_before(applied);
    }

    pub fn new(core: Arc<Core>) -> Self {
        let stats = |name| core.metrics.caches.stats(name);
        Tokens {
            token_cache: AppliedCache::with_budget(100_000, TOKEN_CACHE_BYTES, footprint::valid_token)
                .observed(stats("token_validation")),
            ring_cache: AppliedCache::new(1).observed(stats("token_key_ring")),
            token_bodies: AppliedCache::with_budget(100_000, TOKEN_BODIES_BYTES, footprint::token_body)
                .observed(stats("token_body")),
            rulesets: AppliedCache::new(1).observed(stats("mapping_rulesets")),
            catalog_cache: AppliedCache::new(1).observed(stats("catalog")),
            core,
        }
    }

    /// The token key ring as of the current applied state.
    pub fn token_ring(&self) -> Result<Arc<TokenKeyRing>, TokenError> {
        let applied = self.app.state_version();
        if let Some(r) = self.ring_cache.get(&(), applied) {
            return Ok(r);
        }
        let ring: TokenKeyRing = self.engine.read().token_keys()?.ok_or(TokenError::Invalid("no token keys yet"))?;
        let ring = Arc::new(ring);
        self.ring_cache.insert((), ring.clone(), applied);
        Ok(ring)
    }

    pub fn seal_token(&self, payload: &TokenPayload) -> ApiResult<String> {
        let ring = self.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
        let bytes = postcard::to_allocvec(payload).map_err(ApiError::internal)?;
        ring.seal(&bytes).ok_or_else(|| ApiError::internal("token key ring has no primary key"))
    }

    /// Validates a token: 404 when it is not (or no longer) valid.
    pub async fn validate_token(&self, token: &str, allow_expired: bool) -> ApiResult<Arc<ValidToken>> {
        self.ensure_fresh_local().await?;
        let answer = self.validated(token, allow_expired).await;
        self.settle().await?;
        answer
    }

    /// [`Self::validate_token`] once the node may answer.
    async fn validated(&self, token: &str, allow_expired: bool) -> ApiResult<Arc<ValidToken>> {
        let applied = self.app.state_version();
        let vt = match self.token_cache.get(&token.to_string(), applied) {
            Some(vt) => vt,
            None => {
                let mut result = self.computed(token).await?;
                if let Err(TokenError::Lagging(why)) = &result {
                    // Catch up with the leader once, then decide. Only authentic tokens get
                    // here, so this cannot be used to make a node call the leader at will.
                    tracing::debug!("token names state not applied here ({why}): catching up");
                    if self.raft.linearizable_barrier().await.is_ok() {
                        result = self.computed(token).await?;
                    }
                }
                match result {
                    Ok(vt) => {
                        let vt = Arc::new(vt);
                        // Roles from the relationship store change without a write here, and
                        // so do those of an expiring group membership when it ends: such a
                        // token is validated afresh each time (nothing is cached).
                        let timed = !self.engine.read().expiring_memberships_of_user(&vt.user.id)?.is_empty();
                        if (self.fga.is_none() || vt.roles.is_empty()) && !timed {
                            self.token_cache.insert(token.to_string(), vt.clone(), applied);
                        }
                        vt
                    }
                    Err(TokenError::Invalid(why) | TokenError::Lagging(why)) => {
                        tracing::debug!("token rejected: {why}");
                        self.metrics.token_validations.get_or_create(&labels(&[("result", "invalid")])).inc();
                        return Err(ApiError::not_found("token", "the token is not valid"));
                    }
                    Err(TokenError::Mapping(e)) => {
                        tracing::debug!("mapped token rejected: {e}");
                        self.metrics.token_validations.get_or_create(&labels(&[("result", "invalid")])).inc();
                        return Err(e.into());
                    }
                    Err(TokenError::Storage(e)) => return Err(ApiError::internal(e)),
                    Err(TokenError::NeedsRoles { .. }) => {
                        return Err(ApiError::internal("token roles were asked for twice"));
                    }
                }
            }
        };
        let now = now_micros();
        let window = self.cfg.allow_expired_window_s * 1_000_000;
        if now >= vt.payload.expires_at && !(allow_expired && now < vt.payload.expires_at + window) {
            self.metrics.token_validations.get_or_create(&labels(&[("result", "expired")])).inc();
            return Err(ApiError::not_found("token", "the token has expired"));
        }
        self.metrics.token_validations.get_or_create(&labels(&[("result", "valid")])).inc();
        Ok(vt)
    }

    /// Validates with the roles from the node's assignment driver: the replicated grants are
    /// read in passing; the relationship store is asked once validation knows whose roles on
    /// which target it needs (a store that cannot answer is a 503, never fewer roles).
    async fn computed(&self, token: &str) -> ApiResult<Result<ValidToken, TokenError>> {
        if self.fga.is_none() {
            return Ok(self.compute_valid_token(token, &RoleSource::Replicated));
        }
        match self.compute_valid_token(token, &RoleSource::Ask) {
            Err(TokenError::NeedsRoles { holder, target }) => {
                let roles = match &holder {
                    Holder::User(id) => effective::user_roles(self, id, &target).await,
                    Holder::Groups(ids) => effective::groups_roles(self, ids, &target).await,
                    Holder::UserAndGroups(id, groups) => {
                        effective::user_and_groups_roles(self, id, groups, &target).await
                    }
                };
                let roles = roles.map_err(DriverError::or_unavailable)?;
                Ok(self.compute_valid_token(token, &RoleSource::Fetched { holder, target, roles }))
            }
            other => Ok(other),
        }
    }

    fn compute_valid_token(&self, token: &str, source: &RoleSource) -> Result<ValidToken, TokenError> {
        let ring = self.token_ring()?;
        let payload = match ring.open(token) {
            Some(bytes) => TokenPayload::decode(&bytes).ok_or(TokenError::Invalid("bad payload"))?,
            // One Keystone issued before the move, when its keys were imported.
            None => {
                super::keystone::payload(&self.engine.read(), token)?.ok_or(TokenError::Invalid("does not open"))?
            }
        };
        // State a token names may still be on its way here: a follower answers from its own
        // state, and what only adds (a grant, a project) is acknowledged before every member
        // applied it. Such a refusal is confirmed after a read barrier (`validate_token`),
        // however old the token: a grant removed and given again makes an old token good again.
        let missing = TokenError::Lagging;
        let view = self.engine.snapshot();
        for audit in payload.audit_id_strings() {
            if view.audit_id_revoked(&audit)? {
                return Err(TokenError::Invalid("revoked"));
            }
        }
        let mapped_rule = match payload.mapped() {
            Some(m) => Some(rulesets::live_rule(self, m)?.map_err(TokenError::Mapping)?),
            None => None,
        };
        // A virtual user has no user record: its shadow record stands for it, and the groups
        // it binds hold roles for it (it is no member of them).
        let (user, bound_groups): (User, Vec<String>) = if payload.is_virtual() {
            let (user, record) = mapped::virtual_user(&view, &payload.user_id)?.ok_or(missing("virtual user gone"))?;
            (user, record.resolved_group_bindings.into_iter().map(|b| b.resolved_group_id).collect())
        } else {
            (view.user(&payload.user_id)?.ok_or(missing("user gone"))?, Vec::new())
        };
        if !user.enabled {
            return Err(TokenError::Invalid("user disabled"));
        }
        if crate::state::cut_off(&user, payload.issued_at, payload.user_cutoff, self.raft.cluster_version()) {
            return Err(TokenError::Invalid("issued before the user's tokens were revoked"));
        }
        let user_domain =
            view.domain(&user.domain_id)?.filter(|d| d.enabled).ok_or(TokenError::Invalid("user domain"))?;
        let (project, scope_domain, target) = match &payload.scope {
            TokenScope::Unscoped => (None, None, None),
            TokenScope::System => (None, None, Some(Target::System)),
            TokenScope::Domain(id) => {
                let d = view.domain(id)?.filter(|d| d.enabled).ok_or(missing("scope domain"))?;
                (None, Some(d), Some(Target::Domain(id.clone())))
            }
            TokenScope::Project(id) => {
                let p = view.project(id)?.filter(|p| p.enabled).ok_or(missing("scope project"))?;
                let d =
                    view.domain(&p.domain_id)?.filter(|d| d.enabled).ok_or(TokenError::Invalid("project domain"))?;
                (Some(p), Some(d), Some(Target::Project(id.clone())))
            }
        };
        let trust = match payload.trust() {
            Some(id) => {
                let doc = view.doc(crate::state::model::DocKind::Trust, id)?.ok_or(missing("trust gone"))?;
                let t = crate::reads::trust::Trust::parse(&doc).map_err(|_| TokenError::Invalid("bad trust record"))?;
                let acting = if t.impersonation { &t.trustor_user_id } else { &t.trustee_user_id };
                if t.expires_at.is_some_and(|e| now_micros() >= e) || *acting != user.id {
                    return Err(TokenError::Invalid("trust expired"));
                }
                if !view.user(&t.trustor_user_id)?.is_some_and(|u| u.enabled) {
                    return Err(TokenError::Invalid("trustor disabled"));
                }
                Some(t)
            }
            None => None,
        };
        if let Some(f) = payload.federated() {
            // Keystone refuses to show a token whose identity provider is gone; one disabled
            // since is refused too, so disabling a provider ends its logins.
            let idp = view.doc(crate::state::model::DocKind::IdentityProvider, &f.identity_provider_id)?;
            let enabled = idp.map(|d| crate::http::fields::json_obj(&d.body)).and_then(|b| b.get("enabled").cloned());
            if enabled != Some(serde_json::Value::Bool(true)) {
                return Err(TokenError::Invalid("identity provider gone or disabled"));
            }
        }
        // A trust's token holds the trustor's roles (those the trust delegates); a federated
        // login's, the user's and its groups'.
        let holder = match (&trust, payload.federated()) {
            (Some(t), _) => Holder::User(t.trustor_user_id.clone()),
            (None, Some(f)) => Holder::UserAndGroups(user.id.clone(), f.group_ids.clone()),
            (None, None) => Holder::User(user.id.clone()),
        };
        let mut roles = match &target {
            Some(t) if !payload.is_virtual() => match source {
                RoleSource::Replicated => match &holder {
                    Holder::UserAndGroups(u, groups) => effective::roles_of_user_with_groups(&view, u, groups, t)?,
                    Holder::User(u) => effective::roles_of_user(&view, u, t)?,
                    Holder::Groups(_) => Vec::new(),
                },
                RoleSource::Fetched { holder: h, target, roles } if *h == holder && target == t => roles.clone(),
                _ => return Err(TokenError::NeedsRoles { holder, target: t.clone() }),
            },
            _ => Vec::new(),
        };
        if let (Some(rule), Some(t)) = (&mapped_rule, &target) {
            // The bound groups' grants: replicated, or the store's answer for exactly them.
            let group_grants = match source {
                RoleSource::Replicated => None,
                _ if bound_groups.is_empty() => Some(Vec::new()),
                RoleSource::Fetched { holder: Holder::Groups(g), target, roles }
                    if *g == bound_groups && target == t =>
                {
                    Some(roles.iter().map(|r| r.id.clone()).collect())
                }
                _ => return Err(TokenError::NeedsRoles { holder: Holder::Groups(bound_groups), target: t.clone() }),
            };
            for id in mapped::roles_on(&view, rule, &bound_groups, group_grants, t)? {
                if !roles.iter().any(|r| r.id == id) {
                    roles.extend(view.role(&id)?);
                }
            }
            roles.sort_by(|a, b| a.id.cmp(&b.id));
        }
        if let Some(t) = &trust {
            let delegated = listing::implied_closure(&view, &t.role_ids)?;
            roles.retain(|r| delegated.contains(&r.id));
        }
        let oauth1 = match payload.oauth1() {
            Some(id) => {
                let doc = oauth1::find(&view, crate::state::model::DocKind::OAuthAccessToken, id)?
                    .ok_or(missing("oauth1 access token gone"))?;
                let a = oauth1::AccessToken::parse(&doc).map_err(|_| TokenError::Invalid("bad access token record"))?;
                let on_project = matches!(&payload.scope, TokenScope::Project(p) if *p == a.project_id);
                if a.authorizing_user_id != user.id
                    || !on_project
                    || oauth1::expired(a.expires_at.as_deref(), now_micros())
                {
                    return Err(TokenError::Invalid("oauth1 access token expired"));
                }
                // The access token's roles (and those they imply) that the user still holds.
                let delegated = listing::implied_closure(&view, &a.role_ids)?;
                roles.retain(|r| delegated.contains(&r.id));
                Some(TokenOAuth1 { access_token_id: a.id, consumer_id: a.consumer_id })
            }
            None => None,
        };
        let trust = trust.map(|t| TokenTrust {
            id: t.id,
            trustor_user_id: t.trustor_user_id,
            trustee_user_id: t.trustee_user_id,
            impersonation: t.impersonation,
        });
        let app_cred = match payload.app_cred() {
            Some(id) => {
                let doc = appcred::find(&view, id)?.ok_or(missing("application credential gone"))?;
                let c = appcred::AppCred::parse(&doc).map_err(|_| TokenError::Invalid("bad credential record"))?;
                if c.user_id != user.id || c.expired(now_micros()) {
                    return Err(TokenError::Invalid("application credential expired"));
                }
                // Only the credential's roles, and only while the user still holds them.
                roles.retain(|r| c.role_ids.contains(&r.id));
                let mut access_rules = Vec::new();
                for rule in &c.access_rule_ids {
                    if let Some(d) =
                        view.doc(crate::state::model::DocKind::AccessRule, &format!("{}/{rule}", c.user_id))?
                    {
                        access_rules.push(appcred::rule_json(&crate::http::fields::json_obj(&d.body)));
                    }
                }
                Some(TokenAppCred { id: c.id, name: c.name, unrestricted: c.unrestricted == Some(true), access_rules })
            }
            None => None,
        };
        super::restriction::narrow(&view, &payload, &mut roles)?.map_err(TokenError::Invalid)?;
        if target.is_some() && roles.is_empty() {
            return Err(missing("no roles on the scope any more"));
        }
        let is_admin_project = match (&project, view.bootstrap_info()?) {
            (Some(p), Some(b)) => p.id == b.admin_project_id,
            _ => false,
        };
        let admin_scope = self.cfg.policy_admin_scope;
        Ok(ValidToken {
            payload,
            user,
            user_domain,
            project,
            scope_domain,
            roles,
            is_admin_project,
            admin_scope,
            app_cred,
            trust,
            oauth1,
            decisions: Default::default(),
        })
    }
}
