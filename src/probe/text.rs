//! Small pure helpers shared by the parsers.

use super::ParseError;

/// Parses an unsigned integer, naming the value in the error.
pub fn parse_u64(what: &str, value: &str) -> Result<u64, ParseError> {
    value
        .trim()
        .parse()
        .map_err(|_| ParseError::value(what, value.trim()))
}

/// Parses a signed integer, naming the value in the error.
pub fn parse_i64(what: &str, value: &str) -> Result<i64, ParseError> {
    value
        .trim()
        .parse()
        .map_err(|_| ParseError::value(what, value.trim()))
}

/// Parses a float, naming the value in the error.
pub fn parse_f64(what: &str, value: &str) -> Result<f64, ParseError> {
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| ParseError::value(what, value.trim()))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(ParseError::value(what, value.trim()))
    }
}

/// Splits `key : value` or `key: value` lines (cpuinfo, meminfo).
pub fn split_colon(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// A sysfs value that is `0`/`1`.
pub fn parse_bool01(what: &str, value: &str) -> Result<bool, ParseError> {
    match value.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(ParseError::value(what, other)),
    }
}

/// The selected entry of a sysfs choice list such as `mq-deadline [none] bfq`.
pub fn parse_bracketed_choice(value: &str) -> (Option<String>, Vec<String>) {
    let mut selected = None;
    let mut all = Vec::new();
    for word in value.split_whitespace() {
        if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            selected = Some(inner.to_string());
            all.push(inner.to_string());
        } else {
            all.push(word.to_string());
        }
    }
    (selected, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choice() {
        let (sel, all) = parse_bracketed_choice("mq-deadline kyber [bfq] none\n");
        assert_eq!(sel.as_deref(), Some("bfq"));
        assert_eq!(all, vec!["mq-deadline", "kyber", "bfq", "none"]);
        assert_eq!(parse_bracketed_choice("none").0, None);
    }

    #[test]
    fn numbers_name_the_value() {
        assert_eq!(parse_u64("x", " 42\n").unwrap(), 42);
        let e = parse_u64("swappiness", "sixty").unwrap_err().to_string();
        assert!(e.contains("'sixty'") && e.contains("swappiness"), "{e}");
        assert!(parse_f64("f", "NaN").is_err());
        assert!(parse_bool01("b", "2").is_err());
    }
}
