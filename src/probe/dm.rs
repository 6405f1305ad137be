//! Device-mapper devices: name and uuid from /sys/block/dm-N/dm, the kind of
//! target from the uuid prefix that cryptsetup, LVM and multipath set, and for
//! LUKS the cipher and sector size from the public on-disk header. Nothing here
//! touches key material: the kernel's crypt table is never asked for.

use serde::{Deserialize, Serialize};

use super::ParseError;
use crate::root::Root;

/// Bytes of the underlying device read for a LUKS header: the LUKS1 header
/// (592 bytes) or the LUKS2 binary header plus its default 12 KiB JSON area.
/// Keyslot material starts at 32 KiB and is never read.
pub const LUKS_HEAD_BYTES: u64 = 16 * 1024;
const LUKS_MAGIC: &[u8; 6] = b"LUKS\xba\xbe";
const LUKS2_JSON_OFFSET: usize = 4096;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DmDevice {
    /// Kernel name, `dm-0`.
    pub device: String,
    /// Mapper name, `/dev/mapper/<name>`.
    pub name: Option<String>,
    pub uuid: Option<String>,
    /// `crypt`, `verity`, `integrity`, `multipath`; `None` when the uuid does not say.
    pub target_type: Option<String>,
    /// Who made it: `luks1`, `luks2`, `plain`, `lvm`, `multipath`, …
    pub format: Option<String>,
    pub slaves: Vec<String>,
    pub crypt: Option<Crypt>,
    /// Why `crypt` is missing on a crypt device.
    pub crypt_unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Crypt {
    /// `aes-xts-plain64`.
    pub cipher: String,
    pub key_bits: Option<u64>,
    /// Encryption sector size (512 or 4096).
    pub sector_bytes: u64,
    /// Where it was read: `luks2 header on sda1`.
    pub source: String,
}

/// `(target_type, format)` from a device-mapper uuid.
pub fn kind_from_uuid(uuid: &str) -> (Option<String>, Option<String>) {
    let s = |v: &str| Some(v.to_string());
    if let Some(rest) = uuid.strip_prefix("CRYPT-") {
        let format = rest.split('-').next().unwrap_or("").to_ascii_lowercase();
        let target = match format.as_str() {
            "verity" => "verity",
            "integrity" => "integrity",
            _ => "crypt",
        };
        return (s(target), Some(format));
    }
    if uuid.starts_with("LVM-") {
        // LVM volumes are linear, striped, raid, thin…: the uuid does not say which.
        return (None, s("lvm"));
    }
    if uuid.starts_with("mpath-") {
        return (s("multipath"), s("multipath"));
    }
    if uuid.starts_with("part") && uuid.contains("-mpath-") {
        return (s("linear"), s("multipath-partition"));
    }
    (None, None)
}

/// Every `dm-*` device among the block devices.
pub fn read_dm_devices(root: &Root, block_names: &[String]) -> Vec<DmDevice> {
    block_names
        .iter()
        .filter(|n| n.starts_with("dm-"))
        .map(|n| read_dm_device(root, n))
        .collect()
}

fn read_dm_device(root: &Root, dev: &str) -> DmDevice {
    let name = root
        .read_optional(&format!("sys/block/{dev}/dm/name"))
        .ok()
        .flatten();
    let uuid = root
        .read_optional(&format!("sys/block/{dev}/dm/uuid"))
        .ok()
        .flatten()
        .filter(|u| !u.is_empty());
    let slaves = root
        .read_dir_optional(&format!("sys/block/{dev}/slaves"))
        .unwrap_or_default();
    let (target_type, format) = uuid.as_deref().map(kind_from_uuid).unwrap_or_default();
    let (crypt, crypt_unavailable) = match format.as_deref() {
        Some("luks1" | "luks2") => match read_luks(root, &slaves) {
            Ok(c) => (Some(c), None),
            Err(why) => (None, Some(why)),
        },
        Some("plain") => (
            None,
            Some(
                "plain dm-crypt keeps no header on disk; its cipher is only in the kernel table"
                    .into(),
            ),
        ),
        _ if target_type.as_deref() == Some("crypt") => (
            None,
            Some("no readable header for this crypt format".into()),
        ),
        _ => (None, None),
    };
    DmDevice {
        device: dev.to_string(),
        name,
        uuid,
        target_type,
        format,
        slaves,
        crypt,
        crypt_unavailable,
    }
}

fn read_luks(root: &Root, slaves: &[String]) -> Result<Crypt, String> {
    let [slave] = slaves else {
        return Err(format!(
            "expected one underlying device, found {}",
            slaves.len()
        ));
    };
    let head = root
        .read_head(&format!("dev/{slave}"), LUKS_HEAD_BYTES)
        .map_err(|e| e.to_string())?;
    let mut crypt = parse_luks_header(&head).map_err(|e| format!("{slave}: {e}"))?;
    crypt.source = format!("{} on {slave}", crypt.source);
    Ok(crypt)
}

/// Cipher, key size and sector size from a LUKS1 or LUKS2 header.
pub fn parse_luks_header(head: &[u8]) -> Result<Crypt, ParseError> {
    if head.len() < 8 || &head[..6] != LUKS_MAGIC {
        return Err(ParseError::missing(
            "LUKS header",
            "magic (detached header, or not LUKS)",
        ));
    }
    match u16::from_be_bytes([head[6], head[7]]) {
        1 => parse_luks1(head),
        2 => parse_luks2(head),
        v => Err(ParseError::value("LUKS header version", v.to_string())),
    }
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// LUKS1: cipher-name at 8, cipher-mode at 40 (32 bytes each), key-bytes (u32 BE) at 108.
fn parse_luks1(head: &[u8]) -> Result<Crypt, ParseError> {
    let Some(fixed) = head.get(..112) else {
        return Err(ParseError::missing(
            "LUKS1 header",
            "key-bytes (header cut short)",
        ));
    };
    let name = c_string(&fixed[8..40]);
    let mode = c_string(&fixed[40..72]);
    if name.is_empty() || mode.is_empty() {
        return Err(ParseError::missing("LUKS1 header", "cipher-name"));
    }
    let key_bytes = u32::from_be_bytes([fixed[108], fixed[109], fixed[110], fixed[111]]);
    Ok(Crypt {
        cipher: format!("{name}-{mode}"),
        key_bits: Some(u64::from(key_bytes) * 8),
        sector_bytes: 512,
        source: "luks1 header".into(),
    })
}

/// LUKS2: a 4 KiB binary header, then JSON with `segments` and `keyslots`.
fn parse_luks2(head: &[u8]) -> Result<Crypt, ParseError> {
    let Some(area) = head.get(LUKS2_JSON_OFFSET..) else {
        return Err(ParseError::missing(
            "LUKS2 header",
            "JSON area (header cut short)",
        ));
    };
    let end = area.iter().position(|b| *b == 0).unwrap_or(area.len());
    let json: serde_json::Value = serde_json::from_slice(&area[..end]).map_err(|e| {
        ParseError::value(
            "LUKS2 JSON area",
            format!("{e} (larger than the {LUKS_HEAD_BYTES} bytes read?)"),
        )
    })?;
    let segment = json
        .get("segments")
        .and_then(|s| s.as_object())
        .and_then(|s| {
            s.values()
                .find(|v| v.get("type").and_then(|t| t.as_str()) == Some("crypt"))
        })
        .ok_or_else(|| ParseError::missing("LUKS2 JSON", "crypt segment"))?;
    let cipher = segment
        .get("encryption")
        .and_then(|e| e.as_str())
        .ok_or_else(|| ParseError::missing("LUKS2 segment", "encryption"))?;
    let sector_bytes = segment
        .get("sector_size")
        .and_then(|s| s.as_u64())
        .ok_or_else(|| ParseError::missing("LUKS2 segment", "sector_size"))?;
    // Every keyslot holds the same volume key; its size is public.
    let key_bits = json
        .get("keyslots")
        .and_then(|k| k.as_object())
        .and_then(|k| k.values().find_map(|s| s.get("key_size")?.as_u64()))
        .map(|b| b * 8);
    Ok(Crypt {
        cipher: cipher.to_string(),
        key_bits,
        sector_bytes,
        source: "luks2 header".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_prefixes() {
        let k = |u| kind_from_uuid(u);
        assert_eq!(
            k("CRYPT-LUKS2-3f0c2b1e9d8a4c7b8e6f5a4b3c2d1e0f-nasdata"),
            (Some("crypt".into()), Some("luks2".into()))
        );
        assert_eq!(
            k("CRYPT-PLAIN-swap"),
            (Some("crypt".into()), Some("plain".into()))
        );
        assert_eq!(
            k("CRYPT-VERITY-abc-root"),
            (Some("verity".into()), Some("verity".into()))
        );
        assert_eq!(k("LVM-abcdef"), (None, Some("lvm".into())));
        assert_eq!(
            k("mpath-3600"),
            (Some("multipath".into()), Some("multipath".into()))
        );
        assert_eq!(k("something"), (None, None));
    }

    fn luks1_header(name: &str, mode: &str, key_bytes: u32) -> Vec<u8> {
        let mut h = vec![0u8; 592];
        h[..6].copy_from_slice(LUKS_MAGIC);
        h[6..8].copy_from_slice(&1u16.to_be_bytes());
        h[8..8 + name.len()].copy_from_slice(name.as_bytes());
        h[40..40 + mode.len()].copy_from_slice(mode.as_bytes());
        h[72..78].copy_from_slice(b"sha256");
        h[104..108].copy_from_slice(&4096u32.to_be_bytes());
        h[108..112].copy_from_slice(&key_bytes.to_be_bytes());
        h
    }

    #[test]
    fn luks1_fixed_offsets() {
        let c = parse_luks_header(&luks1_header("aes", "cbc-essiv:sha256", 32)).unwrap();
        assert_eq!(c.cipher, "aes-cbc-essiv:sha256");
        assert_eq!(c.key_bits, Some(256));
        assert_eq!(c.sector_bytes, 512);
        assert!(parse_luks_header(&luks1_header("aes", "xts-plain64", 64)[..100]).is_err());
        assert!(parse_luks_header(&luks1_header("", "", 64)).is_err());
    }

    fn luks2_header(json: &str) -> Vec<u8> {
        let mut h = vec![0u8; 16384];
        h[..6].copy_from_slice(LUKS_MAGIC);
        h[6..8].copy_from_slice(&2u16.to_be_bytes());
        h[8..16].copy_from_slice(&16384u64.to_be_bytes());
        h[4096..4096 + json.len()].copy_from_slice(json.as_bytes());
        h
    }

    #[test]
    fn luks2_json_area() {
        let json = r#"{"keyslots":{"0":{"type":"luks2","key_size":64,"area":{"type":"raw","offset":"32768","size":"258048","encryption":"aes-xts-plain64","key_size":64}}},"tokens":{},"segments":{"0":{"type":"crypt","offset":"16777216","size":"dynamic","iv_tweak":"0","encryption":"aes-xts-plain64","sector_size":4096}},"digests":{},"config":{"json_size":"12288","keyslots_size":"16744448"}}"#;
        let c = parse_luks_header(&luks2_header(json)).unwrap();
        assert_eq!(c.cipher, "aes-xts-plain64");
        assert_eq!(c.key_bits, Some(512));
        assert_eq!(c.sector_bytes, 4096);
        // Truncated JSON, missing segment, foreign magic, unknown version.
        assert!(parse_luks_header(&luks2_header(json)[..4200]).is_err());
        assert!(parse_luks_header(&luks2_header(r#"{"segments":{}}"#)).is_err());
        assert!(parse_luks_header(b"XFSB\0\0\0\0").is_err());
        let mut v3 = luks2_header(json);
        v3[7] = 3;
        let e = parse_luks_header(&v3).unwrap_err().to_string();
        assert!(e.contains("'3'"), "{e}");
    }
}
