//! `PerProvider` against a stand-in leader: leases spent, refusals answered 429 with the
//! leader's `Retry-After`, and a leader that does not answer replaced by the member's share.

use super::*;

/// Answers leases from a script, recording what was asked.
struct Script {
    members: usize,
    answers: Mutex<Vec<Option<LeaseGrant>>>,
    asked: Mutex<Vec<(String, u32, u32)>>,
}

impl Script {
    fn new(members: usize, answers: Vec<Option<LeaseGrant>>) -> Self {
        Script { members, answers: Mutex::new(answers), asked: Mutex::new(Vec::new()) }
    }
}

impl LeaseSource for Script {
    fn members(&self) -> usize {
        self.members
    }

    async fn lease(&self, key: &str, per_minute: u32, want: u32) -> Option<LeaseGrant> {
        self.asked.lock().unwrap().push((key.to_string(), per_minute, want));
        let mut answers = self.answers.lock().unwrap();
        if answers.is_empty() {
            None
        } else {
            answers.remove(0)
        }
    }
}

fn grant(granted: u32, retry_after_ms: u64) -> Option<LeaseGrant> {
    Some(LeaseGrant { granted, retry_after: Duration::from_millis(retry_after_ms) })
}

#[test]
fn a_lease_is_a_part_of_the_figure_per_member() {
    assert_eq!([lease_size(500, 3), lease_size(500, 5), lease_size(12, 3), lease_size(50, 1)], [20, 12, 1, 6]);
}

#[tokio::test]
async fn leased_tokens_are_spent_then_the_leaders_refusal_is_a_429_with_its_retry_after() {
    let l = PerProvider::new(12, "scim_realm_write_rate_limit", "SCIM writes");
    let leader = Script::new(3, vec![grant(3, 0), grant(1, 0), grant(0, 44_500)]);
    for _ in 0..4 {
        l.check(&leader, "p").await.unwrap();
    }
    let r = l.check(&leader, "p").await.unwrap_err();
    assert_eq!((r.status, r.retry_after), (StatusCode::TOO_MANY_REQUESTS, Some(45)), "44.5 s rounded up");
    let r = l.check(&leader, "p").await.unwrap_err();
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "the refusal is remembered");
    let asked = leader.asked.lock().unwrap().clone();
    let key = "scim_realm_write_rate_limit:p".to_string();
    assert_eq!(
        asked,
        vec![(key.clone(), 12, 1), (key.clone(), 12, 1), (key, 12, 1)],
        "one call per lease, none after the refusal"
    );
}

#[tokio::test]
async fn without_an_answer_from_the_leader_the_member_counts_its_share() {
    let l = PerProvider::new(6, "shadow_registry_auth_rate_limit", "authentications");
    let leader = Script::new(3, vec![]);
    let mut admitted = 0;
    for _ in 0..10 {
        admitted += usize::from(l.check(&leader, "p").await.is_ok());
    }
    assert_eq!(admitted, 2, "a third of 6 on a three-member cluster");
    let r = l.check(&leader, "p").await.unwrap_err();
    assert_eq!((r.status, r.retry_after.is_some()), (StatusCode::TOO_MANY_REQUESTS, true));
    assert!(PerProvider::new(0, "x", "events").check(&leader, "p").await.is_ok(), "0: no limit");
}
