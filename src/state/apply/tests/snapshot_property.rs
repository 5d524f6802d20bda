//! Property test: replicas stay identical across a snapshot install. Random command
//! sequences (with deliberate name collisions) go through node A's real raft state machine;
//! node B, with other data keys, applies a prefix of the same log, then installs A's snapshot
//! as a follower would (built, sealed for the wire, opened, imported). Both then digest their
//! state at a checkpoint, apply the same further commands, and digest again: the digests and
//! every command's outcome must be equal.

use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use idnode_keys::{DataKeys, IndexKey, TokenKeyRing};
use idnode_raft::storage::Engine;
use idnode_raft::{Proposal, Reply, Request, SmLinks, StateMachine, TypeConfig};
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{project, user};
use crate::state::apply::IdentityApp;
use crate::state::cf::STATE_CFS;
use crate::state::command::{Bootstrap, Command};
use crate::state::model::*;
use crate::state::ruleset::GroupStrategy;
use crate::state::shadow::{GroupRequest, ShadowCommand};

const CASES: u64 = 24;
const SECRET: &str = "property-cluster-secret";

pub(super) struct Replica {
    _dir: tempfile::TempDir,
    pub(super) sm: StateMachine,
    pub(super) links: SmLinks,
}

impl Replica {
    pub(super) fn new() -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let cfs: Vec<&'static str> = idnode_raft::COLUMN_FAMILIES.iter().chain(STATE_CFS).copied().collect();
        // Each replica has its own data keys, as every node does.
        let engine = Arc::new(Engine::open(dir.path(), &cfs, Arc::new(DataKeys::ephemeral())).unwrap());
        let links = SmLinks::new(Some(SECRET));
        let sm = StateMachine::new(engine, IdentityApp::new(Vec::new()), links.clone()).unwrap();
        Replica { _dir: dir, sm, links }
    }

    pub(super) async fn apply(&mut self, entries: &[Entry<TypeConfig>]) -> Vec<Reply> {
        self.sm.apply(entries.to_vec()).await.unwrap()
    }

    pub(super) async fn digest(&self, index: u64) -> String {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        match self.links.digests.wait(index, deadline).await {
            Some(idnode_raft::DigestOutcome::Done { digest, .. }) => digest,
            other => panic!("no digest at {index}: {other:?}"),
        }
    }
}

pub(super) struct Log {
    pub(super) entries: Vec<Entry<TypeConfig>>,
    pub(super) rng: StdRng,
}

impl Log {
    pub(super) fn push(&mut self, req: Request) -> Entry<TypeConfig> {
        let index = self.entries.len() as u64 + 1;
        let e = Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), index), payload: EntryPayload::Normal(req) };
        self.entries.push(e.clone());
        e
    }

    fn command(&mut self, cmd: &Command) -> Entry<TypeConfig> {
        let proposal = Proposal { request_id: self.rng.gen(), payload: postcard::to_allocvec(cmd).unwrap() };
        self.push(Request::App(proposal))
    }
}

pub(super) fn bootstrap() -> Command {
    let role = |id: &str| Role {
        id: id.into(),
        name: id.into(),
        domain_id: None,
        description: None,
        extra: "{}".into(),
        options: "{}".into(),
    };
    let grant = Assignment {
        actor_kind: ActorKind::User,
        actor_id: "admin-id".into(),
        target: Target::System,
        role_id: "admin".into(),
        inherited: false,
    };
    let b = Bootstrap {
        domain: project("default", "Default", "default", true),
        project: project("admin-project", "admin", "default", false),
        user: user("admin-id", "admin", "default"),
        roles: vec![role("admin"), role("member")],
        implied: vec![("admin".into(), "member".into())],
        assignments: vec![grant],
        region: Region { id: "RegionOne".into(), description: None, parent_region_id: None, extra: "{}".into() },
        service: Service {
            id: "svc".into(),
            service_type: "identity".into(),
            name: None,
            enabled: true,
            description: None,
            extra: "{}".into(),
        },
        endpoints: vec![],
        token_keys: TokenKeyRing::generate(0),
        at: 0,
    };
    Command::BootstrapCluster { index_key: IndexKey::generate(), bootstrap: Box::new(b) }
}

