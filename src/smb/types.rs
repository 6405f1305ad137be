//! The plain values of the SMB client that documents record and the CLI
//! parses; compiled without the `smb` feature too, so stored runs decode.

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Dialect {
    #[serde(rename = "2.0.2")]
    Smb202,
    #[serde(rename = "2.1")]
    Smb21,
    #[serde(rename = "3.0")]
    Smb30,
    #[serde(rename = "3.0.2")]
    Smb302,
    #[serde(rename = "3.1.1")]
    Smb311,
}

impl Dialect {
    pub const ALL: [Dialect; 5] = [
        Dialect::Smb202,
        Dialect::Smb21,
        Dialect::Smb30,
        Dialect::Smb302,
        Dialect::Smb311,
    ];

    pub fn code(self) -> u16 {
        match self {
            Dialect::Smb202 => 0x0202,
            Dialect::Smb21 => 0x0210,
            Dialect::Smb30 => 0x0300,
            Dialect::Smb302 => 0x0302,
            Dialect::Smb311 => 0x0311,
        }
    }
    pub fn from_code(c: u16) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.code() == c)
    }
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Smb202 => "2.0.2",
            Dialect::Smb21 => "2.1",
            Dialect::Smb30 => "3.0",
            Dialect::Smb302 => "3.0.2",
            Dialect::Smb311 => "3.1.1",
        }
    }
    pub fn parse(s: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.name() == s)
    }
    pub fn is_smb3(self) -> bool {
        self >= Dialect::Smb30
    }
}

/// What the client insists on; the server may still demand more (signing
/// required, encryption required), which the client then does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Security {
    Plain,
    Sign,
    Encrypt,
}

impl Security {
    pub fn name(self) -> &'static str {
        match self {
            Security::Plain => "plain",
            Security::Sign => "sign",
            Security::Encrypt => "encrypt",
        }
    }
}

/// What was negotiated: recorded with every run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionInfo {
    pub dialect: Dialect,
    /// None when messages are not signed (plain, or encrypted instead).
    pub signing: Option<SigningAlg>,
    pub cipher: Option<Cipher>,
    pub max_read_bytes: u32,
    pub max_write_bytes: u32,
    pub max_transact_bytes: u32,
    /// Credits the server granted by the end of the tree connect.
    pub credits_granted: u32,
    pub guest: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SigningAlg {
    HmacSha256,
    AesCmac,
    AesGmac,
}

impl SigningAlg {
    pub fn name(self) -> &'static str {
        match self {
            SigningAlg::HmacSha256 => "HMAC-SHA256",
            SigningAlg::AesCmac => "AES-128-CMAC",
            SigningAlg::AesGmac => "AES-128-GMAC",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cipher {
    Aes128Ccm,
    Aes128Gcm,
}

impl Cipher {
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Ccm => "AES-128-CCM",
            Cipher::Aes128Gcm => "AES-128-GCM",
        }
    }
    pub fn nonce_len(self) -> usize {
        match self {
            Cipher::Aes128Ccm => 11,
            Cipher::Aes128Gcm => 12,
        }
    }
}

/// Who logs on: a user with a password, or nobody (anonymous, which Samba
/// maps to guest where the share allows it).
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    Anonymous,
    User {
        user: String,
        domain: String,
        password: String,
    },
}

impl std::fmt::Debug for Credentials {
    // Never print the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => write!(f, "Anonymous"),
            Credentials::User { user, domain, .. } => write!(f, "User({domain}\\{user})"),
        }
    }
}
