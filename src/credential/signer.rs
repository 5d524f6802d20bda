//! Signatures of signed requests, computed exactly as Keystone does (keystoneclient's
//! `Ec2Signer`): AWS Signature Version 4 (from the `Authorization` header or the `X-Amz-*`
//! query parameters), Version 2 (HmacSHA256, or HmacSHA1 when the request names it), and the
//! legacy Versions 1 and 0. Comparison is constant-time.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Python's `urllib.parse.quote(v, safe='-_~')`: everything but RFC 3986 unreserved characters.
const QUOTE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
pub(super) const V4_ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The signed request a client presents (`credentials` of a sigtoken request).
#[derive(Debug, Clone, Default)]
pub struct SignedRequest {
    pub access: String,
    pub signature: String,
    pub host: String,
    pub verb: String,
    pub path: String,
    pub params: BTreeMap<String, String>,
    pub headers: Vec<(String, String)>,
    pub body_hash: Option<String>,
}

impl SignedRequest {
    /// A header by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Why no signature could be computed (the request is then refused like a bad signature).
#[derive(Debug, PartialEq, Eq)]
pub struct Unverifiable(pub &'static str);

/// True when `r.signature` is the signature of `r` under `secret`. Like Keystone, a host with a
/// port is tried again without it (some clients sign the bare host name).
pub fn verify(secret: &str, r: &SignedRequest) -> Result<bool, Unverifiable> {
    if matches(secret, r)? {
        return Ok(true);
    }
    if r.host.contains(':') {
        let bare = SignedRequest { host: bare_host(&r.host), ..r.clone() };
        return matches(secret, &bare);
    }
    Ok(false)
}

fn matches(secret: &str, r: &SignedRequest) -> Result<bool, Unverifiable> {
    let expected = signature(secret, r)?;
    Ok(idnode_keys::constant_time_eq(r.signature.as_bytes(), expected.as_bytes()))
}

/// Python's `urlsplit('//' + host).hostname`: brackets and port dropped, lower case.
fn bare_host(host: &str) -> String {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host.split(':').next().unwrap_or(host),
    };
    name.to_lowercase()
}

/// The signature Keystone would expect for `r`.
pub fn signature(secret: &str, r: &SignedRequest) -> Result<String, Unverifiable> {
    match r.params.get("SignatureVersion").map(String::as_str) {
        Some("0") => v0(secret, &r.params),
        Some("1") => v1(secret, &r.params),
        Some("2") => v2(secret, r),
        _ if is_v4(r) => v4(secret, r),
        Some(_) => Err(Unverifiable("unknown signature version")),
        None => Err(Unverifiable("unexpected signature format")),
    }
}

/// The timestamp the signature covers, exactly as the signer wrote it: the `Timestamp`
/// parameter of versions 0 to 2 (version 0 signs it with the action, 1 and 2 sign every
/// parameter), or the `X-Amz-Date` that version 4 puts in its string to sign (header first,
/// then query parameter, as [`signature`] reads it). A timestamp the signature does not cover
/// (an `X-Amz-Date` header on a version 2 request) is not returned: anyone could change it.
pub fn signed_timestamp(r: &SignedRequest) -> Option<&str> {
    match r.params.get("SignatureVersion").map(String::as_str) {
        Some("0" | "1" | "2") => r.params.get("Timestamp").map(String::as_str),
        _ if is_v4(r) => r.header("X-Amz-Date").or_else(|| r.params.get("X-Amz-Date").map(String::as_str)),
        _ => None,
    }
}

// HMAC takes keys of any length; the error arm exists only in the type.
const BAD_KEY: Unverifiable = Unverifiable("unusable key");

pub(super) fn hmac_sha1(key: &[u8], parts: &[&[u8]]) -> Result<Vec<u8>, Unverifiable> {
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(key).map_err(|_| BAD_KEY)?;
    parts.iter().for_each(|p| mac.update(p));
    Ok(mac.finalize().into_bytes().to_vec())
}

pub(super) fn hmac_sha256(key: &[u8], data: &[u8]) -> Result<Vec<u8>, Unverifiable> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| BAD_KEY)?;
    mac.update(data);
    Ok(mac.finalize().into_bytes().to_vec())
}

