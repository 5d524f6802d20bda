//! How a refused or uncheckable external token is answered (shared by every login endpoint).

use crate::http::error::ApiError;
use crate::providers::verify::VerifyError;

/// A refused external token: 401 saying which check failed; an issuer that cannot be
/// reached: 503 (the caller may retry; its token may be fine). What the issuer answered (its
/// status, content type, body, or the cluster's reason) is logged here, never told to the
/// caller: the URL is the provider's, and its answers are not for whoever logs in.
pub fn refused(e: VerifyError) -> ApiError {
    match e {
        VerifyError::KeySetUnavailable(_) | VerifyError::ReviewUnavailable(_) => {
            tracing::warn!("external token not checkable: {e}");
            ApiError::unavailable("The identity provider could not be reached to check the token; retry later.")
        }
        VerifyError::NotAuthenticated(Some(_)) => {
            tracing::debug!("external token refused: {e}");
            ApiError::unauthorized(format!(
                "The presented token is not valid: {}.",
                VerifyError::NotAuthenticated(None)
            ))
        }
        e => ApiError::unauthorized(format!("The presented token is not valid: {e}.")),
    }
}
