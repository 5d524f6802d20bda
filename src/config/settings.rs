//! Raw settings as the file, the environment and the flags give them, before any part of the
//! configuration reads them. A leaf: `Config` and the features that parse their own section
//! (security compliance, passkeys) read through it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{anyhow, bail, Context};

/// Raw settings by (section, key), lower-case, each with where it came from. Every key the
/// configuration reads is noted, so keys nobody read (typos, keys of another version) can be
/// named at startup instead of silently falling back to a default.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    values: BTreeMap<(String, String), Setting>,
    read: RefCell<BTreeSet<(String, String)>>,
}

#[derive(Debug, Clone)]
struct Setting {
    value: String,
    /// `IDNODE_…` for a variable, the file's path or `a flag` otherwise (for error messages).
    origin: String,
    /// Set from an `IDNODE_<KEY>` variable that names no section: an unknown one is a warning,
    /// not an error, since the environment is shared with whatever else runs in it (see
    /// [`Settings::refuse_unknown`]). A variable that names a section is as strict as a file.
    lenient: bool,
}

/// `IDNODE_*` variables that are not configuration keys (read by the CLI, the logger or the
/// fault-injection clock).
const NOT_SETTINGS: &[&str] = &[
    "IDNODE_CONFIG",
    "IDNODE_LOG",
    "IDNODE_FAULT_CLOCK_SKEW_FILE",
    "IDNODE_PEER_ENDPOINT",
    "IDNODE_ENDPOINT",
    "IDNODE_CACERT",
    "IDNODE_CLIENT_CERT",
    "IDNODE_CLIENT_KEY",
];

/// Keys of `[idnode]` whose variables begin like a section's (`IDNODE_CLUSTER_SECRET` is
/// `[idnode] cluster_secret`, not `[cluster] secret`).
const IDNODE_KEYS_LIKE_SECTIONS: &[&str] = &["cluster_secret", "cluster_secret_file"];

impl Settings {
    pub fn from_ini_file(path: &Path) -> anyhow::Result<Self> {
        let ini =
            ini::Ini::load_from_file(path).with_context(|| format!("reading configuration {}", path.display()))?;
        let mut s = Settings::default();
        let origin = path.display().to_string();
        for (section, props) in ini.iter() {
            let section = section.unwrap_or("DEFAULT").to_lowercase();
            for (k, v) in props.iter() {
                s.set_from(&section, k, v, &origin, false);
            }
        }
        Ok(s)
    }

    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        self.set_from(section, key, value, "a flag", false);
    }

    fn set_from(&mut self, section: &str, key: &str, value: &str, origin: &str, lenient: bool) {
        let setting = Setting { value: value.to_string(), origin: origin.to_string(), lenient };
        self.values.insert((section.to_lowercase(), key.to_lowercase()), setting);
    }

    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        let k = (section.to_string(), key.to_string());
        let v = self.values.get(&k).map(|s| s.value.as_str());
        self.read.borrow_mut().insert(k);
        v
    }

    /// Whether any key of `section` is set.
    pub fn has_section(&self, section: &str) -> bool {
        self.values.keys().any(|(s, _)| s == section)
    }

    /// Applies `IDNODE_*` variables. A variable names a key of a known section when its
    /// middle part begins with one, the longest that fits (`IDNODE_API_KEYS_…` is `[api_keys]`,
    /// not `[api]`); otherwise it is a key of `[idnode]`, lenient when unknown. The variables
    /// Kubernetes injects for a Service are skipped (see [`is_service_link`]).
    pub fn apply_env(&mut self, vars: impl Iterator<Item = (String, String)>) {
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix("IDNODE_") else { continue };
            if NOT_SETTINGS.contains(&name.as_str()) || is_service_link(rest) {
                continue;
            }
            let rest = rest.to_lowercase();
            let (section, key) = route(&rest);
            let names_no_section = key == rest;
            self.set_from(&section, &key, &value, &name, names_no_section);
        }
    }

    /// Refuses settings that no part of the configuration read: each is named with where it
    /// came from and, when one is close, the key that was probably meant. A key of the file,
    /// of a flag or of a variable that names its section (`IDNODE_POLICY_ADMN_SCOPE`) is an
    /// error: it can only be a typo or a key of another version. Unread `IDNODE_<KEY>`
    /// variables that name no section are returned instead, named the same way, for the caller
    /// to log as warnings: like etcd with `ETCD_*`, the environment is shared (a pod's holds
    /// every Service's variables, a shell's an old export, a test harness its own
    /// `IDNODE_JEPSEN_*`), so such a stray variable must not keep a node down.
    pub fn refuse_unknown(&self) -> anyhow::Result<Vec<String>> {
        let read = self.read.borrow();
        let describe = |((section, key), s): (&(String, String), &Setting)| {
            let near = read
                .iter()
                .filter(|(sec, _)| sec == section)
                .map(|(_, known)| (strsim::levenshtein(known, key), known))
                .filter(|(d, _)| *d <= 3)
                .min();
            let hint = near.map(|(_, k)| format!(", did you mean {k}?")).unwrap_or_default();
            format!("[{section}] {key} (from {}{hint})", s.origin)
        };
        let unread = || self.values.iter().filter(|(k, _)| !read.contains(*k));
        let unknown: Vec<String> = unread().filter(|(_, s)| !s.lenient).map(describe).collect();
        if !unknown.is_empty() {
            bail!("unknown configuration key{}: {}", if unknown.len() > 1 { "s" } else { "" }, unknown.join("; "))
        }
        Ok(unread()
            .filter(|(_, s)| s.lenient)
            .map(|k| format!("unknown configuration variable ignored: {}", describe(k)))
            .collect())
    }

    pub(crate) fn parse<T: std::str::FromStr>(&self, section: &str, key: &str, default: T) -> anyhow::Result<T> {
        match self.get(section, key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| anyhow!("[{section}] {key} = {v:?} is not valid")),
        }
    }

    pub(crate) fn flag(&self, section: &str, key: &str, default: bool) -> anyhow::Result<bool> {
        match self.get(section, key).map(|v| v.trim().to_lowercase()) {
            None => Ok(default),
            Some(v) if ["1", "true", "yes", "on"].contains(&v.as_str()) => Ok(true),
            Some(v) if ["0", "false", "no", "off"].contains(&v.as_str()) => Ok(false),
            Some(v) => bail!("[{section}] {key} = {v:?} is not a boolean"),
        }
    }
}

