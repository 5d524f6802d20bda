//! The restricted SCIM filter grammar of the spec ("SCIM v2", filter table; RFC 7644 §3.4.2.2
//! narrowed): `term (LOGICAL_OP term)*` with one logical operator throughout (`and` and `or`
//! never mixed), `term = ATTR OP value` or `ATTR pr`; no parentheses, no `not`, no complex
//! attribute paths. Each attribute allows the operators of its row; a filter is at most
//! [`MAX_BYTES`] long and [`MAX_TERMS`] terms. Attribute names and operators are
//! case-insensitive (RFC 7644); string values are JSON strings, `active` takes `true`/`false`.
//! Every violation is a 400 `invalidFilter` whose detail names the [`Rule`] broken; the same
//! rules and tables are advertised in `/ServiceProviderConfig` ([`grammar`]), so a client can
//! know what is accepted before it asks.

use serde_json::json;

/// Longest filter accepted, in bytes.
pub const MAX_BYTES: usize = 512;
/// Most terms in one filter.
pub const MAX_TERMS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    User,
    Group,
}

impl Resource {
    const ALL: [Resource; 2] = [Resource::User, Resource::Group];

    fn name(self) -> &'static str {
        match self {
            Resource::User => "User",
            Resource::Group => "Group",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attr {
    UserName,
    DisplayName,
    ExternalId,
    Id,
    Active,
}

impl Attr {
    const ALL: [Attr; 5] = [Attr::UserName, Attr::DisplayName, Attr::ExternalId, Attr::Id, Attr::Active];

    fn name(self) -> &'static str {
        match self {
            Attr::UserName => "userName",
            Attr::DisplayName => "displayName",
            Attr::ExternalId => "externalId",
            Attr::Id => "id",
            Attr::Active => "active",
        }
    }

    /// Whether `resource` can be filtered on this attribute (the spec's filter table).
    fn on(self, resource: Resource) -> bool {
        match self {
            Attr::UserName | Attr::Active => resource == Resource::User,
            Attr::DisplayName => resource == Resource::Group,
            Attr::ExternalId | Attr::Id => true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Pr,
}

impl Op {
    const ALL: [Op; 5] = [Op::Eq, Op::Ne, Op::Co, Op::Sw, Op::Pr];

    fn name(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::Co => "co",
            Op::Sw => "sw",
            Op::Pr => "pr",
        }
    }
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

/// The rules of the restricted grammar, each with the name an `invalidFilter` detail and the
/// `/ServiceProviderConfig` extension give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    MaxLength,
    MaxTerms,
    Attributes,
    Operators,
    NoMixedLogic,
    NoGrouping,
    NoNot,
    Values,
    Syntax,
}

impl Rule {
    const ALL: [Rule; 9] = [
        Rule::MaxLength,
        Rule::MaxTerms,
        Rule::Attributes,
        Rule::Operators,
        Rule::NoMixedLogic,
        Rule::NoGrouping,
        Rule::NoNot,
        Rule::Values,
        Rule::Syntax,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::MaxLength => "maxLength",
            Rule::MaxTerms => "maxTerms",
            Rule::Attributes => "attributes",
            Rule::Operators => "operators",
            Rule::NoMixedLogic => "noMixedLogic",
            Rule::NoGrouping => "noGrouping",
            Rule::NoNot => "noNot",
            Rule::Values => "values",
            Rule::Syntax => "syntax",
        }
    }

    fn description(self) -> String {
        match self {
            Rule::MaxLength => format!("A filter is at most {MAX_BYTES} bytes long."),
            Rule::MaxTerms => format!("A filter has at most {MAX_TERMS} terms."),
            Rule::Attributes => "Only the attributes listed for the resource type can be filtered on.".into(),
            Rule::Operators => "Each attribute takes only the comparison operators listed for it.".into(),
            Rule::NoMixedLogic => "Terms are joined by one logical operator throughout: and, or or, never both.".into(),
            Rule::NoGrouping => "No parentheses and no complex attribute filters (attr[...]).".into(),
            Rule::NoNot => "No not.".into(),
            Rule::Values => "Values are JSON strings; active compares with true or false.".into(),
            Rule::Syntax => "term (and|or term)*, where term is ATTR OP VALUE or ATTR pr.".into(),
        }
    }
}

/// Why a filter is refused (the `detail` of the 400 `invalidFilter`).
#[derive(Debug, PartialEq, Eq)]
pub struct FilterError {
    pub rule: Rule,
    pub why: String,
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Filter rule {} broken: {}.", self.rule.name(), self.why)
    }
}

