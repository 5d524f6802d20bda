//! Form-encoded request bodies of the OAuth2 endpoints (RFC 6749 §3.2): parameters sent
//! once (a repeated one is `invalid_request`), except those the spec lets repeat
//! (`audience` of token exchange).

use std::collections::HashMap;

use axum::extract::{FromRequest, Request};

use super::error::OAuthError;

/// Bodies larger than this are refused before parsing.
const MAX_FORM: usize = 64 * 1024;
/// Parameters that may appear more than once.
const REPEATABLE: &[&str] = &["audience", "resource"];

pub struct OAuthForm {
    pub single: HashMap<String, String>,
    pub repeated: Vec<(String, String)>,
}

impl OAuthForm {
    pub fn parse(body: &[u8]) -> Result<Self, OAuthError> {
        let mut single = HashMap::new();
        let mut repeated = Vec::new();
        for (k, v) in url::form_urlencoded::parse(body) {
            if REPEATABLE.contains(&k.as_ref()) {
                repeated.push((k.into_owned(), v.into_owned()));
            } else if single.insert(k.to_string(), v.into_owned()).is_some() {
                return Err(OAuthError::invalid_request(format!("The parameter {k} is included more than once.")));
            }
        }
        Ok(OAuthForm { single, repeated })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.single.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// A parameter the request must carry.
    pub fn require(&self, name: &str) -> Result<&str, OAuthError> {
        self.get(name).ok_or_else(|| OAuthError::invalid_request(format!("The parameter {name} is missing.")))
    }

    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.repeated.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

impl<S: Send + Sync> FromRequest<S> for OAuthForm {
    type Rejection = OAuthError;

    async fn from_request(req: Request, state: &S) -> Result<Self, OAuthError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| OAuthError::invalid_request("The request body could not be read."))?;
        if bytes.len() > MAX_FORM {
            return Err(OAuthError::invalid_request("The request body is too large."));
        }
        OAuthForm::parse(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_single_parameters_are_refused_audience_may_repeat() {
        let f = OAuthForm::parse(b"grant_type=x&audience=a&audience=b+c&scope=").unwrap();
        assert_eq!(f.get("grant_type"), Some("x"));
        assert_eq!(f.get("scope"), None, "empty counts as absent");
        assert_eq!(f.all("audience").collect::<Vec<_>>(), vec!["a", "b c"]);
        assert_eq!(OAuthForm::parse(b"code=a&code=b").err().unwrap().error, "invalid_request");
    }
}