/// A random command over small pools of ids and names, so collisions and misses are common.
pub(super) fn random_command(rng: &mut StdRng) -> Command {
    let id = |rng: &mut StdRng, p: &str| format!("{p}{}", rng.gen_range(0..6));
    let name = |rng: &mut StdRng| ["admin", "Alice", "alice", "bob", "Carol", "dave"][rng.gen_range(0..6)].to_string();
    let domain = |rng: &mut StdRng| if rng.gen_bool(0.7) { "default".to_string() } else { "D1".to_string() };
    let groups = |rng: &mut StdRng| -> Vec<GroupRequest> {
        (0..rng.gen_range(0..3))
            .map(|_| GroupRequest {
                group_id: rng.gen_bool(0.7).then(|| id(rng, "g")),
                name: name(rng),
                domain_id: domain(rng),
                strategy: if rng.gen_bool(0.5) { GroupStrategy::Get } else { GroupStrategy::CreateOrGet },
                new_id: id(rng, "g"),
            })
            .collect()
    };
    match rng.gen_range(0..17) {
        0 | 1 => Command::CreateUser(user(&id(rng, "u"), &name(rng), &domain(rng))),
        2 => Command::UpdateUser(user(&id(rng, "u"), &name(rng), &domain(rng))),
        3 => Command::DeleteUser { id: id(rng, "u"), now: 5 },
        4 => Command::CreateGroup(Group {
            id: id(rng, "g"),
            name: name(rng),
            domain_id: domain(rng),
            description: None,
            extra: "{}".into(),
        }),
        5 => Command::DeleteGroup { id: id(rng, "g") },
        6 => Command::AddGroupMember { group_id: id(rng, "g"), user_id: id(rng, "u") },
        7 => Command::CreateRole(Role {
            id: id(rng, "r"),
            name: name(rng),
            domain_id: rng.gen_bool(0.3).then(|| "D1".to_string()),
            description: None,
            extra: "{}".into(),
            options: "{}".into(),
        }),
        8 => Command::DeleteRole { id: id(rng, "r") },
        9 if rng.gen_bool(0.3) => Command::CreateProject(project("D1", "Second", "D1", true)),
        9 | 10 => Command::CreateProject(project(&id(rng, "p"), &name(rng), &domain(rng), false)),
        11 => Command::DeleteProject { id: id(rng, "p") },
        12 => Command::CreateCredential(Credential {
            id: id(rng, "c"),
            user_id: id(rng, "u"),
            project_id: rng.gen_bool(0.5).then(|| id(rng, "p")),
            cred_type: "ec2".into(),
            blob: "{}".into(),
            extra: "{}".into(),
        }),
        13 => Command::CreateGrant(Assignment {
            actor_kind: ActorKind::User,
            actor_id: id(rng, "u"),
            target: Target::Project(id(rng, "p")),
            role_id: id(rng, "r"),
            inherited: false,
        }),
        14 => {
            let at = rng.gen_range(0..1_000);
            Command::Shadow(ShadowCommand::ExpiringLogin {
                user: Box::new(user(&id(rng, "u"), &name(rng), &domain(rng))),
                groups: groups(rng),
                idp_id: id(rng, "idp"),
                at,
                expires_at: at + rng.gen_range(-10..1_000),
            })
        }
        15 => Command::Shadow(ShadowCommand::LocalLogin {
            user: Box::new(user(&id(rng, "u"), &name(rng), &domain(rng))),
            groups: groups(rng),
        }),
        _ => Command::DeleteCredential { id: id(rng, "c") },
    }
}

async fn one_case(seed: u64) {
    let mut log = Log { entries: Vec::new(), rng: StdRng::seed_from_u64(seed) };
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut a = Replica::new();
    let mut b = Replica::new();

    let first = log.command(&bootstrap());
    a.apply(&[first]).await;
    for _ in 0..rng.gen_range(5..60) {
        let cmd = random_command(&mut rng);
        let e = log.command(&cmd);
        a.apply(&[e]).await;
    }
    // B lagged: it applied a prefix of the log (maybe nothing), then gets A's snapshot.
    let prefix = rng.gen_range(0..log.entries.len());
    b.apply(&log.entries[..prefix]).await;
    a.sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let sent = a.sm.get_current_snapshot().await.unwrap().expect("a snapshot after building one");
    let mut wire = Vec::new();
    let mut file = sent.snapshot;
    file.read_to_end(&mut wire).await.unwrap();
    assert!(wire.starts_with(b"IDNSEAL1"), "a snapshot leaves sealed");
    // As openraft does: the receiver's own file, written chunk by chunk.
    let mut receiving = b.sm.begin_receiving_snapshot().await.unwrap();
    for chunk in wire.chunks(4096) {
        receiving.write_all(chunk).await.unwrap();
    }
    receiving.shutdown().await.unwrap();
    b.sm.install_snapshot(&sent.meta, receiving).await.unwrap();

    let cp = log.push(Request::Checkpoint);
    let at = cp.log_id.index;
    a.apply(std::slice::from_ref(&cp)).await;
    b.apply(&[cp]).await;
    assert_eq!(a.digest(at).await, b.digest(at).await, "seed {seed}: digests differ right after the install");

    for step in 0..rng.gen_range(10..50) {
        let cmd = random_command(&mut rng);
        let e = log.command(&cmd);
        let (ra, rb) = (a.apply(std::slice::from_ref(&e)).await, b.apply(&[e]).await);
        assert_eq!(ra, rb, "seed {seed}, step {step}: {cmd:?} had different outcomes");
    }
    let cp = log.push(Request::Checkpoint);
    let at = cp.log_id.index;
    a.apply(std::slice::from_ref(&cp)).await;
    b.apply(&[cp]).await;
    assert_eq!(a.digest(at).await, b.digest(at).await, "seed {seed}: digests differ after the same commands");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_installs_keep_replicas_identical() {
    for seed in 0..CASES {
        one_case(seed).await;
    }
}
