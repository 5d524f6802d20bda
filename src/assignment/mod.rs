//! Role assignments: effective roles (direct grants plus implied roles) for tokens and
//! policy.

pub mod effective;
