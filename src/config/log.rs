//! `[log]`: the shape of the node's log lines and whether each API request gets an access
//! line (the log itself is installed by `serve::logging`).

use std::str::FromStr;

use anyhow::bail;

/// The shape of the log's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl FromStr for LogFormat {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => bail!("[log] format = {other:?} is not valid: text or json"),
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    pub format: LogFormat,
    /// The access log (`access`, default on).
    pub access: bool,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings { format: LogFormat::Text, access: true }
    }
}

impl LogSettings {
    pub fn from_settings(s: &crate::config::settings::Settings) -> anyhow::Result<Self> {
        let format = match s.get("log", "format") {
            None => LogFormat::Text,
            Some(v) => v.parse()?,
        };
        Ok(LogSettings { format, access: s.flag("log", "access", true)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Settings;

    fn section(pairs: &[(&str, &str)]) -> anyhow::Result<LogSettings> {
        let mut s = Settings::default();
        for (k, v) in pairs {
            s.set("log", k, v);
        }
        LogSettings::from_settings(&s)
    }

    #[test]
    fn defaults_are_text_with_the_access_log() {
        assert_eq!(section(&[]).unwrap(), LogSettings { format: LogFormat::Text, access: true });
    }

    #[test]
    fn json_and_no_access_log_can_be_chosen() {
        let s = section(&[("format", "JSON"), ("access", "off")]).unwrap();
        assert_eq!(s, LogSettings { format: LogFormat::Json, access: false });
    }

    #[test]
    fn an_unknown_format_names_the_choices() {
        let e = section(&[("format", "xml")]).unwrap_err().to_string();
        assert!(e.contains("[log] format") && e.contains("text or json"), "{e}");
    }
}
