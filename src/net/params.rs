//! The parameter JSON a client sends after PARAM_EXCHANGE (iperf3 `send_parameters`),
//! decoded strictly: every known key has one JSON type (CVE-2024-53580 was type
//! confusion here), unknown iperf3 keys are ignored as iperf3 does, and our own
//! extension object under `nastune` rejects unknown fields.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// iperf3's `MAX_TIME`, `MAX_OMIT_TIME`-ish and block caps; the server's own
/// `--max-duration` / `--max-streams` / `--max-bitrate` are applied on top.
pub const MAX_TIME_SECS: u32 = 86_400;
pub const MAX_OMIT_SECS: u32 = 600;
pub const MAX_TCP_BLOCK: u32 = 1024 * 1024;
pub const MAX_UDP_BLOCK: u32 = 65_507;
pub const MIN_UDP_BLOCK: u32 = 16; // sec + usec + 64-bit counter
pub const DEFAULT_TCP_BLOCK: u32 = 128 * 1024;
pub const DEFAULT_UDP_BLOCK: u32 = 1448;
pub const DEFAULT_UDP_RATE: u64 = 1_000_000;
pub const MAX_STREAMS: u32 = 128;
pub const MAX_RR_MESSAGE: u32 = 64 * 1024;

/// Keys as iperf3 writes them; `Option` because iperf3 only writes what is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sctp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blockcount: Option<u64>,
    #[serde(default, rename = "MSS", skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bidirectional: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_timer: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    #[serde(default, rename = "TOS", skip_serializing_if = "Option::is_none")]
    pub tos: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlabel: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_server_output: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_counters_64bit: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeating_payload: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dont_fragment: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authtoken: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// The results extension fields this client reads
    /// ([`super::results::RESULTS_VERSION`]); a top-level key, so older servers
    /// and iperf3 ignore it as an unknown key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nastune_results: Option<u32>,
    /// Our extension; plain iperf3 never sends it and ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nastune: Option<Extension>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    pub version: u32,
    /// A request/response latency test instead of a bulk transfer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrParams>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RrMode {
    /// Request/response on one kept-open connection per stream (netperf TCP_RR).
    Rr,
    /// Connect, request, response, close per transaction (netperf TCP_CRR).
    Crr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RrParams {
    pub mode: RrMode,
    pub request_bytes: u32,
    pub response_bytes: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// Which way bytes flow, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Send,
    Reverse,
    Bidir,
}

/// The server's limits (`nastune net serve --max-*`).
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub max_duration_secs: u32,
    pub max_streams: u32,
    /// Per-stream bits/s; 0 = no cap.
    pub max_bitrate: u64,
}

/// A validated test: everything both ends need, with defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestPlan {
    pub protocol: Protocol,
    pub direction: Direction,
    pub streams: u32,
    pub duration_secs: u32,
    pub omit_secs: u32,
    pub block_bytes: u32,
    /// Per-stream target bits/s; 0 = as fast as possible.
    pub rate_bits_per_sec: u64,
    pub window_bytes: u32,
    pub mss_bytes: u32,
    pub nodelay: bool,
    pub udp_counters_64bit: bool,
    pub zerocopy: bool,
    pub rr: Option<RrParams>,
}

#[derive(Debug, Error, PartialEq)]
pub enum ParamsError {
    #[error("parameters are not the expected JSON: {0}; send iperf3-style parameters")]
    Decode(String),
    #[error("protocol 'sctp' is not supported; use TCP or UDP")]
    Sctp,
    #[error("'{key}' = '{value}' is above the server's limit of '{limit}'")]
    AboveLimit {
        key: &'static str,
        value: u64,
        limit: u64,
    },
    #[error("'{key}' = '{value}' is invalid: {why}")]
    Invalid {
        key: &'static str,
        value: u64,
        why: &'static str,
    },
    #[error("extension version '{0}' is not supported; upgrade nastune on both ends")]
    ExtensionVersion(u32),
}

/// Strict decode: wrong types, non-objects, trailing garbage are errors.
pub fn decode(bytes: &[u8]) -> Result<Params, ParamsError> {
    serde_json::from_slice(bytes).map_err(|e| ParamsError::Decode(e.to_string()))
}

fn at_most(key: &'static str, value: u64, limit: u64) -> Result<(), ParamsError> {
    if value > limit {
        Err(ParamsError::AboveLimit { key, value, limit })
    } else {
        Ok(())
    }
}

