//! The OAuth2 provider's invariants: keys install once and rotate in order, client ids are
//! unique, a code is redeemed once (a replay revokes what it issued), a refresh token is
//! used once (a replay revokes its family), a device grant moves pending -> decided ->
//! redeemed, and a grant for a disabled or missing user, client or domain issues nothing.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::oauth2::{keys, *};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;
use super::oauth2_sessions::{self, revoke_family};

/// Expired records dropped per command at most (bounded work).
const PRUNE_PER_COMMAND: usize = 32;

fn done(a: OAuth2Applied) -> Result<ApplyResult, Fatal> {
    Ok(Ok(Applied::OAuth2(a)))
}

fn invalid(m: &str) -> Result<ApplyResult, Fatal> {
    Ok(Err(ApplyError::Invalid(m.to_string())))
}

pub fn apply(tx: &mut Tx<'_>, cmd: OAuth2Command) -> Result<ApplyResult, Fatal> {
    let at = match &cmd {
        OAuth2Command::RotateKeys { at, .. }
        | OAuth2Command::RedeemCode { at, .. }
        | OAuth2Command::Refresh { at, .. }
        | OAuth2Command::RevokeFamily { at, .. }
        | OAuth2Command::RevokeJti { at, .. }
        | OAuth2Command::DecideDevice { at, .. }
        | OAuth2Command::PollDevice { at, .. }
        | OAuth2Command::DeleteConsent { at, .. }
        | OAuth2Command::StartDeviceAt { at, .. }
        | OAuth2Command::RevokeSessions { at, .. } => Some(*at),
        _ => None,
    };
    let outcome = match cmd {
        OAuth2Command::InstallKeys { domain_id, primary, staged } => install_keys(tx, domain_id, primary, staged),
        OAuth2Command::RotateKeys { domain_id, expected_staged, staged, retire_at, at } => {
            rotate_keys(tx, &domain_id, &expected_staged, staged, retire_at, at)
        }
        OAuth2Command::PutClient { client, create } => put_client(tx, client, create),
        OAuth2Command::DeleteClient { domain_id, client_id } => delete_client(tx, &domain_id, &client_id),
        OAuth2Command::IssueCode { hash, code, consent } => issue_code(tx, &hash, code, consent),
        OAuth2Command::RedeemCode { hash, client_id, at, issued, family } => {
            redeem_code(tx, &hash, &client_id, at, issued, family)
        }
        OAuth2Command::Refresh { family_id, client_id, presented, next, at } => {
            refresh(tx, &family_id, &client_id, &presented, next, at)
        }
        OAuth2Command::RevokeFamily { family_id, client_id, at } => {
            match tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(&family_id))? {
                Some(f) if f.client_id == client_id => {
                    revoke_family(tx, f, at)?;
                    done(OAuth2Applied::Done)
                }
                _ => done(OAuth2Applied::Done),
            }
        }
        OAuth2Command::RevokeJti { domain_id, jti, exp, family_id, at } => {
            revoke_jti(tx, &domain_id, &jti, exp)?;
            let family = match family_id {
                Some(id) => tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(&id))?,
                None => None,
            };
            if let Some(f) = family {
                revoke_family(tx, f, at)?;
            }
            done(OAuth2Applied::Done)
        }
        OAuth2Command::StartDevice { hash, grant } => start_device(tx, &hash, grant),
        OAuth2Command::DecideDevice { domain_id, user_code, approve, consent, at } => {
            decide_device(tx, &domain_id, &user_code, approve, consent, at)
        }
        OAuth2Command::PollDevice { hash, client_id, at, issued, family } => {
            poll_device(tx, &hash, &client_id, at, issued, family)
        }
        OAuth2Command::PutConsent(c) => {
            put_consent(tx, c)?;
            done(OAuth2Applied::Done)
        }
        OAuth2Command::DeleteConsent { user_id, client_id, at } => delete_consent(tx, &user_id, &client_id, at),
        OAuth2Command::StartDeviceAt { hash, grant, at: _ } => start_device(tx, &hash, grant),
        OAuth2Command::ReplaceClient { expected, client } => replace_client(tx, *expected, *client),
        OAuth2Command::RevokeSessions { user_id, family_id, at } => {
            oauth2_sessions::revoke_sessions(tx, &user_id, family_id.as_deref(), at)
        }
    }?;
    if let (Some(at), Ok(_)) = (at, &outcome) {
        prune(tx, at)?;
    }
    Ok(outcome)
}

