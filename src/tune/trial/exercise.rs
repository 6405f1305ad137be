//! Whether a judge exercises the change it judges: a network device change
//! needs a judge whose peer is reached out of that interface (the main
//! routing table, /proc/net/route), an smb.conf change an smb judge whose
//! server is this box. Otherwise the trial would measure noise and call it
//! "no effect"; `tune try` refuses instead, naming both.

use std::net::{IpAddr, Ipv4Addr};

use crate::root::Root;

/// One IPv4 route of /proc/net/route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub iface: String,
    pub dest: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub metric: u32,
}

/// The routes of /proc/net/route text that are up (flag RTF_UP). Addresses
/// are network-order bytes printed as a native-endian hex word.
pub fn parse_routes(text: &str) -> Vec<Route> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 8 || hex(f[3])? & 1 == 0 {
                return None;
            }
            let addr = |s: &str| hex(s).map(|v| Ipv4Addr::from(v.to_ne_bytes()));
            Some(Route {
                iface: f[0].to_string(),
                dest: addr(f[1])?,
                metric: f[6].parse().ok()?,
                mask: addr(f[7])?,
            })
        })
        .collect()
}

/// The interface the kernel sends to `ip` through: the longest matching
/// prefix, then the lowest metric; `lo` for this box's own addresses.
pub fn route_interface(routes: &[Route], ip: IpAddr, local: bool) -> Option<String> {
    if local {
        return Some("lo".into());
    }
    let IpAddr::V4(ip) = ip else {
        return None;
    };
    routes
        .iter()
        .filter(|r| u32::from(ip) & u32::from(r.mask) == u32::from(r.dest))
        .max_by_key(|r| (u32::from(r.mask).count_ones(), std::cmp::Reverse(r.metric)))
        .map(|r| r.iface.clone())
}

/// The interface a live peer is reached through.
pub fn peer_interface(root: &Root, ip: IpAddr) -> Option<String> {
    let routes = root
        .read_string("proc/net/route")
        .map(|t| parse_routes(&t))
        .unwrap_or_default();
    route_interface(&routes, ip, crate::bench::validity::is_local(ip))
}

/// The network interfaces a runtime write touches: `sys/class/net/IF/…`,
/// `proc/sys/net/ipv{4,6}/conf/IF/…` (not `all`/`default`, which touch
/// every one) and network device settings (`netdev/IF/…`).
pub fn touched_interface(path: &str) -> Option<String> {
    let p = path.trim_start_matches('/');
    let rest = p
        .strip_prefix("sys/class/net/")
        .or_else(|| p.strip_prefix("proc/sys/net/ipv4/conf/"))
        .or_else(|| p.strip_prefix("proc/sys/net/ipv6/conf/"))
        .or_else(|| p.strip_prefix("netdev/"))?;
    let iface = rest.split('/').next()?;
    (!iface.is_empty() && iface != "all" && iface != "default").then(|| iface.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
eth0\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0
eth1\t00000A0A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
wg0\t00000A0A\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0
";

    #[test]
    fn the_longest_prefix_names_the_interface() {
        let r = parse_routes(ROUTE);
        assert_eq!(r.len(), 3, "the route that is down is left out: {r:?}");
        assert_eq!(r[1].dest, Ipv4Addr::new(192, 168, 1, 0));
        assert_eq!(r[1].mask, Ipv4Addr::new(255, 255, 255, 0));
        let via = |ip: [u8; 4]| route_interface(&r, IpAddr::from(ip), false);
        assert_eq!(via([192, 168, 1, 7]).as_deref(), Some("eth0"));
        assert_eq!(via([10, 10, 3, 4]).as_deref(), Some("eth1"));
        assert_eq!(via([8, 8, 8, 8]).as_deref(), Some("eth0"));
        assert_eq!(
            route_interface(&r, "127.0.0.1".parse().unwrap(), true).as_deref(),
            Some("lo")
        );
        assert_eq!(
            route_interface(&[], "10.0.0.1".parse().unwrap(), false),
            None
        );
    }

    #[test]
    fn interfaces_are_read_from_the_written_paths() {
        assert_eq!(
            touched_interface("sys/class/net/eth0/tx_queue_len").as_deref(),
            Some("eth0")
        );
        assert_eq!(
            touched_interface("proc/sys/net/ipv4/conf/eth1/rp_filter").as_deref(),
            Some("eth1")
        );
        assert_eq!(
            touched_interface("proc/sys/net/ipv4/conf/all/rp_filter"),
            None
        );
        assert_eq!(touched_interface("proc/sys/net/core/rmem_max"), None);
        assert_eq!(touched_interface("sys/block/sda/queue/nr_requests"), None);
    }
}
