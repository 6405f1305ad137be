//! A log-linear latency histogram in the style of fio's `stat.h`: values below
//! 128 are exact, above that each power of two is split into 64 sub-buckets, so
//! a bucket's midpoint is within 1/128 (< 1 %) of any value in it. Plain `u64`
//! counters in a `Vec` (no atomics): each job owns one and they are merged after.
//! [`LatencyStats`] is its summary as documents store it, shared by every bench
//! kind (disk, http, smb), so it sits below them all.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Sub-bucket bits: 2^6 = 64 sub-buckets per group.
const BITS: u32 = 6;
const SUB: usize = 1 << BITS;
/// 29 groups cover values up to 2^34 ns (~17 s); larger values are clamped.
const GROUPS: usize = 29;
pub const BUCKETS: usize = GROUPS * SUB;

/// The percentiles reported by every bench (fio's names: "99.900000").
pub const REPORTED_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    sum_sq: f64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Bucket index of a value.
fn index_of(v: u64) -> usize {
    if v < (SUB as u64) << 1 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let error_bits = msb - BITS;
    let base = ((error_bits + 1) as usize) << BITS;
    let offset = ((v >> error_bits) as usize) & (SUB - 1);
    (base + offset).min(BUCKETS - 1)
}

/// The value a bucket stands for: its midpoint.
fn value_of(idx: usize) -> u64 {
    if idx < SUB << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> BITS) as u32 - 1;
    let base = 1u64 << (error_bits + BITS);
    let k = (idx % SUB) as u64;
    base + (k << error_bits) + ((1u64 << error_bits) >> 1)
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub fn record(&mut self, v: u64) {
        self.counts[index_of(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        let f = v as f64;
        self.sum_sq += f * f;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn reset(&mut self) {
        *self = Histogram::new();
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    pub fn stddev(&self) -> Option<f64> {
        let mean = self.mean()?;
        let var = self.sum_sq / self.count as f64 - mean * mean;
        Some(var.max(0.0).sqrt())
    }

    /// The value below which `p` percent of the samples fall (fio's definition:
    /// the first bucket where the running count reaches p % of the total).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let want = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (idx, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= want {
                // The exact extremes are known; never report beyond them.
                return Some(value_of(idx).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// Latency summary with fio's field names (`N`, `percentile` keyed "99.900000").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    #[serde(rename = "N")]
    pub n: u64,
    pub percentile: BTreeMap<String, u64>,
}

impl LatencyStats {
    pub fn from_histogram(h: &Histogram) -> Option<Self> {
        let percentile = BTreeMap::from_iter(
            REPORTED_PERCENTILES
                .iter()
                .filter_map(|p| Some((format!("{p:.6}"), h.percentile(*p)?))),
        );
        Some(LatencyStats {
            min: h.min()?,
            max: h.max()?,
            mean: h.mean()?,
            stddev: h.stddev()?,
            n: h.count(),
            percentile,
        })
    }

    /// The value at percentile `p` (one of [`REPORTED_PERCENTILES`]).
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentile.get(&format!("{p:.6}")).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_indexes_round_trip() {
        for v in 0..128 {
            assert_eq!(value_of(index_of(v)), v);
        }
        for idx in 0..BUCKETS {
            assert_eq!(index_of(value_of(idx)), idx, "bucket {idx}");
        }
    }

    #[test]
    fn relative_error_is_below_one_percent() {
        let mut v = 128u64;
        while v < 1 << 34 {
            let got = value_of(index_of(v));
            let err = (got as f64 - v as f64).abs() / v as f64;
            assert!(err < 0.01, "{v} -> {got} ({err})");
            v = v * 1013 / 1000 + 7;
        }
    }

    #[test]
    fn percentiles_of_a_uniform_range() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (p, want) in [
            (50.0, 50_000_000.0),
            (99.0, 99_000_000.0),
            (99.9, 99_900_000.0),
        ] {
            let got = h.percentile(p).unwrap() as f64;
            assert!((got - want).abs() / want < 0.01, "p{p}: {got} vs {want}");
        }
        assert_eq!(h.percentile(100.0), Some(100_000_000));
        assert_eq!(h.min(), Some(1000));
        assert_eq!(h.max(), Some(100_000_000));
        assert!((h.mean().unwrap() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..5000u64 {
            let x = v * v % 77_777 + 3;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.counts, all.counts);
        assert_eq!(a.percentile(99.99), all.percentile(99.99));
        assert_eq!(a.count(), 5000);
    }

    #[test]
    fn empty_histogram_has_no_percentiles_and_huge_values_clamp() {
        let mut h = Histogram::new();
        assert_eq!(h.percentile(50.0), None);
        h.record(u64::MAX);
        assert_eq!(h.percentile(50.0), Some(u64::MAX));
        assert_eq!(index_of(u64::MAX), BUCKETS - 1);
    }
}
