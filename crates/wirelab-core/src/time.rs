//! Simulated time in integer nanoseconds.
//!
//! Integer time keeps results bit-identical across machines: no float rounding ever decides
//! event order. `u64` nanoseconds cover 584 years of simulated time.
use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// A point in simulated time, nanoseconds since the start of the run.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

/// A span of simulated time in nanoseconds.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Instant {
    /// The start of every run.
    pub const ZERO: Instant = Instant(0);
    /// Later than any event; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);
    /// From nanoseconds since the start of the run.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// Nanoseconds since the start of the run.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start of the run, for reporting only.
    pub fn as_secs_f64(self) -> f64 {
        // divide (not multiply by 1e-9) so whole milliseconds print exactly (0.3, not 0.30000000000000004)
        self.0 as f64 / 1e9
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// Zero length.
    pub const ZERO: Duration = Duration(0);
    /// Longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);
    /// From nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// From microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// From milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// From whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// From float seconds, rounded to the nearest nanosecond (for configuration only).
    pub fn from_secs_f64(s: f64) -> Self {
        Duration((s * 1e9).round().max(0.0) as u64)
    }
    /// Nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Microseconds, truncated.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// Milliseconds, truncated.
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }
    /// Float seconds, for reporting.
    pub fn as_secs_f64(self) -> f64 {
        // divide (not multiply by 1e-9) so whole milliseconds print exactly (0.3, not 0.30000000000000004)
        self.0 as f64 / 1e9
    }
    /// Time to serialise `bytes` at `rate_bps` bits per second, rounded up to whole ns
    /// (a link never finishes a frame early). Zero rate means "no serialisation delay".
    pub fn transmit_time(bytes: u64, rate_bps: u64) -> Duration {
        if rate_bps == 0 {
            return Duration::ZERO;
        }
        // u64 arithmetic (a hardware divide, not a 128-bit library call: this runs for
        // every packet on every link) whenever the product fits, as it does for any frame
        // below 2.3 GB
        if let Some(num) = bytes.checked_mul(8_000_000_000) {
            return Duration(num.div_ceil(rate_bps));
        }
        let num = bytes as u128 * 8 * 1_000_000_000;
        Duration(num.div_ceil(rate_bps as u128) as u64)
    }
    /// `self - other`, or zero.
    pub fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    /// `self * k`, saturating.
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d.0)
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0 - d.0)
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, o: Instant) -> Duration {
        Duration(self.0 - o.0)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0 + o.0)
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        self.0 += o.0;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        Duration(self.0 - o.0)
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, o: Duration) {
        self.0 -= o.0;
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, k: u64) -> Duration {
        Duration(self.0 * k)
    }
}
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, k: u64) -> Duration {
        Duration(self.0 / k)
    }
}

fn fmt_ns(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if ns % 1_000_000_000 == 0 {
        write!(f, "{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        write!(f, "{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        write!(f, "{}us", ns / 1_000)
    } else {
        write!(f, "{}ns", ns)
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}
impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t=")?;
        fmt_ns(self.0, f)
    }
}
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}", self.as_secs_f64())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn transmit_time_rounds_up() {
        // 1500 B at 10 Mbit/s = 1.2 ms exactly
        assert_eq!(Duration::transmit_time(1500, 10_000_000), Duration::from_micros(1200));
        // 1 B at 3 bit/s = 2.666.. s -> rounded up
        assert_eq!(Duration::transmit_time(1, 3).as_nanos(), 2_666_666_667);
        assert_eq!(Duration::transmit_time(1500, 0), Duration::ZERO);
        // past the u64 product: the 128-bit path, same rounding
        assert_eq!(Duration::transmit_time(1 << 40, 8_000_000_000).as_nanos(), 1 << 40);
        assert_eq!(Duration::transmit_time(3_000_000_001, 10_000_000_000).as_nanos(), 2_400_000_001);
        assert_eq!(Duration::transmit_time(2_000_000_001, 10_000_000_000).as_nanos(), 1_600_000_001);
    }
    #[test]
    fn arithmetic() {
        let t = Instant::ZERO + Duration::from_millis(20);
        assert_eq!(t - Instant::ZERO, Duration::from_millis(20));
        assert_eq!(Instant::ZERO.saturating_since(t), Duration::ZERO);
        assert_eq!(format!("{:?}", Duration::from_millis(20)), "20ms");
    }
}
