//! Canonical smb.conf parameter names. Samba ignores case and spaces in names
//! (`read only` = `readonly` = `Read Only`) and accepts synonyms; this table
//! covers the synonyms that matter for file serving and tuning (smb.conf(5)).

/// Synonyms: (written form without spaces, canonical name).
const SYNONYMS: &[(&str, &str)] = &[
    ("directory", "path"),
    ("public", "guest ok"),
    ("guestonly", "only guest"),
    ("browsable", "browseable"),
    ("createmode", "create mask"),
    ("directorymode", "directory mask"),
    ("printok", "printable"),
    ("allowhosts", "hosts allow"),
    ("denyhosts", "hosts deny"),
    ("maxprotocol", "server max protocol"),
    ("protocol", "server max protocol"),
    ("minprotocol", "server min protocol"),
    ("vfsobject", "vfs objects"),
    ("autoservices", "preload"),
    ("root", "root directory"),
    ("rootdir", "root directory"),
    ("username", "user"),
    ("users", "user"),
    ("lockdir", "lock directory"),
    ("default", "default service"),
    ("exec", "preexec"),
    ("group", "force group"),
    ("maxsmbdprocesses", "max smbd processes"),
];

/// Parameters that mean the opposite of `read only`.
const INVERSE_OF_READ_ONLY: &[&str] = &["writeable", "writable", "writeok"];

/// Canonical names of parameters whose spelling we print nicely; any other
/// parameter keeps its own words, lower-cased with single spaces.
const KNOWN: &[&str] = &[
    "read only",
    "guest ok",
    "server min protocol",
    "server max protocol",
    "client min protocol",
    "client max protocol",
    "socket options",
    "read raw",
    "write raw",
    "max xmit",
    "use sendfile",
    "aio read size",
    "aio write size",
    "strict locking",
    "min receivefile size",
    "kernel oplocks",
    "smb2 leases",
    "max connections",
    "server signing",
    "smb encrypt",
    "server smb encrypt",
    "vfs objects",
    "create mask",
    "directory mask",
    "hosts allow",
    "hosts deny",
    "map to guest",
    "server role",
    "server string",
    "log level",
    "max log size",
    "log file",
    "valid users",
    "force user",
    "write cache size",
    "getwd cache",
];

/// `(canonical name, inverse)`: `inverse` is true when the written name is the
/// boolean opposite of the canonical one (`writeable = yes` is `read only = no`).
pub fn canonical_name(written: &str) -> (String, bool) {
    let compact: String = written
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if INVERSE_OF_READ_ONLY.contains(&compact.as_str()) {
        return ("read only".into(), true);
    }
    if let Some((_, canonical)) = SYNONYMS.iter().find(|(s, _)| *s == compact) {
        return ((*canonical).into(), false);
    }
    // Compared without a copy of each name: this runs for every line read.
    let same = |k: &&&str| k.chars().filter(|c| *c != ' ').eq(compact.chars());
    if let Some(known) = KNOWN.iter().find(same) {
        return ((*known).into(), false);
    }
    let words: Vec<String> = written
        .split_whitespace()
        .map(|w| w.to_lowercase())
        .collect();
    (words.join(" "), false)
}

/// Whether `written` is an inverse synonym of `param` (`writeable` for `read only`).
pub fn is_inverse_synonym(written: &str, param: &str) -> bool {
    let (w, inv_w) = canonical_name(written);
    let (p, inv_p) = canonical_name(param);
    w == p && inv_w != inv_p
}

/// Samba's boolean spellings.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "1" | "on" => Some(true),
        "no" | "false" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// The value of an inverse synonym expressed for the canonical parameter;
/// a value that is not a boolean is kept as written.
pub fn invert(value: &str) -> String {
    match parse_bool(value) {
        Some(b) => if b { "no" } else { "yes" }.into(),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ignore_case_and_spaces() {
        assert_eq!(canonical_name("read only").0, "read only");
        assert_eq!(canonical_name("readonly").0, "read only");
        assert_eq!(canonical_name("Read  Only").0, "read only");
        assert_eq!(canonical_name("SocketOptions").0, "socket options");
        assert_eq!(canonical_name("Some   New Param").0, "some new param");
    }

    #[test]
    fn synonyms_and_inverses() {
        assert_eq!(canonical_name("writable"), ("read only".into(), true));
        assert_eq!(canonical_name("write ok"), ("read only".into(), true));
        assert_eq!(canonical_name("Max Protocol").0, "server max protocol");
        assert_eq!(canonical_name("public").0, "guest ok");
        assert!(is_inverse_synonym("writeable", "read only"));
        assert!(!is_inverse_synonym("readonly", "read only"));
        assert_eq!(invert("Yes"), "no");
        assert_eq!(invert("%S"), "%S");
    }
}