/// Version 0: HMAC-SHA1 of Action || Timestamp.
fn v0(secret: &str, params: &BTreeMap<String, String>) -> Result<String, Unverifiable> {
    let action = params.get("Action").ok_or(Unverifiable("Action missing"))?;
    let timestamp = params.get("Timestamp").ok_or(Unverifiable("Timestamp missing"))?;
    Ok(STANDARD.encode(hmac_sha1(secret.as_bytes(), &[action.as_bytes(), timestamp.as_bytes()])?))
}

/// Version 1: HMAC-SHA1 over key || value of every parameter, sorted case-insensitively.
fn v1(secret: &str, params: &BTreeMap<String, String>) -> Result<String, Unverifiable> {
    let mut keys: Vec<&String> = params.keys().collect();
    keys.sort_by_key(|k| k.to_lowercase());
    let parts: Vec<&[u8]> = keys.iter().flat_map(|k| [k.as_bytes(), params[*k].as_bytes()]).collect();
    Ok(STANDARD.encode(hmac_sha1(secret.as_bytes(), &parts)?))
}

/// Sorted `key=value` pairs, both percent-encoded except for unreserved characters.
fn canonical_qs(params: &BTreeMap<String, String>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{}={}", utf8_percent_encode(k, QUOTE), utf8_percent_encode(v, QUOTE)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Version 2: HMAC over "verb\nhost\npath\n" + canonical query. Keystone always uses SHA-256
/// (and signs `SignatureMethod=HmacSHA256`); a request that names HmacSHA1 is checked with it.
fn v2(secret: &str, r: &SignedRequest) -> Result<String, Unverifiable> {
    let sha1 = r.params.get("SignatureMethod").is_some_and(|m| m == "HmacSHA1");
    let mut params = r.params.clone();
    if !sha1 {
        params.insert("SignatureMethod".into(), "HmacSHA256".into());
    }
    let to_sign = format!("{}\n{}\n{}\n{}", r.verb, r.host, r.path, canonical_qs(&params));
    let mac = if sha1 {
        hmac_sha1(secret.as_bytes(), &[to_sign.as_bytes()])?
    } else {
        hmac_sha256(secret.as_bytes(), to_sign.as_bytes())?
    };
    Ok(STANDARD.encode(mac))
}

fn is_v4(r: &SignedRequest) -> bool {
    match r.header("Authorization") {
        Some(a) => a.starts_with(V4_ALGORITHM),
        None => r.params.get("X-Amz-Algorithm").is_some_and(|a| a == V4_ALGORITHM),
    }
}

/// A V4 authorization parameter: from the `Authorization` header when there is one, else the
/// `X-Amz-{name}` query parameter.
fn auth_param(r: &SignedRequest, name: &str) -> Option<String> {
    match r.header("Authorization") {
        Some(a) => Some(
            a.split_once(&format!("{name}=")).map_or("", |(_, rest)| rest.split(',').next().unwrap_or("")).to_string(),
        ),
        None => r.params.get(&format!("X-Amz-{name}")).cloned(),
    }
}

/// Old boto (before 2.9.3) signed the host header without its port.
fn strips_port(user_agent: &str) -> bool {
    let b = user_agent.as_bytes();
    user_agent.starts_with("Boto/2.")
        && b.get(7).is_some_and(u8::is_ascii_digit)
        && b.get(8) == Some(&b'.')
        && b.get(9).is_some_and(|c| (b'0'..=b'2').contains(c))
}

fn canonical_headers(r: &SignedRequest, signed: &str) -> String {
    let lower: BTreeMap<String, &str> = r.headers.iter().map(|(k, v)| (k.trim().to_lowercase(), v.trim())).collect();
    let strip = lower.get("user-agent").is_some_and(|ua| strips_port(ua));
    let mut lines = Vec::new();
    for h in signed.split(';') {
        let Some(v) = lower.get(h) else { continue };
        if h == "host" && strip {
            lines.push(format!("{h}:{}", v.split(':').next().unwrap_or(v)));
        } else {
            lines.push(format!("{h}:{v}"));
        }
    }
    lines.join("\n") + "\n"
}

/// Version 4 (AWS4-HMAC-SHA256), with Keystone's canonical request: the path as given, no
/// query string for POST (its parameters travel in the body), the signed headers as sent.
fn v4(secret: &str, r: &SignedRequest) -> Result<String, Unverifiable> {
    let signed = auth_param(r, "SignedHeaders").ok_or(Unverifiable("SignedHeaders missing"))?;
    let body_hash = r.body_hash.as_deref().ok_or(Unverifiable("body_hash missing"))?;
    let verb = r.verb.to_uppercase();
    let qs = if verb == "POST" { String::new() } else { canonical_qs(&r.params) };
    let request = [verb.as_str(), &r.path, &qs, &canonical_headers(r, &signed), &signed, body_hash].join("\n");
    let credential = auth_param(r, "Credential").ok_or(Unverifiable("Credential missing"))?;
    let parts: Vec<&str> = credential.split('/').collect();
    let [_, date, region, service, ..] = parts[..] else {
        return Err(Unverifiable("malformed credential scope"));
    };
    let scope = parts[1..].join("/");
    let amz_date = r
        .header("X-Amz-Date")
        .map(str::to_string)
        .or_else(|| r.params.get("X-Amz-Date").cloned())
        .ok_or(Unverifiable("X-Amz-Date missing"))?;
    if !amz_date.starts_with(date) {
        return Err(Unverifiable("request date mismatch"));
    }
    let to_sign = [V4_ALGORITHM, &amz_date, &scope, &hex::encode(Sha256::digest(request.as_bytes()))].join("\n");
    let mut key = hmac_sha256(format!("AWS4{secret}").as_bytes(), date.as_bytes())?;
    for part in [region, service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes())?;
    }
    Ok(hex::encode(hmac_sha256(&key, to_sign.as_bytes())?))
}

