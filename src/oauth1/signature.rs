//! OAuth 1.0a request signatures (RFC 5849) as Keystone checks them with oauthlib: the
//! `Authorization: OAuth ...` parameters, oauthlib's format checks, and HMAC-SHA1 over the
//! signature base string. Pure functions; the handlers supply secrets and the request URL.

use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha1::Sha1;

use crate::http::error::ApiError;

/// RFC 3986 unreserved characters stay as they are; everything else is `%XX` (RFC 5849 3.6).
const OAUTH_ENCODE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// How far a signed timestamp may be from now (oauthlib's `timestamp_lifetime`).
const TIMESTAMP_LIFETIME_S: i64 = 600;

/// Characters of a verifier: letters and digits without the easily confused `jiIl1oO0`
/// (Keystone's `VERIFIER_CHARS`).
pub const VERIFIER_CHARS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghkmnpqrstuvwxyz23456789";

pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, OAUTH_ENCODE).to_string()
}

/// The decoded parameters of an `Authorization: OAuth k="v", ...` header, `realm` left out.
/// A missing or malformed header has none (the handlers then ask for what they need).
#[derive(Debug, Default, Clone)]
pub struct OAuthParams(pub Vec<(String, String)>);

impl OAuthParams {
    pub fn parse(header: Option<&str>) -> OAuthParams {
        let Some(rest) = header.and_then(|h| h.get(..6).filter(|p| p.eq_ignore_ascii_case("oauth ")).map(|_| &h[6..]))
        else {
            return OAuthParams::default();
        };
        let mut out = Vec::new();
        for item in split_outside_quotes(rest) {
            let Some((k, v)) = item.trim().split_once('=') else { continue };
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            let (Ok(k), Ok(v)) = (percent_decode_str(k.trim()).decode_utf8(), percent_decode_str(v).decode_utf8())
            else {
                continue;
            };
            if k != "realm" {
                out.push((k.into_owned(), v.into_owned()));
            }
        }
        OAuthParams(out)
    }

    /// The value of `key`, if present and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }
}

