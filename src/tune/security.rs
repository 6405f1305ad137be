//! Which changes lower security, and what they trade: SMB signing or
//! encryption made weaker, TCP timestamps turned off. `tune try` never keeps
//! such a change without `--allow-weaker-security`, and says what it trades.
//! Pure: the kinds read the current value and ask here.

use crate::probe::smb::document::Document;

/// What an SMB security parameter protects, by its name compacted as Samba
/// compares names (lower case, no spaces).
fn smb_protects(compact: &str) -> Option<&'static str> {
    match compact {
        "smbencrypt" | "serversmbencrypt" => {
            Some("SMB encryption: file data crosses the network readable by anyone on the path")
        }
        "clientsmbencrypt" => Some(
            "SMB encryption of this box's client connections: their data is readable on the path",
        ),
        "serversigning" => {
            Some("SMB signing: requests can be altered or relayed by anyone on the path")
        }
        "clientsigning" | "clientipcsigning" => Some(
            "SMB signing of this box's client connections: they can be altered or relayed on the path",
        ),
        _ => None,
    }
}

/// How strongly a signing or encryption value protects: off 0, negotiable 1
/// (Samba's default), preferred 2, required 3; `None` for a value Samba does
/// not know.
pub fn smb_strength(value: Option<&str>) -> Option<u8> {
    let Some(v) = value else {
        return Some(1);
    };
    Some(match v.trim().to_ascii_lowercase().as_str() {
        "off" | "no" | "false" | "disabled" | "0" => 0,
        "default" | "auto" | "if_required" | "if required" => 1,
        "desired" | "enabled" | "yes" | "true" | "1" => 2,
        "required" | "mandatory" | "forced" => 3,
        _ => return None,
    })
}

/// What setting `parameter` of `section` to `new` (`None`: removing it) in
/// the smb.conf `text` trades, when it weakens signing or encryption. A share
/// without its own value uses the global one.
pub fn smb_trade(text: &str, section: &str, parameter: &str, new: Option<&str>) -> Option<String> {
    let compact: String = parameter
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let what = smb_protects(&compact)?;
    let doc = Document::parse(text);
    let old = doc
        .get(section, parameter)
        .or_else(|| doc.get("global", parameter));
    let old = old.as_deref();
    let (before, after) = (smb_strength(old)?, smb_strength(new)?);
    (after < before).then(|| {
        format!(
            "{what} ('{parameter}' '{}' -> '{}')",
            old.unwrap_or("default"),
            new.unwrap_or("default")
        )
    })
}

/// What a sysctl change trades, when it lowers security.
pub fn sysctl_trade(key: &str, old: &str, new: &str) -> Option<String> {
    (key == "net.ipv4.tcp_timestamps" && old.trim() != "0" && new.trim() == "0").then(|| {
        format!(
            "TCP timestamps (net.ipv4.tcp_timestamps '{}' -> '0'): no PAWS protection against \
             old or forged segments accepted into a fast connection's sequence space",
            old.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONF: &str = "[global]\n  smb encrypt = required\n  server signing = mandatory\n[media]\n  path = /srv\n";

    #[test]
    fn weaker_smb_signing_and_encryption_are_trades() {
        let t = smb_trade(CONF, "global", "smb encrypt", Some("off")).unwrap();
        assert_eq!(
            t,
            "SMB encryption: file data crosses the network readable by anyone on the path \
             ('smb encrypt' 'required' -> 'off')"
        );
        assert!(smb_trade(CONF, "global", "smb encrypt", Some("desired")).is_some());
        // A share inherits the global value; removing it falls back to the default.
        assert!(smb_trade(CONF, "media", "Server Signing", Some("auto")).is_some());
        assert!(smb_trade(CONF, "global", "server signing", None).is_some());
        // Stronger, equal or unrelated: no trade.
        assert_eq!(
            smb_trade(CONF, "global", "smb encrypt", Some("mandatory")),
            None
        );
        assert_eq!(
            smb_trade("[global]\n", "global", "smb encrypt", Some("required")),
            None
        );
        assert_eq!(smb_trade(CONF, "global", "use sendfile", Some("no")), None);
        // A value Samba does not know is not judged here (testparm refuses it).
        assert_eq!(
            smb_trade(CONF, "global", "smb encrypt", Some("maybe")),
            None
        );
    }

    #[test]
    fn tcp_timestamps_off_is_a_trade() {
        assert!(sysctl_trade("net.ipv4.tcp_timestamps", "1\n", "0").is_some());
        assert_eq!(sysctl_trade("net.ipv4.tcp_timestamps", "0", "0"), None);
        assert_eq!(sysctl_trade("net.ipv4.tcp_timestamps", "0", "1"), None);
        assert_eq!(sysctl_trade("net.ipv4.tcp_sack", "1", "0"), None);
    }
}
