//! Form posts of the pages (`application/x-www-form-urlencoded`): bounded, and each field at
//! most once, so a second value can never slip past the one that was checked.

use std::collections::HashMap;

use super::error::{PageError, PageResult};

/// Bodies of page posts larger than this are refused.
pub const MAX_FORM: usize = 32 * 1024;

pub fn parse(body: &[u8]) -> PageResult<HashMap<String, String>> {
    if body.len() > MAX_FORM {
        return Err(PageError::bad_request("The form is too large."));
    }
    let mut out = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(body) {
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(PageError::bad_request(format!("The field {k} is included more than once.")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_decoded_once_each_and_bounded() {
        let f = super::parse(b"a=1&b=x+y%21").unwrap();
        assert_eq!((f["a"].as_str(), f["b"].as_str()), ("1", "x y!"));
        assert!(super::parse(b"a=1&a=2").is_err());
        assert!(super::parse(&vec![b'a'; super::MAX_FORM + 1]).is_err());
    }
}
