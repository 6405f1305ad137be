//! The response decoders against any bytes a server can send, for the
//! cargo-fuzz target fuzz/fuzz_targets/smb_response.rs and the random-input
//! test below. Whatever the bytes, no decoder may panic or hand out a range
//! outside the message.

use super::wire;

/// Runs every decoder on `data`; returns how many accepted it.
pub fn response(data: &[u8]) -> usize {
    let mut ok = 0;
    if data.len() >= 4 {
        ok += usize::from(wire::frame_len([data[0], data[1], data[2], data[3]], 1 << 20).is_ok());
    }
    ok += usize::from(wire::Header::parse(data).is_ok());
    ok += usize::from(wire::Transform::parse(data).is_ok());
    if let Ok(ranges) = wire::split_compound(data) {
        for r in ranges {
            assert!(
                r.start < r.end && r.end <= data.len(),
                "{r:?} of {}",
                data.len()
            );
        }
        ok += 1;
    }
    ok += usize::from(wire::parse_negotiate(data).is_ok());
    ok += usize::from(wire::parse_session_setup(data).is_ok());
    ok += usize::from(wire::parse_tree_connect(data).is_ok());
    ok += usize::from(wire::parse_create(data).is_ok());
    ok += usize::from(wire::parse_write(data).is_ok());
    let asked = data.first().map_or(0, |&b| usize::from(b) << 4);
    if let Ok(r) = wire::parse_read(data, asked) {
        assert!(r.end <= data.len() && r.len() <= asked);
        ok += 1;
    }
    for command in [wire::Command::QueryDirectory, wire::Command::QueryInfo] {
        if let Ok(b) = wire::parse_output_buffer(data, command, asked) {
            assert!(b.len() <= asked);
            ok += 1;
            ok += usize::from(wire::parse_directory(b).is_ok());
        }
    }
    ok += usize::from(wire::parse_directory(data).is_ok());
    #[cfg(feature = "smb")]
    {
        ok += usize::from(super::ntlm::parse_challenge(data).is_ok());
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::buffers::Rng;

    /// The fuzzer's find: a READ response of 0 bytes at an offset past the
    /// message's end was handed out as an out-of-bounds (empty) range.
    #[test]
    fn an_empty_read_far_past_the_end_stays_inside_the_message() {
        let data = include_bytes!("../../tests/fixtures/fuzz/smb-read-empty-far-offset.bin");
        response(data);
        let r = wire::parse_read(data, usize::from(data[0]) << 4).unwrap();
        assert!(r.end <= data.len());
    }

    #[test]
    fn random_responses_never_panic() {
        let mut rng = Rng::new(0x5eed_0018);
        // A valid header in front makes the body decoders go deeper.
        let mut valid = Vec::new();
        wire::put_header(
            &mut valid,
            wire::Command::Read,
            1,
            1,
            wire::FLAG_SERVER_TO_REDIR,
            1,
            1,
            1,
        );
        for i in 0..20_000 {
            let len = (rng.next_u64() % 400) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if i % 2 == 0 {
                let mut d = valid.clone();
                d.append(&mut data);
                data = d;
            }
            response(&data);
        }
    }
}
