//! iperf3's number suffixes: sizes use K/M/G = 1024ⁿ (`-w 256K`, `-l 1M`), rates
//! use K/M/G = 1000ⁿ (`-b 100M`).

fn split(text: &str) -> Result<(f64, char), String> {
    let t = text.trim();
    let (num, suffix) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&t[..t.len() - 1], c.to_ascii_uppercase()),
        _ => (t, ' '),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a number with an optional K, M or G suffix"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{text}' must be a non-negative number"));
    }
    Ok((v, suffix))
}

fn scaled(text: &str, base: f64, max: f64) -> Result<u64, String> {
    let (v, suffix) = split(text)?;
    let mult = match suffix {
        ' ' => 1.0,
        'K' => base,
        'M' => base * base,
        'G' => base * base * base,
        'T' => base * base * base * base,
        other => return Err(format!("'{text}': unknown suffix '{other}'; use K, M or G")),
    };
    let out = v * mult;
    if out > max {
        return Err(format!("'{text}' is too large"));
    }
    Ok(out as u64)
}

pub fn parse_size(text: &str) -> Result<u32, String> {
    scaled(text, 1024.0, f64::from(u32::MAX)).map(|v| v as u32)
}

/// `-l`: a write size; 0 cannot carry a stream, and the minimum is stated.
pub fn parse_block_size(text: &str) -> Result<u32, String> {
    match parse_size(text)? {
        0 => Err(format!(
            "'{text}' is too small for a block: give at least 1 byte for TCP, {} for UDP, e.g. 128K",
            super::params::MIN_UDP_BLOCK
        )),
        n => Ok(n),
    }
}

pub fn parse_rate(text: &str) -> Result<u64, String> {
    scaled(text, 1000.0, 1e15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_and_rates_decimal() {
        assert_eq!(parse_size("128K"), Ok(131_072));
        assert_eq!(parse_size("1m"), Ok(1_048_576));
        assert_eq!(parse_size("1448"), Ok(1448));
        assert_eq!(parse_rate("100M"), Ok(100_000_000));
        assert_eq!(parse_rate("1.5G"), Ok(1_500_000_000));
        assert!(parse_rate("fast").unwrap_err().contains("'fast'"));
        assert!(parse_size("5X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("8G").is_err());
    }
}
