//! Findings of the v4 review on authenticators: a passkey or credential registered on a
//! privileged user by someone other than a cloud administrator or the user.
