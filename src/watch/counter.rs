//! Counter semantics: every series is tracked on its own, a decrease is told
//! apart as a 32- or 64-bit wrap or a reset (netdata's heuristic), and a series
//! is keyed on a stable identity and the boot, so a new NIC or a reboot starts a
//! new baseline instead of producing a negative or a giant rate.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::sample::Reading;

/// A wrapped step is at most this share of the counter's range (netdata's
/// MAX_INCREMENTAL_PERCENT_RATE); a larger "wrap" is a reset.
const WRAP_MAX_PERCENT: u128 = 10;

/// Increase times kept per series: enough for any sane "N times within W"
/// and bounded on a 128 MiB box.
pub const MAX_EVENTS: usize = 256;

/// Series kept at most; the longest unseen ones go first (interfaces churn).
pub const MAX_SERIES: usize = 4096;

/// What one new value means next to the last one of its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum Step {
    /// The first value of a series: the baseline.
    First,
    Unchanged,
    Increase {
        delta: u64,
    },
    /// The counter went past its maximum; `bits` is 32 or 64.
    Wrap {
        delta: u64,
        bits: u32,
    },
    /// It went down by more than a wrap can explain: driver reload, `ip link`
    /// re-creation, counters cleared. Counted as 0.
    Reset,
    /// Another boot: the kernel started from 0, so the whole value is new.
    Reboot {
        delta: u64,
    },
    /// Same name, different device (other MAC or ifindex, other disk serial).
    NewIdentity,
}

impl Step {
    pub fn delta(self) -> u64 {
        match self {
            Step::Increase { delta } | Step::Wrap { delta, .. } | Step::Reboot { delta } => delta,
            _ => 0,
        }
    }
}

/// Netdata's heuristic for a value below the last one: the counter's width is
/// 32 bits while every value seen fits in 32 bits, else 64; if the step across
/// the top is under 10 % of the range it is a wrap, otherwise a reset.
pub fn classify(last: u64, max_seen: u64, new: u64) -> Step {
    if new == last {
        return Step::Unchanged;
    }
    if new > last {
        return Step::Increase { delta: new - last };
    }
    let bits: u32 = if max_seen <= u64::from(u32::MAX) {
        32
    } else {
        64
    };
    let cap: u128 = 1u128 << bits;
    let delta = cap - u128::from(last) + u128::from(new);
    if delta * 100 < cap * WRAP_MAX_PERCENT {
        // delta < 10 % of 2^64 fits in u64.
        Step::Wrap {
            delta: u64::try_from(delta).unwrap_or(u64::MAX),
            bits,
        }
    } else {
        Step::Reset
    }
}

/// What is remembered of one series, in memory and in the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesState {
    /// Identity within one boot (e.g. MAC + ifindex).
    pub identity: String,
    /// Identity that survives a reboot (e.g. MAC, disk serial).
    pub stable_identity: String,
    /// `None` for values that do not restart with the kernel (SMART).
    pub boot_id: Option<String>,
    pub last: u64,
    pub max_seen: u64,
    /// Increase since the series started, wraps included, resets counted as 0:
    /// never decreases, so it is what /metrics exports.
    pub total: u64,
    pub wraps: u64,
    pub resets: u64,
    pub last_time_unix_s: f64,
    /// When it increased, oldest first, at most [`MAX_EVENTS`].
    pub increases_unix_s: VecDeque<f64>,
}

impl SeriesState {
    fn new(r: &Reading, boot_id: &str, time: f64) -> Self {
        SeriesState {
            identity: r.identity.clone(),
            stable_identity: r.stable_identity.clone(),
            boot_id: r.boot_scoped.then(|| boot_id.to_string()),
            last: r.value,
            max_seen: r.value,
            total: 0,
            wraps: 0,
            resets: 0,
            last_time_unix_s: time,
            increases_unix_s: VecDeque::new(),
        }
    }

    /// Increases at or after `since`.
    pub fn increases_since(&self, since: f64) -> usize {
        self.increases_unix_s
            .iter()
            .filter(|t| **t >= since)
            .count()
    }
}

/// One reading after tracking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub series: String,
    #[serde(flatten)]
    pub step: Step,
    pub value: u64,
    pub total: u64,
    /// Per second over the time since the last value; absent for the first.
    pub rate_per_sec: Option<f64>,
}

#[derive(Debug, Default)]
pub struct Tracker {
    series: BTreeMap<String, SeriesState>,
}

impl Tracker {
    /// Starts from persisted states (the store's baselines).
    pub fn with_states(states: BTreeMap<String, SeriesState>) -> Self {
        Tracker { series: states }
    }

    pub fn get(&self, key: &str) -> Option<&SeriesState> {
        self.series.get(key)
    }

    pub fn states(&self) -> &BTreeMap<String, SeriesState> {
        &self.series
    }

