//! Signatures of S3 requests as an S3 service (Swift's s3token, Ceph's RADOS Gateway) presents
//! them to `/v3/s3tokens`. The service has already canonicalized the request into its string
//! to sign (S3's rules live there); only the step that needs the secret is done here, exactly
//! as Keystone does it: AWS Signature Version 4 when the string to sign starts with `AWS4`
//! (HMAC-SHA256 under the key derived from the scope line, hex), otherwise Version 2
//! (HMAC-SHA1, base64). Comparison is constant-time.

use base64::alphabet::STANDARD as STANDARD_ALPHABET;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;

use super::signer::{hmac_sha1, hmac_sha256, Unverifiable, V4_ALGORITHM};

/// The services whose V4 scopes Keystone signs for.
const V4_SERVICES: [&[u8]; 3] = [b"s3", b"iam", b"sts"];

/// A V4 string to sign that is not Keystone's four lines with a well-formed scope.
const MALFORMED_V4: Unverifiable = Unverifiable("malformed V4 string to sign");

/// Standard base64 that accepts padding or its absence.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &STANDARD_ALPHABET,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The string to sign from the request's `token`: base64 in either alphabet (Swift sends the
/// URL-safe one, other clients the standard one; Python's `urlsafe_b64decode`, which Keystone
/// uses, reads both). `None` when it is not base64.
pub fn string_to_sign(token: &str) -> Option<Vec<u8>> {
    let standard: String = token
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT.decode(standard).ok()
}

/// True when `presented` is the signature of `string_to_sign` under `secret`.
pub fn verify(secret: &str, string_to_sign: &[u8], presented: &str) -> Result<bool, Unverifiable> {
    let expected = signature(secret, string_to_sign)?;
    Ok(idnode_keys::constant_time_eq(presented.as_bytes(), expected.as_bytes()))
}

/// The signature Keystone would expect for `string_to_sign`.
pub fn signature(secret: &str, string_to_sign: &[u8]) -> Result<String, Unverifiable> {
    if string_to_sign.starts_with(b"AWS4") {
        v4(secret, string_to_sign)
    } else {
        Ok(STANDARD.encode(hmac_sha1(secret.as_bytes(), &[string_to_sign])?))
    }
}

/// `AWS4-HMAC-SHA256`, the request time, the scope `date/region/service/aws4_request`, the hash
/// of the canonical request: exactly four lines, as Keystone requires.
fn v4(secret: &str, string_to_sign: &[u8]) -> Result<String, Unverifiable> {
    let lines: Vec<&[u8]> = string_to_sign.split(|&b| b == b'\n').collect();
    let [algorithm, _, scope, _] = lines[..] else { return Err(MALFORMED_V4) };
    if algorithm != V4_ALGORITHM.as_bytes() {
        return Err(MALFORMED_V4);
    }
    let scope: Vec<&[u8]> = scope.split(|&b| b == b'/').collect();
    let [date, region, service, b"aws4_request"] = scope[..] else { return Err(MALFORMED_V4) };
    if !V4_SERVICES.contains(&service) {
        return Err(MALFORMED_V4);
    }
    let mut key = hmac_sha256(format!("AWS4{secret}").as_bytes(), date)?;
    for part in [region, service, &b"aws4_request"[..]] {
        key = hmac_sha256(&key, part)?;
    }
    Ok(hex::encode(hmac_sha256(&key, string_to_sign)?))
}

#[cfg(test)]
pub(super) mod tests {
    //! Vectors from AWS's documentation, not from this code: the Signature Version 2 example
    //! of the S3 developer guide (a GET of `photos/puppy.jpg`) and the Version 4 `GET Object`
    //! example of the S3 API reference (header-based auth, single chunk). Both were also
    //! recomputed with Python's `hmac` module.

    use super::*;

    pub(in crate::credential) const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    pub(in crate::credential) const V2_STS: &str =
        "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg";
    pub(in crate::credential) const V2_SIG: &str = "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=";
    pub(in crate::credential) const V4_STS: &str =
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n\
                          7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972";
    pub(in crate::credential) const V4_SIG: &str = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

    #[test]
    fn version_2_is_base64_hmac_sha1() {
        assert_eq!(signature(SECRET, V2_STS.as_bytes()).unwrap(), V2_SIG);
        let older = "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg";
        assert_eq!(signature(SECRET, older.as_bytes()).unwrap(), "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
    }

    #[test]
    fn version_4_derives_the_key_from_the_scope() {
        assert_eq!(signature(SECRET, V4_STS.as_bytes()).unwrap(), V4_SIG);
    }

    #[test]
    fn verification_is_exact() {
        assert_eq!(verify(SECRET, V2_STS.as_bytes(), V2_SIG), Ok(true));
        assert_eq!(verify(SECRET, V4_STS.as_bytes(), V4_SIG), Ok(true));
        assert_eq!(verify("wrong", V4_STS.as_bytes(), V4_SIG), Ok(false));
        assert_eq!(verify(SECRET, V2_STS.replace("puppy", "kitten").as_bytes(), V2_SIG), Ok(false));
        assert_eq!(verify(SECRET, V4_STS.replace("T000000Z", "T000001Z").as_bytes(), V4_SIG), Ok(false));
        assert_eq!(verify(SECRET, V4_STS.as_bytes(), &V4_SIG.to_uppercase()), Ok(false), "hex is lower case");
        assert_eq!(verify(SECRET, V2_STS.as_bytes(), ""), Ok(false));
    }

    #[test]
    fn malformed_version_4_strings_are_unverifiable() {
        for bad in [
            V4_STS.replace("us-east-1/s3", "us-east-1/ec2"),
            V4_STS.replace("/aws4_request", "/aws5_request"),
            V4_STS.replace("20130524/us-east-1", "20130524/us/east-1"),
            format!("{V4_STS}\nextra"),
            V4_STS.replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA512"),
            "AWS4".to_string(),
        ] {
            assert_eq!(signature(SECRET, bad.as_bytes()), Err(MALFORMED_V4), "{bad}");
        }
        for service in ["iam", "sts"] {
            let other = V4_STS.replace("/s3/", &format!("/{service}/"));
            assert!(signature(SECRET, other.as_bytes()).is_ok(), "{service}");
        }
    }

    #[test]
    fn the_token_is_base64_of_either_alphabet() {
        let raw = b"\xfb\xff\xfeAWS";
        assert_eq!(string_to_sign("-__-QVdT").as_deref(), Some(&raw[..]), "URL-safe");
        assert_eq!(string_to_sign("+//+QVdT").as_deref(), Some(&raw[..]), "standard");
        assert_eq!(string_to_sign("R0VU").as_deref(), Some(&b"GET"[..]));
        assert_eq!(string_to_sign("R0VUCg==").as_deref(), Some(&b"GET\n"[..]));
        assert_eq!(string_to_sign("R0VUCg").as_deref(), Some(&b"GET\n"[..]), "padding may be left out");
        assert_eq!(string_to_sign("R0VU\nCg==\n").as_deref(), Some(&b"GET\n"[..]), "line breaks are ignored");
        assert_eq!(string_to_sign("not base64!"), None);
        assert_eq!(string_to_sign("R"), None);
    }
}
