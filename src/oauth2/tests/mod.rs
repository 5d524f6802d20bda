//! In-process tests of the OAuth2 provider through the real router.

mod clients;
mod cluster;
mod cutoff;
mod errors;
mod exchange;
mod hardening;
mod pages;
mod sessions;
mod sign_in_cutoff;
