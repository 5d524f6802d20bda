//! The targets against the reference measured in the same run: issue 3's (token validation at
//! least 20× the reference's req/s, admin token and the group + implied-role user with catalog;
//! project creates on the 3-node cluster at least 10×) and issue 32's (the effective
//! role-assignment listing with names at least 100×).

use crate::report::SystemResult;

struct Target {
    what: &'static str,
    case: &'static str,
    factor: f64,
    /// only for clusters of this many nodes (None: every idnode column)
    nodes: Option<&'static str>,
}

const TARGETS: [Target; 4] = [
    Target { what: "token validation, admin token", case: "validate_admin", factor: 20.0, nodes: None },
    Target {
        what: "token validation, group + implied-role user, with catalog",
        case: "validate_rbac",
        factor: 20.0,
        nodes: None,
    },
    Target { what: "project create, 3-node cluster", case: "create", factor: 10.0, nodes: Some("3 nodes") },
    Target {
        what: "role assignments (effective, include_names) (issue 32)",
        case: "role_assignments",
        factor: 100.0,
        nodes: None,
    },
];

/// A Markdown list: one line per target, each idnode column's ratio and whether it is met.
pub fn section(systems: &[SystemResult], reference: &SystemResult) -> String {
    let mut s = String::from("Targets (issues 3 and 32), req/s against the reference in this run:\n");
    for t in &TARGETS {
        let parts: Vec<String> = systems
            .iter()
            .filter(|c| t.nodes.is_none_or(|n| c.label.ends_with(n)))
            .map(|c| match (c.cases.get(t.case), reference.cases.get(t.case)) {
                (Some(a), Some(b)) if b.rps > 0.0 => {
                    let x = a.rps / b.rps;
                    let verdict = if x >= t.factor { "met" } else { "NOT met" };
                    format!("{} {:.0} vs {:.1} = {x:.1}× ({verdict})", c.label, a.rps, b.rps)
                }
                _ => format!("{}: not measured", c.label),
            })
            .collect();
        let parts = if parts.is_empty() { "no such idnode run".to_owned() } else { parts.join("; ") };
        s.push_str(&format!("- {} ≥ {}×: {parts}\n", t.what, t.factor));
    }
    s
}
