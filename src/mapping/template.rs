//! Templates of `user_name`, `user_id`, `user_domain_id` and `group_name`: literal text with
//! `${claims.<key>}` (the claim's first value) and `${enclosing_domain_id}`. Parsed once into
//! parts so validation and evaluation agree on what a template names.

/// The macro a claim key may not shadow.
pub const ENCLOSING_DOMAIN: &str = "enclosing_domain_id";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Claim(&'a str),
    EnclosingDomain,
}

/// Splits a template. `Err` names the malformed placeholder: an unterminated `${`, an empty
/// claim key, or a macro other than the two the spec defines (text is never silently kept
/// as a literal `${...}`).
pub fn parse(template: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            parts.push(Part::Text(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated placeholder in template {template:?}"));
        };
        let inner = &after[..end];
        if inner == ENCLOSING_DOMAIN {
            parts.push(Part::EnclosingDomain);
        } else if let Some(key) = inner.strip_prefix("claims.") {
            if key.is_empty() || key.contains("${") {
                return Err(format!("empty or malformed claim key in template {template:?}"));
            }
            parts.push(Part::Claim(key));
        } else {
            return Err(format!(
                "unknown placeholder ${{{inner}}} in template {template:?} (use ${{claims.<key>}} or ${{{ENCLOSING_DOMAIN}}})"
            ));
        }
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    Ok(parts)
}

/// Whether a template names any claim (a malformed template names none).
pub fn names_claim(template: &str) -> bool {
    parse(template).is_ok_and(|parts| parts.iter().any(|p| matches!(p, Part::Claim(_))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_claims_and_the_domain_macro() {
        assert_eq!(
            parse("u-${claims.sub}@${enclosing_domain_id}!").unwrap(),
            vec![Part::Text("u-"), Part::Claim("sub"), Part::Text("@"), Part::EnclosingDomain, Part::Text("!")]
        );
        assert_eq!(parse("${claims.kubernetes.io/sa}").unwrap(), vec![Part::Claim("kubernetes.io/sa")]);
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("a}b$").unwrap(), vec![Part::Text("a}b$")]);
        for bad in ["${claims.sub", "${claims.}", "${user}", "${}", "${claims.${x}}"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(names_claim("x${claims.a}"));
        assert!(!names_claim("${enclosing_domain_id}"));
    }
}