fn err<T>(rule: Rule, why: impl Into<String>) -> Result<T, FilterError> {
    Err(FilterError { rule, why: why.into() })
}

/// The grammar as `/ServiceProviderConfig` advertises it: the bounds, the attributes each
/// resource type can be filtered on with their operators, and every rule by name.
pub fn grammar() -> serde_json::Value {
    let mut attributes = Vec::new();
    for r in Resource::ALL {
        for a in Attr::ALL.into_iter().filter(|a| a.on(r)) {
            let ops: Vec<&str> = Op::ALL.into_iter().filter(|o| allowed(a, *o)).map(Op::name).collect();
            attributes.push(json!({"resourceType": r.name(), "attribute": a.name(), "operators": ops}));
        }
    }
    let rules: Vec<_> =
        Rule::ALL.into_iter().map(|r| json!({"name": r.name(), "description": r.description()})).collect();
    json!({"maxLength": MAX_BYTES, "maxTerms": MAX_TERMS, "logicalOperators": ["and", "or"],
           "mixedLogicalOperators": false, "grouping": false, "not": false, "complexAttributeFilters": false,
           "attributes": attributes, "rules": rules})
}

fn attr(resource: Resource, name: &str) -> Result<Attr, FilterError> {
    match Attr::ALL.into_iter().find(|a| a.on(resource) && a.name().eq_ignore_ascii_case(name)) {
        Some(a) => Ok(a),
        None => err(Rule::Attributes, format!("{}s cannot be filtered on {name:?}", resource.name())),
    }
}

fn op(name: &str) -> Result<Op, FilterError> {
    match Op::ALL.into_iter().find(|o| o.name().eq_ignore_ascii_case(name)) {
        Some(o) => Ok(o),
        None => err(Rule::Operators, format!("operator {name:?} is not supported")),
    }
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
            let Some(end) = end else { return err(Rule::Syntax, "a string is not terminated") };
            out.push(s[i..=end].to_string());
        } else if c == '(' || c == ')' || c == '[' || c == ']' {
            return err(Rule::NoGrouping, "grouping and complex attribute filters are not supported");
        } else {
            let mut end = s.len();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_whitespace() {
                    end = j;
                    break;
                }
                if d == '(' || d == ')' || d == '[' || d == ']' {
                    return err(Rule::NoGrouping, "grouping and complex attribute filters are not supported");
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
            _ => err(Rule::Values, "active compares with true or false"),
        };
    }
    match serde_json::from_str::<serde_json::Value>(word) {
        Ok(serde_json::Value::String(s)) => Ok(Value::Str(s)),
        _ => err(Rule::Values, format!("{word:?} is not a JSON string")),
    }
}

