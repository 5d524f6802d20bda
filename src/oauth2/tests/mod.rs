//! In-process tests of the OAuth2 provider through the real router.

mod clients;
mod errors;
mod hardening;
mod pages;
