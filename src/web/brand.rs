//! A domain's branding on its pages: a display name, a logo and an accent colour, kept as
//! domain options (`branding_name`, `branding_logo_url`, `branding_color`). The domain API
//! checks them on write ([`check`]); the pages read them again leniently, so a value that
//! slipped past (an imported domain) is left out rather than breaking the page or its CSP.

use serde::Serialize;
use serde_json::{Map, Value};

/// The option names, as the domain API takes them.
pub const NAME: &str = "branding_name";
pub const LOGO_URL: &str = "branding_logo_url";
pub const COLOR: &str = "branding_color";

const MAX_NAME: usize = 64;
const MAX_URL: usize = 2048;

/// What a page shows of its domain's branding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Brand {
    pub name: Option<String>,
    pub logo_url: Option<String>,
    pub color: Option<String>,
}

impl Brand {
    /// The branding in a domain's options (JSON object text); invalid values are left out.
    pub fn from_options(options: &str) -> Brand {
        let map: Map<String, Value> = serde_json::from_str(options).unwrap_or_default();
        let text = |k: &str| map.get(k).and_then(Value::as_str);
        Brand {
            name: text(NAME).filter(|n| name_ok(n)).map(str::to_string),
            logo_url: text(LOGO_URL).and_then(logo_url),
            color: text(COLOR).filter(|c| color_ok(c)).map(str::to_ascii_lowercase),
        }
    }

    /// The CSS the page's inline style ends with (the accent colour), already safe.
    pub fn css(&self) -> String {
        self.color.as_ref().map(|c| format!(":root{{--brand:{c}}}")).unwrap_or_default()
    }
}

fn name_ok(n: &str) -> bool {
    !n.trim().is_empty() && n.chars().count() <= MAX_NAME && !n.chars().any(char::is_control)
}

/// `#rgb` or `#rrggbb`: nothing else reaches the style sheet.
fn color_ok(c: &str) -> bool {
    let hex = c.strip_prefix('#').unwrap_or("");
    matches!(hex.len(), 3 | 6) && hex.chars().all(|ch| ch.is_ascii_hexdigit())
}

/// An https URL (http only for loopback, as in tests) that can stand as a CSP source by
/// itself: normalized, and without the characters that would end a CSP source or directive.
fn logo_url(raw: &str) -> Option<String> {
    if raw.len() > MAX_URL {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    let s = url.to_string();
    let csp_safe = !s.chars().any(|c| matches!(c, ';' | ',' | '\'' | '"' | ' ') || c.is_control());
    (scheme_ok && csp_safe && url.username().is_empty() && url.password().is_none() && url.fragment().is_none())
        .then_some(s)
}

/// The branding options of a domain create or update (the request's options, a JSON object's
/// text): `Err` names the first that is not valid.
pub fn check(options: &str) -> Result<(), String> {
    let map: Map<String, Value> = serde_json::from_str(options).unwrap_or_default();
    let bad = |k: &str, why: &str| Err(format!("Invalid input for field 'options/{k}': {why}."));
    for (k, v) in &map {
        let text = v.as_str();
        match k.as_str() {
            NAME if !v.is_null() && !text.is_some_and(name_ok) => {
                return bad(k, &format!("must be a non-empty string of at most {MAX_NAME} characters"))
            }
            LOGO_URL if !v.is_null() && text.and_then(logo_url).is_none() => {
                return bad(k, "must be an https URL without ';', ',', quotes or a fragment")
            }
            COLOR if !v.is_null() && !text.is_some_and(color_ok) => {
                return bad(k, "must be a colour as #rgb or #rrggbb")
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_branding_is_read_and_invalid_values_are_left_out() {
        let b = Brand::from_options(
            r##"{"branding_name": "Acme Cloud", "branding_logo_url": "https://cdn.acme.example/logo.png", "branding_color": "#0A66C2"}"##,
        );
        assert_eq!(b.name.as_deref(), Some("Acme Cloud"));
        assert_eq!(b.logo_url.as_deref(), Some("https://cdn.acme.example/logo.png"));
        assert_eq!(b.css(), ":root{--brand:#0a66c2}");
        let bad = Brand::from_options(
            r#"{"branding_name": "", "branding_logo_url": "javascript:alert(1)", "branding_color": "red;}body{display:none"}"#,
        );
        assert_eq!(bad, Brand::default());
        assert_eq!(bad.css(), "");
        assert_eq!(Brand::from_options("not json"), Brand::default());
        assert_eq!(Brand::from_options(r#"{"branding_logo_url": "https://x.example/a;b"}"#).logo_url, None);
        assert_eq!(Brand::from_options(r#"{"branding_logo_url": "http://evil.example/l.png"}"#).logo_url, None);
    }

    #[test]
    fn the_domain_api_refuses_invalid_branding_and_names_it() {
        assert!(check(r##"{"branding_color": "#fff", "immutable": true, "branding_name": null}"##).is_ok());
        let e = check(r#"{"branding_color": "blue"}"#).unwrap_err();
        assert!(e.contains("options/branding_color"), "{e}");
        assert!(check(r#"{"branding_logo_url": "ftp://x.example/l.png"}"#).unwrap_err().contains("branding_logo_url"));
        assert!(check(r#"{"branding_name": 7}"#).is_err());
    }
}
