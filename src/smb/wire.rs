//! SMB2 on the wire: the direct-TCP frame, the 64-byte header, the transform
//! header, compound splitting and the response bodies the client reads. Pure
//! functions on byte slices: every length the server sends is checked against
//! the bytes actually there before it is used.

use super::Error;

pub const HEADER_LEN: usize = 64;
pub const TRANSFORM_LEN: usize = 52;
pub const PROTOCOL_SMB2: [u8; 4] = [0xFE, b'S', b'M', b'B'];
pub const PROTOCOL_SMB1: [u8; 4] = [0xFF, b'S', b'M', b'B'];
pub const PROTOCOL_TRANSFORM: [u8; 4] = [0xFD, b'S', b'M', b'B'];

pub const FLAG_SERVER_TO_REDIR: u32 = 0x1;
pub const FLAG_ASYNC: u32 = 0x2;
pub const FLAG_SIGNED: u32 = 0x8;

/// Responses in one compound frame we accept; a chain longer than this is hostile.
pub const MAX_COMPOUND: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Command {
    Negotiate = 0,
    SessionSetup = 1,
    Logoff = 2,
    TreeConnect = 3,
    TreeDisconnect = 4,
    Create = 5,
    Close = 6,
    Flush = 7,
    Read = 8,
    Write = 9,
    QueryDirectory = 0x0E,
    QueryInfo = 0x10,
    SetInfo = 0x11,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Negotiate => "NEGOTIATE",
            Command::SessionSetup => "SESSION_SETUP",
            Command::Logoff => "LOGOFF",
            Command::TreeConnect => "TREE_CONNECT",
            Command::TreeDisconnect => "TREE_DISCONNECT",
            Command::Create => "CREATE",
            Command::Close => "CLOSE",
            Command::Flush => "FLUSH",
            Command::Read => "READ",
            Command::Write => "WRITE",
            Command::QueryDirectory => "QUERY_DIRECTORY",
            Command::QueryInfo => "QUERY_INFO",
            Command::SetInfo => "SET_INFO",
        }
    }
}

/// NT status codes the client acts on.
pub mod status {
    pub const SUCCESS: u32 = 0;
    pub const PENDING: u32 = 0x0000_0103;
    pub const NO_MORE_FILES: u32 = 0x8000_0006;
    pub const MORE_PROCESSING_REQUIRED: u32 = 0xC000_0016;
    pub const END_OF_FILE: u32 = 0xC000_0011;
    pub const ACCESS_DENIED: u32 = 0xC000_0022;
    pub const OBJECT_NAME_NOT_FOUND: u32 = 0xC000_0034;
    pub const OBJECT_NAME_COLLISION: u32 = 0xC000_0035;
    pub const OBJECT_PATH_NOT_FOUND: u32 = 0xC000_003A;
    pub const LOGON_FAILURE: u32 = 0xC000_006D;
    pub const ACCOUNT_DISABLED: u32 = 0xC000_0072;
    pub const DISK_FULL: u32 = 0xC000_007F;
    pub const MEDIA_WRITE_PROTECTED: u32 = 0xC000_00A2;
    pub const NOT_SUPPORTED: u32 = 0xC000_00BB;
    pub const BAD_NETWORK_NAME: u32 = 0xC000_00CC;
    pub const USER_SESSION_DELETED: u32 = 0xC000_0203;
    pub const QUOTA_EXCEEDED: u32 = 0xC000_0044;

    pub fn name(s: u32) -> &'static str {
        match s {
            SUCCESS => "STATUS_SUCCESS",
            PENDING => "STATUS_PENDING",
            NO_MORE_FILES => "STATUS_NO_MORE_FILES",
            MORE_PROCESSING_REQUIRED => "STATUS_MORE_PROCESSING_REQUIRED",
            END_OF_FILE => "STATUS_END_OF_FILE",
            ACCESS_DENIED => "STATUS_ACCESS_DENIED",
            OBJECT_NAME_NOT_FOUND => "STATUS_OBJECT_NAME_NOT_FOUND",
            OBJECT_NAME_COLLISION => "STATUS_OBJECT_NAME_COLLISION",
            OBJECT_PATH_NOT_FOUND => "STATUS_OBJECT_PATH_NOT_FOUND",
            LOGON_FAILURE => "STATUS_LOGON_FAILURE",
            ACCOUNT_DISABLED => "STATUS_ACCOUNT_DISABLED",
            DISK_FULL => "STATUS_DISK_FULL",
            MEDIA_WRITE_PROTECTED => "STATUS_MEDIA_WRITE_PROTECTED",
            NOT_SUPPORTED => "STATUS_NOT_SUPPORTED",
            BAD_NETWORK_NAME => "STATUS_BAD_NETWORK_NAME",
            USER_SESSION_DELETED => "STATUS_USER_SESSION_DELETED",
            QUOTA_EXCEEDED => "STATUS_QUOTA_EXCEEDED",
            _ => "unknown status",
        }
    }
}

pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn violation(what: impl Into<String>) -> Error {
    Error::Protocol(what.into())
}

/// The length a direct-TCP frame header announces (RFC 1002 session message
/// type 0, 24-bit length), bounded by `max` before anything is allocated.
pub fn frame_len(head: [u8; 4], max: usize) -> Result<usize, Error> {
    if head[0] != 0 {
        return Err(violation(format!(
            "frame type 0x{:02x} is not a session message (is this an SMB server?)",
            head[0]
        )));
    }
    let len = usize::from(head[1]) << 16 | usize::from(head[2]) << 8 | usize::from(head[3]);
    if len > max {
        return Err(violation(format!(
            "frame of {len} bytes exceeds the {max} bytes negotiated"
        )));
    }
    if len < 4 {
        return Err(violation(format!("frame of {len} bytes is too short")));
    }
    Ok(len)
}

pub fn frame_head(len: usize) -> [u8; 4] {
    let l = len as u32;
    [0, (l >> 16) as u8, (l >> 8) as u8, l as u8]
}

/// The fixed header of one SMB2 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub credit_charge: u16,
    pub status: u32,
    pub command: u16,
    pub credits: u16,
    pub flags: u32,
    pub next_command: u32,
    pub message_id: u64,
    pub async_id: u64,
    pub tree_id: u32,
    pub session_id: u64,
    pub signature: [u8; 16],
}

impl Header {
    pub fn parse(b: &[u8]) -> Result<Header, Error> {
        if b.len() < HEADER_LEN {
            return Err(violation(format!(
                "message of {} bytes is shorter than the SMB2 header",
                b.len()
            )));
        }
        if b[..4] == PROTOCOL_SMB1 {
            return Err(Error::Smb1Only);
        }
        if b[..4] != PROTOCOL_SMB2 {
            return Err(violation(format!(
                "message starts with {:02x?}, not an SMB2 header",
                &b[..4]
            )));
        }
        let r16 = |at| u16_at(b, at).unwrap_or(0);
        let r32 = |at| u32_at(b, at).unwrap_or(0);
        let r64 = |at| u64_at(b, at).unwrap_or(0);
        if r16(4) != 64 {
            return Err(violation(format!("header structure size {}", r16(4))));
        }
        let flags = r32(16);
        let mut signature = [0u8; 16];
        signature.copy_from_slice(&b[48..64]);
        Ok(Header {
            credit_charge: r16(6),
            status: r32(8),
            command: r16(12),
            credits: r16(14),
            flags,
            next_command: r32(20),
            message_id: r64(24),
            async_id: if flags & FLAG_ASYNC != 0 { r64(32) } else { 0 },
            tree_id: if flags & FLAG_ASYNC != 0 { 0 } else { r32(36) },
            session_id: r64(40),
            signature,
        })
    }
}

/// Writes a request header into `out` (64 bytes appended).
#[allow(clippy::too_many_arguments)]
pub fn put_header(
    out: &mut Vec<u8>,
    command: Command,
    credit_charge: u16,
    credits_wanted: u16,
    flags: u32,
    message_id: u64,
    tree_id: u32,
    session_id: u64,
) {
    out.extend_from_slice(&PROTOCOL_SMB2);
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&credit_charge.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(command as u16).to_le_bytes());
    out.extend_from_slice(&credits_wanted.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&message_id.to_le_bytes());
    out.extend_from_slice(&0xFEFFu32.to_le_bytes());
    out.extend_from_slice(&tree_id.to_le_bytes());
    out.extend_from_slice(&session_id.to_le_bytes());
    out.extend_from_slice(&[0u8; 16]);
}

