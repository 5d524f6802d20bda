//! Findings of the v4 review on SCIM: provisioning writes that reach privileged users and
//! groups.
