//! A minimal SMB2/SMB3 client for `nastune bench smb`: synchronous, blocking
//! sockets with a deadline on every read, every length from the server bounded
//! before it is used. Our own rather than the `smb` crate, whose tokio, binrw
//! and sspi stack (275 crates) would not fit a 4 MiB binary; see
//! docs/ARCHITECTURE.md.
//!
//! - [`wire`]: framing, headers and response bodies (pure, fuzzed);
//! - [`crypto`]: NTLMv2, key derivation, signing, encryption (known answers);
//! - [`ntlm`]: the NTLMSSP messages;
//! - [`client`]: negotiate, session, tree, file operations, pipelined I/O.

#[cfg(feature = "smb")]
pub mod client;
#[cfg(feature = "smb")]
pub mod crypto;
pub mod fuzz;
#[cfg(feature = "smb")]
pub mod ntlm;
pub mod types;
pub mod wire;

#[cfg(feature = "smb")]
pub use client::{Client, Config, FileHandle};
pub use types::{Cipher, Credentials, Dialect, Security, SessionInfo, SigningAlg};

/// What went wrong talking to an SMB server, with what to change.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "cannot connect to '{addr}': {cause}; check the host, the port (445) and that smbd runs"
    )]
    Connect { addr: String, cause: std::io::Error },
    #[error("I/O with '{addr}' failed: {cause}")]
    Io { addr: String, cause: std::io::Error },
    #[error(
        "no answer from '{addr}' within {secs} s ({what}); check the server's load and the network"
    )]
    Timeout {
        addr: String,
        secs: u64,
        what: String,
    },
    #[error("the server '{addr}' closed the connection {what}")]
    Closed {
        addr: String,
        what: String,
        /// Whether part of a message had arrived.
        mid_message: bool,
    },
    #[error("interrupted")]
    Interrupted,
    #[error(
        "the server speaks only SMB1 (or no dialect this client offers); enable SMB2 on it: 'server min protocol = SMB2_02' or higher in smb.conf"
    )]
    Smb1Only,
    #[error("logon failed for user '{user}': check --user and the password")]
    LogonFailure { user: String },
    /// A guest (anonymous) session refused: Samba refuses guests when it
    /// requires encryption or signing, which a guest session cannot do.
    #[error(
        "the server refused a guest session: it may allow no guests ('map to guest', 'guest ok') or require encryption or signing ('smb encrypt = required', 'server signing = mandatory'), which a guest session cannot do; log on with --user"
    )]
    GuestRefused,
    #[error(
        "share '{share}' does not exist on the server: check the share name (smbclient -L //HOST)"
    )]
    BadNetworkName { share: String },
    #[error(
        "access denied to '{path}' ({status}): the share is read-only or the user may not write there; use a writable share or directory"
    )]
    AccessDenied { path: String, status: &'static str },
    #[error("the share is full writing '{path}': free space on it or pass a smaller --size")]
    DiskFull { path: String },
    #[error("'{path}' already exists on the share; remove it or choose another directory")]
    Exists { path: String },
    #[error("protocol violation by the server: {0}")]
    Protocol(String),
    #[error("the server answered {command} for '{path}' with {name} (0x{status:08x})")]
    Status {
        command: &'static str,
        path: String,
        status: u32,
        name: &'static str,
    },
    #[error("{0}")]
    Unsupported(String),
}

impl Error {
    /// The NT status behind an error the server answered, if any.
    pub fn status(&self) -> Option<u32> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}