/// The (section, key) an `IDNODE_<rest>` variable names, `rest` lower-cased: the longest
/// section its name begins with (so `api_keys_…` is `[api_keys]`, not `[api]` `keys_…`), else
/// `[idnode]`. Keys of `[idnode]` that begin like a section stay `[idnode]`'s; the test
/// `every_key_has_one_variable` keeps every key reachable by exactly its own name.
fn route(rest: &str) -> (String, String) {
    let section = SECTIONS
        .iter()
        .filter(|_| !IDNODE_KEYS_LIKE_SECTIONS.contains(&rest))
        .filter(|s| rest.len() > s.len() + 1 && rest.starts_with(*s) && rest.as_bytes()[s.len()] == b'_')
        .max_by_key(|s| s.len());
    match section {
        Some(s) => (s.to_string(), rest[s.len() + 1..].to_string()),
        None => ("idnode".to_string(), rest.to_string()),
    }
}

/// Whether `IDNODE_<rest>` is one of the variables Kubernetes puts into every pod of a
/// namespace with a Service named `idnode` or `idnode-<more>` (`<more>` upper-cased with `_`
/// for `-`, so `idnode-api` gives `IDNODE_API_SERVICE_HOST`): `…PORT`, `…SERVICE_HOST`,
/// `…SERVICE_PORT`, `…SERVICE_PORT_<PORT NAME>`, `…PORT_<N>_<PROTO>` and
/// `…PORT_<N>_<PROTO>_ADDR|_PORT|_PROTO` (PROTO: TCP, UDP or SCTP). No configuration key ends
/// so (the test `no_key_looks_like_a_service_link` keeps it so), so skipping them hides
/// nothing, and a Service whose name begins like a section cannot stop a node.
fn is_service_link(rest: &str) -> bool {
    std::iter::once(rest).chain(rest.match_indices('_').map(|(at, _)| &rest[at + 1..])).any(is_link_of_idnode)
}

/// [`is_service_link`] for the Service `idnode` itself (`rest` after its prefix).
fn is_link_of_idnode(rest: &str) -> bool {
    if matches!(rest, "PORT" | "SERVICE_HOST" | "SERVICE_PORT") {
        return true;
    }
    if let Some(port_name) = rest.strip_prefix("SERVICE_PORT_") {
        return !port_name.is_empty();
    }
    let Some(tail) = rest.strip_prefix("PORT_") else { return false };
    let Some((number, tail)) = tail.split_once('_') else { return false };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let (proto, field) = tail.split_once('_').unwrap_or((tail, ""));
    matches!(proto, "TCP" | "UDP" | "SCTP") && matches!(field, "" | "ADDR" | "PORT" | "PROTO")
}

