//! Credentials (`credential`), EC2 ones included: Keystone seals each blob with a fernet key of
//! its credential key repository (`[credential] key_repository`); they are opened here with
//! that repository and travel as the clear blob, which idnode seals at rest with its own keys.
//! A blob no key opens stops the import before anything is written: a wrong repository.

use anyhow::{bail, Context};

use super::db::Db;
use super::source::{extra_json, Source};
use crate::state::import::ImportRecord;
use crate::state::model::Credential;

/// Opens blobs with every key of a credential key repository.
pub struct CredentialKeys {
    keys: fernet::MultiFernet,
    shown: String,
}

impl CredentialKeys {
    /// `keys`: the repository's keys as `idnode_keys::keystone_fernet` reads them.
    pub fn new(keys: &[String], shown: &str) -> anyhow::Result<CredentialKeys> {
        let mut ring = Vec::new();
        for k in keys {
            match fernet::Fernet::new(k.trim()) {
                Some(f) => ring.push(f),
                None => bail!("{shown}: a key is not a fernet key (32 url-safe base64 bytes)"),
            }
        }
        if ring.is_empty() {
            bail!("{shown}: the credential key repository holds no key");
        }
        Ok(CredentialKeys { keys: fernet::MultiFernet::new(ring), shown: shown.to_string() })
    }

    fn open(&self, id: &str, sealed: &str) -> anyhow::Result<String> {
        let clear = self.keys.decrypt(sealed.trim()).map_err(|_| {
            anyhow::anyhow!(
                "credential {id}: no key of {} opens its blob (is it the credential key repository of this \
                 Keystone?)",
                self.shown
            )
        })?;
        String::from_utf8(clear).with_context(|| format!("credential {id}: its blob is not text"))
    }
}

pub async fn read(db: &Db, src: &mut Source, keys: Option<&CredentialKeys>) -> anyhow::Result<()> {
    let cols = ["id", "user_id", "project_id", "type", "extra", "encrypted_blob"];
    let rows = db.rows("credential", &cols, "ORDER BY `id`").await?;
    if rows.is_empty() {
        return Ok(());
    }
    let Some(keys) = keys else {
        bail!(
            "Keystone's database holds {} credentials, sealed with its credential keys: give --credential-keys DIR \
             (its [credential] key_repository)",
            rows.len()
        );
    };
    for r in rows {
        let id = r.text("id");
        let mut blob = keys.open(&id, r.opt("encrypted_blob").unwrap_or_default())?;
        if r.opt("type") == Some("ec2") {
            blob = ec2_blob(&id, &blob)?;
        }
        src.push(ImportRecord::Credential(Credential {
            user_id: r.text("user_id"),
            project_id: r.opt("project_id").map(str::to_string),
            cred_type: r.text("type"),
            blob,
            extra: extra_json(r.opt("extra")),
            id,
        }));
    }
    Ok(())
}

/// Keystone seals an EC2 credential's blob JSON-encoded once more (its `_encrypt_credential`
/// dumps the blob, itself JSON text, again); the blob the API shows is the text inside.
fn ec2_blob(id: &str, sealed_text: &str) -> anyhow::Result<String> {
    match serde_json::from_str::<serde_json::Value>(sealed_text) {
        Ok(serde_json::Value::String(inner)) => Ok(inner),
        Ok(serde_json::Value::Object(o)) => Ok(serde_json::Value::Object(o).to_string()),
        _ => bail!("credential {id}: its EC2 blob is not JSON"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ec2_blob_loses_keystones_extra_encoding() {
        let sealed = r#""{\"access\": \"a\", \"secret\": \"s\", \"trust_id\": null}""#;
        assert_eq!(ec2_blob("x", sealed).unwrap(), r#"{"access": "a", "secret": "s", "trust_id": null}"#);
        assert_eq!(ec2_blob("x", r#"{"access":"a"}"#).unwrap(), r#"{"access":"a"}"#);
        assert!(ec2_blob("x", "not json").is_err());
    }
}
