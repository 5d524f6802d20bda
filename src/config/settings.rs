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
    /// `IDNODE_…` for a variable, `the file` or `a flag` otherwise (for error messages).
    origin: String,
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
                s.set_from(&section, k, v, &origin);
            }
        }
        Ok(s)
    }

    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        self.set_from(section, key, value, "a flag");
    }

    fn set_from(&mut self, section: &str, key: &str, value: &str, origin: &str) {
        let setting = Setting { value: value.to_string(), origin: origin.to_string() };
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
    /// middle part is one; otherwise it is a key of `[idnode]`.
    pub fn apply_env(&mut self, vars: impl Iterator<Item = (String, String)>) {
        for (name, value) in vars {
            let Some(rest) = name.strip_prefix("IDNODE_") else { continue };
            if NOT_SETTINGS.contains(&name.as_str()) {
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
            self.set_from(&section, &key, &value, &name);
        }
    }

    /// Refuses settings that no part of the configuration read: each is named with where it
    /// came from and, when one is close, the key that was probably meant.
    pub fn refuse_unknown(&self) -> anyhow::Result<()> {
        let read = self.read.borrow();
        let unknown: Vec<String> = self
            .values
            .iter()
            .filter(|(k, _)| !read.contains(*k))
            .map(|((section, key), s)| {
                let near = read
                    .iter()
                    .filter(|(sec, _)| sec == section)
                    .map(|(_, known)| (strsim::levenshtein(known, key), known))
                    .filter(|(d, _)| *d <= 3)
                    .min();
                let hint = near.map(|(_, k)| format!(", did you mean {k}?")).unwrap_or_default();
                format!("[{section}] {key} (from {}{hint})", s.origin)
            })
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        bail!("unknown configuration key{}: {}", if unknown.len() > 1 { "s" } else { "" }, unknown.join("; "))
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
