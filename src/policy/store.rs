//! A compiled policy set and its life cycle: bundled defaults, operator overrides from a
//! directory, reloads that keep the last working set when the new one does not compile, and
//! evaluation. Policies are compiled to a regorus RVM program (about five times faster than
//! the tree-walking interpreter, which matters on the token validation path); each thread
//! keeps its own VM over the shared program. Before a set is installed, the VM's decisions are
//! checked against the interpreter's on probe inputs, so the faster evaluator cannot silently
//! decide differently from the Rego semantics.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use regorus::languages::rego::compiler::Compiler;
use regorus::rvm::RegoVM;

use super::actions::{rule_path, ACTIONS};
use crate::http::metrics::{labels, Labels};

/// The bundled policy files, one per subsystem. An operator file of the same name replaces one.
const BUNDLED: &[(&str, &str)] = &[
    ("common.rego", include_str!("default/common.rego")),
    ("resource.rego", include_str!("default/resource.rego")),
    ("identity.rego", include_str!("default/identity.rego")),
    ("assignment.rego", include_str!("default/assignment.rego")),
    ("catalog.rego", include_str!("default/catalog.rego")),
    ("federation.rego", include_str!("default/federation.rego")),
    ("credential.rego", include_str!("default/credential.rego")),
    ("token.rego", include_str!("default/token.rego")),
    ("oauth2.rego", include_str!("default/oauth2.rego")),
    ("oauth2_client.rego", include_str!("default/oauth2_client.rego")),
    ("oauth2_key.rego", include_str!("default/oauth2_key.rego")),
    ("oauth2_consent.rego", include_str!("default/oauth2_consent.rego")),
    ("oauth2_session.rego", include_str!("default/oauth2_session.rego")),
    ("providers.rego", include_str!("default/providers.rego")),
    ("identity_provider.rego", include_str!("default/identity_provider.rego")),
    ("k8s_instance.rego", include_str!("default/k8s_instance.rego")),
    ("trust_domain.rego", include_str!("default/trust_domain.rego")),
    ("mapping.rego", include_str!("default/mapping.rego")),
    ("api_key.rego", include_str!("default/api_key.rego")),
    ("token_restriction.rego", include_str!("default/token_restriction.rego")),
    ("limit.rego", include_str!("default/limit.rego")),
    ("scim_realm.rego", include_str!("default/scim_realm.rego")),
    ("scim_user.rego", include_str!("default/scim_user.rego")),
    ("scim_group.rego", include_str!("default/scim_group.rego")),
    ("passkey.rego", include_str!("default/passkey.rego")),
];

/// Policy metric families; the node registers them in its registry.
#[derive(Clone)]
pub struct PolicyMetrics {
    pub decisions: Family<Labels, Counter>,
    pub evaluation: Histogram,
    pub reloads: Family<Labels, Counter>,
    /// The spec's dynamic-plugin load failures: an operator policy directory that did not
    /// load (`plugin` = `policy_directory`), the only plugins idnode loads.
    pub plugin_load_failures: Family<Labels, Counter>,
}

impl PolicyMetrics {
    /// Registers the policy series into the node's registry.
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register("idnode_policy_decisions", "Policy decisions by action and result", self.decisions.clone());
        registry.register("idnode_policy_evaluation_seconds", "Policy evaluation latency", self.evaluation.clone());
        registry.register("idnode_policy_reloads", "Policy set loads by result", self.reloads.clone());
        registry.register(
            "idnode_plugin_load_failures",
            "Dynamic plugins that failed to load, by plugin kind",
            self.plugin_load_failures.clone(),
        );
    }
}

impl Default for PolicyMetrics {
    fn default() -> Self {
        PolicyMetrics {
            decisions: Family::default(),
            evaluation: Histogram::new(exponential_buckets(0.000_001, 2.5, 14)),
            reloads: Family::default(),
            plugin_load_failures: Family::default(),
        }
    }
}