impl Params {
    /// Checks every value against iperf3's and the server's caps and fills defaults.
    pub fn plan(&self, caps: &Caps) -> Result<TestPlan, ParamsError> {
        if self.sctp.unwrap_or(false) {
            return Err(ParamsError::Sctp);
        }
        let protocol = if self.udp.unwrap_or(false) {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let omit_asked = self.omit.unwrap_or(0);
        // iperf3 -n/-k send time 0: the client ends the test; allow up to the cap.
        let duration = match self.time {
            Some(0) => caps.max_duration_secs.saturating_sub(omit_asked).max(1),
            t => t.unwrap_or(10),
        };
        at_most("time", duration.into(), MAX_TIME_SECS.into())?;
        at_most("time", duration.into(), caps.max_duration_secs.into())?;
        let omit = self.omit.unwrap_or(0);
        at_most("omit", omit.into(), MAX_OMIT_SECS.into())?;
        at_most(
            "omit",
            (omit + duration).into(),
            caps.max_duration_secs.into(),
        )?;
        let streams = self.parallel.unwrap_or(1);
        if streams == 0 {
            return Err(ParamsError::Invalid {
                key: "parallel",
                value: 0,
                why: "at least one stream is needed",
            });
        }
        at_most("parallel", streams.into(), MAX_STREAMS.into())?;
        at_most("parallel", streams.into(), caps.max_streams.into())?;
        let (default_block, max_block) = match protocol {
            Protocol::Tcp => (DEFAULT_TCP_BLOCK, MAX_TCP_BLOCK),
            Protocol::Udp => (DEFAULT_UDP_BLOCK, MAX_UDP_BLOCK),
        };
        let block = self.len.unwrap_or(default_block);
        at_most("len", block.into(), max_block.into())?;
        if block == 0 || (protocol == Protocol::Udp && block < MIN_UDP_BLOCK) {
            return Err(ParamsError::Invalid {
                key: "len",
                value: block.into(),
                why: "too small: give at least 1 byte for TCP, 16 for UDP (its stream header)",
            });
        }
        let rate = match (protocol, self.bandwidth) {
            (_, Some(r)) => r,
            (Protocol::Udp, None) => DEFAULT_UDP_RATE,
            (Protocol::Tcp, None) => 0,
        };
        if caps.max_bitrate > 0 {
            if rate == 0 {
                return Err(ParamsError::Invalid {
                    key: "bandwidth",
                    value: 0,
                    why: "unlimited rate is not allowed by this server's --max-bitrate; pass -b",
                });
            }
            at_most("bandwidth", rate, caps.max_bitrate)?;
        }
        let window = self.window.unwrap_or(0);
        at_most("window", window.into(), 64 * 1024 * 1024)?;
        let direction = match (
            self.reverse.unwrap_or(false),
            self.bidirectional.unwrap_or(false),
        ) {
            (_, true) => Direction::Bidir,
            (true, false) => Direction::Reverse,
            (false, false) => Direction::Send,
        };
        let mut rr = None;
        if let Some(ext) = &self.nastune {
            if ext.version != 1 {
                return Err(ParamsError::ExtensionVersion(ext.version));
            }
            if let Some(r) = ext.rr {
                for (key, v) in [
                    ("request_bytes", r.request_bytes),
                    ("response_bytes", r.response_bytes),
                ] {
                    if v == 0 {
                        return Err(ParamsError::Invalid {
                            key,
                            value: 0,
                            why: "must be at least 1",
                        });
                    }
                    at_most(key, v.into(), MAX_RR_MESSAGE.into())?;
                }
                if protocol != Protocol::Tcp {
                    return Err(ParamsError::Invalid {
                        key: "udp",
                        value: 1,
                        why: "request/response tests run over TCP",
                    });
                }
                rr = Some(r);
            }
        }
        Ok(TestPlan {
            protocol,
            direction,
            streams,
            duration_secs: duration,
            omit_secs: omit,
            block_bytes: block,
            rate_bits_per_sec: rate,
            window_bytes: window,
            mss_bytes: self.mss.unwrap_or(0),
            nodelay: self.nodelay.unwrap_or(false),
            udp_counters_64bit: self.udp_counters_64bit.unwrap_or(0) != 0,
            zerocopy: self.zerocopy.unwrap_or(0) != 0,
            rr,
        })
    }
}

impl TestPlan {
    /// How many data connections the client opens: bidir doubles them.
    pub fn connection_count(&self) -> u32 {
        if self.rr.is_some_and(|r| r.mode == RrMode::Crr) {
            return 0;
        }
        match self.direction {
            Direction::Bidir => self.streams * 2,
            _ => self.streams,
        }
    }

