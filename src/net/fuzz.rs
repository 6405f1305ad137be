//! One entry point for everything a peer can make us decode, for the cargo-fuzz
//! target in fuzz/ and for the random-input test below. It must never panic and
//! never allocate more than the caps, whatever the bytes.

use super::params::{self, Caps};
use super::protocol::{self, MAX_PARAMS_JSON, MAX_RESULTS_JSON};
use super::{auth, results, udp};

/// Feeds `data` to the decoders the way the server reads a control connection:
/// a state byte, a framed parameter message, a framed results message, then the
/// rest as a UDP datagram and an auth answer.
pub fn control(data: &[u8]) {
    let mut r = data;
    let _ = protocol::read_state(&mut r);
    if let Ok(msg) = protocol::read_message(&mut r, MAX_PARAMS_JSON) {
        if let Ok(p) = params::decode(&msg) {
            let _ = p.plan(&Caps {
                max_duration_secs: 60,
                max_streams: 16,
                max_bitrate: 1_000_000_000,
            });
        }
        let _ = serde_json::from_slice::<auth::Response>(&msg);
    }
    if let Ok(msg) = protocol::read_message(&mut r, MAX_RESULTS_JSON) {
        let _ = results::decode(&msg);
    }
    for wide in [false, true] {
        if let Some(h) = udp::decode_header(r, wide) {
            let mut s = udp::UdpReceiveStats::default();
            s.record(h, 1.0);
            s.record(h, f64::MAX);
        }
    }
    if let Ok(text) = std::str::from_utf8(r) {
        let _ = auth::unhex(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: deterministic, so a failure reproduces from the seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    #[test]
    fn random_and_mutated_control_input_never_panics() {
        let seeds: [&[u8]; 3] = [
            br#"{"tcp":true,"omit":0,"time":2,"parallel":2,"len":131072,"client_version":"3.12"}"#,
            br#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":9,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#,
            br#"{"udp":true,"bandwidth":1000000,"nastune":{"version":1,"rr":{"mode":"rr","request_bytes":1,"response_bytes":1}}}"#,
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for i in 0..20_000 {
            let seed = seeds[i % seeds.len()];
            let mut body = seed.to_vec();
            for _ in 0..(rng.next() % 4) {
                let at = (rng.next() as usize) % body.len();
                match rng.next() % 3 {
                    0 => body[at] = rng.next() as u8,
                    1 => body.truncate(at),
                    _ => body.insert(at, b"{}[]\",:0-9e"[(rng.next() % 11) as usize]),
                }
                if body.is_empty() {
                    body.push(b'{');
                }
            }
            let mut data = vec![9u8];
            let len = if rng.next().is_multiple_of(8) {
                rng.next() as u32
            } else {
                body.len() as u32
            };
            data.extend_from_slice(&len.to_be_bytes());
            data.extend_from_slice(&body);
            data.extend_from_slice(&(body.len() as u32).to_be_bytes());
            data.extend_from_slice(&body);
            for _ in 0..(rng.next() % 24) {
                data.push(rng.next() as u8);
            }
            control(&data);
            // And pure noise.
            let noise: Vec<u8> = (0..(rng.next() % 64)).map(|_| rng.next() as u8).collect();
            control(&noise);
        }
    }
}
