//! Which commands may make a credential check refuse what it accepted before: those are
//! acknowledged, and shown by any member, only once every member that may be answering
//! heard of them (the raft crate's watermark, docs/raft.md "Never answering from the past").
//! The rest only add (a project, a grant, a user) or touch what no check decides by (the
//! catalog, limits): a check they would turn from a refusal into an acceptance confirms its
//! refusal with a read index instead. When in doubt a command counts as revoking; that costs
//! a round trip on its acknowledgement, never a stale answer.

use crate::state::command::Command;
use crate::state::oauth2::OAuth2Command;

pub fn revokes(cmd: &Command) -> bool {
    match cmd {
        Command::CreateProject(_)
        | Command::CreateUser(_)
        | Command::CreateGroup(_)
        | Command::AddGroupMember { .. }
        | Command::CreateRole(_)
        | Command::CreateImpliedRole { .. }
        | Command::CreateGrant(_)
        | Command::CreateRegion(_)
        | Command::UpdateRegion(_)
        | Command::DeleteRegion { .. }
        | Command::CreateService(_)
        | Command::UpdateService(_)
        | Command::DeleteService { .. }
        | Command::CreateEndpoint(_)
        | Command::UpdateEndpoint(_)
        | Command::DeleteEndpoint { .. }
        | Command::CreateCredential(_)
        | Command::ClearAuthFailures { .. }
        | Command::RehashPassword { .. }
        | Command::Limits(_)
        | Command::PutDoc { create: true, .. }
        | Command::OAuth2(OAuth2Command::IssueCode { consent: None, .. })
        | Command::OAuth2(OAuth2Command::StartDevice { .. }) => false,
        Command::All(cmds) => cmds.iter().any(revokes),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_and_changes_revoke_additions_do_not() {
        let region = || Command::DeleteRegion { id: "r".into() };
        let unlock = || Command::ClearAuthFailures { user_id: "u".into() };
        assert!(!revokes(&region()), "the catalog decides no check");
        assert!(!revokes(&unlock()), "unlocking only lets a check succeed");
        assert!(revokes(&Command::DeleteProject { id: "p".into() }));
        assert!(revokes(&Command::DeleteUser { id: "u".into(), now: 0 }));
        assert!(revokes(&Command::RevokeToken { audit_ids: vec!["a".into()], expires_at: 0, now: 0 }));
        assert!(!revokes(&Command::All(vec![region(), unlock()])));
        assert!(
            revokes(&Command::All(vec![region(), Command::DeleteProject { id: "p".into() }])),
            "a group revokes when any part does"
        );
    }
}
