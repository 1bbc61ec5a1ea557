//! Rates, times, sizes and percentages spelled the way `tc(8)` spells them.
//!
//! Mirrors iproute2's `get_rate64`, `get_time`, `get_size` and `get_percent`
//! (tc/tc_util.c), with one deliberate deviation: a bare number is an error rather than
//! tc's silent default unit (bits/s for rates, microseconds for times), because a missing
//! unit in a scenario is almost always a mistake.
use crate::time::Duration;
use core::fmt;

/// A value that does not parse; the message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    /// What was given.
    pub given: String,
    /// What was expected, e.g. "a rate like 10mbit".
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not {}", self.given, self.expected)
    }
}
impl std::error::Error for UnitError {}

/// Splits `"1.5e3ms"` into the number text and the unit text, or `None` without a number.
fn split_text(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit() || c == '.' || ((c == 'e' || c == 'E') && i > 0 && s[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')) || ((c == '-' || c == '+') && (i == 0 || matches!(s.as_bytes()[i - 1], b'e' | b'E'))))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    Some((&s[..end], s[end..].trim()))
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let (num, unit) = split_text(s)?;
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    Some((v, unit))
}

/// What [`exact`] found wrong.
enum Inexact {
    /// Not a number at all, or negative.
    NotNumber,
    /// 2⁶⁴ or more, or a fraction of the unit (`0.4` bytes, `1.5ns`).
    Range,
}

/// The decimal `num` (`1.5`, `2e3`, `.5`) times the integer `mult`, computed exactly in
/// integers: no binary floating-point error (`18446744073s` is exactly
/// 18446744073000000000 ns), and values that are not a whole number of the unit or do not
/// fit in 64 bits are errors instead of being rounded or clamped.
fn exact(num: &str, mult: u128) -> Result<u64, Inexact> {
    let (neg, body) = match num.as_bytes().first() {
        Some(b'-') => (true, &num[1..]),
        Some(b'+') => (false, &num[1..]),
        _ => (false, num),
    };
    let (mant, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i64>().map_err(|_| Inexact::NotNumber)?),
        None => (body, 0),
    };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    if (ip.is_empty() && fp.is_empty()) || !ip.bytes().chain(fp.bytes()).all(|b| b.is_ascii_digit()) {
        return Err(Inexact::NotNumber);
    }
    let fp = fp.trim_end_matches('0');
    let digits = format!("{}{fp}", ip.trim_start_matches('0'));
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(0);
    }
    if neg {
        return Err(Inexact::NotNumber);
    }
    if digits.len() > 38 {
        return Err(Inexact::Range);
    }
    let m: u128 = digits.parse().map_err(|_| Inexact::Range)?;
    let mut n = m.checked_mul(mult).ok_or(Inexact::Range)?;
    let e = exp.saturating_sub(fp.len() as i64);
    if e >= 0 {
        for _ in 0..e {
            n = n.checked_mul(10).ok_or(Inexact::Range)?;
        }
    } else {
        let d = 10u128.checked_pow(u32::try_from(-e).map_err(|_| Inexact::Range)?).ok_or(Inexact::Range)?;
        if n % d != 0 {
            return Err(Inexact::Range);
        }
        n /= d;
    }
    u64::try_from(n).map_err(|_| Inexact::Range)
}

const RATE: &str = "a rate like 10mbit, 1.5mbit, 100kbit, 1gbit or 125kbps (tc units)";
const TIME: &str = "a time like 20ms, 1.5s, 250us or 100ns";
const SIZE: &str = "a size like 1500, 1500b, 64k, 64kb, 4mb or 8kbit (tc units, k = 1024)";
const RATE_RANGE: &str = "a rate in whole bits per second from 0bit to 18446744073709551615bit (about 18 Ebit/s)";
const TIME_RANGE: &str = "a time in whole nanoseconds from 0ns to 18446744073.709551615s (about 584 years)";
const SIZE_RANGE: &str = "a whole number of bytes from 0 to 18446744073709551615";
const PERCENT: &str = "a percentage like 1% or 0.5%";

/// Rate in bits per second. tc units: `bit`, `kbit`, `mbit`, `gbit`, `tbit` (SI,
/// ×1000), `kibit`… (×1024), and `bps`, `kbps`, `mbps`, `gbps` in **bytes** per second
/// as tc reads them.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: RATE };
    let (v, unit) = split_text(s).ok_or_else(err)?;
    let unit = unit.to_ascii_lowercase();
    let mult: u128 = match unit.as_str() {
        "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "tbit" => 1_000_000_000_000,
        "kibit" => 1 << 10,
        "mibit" => 1 << 20,
        "gibit" => 1 << 30,
        "bps" => 8,
        "kbps" => 8_000,
        "mbps" => 8_000_000,
        "gbps" => 8_000_000_000,
        _ => return Err(err()),
    };
    exact(v, mult).map_err(|e| match e {
        Inexact::NotNumber => err(),
        Inexact::Range => UnitError { given: s.to_string(), expected: RATE_RANGE },
    })
}

/// Time. Units `s`/`sec`/`secs`, `ms`/`msec`/`msecs`, `us`/`usec`/`usecs`,
/// `ns`/`nsec`/`nsecs`.
pub fn parse_time(s: &str) -> Result<Duration, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: TIME };
    let (v, unit) = split_text(s).ok_or_else(err)?;
    let mult: u128 = match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" => 1_000_000_000,
        "ms" | "msec" | "msecs" => 1_000_000,
        "us" | "usec" | "usecs" => 1_000,
        "ns" | "nsec" | "nsecs" => 1,
        _ => return Err(err()),
    };
    exact(v, mult).map(Duration::from_nanos).map_err(|e| match e {
        Inexact::NotNumber => err(),
        Inexact::Range => UnitError { given: s.to_string(), expected: TIME_RANGE },
    })
}