#[cfg(test)]
mod tests {
    //! Vectors computed with keystoneclient's `Ec2Signer` (Keystone's own verifier); the V4
    //! header vector is also AWS's published IAM `ListUsers` example.

    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn v2_request(method: &str) -> SignedRequest {
        SignedRequest {
            host: "ec2.example.com:8773".into(),
            verb: "GET".into(),
            path: "/services/Cloud".into(),
            params: params(&[
                ("Action", "DescribeInstances"),
                ("Version", "2016-11-15"),
                ("AWSAccessKeyId", "AKID"),
                ("SignatureVersion", "2"),
                ("SignatureMethod", method),
                ("Timestamp", "2024-05-01T12:00:00Z"),
                ("Filter.1.Name", "tag:Name"),
                ("Filter.1.Value.1", "a b/c~d*e"),
            ]),
            ..Default::default()
        }
    }

    fn v4_header_request() -> SignedRequest {
        SignedRequest {
            host: "iam.amazonaws.com".into(),
            verb: "GET".into(),
            path: "/".into(),
            params: params(&[("Action", "ListUsers"), ("Version", "2010-05-08")]),
            headers: vec![
                (
                    "Authorization".into(),
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
                     SignedHeaders=content-type;host;x-amz-date, Signature=x"
                        .into(),
                ),
                ("content-type".into(), "application/x-www-form-urlencoded; charset=utf-8".into()),
                ("host".into(), "iam.amazonaws.com".into()),
                ("X-Amz-Date".into(), "20150830T123600Z".into()),
            ],
            body_hash: Some(EMPTY_SHA256.into()),
            ..Default::default()
        }
    }

    #[test]
    fn version_2_sha256_and_sha1() {
        assert_eq!(
            signature(SECRET, &v2_request("HmacSHA256")).unwrap(),
            "Wta5PXiZLrRS3OdxpsknuOtoqw55DL+Bk3nPgdWnAoc="
        );
        assert_eq!(signature(SECRET, &v2_request("HmacSHA1")).unwrap(), "8cwsz6ADxMb6YqHDcQSJqHzv5nw=");
    }

    #[test]
    fn versions_1_and_0() {
        let v1 = SignedRequest {
            params: params(&[
                ("Action", "DescribeInstances"),
                ("Version", "2016-11-15"),
                ("AWSAccessKeyId", "AKID"),
                ("SignatureVersion", "1"),
                ("Timestamp", "2024-05-01T12:00:00Z"),
                ("zeta", "Z"),
                ("alpha", "a"),
            ]),
            ..Default::default()
        };
        assert_eq!(signature(SECRET, &v1).unwrap(), "VUXpDXWEuEksqW67d5XLj6BoaL0=");
        let v0 = SignedRequest {
            params: params(&[
                ("Action", "DescribeInstances"),
                ("SignatureVersion", "0"),
                ("Timestamp", "2024-05-01T12:00:00Z"),
            ]),
            ..Default::default()
        };
        assert_eq!(signature(SECRET, &v0).unwrap(), "u6P9BZSWpx+1kNEslGnzIq6E/+8=");
    }