/// `a="x, y", b=c` -> [`a="x, y"`, ` b=c`] (urllib's `parse_http_list`, without escapes).
fn split_outside_quotes(s: &str) -> Vec<&str> {
    let (mut parts, mut start, mut quoted) = (Vec::new(), 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Keystone's 400 for a request oauthlib refuses before checking the signature.
pub fn invalid(error: &str, description: &str) -> ApiError {
    ApiError::bad_request(format!("Validation failed with errors: {error}, detail message is: {description}."))
}

fn is_hex32(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// oauthlib's checks of the mandatory parameters, the version, the timestamp (`now_s`: Unix
/// seconds) and the formats of the consumer key and nonce.
pub fn check_mandatory(p: &OAuthParams, now_s: i64) -> Result<(), ApiError> {
    let required =
        ["oauth_signature", "oauth_consumer_key", "oauth_nonce", "oauth_timestamp", "oauth_signature_method"];
    if required.iter().any(|k| p.get(k).is_none()) {
        return Err(invalid("invalid_request", "Missing mandatory OAuth parameters."));
    }
    let method = p.get("oauth_signature_method").unwrap_or_default();
    if method != "HMAC-SHA1" {
        return Err(invalid("invalid_signature_method", &format!("Invalid signature, {method} not in ['HMAC-SHA1'].")));
    }
    if p.0.iter().any(|(k, v)| k == "oauth_version" && v != "1.0") {
        return Err(invalid("invalid_request", "Invalid OAuth version."));
    }
    let ts = p.get("oauth_timestamp").unwrap_or_default();
    if ts.len() != 10 {
        return Err(invalid("invalid_request", "Invalid timestamp size"));
    }
    let ts: i64 = ts.parse().map_err(|_| invalid("invalid_request", "Timestamp must be an integer."))?;
    if (now_s - ts).abs() > TIMESTAMP_LIFETIME_S {
        return Err(invalid(
            "invalid_request",
            &format!("Timestamp given is invalid, differ from allowed by over {TIMESTAMP_LIFETIME_S} seconds."),
        ));
    }
    if !p.get("oauth_consumer_key").is_some_and(is_hex32) {
        return Err(invalid("invalid_request", "Invalid client key format."));
    }
    if !p.get("oauth_nonce").unwrap_or_default().bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(invalid("invalid_request", "Invalid nonce format."));
    }
    Ok(())
}

/// The access-token exchange's extra checks: the request token and verifier formats.
pub fn check_exchange(p: &OAuthParams) -> Result<(), ApiError> {
    match p.get("oauth_token") {
        None => return Err(invalid("invalid_request", "Missing resource owner.")),
        Some(t) if !is_hex32(t) => return Err(invalid("invalid_request", "Invalid resource owner key format.")),
        _ => {}
    }
    match p.get("oauth_verifier") {
        None => Err(invalid("invalid_request", "Missing verifier.")),
        Some(v) if v.len() != 8 || !v.bytes().all(|b| VERIFIER_CHARS.contains(&b)) => {
            Err(invalid("invalid_request", "Invalid verifier format."))
        }
        _ => Ok(()),
    }
}

/// The base string URI (RFC 5849 3.4.1.2) of a request to `path` at `scheme://host`: scheme
/// and host lower-cased, the scheme's default port dropped.
pub fn base_uri(scheme: &str, host: &str, path: &str) -> String {
    let scheme = scheme.to_ascii_lowercase();
    let mut host = host.to_ascii_lowercase();
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    if let Some(h) = host.strip_suffix(default_port) {
        host = h.to_string();
    }
    let path = if path.is_empty() { "/" } else { path };
    format!("{scheme}://{host}{path}")
}

/// `METHOD&uri&params` with the parameters (all but `oauth_signature`) encoded, sorted and
/// joined (RFC 5849 3.4.1).
pub fn base_string(method: &str, uri: &str, params: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> =
        params.iter().filter(|(k, _)| k != "oauth_signature").map(|(k, v)| (encode(k), encode(v))).collect();
    pairs.sort();
    let normalized: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}&{}&{}", encode(&method.to_ascii_uppercase()), encode(uri), encode(&normalized.join("&")))
}

/// HMAC-SHA1 of the base string with `pct(consumer_secret)&pct(token_secret)`, base64.
pub fn sign(base_string: &str, consumer_secret: &str, token_secret: &str) -> String {
    let key = format!("{}&{}", encode(consumer_secret), encode(token_secret));
    // HMAC takes keys of any length, so this cannot fail.
    let Ok(mut mac) = <Hmac<Sha1> as Mac>::new_from_slice(key.as_bytes()) else { return String::new() };
    mac.update(base_string.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether the request's `oauth_signature` signs it for any of `uris` (the URLs this endpoint
/// is reached at), compared in constant time.
pub fn verify(
    method: &str,
    uris: &[String],
    params: &[(String, String)],
    consumer_secret: &str,
    token_secret: &str,
) -> bool {
    let given = params.iter().find(|(k, _)| k == "oauth_signature").map(|(_, v)| v.as_bytes());
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return false;
    };
    let mut ok = false;
    for uri in uris {
        let expected = sign(&base_string(method, uri, params), consumer_secret, token_secret);
        ok |= idnode_keys::constant_time_eq(expected.as_bytes(), given);
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc5849_example_signature() {
        // RFC 5849 section 1.2 (temporary credentials request, HMAC-SHA1).
        let h = r#"OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03", oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131200", oauth_nonce="wIjqoS", oauth_callback="http%3A%2F%2Fprinter.example.com%2Fready", oauth_signature="74KNZJeDHnMBp0EMJ9ZHt%2FXKycU%3D""#;
        let p = OAuthParams::parse(Some(h));
        assert_eq!(p.get("oauth_callback"), Some("http://printer.example.com/ready"));
        assert!(p.get("realm").is_none());
        let uri = base_uri("HTTPS", "Photos.example.NET:443", "/initiate");
        assert_eq!(uri, "https://photos.example.net/initiate");
        assert!(verify("POST", std::slice::from_ref(&uri), &p.0, "kd94hf93k423kf44", ""));
        assert!(!verify("POST", &[uri], &p.0, "kd94hf93k423kf45", ""));
    }

    #[test]
    fn mandatory_checks_answer_like_oauthlib() {
        let now = 1_700_000_000;
        let mk = |extra: &[(&str, &str)]| {
            let mut v: Vec<(String, String)> = [
                ("oauth_signature", "x"),
                ("oauth_consumer_key", "0123456789abcdef0123456789abcdef"),
                ("oauth_nonce", "123"),
                ("oauth_timestamp", "1700000000"),
                ("oauth_signature_method", "HMAC-SHA1"),
                ("oauth_version", "1.0"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            for (k, val) in extra {
                v.retain(|(kk, _)| kk != k);
                v.push((k.to_string(), val.to_string()));
            }
            OAuthParams(v)
        };
        assert!(check_mandatory(&mk(&[]), now).is_ok());
        for (k, v, msg) in [
            ("oauth_nonce", "", "Missing mandatory OAuth parameters."),
            ("oauth_signature_method", "PLAINTEXT", "invalid_signature_method"),
            ("oauth_version", "2.0", "Invalid OAuth version."),
            ("oauth_timestamp", "1700000601", "Timestamp given is invalid"),
            ("oauth_consumer_key", "nothex", "Invalid client key format."),
            ("oauth_nonce", "xyz", "Invalid nonce format."),
        ] {
            let e = check_mandatory(&mk(&[(k, v)]), now).expect_err(k);
            assert!(e.message.contains(msg), "{k}: {}", e.message);
        }
    }
}
