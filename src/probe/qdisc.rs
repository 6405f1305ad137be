//! Root qdisc per interface. sysfs does not show it, so we ask rtnetlink with an
//! `RTM_GETQDISC` dump on a `NETLINK_ROUTE` socket, hand-written on libc (a
//! netlink crate would be heavier than the ~100 lines this needs).

use serde::{Deserialize, Serialize};

use super::ParseError;

/// The root qdisc of one interface, as the kernel dumps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RootQdisc {
    pub ifindex: i32,
    pub kind: String,
    /// Handle as `tc` prints it, e.g. `8001:`.
    pub handle: String,
}

const NLMSG_HDR_LEN: usize = 16;
const TCMSG_LEN: usize = 20;
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// A box has a handful of interfaces; a dump longer than this is a bug or an attack.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// One request: an `nlmsghdr`, a `tcmsg` for `ifindex` (0: every interface)
/// under `parent`, and a `TCA_KIND` attribute when `kind` is given.
fn request(
    msg_type: u16,
    flags: i32,
    seq: u32,
    ifindex: i32,
    parent: u32,
    kind: Option<&str>,
) -> Vec<u8> {
    let mut attr = Vec::new();
    if let Some(k) = kind {
        let alen = 4 + k.len() + 1;
        attr.extend_from_slice(&(alen as u16).to_ne_bytes());
        attr.extend_from_slice(&libc::TCA_KIND.to_ne_bytes());
        attr.extend_from_slice(k.as_bytes());
        attr.push(0);
        attr.resize(align4(attr.len()), 0);
    }
    let len = (NLMSG_HDR_LEN + TCMSG_LEN + attr.len()) as u32;
    let mut m = Vec::with_capacity(len as usize);
    m.extend_from_slice(&len.to_ne_bytes());
    m.extend_from_slice(&msg_type.to_ne_bytes());
    m.extend_from_slice(&(flags as u16).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    // tcmsg: family and 3 pad bytes, ifindex, handle 0 (the kernel picks), parent, info.
    m.extend_from_slice(&[0u8; 4]);
    m.extend_from_slice(&ifindex.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&parent.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&attr);
    m
}

/// The dump request: an all-zero `tcmsg` (every interface).
pub fn dump_request(seq: u32) -> Vec<u8> {
    let flags = libc::NLM_F_REQUEST | libc::NLM_F_DUMP;
    request(libc::RTM_GETQDISC, flags, seq, 0, 0, None)
}

/// What one received datagram held.
#[derive(Debug, Default, PartialEq)]
pub struct Batch {
    pub roots: Vec<RootQdisc>,
    pub done: bool,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Parses one datagram of the dump: keeps root qdiscs (parent `TC_H_ROOT`),
/// skips ingress/clsact and child qdiscs, and turns `NLMSG_ERROR` into an error.
pub fn parse_dump(bytes: &[u8]) -> Result<Batch, ParseError> {
    const WHAT: &str = "rtnetlink qdisc dump";
    let mut batch = Batch::default();
    let mut at = 0;
    while at + NLMSG_HDR_LEN <= bytes.len() {
        let len = u32_at(bytes, at).unwrap_or(0) as usize;
        let kind = u16_at(bytes, at + 4).unwrap_or(0);
        if len < NLMSG_HDR_LEN || at + len > bytes.len() {
            return Err(ParseError::value(WHAT, format!("message length {len}")));
        }
        let body = &bytes[at + NLMSG_HDR_LEN..at + len];
        match kind {
            NLMSG_DONE => {
                batch.done = true;
                return Ok(batch);
            }
            NLMSG_ERROR => {
                let errno = u32_at(body, 0).map(|e| -(e as i32)).unwrap_or(0);
                return Err(ParseError::value(
                    WHAT,
                    format!(
                        "kernel error {errno} ({})",
                        std::io::Error::from_raw_os_error(errno)
                    ),
                ));
            }
            libc::RTM_NEWQDISC => {
                if let Some(q) = parse_qdisc(body)? {
                    batch.roots.push(q);
                }
            }
            _ => {}
        }
        at += align4(len);
    }
    Ok(batch)
}

fn parse_qdisc(body: &[u8]) -> Result<Option<RootQdisc>, ParseError> {
    const WHAT: &str = "rtnetlink qdisc message";
    if body.len() < TCMSG_LEN {
        return Err(ParseError::value(WHAT, format!("{} bytes", body.len())));
    }
    let ifindex = u32_at(body, 4).unwrap_or(0) as i32;
    let handle = u32_at(body, 8).unwrap_or(0);
    let parent = u32_at(body, 12).unwrap_or(0);
    if parent != TC_H_ROOT {
        return Ok(None);
    }
    let mut at = TCMSG_LEN;
    while at + 4 <= body.len() {
        let len = u16_at(body, at).unwrap_or(0) as usize;
        let kind = u16_at(body, at + 2).unwrap_or(0);
        if len < 4 || at + len > body.len() {
            return Err(ParseError::value(WHAT, format!("attribute length {len}")));
        }
        if kind == libc::TCA_KIND {
            let raw = &body[at + 4..at + len];
            let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
            let name = std::str::from_utf8(&raw[..end])
                .map_err(|_| ParseError::value(WHAT, "non-UTF-8 qdisc kind"))?;
            return Ok(Some(RootQdisc {
                ifindex,
                kind: name.to_string(),
                handle: format!("{:x}:", handle >> 16),
            }));
        }
        at += align4(len);
    }
    Err(ParseError::missing(WHAT, "TCA_KIND"))
}

/// Dumps root qdiscs of every interface in this process's network namespace.
pub fn live_root_qdiscs() -> Result<Vec<RootQdisc>, String> {
    let sock = NetlinkSocket::open()?;
    sock.send(&dump_request(1))?;
    let mut roots = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    let mut total = 0;
    loop {
        let n = sock.recv(&mut buf)?;
        total += n;
        if n == 0 || total > MAX_REPLY_BYTES {
            return Err(format!(
                "rtnetlink qdisc dump ended early after {total} bytes"
            ));
        }
        let batch = parse_dump(&buf[..n]).map_err(|e| e.to_string())?;
        roots.extend(batch.roots);
        if batch.done {
            return Ok(roots);
        }
    }
}

/// A request to replace the root qdisc of `ifindex` with `kind` (default
/// parameters; `NLM_F_CREATE | NLM_F_REPLACE`), or with `kind: None` to delete
/// the root so the kernel re-attaches its default. Both ask for an ACK.
pub fn change_request(seq: u32, ifindex: i32, kind: Option<&str>) -> Vec<u8> {
    match kind {
        Some(_) => request(
            libc::RTM_NEWQDISC,
            libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_REPLACE,
            seq,
            ifindex,
            TC_H_ROOT,
            kind,
        ),
        None => request(
            libc::RTM_DELQDISC,
            libc::NLM_F_REQUEST | libc::NLM_F_ACK,
            seq,
            ifindex,
            TC_H_ROOT,
            None,
        ),
    }
}

/// The errno of the ACK to a change request (0: done).
pub fn parse_ack(bytes: &[u8]) -> Result<i32, ParseError> {
    const WHAT: &str = "rtnetlink ACK";
    let kind = u16_at(bytes, 4).ok_or_else(|| ParseError::missing(WHAT, "nlmsghdr"))?;
    if kind != NLMSG_ERROR {
        return Err(ParseError::value(WHAT, format!("message type {kind}")));
    }
    u32_at(bytes, NLMSG_HDR_LEN)
        .map(|e| -(e as i32))
        .ok_or_else(|| ParseError::missing(WHAT, "error code"))
}

/// Replaces (`Some(kind)`) or deletes (`None`) the root qdisc of an interface
/// in this process's network namespace.
pub fn change_root_qdisc(ifindex: i32, kind: Option<&str>) -> std::io::Result<()> {
    let sock = NetlinkSocket::open().map_err(std::io::Error::other)?;
    sock.send(&change_request(1, ifindex, kind))
        .map_err(std::io::Error::other)?;
    let mut buf = vec![0u8; 4096];
    let n = sock.recv(&mut buf).map_err(std::io::Error::other)?;
    match parse_ack(&buf[..n]).map_err(|e| std::io::Error::other(e.to_string()))? {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

struct NetlinkSocket(libc::c_int);

impl NetlinkSocket {
    fn open() -> Result<Self, String> {
        // SAFETY: plain socket(2); the fd is owned and closed on drop.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(format!(
                "cannot open a NETLINK_ROUTE socket: {}",
                std::io::Error::last_os_error()
            ));
        }
        let sock = NetlinkSocket(fd);
        // A dump on a healthy kernel answers at once; never hang the probe.
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: tv is a valid timeval for SO_RCVTIMEO.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const tv).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        Ok(sock)
    }

    fn send(&self, msg: &[u8]) -> Result<(), String> {
        // SAFETY: an all-zero sockaddr_nl addresses the kernel once the family is set.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: msg and addr are valid for the lengths given.
        let n = unsafe {
            libc::sendto(
                self.0,
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(format!(
                "cannot send the rtnetlink qdisc request: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    fn recv(&self, buf: &mut [u8]) -> Result<usize, String> {
        // SAFETY: buf is valid for writes of its length.
        let n = unsafe { libc::recv(self.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(format!(
                "cannot read the rtnetlink qdisc dump: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(n as usize)
    }
}

impl Drop for NetlinkSocket {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_requests_are_well_formed() {
        let r = change_request(7, 3, Some("fq_codel"));
        // header 16 + tcmsg 20 + attr (4 + 9 -> 16 aligned)
        assert_eq!(r.len(), 52);
        assert_eq!(u32_at(&r, 0), Some(52));
        assert_eq!(u16_at(&r, 4), Some(libc::RTM_NEWQDISC));
        let flags = u16_at(&r, 6).unwrap() as i32;
        assert_eq!(
            flags,
            libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_REPLACE
        );
        assert_eq!(u32_at(&r, 8), Some(7));
        assert_eq!(u32_at(&r, 20), Some(3));
        assert_eq!(u32_at(&r, 28), Some(TC_H_ROOT));
        assert_eq!(u16_at(&r, 36), Some(13));
        assert_eq!(&r[40..49], b"fq_codel\0");
        let d = change_request(1, 3, None);
        assert_eq!(d.len(), 36);
        assert_eq!(u16_at(&d, 4), Some(libc::RTM_DELQDISC));
    }

    #[test]
    fn acks_give_the_errno() {
        let mut ack = vec![0u8; 36];
        ack[0..4].copy_from_slice(&36u32.to_ne_bytes());
        ack[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(parse_ack(&ack).unwrap(), 0);
        ack[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
        assert_eq!(parse_ack(&ack).unwrap(), libc::ENOENT);
        assert!(parse_ack(&ack[..10]).is_err());
        ack[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        assert!(parse_ack(&ack).is_err());
    }

    /// One RTM_NEWQDISC message as the kernel sends it.
    fn qdisc_msg(ifindex: i32, handle: u32, parent: u32, kind: &str) -> Vec<u8> {
        let mut attr = Vec::new();
        let alen = 4 + kind.len() + 1;
        attr.extend_from_slice(&(alen as u16).to_ne_bytes());
        attr.extend_from_slice(&libc::TCA_KIND.to_ne_bytes());
        attr.extend_from_slice(kind.as_bytes());
        attr.push(0);
        while attr.len() % 4 != 0 {
            attr.push(0);
        }
        let mut tcm = vec![0u8, 0, 0, 0];
        tcm.extend_from_slice(&ifindex.to_ne_bytes());
        tcm.extend_from_slice(&handle.to_ne_bytes());
        tcm.extend_from_slice(&parent.to_ne_bytes());
        tcm.extend_from_slice(&2u32.to_ne_bytes());
        let len = 16 + tcm.len() + attr.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&libc::RTM_NEWQDISC.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes());
        m.extend_from_slice(&1u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend(tcm);
        m.extend(attr);
        m
    }

    fn done_msg() -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&20u32.to_ne_bytes());
        m.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        m.extend_from_slice(&[0u8; 14]);
        m
    }

    #[test]
    fn request_is_a_dump_of_every_interface() {
        let r = dump_request(7);
        assert_eq!(r.len(), 36);
        assert_eq!(u32_at(&r, 0), Some(36));
        assert_eq!(u16_at(&r, 4), Some(libc::RTM_GETQDISC));
        assert_eq!(u16_at(&r, 6), Some(0x301));
        assert_eq!(u32_at(&r, 8), Some(7));
    }

    #[test]
    fn keeps_root_qdiscs_and_skips_children_and_ingress() {
        let mut d = qdisc_msg(2, 0x8001_0000, TC_H_ROOT, "tbf");
        d.extend(qdisc_msg(2, 0x0001_0000, 0x8001_0001, "pfifo"));
        d.extend(qdisc_msg(2, 0xffff_0000, 0xffff_fff1, "ingress"));
        d.extend(qdisc_msg(1, 0, TC_H_ROOT, "noqueue"));
        d.extend(done_msg());
        let b = parse_dump(&d).unwrap();
        assert!(b.done);
        assert_eq!(
            b.roots,
            vec![
                RootQdisc {
                    ifindex: 2,
                    kind: "tbf".into(),
                    handle: "8001:".into()
                },
                RootQdisc {
                    ifindex: 1,
                    kind: "noqueue".into(),
                    handle: "0:".into()
                },
            ]
        );
    }

    #[test]
    fn a_batch_without_done_asks_for_more() {
        let b = parse_dump(&qdisc_msg(3, 0, TC_H_ROOT, "fq_codel")).unwrap();
        assert!(!b.done);
        assert_eq!(b.roots[0].kind, "fq_codel");
    }

    #[test]
    fn kernel_errors_and_truncation_are_errors() {
        let mut e = Vec::new();
        e.extend_from_slice(&36u32.to_ne_bytes());
        e.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e.extend_from_slice(&[0u8; 10]);
        e.extend_from_slice(&(-libc::EPERM as u32).to_ne_bytes());
        e.extend_from_slice(&[0u8; 16]);
        let err = parse_dump(&e).unwrap_err().to_string();
        assert!(err.contains("kernel error 1"), "{err}");
        let m = qdisc_msg(2, 0, TC_H_ROOT, "tbf");
        assert!(parse_dump(&m[..m.len() - 4]).is_err());
        let mut bad_attr = m.clone();
        bad_attr[36] = 200; // attribute length beyond the message
        assert!(parse_dump(&bad_attr).is_err());
    }

    #[test]
    fn this_namespace_has_a_loopback_qdisc() {
        let roots = live_root_qdiscs().unwrap();
        assert!(roots.iter().any(|q| q.ifindex == 1), "{roots:?}");
    }
}
