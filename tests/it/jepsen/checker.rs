//! Judging a history: revoked tokens and changed passwords never accepted after the change
//! returned (on any member), and each token's and each user's history linearizable as a
//! register.

use std::collections::BTreeMap;

use super::history::{Op, Outcome};
use super::linear::{linearizable, RegOp, Timed};

/// Validations that accepted a token after its revocation returned: `key@member`.
pub fn stale_token_accepts(ops: &[Op]) -> Vec<String> {
    let mut revoked: BTreeMap<&str, u64> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.f == "revoke" && matches!(o.outcome, Outcome::Ok(_))) {
        let t = revoked.entry(o.key.as_str()).or_insert(u64::MAX);
        *t = (*t).min(o.complete_us);
    }
    ops.iter()
        .filter(|o| o.f == "validate" && o.outcome == Outcome::Ok(Some("valid".into())))
        .filter(|o| revoked.get(o.key.as_str()).is_some_and(|&t| o.invoke_us > t))
        .map(|o| format!("{}@{}", o.key, o.member))
        .collect()
}

/// Tokens from logins that completed before a password change was sent, accepted after the
/// change returned (the workload validates them only then): `user@member (issuer)`.
pub fn stale_session_accepts(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .filter(|o| o.f == "session" && o.outcome == Outcome::Ok(Some("valid".into())))
        .map(|o| format!("{}@{} ({})", o.key, o.member, o.arg.as_deref().unwrap_or("?")))
        .collect()
}

/// Logins with a password after a change away from it returned: `user@member`. (Every
/// password the workload sets is new, so "away" means any later change; the register check
/// below judges the concurrent cases.)
pub fn stale_password_accepts(ops: &[Op]) -> Vec<String> {
    let changes: Vec<&Op> =
        ops.iter().filter(|o| o.f == "set_password" && !matches!(o.outcome, Outcome::Fail(_))).collect();
    let done = |c: &Op| matches!(c.outcome, Outcome::Ok(_));
    ops.iter()
        .filter(|o| o.f == "login" && o.outcome == Outcome::Ok(Some("yes".into())))
        .filter(|login| {
            // When the password tried was set (0: the first one); unknown: never judged here.
            let set_at = match changes.iter().find(|c| c.key == login.key && c.arg == login.arg) {
                None => Some(0),
                Some(c) if done(c) => Some(c.complete_us),
                Some(_) => None,
            };
            set_at.is_some_and(|set| {
                changes.iter().any(|c| {
                    done(c)
                        && c.key == login.key
                        && c.arg != login.arg
                        && c.invoke_us > set
                        && c.complete_us < login.invoke_us
                })
            })
        })
        .map(|o| format!("{}@{}", o.key, o.member))
        .collect()
}

/// Introspections that called a refresh token active after its rotation returned: `family@member`.
pub fn stale_refresh_accepts(ops: &[Op]) -> Vec<String> {
    let mut rotated: BTreeMap<&str, u64> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.f == "rotate" && matches!(o.outcome, Outcome::Ok(_))) {
        if let Some(old) = o.arg.as_deref() {
            rotated.insert(old, o.complete_us);
        }
    }
    ops.iter()
        .filter(|o| o.f == "introspect" && o.outcome == Outcome::Ok(Some("active".into())))
        .filter(|o| o.arg.as_deref().and_then(|t| rotated.get(t)).is_some_and(|&at| o.invoke_us > at))
        .map(|o| format!("{}@{}", o.key, o.member))
        .collect()
}

fn timed(o: &Op, op: RegOp) -> Timed {
    let complete = match o.outcome {
        Outcome::Info(_) => None,
        _ => Some(o.complete_us),
    };
    Timed { op, invoke: o.invoke_us, complete }
}

/// Keys whose token history no register explains (valid until revoked).
pub fn token_nonlinear(ops: &[Op]) -> Vec<String> {
    let mut by_key: BTreeMap<&str, Vec<Timed>> = BTreeMap::new();
    for o in ops {
        let op = match (o.f, &o.outcome) {
            ("revoke", Outcome::Ok(_) | Outcome::Info(_)) => RegOp::Write("revoked".into()),
            ("validate", Outcome::Ok(Some(v))) if v == "valid" => RegOp::Read(None),
            ("validate", Outcome::Ok(Some(_))) => RegOp::Read(Some("revoked".into())),
            _ => continue,
        };
        by_key.entry(o.key.as_str()).or_default().push(timed(o, op));
    }
    by_key.into_iter().filter(|(_, h)| !linearizable(None, h)).map(|(k, _)| k.to_string()).collect()
}

