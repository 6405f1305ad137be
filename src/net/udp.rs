//! iperf3's UDP datagram header and receiver accounting (`iperf_udp.c`): seconds
//! and microseconds of the send time, then a 32-bit (or, with
//! `udp_counters_64bit`, 64-bit) packet counter starting at 1, all big-endian.
//! Loss counts gaps, late packets are out-of-order, jitter is RFC 1889's.

use serde::{Deserialize, Serialize};

/// The first datagram of a UDP stream (client to server) and the reply. iperf3
/// writes these 32-bit values in host byte order, so both byte orders are accepted.
pub const CONNECT_MSG: u32 = 0x3637_3839;
pub const CONNECT_REPLY: u32 = 0x3938_3736;
const LEGACY_CONNECT_MSG: u32 = 123_456_789;
const LEGACY_CONNECT_REPLY: u32 = 987_654_321;

fn matches_either_order(bytes: [u8; 4], value: u32) -> bool {
    u32::from_ne_bytes(bytes) == value || u32::from_ne_bytes(bytes).swap_bytes() == value
}

pub fn is_connect_msg(bytes: [u8; 4]) -> bool {
    matches_either_order(bytes, CONNECT_MSG) || matches_either_order(bytes, LEGACY_CONNECT_MSG)
}

pub fn is_connect_reply(bytes: [u8; 4]) -> bool {
    matches_either_order(bytes, CONNECT_REPLY) || matches_either_order(bytes, LEGACY_CONNECT_REPLY)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub sec: u32,
    pub usec: u32,
    pub count: u64,
}

pub fn header_len(counters_64bit: bool) -> usize {
    if counters_64bit { 16 } else { 12 }
}

pub fn encode_header(h: Header, counters_64bit: bool, out: &mut [u8]) {
    out[0..4].copy_from_slice(&h.sec.to_be_bytes());
    out[4..8].copy_from_slice(&h.usec.to_be_bytes());
    if counters_64bit {
        out[8..16].copy_from_slice(&h.count.to_be_bytes());
    } else {
        // Wraps after 2^32 packets exactly as iperf3's 32-bit counter does.
        out[8..12].copy_from_slice(&(h.count as u32).to_be_bytes());
    }
}

/// `None` when the datagram is too short to carry a header.
pub fn decode_header(buf: &[u8], counters_64bit: bool) -> Option<Header> {
    let word =
        |i: usize| -> Option<u32> { Some(u32::from_be_bytes(buf.get(i..i + 4)?.try_into().ok()?)) };
    let count = if counters_64bit {
        u64::from_be_bytes(buf.get(8..16)?.try_into().ok()?)
    } else {
        u64::from(word(8)?)
    };
    Some(Header {
        sec: word(0)?,
        usec: word(4)?,
        count,
    })
}

/// Receiver-side counters for one UDP stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpReceiveStats {
    /// Highest packet number seen (iperf3's `packet_count`).
    pub highest: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub jitter_secs: f64,
    prev_transit: Option<f64>,
}

impl UdpReceiveStats {
    /// Accounts one datagram; `arrival_secs` is on the receiver's clock, and only
    /// differences of transit times matter, so the two clocks need not agree.
    pub fn record(&mut self, h: Header, arrival_secs: f64) {
        if h.count > self.highest {
            self.lost += h.count - self.highest - 1;
            self.highest = h.count;
        } else {
            self.out_of_order += 1;
            // A late packet was counted as lost when its gap was seen.
            self.lost = self.lost.saturating_sub(1);
        }
        let sent = f64::from(h.sec) + f64::from(h.usec) / 1e6;
        let transit = arrival_secs - sent;
        if let Some(prev) = self.prev_transit {
            let d = (transit - prev).abs();
            self.jitter_secs += (d - self.jitter_secs) / 16.0;
        }
        self.prev_transit = Some(transit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_big_endian_in_both_counter_widths() {
        let h = Header {
            sec: 0x0102_0304,
            usec: 999_999,
            count: 0x1_0000_0005,
        };
        let mut buf = [0u8; 16];
        encode_header(h, true, &mut buf);
        assert_eq!(&buf[..4], &[1, 2, 3, 4]);
        assert_eq!(decode_header(&buf, true), Some(h));
        encode_header(h, false, &mut buf);
        assert_eq!(&buf[8..12], &[0, 0, 0, 5]);
        assert_eq!(decode_header(&buf, false).unwrap().count, 5);
        assert_eq!(decode_header(&buf[..11], false), None);
    }

    #[test]
    fn connect_messages_accept_both_byte_orders() {
        assert!(is_connect_msg(*b"9876"));
        assert!(is_connect_msg(*b"6789"));
        assert!(is_connect_reply(*b"6789"));
        assert!(!is_connect_msg(*b"abcd"));
        assert!(is_connect_reply(987_654_321u32.to_ne_bytes()));
    }

    #[test]
    fn loss_and_out_of_order_are_counted_like_iperf3() {
        let mut s = UdpReceiveStats::default();
        let h = |count| Header {
            sec: 10,
            usec: 0,
            count,
        };
        for c in [1, 2, 4, 5, 3, 8] {
            s.record(h(c), 10.001);
        }
        // 3 arrived late (lost then un-lost), 6 and 7 never came.
        assert_eq!((s.highest, s.lost, s.out_of_order), (8, 2, 1));
        assert_eq!(s.jitter_secs, 0.0);
    }

    #[test]
    fn jitter_follows_rfc1889() {
        let mut s = UdpReceiveStats::default();
        s.record(
            Header {
                sec: 0,
                usec: 0,
                count: 1,
            },
            0.010,
        );
        s.record(
            Header {
                sec: 0,
                usec: 100_000,
                count: 2,
            },
            0.126,
        );
        // |0.026 - 0.010| / 16
        assert!((s.jitter_secs - 0.001).abs() < 1e-9, "{}", s.jitter_secs);
    }
}
