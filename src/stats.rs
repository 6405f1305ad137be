//! Welch's t-test and its confidence interval: is the difference between two
//! sets of samples larger than their noise? Written out (Student's t via the
//! regularized incomplete beta function) to keep a statistics crate out.

/// What is known about one side: count, mean and sample variance.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub n: u64,
    pub mean: f64,
    /// Sample variance (n - 1 in the denominator); 0 for a single sample.
    pub variance: f64,
}

impl Summary {
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let n = samples.len();
        if n == 0 {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let variance = if n > 1 {
            samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            n: n as u64,
            mean,
            variance,
        })
    }
}

/// The difference `b - a` with its two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    pub diff: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub df: f64,
    pub p_value: f64,
}

/// Welch's unequal-variances t-test of `b - a`; `None` unless both sides
/// have at least two samples (one number per side carries no noise estimate).
pub fn welch(a: &Summary, b: &Summary, confidence: f64) -> Option<Welch> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (qa, qb) = (a.variance / a.n as f64, b.variance / b.n as f64);
    let se = (qa + qb).sqrt();
    let diff = b.mean - a.mean;
    if se == 0.0 {
        // Both sides repeat exactly: the difference is exact.
        let p_value = if diff == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            diff,
            ci_low: diff,
            ci_high: diff,
            df: f64::INFINITY,
            p_value,
        });
    }
    let df = (qa + qb).powi(2) / (qa * qa / (a.n - 1) as f64 + qb * qb / (b.n - 1) as f64);
    let half = t_quantile(0.5 + confidence / 2.0, df) * se;
    let t = diff / se;
    Some(Welch {
        diff,
        ci_low: diff - half,
        ci_high: diff + half,
        df,
        p_value: 2.0 * (1.0 - t_cdf(t.abs(), df)),
    })
}

/// P(T <= t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The t value with P(T <= t) = p, by bisection (the CDF is monotonic).
/// Interval of the ratio `b.mean / a.mean`, computed on the log scale (delta
/// method: the variance of ln of a mean is about variance / (n * mean^2)) and
/// mapped back, so it is always positive: a change is never "below -100 %".
/// `None` unless both sides have two or more samples and positive means.
pub fn ratio_interval(a: &Summary, b: &Summary, confidence: f64) -> Option<(f64, f64)> {
    if a.n < 2 || b.n < 2 || a.mean <= 0.0 || b.mean <= 0.0 {
        return None;
    }
    let qa = a.variance / (a.n as f64 * a.mean * a.mean);
    let qb = b.variance / (b.n as f64 * b.mean * b.mean);
    let log_ratio = (b.mean / a.mean).ln();
    let se = (qa + qb).sqrt();
    if se == 0.0 {
        let r = log_ratio.exp();
        return Some((r, r));
    }
    let df = (qa + qb).powi(2) / (qa * qa / (a.n - 1) as f64 + qb * qb / (b.n - 1) as f64);
    let half = t_quantile(0.5 + confidence / 2.0, df) * se;
    Some(((log_ratio - half).exp(), (log_ratio + half).exp()))
}

pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1e3, 1e3);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Regularized incomplete beta I_x(a, b) (continued fraction, modified Lentz).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast only below the mean; use the symmetry above it.
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
    }
    front * beta_fraction(a, b, x) / a
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let t = x + 7.5;
    let sum: f64 = C[0]
        + C[1..]
            .iter()
            .enumerate()
            .map(|(i, c)| c / (x + i as f64 + 1.0))
            .sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ratio_intervals_stay_above_minus_100_percent() {
        // The case from the issue: a huge, noisy baseline against a small one.
        let a = Summary::of(&[9.9e12, 3.0e12, 14.0e12]).unwrap();
        let b = Summary::of(&[12.9e9, 12.0e9, 11.5e9]).unwrap();
        let (lo, hi) = ratio_interval(&a, &b, 0.95).unwrap();
        assert!(lo > 0.0 && hi < 1.0, "{lo} {hi}");
        // Equal samples: the ratio is exactly 1.
        let c = Summary::of(&[5.0, 5.0]).unwrap();
        assert_eq!(ratio_interval(&c, &c, 0.95), Some((1.0, 1.0)));
        // A doubling with little noise: the interval holds 2.
        let d = Summary::of(&[100.0, 101.0, 99.0]).unwrap();
        let e = Summary::of(&[200.0, 202.0, 198.0]).unwrap();
        let (lo, hi) = ratio_interval(&d, &e, 0.95).unwrap();
        assert!(lo < 2.0 && hi > 2.0 && lo > 1.9 && hi < 2.1, "{lo} {hi}");
        assert_eq!(
            ratio_interval(&Summary::of(&[1.0]).unwrap(), &e, 0.95),
            None
        );
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided 95 %: df 1 -> 12.706, 2 -> 4.303, 4 -> 2.776, 10 -> 2.228, 30 -> 2.042.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (10.0, 2.228),
            (30.0, 2.042),
        ] {
            let q = t_quantile(0.975, df);
            assert!(close(q, t, 0.001), "df {df}: {q} vs {t}");
        }
        assert!(close(t_cdf(0.0, 5.0), 0.5, 1e-12));
    }

    #[test]
    fn welch_matches_a_worked_example() {
        // Reference values computed independently (Python: Welch df formula, and
        // the t density integrated numerically): t = 5.6023, df = 7.7447,
        // p = 0.000571, 95 % CI of b - a = 1.2423 .. 2.9977.
        let a = Summary::of(&[19.1, 20.3, 18.7, 20.0, 19.6]).expect("samples");
        let b = Summary::of(&[21.4, 22.0, 20.9, 21.7, 22.3]).expect("samples");
        let w = welch(&a, &b, 0.95).expect("two samples each");
        assert!(close(w.diff, 2.12, 1e-9));
        assert!(close(w.df, 7.7447, 1e-3), "df {}", w.df);
        assert!(close(w.ci_low, 1.2423, 2e-3), "low {}", w.ci_low);
        assert!(close(w.ci_high, 2.9977, 2e-3), "high {}", w.ci_high);
        assert!(close(w.p_value, 0.000_571, 1e-5), "p {}", w.p_value);
    }

    #[test]
    fn one_sample_per_side_gives_no_interval() {
        let a = Summary::of(&[10.0]).expect("one sample");
        let b = Summary::of(&[12.0, 13.0]).expect("samples");
        assert_eq!(a.variance, 0.0);
        assert!(welch(&a, &b, 0.95).is_none());
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn identical_repeats_are_exact() {
        let a = Summary::of(&[5.0, 5.0]).expect("samples");
        let w = welch(&a, &a, 0.95).expect("two samples each");
        assert_eq!(
            (w.diff, w.ci_low, w.ci_high, w.p_value),
            (0.0, 0.0, 0.0, 1.0)
        );
    }
}