/// Users whose password history no register explains; `first` is each user's first password.
pub fn password_nonlinear(ops: &[Op], first: &BTreeMap<String, String>) -> Vec<String> {
    let mut by_key: BTreeMap<&str, Vec<Timed>> = BTreeMap::new();
    for o in ops {
        let op = match (o.f, &o.outcome, &o.arg) {
            ("set_password", Outcome::Ok(_) | Outcome::Info(_), Some(pw)) => RegOp::Write(pw.clone()),
            ("login", Outcome::Ok(Some(v)), Some(pw)) => RegOp::Check(pw.clone(), v == "yes"),
            _ => continue,
        };
        by_key.entry(o.key.as_str()).or_default().push(timed(o, op));
    }
    by_key.into_iter().filter(|(k, h)| !linearizable(first.get(*k).cloned(), h)).map(|(k, _)| k.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(f: &'static str, key: &str, arg: Option<&str>, invoke_us: u64, complete_us: u64, outcome: Outcome) -> Op {
        Op { client: 0, member: 1, f, key: key.into(), arg: arg.map(String::from), invoke_us, complete_us, outcome }
    }
    fn valid(v: &str) -> Outcome {
        Outcome::Ok(Some(v.into()))
    }

    #[test]
    fn a_token_accepted_after_its_revocation_returned_is_found() {
        let good = [
            op("validate", "t", None, 0, 1, valid("valid")),
            op("revoke", "t", None, 2, 5, Outcome::Ok(None)),
            op("validate", "t", None, 3, 4, valid("valid")), // concurrent with the revoke
            op("validate", "t", None, 6, 7, valid("invalid")),
        ];
        assert!(stale_token_accepts(&good).is_empty());
        assert!(token_nonlinear(&good).is_empty());
        let mut bad = good.to_vec();
        bad.push(op("validate", "t", None, 8, 9, valid("valid")));
        assert_eq!(stale_token_accepts(&bad), vec!["t@1".to_string()]);
        assert_eq!(token_nonlinear(&bad), vec!["t".to_string()]);
    }

    #[test]
    fn a_rotated_away_refresh_token_called_active_is_found() {
        let good = [
            op("rotate", "f", Some("r0"), 0, 5, Outcome::Ok(Some("r1".into()))),
            op("introspect", "f", Some("r0"), 1, 2, valid("active")), // during the rotation
            op("introspect", "f", Some("r0"), 6, 7, valid("inactive")),
        ];
        assert!(stale_refresh_accepts(&good).is_empty());
        let mut bad = good.to_vec();
        bad.push(op("introspect", "f", Some("r0"), 8, 9, valid("active")));
        assert_eq!(stale_refresh_accepts(&bad), vec!["f@1".to_string()]);
    }

    #[test]
    fn an_old_password_accepted_after_the_change_returned_is_found() {
        let first = BTreeMap::from([("u".to_string(), "p0".to_string())]);
        let good = [
            op("login", "u", Some("p0"), 0, 1, valid("yes")),
            op("set_password", "u", Some("p1"), 2, 5, Outcome::Ok(None)),
            op("login", "u", Some("p0"), 6, 7, valid("no")),
            op("login", "u", Some("p1"), 8, 9, valid("yes")),
        ];
        assert!(stale_password_accepts(&good).is_empty());
        assert!(password_nonlinear(&good, &first).is_empty());
        let mut bad = good.to_vec();
        bad.push(op("login", "u", Some("p0"), 10, 11, valid("yes")));
        assert_eq!(stale_password_accepts(&bad), vec!["u@1".to_string()]);
        assert_eq!(password_nonlinear(&bad, &first), vec!["u".to_string()]);
    }

    #[test]
    fn a_session_token_accepted_after_the_change_is_found() {
        let by = Some("issued by member 2");
        let good = [op("session", "u", by, 5, 6, valid("invalid"))];
        assert!(stale_session_accepts(&good).is_empty());
        let bad = [good[0].clone(), op("session", "u", by, 7, 8, valid("valid"))];
        assert_eq!(stale_session_accepts(&bad), vec!["u@1 (issued by member 2)".to_string()]);
    }
}
