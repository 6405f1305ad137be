//! Value parsers for flags and arguments: a rejected value is quoted and the
//! message says what to give instead (clap's own say "invalid digit found in
//! string" or "invalid float literal", which names neither).

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// An id the store hands out (runs, tune sessions, journal entries).
fn id(s: &str, what: &str, hint: &str) -> Result<i64, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!("'{s}' is not {what}: give {hint}")),
    }
}

pub fn run_id(s: &str) -> Result<i64, String> {
    id(s, "a run id", "the number shown by 'nastune history list'")
}

pub fn session_id(s: &str) -> Result<i64, String> {
    id(
        s,
        "a tune session id",
        "the number shown by 'nastune history list --kind tune'",
    )
}

pub fn entry_id(s: &str) -> Result<i64, String> {
    id(
        s,
        "a journal entry id",
        "the 'entry' number shown by 'nastune tune verify --json'",
    )
}

/// A TCP or UDP port; 0 would mean "any port", which no server listens on.
pub fn port(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u16>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a port: port must be 1-65535, e.g. 5201"
        )),
    }
}

/// A whole number of `unit` within `range`, e.g. `whole("seconds", 1..=86400)`.
pub fn whole(
    unit: &'static str,
    range: RangeInclusive<u32>,
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    move |s: &str| number(s, "a whole number", unit, &range)
}

/// A finite number of `unit` within `range`, e.g. `real("°C", -50.0..=200.0)`.
pub fn real(
    unit: &'static str,
    range: RangeInclusive<f64>,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| number(s, "a number", unit, &range)
}

fn number<T: FromStr + PartialOrd + Display>(
    s: &str,
    kind: &str,
    unit: &str,
    range: &RangeInclusive<T>,
) -> Result<T, String> {
    let give = format!("give {} to {} {unit}", range.start(), range.end());
    match s.trim().parse::<T>() {
        // NaN is in no range, so it lands here too.
        Ok(v) if range.contains(&v) => Ok(v),
        Ok(_) => Err(format!("'{s}' is out of range: {}", give.trim_end())),
        Err(_) => Err(format!("'{s}' is not {kind}: {}", give.trim_end())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_value_and_where_to_find_one() {
        assert_eq!(run_id("42"), Ok(42));
        let e = run_id("abc").unwrap_err();
        assert!(
            e.contains("'abc' is not a run id") && e.contains("history list"),
            "{e}"
        );
        assert!(session_id("0").unwrap_err().contains("'0'"));
        assert!(entry_id("-3").unwrap_err().contains("tune verify"));
    }

    #[test]
    fn ports_exclude_zero() {
        assert_eq!(port("5201"), Ok(5201));
        for bad in ["0", "65536", "x"] {
            let e = port(bad).unwrap_err();
            assert!(
                e.contains(&format!("'{bad}'")) && e.contains("1-65535"),
                "{e}"
            );
        }
    }

    #[test]
    fn whole_and_real_numbers_state_their_range() {
        let secs = whole("seconds", 1..=86_400);
        assert_eq!(secs("10"), Ok(10));
        assert!(
            secs("1e99")
                .unwrap_err()
                .contains("'1e99' is not a whole number: give 1 to 86400 seconds")
        );
        assert!(secs("0").unwrap_err().contains("give 1 to 86400 seconds"));
        let temp = real("°C", -50.0..=200.0);
        assert_eq!(temp("72.5"), Ok(72.5));
        assert!(
            temp("abc")
                .unwrap_err()
                .contains("'abc' is not a number: give -50 to 200 °C")
        );
        assert!(temp("NaN").is_err());
        assert!(temp("1e99").unwrap_err().contains("out of range"));
    }
}
