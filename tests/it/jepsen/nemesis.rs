//! The faults, each a family the campaign runs cycle after cycle: network partitions (halves,
//! the leader alone, one-way, a bridge node, flapping), lossy and slow links, and process
//! and clock faults on one member. `start` applies one and says what it did; `stop` undoes it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use super::net::Net;
use crate::support::Cluster;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// A random majority and minority, cut off from each other.
    Partition,
    /// The leader alone on one side.
    IsolateLeader,
    /// The leader and one follower cut off from the rest (five members or more): the follower
    /// still hears a leader that lost its quorum.
    LeaderWithFollower,
    /// The leader's packets to the others lost; theirs to it still arrive.
    OneWay,
    /// Two sides that cannot talk, joined by one member that talks to both.
    Bridge,
    /// A new random majority/minority split every 300 ms.
    Flap,
    /// 20% of the packets between members lost.
    Loss,
    /// Every member's link slowed to 512 kbit/s behind a 200 ms queue.
    Slow,
    /// One member SIGKILLed, restarted at the heal.
    Kill,
    /// One member SIGSTOPped, continued at the heal.
    Pause,
    /// One member's wall clock jumps 30 to 300 s ahead or behind.
    Clock,
}

impl Family {
    pub const ALL: [Family; 11] = [
        Family::Partition,
        Family::IsolateLeader,
        Family::LeaderWithFollower,
        Family::OneWay,
        Family::Bridge,
        Family::Flap,
        Family::Loss,
        Family::Slow,
        Family::Kill,
        Family::Pause,
        Family::Clock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Partition => "partition (majority/minority)",
            Family::IsolateLeader => "isolate the leader",
            Family::LeaderWithFollower => "the leader and a follower cut off",
            Family::OneWay => "one-way (leader's sends lost)",
            Family::Bridge => "bridge",
            Family::Flap => "flapping partitions",
            Family::Loss => "20% packet loss",
            Family::Slow => "slow links (512 kbit/s, 200 ms queue)",
            Family::Kill => "SIGKILL one member",
            Family::Pause => "SIGSTOP one member",
            Family::Clock => "clock jump on one member",
        }
    }

    /// Whether the family means anything on `members` members: with three, the leader and a
    /// follower are a majority.
    pub fn applies(self, members: usize) -> bool {
        self != Family::LeaderWithFollower || members >= 5
    }

    /// The partition families: the faults that leave a member without a leader's quorum.
    pub fn partitions() -> impl Iterator<Item = Family> {
        [Family::Partition, Family::IsolateLeader, Family::LeaderWithFollower, Family::OneWay, Family::Bridge]
            .into_iter()
    }
}

/// What `start` did, for `stop` and the checkers.
pub struct Applied {
    pub what: String,
    /// Members cut off from a majority (they must answer 503, never stale data).
    pub minority: Vec<usize>,
    undo: Undo,
}

enum Undo {
    Net,
    Flapping(Arc<AtomicBool>, std::thread::JoinHandle<()>),
    Respawn(usize),
    Resume(usize),
    Clock(PathBuf),
}

/// A random split of `0..n` into a majority and a minority.
fn halves(n: usize, rng: &mut StdRng) -> (Vec<usize>, Vec<usize>) {
    let mut all: Vec<usize> = (0..n).collect();
    all.shuffle(rng);
    let minority = all.split_off(n / 2 + 1);
    (all, minority)
}

pub fn start(f: Family, c: &mut Cluster, net: &Arc<Net>, skew: &[PathBuf], leader: usize, rng: &mut StdRng) -> Applied {
    let n = c.len();
    let others: Vec<usize> = (0..n).filter(|&i| i != leader).collect();
    let (what, minority, undo) = match f {
        Family::Partition => {
            let (major, minor) = halves(n, rng);
            net.partition(&[major.clone(), minor.clone()]);
            (format!("{major:?} | {minor:?}"), minor, Undo::Net)
        }
        Family::IsolateLeader => {
            net.partition(&[vec![leader], others.clone()]);
            (format!("[{leader}] | {others:?}"), vec![leader], Undo::Net)
        }
        Family::LeaderWithFollower => {
            let follower = *others.choose(rng).expect("another member");
            let rest: Vec<usize> = others.iter().copied().filter(|&o| o != follower).collect();
            net.partition(&[vec![leader, follower], rest.clone()]);
            (format!("[{leader}, {follower}] | {rest:?}"), vec![leader, follower], Undo::Net)
        }
        Family::OneWay => {
            for &o in &others {
                net.cut(leader, o);
            }
            (format!("{leader} -/-> {others:?}"), vec![leader], Undo::Net)
        }
        Family::Bridge => {
            let mut all: Vec<usize> = (0..n).collect();
            all.shuffle(rng);
            let bridge = all[0];
            let rest = &all[1..];
            let (a, b) = rest.split_at(rest.len() / 2);
            net.partition(&[a.to_vec(), b.to_vec()]);
            (format!("{a:?} | {b:?}, both through {bridge}"), Vec::new(), Undo::Net)
        }
        Family::Flap => {
            let stop = Arc::new(AtomicBool::new(false));
            let (flag, net2, seed) = (stop.clone(), net.clone(), rng.gen::<u64>());
            let handle = std::thread::spawn(move || {
                let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(seed);
                while !flag.load(Ordering::Relaxed) {
                    net2.heal();
                    let (major, minor) = halves(n, &mut rng);
                    net2.partition(&[major, minor]);
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
            ("a new split every 300 ms".to_string(), Vec::new(), Undo::Flapping(stop, handle))
        }
        Family::Loss => {
            for i in 0..n {
                net.lossy(i, 20);
            }
            ("every member".to_string(), Vec::new(), Undo::Net)
        }
        Family::Slow => {
            for i in 0..n {
                net.slow(i, 512, 200);
            }
            ("every member".to_string(), Vec::new(), Undo::Net)
        }
        Family::Kill => {
            let victim = rng.gen_range(0..n);
            c.kill(victim);
            (
                format!("member {victim}{}", if victim == leader { " (the leader)" } else { "" }),
                Vec::new(),
                Undo::Respawn(victim),
            )
        }
        Family::Pause => {
            let victim = rng.gen_range(0..n);
            c.pause(victim);
            (
                format!("member {victim}{}", if victim == leader { " (the leader)" } else { "" }),
                Vec::new(),
                Undo::Resume(victim),
            )
        }
        Family::Clock => {
            let victim = rng.gen_range(0..n);
            let secs = rng.gen_range(30..300) * if rng.gen_bool(0.5) { 1 } else { -1 };
            std::fs::write(&skew[victim], secs.to_string()).expect("write the skew file");
            (format!("member {victim} by {secs:+} s"), Vec::new(), Undo::Clock(skew[victim].clone()))
        }
    };
    Applied { what, minority, undo }
}

/// Undoes `applied` (a killed member is started again, not waited for).
pub fn stop(applied: Applied, c: &mut Cluster, net: &Net) {
    match applied.undo {
        Undo::Net => net.heal(),
        Undo::Flapping(flag, handle) => {
            flag.store(true, Ordering::Relaxed);
            let _ = handle.join();
            net.heal();
        }
        Undo::Respawn(i) => c.spawn_node(i),
        Undo::Resume(i) => c.resume(i),
        Undo::Clock(path) => std::fs::write(path, "0").expect("reset the skew file"),
    }
}
