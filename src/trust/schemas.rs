//! Bodies of OS-TRUST trusts. The request types are the ones the handlers parse (fields as
//! [`Sent`], so the handlers answer wrong types with Keystone's messages).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::assignment::schemas::Role;
use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::{CollectionLinks, SelfLink};
use crate::http::wrappers::{envelopes, member_requests};

/// A trust: the trustor's roles on a project, delegated to the trustee. Other attributes given
/// at create are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Trust {
    // First: the trust's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    pub trustor_user_id: String,
    pub trustee_user_id: String,
    pub project_id: Option<String>,
    /// The trustee's tokens act as the trustor.
    pub impersonation: bool,
    /// `YYYY-MM-DDTHH:MM:SS.000000Z`, or null for no expiry.
    pub expires_at: Option<String>,
    /// Tokens that may still be issued for it; null for no limit.
    pub remaining_uses: Option<i64>,
    /// Always null: a deleted trust is gone.
    pub deleted_at: Option<String>,
    pub redelegated_trust_id: Option<String>,
    /// How many more times it may be redelegated.
    pub redelegation_count: i64,
    /// The delegated roles (not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<Role>>,
    /// The links of `roles` (not in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles_links: Option<CollectionLinks>,
    pub links: SelfLink,
}

envelopes! {
    TrustEnvelope { trust: Trust }
}

envelopes! { schema_only:
    TrustList { trusts: [Trust] }
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct TrustBody {
    /// The caller itself.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub trustor_user_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub trustee_user_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = bool, required = true)]
    pub impersonation: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Sent<String>,
    /// `{"id"}` or `{"name"}` of roles the trustor holds on the project.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub roles: Sent<Vec<Value>>,
    /// An ISO 8601 time in the future.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub expires_at: Sent<String>,
    /// At least 1; not with redelegation.
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub remaining_uses: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub allow_redelegation: Sent<bool>,
    /// At most 3 (the default when redelegation is allowed).
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub redelegation_count: Sent<i64>,
    /// Ignored.
    #[serde(default, rename = "redelegated_trust_id")]
    #[schema(value_type = Option<String>)]
    pub _redelegated_trust_id: Sent<Value>,
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

member_requests! {
    TrustRequest { trust: TrustBody }
}