pub fn parse(resource: Resource, filter: &str) -> Result<Filter, FilterError> {
    if filter.len() > MAX_BYTES {
        return err(Rule::MaxLength, format!("the filter is {} bytes, more than {MAX_BYTES}", filter.len()));
    }
    let words = words(filter)?;
    let mut terms = Vec::new();
    let mut logical: Option<bool> = None;
    let mut i = 0;
    loop {
        let Some(name) = words.get(i) else { return err(Rule::Syntax, "a term is missing") };
        if name.eq_ignore_ascii_case("not") {
            return err(Rule::NoNot, "not is not supported");
        }
        let a = attr(resource, name)?;
        let o = op(words.get(i + 1).map(String::as_str).unwrap_or_default())?;
        if !allowed(a, o) {
            return err(Rule::Operators, format!("operator {:?} is not supported on {name:?}", o.name()));
        }
        let v = if o == Op::Pr {
            i += 2;
            None
        } else {
            let Some(w) = words.get(i + 2) else { return err(Rule::Syntax, "a value is missing") };
            i += 3;
            Some(value(a, w)?)
        };
        terms.push(Term { attr: a, op: o, value: v });
        if terms.len() > MAX_TERMS {
            return err(Rule::MaxTerms, format!("more than {MAX_TERMS} terms"));
        }
        let Some(next) = words.get(i) else { break };
        let any = match next.to_ascii_lowercase().as_str() {
            "and" => false,
            "or" => true,
            "not" => return err(Rule::NoNot, "not is not supported"),
            other => return err(Rule::Syntax, format!("expected and or or, found {other:?}")),
        };
        if logical.is_some_and(|l| l != any) {
            return err(Rule::NoMixedLogic, "and and or cannot be mixed in one filter");
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
        parse(r, f).unwrap_or_else(|e| panic!("{f}: {e}"))
    }

    fn refused(r: Resource, f: &str) -> Rule {
        match parse(r, f) {
            Ok(_) => panic!("{f} should be refused"),
            Err(e) => {
                assert!(e.to_string().starts_with(&format!("Filter rule {} broken: ", e.rule.name())), "{e}");
                e.rule
            }
        }
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
            assert_eq!(refused(User, &format!("externalId {bad} \"e\"")), Rule::Operators);
        }
        ok(User, "id eq \"abc\"");
        ok(Group, "id pr");
        assert_eq!(refused(User, "id ne \"abc\""), Rule::Operators);
        assert_eq!(refused(User, "id co \"abc\""), Rule::Operators);
        ok(User, "active eq true");
        ok(User, "active pr");
        assert_eq!(refused(User, "active ne false"), Rule::Operators);
        assert_eq!(refused(User, "active eq \"yes\""), Rule::Values);
        assert_eq!(refused(Group, "userName eq \"x\""), Rule::Attributes);
        assert_eq!(refused(User, "displayName eq \"x\""), Rule::Attributes);
        assert_eq!(refused(User, "emails eq \"x\""), Rule::Attributes);
        assert_eq!(refused(User, "userName gt \"a\""), Rule::Operators);
    }

    #[test]
    fn chains_are_homogeneous_and_bounded() {
        let f = ok(Resource::User, "userName sw \"a\" and active eq true and externalId pr");
        assert_eq!((f.terms.len(), f.any), (3, false));
        assert!(ok(Resource::User, "userName eq \"a\" or userName eq \"b\"").any);
        assert_eq!(refused(Resource::User, "userName eq \"a\" and userName eq \"b\" or id pr"), Rule::NoMixedLogic);
        assert_eq!(refused(Resource::User, "(userName eq \"a\")"), Rule::NoGrouping);
        assert_eq!(refused(Resource::User, "emails[type eq \"work\"] pr"), Rule::NoGrouping);
        assert_eq!(refused(Resource::User, "not userName eq \"a\""), Rule::NoNot);
        assert_eq!(refused(Resource::User, "id pr and not id pr"), Rule::NoNot);
        assert_eq!(refused(Resource::User, "userName eq \"a\" and"), Rule::Syntax);
        assert_eq!(refused(Resource::User, "userName eq"), Rule::Syntax);
        assert_eq!(refused(Resource::User, "userName eq \"unterminated"), Rule::Syntax);
        let eight = ["id pr"; 8].join(" or ");
        ok(Resource::User, &eight);
        assert_eq!(refused(Resource::User, &["id pr"; 9].join(" or ")), Rule::MaxTerms);
        let long = format!("userName eq \"{}\"", "a".repeat(MAX_BYTES));
        assert_eq!(refused(Resource::User, &long), Rule::MaxLength);
    }

    #[test]
    fn the_advertised_grammar_is_the_one_parsed() {
        let g = grammar();
        assert_eq!((g["maxLength"].as_u64(), g["maxTerms"].as_u64()), (Some(512), Some(8)));
        let names: Vec<&str> = g["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, Rule::ALL.map(Rule::name));
        // Every advertised (attribute, operator) pair parses, and every other one is refused.
        let rows = g["attributes"].as_array().unwrap();
        for r in Resource::ALL {
            for a in ["userName", "displayName", "externalId", "id", "active", "emails"] {
                let row = rows.iter().find(|row| row["resourceType"] == r.name() && row["attribute"] == a);
                for o in ["eq", "ne", "co", "sw", "pr", "gt"] {
                    let value = if o == "pr" {
                        ""
                    } else if a == "active" {
                        " true"
                    } else {
                        " \"x\""
                    };
                    let advertised = row.is_some_and(|row| row["operators"].as_array().unwrap().contains(&o.into()));
                    assert_eq!(parse(r, &format!("{a} {o}{value}")).is_ok(), advertised, "{a} {o} on {}", r.name());
                }
            }
        }
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