fn install_keys(
    tx: &mut Tx<'_>,
    domain_id: String,
    primary: SigningKey,
    staged: SigningKey,
) -> Result<ApplyResult, Fatal> {
    if let Some(existing) = tx.get::<SigningKeys>(cf::OAUTH2, &keys::signing_keys(&domain_id))? {
        return done(OAuth2Applied::Keys(existing));
    }
    if tx.domain(&domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &domain_id)));
    }
    if primary.state != SigningKeyState::Primary || staged.state != SigningKeyState::Staged {
        return invalid("a first key set is one primary and one staged key");
    }
    let set = SigningKeys { domain_id: domain_id.clone(), epoch: 1, keys: vec![primary, staged] };
    tx.put(cf::OAUTH2, keys::signing_keys(&domain_id), &set)?;
    done(OAuth2Applied::Keys(set))
}

fn rotate_keys(
    tx: &mut Tx<'_>,
    domain_id: &str,
    expected_staged: &str,
    staged: SigningKey,
    retire_at: i64,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    let Some(mut set) = tx.get::<SigningKeys>(cf::OAUTH2, &keys::signing_keys(domain_id))? else {
        return Ok(Err(not_found("signing keys of domain", domain_id)));
    };
    if set.staged().map(|k| k.kid.as_str()) != Some(expected_staged) {
        return Ok(Err(ApplyError::Conflict("Another key rotation of this domain happened first; retry.".into())));
    }
    if staged.state != SigningKeyState::Staged {
        return invalid("a rotation stages a key");
    }
    for k in &mut set.keys {
        match k.state {
            SigningKeyState::Primary => {
                k.state = SigningKeyState::Retired;
                k.retire_at = Some(retire_at);
            }
            SigningKeyState::Staged => k.state = SigningKeyState::Primary,
            SigningKeyState::Retired => {}
        }
    }
    set.keys.retain(|k| k.state != SigningKeyState::Retired || k.retire_at.is_some_and(|t| t > at));
    set.keys.push(staged);
    set.epoch += 1;
    tx.put(cf::OAUTH2, keys::signing_keys(domain_id), &set)?;
    done(OAuth2Applied::Keys(set))
}

fn put_client(tx: &mut Tx<'_>, client: Client, create: bool) -> Result<ApplyResult, Fatal> {
    let key = keys::client(&client.domain_id, &client.client_id);
    let before = tx.get::<Client>(cf::OAUTH2, &key)?;
    match (&before, create) {
        (Some(_), true) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store oauth2_client - Duplicate ID, {}.",
                client.client_id
            ))))
        }
        (None, false) => return Ok(Err(not_found("oauth2_client", &client.client_id))),
        _ => {}
    }
    if tx.domain(&client.domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &client.domain_id)));
    }
    tx.put(cf::OAUTH2, key, &client)?;
    done(OAuth2Applied::Client(client))
}

fn replace_client(tx: &mut Tx<'_>, expected: Client, client: Client) -> Result<ApplyResult, Fatal> {
    if (&expected.domain_id, &expected.client_id) != (&client.domain_id, &client.client_id) {
        return invalid("a client replacement names another client");
    }
    match tx.get::<Client>(cf::OAUTH2, &keys::client(&client.domain_id, &client.client_id))? {
        None => Ok(Err(not_found("oauth2_client", &client.client_id))),
        Some(current) if current != expected => {
            Ok(Err(ApplyError::Conflict("The client was changed by another request since it was read; retry.".into())))
        }
        Some(_) => put_client(tx, client, false),
    }
}

fn delete_client(tx: &mut Tx<'_>, domain_id: &str, client_id: &str) -> Result<ApplyResult, Fatal> {
    let key = keys::client(domain_id, client_id);
    if tx.get_raw(cf::OAUTH2, &key)?.is_none() {
        return Ok(Err(not_found("oauth2_client", client_id)));
    }
    // Its refresh families die with it: a refresh checks that the client exists.
    tx.delete(cf::OAUTH2, key);
    done(OAuth2Applied::Done)
}

/// Whether the user, the client and the domain of a grant all exist and are enabled.
fn parties_enabled(tx: &Tx<'_>, domain_id: &str, client_id: &str, user_id: &str) -> Result<bool, Fatal> {
    let user_ok = tx.user(user_id)?.is_some_and(|u| u.enabled && u.domain_id == domain_id);
    let client_ok = tx.get::<Client>(cf::OAUTH2, &keys::client(domain_id, client_id))?.is_some_and(|c| c.enabled);
    let domain_ok = tx.domain(domain_id)?.is_some_and(|d| d.enabled);
    Ok(user_ok && client_ok && domain_ok)
}