/// Size in bytes. As tc's `get_size`: bare or `b` = bytes, `k`/`kb` = 1024 bytes,
/// `m`/`mb` = 1024², `g`/`gb` = 1024³, `kbit`/`mbit`/`gbit` = that many bits (÷8).
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: SIZE };
    let (v, unit) = split_text(s).ok_or_else(err)?;
    let mult: u128 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "kbit" => (1 << 10) / 8,
        "mbit" => (1 << 20) / 8,
        "gbit" => (1 << 30) / 8,
        _ => return Err(err()),
    };
    exact(v, mult).map_err(|e| match e {
        Inexact::NotNumber => err(),
        Inexact::Range => UnitError { given: s.to_string(), expected: SIZE_RANGE },
    })
}

/// Percentage as a fraction in `[0, 1]`: `"1%"` → 0.01.
pub fn parse_percent(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError { given: s.to_string(), expected: PERCENT };
    let (v, unit) = split_number(s).ok_or_else(err)?;
    if unit != "%" || !(0.0..=100.0).contains(&v) {
        return Err(err());
    }
    Ok(v / 100.0)
}

/// Formats a rate the way `tc` prints it (`10Mbit`, `1544Kbit`).
pub fn format_rate(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps % 1_000_000 == 0 {
        if bps % 1_000_000_000 == 0 {
            format!("{}Gbit", bps / 1_000_000_000)
        } else {
            format!("{}Mbit", bps / 1_000_000)
        }
    } else if bps >= 1_000_000 && bps % 1000 == 0 {
        if bps % 1_000_000 == 0 {
            format!("{}Mbit", bps / 1_000_000)
        } else {
            format!("{}Kbit", bps / 1000)
        }
    } else if bps >= 1000 && bps % 1000 == 0 {
        format!("{}Kbit", bps / 1000)
    } else {
        format!("{}bit", bps)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10mbit").unwrap(), 10_000_000);
        assert_eq!(parse_rate("1.5mbit").unwrap(), 1_500_000);
        assert_eq!(parse_rate("1.544Mbit").unwrap(), 1_544_000);
        assert_eq!(parse_rate("38.8kbit").unwrap(), 38_800);
        assert_eq!(parse_rate("125kbps").unwrap(), 1_000_000);
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("10 megabits").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(format_rate(1_544_000), "1544Kbit");
        assert_eq!(format_rate(100_000_000), "100Mbit");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("20ms").unwrap(), Duration::from_millis(20));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_time("1e-3s").unwrap(), Duration::from_millis(1));
        assert!(parse_time("20").is_err());
        assert!(parse_time("-3ms").is_err());
    }

    #[test]
    fn sizes_and_percent() {
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("4mb").unwrap(), 4 << 20);
        assert_eq!(parse_size("8kbit").unwrap(), 1024);
        assert!(parse_size("64q").is_err());
        assert_eq!(parse_percent("1%").unwrap(), 0.01);
        assert_eq!(parse_percent("0.5%").unwrap(), 0.005);
        assert!(parse_percent("1").is_err());
        assert!(parse_percent("101%").is_err());
        let e = parse_rate("10mbps/s").unwrap_err();
        assert!(e.to_string().contains("10mbit"), "{e}");
    }

    /// Issue 22: out-of-range and fractional values were clamped or rounded silently
    /// (`1e300s` became 584 years, `0.4` bytes became 0).
    #[test]
    fn out_of_range_and_fractions_are_errors_with_the_range() {
        let e = parse_time("1e300s").unwrap_err().to_string();
        assert_eq!(e, "`1e300s` is not a time in whole nanoseconds from 0ns to 18446744073.709551615s (about 584 years)");
        assert!(parse_time("584y").is_err());
        assert!(parse_time("18446744074s").is_err());
        assert_eq!(parse_time("18446744073s").unwrap(), Duration::from_secs(18_446_744_073));
        assert!(parse_time("1.5ns").unwrap_err().to_string().contains("whole nanoseconds"));
        assert_eq!(parse_time("1.1ms").unwrap(), Duration::from_micros(1100));
        assert_eq!(parse_time("0.1us").unwrap(), Duration::from_nanos(100));
        let e = parse_rate("1e20gbit").unwrap_err().to_string();
        assert!(e.contains("18446744073709551615bit"), "{e}");
        assert!(parse_rate("0.5bit").is_err());
        assert_eq!(parse_rate("1.544mbit").unwrap(), 1_544_000);
        assert_eq!(parse_rate("18446744073709551615bit").unwrap(), u64::MAX, "exact, not through f64");
        assert!(parse_rate("18446744073709551616bit").is_err());
        assert_eq!(parse_rate("1e3kbit").unwrap(), 1_000_000);
        assert_eq!(parse_rate("2.5E-3gbit").unwrap(), 2_500_000);
        let e = parse_size("0.4").unwrap_err().to_string();
        assert_eq!(e, "`0.4` is not a whole number of bytes from 0 to 18446744073709551615");
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("17179869184gb").is_err(), "2^64 bytes");
        assert_eq!(parse_size("17179869183gb").unwrap(), (1u64 << 63) - (1 << 30) + (1 << 63));
        assert_eq!(parse_size("0.5k").unwrap(), 512);
        assert_eq!(parse_size("1kbit").unwrap(), 128);
        assert!(parse_size("1bit").is_err(), "not a tc size unit");
    }
}
