//! The response parser against any bytes a server can send, for the cargo-fuzz
//! target fuzz/fuzz_targets/http_response.rs and for the random-input test
//! below. Whatever the bytes and however they are split, the parser must not
//! panic, claim bytes it was not given, or count more body than it saw.

use super::parser::{Progress, ResponseParser};

/// The first byte chooses the split and whether the request was a HEAD; the
/// rest is the server's byte stream, fed piece by piece, then the close.
/// Returns how many responses completed before the first error.
pub fn response(data: &[u8]) -> usize {
    let Some((&control, stream)) = data.split_first() else {
        return 0;
    };
    let head_request = control & 1 == 1;
    let piece = match usize::from(control >> 1) {
        0 => usize::MAX,
        n => n,
    };
    let mut p = ResponseParser::new();
    p.start(head_request);
    // Bytes the current response was fed so far.
    let mut seen = 0u64;
    let mut complete = 0;
    for mut part in stream.chunks(piece.min(stream.len().max(1))) {
        while !part.is_empty() {
            match p.feed(part) {
                Ok(Progress::NeedMore) => {
                    seen += part.len() as u64;
                    part = &[];
                }
                Ok(Progress::Done { consumed, response }) => {
                    assert!(consumed <= part.len(), "consumed {consumed} of {part:?}");
                    assert!(response.body_bytes <= seen + consumed as u64);
                    part = &part[consumed..];
                    seen = 0;
                    complete += 1;
                }
                Err(_) => return complete,
            }
        }
    }
    if let Ok(r) = p.eof() {
        assert!(
            r.body_bytes <= seen,
            "{} body bytes of {seen}",
            r.body_bytes
        );
        complete += 1;
    }
    complete
}

#[cfg(test)]
mod tests {
    use super::*;
    // xorshift64*: deterministic, so a failure reproduces from the seed.
    use crate::bench::disk::buffers::Rng;

    #[test]
    fn random_and_mutated_responses_never_panic() {
        let seeds: [&[u8]; 6] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 204 No\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4;x=1\r\nWiki\r\n0\r\nT: a\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the close",
            b"HTTP/1.0 200 OK\n\nno length, bare LFs",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 999 Odd\r\nContent-Length: 9223372036854775807\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\nfffffffffffffff\r\n",
        ];
        let alphabet = b"\r\n:;0123456789abcdefHTTP/1. ";
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut complete = 0;
        for i in 0..20_000 {
            let mut data = vec![rng.next_u64() as u8];
            data.extend_from_slice(seeds[i % seeds.len()]);
            for _ in 0..(rng.next_u64() % 5) {
                let at = 1 + (rng.next_u64() as usize) % (data.len() - 1).max(1);
                let at = at.min(data.len());
                match rng.next_u64() % 4 {
                    0 if at < data.len() => data[at] = rng.next_u64() as u8,
                    1 => data.truncate(at),
                    2 => {
                        let copy = data[at.min(data.len() - 1)..].to_vec();
                        data.extend_from_slice(&copy);
                    }
                    _ => data.insert(at, alphabet[(rng.next_u64() as usize) % alphabet.len()]),
                }
            }
            complete += response(&data);
            // And pure noise.
            let noise: Vec<u8> = (0..(rng.next_u64() % 96))
                .map(|_| rng.next_u64() as u8)
                .collect();
            response(&noise);
        }
        // The mutations left enough intact to reach the bodies, not just the
        // status-line check.
        assert!(complete > 5_000, "only {complete} responses completed");
    }

    #[test]
    fn a_valid_stream_is_read_whole_at_every_piece_size() {
        // Two pipelined responses then one delimited by the close: the
        // invariants hold and nothing is rejected, split any way.
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab\
HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nc\r\n0\r\n\r\n\
HTTP/1.0 200 OK\r\n\r\nrest";
        for control in 0..=255u8 {
            let mut data = vec![control & !1];
            data.extend_from_slice(stream);
            assert_eq!(response(&data), 3, "piece size {}", control >> 1);
        }
    }
}
