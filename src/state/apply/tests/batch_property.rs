//! Property test: a `Request::Batch` entry is the same as its commands in consecutive entries.
//! Random command sequences (with name collisions, so refusals are common) go to replica A one
//! entry each and to replica B grouped into batch entries of random sizes; every command's
//! outcome and every application family's digest must match. B then applies one batch entry a
//! second time, as a member restarting part-way through it would: the outcomes are the ones
//! already given (dedup) and the state does not move.

use idnode_raft::{CfDigest, Proposal, Reply, Request};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::snapshot_property::{bootstrap, random_command, Log, Replica};

const CASES: u64 = 16;

/// Every family's digest at the checkpoint `index` but the dedup table's, which records log
/// indexes (and A's log is longer than B's for the same commands).
async fn app_families(r: &Replica, index: u64) -> Vec<CfDigest> {
    r.digest(index).await;
    let families = r.links.digests.families(index).expect("families at a completed digest");
    families.into_iter().filter(|f| f.cf != idnode_raft::DEDUP_FAMILY).collect()
}

fn replies_of(batch_reply: &Reply) -> Vec<Reply> {
    postcard::from_bytes::<Vec<Vec<u8>>>(&batch_reply.0).expect("a batch reply").into_iter().map(Reply).collect()
}

async fn one_case(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut log_a = Log { entries: Vec::new(), rng: StdRng::seed_from_u64(seed) };
    let mut log_b = Log { entries: Vec::new(), rng: StdRng::seed_from_u64(seed) };
    let (mut a, mut b) = (Replica::new(), Replica::new());
    let boot = Proposal { request_id: rng.gen(), payload: postcard::to_allocvec(&bootstrap()).unwrap() };
    a.apply(&[log_a.push(Request::App(boot.clone()))]).await;
    b.apply(&[log_b.push(Request::App(boot))]).await;

    let mut last_batch = None;
    for _ in 0..rng.gen_range(3..12) {
        let size = rng.gen_range(1..9);
        let proposals: Vec<Proposal> = (0..size)
            .map(|_| Proposal {
                request_id: rng.gen(),
                payload: postcard::to_allocvec(&random_command(&mut rng)).unwrap(),
            })
            .collect();
        let mut one_by_one = Vec::new();
        for p in &proposals {
            one_by_one.extend(a.apply(&[log_a.push(Request::App(p.clone()))]).await);
        }
        let entry = log_b.push(Request::Batch(proposals));
        let batched = b.apply(std::slice::from_ref(&entry)).await;
        assert_eq!(batched.len(), 1, "one reply per entry");
        assert_eq!(replies_of(&batched[0]), one_by_one, "seed {seed}: a batch's outcomes differ from single entries'");
        last_batch = Some((entry, batched));
    }
    let (at_a, at_b) = (log_a.push(Request::Checkpoint), log_b.push(Request::Checkpoint));
    a.apply(std::slice::from_ref(&at_a)).await;
    b.apply(std::slice::from_ref(&at_b)).await;
    let before = app_families(&b, at_b.log_id.index).await;
    assert_eq!(app_families(&a, at_a.log_id.index).await, before, "seed {seed}: batched state differs");

    // The last batch entry again (a restart that lost the applied position, not the writes).
    let (entry, first) = last_batch.expect("at least one batch");
    assert_eq!(b.apply(std::slice::from_ref(&entry)).await, first, "seed {seed}: a replayed batch answers anew");
    let again = log_b.push(Request::Checkpoint);
    b.apply(std::slice::from_ref(&again)).await;
    assert_eq!(app_families(&b, again.log_id.index).await, before, "seed {seed}: a replayed batch moved the state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_entries_apply_as_consecutive_entries() {
    for seed in 0..CASES {
        one_case(seed).await;
    }
}
