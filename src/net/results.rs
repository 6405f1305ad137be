//! The results JSON both ends exchange after EXCHANGE_RESULTS (iperf3
//! `send_results`/`get_results`). Known keys are typed; unknown keys from newer
//! iperf3 versions are ignored; our extras ride under `nastune`.

use serde::{Deserialize, Serialize};

use super::cpu::SystemCpu;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExchangeResults {
    /// Process CPU as iperf3 computes it (% of one core); cJSON writes NaN as null.
    pub cpu_util_total: Option<f64>,
    pub cpu_util_user: Option<f64>,
    pub cpu_util_system: Option<f64>,
    /// 1 when the sender reports TCP retransmits, 0 when not, -1 for a pure receiver.
    #[serde(deserialize_with = "signed_or_wrapped")]
    pub sender_has_retransmits: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    pub streams: Vec<ExchangeStream>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nastune: Option<ResultsExtension>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExchangeStream {
    pub id: u32,
    /// Bytes sent (sender, after the omitted warm-up) or received (receiver).
    pub bytes: u64,
    #[serde(deserialize_with = "signed_or_wrapped")]
    pub retransmits: i64,
    /// Seconds (iperf3 sends seconds here, milliseconds in its own JSON output).
    pub jitter: f64,
    #[serde(deserialize_with = "signed_or_wrapped")]
    pub errors: i64,
    #[serde(deserialize_with = "signed_or_wrapped")]
    pub packets: i64,
    #[serde(default)]
    pub start_time: f64,
    #[serde(default)]
    pub end_time: f64,
}

/// What a nastune peer adds: system-wide CPU including softirq over the test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsExtension {
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_cpu: Option<SystemCpu>,
    /// System-wide CPU per interval (about 1 s each), at most [`MAX_CPU_INTERVALS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interval_system_cpu: Vec<SystemCpu>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_method: Option<String>,
    /// The online CPUs `system_cpu` is a percentage of; sent only to a client
    /// that asked for it (`nastune_results` 2 in its parameters), since older
    /// nastune clients reject unknown keys here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
}

/// What a client that sets `nastune_results` to this (or more) reads in
/// [`ResultsExtension`]: 2 adds `cpus`.
pub const RESULTS_VERSION: u32 = 2;

/// The server's extras for its results: per-interval CPU and, for a client
/// that reads it, its CPU count.
#[derive(Debug, Default)]
pub struct ServerExtra {
    pub interval_system_cpu: Vec<SystemCpu>,
    pub cpus: Option<u32>,
}

/// iperf3 before 3.14 printed -1 as 18446744073709551615 (esnet/iperf#1435);
/// read that as the signed value it was.
fn signed_or_wrapped<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    struct Wrapped;
    impl serde::de::Visitor<'_> for Wrapped {
        type Value = i64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an integer")
        }
        fn visit_i64<E>(self, v: i64) -> Result<i64, E> {
            Ok(v)
        }
        fn visit_u64<E>(self, v: u64) -> Result<i64, E> {
            Ok(v as i64)
        }
    }
    d.deserialize_i64(Wrapped)
}

/// Bounds the per-interval list so results stay far below the message cap.
pub const MAX_CPU_INTERVALS: usize = 600;

pub fn decode(bytes: &[u8]) -> Result<ExchangeResults, serde_json::Error> {
    serde_json::from_slice(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_results_decode_including_null_cpu_and_new_keys() {
        let text = br#"{"cpu_util_total":12.5,"cpu_util_user":null,"cpu_util_system":3,
            "sender_has_retransmits":1,"congestion_used":"cubic","streams":[{"id":1,"bytes":5000000000,
            "retransmits":4,"jitter":0,"errors":0,"omitted_errors":0,"packets":0,"omitted_packets":0,
            "start_time":0,"end_time":2.000131}]}"#;
        let r = decode(text).unwrap();
        assert_eq!(r.streams[0].bytes, 5_000_000_000);
        assert_eq!(r.cpu_util_user, None);
        assert_eq!(r.sender_has_retransmits, 1);
        let old = br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":1,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0}]}"#;
        let r = decode(old).unwrap();
        assert_eq!(
            (r.sender_has_retransmits, r.streams[0].retransmits),
            (-1, -1)
        );
    }

    #[test]
    fn wrong_types_and_bad_extension_are_rejected() {
        assert!(decode(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":"1","bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#).is_err());
        assert!(decode(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[]}"#).is_ok());
        assert!(decode(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[],"nastune":{"version":1,"x":1}}"#).is_err());
        let with_cpus = decode(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[],"nastune":{"version":1,"cpus":4}}"#).unwrap();
        assert_eq!(with_cpus.nastune.and_then(|n| n.cpus), Some(4));
        assert!(
            decode(br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":1,"streams":[]}"#)
                .is_err()
        );
    }
}
