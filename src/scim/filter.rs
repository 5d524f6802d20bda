//! The restricted SCIM filter grammar of the spec ("SCIM v2", filter table; RFC 7644 §3.4.2.2
//! narrowed): `term (LOGICAL_OP term)*` with one logical operator throughout (`and` and `or`
//! never mixed), `term = ATTR OP value` or `ATTR pr`; no parentheses, no `not`, no complex
//! attribute paths. Each attribute allows the operators of its row; a filter is at most
//! [`MAX_BYTES`] long and [`MAX_TERMS`] terms. Attribute names and operators are
//! case-insensitive (RFC 7644); string values are JSON strings, `active` takes `true`/`false`.
//! Every violation is a 400 `invalidFilter`.

/// Longest filter accepted, in bytes.
pub const MAX_BYTES: usize = 512;
/// Most terms in one filter.
pub const MAX_TERMS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    User,
    Group,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    UserName,
    DisplayName,
    ExternalId,
    Id,
    Active,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Pr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Str(String),
    Bool(bool),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub attr: Attr,
    pub op: Op,
    /// `None` for `pr`.
    pub value: Option<Value>,
}

/// A parsed filter: terms joined by one logical operator (`any` true: `or`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub terms: Vec<Term>,
    pub any: bool,
}

/// Why a filter is refused (the `detail` of the 400 `invalidFilter`).
#[derive(Debug, PartialEq, Eq)]
pub struct FilterError(pub String);

fn err<T>(m: impl Into<String>) -> Result<T, FilterError> {
    Err(FilterError(m.into()))
}

fn attr(resource: Resource, name: &str) -> Result<Attr, FilterError> {
    let a = match (resource, name.to_ascii_lowercase().as_str()) {
        (Resource::User, "username") => Attr::UserName,
        (Resource::Group, "displayname") => Attr::DisplayName,
        (_, "externalid") => Attr::ExternalId,
        (_, "id") => Attr::Id,
        (Resource::User, "active") => Attr::Active,
        _ => return err(format!("filtering on attribute {name:?} is not supported")),
    };
    Ok(a)
}

fn op(name: &str) -> Result<Op, FilterError> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "eq" => Op::Eq,
        "ne" => Op::Ne,
        "co" => Op::Co,
        "sw" => Op::Sw,
        "pr" => Op::Pr,
        _ => return err(format!("operator {name:?} is not supported")),
    })
}

/// The spec's operator table.
fn allowed(a: Attr, o: Op) -> bool {
    match a {
        Attr::UserName | Attr::DisplayName => true,
        Attr::ExternalId => matches!(o, Op::Eq | Op::Ne | Op::Pr),
        Attr::Id | Attr::Active => matches!(o, Op::Eq | Op::Pr),
    }
}

/// Splits into words, keeping a JSON string (with its escapes) as one word.
fn words(s: &str) -> Result<Vec<String>, FilterError> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            let mut escaped = false;
            let mut end = None;
            chars.next();
            for (j, d) in chars.by_ref() {
                match (escaped, d) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(j);
                        break;
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { return err("an unterminated string") };
            out.push(s[i..=end].to_string());
        } else if c == '(' || c == ')' || c == '[' || c == ']' {
            return err("grouping and complex attribute paths are not supported");
        } else {
            let mut end = s.len();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_whitespace() {
                    end = j;
                    break;
                }
                if d == '(' || d == ')' || d == '[' || d == ']' {
                    return err("grouping and complex attribute paths are not supported");
                }
                chars.next();
            }
            out.push(s[i..end].to_string());
        }
    }
    Ok(out)
}

fn value(a: Attr, word: &str) -> Result<Value, FilterError> {
    if a == Attr::Active {
        return match word.to_ascii_lowercase().as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => err("active compares with true or false"),
        };
    }
    match serde_json::from_str::<serde_json::Value>(word) {
        Ok(serde_json::Value::String(s)) => Ok(Value::Str(s)),
        _ => err(format!("{word:?} is not a string value")),
    }
}

pub fn parse(resource: Resource, filter: &str) -> Result<Filter, FilterError> {
    if filter.len() > MAX_BYTES {
        return err(format!("the filter is longer than {MAX_BYTES} bytes"));
    }
    let words = words(filter)?;
    let mut terms = Vec::new();
    let mut logical: Option<bool> = None;
    let mut i = 0;
    loop {
        let Some(name) = words.get(i) else { return err("a term is missing") };
        let a = attr(resource, name)?;
        let o = op(words.get(i + 1).map(String::as_str).unwrap_or_default())?;
        if !allowed(a, o) {
            return err(format!("operator {:?} is not supported on {name:?}", words[i + 1]));
        }
        let v = if o == Op::Pr {
            i += 2;
            None
        } else {
            let Some(w) = words.get(i + 2) else { return err("a value is missing") };
            i += 3;
            Some(value(a, w)?)
        };
        terms.push(Term { attr: a, op: o, value: v });
        if terms.len() > MAX_TERMS {
            return err(format!("more than {MAX_TERMS} terms"));
        }
        let Some(next) = words.get(i) else { break };
        let any = match next.to_ascii_lowercase().as_str() {
            "and" => false,
            "or" => true,
            "not" => return err("not is not supported"),
            other => return err(format!("expected and or or, found {other:?}")),
        };
        if logical.is_some_and(|l| l != any) {
            return err("and and or cannot be mixed in one filter");
        }
        logical = Some(any);
        i += 1;
    }
    Ok(Filter { terms, any: logical.unwrap_or(false) })
}