/// Splits a decrypted or plain frame into its compound messages (by
/// NextCommand). Each next offset must leave room for a header and move
/// forward inside the frame, so a chain can neither loop nor run off the end.
pub fn split_compound(frame: &[u8]) -> Result<Vec<std::ops::Range<usize>>, Error> {
    let mut out = Vec::new();
    let mut start = 0usize;
    loop {
        let rest = &frame[start..];
        let h = Header::parse(rest)?;
        if h.next_command == 0 {
            out.push(start..frame.len());
            return Ok(out);
        }
        let next = h.next_command as usize;
        if next < HEADER_LEN || !next.is_multiple_of(8) || next >= rest.len() {
            return Err(violation(format!(
                "compound NextCommand {next} at offset {start} does not point to a following message in the {}-byte frame",
                frame.len()
            )));
        }
        out.push(start..start + next);
        if out.len() >= MAX_COMPOUND {
            return Err(violation(format!(
                "compound chain longer than {MAX_COMPOUND} messages"
            )));
        }
        start += next;
    }
}

/// The transform header of an encrypted frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    pub signature: [u8; 16],
    pub nonce: [u8; 16],
    pub original_size: u32,
    pub session_id: u64,
}

impl Transform {
    pub fn parse(b: &[u8]) -> Result<Transform, Error> {
        if b.len() < TRANSFORM_LEN || b[..4] != PROTOCOL_TRANSFORM {
            return Err(violation("short or malformed transform header"));
        }
        let mut signature = [0u8; 16];
        signature.copy_from_slice(&b[4..20]);
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&b[20..36]);
        let original_size = u32_at(b, 36).unwrap_or(0);
        if original_size as usize != b.len() - TRANSFORM_LEN {
            return Err(violation(format!(
                "transform header says {original_size} bytes, frame carries {}",
                b.len() - TRANSFORM_LEN
            )));
        }
        Ok(Transform {
            signature,
            nonce,
            original_size,
            session_id: u64_at(b, 44).unwrap_or(0),
        })
    }
}

/// The body of a response after the header, checked for its structure size.
pub fn body(msg: &[u8], want_size: u16, command: Command) -> Result<&[u8], Error> {
    let b = &msg[HEADER_LEN.min(msg.len())..];
    let size = u16_at(b, 0)
        .ok_or_else(|| violation(format!("{} response has no body", command.name())))?;
    // The low bit of the structure size marks a variable part; a fixed part
    // shorter than announced is a violation.
    if size != want_size || b.len() < usize::from(want_size & !1) {
        return Err(violation(format!(
            "{} response structure size {size} in {} bytes, expected {want_size}",
            command.name(),
            b.len()
        )));
    }
    Ok(b)
}

/// A buffer inside the message addressed by (offset from the header start, length).
pub fn buffer<'a>(msg: &'a [u8], offset: usize, len: usize, what: &str) -> Result<&'a [u8], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    msg.get(offset..offset.saturating_add(len)).ok_or_else(|| {
        violation(format!(
            "{what}: {len} bytes at offset {offset} lie outside the {}-byte message",
            msg.len()
        ))
    })
}