fn issue_code(tx: &mut Tx<'_>, hash: &str, code: AuthCode, consent: Option<Consent>) -> Result<ApplyResult, Fatal> {
    let key = keys::code(hash);
    if tx.get_raw(cf::OAUTH2, &key)?.is_some() {
        return Ok(Err(ApplyError::Conflict("authorization code collision".into())));
    }
    if !parties_enabled(tx, &code.domain_id, &code.client_id, &code.user_id)? {
        return invalid("the user, the client or the domain is disabled");
    }
    if let Some(c) = consent {
        put_consent(tx, c)?;
    }
    tx.batch.put(cf::OAUTH2, keys::expiry(code.expires_at, &key), &[]);
    tx.put(cf::OAUTH2, key, &code)?;
    done(OAuth2Applied::Done)
}

fn store_family(tx: &mut Tx<'_>, f: &RefreshFamily) -> Result<(), Fatal> {
    let key = keys::family(&f.id);
    tx.put(cf::OAUTH2, key.clone(), f)?;
    tx.batch.put(cf::OAUTH2, keys::user_family(&f.user_id, &f.client_id, &f.id), &[]);
    tx.batch.put(cf::OAUTH2, keys::expiry(f.expires_at, &key), &[]);
    Ok(())
}

fn revoke_jti(tx: &mut Tx<'_>, domain_id: &str, jti: &str, exp: i64) -> Result<(), Fatal> {
    let key = keys::revoked_jti(domain_id, jti);
    if tx.get_raw(cf::OAUTH2, &key)?.is_none() {
        tx.batch.put(cf::OAUTH2, keys::expiry(exp, &key), &[]);
        tx.put(cf::OAUTH2, key, &exp)?;
    }
    Ok(())
}

/// Revokes what a redemption issued: its access token and its refresh family.
fn revoke_issued(tx: &mut Tx<'_>, domain_id: &str, issued: &Issued, at: i64) -> Result<(), Fatal> {
    revoke_jti(tx, domain_id, &issued.jti, issued.access_exp)?;
    if let Some(id) = &issued.family_id {
        if let Some(f) = tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(id))? {
            revoke_family(tx, f, at)?;
        }
    }
    Ok(())
}

fn redeem_code(
    tx: &mut Tx<'_>,
    hash: &str,
    client_id: &str,
    at: i64,
    issued: Issued,
    family: Option<RefreshFamily>,
) -> Result<ApplyResult, Fatal> {
    let key = keys::code(hash);
    let Some(mut code) = tx.get::<AuthCode>(cf::OAUTH2, &key)? else {
        return invalid("The authorization code is invalid or expired.");
    };
    if code.client_id != client_id {
        return invalid("The authorization code was issued to another client.");
    }
    if let Some(first) = &code.redeemed {
        let first = first.clone();
        revoke_issued(tx, &code.domain_id, &first, at)?;
        return done(OAuth2Applied::CodeReplayed);
    }
    if at >= code.expires_at {
        return invalid("The authorization code is invalid or expired.");
    }
    if !parties_enabled(tx, &code.domain_id, &code.client_id, &code.user_id)? {
        return invalid("The user, the client or the domain is disabled.");
    }
    let before = code.clone();
    // Kept until the access token it issued expires, so a replay can still revoke it.
    tx.delete(cf::OAUTH2, keys::expiry(code.expires_at, &key));
    tx.batch.put(cf::OAUTH2, keys::expiry(issued.access_exp.max(code.expires_at), &key), &[]);
    if let Some(f) = &family {
        store_family(tx, f)?;
    }
    code.redeemed = Some(issued);
    tx.put(cf::OAUTH2, key, &code)?;
    done(OAuth2Applied::Redeemed(before))
}

