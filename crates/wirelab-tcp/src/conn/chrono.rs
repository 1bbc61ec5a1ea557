//! `tcp_chrono_*()` (`tcp_output.c`): how long the connection was busy sending, and how
//! much of that it was limited by the peer's receive window or by the send buffer —
//! `tcpi_busy_time`, `tcpi_rwnd_limited`, `tcpi_sndbuf_limited`. Counted in jiffies as
//! the kernel does (`tcp_jiffies32`), reported in µs (`tcp_get_info_chrono_stats()`).

/// `enum tcp_chrono`, in priority order: a higher one takes over a running lower one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ChronoType {
    Unspec = 0,
    Busy = 1,
    RwndLimited = 2,
    SndbufLimited = 3,
}

/// `tp->chrono_type`, `tp->chrono_start`, `tp->chrono_stat[]`.
#[derive(Clone, Debug)]
pub(crate) struct Chrono {
    ty: ChronoType,
    start: u32,
    stat: [u32; 3],
}

impl Chrono {
    pub fn new() -> Self {
        Chrono { ty: ChronoType::Unspec, start: 0, stat: [0; 3] }
    }

    /// `tcp_chrono_set()`.
    fn set(&mut self, now_j: u32, new: ChronoType) {
        if self.ty > ChronoType::Unspec {
            let i = self.ty as usize - 1;
            self.stat[i] = self.stat[i].wrapping_add(now_j.wrapping_sub(self.start));
        }
        self.start = now_j;
        self.ty = new;
    }

    /// `tcp_chrono_start()`: only a more interesting condition replaces the running one.
    pub fn start(&mut self, now_j: u32, ty: ChronoType) {
        if ty > self.ty {
            self.set(now_j, ty);
        }
    }

    /// `tcp_chrono_stop()`: nothing queued stops the clock; stopping the running
    /// condition falls back to busy.
    pub fn stop(&mut self, now_j: u32, ty: ChronoType, queues_empty: bool) {
        if queues_empty {
            self.set(now_j, ChronoType::Unspec);
        } else if ty == self.ty {
            self.set(now_j, ChronoType::Busy);
        }
    }

    /// `tcp_get_info_chrono_stats()`: (busy_time, rwnd_limited, sndbuf_limited) in µs at
    /// jiffy `now_j` (`None`: without the running condition's time since it started);
    /// busy_time is the sum of all three.
    pub fn stats_us(&self, now_j: Option<u32>, hz: u32) -> (u64, u64, u64) {
        let mut s = [0u64; 3];
        for (i, v) in s.iter_mut().enumerate() {
            let mut j = self.stat[i] as u64;
            if let Some(n) = now_j.filter(|_| self.ty as usize == i + 1) {
                j += n.wrapping_sub(self.start) as u64;
            }
            *v = j * (1_000_000 / hz.max(1) as u64);
        }
        (s[0] + s[1] + s[2], s[1], s[2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwnd_limited_then_busy_then_idle() {
        // tcp-info-rwnd-limited.pkt's first part at HZ 1000: a write at 10 ms into a zero
        // window, the window opens at 210 ms, everything is ACKed at 240 ms
        let mut c = Chrono::new();
        c.start(10, ChronoType::Busy);
        c.start(10, ChronoType::RwndLimited);
        c.start(10, ChronoType::Busy); // lower priority: ignored
        assert_eq!(c.stats_us(Some(110), 1000), (100_000, 100_000, 0));
        c.stop(210, ChronoType::RwndLimited, false);
        c.stop(240, ChronoType::Busy, true);
        assert_eq!(c.stats_us(Some(500), 1000), (230_000, 200_000, 0));
        // stopping a condition that is not the running one changes nothing
        c.start(600, ChronoType::Busy);
        c.stop(650, ChronoType::SndbufLimited, false);
        assert_eq!(c.stats_us(Some(700), 1000), (330_000, 200_000, 0));
        c.start(700, ChronoType::SndbufLimited);
        assert_eq!(c.stats_us(Some(720), 1000), (350_000, 200_000, 20_000));
        assert_eq!(c.stats_us(None, 1000), (330_000, 200_000, 0));
        // HZ 250: 4 ms per jiffy
        assert_eq!(Chrono { ty: ChronoType::Busy, start: 0, stat: [0; 3] }.stats_us(Some(5), 250), (20_000, 0, 0));
    }
}