    pub fn observe(&mut self, r: &Reading, boot_id: &str, time: f64) -> Observation {
        let key = r.key();
        let step = match self.series.get(&key) {
            None => Step::First,
            Some(s) => {
                let same_boot = s.boot_id.as_deref().is_none_or(|b| b == boot_id) || !r.boot_scoped;
                // Within a boot the full identity must match; across boots only the
                // stable part (ifindex and device numbers may change on reboot).
                let other_device = if same_boot {
                    s.identity != r.identity
                } else {
                    s.stable_identity != r.stable_identity
                };
                if other_device {
                    Step::NewIdentity
                } else if !same_boot {
                    Step::Reboot { delta: r.value }
                } else if r.resets_only && r.value < s.last {
                    Step::Reset
                } else {
                    classify(s.last, s.max_seen, r.value)
                }
            }
        };
        let rate_per_sec = self.series.get(&key).and_then(|s| {
            let dt = time - s.last_time_unix_s;
            (dt > 0.0 && !matches!(step, Step::First | Step::NewIdentity))
                .then(|| step.delta() as f64 / dt)
        });
        let state = match step {
            Step::First | Step::NewIdentity => {
                self.series
                    .insert(key.clone(), SeriesState::new(r, boot_id, time));
                self.evict();
                self.series.get_mut(&key)
            }
            _ => self.series.get_mut(&key),
        };
        let Some(state) = state else {
            // Evicted at once: only when MAX_SERIES is 0, which it is not.
            return Observation {
                series: key,
                step,
                value: r.value,
                total: 0,
                rate_per_sec,
            };
        };
        let delta = step.delta();
        state.total = state.total.saturating_add(delta);
        match step {
            Step::Wrap { .. } => state.wraps += 1,
            Step::Reset => {
                state.resets += 1;
                // A new range starts: the width guess starts again too.
                state.max_seen = r.value;
            }
            Step::Reboot { .. } => {
                state.boot_id = Some(boot_id.to_string());
                state.identity = r.identity.clone();
                state.max_seen = r.value;
            }
            _ => {}
        }
        if delta > 0 {
            if state.increases_unix_s.len() == MAX_EVENTS {
                state.increases_unix_s.pop_front();
            }
            state.increases_unix_s.push_back(time);
        }
        state.last = r.value;
        state.max_seen = state.max_seen.max(r.value);
        state.last_time_unix_s = time;
        Observation {
            series: key,
            step,
            value: r.value,
            total: state.total,
            rate_per_sec,
        }
    }

    fn evict(&mut self) {
        while self.series.len() > MAX_SERIES {
            let oldest = self
                .series
                .iter()
                .min_by(|a, b| a.1.last_time_unix_s.total_cmp(&b.1.last_time_unix_s))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => {
                    self.series.remove(&k);
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(value: u64, identity: &str) -> Reading {
        Reading {
            metric: "net_rx_dropped",
            labels: vec![("device", "eth0".into())],
            identity: identity.into(),
            stable_identity: identity.split(',').next().unwrap_or("").into(),
            boot_scoped: true,
            resets_only: false,
            value,
        }
    }

    #[test]
    fn observations_of_every_step_round_trip_byte_for_byte() {
        let steps = [
            Step::First,
            Step::Unchanged,
            Step::Increase { delta: 5 },
            Step::Wrap { delta: 7, bits: 32 },
            Step::Reset,
            Step::Reboot { delta: 9 },
            Step::NewIdentity,
        ];
        let obs: Vec<Observation> = steps
            .iter()
            .enumerate()
            .map(|(i, &step)| Observation {
                series: format!("net/eth{i}/rx_bytes"),
                step,
                value: 100,
                total: 7,
                rate_per_sec: (i > 0).then_some(1.5),
            })
            .collect();
        let json = serde_json::to_string(&obs).unwrap();
        assert!(
            json.contains(r#""step":"wrap","delta":7,"bits":32,"value":100"#),
            "{json}"
        );
        let back: Vec<Observation> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, obs);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let e = serde_json::from_str::<Observation>(
            r#"{"series": "s", "step": "wrap", "delta": 1, "value": 1, "total": 1}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("missing field `bits`"), "{e}");
    }

    #[test]
    fn wraps_and_resets_by_width() {
        // DietPi#1666: a 32-bit rx_bytes wrap.
        assert_eq!(
            classify(4_248_714_927, 4_248_714_927, 20_173_913),
            Step::Wrap {
                delta: (1u64 << 32) - 4_248_714_927 + 20_173_913,
                bits: 32
            }
        );
        // A small counter falling back: no wrap explains that.
        assert_eq!(classify(100, 100, 50), Step::Reset);
        // 64-bit counter near its top.
        assert_eq!(
            classify(u64::MAX - 5, u64::MAX - 5, 10),
            Step::Wrap {
                delta: 16,
                bits: 64
            }
        );
        // A 64-bit-sized counter dropping to a small value is a reset, not a 2^32 wrap.
        assert_eq!(classify(5_000_000_000, 5_000_000_000, 3), Step::Reset);
        assert_eq!(classify(7, 7, 7), Step::Unchanged);
        assert_eq!(classify(7, 7, 9), Step::Increase { delta: 2 });
    }

    #[test]
    fn identity_boot_and_no_negative_totals() {
        let mut t = Tracker::default();
        let a = "mac=aa,ifindex=2";
        assert_eq!(t.observe(&reading(10, a), "b1", 0.0).step, Step::First);
        let o = t.observe(&reading(12, a), "b1", 10.0);
        assert_eq!(o.step, Step::Increase { delta: 2 });
        assert_eq!(o.rate_per_sec, Some(0.2));
        assert_eq!(t.observe(&reading(1, a), "b1", 20.0).step, Step::Reset);
        assert_eq!(
            t.get("net_rx_dropped{device=\"eth0\"}").map(|s| s.total),
            Some(2)
        );
        // Same MAC after a reboot, other ifindex: the kernel started from 0.
        let o = t.observe(&reading(4, "mac=aa,ifindex=3"), "b2", 30.0);
        assert_eq!(o.step, Step::Reboot { delta: 4 });
        assert_eq!(o.total, 6);
        // Another NIC under the same name in the same boot: a new baseline.
        let o = t.observe(&reading(1, "mac=bb,ifindex=9"), "b2", 40.0);
        assert_eq!(o.step, Step::NewIdentity);
        assert_eq!(o.total, 0);
        assert_eq!(o.rate_per_sec, None);
    }
}
