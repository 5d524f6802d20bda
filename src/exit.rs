//! Exit codes of the operator commands, so a script tells a usage error, an unreachable
//! member and a failed check apart (as `idnode --help` and docs/operations.md list them).

/// Anything else that failed. (2, a usage error, is clap's: it exits before any command runs.)
pub const OTHER: u8 = 1;
/// A member or endpoint did not answer.
pub const UNREACHABLE: u8 = 3;
/// A check failed or a member refused the operation.
pub const FAILED: u8 = 4;

/// The codes as `--help` shows them.
pub const HELP: &str = "Exit codes: 0 done; 1 any other failure; 2 usage error; 3 a member or endpoint did not \
                        answer; 4 a check failed or a member refused the operation.";

/// An error that says which exit code it stands for (anywhere in an error's chain).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Refused(String),
}

pub fn unreachable(message: impl Into<String>) -> anyhow::Error {
    Failure::Unreachable(message.into()).into()
}

pub fn refused(message: impl Into<String>) -> anyhow::Error {
    Failure::Refused(message.into()).into()
}

/// The exit code for a command's error: the first cause in its chain that tells one.
pub fn code_of(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<Failure>() {
            return match f {
                Failure::Unreachable(_) => UNREACHABLE,
                Failure::Refused(_) => FAILED,
            };
        }
        if let Some(r) = cause.downcast_ref::<reqwest::Error>() {
            if r.is_connect() || r.is_timeout() {
                return UNREACHABLE;
            }
        }
        if let Some(idnode_raft::CallError::Unreachable(_)) = cause.downcast_ref::<idnode_raft::CallError>() {
            return UNREACHABLE;
        }
    }
    OTHER
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_usage_error_exits_2_before_any_command_runs() {
        use clap::Parser;
        let e = crate::cli::Cli::try_parse_from(["idnode", "cluster", "status", "--no-such-flag"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = crate::cli::Cli::try_parse_from(["idnode", "cluster", "move-leader", "two"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn the_first_cause_that_tells_a_code_decides_it() {
        assert_eq!(code_of(&anyhow::anyhow!("disk full")), OTHER);
        assert_eq!(code_of(&unreachable("member 3 did not answer")), UNREACHABLE);
        assert_eq!(code_of(&refused("digests differ")), FAILED);
        let wrapped = Err::<(), _>(unreachable("no answer")).context("cluster status --all").unwrap_err();
        assert_eq!(code_of(&wrapped), UNREACHABLE);
        let peer = anyhow::Error::from(idnode_raft::CallError::Unreachable("127.0.0.1:1".into()));
        assert_eq!(code_of(&peer), UNREACHABLE);
        let failed = anyhow::Error::from(idnode_raft::CallError::Failed("HTTP 401".into()));
        assert_eq!(code_of(&failed), OTHER);
    }
}