/// The error response body (structure size 9) is tolerated for any command.
pub fn is_error_body(msg: &[u8]) -> bool {
    u16_at(msg, HEADER_LEN) == Some(9)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NegotiateResponse {
    pub security_mode: u16,
    pub dialect: u16,
    pub server_guid: [u8; 16],
    pub capabilities: u32,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    pub security_blob_len: usize,
    /// (context type, data) of each negotiate context (3.1.1).
    pub contexts: Vec<(u16, Vec<u8>)>,
}

pub fn parse_negotiate(msg: &[u8]) -> Result<NegotiateResponse, Error> {
    let b = body(msg, 65, Command::Negotiate)?;
    let r16 = |at| u16_at(b, at).unwrap_or(0);
    let r32 = |at| u32_at(b, at).unwrap_or(0);
    let mut server_guid = [0u8; 16];
    server_guid.copy_from_slice(&b[8..24]);
    let mut n = NegotiateResponse {
        security_mode: r16(2),
        dialect: r16(4),
        server_guid,
        capabilities: r32(24),
        max_transact: r32(28),
        max_read: r32(32),
        max_write: r32(36),
        security_blob_len: usize::from(r16(58)),
        contexts: Vec::new(),
    };
    buffer(
        msg,
        usize::from(r16(56)),
        n.security_blob_len,
        "NEGOTIATE security buffer",
    )?;
    let count = usize::from(r16(6));
    if n.dialect == 0x0311 && count > 0 {
        let mut at = r32(60) as usize;
        for i in 0..count {
            let head = buffer(msg, at, 8, "negotiate context")?;
            let ty = u16_at(head, 0).unwrap_or(0);
            let len = usize::from(u16_at(head, 2).unwrap_or(0));
            let data = buffer(msg, at + 8, len, "negotiate context data")?;
            n.contexts.push((ty, data.to_vec()));
            if i + 1 < count {
                at = (at + 8 + len).next_multiple_of(8);
            }
        }
    }
    Ok(n)
}

/// SESSION_SETUP response: (session flags, security blob).
pub fn parse_session_setup(msg: &[u8]) -> Result<(u16, &[u8]), Error> {
    let b = body(msg, 9, Command::SessionSetup)?;
    let flags = u16_at(b, 2).unwrap_or(0);
    let off = usize::from(u16_at(b, 4).unwrap_or(0));
    let len = usize::from(u16_at(b, 6).unwrap_or(0));
    Ok((
        flags,
        buffer(msg, off, len, "SESSION_SETUP security buffer")?,
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeConnectResponse {
    pub share_type: u8,
    pub share_flags: u32,
    pub capabilities: u32,
    pub maximal_access: u32,
}

pub fn parse_tree_connect(msg: &[u8]) -> Result<TreeConnectResponse, Error> {
    let b = body(msg, 16, Command::TreeConnect)?;
    Ok(TreeConnectResponse {
        share_type: b[2],
        share_flags: u32_at(b, 4).unwrap_or(0),
        capabilities: u32_at(b, 8).unwrap_or(0),
        maximal_access: u32_at(b, 12).unwrap_or(0),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileId {
    pub persistent: u64,
    pub volatile: u64,
}

impl FileId {
    pub fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.persistent.to_le_bytes());
        out.extend_from_slice(&self.volatile.to_le_bytes());
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateResponse {
    pub create_action: u32,
    pub end_of_file: u64,
    pub attributes: u32,
    pub file_id: FileId,
}

pub fn parse_create(msg: &[u8]) -> Result<CreateResponse, Error> {
    let b = body(msg, 89, Command::Create)?;
    Ok(CreateResponse {
        create_action: u32_at(b, 4).unwrap_or(0),
        end_of_file: u64_at(b, 48).unwrap_or(0),
        attributes: u32_at(b, 56).unwrap_or(0),
        file_id: FileId {
            persistent: u64_at(b, 64).unwrap_or(0),
            volatile: u64_at(b, 72).unwrap_or(0),
        },
    })
}

/// READ response: the data, which must not exceed what was asked for.
pub fn parse_read(msg: &[u8], asked: usize) -> Result<std::ops::Range<usize>, Error> {
    let b = body(msg, 17, Command::Read)?;
    let off = usize::from(b[2]);
    let len = u32_at(b, 4).unwrap_or(0) as usize;
    if len > asked {
        return Err(violation(format!(
            "READ response carries {len} bytes for a request of {asked}"
        )));
    }
    if len == 0 {
        // An empty read may carry any offset; the range handed out must
        // still lie inside the message (found by the fuzzer).
        return Ok(0..0);
    }
    buffer(msg, off, len, "READ data")?;
    Ok(off..off + len)
}

/// WRITE response: the count written.
pub fn parse_write(msg: &[u8]) -> Result<u32, Error> {
    let b = body(msg, 17, Command::Write)?;
    Ok(u32_at(b, 4).unwrap_or(0))
}

/// QUERY_DIRECTORY / QUERY_INFO response: the output buffer.
pub fn parse_output_buffer(msg: &[u8], command: Command, max: usize) -> Result<&[u8], Error> {
    let b = body(msg, 9, command)?;
    let off = usize::from(u16_at(b, 2).unwrap_or(0));
    let len = u32_at(b, 4).unwrap_or(0) as usize;
    if len > max {
        return Err(violation(format!(
            "{} output of {len} bytes exceeds the {max} asked for",
            command.name()
        )));
    }
    buffer(msg, off, len, "output buffer")
}

/// One entry of a FileDirectoryInformation listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub end_of_file: u64,
    pub attributes: u32,
}

pub const ATTR_DIRECTORY: u32 = 0x10;

/// Parses FileDirectoryInformation entries (class 1). Entries chain by a
/// forward NextEntryOffset; one that does not advance ends in an error.
pub fn parse_directory(buf: &[u8]) -> Result<Vec<DirEntry>, Error> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < buf.len() {
        let e = &buf[at..];
        let next = u32_at(e, 0).ok_or_else(|| violation("directory entry truncated"))? as usize;
        let name_len =
            u32_at(e, 60).ok_or_else(|| violation("directory entry truncated"))? as usize;
        let name = buffer(e, 64, name_len, "directory entry name")?;
        out.push(DirEntry {
            name: utf16_to_string(name),
            end_of_file: u64_at(e, 40).unwrap_or(0),
            attributes: u32_at(e, 56).unwrap_or(0),
        });
        if next == 0 {
            break;
        }
        if next < 64 || !next.is_multiple_of(8) {
            return Err(violation(format!("directory NextEntryOffset {next}")));
        }
        at += next;
    }
    Ok(out)
}

pub fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

pub fn utf16_to_string(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(next: u32) -> Vec<u8> {
        let mut v = Vec::new();
        put_header(&mut v, Command::Read, 1, 1, FLAG_SERVER_TO_REDIR, 7, 1, 2);
        v[20..24].copy_from_slice(&next.to_le_bytes());
        v
    }

    #[test]
    fn header_round_trip() {
        let v = header(0);
        let h = Header::parse(&v).expect("parse");
        assert_eq!(h.command, Command::Read as u16);
        assert_eq!(h.message_id, 7);
        assert_eq!(h.tree_id, 1);
        assert_eq!(h.session_id, 2);
    }

    #[test]
    fn smb1_answer_is_named() {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(&PROTOCOL_SMB1);
        assert!(matches!(Header::parse(&v), Err(Error::Smb1Only)));
    }

    #[test]
    fn frame_length_is_bounded() {
        assert_eq!(frame_len([0, 0, 1, 0], 1024).expect("ok"), 256);
        assert!(frame_len([0, 0xff, 0xff, 0xff], 1 << 20).is_err());
        assert!(frame_len([0x85, 0, 0, 0], 1 << 20).is_err());
        assert_eq!(frame_head(0x01_02_03), [0, 1, 2, 3]);
    }

    #[test]
    fn compound_chain_must_advance() {
        let mut two = header(64);
        two.extend(header(0));
        assert_eq!(split_compound(&two).expect("two").len(), 2);
        // Pointing at itself or short of a header: a loop, refused.
        for bad in [8, 32, 128, 65] {
            let mut f = header(bad);
            f.extend(header(0));
            assert!(split_compound(&f).is_err(), "NextCommand {bad}");
        }
    }

    #[test]
    fn read_longer_than_asked_is_refused() {
        let mut m = header(0);
        let mut b = vec![0u8; 16];
        b[0] = 17;
        b[2] = 80;
        b[4..8].copy_from_slice(&100u32.to_le_bytes());
        m.extend(b);
        m.extend(vec![0u8; 100]);
        assert!(parse_read(&m, 50).is_err());
        assert_eq!(parse_read(&m, 100).expect("fits"), 80..180);
        m.truncate(150);
        assert!(parse_read(&m, 100).is_err());
    }

    #[test]
    fn directory_entries_parse_and_stop() {
        let mut e = vec![0u8; 64];
        e[40..48].copy_from_slice(&5u64.to_le_bytes());
        e[60..64].copy_from_slice(&4u32.to_le_bytes());
        e.extend(utf16("ab"));
        let v = parse_directory(&e).expect("one");
        assert_eq!(v[0].name, "ab");
        assert_eq!(v[0].end_of_file, 5);
        e[0..4].copy_from_slice(&3u32.to_le_bytes());
        assert!(parse_directory(&e).is_err());
    }
}