/// One complete policy set, compiled.
struct Compiled {
    generation: u64,
    program: Program,
    files: Vec<String>,
}

/// Entry points per compiled chunk. Regorus' compiler gives every entry point a register of
/// the program's main frame, and a frame holds 255: a policy set with more rules than that
/// is compiled as several programs over the same policy, each answering its share.
const ENTRIES_PER_CHUNK: usize = 128;

#[derive(Clone)]
pub(super) struct Program {
    policy: regorus::CompiledPolicy,
    chunks: Vec<Arc<regorus::rvm::Program>>,
    /// Which chunk answers each entry point.
    chunk_of: Arc<HashMap<String, usize>>,
}

impl Program {
    pub(super) fn vm(&self) -> Result<Vms, String> {
        let mut vms = Vec::with_capacity(self.chunks.len());
        for code in &self.chunks {
            let mut vm = RegoVM::new_with_policy(self.policy.clone());
            vm.load_program(code.clone());
            vm.set_data(regorus::Value::new_object()).map_err(|e| e.to_string())?;
            vms.push(vm);
        }
        Ok(Vms { vms, chunk_of: self.chunk_of.clone() })
    }
}

/// One VM per chunk of a [`Program`], used as one.
pub(super) struct Vms {
    vms: Vec<RegoVM>,
    chunk_of: Arc<HashMap<String, usize>>,
}

impl Vms {
    /// Decides the rule at `path` on `input`.
    pub(super) fn execute(&mut self, path: &str, input: regorus::Value) -> Result<regorus::Value, String> {
        let vm = self
            .chunk_of
            .get(path)
            .and_then(|i| self.vms.get_mut(*i))
            .ok_or_else(|| format!("no rule {path} in the policy set"))?;
        vm.set_input(input);
        vm.execute_entry_point_by_name(path).map_err(|e| e.to_string())
    }
}

pub struct PolicyStore {
    /// Distinguishes stores in the per-thread engine cache (tests build their own).
    id: u64,
    generation: AtomicU64,
    /// None only if even the bundled set failed to compile (then everything is denied).
    current: Mutex<Option<Arc<Compiled>>>,
    directory: Mutex<Option<PathBuf>>,
    /// Why the last load failed; cleared by the next successful one.
    error: Mutex<Option<String>>,
    pub metrics: PolicyMetrics,
}

