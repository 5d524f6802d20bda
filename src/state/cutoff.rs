//! A user's token cut-off (`tokens_valid_after`): how apply moves it when a password change, a
//! disable or a deprovision ends the tokens issued before it, and how a token is judged by it.
//!
//! Tokens from payload version 4 on (and OAuth2 tokens with the `cut` claim) carry the cut-off
//! their issuer read with the credential it checked, and stay valid only while it is still the
//! user's. That comparison needs no clock, so a member whose clock runs ahead or behind can
//! neither keep an old token alive past a change nor refuse the tokens it issues after one
//! (docs/reliability.md, "Clock jumps"). It holds only if every such change moves the cut-off,
//! even when the proposer's clock is behind the stored value: from cluster version
//! [`STRICT_VERSION`] it moves by at least one microsecond. The switch is read from the
//! replicated cluster version, so every replica makes it at the same log index.

use idnode_storage::StorageError;

use super::model::User;
use super::read::tx::Tx;

/// The cluster version from which every cut-off moves forward.
pub const STRICT_VERSION: u32 = 7;

/// How this entry moves cut-offs: to `at`, and past the stored value once strict.
#[derive(Debug, Clone, Copy)]
pub struct Cutoff {
    at: i64,
    strict: bool,
}

impl Cutoff {
    pub fn at(tx: &Tx<'_>, at: i64) -> Result<Cutoff, StorageError> {
        let version = idnode_raft::applied_cluster_version(tx.engine, tx.batch).map_err(StorageError::Codec)?;
        Ok(Cutoff { at, strict: version >= STRICT_VERSION })
    }

    /// Ends every token of `u` issued before now.
    pub fn apply(self, u: &mut User) {
        let floor = if self.strict { u.tokens_valid_after.saturating_add(1) } else { u.tokens_valid_after };
        u.tokens_valid_after = floor.max(self.at);
    }
}

/// Whether a token issued at `issued_us` (the issuer's clock), which saw the cut-off `seen`
/// when it was issued (`None` for tokens from before that), is ended by the user's cut-off.
/// The seen cut-off decides once every member moves cut-offs strictly; before that, and for
/// older tokens, the issue time does, which trusts the members' clocks.
pub fn cut_off(user: &User, issued_us: i64, seen: Option<i64>, cluster_version: u32) -> bool {
    match seen {
        Some(seen) if cluster_version >= STRICT_VERSION => seen < user.tokens_valid_after,
        _ => issued_us < user.tokens_valid_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strict_cut_off_moves_even_when_the_clock_is_behind() {
        let mut u = crate::testkit::fixtures::user("u", "u", "d");
        u.tokens_valid_after = 1_000;
        Cutoff { at: 500, strict: false }.apply(&mut u);
        assert_eq!(u.tokens_valid_after, 1_000);
        Cutoff { at: 500, strict: true }.apply(&mut u);
        assert_eq!(u.tokens_valid_after, 1_001);
        Cutoff { at: 5_000, strict: true }.apply(&mut u);
        assert_eq!(u.tokens_valid_after, 5_000);
    }

    #[test]
    fn the_seen_cut_off_decides_once_cut_offs_move_strictly() {
        let mut u = crate::testkit::fixtures::user("u", "u", "d");
        u.tokens_valid_after = 1_000;
        // Issued on a member whose clock ran ahead, before the change: ended all the same.
        assert!(cut_off(&u, 9_000, Some(999), STRICT_VERSION));
        // Issued on a member whose clock runs behind, after the change: valid.
        assert!(!cut_off(&u, 10, Some(1_000), STRICT_VERSION));
        // Below the strict version, and for tokens without a seen cut-off, the clock decides.
        assert!(!cut_off(&u, 9_000, Some(999), STRICT_VERSION - 1));
        assert!(cut_off(&u, 10, Some(1_000), STRICT_VERSION - 1));
        assert!(cut_off(&u, 999, None, STRICT_VERSION));
        assert!(!cut_off(&u, 1_000, None, STRICT_VERSION));
    }
}
