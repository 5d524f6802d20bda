//! Findings of the v4 review on mapping rulesets: a ruleset naming another user, group, role
//! or provider, and SPIFFE trust domains matched by name across domains.