struct Local {
    store: u64,
    generation: u64,
    vm: Vms,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl PolicyStore {
    /// A store with the bundled defaults only.
    pub fn bundled() -> Self {
        static IDS: AtomicU64 = AtomicU64::new(1);
        // The bundled set is checked by the unit tests; failing here is a build defect, and
        // the store then denies everything and reports the error.
        let (program, error) = match compile(&bundled_sources()) {
            Ok(p) => (Some(p), None),
            Err(e) => {
                tracing::error!("the bundled policies do not compile: {e}");
                (None, Some(format!("bundled policies: {e}")))
            }
        };
        let files = BUNDLED.iter().map(|(n, _)| format!("bundled:{n}")).collect();
        PolicyStore {
            id: IDS.fetch_add(1, Ordering::Relaxed),
            generation: AtomicU64::new(1),
            current: Mutex::new(program.map(|program| Arc::new(Compiled { generation: 1, program, files }))),
            directory: Mutex::new(None),
            error: Mutex::new(error),
            metrics: PolicyMetrics::default(),
        }
    }

    /// Sets the operator override directory and loads it (see [`PolicyStore::reload`]).
    pub fn configure(&self, directory: Option<PathBuf>) -> Result<(), String> {
        *lock(&self.directory) = directory;
        self.reload()
    }

    /// Recompiles the bundled files plus the override directory. On failure the previous set
    /// stays in force and the error is reported by [`PolicyStore::status`].
    pub fn reload(&self) -> Result<(), String> {
        let directory = lock(&self.directory).clone();
        let outcome = sources(directory.as_deref()).and_then(|s| {
            let files = s.iter().map(|f| f.origin.clone()).collect::<Vec<_>>();
            let texts: Vec<(String, String)> = s.into_iter().map(|f| (f.name, f.text)).collect();
            compile(&texts).map(|program| (program, files))
        });
        match outcome {
            Ok((program, files)) => {
                let generation = self.generation.load(Ordering::Acquire) + 1;
                tracing::info!(files = ?files, "policy set loaded");
                *lock(&self.current) = Some(Arc::new(Compiled { generation, program, files }));
                self.generation.store(generation, Ordering::Release);
                *lock(&self.error) = None;
                self.metrics.reloads.get_or_create(&labels(&[("result", "ok")])).inc();
                Ok(())
            }
            Err(e) => {
                tracing::error!("policy load failed, keeping the previous policy set: {e}");
                *lock(&self.error) = Some(e.clone());
                self.metrics.reloads.get_or_create(&labels(&[("result", "error")])).inc();
                self.metrics.plugin_load_failures.get_or_create(&labels(&[("plugin", "policy_directory")])).inc();
                Err(e)
            }
        }
    }

    /// Moves on with every policy set loaded: a decision remembered under one generation
    /// holds only while it lasts.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Ok, or the message of the last failed load (the previous set is still in force).
    pub fn status(&self) -> Result<(), String> {
        match &*lock(&self.error) {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }

    /// Where the files of the policy set in force came from (`bundled:NAME` or a path).
    pub fn files(&self) -> Vec<String> {
        lock(&self.current).as_ref().map(|c| c.files.clone()).unwrap_or_default()
    }

    /// Decides `action` for an input document. Anything but `true` denies; unknown actions
    /// and evaluation errors deny and are logged.
    pub fn allowed(&self, action: &str, input: &regorus::Value) -> bool {
        let start = Instant::now();
        let decision = self.evaluate(action, input);
        self.metrics.evaluation.observe(start.elapsed().as_secs_f64());
        let result = match &decision {
            Ok(true) => "allow",
            Ok(false) => "deny",
            Err(_) => "error",
        };
        self.metrics.decisions.get_or_create(&labels(&[("action", action), ("result", result)])).inc();
        match decision {
            Ok(allowed) => allowed,
            Err(e) => {
                tracing::error!(action, "policy evaluation failed, denying: {e}");
                false
            }
        }
    }

    fn evaluate(&self, action: &str, input: &regorus::Value) -> Result<bool, String> {
        let path = rule_path(action).ok_or_else(|| format!("{action:?} is not a policy name"))?;
        let generation = self.generation.load(Ordering::Acquire);
        LOCAL.with(|cell| {
            let mut slot = cell.borrow_mut();
            let local = match slot.take() {
                Some(l) if l.store == self.id && l.generation == generation => l,
                _ => {
                    let current = lock(&self.current).clone().ok_or("no policy set is loaded")?;
                    Local { store: self.id, generation: current.generation, vm: current.program.vm()? }
                }
            };
            let local = slot.insert(local);
            match local.vm.execute(&path, input.clone()) {
                Ok(v) => Ok(v == regorus::Value::Bool(true)),
                Err(e) => Err(format!("no usable rule for {action}: {e}")),
            }
        })
    }
}

pub(super) fn bundled_sources() -> Vec<(String, String)> {
    BUNDLED.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
}

/// One policy file: its module name (the file name) and where it came from.
struct SourceFile {
    name: String,
    text: String,
    origin: String,
}

/// The bundled files with the directory's `.rego` files replacing same-named ones or added
/// (in name order).
fn sources(directory: Option<&Path>) -> Result<Vec<SourceFile>, String> {
    let mut out: Vec<SourceFile> = BUNDLED
        .iter()
        .map(|(n, t)| SourceFile { name: n.to_string(), text: t.to_string(), origin: format!("bundled:{n}") })
        .collect();
    let Some(dir) = directory else { return Ok(out) };
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading policy directory {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("reading policy directory {}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|x| x == "rego") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    for path in files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let file = SourceFile { name, text, origin: path.display().to_string() };
        match out.iter_mut().find(|f| f.name == file.name) {
            Some(slot) => *slot = file,
            None => out.push(file),
        }
    }
    Ok(out)
}

/// Parses a policy set and compiles it for the VM, with every rule outside `data.lib` as an
/// entry point. Then every known action is decided on probe inputs by both the interpreter and
/// the VM: a set that lacks a rule, whose rules fail at evaluation (conflicting values, type
/// errors), or on which the two evaluators disagree is refused as a whole.
pub(super) fn compile(sources: &[(String, String)]) -> Result<Program, String> {
    let mut engine = regorus::Engine::new();
    for (name, text) in sources {
        engine.add_policy(name.clone(), text.clone()).map_err(|e| format!("{name}: {}", e.to_string().trim()))?;
    }
    let any = rule_path(ACTIONS[0]).ok_or("bad built-in action name")?;
    let policy = engine.compile_with_entrypoint(&any.as_str().into()).map_err(|e| e.to_string())?;
    let entry_points: Vec<String> =
        policy.get_rules().keys().filter(|k| !k.starts_with("data.lib.")).cloned().collect();
    let mut chunks = Vec::new();
    let mut chunk_of = HashMap::new();
    for (i, chunk) in entry_points.chunks(ENTRIES_PER_CHUNK).enumerate() {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let code = Compiler::compile_from_policy(&policy, &refs).map_err(|e| format!("compiling for the VM: {e}"))?;
        chunks.push(code);
        chunk_of.extend(chunk.iter().map(|e| (e.clone(), i)));
    }
    let program = Program { policy, chunks, chunk_of: Arc::new(chunk_of) };
    let mut vm = program.vm()?;
    for probe in probes() {
        let probe = regorus::Value::from(probe);
        engine.set_input(probe.clone());
        for action in ACTIONS {
            let path = rule_path(action).ok_or_else(|| format!("{action} is not a policy name"))?;
            let interpreted =
                engine.eval_rule(path.clone()).map_err(|e| format!("{action}: {}", e.to_string().trim()))?;
            let executed = vm.execute(&path, probe.clone()).map_err(|e| format!("{action}: {e}"))?;
            if (interpreted == regorus::Value::Bool(true)) != (executed == regorus::Value::Bool(true)) {
                return Err(format!(
                    "{action}: the compiled policy decides {executed} where the interpreter decides {interpreted}"
                ));
            }
        }
    }
    Ok(program)
}

/// Inputs every action is decided on before a set is installed: nobody, a system admin, and
/// a domain manager and a project member whose scope matches every target field.
fn probes() -> Vec<serde_json::Value> {
    use serde_json::json;
    let creds = |roles: &[&str], system: bool, domain: Option<&str>, project: Option<&str>| {
        json!({"user_id": "u", "user_domain_id": "d", "roles": roles, "system_scope": system.then_some("all"),
            "domain_id": domain, "project_id": project, "project_domain_id": project.map(|_| "d"),
            "is_admin_project": false})
    };
    let target = json!({"domain_id": "d", "domain": {"id": "d"}, "project": {"id": "p", "domain_id": "d"},
        "user": {"id": "u", "domain_id": "d"}, "group": {"id": "g", "domain_id": "d"},
        "role": {"id": "r", "name": "member", "domain_id": null}, "credential": {"user_id": "u"},
        "token": {"user_id": "u"}});
    [
        creds(&[], false, None, None),
        creds(&["admin", "manager", "member", "reader"], true, None, None),
        creds(&["manager", "member", "reader"], false, Some("d"), None),
        creds(&["member", "reader"], false, None, Some("p")),
    ]
    .into_iter()
    .map(|c| json!({"action": "", "credentials": c, "target": target}))
    .chain([json!({"action": "", "credentials": creds(&["reader"], false, None, None), "target": {}})])
    .collect()
}
