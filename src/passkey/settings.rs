//! `[passkey]`: the WebAuthn relying party. `rp_id` (the domain passkeys are bound to) and
//! `rp_origin` (the URL browsers show when they sign in) default to the public URL; a public
//! URL on a loopback address means `localhost` (browsers allow WebAuthn there without TLS, and
//! never on a bare IP address). Settings that cannot work stop the node at startup; defaults
//! that cannot work (a public URL on another IP address) turn passkeys off, with the reason.

use anyhow::bail;
use url::{Host, Url};

#[derive(Debug, Clone, PartialEq)]
pub struct PasskeySettings {
    /// The relying party's id and origin, or why passkeys are off.
    pub party: Result<(String, Url), String>,
    /// The name authenticators show (`rp_name`, default `idnode`).
    pub rp_name: String,
    /// Seconds a started ceremony may take (`ceremony_lifetime`, default 300).
    pub ceremony_lifetime_s: i64,
}

impl Default for PasskeySettings {
    fn default() -> Self {
        PasskeySettings { party: Err("not configured".into()), rp_name: "idnode".into(), ceremony_lifetime_s: 300 }
    }
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => ip.is_loopback() || ip.is_unspecified(),
        Host::Ipv6(ip) => ip.is_loopback() || ip.is_unspecified(),
        Host::Domain(_) => false,
    }
}

impl PasskeySettings {
    /// The `[passkey]` section, read through `get` (a key's value, if set).
    pub fn from_section<'a>(get: impl Fn(&str) -> Option<&'a str>, public_base: &str) -> anyhow::Result<Self> {
        let rp_id = get("rp_id").map(str::trim).filter(|v| !v.is_empty()).map(str::to_lowercase);
        let rp_origin = get("rp_origin").map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
        let rp_name = get("rp_name").map(str::trim).filter(|v| !v.is_empty()).unwrap_or("idnode").to_string();
        let lifetime = get("ceremony_lifetime").map(str::trim).unwrap_or("300");
        let ceremony_lifetime_s = match lifetime.parse::<i64>() {
            Ok(v) if (10..=3600).contains(&v) => v,
            _ => bail!("[passkey] ceremony_lifetime = {lifetime:?} is not a number of seconds from 10 to 3600"),
        };
        let explicit = rp_id.is_some() || rp_origin.is_some();
        let party = resolve(rp_id, rp_origin, public_base);
        let party = match party {
            Err(why) if explicit => bail!("[passkey] {why}"),
            other => other,
        };
        Ok(PasskeySettings { party, rp_name, ceremony_lifetime_s })
    }
}

fn resolve(rp_id: Option<String>, rp_origin: Option<String>, public_base: &str) -> Result<(String, Url), String> {
    let given = rp_origin.is_some();
    let text = rp_origin.unwrap_or_else(|| public_base.to_string());
    let mut origin = Url::parse(&text).map_err(|e| format!("rp_origin {text:?} is not a URL ({e})"))?;
    if !matches!(origin.scheme(), "https" | "http") || origin.host().is_none() {
        return Err(format!("rp_origin {text:?} must be an http(s) URL with a host"));
    }
    if !given && origin.host().as_ref().is_some_and(is_loopback) {
        origin.set_host(Some("localhost")).map_err(|e| e.to_string())?;
    }
    // An origin is scheme, host and port only.
    origin.set_path("");
    origin.set_query(None);
    origin.set_fragment(None);
    let host = match origin.host() {
        Some(Host::Domain(d)) => d.to_lowercase(),
        _ => {
            return Err(format!(
                "the origin {} names an IP address, and passkeys are bound to a DNS name: set [passkey] rp_id and \
                 rp_origin (or a public_url with a DNS name)",
                origin.origin().ascii_serialization()
            ))
        }
    };
    let rp_id = rp_id.unwrap_or_else(|| host.clone());
    if host != rp_id && !host.ends_with(&format!(".{rp_id}")) {
        return Err(format!("rp_id {rp_id:?} is neither the origin's host {host:?} nor a parent domain of it"));
    }
    let local = host == "localhost" || host.ends_with(".localhost");
    if origin.scheme() != "https" && !local {
        return Err(format!(
            "the origin {} is not https: browsers offer passkeys only to secure origins (https, or http on localhost)",
            origin.origin().ascii_serialization()
        ));
    }
    Ok((rp_id, origin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let mut s = Settings::default();
        for (k, v) in pairs {
            s.set("passkey", k, v);
        }
        s
    }

    fn party(pairs: &[(&str, &str)], base: &str) -> anyhow::Result<Result<(String, String), String>> {
        let s = settings(pairs);
        let p = PasskeySettings::from_section(|k| s.get("passkey", k), base)?;
        Ok(p.party.map(|(id, o)| (id, o.origin().ascii_serialization())))
    }

    #[test]
    fn defaults_follow_the_public_url_and_loopback_means_localhost() {
        let ok = |id: &str, o: &str| Ok::<_, String>((id.to_string(), o.to_string()));
        assert_eq!(party(&[], "http://127.0.0.1:5000").unwrap(), ok("localhost", "http://localhost:5000"));
        assert_eq!(party(&[], "https://id.example.com").unwrap(), ok("id.example.com", "https://id.example.com"));
        assert_eq!(
            party(&[("rp_id", "example.com")], "https://id.example.com/v3").unwrap(),
            ok("example.com", "https://id.example.com")
        );
        // Defaults that cannot work turn passkeys off, saying why.
        let off = party(&[], "http://10.0.0.5:5000").unwrap().unwrap_err();
        assert!(off.contains("IP address"), "{off}");
        let plain = party(&[], "http://id.example.com").unwrap().unwrap_err();
        assert!(plain.contains("not https"), "{plain}");
    }

    #[test]
    fn inconsistent_settings_stop_the_node() {
        for (pairs, why) in [
            (vec![("rp_id", "other.com")], "neither"),
            (vec![("rp_origin", "https://id.example.com"), ("rp_id", "ample.com")], "neither"),
            (vec![("rp_origin", "not a url")], "not a URL"),
            (vec![("rp_origin", "http://id.example.com")], "not https"),
            (vec![("rp_origin", "https://10.1.2.3")], "IP address"),
            (vec![("ceremony_lifetime", "0")], "ceremony_lifetime"),
        ] {
            let err = party(&pairs, "https://id.example.com").unwrap_err().to_string();
            assert!(err.contains(why), "{pairs:?}: {err}");
        }
    }
}