    /// Whether the client sends on the `index`-th connection it opened: iperf3
    /// opens the client's sending streams first in bidir mode.
    pub fn client_sends(&self, index: u32) -> bool {
        match self.direction {
            Direction::Send => true,
            Direction::Reverse => false,
            Direction::Bidir => index < self.streams,
        }
    }
}

/// iperf3's stream ids (`iperf_add_stream`): 1, then 3, 4, 5, … (the second
/// stream skips 2); both ends must agree or results are refused (IESTREAMID).
pub fn stream_id(index: u32) -> u32 {
    if index == 0 { 1 } else { index + 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps {
        max_duration_secs: 60,
        max_streams: 16,
        max_bitrate: 0,
    };

    #[test]
    fn iperf3_3_12_parameters_decode_and_plan() {
        let text = br#"{"tcp":true,"omit":1,"time":3,"parallel":2,"reverse":true,"len":131072,"window":262144,"client_version":"3.12"}"#;
        let p = decode(text).unwrap();
        let plan = p.plan(&CAPS).unwrap();
        assert_eq!(plan.protocol, Protocol::Tcp);
        assert_eq!(plan.direction, Direction::Reverse);
        assert_eq!(
            (plan.streams, plan.duration_secs, plan.omit_secs),
            (2, 3, 1)
        );
        assert_eq!(plan.window_bytes, 262_144);
        assert_eq!(plan.connection_count(), 2);
    }

    #[test]
    fn udp_defaults_and_unknown_iperf3_keys_are_ignored() {
        let p =
            decode(br#"{"udp":true,"time":2,"parallel":1,"gso":true,"future_key":[1]}"#).unwrap();
        let plan = p.plan(&CAPS).unwrap();
        assert_eq!(plan.protocol, Protocol::Udp);
        assert_eq!(plan.rate_bits_per_sec, DEFAULT_UDP_RATE);
        assert_eq!(plan.block_bytes, DEFAULT_UDP_BLOCK);
    }

    #[test]
    fn byte_count_tests_run_until_the_client_ends_them_within_the_cap() {
        let p = decode(br#"{"tcp":true,"time":0,"num":1048576,"omit":2}"#).unwrap();
        assert_eq!(p.plan(&CAPS).unwrap().duration_secs, 58);
    }

    #[test]
    fn wrong_types_are_rejected() {
        for bad in [
            &br#"{"tcp":true,"time":"10"}"#[..],
            br#"{"tcp":true,"parallel":-1}"#,
            br#"{"tcp":true,"reverse":1}"#,
            br#"{"tcp":true,"len":1.5}"#,
            br#"{"tcp":true,"title":{}}"#,
            br#"[1,2]"#,
            br#"{"tcp":true} trailing"#,
            br#"{"tcp":true,"nastune":{"version":1,"evil":true}}"#,
            br#"{"tcp":true,"nastune":{"version":1,"rr":{"mode":"xx","request_bytes":1,"response_bytes":1}}}"#,
        ] {
            assert!(decode(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn caps_are_enforced_with_the_value_named() {
        let p = decode(br#"{"tcp":true,"time":61}"#).unwrap();
        assert_eq!(
            p.plan(&CAPS).unwrap_err().to_string(),
            "'time' = '61' is above the server's limit of '60'"
        );
        let p = decode(br#"{"tcp":true,"parallel":17}"#).unwrap();
        assert!(p.plan(&CAPS).is_err());
        let p = decode(br#"{"tcp":true,"parallel":0}"#).unwrap();
        assert!(p.plan(&CAPS).is_err());
        let p = decode(br#"{"tcp":true,"len":2000000}"#).unwrap();
        assert!(p.plan(&CAPS).is_err());
        let p = decode(br#"{"udp":true,"len":8}"#).unwrap();
        assert!(p.plan(&CAPS).is_err());
        let capped = Caps {
            max_bitrate: 100_000_000,
            ..CAPS
        };
        let p = decode(br#"{"udp":true,"bandwidth":200000000}"#).unwrap();
        assert!(p.plan(&capped).is_err());
        let p = decode(br#"{"tcp":true}"#).unwrap();
        assert!(
            p.plan(&capped).is_err(),
            "unlimited TCP must be refused under a cap"
        );
    }

    #[test]
    fn bidir_streams_and_ids_follow_iperf3() {
        let p = decode(br#"{"tcp":true,"parallel":2,"bidirectional":true}"#).unwrap();
        let plan = p.plan(&CAPS).unwrap();
        assert_eq!(plan.connection_count(), 4);
        let sends: Vec<bool> = (0..4).map(|i| plan.client_sends(i)).collect();
        assert_eq!(sends, [true, true, false, false]);
        let ids: Vec<u32> = (0..4).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5]);
    }

    #[test]
    fn extension_rr_round_trips() {
        let p = Params {
            tcp: Some(true),
            nastune: Some(Extension {
                version: 1,
                rr: Some(RrParams {
                    mode: RrMode::Crr,
                    request_bytes: 64,
                    response_bytes: 512,
                }),
            }),
            ..Params::default()
        };
        let text = serde_json::to_vec(&p).unwrap();
        let back = decode(&text).unwrap();
        assert_eq!(back, p);
        let plan = back.plan(&CAPS).unwrap();
        assert_eq!(plan.connection_count(), 0);
        let bad = decode(br#"{"tcp":true,"nastune":{"version":2}}"#).unwrap();
        assert_eq!(
            bad.plan(&CAPS).unwrap_err(),
            ParamsError::ExtensionVersion(2)
        );
    }
}