    #[test]
    fn version_4_header_and_query() {
        let r = v4_header_request();
        assert_eq!(signature(SECRET, &r).unwrap(), "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
        let q = SignedRequest {
            host: "iam.amazonaws.com".into(),
            verb: "GET".into(),
            path: "/".into(),
            params: params(&[
                ("Action", "ListUsers"),
                ("Version", "2010-05-08"),
                ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
                ("X-Amz-Credential", "AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request"),
                ("X-Amz-Date", "20150830T123600Z"),
                ("X-Amz-Expires", "60"),
                ("X-Amz-SignedHeaders", "host"),
            ]),
            headers: vec![("host".into(), "iam.amazonaws.com".into())],
            body_hash: Some(EMPTY_SHA256.into()),
            ..Default::default()
        };
        assert_eq!(signature(SECRET, &q).unwrap(), "c1d81d2c1667f724b714de8de01eb28808ee3df2bd3757c049afb139adde2df0");
    }

    #[test]
    fn verification_is_exact_and_retries_without_the_port() {
        let mut r = v4_header_request();
        r.signature = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7".into();
        assert_eq!(verify(SECRET, &r), Ok(true));
        assert_eq!(verify("wrong", &r), Ok(false));
        let mut tampered = r.clone();
        tampered.params.insert("Action".into(), "DeleteUser".into());
        assert_eq!(verify(SECRET, &tampered), Ok(false));
        let mut stale = r.clone();
        stale.headers[3].1 = "20150831T123600Z".into();
        assert!(verify(SECRET, &stale).is_err(), "date outside the credential scope");

        // Signed for the bare host, presented with a port: accepted on the second try.
        let mut bare = v2_request("HmacSHA256");
        bare.host = "ec2.example.com".into();
        let sig = signature(SECRET, &bare).unwrap();
        let mut with_port = v2_request("HmacSHA256");
        with_port.signature = sig;
        assert_eq!(verify(SECRET, &with_port), Ok(true));
        assert_eq!(bare_host("[::1]:5000"), "::1");
        assert_eq!(bare_host("Example.COM:80"), "example.com");
    }

    #[test]
    fn the_signed_timestamp_is_the_one_the_signature_covers() {
        assert_eq!(signed_timestamp(&v2_request("HmacSHA256")), Some("2024-05-01T12:00:00Z"));
        assert_eq!(signed_timestamp(&v4_header_request()), Some("20150830T123600Z"));
        let mut query = v4_header_request();
        query.headers.clear();
        query.params.insert("X-Amz-Algorithm".into(), V4_ALGORITHM.into());
        query.params.insert("X-Amz-Date".into(), "20150830T000000Z".into());
        assert_eq!(signed_timestamp(&query), Some("20150830T000000Z"));
        // Version 2 signs no header: an X-Amz-Date header there is no signed timestamp.
        let mut v2 = v2_request("HmacSHA256");
        v2.params.remove("Timestamp");
        v2.headers.push(("X-Amz-Date".into(), "20240501T120000Z".into()));
        assert_eq!(signed_timestamp(&v2), None);
        assert_eq!(signed_timestamp(&SignedRequest::default()), None);
    }

    #[test]
    fn unknown_formats_are_unverifiable() {
        let none = SignedRequest::default();
        assert!(signature(SECRET, &none).is_err());
        let v9 = SignedRequest { params: params(&[("SignatureVersion", "9")]), ..Default::default() };
        assert!(signature(SECRET, &v9).is_err());
        let mut no_hash = v4_header_request();
        no_hash.body_hash = None;
        assert!(signature(SECRET, &no_hash).is_err());
        assert!(strips_port("Boto/2.9.2 Python/2.7") && !strips_port("Boto/2.9.3") && !strips_port("botocore/1.0"));
    }
}
