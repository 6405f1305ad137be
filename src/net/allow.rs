//! `--allow CIDR`: which peers may start a test. By default loopback and the
//! private/link-local ranges, so a box exposed to the internet is not a free
//! traffic generator.

use std::net::IpAddr;
use std::str::FromStr;

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

#[derive(Debug, Error, PartialEq)]
#[error("'{0}' is not a CIDR such as '192.168.1.0/24' or 'fd00::/8'")]
pub struct CidrError(pub String);

pub const DEFAULT_ALLOW: &[&str] = &[
    "127.0.0.0/8",
    "::1/128",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "169.254.0.0/16",
    "fc00::/7",
    "fe80::/10",
];

impl FromStr for Cidr {
    type Err = CidrError;
    fn from_str(s: &str) -> Result<Cidr, CidrError> {
        let bad = || CidrError(s.to_string());
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().map_err(|_| bad())?,
            None => max,
        };
        if prefix > max {
            return Err(bad());
        }
        Ok(Cidr { addr, prefix })
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

pub fn default_allow() -> Vec<Cidr> {
    DEFAULT_ALLOW
        .iter()
        .filter_map(|c| c.parse().ok())
        .collect()
}

pub fn allowed(list: &[Cidr], ip: IpAddr) -> bool {
    list.iter().any(|c| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_allow_private_and_refuse_public() {
        let l = default_allow();
        assert_eq!(l.len(), DEFAULT_ALLOW.len());
        for ok in [
            "127.0.0.1",
            "10.1.2.3",
            "172.31.0.1",
            "192.168.9.9",
            "::1",
            "fd12::1",
            "::ffff:192.168.1.1",
        ] {
            assert!(allowed(&l, ok.parse().unwrap()), "{ok}");
        }
        for no in ["8.8.8.8", "172.32.0.1", "2001:db8::1", "::ffff:1.1.1.1"] {
            assert!(!allowed(&l, no.parse().unwrap()), "{no}");
        }
    }

    #[test]
    fn parse_errors_name_the_value() {
        assert_eq!(
            "10.0.0.0/33".parse::<Cidr>(),
            Err(CidrError("10.0.0.0/33".into()))
        );
        assert!("nope/8".parse::<Cidr>().is_err());
        let any: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(any.contains("1.2.3.4".parse().unwrap()));
        let host: Cidr = "10.0.0.5".parse().unwrap();
        assert!(host.contains("10.0.0.5".parse().unwrap()));
        assert!(!host.contains("10.0.0.6".parse().unwrap()));
    }
}