/// Whether a string attribute's value passes a term (`eq`/`ne` case-insensitive for
/// `userName` and `displayName`, exact for ids, as RFC 7643 makes `userName` case-insensitive).
pub fn text_matches(t: &Term, actual: Option<&str>, case_insensitive: bool) -> bool {
    let norm = |s: &str| if case_insensitive { s.to_lowercase() } else { s.to_string() };
    match (t.op, &t.value, actual) {
        (Op::Pr, _, a) => a.is_some_and(|a| !a.is_empty()),
        (_, Some(Value::Str(v)), Some(a)) => {
            let (a, v) = (norm(a), norm(v));
            match t.op {
                Op::Eq => a == v,
                Op::Ne => a != v,
                Op::Co => a.contains(&v),
                Op::Sw => a.starts_with(&v),
                Op::Pr => true,
            }
        }
        (Op::Ne, Some(_), None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(r: Resource, f: &str) -> Filter {
        parse(r, f).unwrap_or_else(|e| panic!("{f}: {}", e.0))
    }

    fn refused(r: Resource, f: &str) {
        assert!(parse(r, f).is_err(), "{f} should be refused");
    }

    #[test]
    fn each_attribute_takes_exactly_its_operators() {
        use Resource::*;
        for op in ["eq", "ne", "co", "sw"] {
            ok(User, &format!("userName {op} \"bjensen\""));
            ok(Group, &format!("displayName {op} \"Ops\""));
        }
        ok(User, "userName pr");
        ok(Group, "displayName pr");
        for op in ["eq", "ne"] {
            ok(User, &format!("externalId {op} \"e1\""));
            ok(Group, &format!("externalId {op} \"e1\""));
        }
        ok(User, "externalId pr");
        for bad in ["co", "sw", "gt"] {
            refused(User, &format!("externalId {bad} \"e\""));
        }
        ok(User, "id eq \"abc\"");
        ok(Group, "id pr");
        refused(User, "id ne \"abc\"");
        refused(User, "id co \"abc\"");
        ok(User, "active eq true");
        ok(User, "active pr");
        refused(User, "active ne false");
        refused(User, "active eq \"yes\"");
        refused(Group, "userName eq \"x\"");
        refused(User, "displayName eq \"x\"");
        refused(User, "emails eq \"x\"");
        refused(User, "userName gt \"a\"");
    }

    #[test]
    fn chains_are_homogeneous_and_bounded() {
        let f = ok(Resource::User, "userName sw \"a\" and active eq true and externalId pr");
        assert_eq!((f.terms.len(), f.any), (3, false));
        assert!(ok(Resource::User, "userName eq \"a\" or userName eq \"b\"").any);
        refused(Resource::User, "userName eq \"a\" and userName eq \"b\" or id pr");
        refused(Resource::User, "(userName eq \"a\")");
        refused(Resource::User, "emails[type eq \"work\"] pr");
        refused(Resource::User, "not userName eq \"a\"");
        refused(Resource::User, "userName eq \"a\" and");
        refused(Resource::User, "userName eq");
        refused(Resource::User, "userName eq \"unterminated");
        let eight = ["id pr"; 8].join(" or ");
        ok(Resource::User, &eight);
        refused(Resource::User, &["id pr"; 9].join(" or "));
        let long = format!("userName eq \"{}\"", "a".repeat(MAX_BYTES));
        refused(Resource::User, &long);
    }

    #[test]
    fn values_are_json_strings_and_matching_follows_case_rules() {
        let f = ok(Resource::User, r#"userName eq "b\"jensen""#);
        assert_eq!(f.terms[0].value, Some(Value::Str("b\"jensen".into())));
        let f = ok(Resource::User, "USERNAME EQ \"BJensen\"");
        assert!(text_matches(&f.terms[0], Some("bjensen"), true));
        assert!(!text_matches(&f.terms[0], Some("bjensen"), false));
        let co = ok(Resource::User, "userName co \"jen\"");
        assert!(text_matches(&co.terms[0], Some("bjensen"), true));
        let pr = ok(Resource::User, "externalId pr");
        assert!(!text_matches(&pr.terms[0], None, false));
        assert!(text_matches(&pr.terms[0], Some("x"), false));
    }
}