fn refresh(
    tx: &mut Tx<'_>,
    family_id: &str,
    client_id: &str,
    presented: &str,
    next: String,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    let Some(mut f) = tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(family_id))? else {
        return invalid("The refresh token is invalid.");
    };
    if f.client_id != client_id {
        return invalid("The refresh token was issued to another client.");
    }
    if f.revoked_at.is_some() {
        return invalid("The refresh token has been revoked.");
    }
    if f.spent.iter().any(|h| h == presented) {
        revoke_family(tx, f, at)?;
        return done(OAuth2Applied::FamilyReused);
    }
    if f.current != presented {
        return invalid("The refresh token is invalid.");
    }
    if at >= f.expires_at {
        return invalid("The refresh token's absolute lifetime is over; sign in again.");
    }
    if !parties_enabled(tx, &f.domain_id, &f.client_id, &f.user_id)? {
        revoke_family(tx, f, at)?;
        return done(OAuth2Applied::FamilyRevoked);
    }
    let spent = std::mem::replace(&mut f.current, next);
    f.spent.push(spent);
    if f.spent.len() > MAX_SPENT {
        f.spent.remove(0);
    }
    tx.put(cf::OAUTH2, keys::family(family_id), &f)?;
    oauth2_sessions::record_use(tx, family_id, at)?;
    done(OAuth2Applied::Family(f))
}

fn start_device(tx: &mut Tx<'_>, hash: &str, grant: DeviceGrant) -> Result<ApplyResult, Fatal> {
    let key = keys::device(hash);
    let code_key = keys::user_code(&grant.user_code);
    if tx.get_raw(cf::OAUTH2, &key)?.is_some() || tx.get_raw(cf::OAUTH2, &code_key)?.is_some() {
        return Ok(Err(ApplyError::Conflict("device or user code collision; retry".into())));
    }
    if tx.get::<Client>(cf::OAUTH2, &keys::client(&grant.domain_id, &grant.client_id))?.is_none_or(|c| !c.enabled) {
        return Ok(Err(not_found("oauth2_client", &grant.client_id)));
    }
    tx.batch.put(cf::OAUTH2, code_key.clone(), hash.as_bytes());
    tx.batch.put(cf::OAUTH2, keys::expiry(grant.expires_at, &code_key), &[]);
    tx.batch.put(cf::OAUTH2, keys::expiry(grant.expires_at, &key), &[]);
    tx.put(cf::OAUTH2, key, &grant)?;
    done(OAuth2Applied::Done)
}

fn decide_device(
    tx: &mut Tx<'_>,
    domain_id: &str,
    user_code: &str,
    approve: Option<(String, i64)>,
    consent: Option<Consent>,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    let Some(hash) = tx.get_raw(cf::OAUTH2, &keys::user_code(user_code))? else {
        return invalid("The code is unknown or has expired.");
    };
    let key = keys::device(&String::from_utf8_lossy(&hash));
    let Some(mut grant) = tx.get::<DeviceGrant>(cf::OAUTH2, &key)? else {
        return invalid("The code is unknown or has expired.");
    };
    if grant.domain_id != domain_id || at >= grant.expires_at {
        return invalid("The code is unknown or has expired.");
    }
    if grant.status != DeviceStatus::Pending {
        return invalid("The code has been used already.");
    }
    grant.status = match approve {
        Some((user_id, auth_time)) => {
            if !parties_enabled(tx, domain_id, &grant.client_id, &user_id)? {
                return invalid("The user, the client or the domain is disabled.");
            }
            if let Some(c) = consent {
                put_consent(tx, c)?;
            }
            DeviceStatus::Approved { user_id, auth_time }
        }
        None => DeviceStatus::Denied,
    };
    tx.put(cf::OAUTH2, key, &grant)?;
    done(OAuth2Applied::Done)
}

fn poll_device(
    tx: &mut Tx<'_>,
    hash: &str,
    client_id: &str,
    at: i64,
    issued: Option<Issued>,
    family: Option<RefreshFamily>,
) -> Result<ApplyResult, Fatal> {
    let key = keys::device(hash);
    let Some(mut grant) = tx.get::<DeviceGrant>(cf::OAUTH2, &key)? else {
        return invalid("The device code is invalid.");
    };
    if grant.client_id != client_id {
        return invalid("The device code was issued to another client.");
    }
    if at >= grant.expires_at {
        return done(OAuth2Applied::Device(DevicePoll::Expired));
    }
    let outcome = match grant.status.clone() {
        DeviceStatus::Denied => DevicePoll::Denied,
        DeviceStatus::Redeemed(_) => return invalid("The device code has been used already."),
        DeviceStatus::Pending => {
            let too_soon = grant.last_poll.is_some_and(|last| at - last < grant.interval);
            grant.last_poll = Some(at);
            if too_soon {
                grant.interval += 5;
                DevicePoll::SlowDown { interval: grant.interval }
            } else {
                DevicePoll::Pending
            }
        }
        // Approved after the service read the grant: nothing minted yet, poll again.
        DeviceStatus::Approved { .. } if issued.is_none() => {
            grant.last_poll = Some(at);
            DevicePoll::Pending
        }
        DeviceStatus::Approved { user_id, .. } => {
            if !parties_enabled(tx, &grant.domain_id, &grant.client_id, &user_id)? {
                return invalid("The user, the client or the domain is disabled.");
            }
            if let Some(f) = &family {
                store_family(tx, f)?;
            }
            let approved = grant.clone();
            let Some(issued) = issued else { return invalid("no tokens to issue") };
            grant.status = DeviceStatus::Redeemed(issued);
            DevicePoll::Issued(approved)
        }
    };
    tx.put(cf::OAUTH2, key, &grant)?;
    done(OAuth2Applied::Device(outcome))
}

