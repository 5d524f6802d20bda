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
    /// Set from an `IDNODE_*` variable: an unknown one is a warning, not an error, since the
    /// environment is shared with whatever else runs in it (see [`Settings::refuse_unknown`]).
    from_env: bool,
}

/// `IDNODE_*` variables that are not configuration keys (read by the CLI or the logger).
const NOT_SETTINGS: &[&str] = &[
    "IDNODE_CONFIG",
    "IDNODE_LOG",
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

    fn set_from(&mut self, section: &str, key: &str, value: &str, origin: &str, from_env: bool) {
        let setting = Setting { value: value.to_string(), origin: origin.to_string(), from_env };
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
    /// middle part is one; otherwise it is a key of `[idnode]`. The variables Kubernetes
    /// injects for a Service named `idnode` are skipped (see [`is_service_link`]).
    pub fn apply_env(&mut self, vars: impl Iterator<Item = (String, String)>) {
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix("IDNODE_") else { continue };
            if NOT_SETTINGS.contains(&name.as_str()) || is_service_link(rest) {
                continue;
            }
            let rest = rest.to_lowercase();
            let section = SECTIONS
                .iter()
                .filter(|_| !IDNODE_KEYS_LIKE_SECTIONS.contains(&rest.as_str()))
                .find(|s| rest.starts_with(&format!("{s}_")));
            let (section, key) = match section {
                Some(s) => (s.to_string(), rest[s.len() + 1..].to_string()),
                None => ("idnode".to_string(), rest),
            };
            self.set_from(&section, &key, &value, &name, true);
        }
    }

    /// Refuses settings of the file or the flags that no part of the configuration read: each
    /// is named with where it came from and, when one is close, the key that was probably
    /// meant. Unread `IDNODE_*` variables are returned instead, named the same way, for the
    /// caller to log as warnings: like etcd with `ETCD_*`, the environment is shared (a pod's
    /// holds every Service's variables, a shell's an old export), so a stray variable must not
    /// keep a node down, while a file is idnode's own and a typo in it is an error.
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
        let unknown: Vec<String> = unread().filter(|(_, s)| !s.from_env).map(describe).collect();
        if !unknown.is_empty() {
            bail!("unknown configuration key{}: {}", if unknown.len() > 1 { "s" } else { "" }, unknown.join("; "))
        }
        Ok(unread()
            .filter(|(_, s)| s.from_env)
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

/// Whether `IDNODE_<rest>` is one of the variables Kubernetes puts into every pod of a
/// namespace with a Service named `idnode`: `IDNODE_PORT`, `IDNODE_SERVICE_HOST`,
/// `IDNODE_SERVICE_PORT`, `IDNODE_SERVICE_PORT_<PORT NAME>`, `IDNODE_PORT_<N>_<PROTO>` and
/// `IDNODE_PORT_<N>_<PROTO>_ADDR|_PORT|_PROTO` (PROTO: TCP, UDP or SCTP). No configuration key
/// has these names (no section is called `port` or `service`, no `[idnode]` key begins so),
/// so skipping them hides nothing; the test `no_key_looks_like_a_service_link` keeps it so.
fn is_service_link(rest: &str) -> bool {
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

/// Sections whose keys can be set as `IDNODE_<SECTION>_<KEY>`.
const SECTIONS: &[&str] = &[
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
