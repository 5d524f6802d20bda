//! The node's `[policy] admin_scope` setting, apart from the engine so the settings can name it.

/// Which `admin` role assignments make a cloud administrator (`[policy] admin_scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdminScope {
    /// Keystone's `admin_required` (`role:admin`): the admin role on any project, domain or
    /// the system. Every OpenStack deployment and tempest create their administrators this way.
    #[default]
    Any,
    /// Only a system-scoped token or one scoped to the admin project (Keystone's
    /// `is_admin_project`) makes an admin a cloud administrator; an admin of another project
    /// or domain administers only that project or domain.
    System,
}

impl AdminScope {
    pub fn as_str(self) -> &'static str {
        match self {
            AdminScope::Any => "any",
            AdminScope::System => "system",
        }
    }
}

impl std::str::FromStr for AdminScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "any" => Ok(AdminScope::Any),
            "system" => Ok(AdminScope::System),
            other => Err(format!("{other:?} is neither any nor system")),
        }
    }
}
