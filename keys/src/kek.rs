//! The key-encryption key: supplied by the operator (environment or file), never stored in
//! the data directory unless the operator lets `idnode serve` create a development key file.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use zeroize::Zeroizing;

use crate::{random_bytes, KeyError, KEY_LEN};

pub struct Kek(pub(crate) Zeroizing<[u8; KEY_LEN]>);

/// Where the KEK came from, so the node can warn about a generated key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KekSource {
    Environment,
    File(PathBuf),
    Generated(PathBuf),
}

impl Kek {
    /// Decodes a base64 (standard or URL-safe) 32-byte key.
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let raw = STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
            .map_err(|_| KeyError::InvalidKek("not base64".into()))?;
        let arr: [u8; KEY_LEN] =
            raw.try_into().map_err(|_| KeyError::InvalidKek("must decode to exactly 32 bytes".into()))?;
        Ok(Kek(Zeroizing::new(arr)))
    }

    /// Resolution order: the environment value, then the file; when neither exists and
    /// `generate` is set, a new key is written to the file (mode 0600).
    pub fn load(env: Option<&str>, file: &Path, generate: bool) -> Result<(Self, KekSource), KeyError> {
        if let Some(v) = env.filter(|v| !v.trim().is_empty()) {
            return Ok((Self::from_base64(v)?, KekSource::Environment));
        }
        let file_err = |reason: String| KeyError::KeyFile { path: file.display().to_string(), reason };
        match std::fs::read_to_string(file) {
            Ok(text) => Ok((Self::from_base64(&text)?, KekSource::File(file.to_path_buf()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && generate => {
                let key: [u8; KEY_LEN] = random_bytes();
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| file_err(e.to_string()))?;
                }
                write_private(file, STANDARD.encode(key).as_bytes()).map_err(|e| file_err(e.to_string()))?;
                Ok((Kek(Zeroizing::new(key)), KekSource::Generated(file.to_path_buf())))
            }
            Err(e) => Err(file_err(e.to_string())),
        }
    }

    pub fn generate() -> Self {
        Kek(Zeroizing::new(random_bytes()))
    }

    pub fn to_base64(&self) -> String {
        STANDARD.encode(*self.0)
    }
}

/// Writes a file readable only by its owner.
pub(crate) fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_from_env_file_or_generates() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kek");
        assert!(Kek::load(None, &file, false).is_err());
        let (k1, src) = Kek::load(None, &file, true).unwrap();
        assert_eq!(src, KekSource::Generated(file.clone()));
        let (k2, src) = Kek::load(None, &file, true).unwrap();
        assert_eq!(src, KekSource::File(file.clone()));
        assert_eq!(*k1.0, *k2.0);
        let (k3, src) = Kek::load(Some(&k1.to_base64()), Path::new("/nonexistent"), false).unwrap();
        assert_eq!(src, KekSource::Environment);
        assert_eq!(*k3.0, *k1.0);
        assert!(Kek::from_base64("c2hvcnQ=").is_err());
    }
}
