//! Unified limits (Keystone's `/v3/registered_limits` and `/v3/limits`): a registered limit is
//! a service's default for one resource (optionally per region); a limit overrides it for one
//! project or domain. Kept in the `limits` column family. The enforcement model travels in the
//! commands it shapes, so every replica applies the same rules whatever its own settings say.

use serde::{Deserialize, Serialize};

/// Key layouts of the `limits` column family.
pub mod keys {
    pub const REGISTERED_PREFIX: &[u8] = b"g/";
    pub const LIMIT_PREFIX: &[u8] = b"l/";
    pub fn registered(id: &str) -> Vec<u8> {
        format!("g/{id}").into_bytes()
    }
    pub fn limit(id: &str) -> Vec<u8> {
        format!("l/{id}").into_bytes()
    }
}

/// Keystone's `[unified_limit] enforcement_model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Model {
    /// Limits are independent of the project hierarchy.
    #[default]
    Flat,
    /// A project's limit never exceeds its domain's, and projects nest at most two deep.
    StrictTwoLevel,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Flat => "flat",
            Model::StrictTwoLevel => "strict_two_level",
        }
    }

    /// Keystone's description of the model, as `GET /v3/limits/model` shows it.
    pub fn description(self) -> &'static str {
        match self {
            Model::Flat => "Limit enforcement and validation does not take project hierarchy into consideration.",
            Model::StrictTwoLevel => "This model requires project hierarchy never exceeds a depth of two",
        }
    }

    /// The deepest a project may sit, its domain counted as level one (Keystone's
    /// `MAX_PROJECT_TREE_DEPTH + 1`); `None`: no bound from the model.
    pub fn max_hierarchy_depth(self) -> Option<u32> {
        match self {
            Model::Flat => None,
            Model::StrictTwoLevel => Some(3),
        }
    }
}

impl std::str::FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "flat" => Ok(Model::Flat),
            "strict_two_level" => Ok(Model::StrictTwoLevel),
            other => Err(format!("{other:?} is neither flat nor strict_two_level")),
        }
    }
}

/// One registered limit as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredLimit {
    pub id: String,
    pub service_id: String,
    pub region_id: Option<String>,
    pub resource_name: String,
    pub default_limit: i64,
    pub description: Option<String>,
}

impl RegisteredLimit {
    /// What makes it unique (and what a limit names it by).
    pub fn slot(&self) -> (&str, Option<&str>, &str) {
        (&self.service_id, self.region_id.as_deref(), &self.resource_name)
    }
}

/// One project or domain limit as stored. Service, region and resource name are the registered
/// limit's, which cannot change while a limit refers to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    pub id: String,
    /// Exactly one of `project_id` and `domain_id` is set.
    pub project_id: Option<String>,
    pub domain_id: Option<String>,
    pub registered_limit_id: String,
    pub service_id: String,
    pub region_id: Option<String>,
    pub resource_name: String,
    pub resource_limit: i64,
    pub description: Option<String>,
}

impl Limit {
    pub fn slot(&self) -> (&str, Option<&str>, &str) {
        (&self.service_id, self.region_id.as_deref(), &self.resource_name)
    }
}

/// A limit as a create asks for it: `project_id` may name a project acting as a domain, which
/// makes it a domain limit (as Keystone reads it); the registered limit is found in apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewLimit {
    pub id: String,
    pub project_id: Option<String>,
    pub domain_id: Option<String>,
    pub service_id: String,
    pub region_id: Option<String>,
    pub resource_name: String,
    pub resource_limit: i64,
    pub description: Option<String>,
}

/// The fields a registered limit update names (`None`: left as stored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredPatch {
    pub service_id: Option<String>,
    pub region_id: Option<Option<String>>,
    pub resource_name: Option<String>,
    pub default_limit: Option<i64>,
    pub description: Option<Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LimitCommand {
    /// Stores all of them or none: each names an existing service (and region), and no two
    /// share a (service, region, resource name), with each other or with a stored one.
    CreateRegistered {
        limits: Vec<RegisteredLimit>,
    },
    /// Changes a registered limit no limit refers to.
    UpdateRegistered {
        id: String,
        patch: RegisteredPatch,
    },
    /// Deletes a registered limit no limit refers to.
    DeleteRegistered {
        id: String,
    },
    /// Stores all of them or none: each names an existing project or domain and a registered
    /// limit, is the only one of its owner for that registered limit, and fits `model`.
    Create {
        limits: Vec<NewLimit>,
        model: Model,
    },
    /// Changes a limit's value and description (each `None`: left as stored); the result
    /// fits `model`.
    Update {
        id: String,
        resource_limit: Option<i64>,
        description: Option<Option<String>>,
        model: Model,
    },
    Delete {
        id: String,
    },
    /// A guard step before `CreateProject` in one `Command::All`: a project under `parent_id`
    /// would sit at most `max_depth` levels deep (its domain being level one).
    CheckDepth {
        parent_id: String,
        max_depth: u32,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LimitApplied {
    Registered(Vec<RegisteredLimit>),
    Limits(Vec<Limit>),
}