fn put_consent(tx: &mut Tx<'_>, mut c: Consent) -> Result<(), Fatal> {
    let key = keys::consent(&c.user_id, &c.client_id);
    if let Some(old) = tx.get::<Consent>(cf::OAUTH2, &key)? {
        c.granted_at = old.granted_at;
    }
    tx.put(cf::OAUTH2, key, &c)
}

fn delete_consent(tx: &mut Tx<'_>, user_id: &str, client_id: &str, at: i64) -> Result<ApplyResult, Fatal> {
    let key = keys::consent(user_id, client_id);
    let had_consent = tx.get_raw(cf::OAUTH2, &key)?.is_some();
    tx.delete(cf::OAUTH2, key);
    let prefix = keys::user_client_families_prefix(user_id, client_id);
    let mut had_family = false;
    for (k, _) in tx.scan_raw(cf::OAUTH2, &prefix)? {
        let id = String::from_utf8_lossy(&k[prefix.len()..]).to_string();
        if let Some(f) = tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(&id))? {
            if f.live(at) {
                had_family = true;
                revoke_family(tx, f, at)?;
            }
        }
    }
    if !had_consent && !had_family {
        return Ok(Err(not_found("consent of client", client_id)));
    }
    done(OAuth2Applied::Done)
}

/// Drops records whose time is over, oldest first, through the expiry index.
fn prune(tx: &mut Tx<'_>, at: i64) -> Result<(), Fatal> {
    let due = tx.scan_before(cf::OAUTH2, keys::EXPIRY_PREFIX, &keys::expiry(at, b""), PRUNE_PER_COMMAND)?;
    for (index_key, _) in due {
        if let Some(record) = index_key.get(keys::EXPIRY_PREFIX.len() + 8..) {
            let record = record.to_vec();
            if record.starts_with(keys::FAMILY_PREFIX) {
                if let Some(f) = tx.get::<RefreshFamily>(cf::OAUTH2, &record)? {
                    tx.delete(cf::OAUTH2, keys::user_family(&f.user_id, &f.client_id, &f.id));
                    // Absent before cluster version 15: deleting nothing changes no state.
                    tx.delete(cf::OAUTH2, keys::family_last_used(&f.id));
                }
            } else if record.starts_with(keys::REVOKED_JTI_PREFIX) {
                note_pruned_jti(tx, &record)?;
            }
            tx.delete(cf::OAUTH2, record);
        }
        tx.delete(cf::OAUTH2, index_key);
    }
    Ok(())
}

/// Remembers the latest `exp` of a domain's pruned revoked ids: a token expiring by then that
/// is not listed may have been revoked, so it is refused (`jti_revoked`) even where the local
/// clock still calls it live.
fn note_pruned_jti(tx: &mut Tx<'_>, record: &[u8]) -> Result<(), Fatal> {
    let Some(exp) = tx.get::<i64>(cf::OAUTH2, record)? else { return Ok(()) };
    let rest = &record[keys::REVOKED_JTI_PREFIX.len()..];
    let Some(slash) = rest.iter().position(|b| *b == b'/') else { return Ok(()) };
    let domain_id = String::from_utf8_lossy(&rest[..slash]).into_owned();
    let key = keys::jtis_pruned_through(&domain_id);
    if tx.get::<i64>(cf::OAUTH2, &key)?.is_none_or(|t| t < exp) {
        tx.put(cf::OAUTH2, key, &exp)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "oauth2_tests.rs"]
mod tests;