/// Sections whose keys can be set as `IDNODE_<SECTION>_<KEY>` (`[idnode]`'s also as
/// `IDNODE_<KEY>`).
const SECTIONS: &[&str] = &[
    "idnode",
    "token",
    "identity",
    "api",
    "resource",
    "raft",
    "policy",
    "auth",
    "security_compliance",
    "oauth1",
    "oauth2",
    "audit",
    "keystone",
    "scim_resource",
    "api_keys",
    "keys",
    "otlp",
    "cluster",
    "passkey",
    "federation",
    "assignment",
    "openfga",
    "unified_limit",
    "totp",
    "receipt",
    "log",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env(vars: &[(&str, &str)]) -> Settings {
        let mut s = Settings::default();
        s.apply_env(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        s
    }

    /// What Kubernetes puts into a pod for a Service `idnode` with ports `api` (5000) and
    /// `ops` (8099), one of them UDP and an SCTP one, as the kubelet spells them.
    const SERVICE_LINKS: &[(&str, &str)] = &[
        ("IDNODE_SERVICE_HOST", "10.96.0.12"),
        ("IDNODE_SERVICE_PORT", "5000"),
        ("IDNODE_SERVICE_PORT_API", "5000"),
        ("IDNODE_SERVICE_PORT_OPS_METRICS", "8099"),
        ("IDNODE_PORT", "tcp://10.96.0.12:5000"),
        ("IDNODE_PORT_5000_TCP", "tcp://10.96.0.12:5000"),
        ("IDNODE_PORT_5000_TCP_PROTO", "tcp"),
        ("IDNODE_PORT_5000_TCP_PORT", "5000"),
        ("IDNODE_PORT_5000_TCP_ADDR", "10.96.0.12"),
        ("IDNODE_PORT_8099_UDP", "udp://10.96.0.12:8099"),
        ("IDNODE_PORT_8099_UDP_ADDR", "10.96.0.12"),
        ("IDNODE_PORT_9_SCTP_PROTO", "sctp"),
    ];

    #[test]
    fn an_unknown_file_key_still_stops_startup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idnode.conf");
        std::fs::write(&p, "[idnode]\nport = 5000\n").unwrap();
        let mut s = Settings::from_ini_file(&p).unwrap();
        s.apply_env([("IDNODE_NOSUCH".to_string(), "1".to_string())].into_iter());
        let err = Config::from_settings(&s).unwrap_err().to_string();
        assert!(err.contains(&format!("[idnode] port (from {})", p.display())), "{err}");
        assert!(!err.contains("IDNODE_NOSUCH"), "a variable is not an error: {err}");
    }

    #[test]
    fn an_unknown_variable_is_a_warning_naming_it() {
        let s = env(&[("IDNODE_DATADIR", "/x"), ("IDNODE_TOKEN_EXPIRATION", "60"), ("IDNODE_LOG", "debug")]);
        let cfg = Config::from_settings(&s).expect("an unknown variable must not stop startup");
        assert_eq!(cfg.token_expiration_s, 60);
        let warnings = s.refuse_unknown().unwrap();
        assert_eq!(
            warnings,
            ["unknown configuration variable ignored: [idnode] datadir (from IDNODE_DATADIR, did you mean data_dir?)"]
        );
    }

    #[test]
    fn kubernetes_service_links_are_neither_error_nor_warning() {
        let mut vars = SERVICE_LINKS.to_vec();
        vars.push(("IDNODE_LISTEN", "0.0.0.0:5000"));
        let s = env(&vars);
        assert_eq!(s.values.len(), 1, "only IDNODE_LISTEN is a setting: {:?}", s.values.keys());
        Config::from_settings(&s).unwrap();
        assert_eq!(s.refuse_unknown().unwrap(), Vec::<String>::new());
        // Near misses are not links: they are reported like any unknown variable.
        for near in ["IDNODE_PORTS", "IDNODE_PORT_X_TCP", "IDNODE_PORT_5000_HTTP", "IDNODE_PORT_5000_TCP_HOST"] {
            let s = env(&[(near, "1")]);
            Config::from_settings(&s).unwrap();
            let warnings = s.refuse_unknown().unwrap();
            assert!(warnings.len() == 1 && warnings[0].contains(near), "{near}: {warnings:?}");
        }
    }

    #[test]
    fn no_key_looks_like_a_service_link() {
        let s = Settings::default();
        Config::from_settings(&s).unwrap();
        let read = s.read.borrow();
        assert!(read.len() > 50, "the defaults read every key: {}", read.len());
        for (section, key) in read.iter() {
            let var = if section == "idnode" { key.to_uppercase() } else { format!("{section}_{key}").to_uppercase() };
            assert!(!is_service_link(&var), "IDNODE_{var} would be skipped as a Kubernetes service link");
            assert!(!var.starts_with("PORT") && !var.starts_with("SERVICE_"), "IDNODE_{var} is too close to one");
        }
        for section in SECTIONS {
            assert!(!section.starts_with("port") && !section.starts_with("service"), "[{section}]");
        }
    }

    /// Every key the configuration reads, the `[openfga]` section's included (read only under
    /// `driver = openfga`).
    fn known_keys() -> BTreeSet<(String, String)> {
        let defaults = Settings::default();
        Config::from_settings(&defaults).unwrap();
        let mut fga = Settings::default();
        fga.set("assignment", "driver", "openfga");
        for (key, value) in [("api_url", "http://127.0.0.1:1"), ("store_id", "s"), ("role_to_relation", "a:b")] {
            fga.set("openfga", key, value);
        }
        Config::from_settings(&fga).unwrap();
        let mut known = defaults.read.borrow().clone();
        known.extend(fga.read.borrow().iter().cloned());
        known
    }

    #[test]
    fn api_keys_variables_reach_their_section() {
        let s = env(&[("IDNODE_API_KEYS_TOMBSTONE_RETENTION_DAYS", "7"), ("IDNODE_API_KEYSTONE_COMPAT_STATUS", "1")]);
        let cfg = Config::from_settings(&s).expect("both are keys");
        assert_eq!(cfg.scim.api_key_tombstone_retention_days, 7, "[api_keys], not [api] keys_…");
        assert!(cfg.keystone_compat_status, "[api] keystone_compat_status still");
        assert_eq!(s.refuse_unknown().unwrap(), Vec::<String>::new());
    }

    /// Every key is reached by its own variable, and by no other: the longest section wins,
    /// and no `[idnode]` key is taken for a section's.
    #[test]
    fn every_key_has_one_variable() {
        let known = known_keys();
        assert!(known.contains(&("openfga".into(), "max_concurrency".into())), "{known:?}");
        for (section, key) in &known {
            let mut names = vec![format!("IDNODE_{section}_{key}")];
            if section == "idnode" {
                names.push(format!("IDNODE_{key}"));
            }
            for name in names {
                let s = env(&[(&name.to_uppercase(), "1")]);
                let got: Vec<_> = s.values.keys().collect();
                assert_eq!(got, [&(section.clone(), key.clone())], "{}", name.to_uppercase());
            }
        }
    }

    #[test]
    fn a_misspelled_variable_of_a_known_section_stops_startup() {
        for (name, want) in [
            (
                "IDNODE_POLICY_ADMN_SCOPE",
                "[policy] admn_scope (from IDNODE_POLICY_ADMN_SCOPE, did you mean admin_scope?)",
            ),
            (
                "IDNODE_API_KEYS_TOMBSTONE_RETENTION_DAY",
                "[api_keys] tombstone_retention_day (from IDNODE_API_KEYS_TOMBSTONE_RETENTION_DAY, did you mean \
                 tombstone_retention_days?)",
            ),
            ("IDNODE_IDNODE_DATADIR", "[idnode] datadir (from IDNODE_IDNODE_DATADIR, did you mean data_dir?)"),
            ("IDNODE_SCIM_RESOURCE_JANITOR", "[scim_resource] janitor (from IDNODE_SCIM_RESOURCE_JANITOR)"),
        ] {
            let s = env(&[(name, "1"), ("IDNODE_TOKEN_EXPIRATION", "60")]);
            let err = Config::from_settings(&s).expect_err(name).to_string();
            assert_eq!(err, format!("unknown configuration key: {want}"));
        }
    }

    /// What test harnesses, benchmarks and CI export for their own use (a node they start
    /// inherits it) names no section: a warning, never a node that refuses to start. The same
    /// for the variables of a Service whose name begins `idnode-` and then like a section.
    #[test]
    fn variables_of_no_section_and_service_links_pass() {
        let vars = [
            ("IDNODE_JEPSEN_CYCLES", "100"),
            ("IDNODE_BOTO_PYTHON", "/opt/anchors/boto-venv/bin/python"),
            ("IDNODE_FAULT_SEED", "7"),
            ("IDNODE_TEST_LOG", "debug"),
            ("IDNODE_BENCH_NODE_ENV", "IDNODE_RAFT_HEARTBEAT_MS=50"),
            ("IDNODE_FAULT_CLOCK_SKEW_FILE", "/tmp/skew"),
            ("IDNODE_API_SERVICE_HOST", "10.96.0.13"),
            ("IDNODE_API_KEYS_PORT", "tcp://10.96.0.14:5000"),
            ("IDNODE_TOKEN_PORT_5000_TCP_ADDR", "10.96.0.15"),
            ("IDNODE_POLICY_SERVICE_PORT_HTTPS", "443"),
        ];
        let s = env(&vars);
        Config::from_settings(&s).expect("none of these may stop a node");
        let warnings = s.refuse_unknown().unwrap();
        assert_eq!(warnings.len(), 5, "{warnings:?}");
        for name in
            ["IDNODE_JEPSEN_CYCLES", "IDNODE_BOTO_PYTHON", "IDNODE_FAULT_SEED", "IDNODE_TEST_LOG", "IDNODE_BENCH"]
        {
            assert!(warnings.iter().any(|w| w.contains(name)), "{name}: {warnings:?}");
        }
    }

    /// Every `IDNODE_*` variable the repository names outside the node's own source (the
    /// README and docs, the examples, the image, scripts, CI, benchmarks, the test harnesses
    /// that start nodes with their environment) is one a node accepts: a key it reads, one
    /// of the variables that are not keys, a service link, or one that names no section (a
    /// warning). A documented variable that does nothing, or a harness variable that would
    /// stop the nodes it starts, fails here.
    #[test]
    fn every_variable_the_repository_names_is_accepted() {
        /// The README's and operations.md's example of a variable that stops a node.
        const TYPO_IN_THE_DOCS: &str = "IDNODE_POLICY_ADMN_SCOPE";
        let known = known_keys();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut names = BTreeMap::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                if path.is_dir() {
                    // The node's own source is left out: its tests misspell variables on purpose.
                    if !(matches!(name.as_str(), ".git" | "target") || dir == root && name == "src") {
                        dirs.push(path);
                    }
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else { continue };
                for (at, _) in text.match_indices("IDNODE_") {
                    let var: String = text[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                        .collect();
                    if !var.ends_with('_') {
                        names.entry(var).or_insert_with(|| path.clone());
                    }
                }
            }
        }
        assert!(names.contains_key("IDNODE_API_KEYS_TOMBSTONE_RETENTION_DAYS"), "README: {names:?}");
        assert!(names.contains_key("IDNODE_JEPSEN_CYCLES"), "the harnesses: {names:?}");
        for (name, file) in &names {
            let s = env(&[(name, "1")]);
            if name == TYPO_IN_THE_DOCS {
                assert!(Config::from_settings(&s).is_err(), "the docs' example of a typo stops a node");
                continue;
            }
            let rest = name["IDNODE_".len()..].to_lowercase();
            for key in s.values.keys().filter(|(section, key)| !(section == "idnode" && *key == rest)) {
                assert!(known.contains(key), "{name} ({}) sets {key:?}, which idnode does not read", file.display());
            }
        }
    }

    /// Every `IDNODE_*` name in the Kubernetes example (its env entries, the variables its
    /// script exports) is a key idnode reads, one of the variables that are not keys, or a
    /// service link: the example never starts a node that warns about its own configuration.
    #[test]
    fn the_kubernetes_example_sets_only_known_variables() {
        let defaults = Settings::default();
        Config::from_settings(&defaults).unwrap();
        let read = defaults.read.borrow();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster-examples/kubernetes");
        let mut names = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for (at, _) in text.match_indices("IDNODE_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
        for want in ["IDNODE_INITIAL_CLUSTER", "IDNODE_NODE_ID", "IDNODE_KEK_FILE", "IDNODE_CLUSTER_SECRET"] {
            assert!(names.contains(want), "{want} not found in {}: {names:?}", dir.display());
        }
        for name in &names {
            let s = env(&[(name, "1")]);
            let rest = &name["IDNODE_".len()..];
            if NOT_SETTINGS.contains(&name.as_str()) || is_service_link(rest) {
                assert!(s.values.is_empty(), "{name}");
                continue;
            }
            for key in s.values.keys() {
                assert!(read.contains(key), "{name} sets {key:?}, which idnode does not read");
            }
        }
    }
}
