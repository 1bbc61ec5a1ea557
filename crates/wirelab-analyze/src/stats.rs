//! Order statistics and fairness.

/// The nearest-rank percentile (`p` in percent, 0 < p ≤ 100) of an ascending slice: the
/// smallest sample with at least `p`% of the samples at or below it. No interpolation, so
/// every reported value is a measured one. `None` for an empty slice.
pub fn percentile(sorted: &[i64], p: u32) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (p.clamp(1, 100) as u64 * n).div_ceil(100).max(1);
    sorted.get(rank as usize - 1).copied()
}

/// Jain's fairness index (Jain, Chiu, Hawe 1984): `(Σx)² / (n·Σx²)`, 1 when all equal,
/// `1/n` when one takes everything. `None` for no values or all zero (undefined).
pub fn jain(xs: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 <= 0.0 {
        return None;
    }
    Some(s * s / (n * s2))
}

/// Percentiles reported for every latency-like metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pctl {
    /// Samples.
    pub n: u64,
    /// Median, ns.
    pub p50_ns: Option<i64>,
    /// 90th percentile, ns.
    pub p90_ns: Option<i64>,
    /// 99th percentile, ns.
    pub p99_ns: Option<i64>,
    /// Largest sample, ns.
    pub max_ns: Option<i64>,
}

impl Pctl {
    /// Summarises an ascending slice.
    pub fn of(sorted: &[i64]) -> Pctl {
        Pctl {
            n: sorted.len() as u64,
            p50_ns: percentile(sorted, 50),
            p90_ns: percentile(sorted, 90),
            p99_ns: percentile(sorted, 99),
            max_ns: sorted.last().copied(),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(percentile(&v, 50), Some(5));
        assert_eq!(percentile(&v, 90), Some(9));
        assert_eq!(percentile(&v, 99), Some(10));
        assert_eq!(percentile(&v, 100), Some(10));
        assert_eq!(percentile(&[7], 1), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn jain_bounds() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain(&[0.0, 0.0]), None);
        let j = jain(&[1.0, 2.0]).unwrap();
        assert!((j - 0.9).abs() < 1e-12);
    }
}
