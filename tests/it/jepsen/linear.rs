//! Linearizability of one key's history against a register, by the Wing–Gong search with
//! Lowe's memo of (operations linearized, register value) already explored. Operations whose
//! outcome is unknown may take effect at any time after they were invoked, or never: they are
//! given no completion time, so the search may place them last. Meant for the short per-key
//! histories of the campaign (at most 128 operations each).

use std::collections::HashSet;

/// One operation on the register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegOp {
    /// Set the value.
    Write(String),
    /// Observed the value (None: unset).
    Read(Option<String>),
    /// Asked whether the value is this one, and was told yes or no (a login with a password).
    Check(String, bool),
}

#[derive(Debug, Clone)]
pub struct Timed {
    pub op: RegOp,
    pub invoke: u64,
    /// None: unknown outcome (a write that may or may not have happened).
    pub complete: Option<u64>,
}

fn step(value: &Option<String>, op: &RegOp) -> Option<Option<String>> {
    match op {
        RegOp::Write(v) => Some(Some(v.clone())),
        RegOp::Read(seen) => (seen == value).then(|| value.clone()),
        RegOp::Check(v, yes) => ((value.as_deref() == Some(v.as_str())) == *yes).then(|| value.clone()),
    }
}

/// Whether some order of the operations, each placed between its invocation and its
/// completion, explains every outcome starting from `initial`. Operations with an unknown
/// outcome that are reads or checks are left out (they observed nothing anyone knows).
pub fn linearizable(initial: Option<String>, history: &[Timed]) -> bool {
    let ops: Vec<&Timed> = history.iter().filter(|t| t.complete.is_some() || matches!(t.op, RegOp::Write(_))).collect();
    assert!(ops.len() <= 128, "a history of {} operations is too long for this search", ops.len());
    let mut seen = HashSet::new();
    search(&ops, 0u128, initial, &mut seen)
}

fn search(ops: &[&Timed], done: u128, value: Option<String>, seen: &mut HashSet<(u128, Option<String>)>) -> bool {
    let pending: Vec<usize> = (0..ops.len()).filter(|i| done & (1u128 << i) == 0).collect();
    // Every operation that must complete has been placed: the rest are unknown writes,
    // which may never have happened.
    if pending.iter().all(|&i| ops[i].complete.is_none()) {
        return true;
    }
    if !seen.insert((done, value.clone())) {
        return false;
    }
    // An operation may go next only if it was invoked before every pending one completed.
    let horizon = pending.iter().filter_map(|&i| ops[i].complete).min().unwrap_or(u64::MAX);
    for &i in &pending {
        if ops[i].invoke > horizon {
            continue;
        }
        if let Some(next) = step(&value, &ops[i].op) {
            if search(ops, done | (1u128 << i), next, seen) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: &str, invoke: u64, complete: Option<u64>) -> Timed {
        Timed { op: RegOp::Write(v.into()), invoke, complete }
    }
    fn r(v: Option<&str>, invoke: u64, complete: u64) -> Timed {
        Timed { op: RegOp::Read(v.map(String::from)), invoke, complete: Some(complete) }
    }
    fn c(v: &str, yes: bool, invoke: u64, complete: u64) -> Timed {
        Timed { op: RegOp::Check(v.into(), yes), invoke, complete: Some(complete) }
    }

    #[test]
    fn accepts_what_some_order_explains() {
        assert!(linearizable(None, &[]));
        // Sequential.
        assert!(linearizable(None, &[w("a", 0, Some(1)), r(Some("a"), 2, 3), w("b", 4, Some(5)), r(Some("b"), 6, 7)]));
        // A read concurrent with a write may see either value.
        assert!(linearizable(None, &[w("a", 0, Some(10)), r(None, 1, 2)]));
        assert!(linearizable(None, &[w("a", 0, Some(10)), r(Some("a"), 1, 2)]));
        // An unknown write may have happened late, or never.
        assert!(linearizable(Some("x".into()), &[w("a", 0, None), r(Some("x"), 5, 6), r(Some("a"), 7, 8)]));
        assert!(linearizable(Some("x".into()), &[w("a", 0, None), r(Some("x"), 5, 6)]));
        // Password checks: the old one refused once the change returned.
        assert!(linearizable(Some("p0".into()), &[c("p0", true, 0, 1), w("p1", 2, Some(3)), c("p0", false, 4, 5)]));
    }

    #[test]
    fn refuses_stale_reads_and_lost_writes() {
        // A read after a completed write sees the old value: stale.
        assert!(!linearizable(None, &[w("a", 0, Some(1)), r(None, 2, 3)]));
        // Values that go back in time.
        assert!(!linearizable(None, &[w("a", 0, Some(1)), w("b", 2, Some(3)), r(Some("b"), 4, 5), r(Some("a"), 6, 7)]));
        // A value nobody wrote.
        assert!(!linearizable(None, &[r(Some("z"), 0, 1)]));
        // The old password accepted after the change returned.
        assert!(!linearizable(Some("p0".into()), &[w("p1", 0, Some(1)), c("p0", true, 2, 3)]));
        // Two reads that need opposite orders of two concurrent writes, both after them.
        assert!(!linearizable(
            None,
            &[w("a", 0, Some(5)), w("b", 0, Some(5)), r(Some("a"), 6, 7), r(Some("b"), 8, 9), r(Some("a"), 10, 11)]
        ));
    }
}
