//! The pages' texts: Fluent message files compiled into the binary (`locales/<lang>/*.ftl`),
//! English and German, the language chosen from the browser's `Accept-Language` by Fluent's
//! own negotiation. A message missing in German falls back to English, one missing in both
//! shows its key (a unit test keeps every key the templates use present in every language).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use axum::http::{header, HeaderMap};
use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use fluent_langneg::{negotiate_languages, NegotiationStrategy};
use unic_langid::LanguageIdentifier;

/// The languages the pages speak, English first (the default), with their message files.
const FILES: &[(&str, &[&str])] = &[
    (
        "en",
        &[
            include_str!("locales/en/pages.ftl"),
            include_str!("locales/en/oauth2.ftl"),
            include_str!("locales/en/account.ftl"),
        ],
    ),
    (
        "de",
        &[
            include_str!("locales/de/pages.ftl"),
            include_str!("locales/de/oauth2.ftl"),
            include_str!("locales/de/account.ftl"),
        ],
    ),
];

pub const LANGUAGES: &[&str] = &["en", "de"];

/// One bundle per language. A file that does not parse, or a message defined twice, is
/// logged and the rest kept; the tests load every file without error.
static BUNDLES: LazyLock<HashMap<&'static str, FluentBundle<FluentResource>>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(tag, files)| {
            let id: LanguageIdentifier = tag.parse().unwrap_or_default();
            let mut bundle = FluentBundle::new_concurrent(vec![id]);
            // Arguments are plain names and numbers in markup that is escaped anyway: no Unicode
            // isolation marks around them.
            bundle.set_use_isolating(false);
            for text in *files {
                let resource = FluentResource::try_new(text.to_string()).unwrap_or_else(|(partial, errors)| {
                    tracing::error!(lang = tag, ?errors, "a message file of the pages does not parse");
                    partial
                });
                if let Err(errors) = bundle.add_resource(resource) {
                    tracing::error!(lang = tag, ?errors, "a message of the pages is defined twice");
                }
            }
            (*tag, bundle)
        })
        .collect()
});

/// A language the pages speak (an index into [`LANGUAGES`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lang(usize);

impl Lang {
    /// One of [`LANGUAGES`] by its tag; anything else is English.
    pub fn parse(tag: &str) -> Lang {
        Lang(LANGUAGES.iter().position(|l| l.eq_ignore_ascii_case(tag)).unwrap_or(0))
    }

    /// The best of [`LANGUAGES`] for the request's `Accept-Language` (English when none fits).
    pub fn of(headers: &HeaderMap) -> Lang {
        let asked = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let requested = fluent_langneg::accepted_languages::parse(asked);
        let available: Vec<LanguageIdentifier> = LANGUAGES.iter().filter_map(|l| l.parse().ok()).collect();
        let english: LanguageIdentifier = LANGUAGES[0].parse().unwrap_or_default();
        let chosen = negotiate_languages(&requested, &available, Some(&english), NegotiationStrategy::Lookup);
        chosen.first().map(|l| Lang::parse(&l.to_string())).unwrap_or_default()
    }

    /// The BCP 47 tag, for `<html lang>`.
    pub fn tag(&self) -> &'static str {
        LANGUAGES[self.0]
    }

    /// The text of message `key`.
    pub fn text(&self, key: &str) -> String {
        self.text_with(key, &HashMap::new())
    }

    /// The text of message `key` with its arguments.
    pub fn text_with(&self, key: &str, args: &HashMap<Cow<'static, str>, FluentValue<'_>>) -> String {
        let mut fluent_args = FluentArgs::new();
        for (k, v) in args {
            fluent_args.set(k.clone(), v.clone());
        }
        let args = (!args.is_empty()).then_some(&fluent_args);
        lookup(self.tag(), key, args).or_else(|| lookup(LANGUAGES[0], key, args)).unwrap_or_else(|| key.to_string())
    }

    /// Whether `key` is a message of this very language (no fallback), for the tests.
    #[cfg(test)]
    pub fn has(&self, key: &str) -> bool {
        lookup(self.tag(), key, None).is_some()
    }
}

fn lookup(lang: &str, key: &str, args: Option<&FluentArgs>) -> Option<String> {
    let bundle = BUNDLES.get(lang)?;
    let pattern = bundle.get_message(key)?.value()?;
    let mut errors = Vec::new();
    let text = bundle.format_pattern(pattern, args, &mut errors).into_owned();
    if !errors.is_empty() {
        tracing::warn!(lang, key, ?errors, "a page message did not format cleanly");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn asked(v: &str) -> &'static str {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_str(v).unwrap());
        Lang::of(&h).tag()
    }

    #[test]
    fn the_browser_s_first_language_we_speak_is_chosen_english_otherwise() {
        assert_eq!(asked("de-DE,de;q=0.9,en;q=0.8"), "de");
        assert_eq!(asked("fr-FR, de;q=0.5"), "de");
        assert_eq!(asked("en-GB,de;q=0.5"), "en");
        assert_eq!(asked("fr, es"), "en");
        assert_eq!(asked("!!garbage"), "en");
        assert_eq!(Lang::of(&HeaderMap::new()).tag(), "en");
        assert_eq!(Lang::parse("DE").tag(), "de");
        assert_eq!(Lang::parse("xx").tag(), "en");
    }

    #[test]
    fn every_file_parses_and_texts_are_translated_with_arguments() {
        for (tag, files) in FILES {
            for text in *files {
                assert!(FluentResource::try_new(text.to_string()).is_ok(), "{tag}");
            }
        }
        let de = Lang::parse("de");
        assert_eq!(Lang::default().text("sign-in"), "Sign in");
        assert_eq!(de.text("sign-in"), "Anmelden");
        let args = HashMap::from([(Cow::Borrowed("name"), FluentValue::from("Ada"))]);
        assert_eq!(Lang::default().text_with("hello", &args), "Hello, Ada");
        assert_eq!(de.text_with("hello", &args), "Hallo, Ada");
        assert_eq!(Lang::default().text("no-such-message"), "no-such-message");
    }
}
