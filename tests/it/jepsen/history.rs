//! The record of every operation the campaign's clients ran: who, where, what, when it was
//! invoked and when it completed (microseconds since the run began), and how it ended. Kept
//! as a JSON artifact beside the node logs, and read by the checkers.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum Outcome {
    /// It happened; the value read or written, if any.
    Ok(Option<String>),
    /// It certainly did not happen (a refusal before any change: 4xx, or 503 from a member
    /// that could not reach the leader before proposing).
    Fail(String),
    /// Unknown: a timeout or a lost connection; it may have happened, now or later.
    Info(String),
}

#[derive(Debug, Clone, Serialize)]
pub struct Op {
    pub client: usize,
    /// The member (index) the operation was sent to.
    pub member: usize,
    /// What it was: `create`, `list`, `revoke`, `validate`, `set_password`, `login`, ...
    pub f: &'static str,
    /// The single key it is about (a token's id, a user's), or "" for whole-set operations.
    pub key: String,
    /// The argument (the value written, the password tried).
    pub arg: Option<String>,
    pub invoke_us: u64,
    pub complete_us: u64,
    pub outcome: Outcome,
}

#[derive(Default)]
pub struct History {
    start: Option<Instant>,
    ops: Mutex<Vec<Op>>,
    /// Nemesis events: (time, what).
    events: Mutex<Vec<(u64, String)>>,
}

#[derive(Serialize)]
struct Artifact<'a> {
    ops: &'a [Op],
    nemesis: &'a [(u64, String)],
}

impl History {
    pub fn new() -> Self {
        History { start: Some(Instant::now()), ..History::default() }
    }

    /// Microseconds since the run began.
    pub fn now(&self) -> u64 {
        self.start.map_or(0, |s| s.elapsed().as_micros() as u64)
    }

    pub fn push(&self, op: Op) {
        self.ops.lock().unwrap().push(op);
    }

    pub fn event(&self, what: String) {
        let at = self.now();
        self.events.lock().unwrap().push((at, what));
    }

    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }

    pub fn write_json(&self, path: &Path) {
        let ops = self.ops.lock().unwrap();
        let events = self.events.lock().unwrap();
        let json = serde_json::to_vec_pretty(&Artifact { ops: &ops, nemesis: &events }).expect("history serializes");
        std::fs::write(path, json).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}
