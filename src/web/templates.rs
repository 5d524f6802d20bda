//! Template sets: each feature builds one from its own templates over the shared layout and
//! message page. Every value is HTML-escaped, whatever the template's name; only what this
//! toolkit marks safe (the inline style, the page's scripts) is inserted as is. `t("key",
//! name=value)` is a message of the page's language ([`super::i18n`]).

use std::borrow::Cow;
use std::collections::HashMap;

use fluent_bundle::FluentValue;
use minijinja::value::{Kwargs, ValueKind};
use minijinja::{AutoEscape, Environment, Error, State, Value};

use super::i18n::Lang;

/// A template's name and source, compiled into the binary.
pub type Source = (&'static str, &'static str);

/// The layout every page extends, and the one-message page.
const SHARED: &[Source] =
    &[("layout.html", include_str!("pages/layout.html")), ("message.html", include_str!("pages/message.html"))];

/// The shared templates plus a feature's own. A template that does not parse is logged and
/// left out (rendering it then fails into an error page); the tests render every one.
pub fn environment(own: &[Source]) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // minijinja's HTML escape also writes `/` as `&#x2f;`, which browsers read back the same
    // but which makes every URL of a page unreadable in its source; text is escaped here for
    // element content and quoted attributes (`& < > " '`), everything else as minijinja does.
    env.set_formatter(|out, state, value| match value.as_str() {
        Some(text) if !value.is_safe() => out.write_str(&escape(text)).map_err(Error::from),
        _ => minijinja::escape_formatter(out, state, value),
    });
    env.add_function("t", translate);
    for (name, source) in SHARED.iter().chain(own) {
        if let Err(e) = env.add_template(name, source) {
            tracing::error!(template = name, error = %e, "a page template does not parse");
        }
    }
    env
}

/// Escapes text for element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `t("key", name=value, …)`: the message in the language of the page's `lang`.
fn translate(state: &State, key: &str, kwargs: Kwargs) -> Result<String, Error> {
    let lang = state.lookup("lang").and_then(|v| v.as_str().map(Lang::parse)).unwrap_or_default();
    let mut args: HashMap<Cow<'static, str>, FluentValue<'_>> = HashMap::new();
    for name in kwargs.args() {
        let v: Value = kwargs.get(name)?;
        let fv = match v.kind() {
            ValueKind::Number => match i64::try_from(v.clone()) {
                Ok(n) => FluentValue::from(n),
                Err(_) => FluentValue::from(f64::try_from(v).unwrap_or_default()),
            },
            _ => FluentValue::from(v.to_string()),
        };
        args.insert(Cow::Owned(name.to_string()), fv);
    }
    kwargs.assert_all_used()?;
    Ok(lang.text_with(key, &args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    #[test]
    fn values_are_escaped_in_any_template_and_t_speaks_the_page_s_language() {
        let env = environment(&[("x.txt", "<b>{{ v }}</b> {{ t('hello', name=v) }}")]);
        let t = env.get_template("x.txt").unwrap();
        let out = t.render(context! { v => "<script>\"'&", lang => "de" }).unwrap();
        assert_eq!(out, "<b>&lt;script&gt;&quot;&#39;&amp;</b> Hallo, &lt;script&gt;&quot;&#39;&amp;");
        let en = t.render(context! { v => "Ada" }).unwrap();
        assert_eq!(en, "<b>Ada</b> Hello, Ada");
    }

    /// Every `t("…")` key of every template (the toolkit's and the features') exists in every
    /// language, so no page shows a key or silently falls back to English.
    #[test]
    fn every_message_the_templates_use_exists_in_every_language() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut keys = std::collections::BTreeSet::new();
        let mut stack = vec![std::path::PathBuf::from(root)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "html") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for part in text.split("t(").skip(1) {
                        let q = part.chars().next().unwrap_or(' ');
                        if q == '"' || q == '\'' {
                            if let Some(k) = part[1..].split(q).next() {
                                keys.insert(k.to_string());
                            }
                        }
                    }
                }
            }
        }
        assert!(keys.len() > 10, "{keys:?}");
        for lang in super::super::i18n::LANGUAGES {
            let l = Lang::parse(lang);
            let missing: Vec<_> = keys.iter().filter(|k| !l.has(k)).collect();
            assert!(missing.is_empty(), "{lang} lacks {missing:?}");
        }
    }
}
