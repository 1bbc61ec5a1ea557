//! "Chunkifying" rate meter (thesis §5.1).
//!
//! Every arrival is counted into the current *chunk*. A chunk is completed by the first
//! arrival at or after `chunk` has elapsed since it began (thesis §5.1.2: "a chunk was
//! completed when the first arrival occurred after the end of the user-specified time
//! interval"), and its counts are scaled to the nominal chunk length:
//! `count * chunk / elapsed` (§5.1.1, example: 10 packets in 55 000 µs at 50 000 µs per
//! chunk count as `(50000 * 10) / 55000 = 9`). Completed chunks go into a ring of `K`
//! entries and the rate is the straight average over the filled part of the ring,
//! recomputed only when a chunk completes (the thesis's `sk->computed_rate`).
//!
//! Aging (§5.1.3): a socket that has seen no arrival for `idle` gets its history and rate
//! zeroed. The thesis did this from a 2-second kernel timer; its abstract claims "no
//! additional timers", so seed-systems.md §4.6 makes the lazy check (on each arrival and each
//! query that carries `now`) the default and keeps the timer variant ([`RateMeter::tick`])
//! switchable via [`AgingMode`].
//!
//! Integer arithmetic only, as in the kernel (§5.1 requirement 3). Deviation: packet counts
//! are kept in 1/1000 packets so that the truncation of the per-chunk scaling does not bias
//! low-rate flows; [`ChunkSample::pkts`] gives the thesis's integer value.
use wirelab_core::{Duration, Instant};

/// Period of the thesis's aging timer ("a kernel timer was set to go off every two
/// seconds", §5.1.3). With [`AgingMode::Timer`] the driver calls [`RateMeter::tick`] at
/// this period (one global timer for all sockets, as in the thesis).
pub const RATE_AGE_PERIOD: Duration = Duration::from_secs(2);

/// When idle sockets are aged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AgingMode {
    /// On each arrival / query (no timer; seed-systems.md §4.6 default).
    #[default]
    Lazy,
    /// As the thesis's global timer firing at every multiple of [`RATE_AGE_PERIOD`]:
    /// a socket is aged at the first tick at least `idle` after its last arrival. The
    /// driver need not run the timer: each call that carries `now` first applies the
    /// ticks that have passed (the meter cannot change between them, so the result is the
    /// same), and [`RateMeter::tick`] lets a driver fire it explicitly.
    Timer,
}

/// Meter parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeterConfig {
    /// Nominal chunk length (`rate_microsec_per_chunk`). Must be > 0.
    pub chunk: Duration,
    /// Ring size K (compile-time in the thesis). Must be ≥ 1.
    pub chunks: usize,
    /// Idle interval after which history is zeroed (thesis: "a user specified time
    /// interval", unnamed; ours: `rate_idle_time`).
    pub idle: Duration,
    /// Lazy (default) or timer-driven aging.
    pub aging: AgingMode,
}

impl Default for MeterConfig {
    /// 30 chunks of 100 ms: "the kernel kept 3 seconds of history … each representing
    /// 100 milliseconds" (thesis §6.2); idle 2 s (the aging timer period).
    fn default() -> Self {
        MeterConfig { chunk: Duration::from_millis(100), chunks: 30, idle: RATE_AGE_PERIOD, aging: AgingMode::Lazy }
    }
}

/// One completed chunk, already scaled to its nominal length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkSample {
    /// Bytes, scaled to `span`.
    pub bytes: u64,
    /// Packets × 1000, scaled to `span`.
    pub milli_pkts: u64,
    /// Nominal chunk length the counts are scaled to.
    pub span: Duration,
}

impl ChunkSample {
    /// Whole packets, truncated as the thesis's integer scaling does.
    pub fn pkts(&self) -> u64 {
        self.milli_pkts / 1000
    }
}

/// The per-socket rate history (thesis §5.1).
#[derive(Clone, Debug)]
pub struct RateMeter {
    cfg: MeterConfig,
    ring: Vec<ChunkSample>,
    head: usize,
    len: usize,
    cur_start: Option<Instant>,
    cur_bytes: u64,
    cur_pkts: u64,
    last_arrival: Option<Instant>,
    rate_bytes: u64,
    rate_milli_pps: u64,
    updates: u64,
    last_update: Option<Instant>,
    total_bytes: u64,
    total_pkts: u64,
    resets: u64,
}

/// The last aging-timer tick at or before `now` (ticks at multiples of [`RATE_AGE_PERIOD`]).
pub fn last_tick(now: Instant) -> Instant {
    let p = RATE_AGE_PERIOD.as_nanos();
    Instant::from_nanos(now.as_nanos() / p * p)
}

/// Whether a meter whose last arrival was `last` has been aged by `now`.
pub(crate) fn aged_by(last: Option<Instant>, now: Instant, idle: Duration, aging: AgingMode) -> bool {
    let Some(last) = last else { return false };
    let at = match aging {
        AgingMode::Lazy => now,
        AgingMode::Timer => last_tick(now),
    };
    at >= last && at.saturating_since(last) >= idle
}

fn scale(count: u64, nominal: Duration, elapsed: Duration) -> u64 {
    if elapsed.as_nanos() == 0 {
        return count;
    }
    (count as u128 * nominal.as_nanos() as u128 / elapsed.as_nanos() as u128) as u64
}

impl RateMeter {
    /// A meter with an empty history. `cfg.chunk` of zero is treated as 1 ns and
    /// `cfg.chunks` of zero as 1 ([`crate::RateConfig`] rejects both with an error).
    pub fn new(mut cfg: MeterConfig) -> Self {
        cfg.chunk = cfg.chunk.max(Duration::from_nanos(1));
        cfg.chunks = cfg.chunks.max(1);
        RateMeter {
            ring: vec![ChunkSample::default(); cfg.chunks],
            cfg,
            head: 0,
            len: 0,
            cur_start: None,
            cur_bytes: 0,
            cur_pkts: 0,
            last_arrival: None,
            rate_bytes: 0,
            rate_milli_pps: 0,
            updates: 0,
            last_update: None,
            total_bytes: 0,
            total_pkts: 0,
            resets: 0,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &MeterConfig {
        &self.cfg
    }

    /// Changes the chunk length at run time (the thesis's `/proc` knob). Chunks already in
    /// the ring keep their own span, so the average stays correct; the ring size is fixed,
    /// so a shorter chunk keeps less history (§5.3).
    pub fn set_chunk(&mut self, chunk: Duration) {
        self.cfg.chunk = chunk.max(Duration::from_nanos(1));
    }

    /// Switches between lazy and timer aging.
    pub fn set_aging(&mut self, aging: AgingMode, idle: Duration) {
        self.cfg.aging = aging;
        self.cfg.idle = idle;
    }

    /// Accounts one arrival of `bytes` (payload bytes; one packet) at `now`. Returns true
    /// if a chunk completed, i.e. the rate was recomputed. Mirrors the thesis's hook after
    /// `tcp_data_queue()` appends to the receive queue: the arrival is counted first, then
    /// the chunk is tested for completion.
    pub fn on_arrival(&mut self, now: Instant, bytes: u64) -> bool {
        self.catch_up(now);
        let start = *self.cur_start.get_or_insert(now);
        self.cur_bytes = self.cur_bytes.saturating_add(bytes);
        self.cur_pkts = self.cur_pkts.saturating_add(1);
        self.total_bytes = self.total_bytes.saturating_add(bytes);
        self.total_pkts = self.total_pkts.saturating_add(1);
        self.last_arrival = Some(now);
        let elapsed = now.saturating_since(start);
        if elapsed >= self.cfg.chunk {
            self.complete(now, elapsed);
            true
        } else {
            false
        }
    }

    fn complete(&mut self, now: Instant, elapsed: Duration) {
        let span = self.cfg.chunk;
        let sample = ChunkSample {
            bytes: scale(self.cur_bytes, span, elapsed),
            milli_pkts: scale(self.cur_pkts.saturating_mul(1000), span, elapsed),
            span,
        };
        self.ring[self.head] = sample;
        self.head = (self.head + 1) % self.ring.len();
        self.len = (self.len + 1).min(self.ring.len());
        self.cur_start = Some(now);
        self.cur_bytes = 0;
        self.cur_pkts = 0;
        // Straight average over the filled ring (§5.1.2).
        let (mut b, mut p, mut t) = (0u128, 0u128, 0u128);
        for s in self.samples() {
            b += s.bytes as u128;
            p += s.milli_pkts as u128;
            t += s.span.as_nanos() as u128;
        }
        let t = t.max(1);
        self.rate_bytes = (b * 1_000_000_000 / t).min(u64::MAX as u128) as u64;
        self.rate_milli_pps = (p * 1_000_000_000 / t).min(u64::MAX as u128) as u64;
        self.updates += 1;
        self.last_update = Some(now);
    }

    /// Zeroes history and rate if there has been no arrival for `idle` (§5.1.3). Called by
    /// [`on_arrival`](Self::on_arrival) in lazy mode; the controllers also call it when
    /// queried. Returns true if the history was zeroed.
    pub fn age(&mut self, now: Instant) -> bool {
        match self.last_arrival {
            Some(last) if now.saturating_since(last) >= self.cfg.idle => {
                self.reset();
                true
            }
            _ => false,
        }
    }

    /// Applies the aging due by `now` under the configured [`AgingMode`]: lazy ages at
    /// `now`, timer at the last tick ≤ `now`. Returns true if the history was zeroed.
    pub fn catch_up(&mut self, now: Instant) -> bool {
        if self.would_age(now) {
            self.reset();
            true
        } else {
            false
        }
    }

    /// Would [`catch_up`](Self::catch_up) at `now` zero the history?
    pub fn would_age(&self, now: Instant) -> bool {
        aged_by(self.last_arrival, now, self.cfg.idle, self.cfg.aging)
    }

    /// The timer variant's periodic scan (thesis: every [`RATE_AGE_PERIOD`]). Ages the
    /// meter in either mode; in [`AgingMode::Lazy`] it is redundant but harmless.
    pub fn tick(&mut self, now: Instant) -> bool {
        self.age(now)
    }

    /// Zeroes history, current chunk and rate (also the UDP DROP→WARN "reset the rate to
    /// zero"). Totals are kept.
    pub fn reset(&mut self) {
        self.head = 0;
        self.len = 0;
        self.cur_start = None;
        self.cur_bytes = 0;
        self.cur_pkts = 0;
        self.last_arrival = None;
        self.rate_bytes = 0;
        self.rate_milli_pps = 0;
        self.resets += 1;
        // A reset is a new (zero) rate value.
        self.updates += 1;
    }

    /// Completed chunks, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = &ChunkSample> + '_ {
        let n = self.ring.len();
        let first = (self.head + n - self.len) % n;
        (0..self.len).map(move |i| &self.ring[(first + i) % n])
    }

    /// Number of completed chunks in the ring (≤ K).
    pub fn filled(&self) -> usize {
        self.len
    }

    /// Last computed rate in bytes per second (0 before the first chunk completes).
    pub fn rate_bytes_per_sec(&self) -> u64 {
        self.rate_bytes
    }

    /// Last computed rate in 1/1000 packets per second.
    pub fn rate_milli_pps(&self) -> u64 {
        self.rate_milli_pps
    }

    /// Last computed rate in whole packets per second (the thesis's unit).
    pub fn rate_pps(&self) -> u64 {
        self.rate_milli_pps / 1000
    }

    /// Increments each time the rate value is recomputed or zeroed.
    pub fn generation(&self) -> u64 {
        self.updates
    }

    /// When the rate was last recomputed.
    pub fn last_update(&self) -> Option<Instant> {
        self.last_update
    }

    /// Time of the last arrival (None after aging).
    pub fn last_arrival(&self) -> Option<Instant> {
        self.last_arrival
    }

    /// Bytes and packets ever counted.
    pub fn totals(&self) -> (u64, u64) {
        (self.total_bytes, self.total_pkts)
    }

    /// How often the history was zeroed (aging or explicit reset).
    pub fn resets(&self) -> u64 {
        self.resets
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }
    fn us(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000)
    }

    #[test]
    fn thesis_partial_chunk_example() {
        // §5.1.1: 50 000 µs chunks, 10 packets tracked over 55 000 µs -> 9 packets.
        let mut m = RateMeter::new(MeterConfig { chunk: Duration::from_micros(50_000), ..Default::default() });
        // Nine arrivals inside the chunk, the tenth (closing) one at 55 000 µs.
        for i in 0..9 {
            assert!(!m.on_arrival(us(i * 5_000), 1000));
        }
        assert!(m.on_arrival(us(55_000), 1000));
        let s = *m.samples().next().unwrap();
        assert_eq!(s.pkts(), 9);
        assert_eq!(s.bytes, 10_000 * 50_000 / 55_000);
        assert_eq!(s.milli_pkts, 10_000 * 50_000 / 55_000);
        // Rate = 9.09 packets per 50 ms = 181.8 pps.
        assert_eq!(m.rate_pps(), 181);
        assert_eq!(m.rate_bytes_per_sec(), 181_800, "from the truncated chunk sample");
    }

    #[test]
    fn no_rate_before_first_chunk_completes() {
        let mut m = RateMeter::new(MeterConfig::default());
        for i in 0..99 {
            assert!(!m.on_arrival(ms(i), 1000));
        }
        assert_eq!(m.rate_bytes_per_sec(), 0);
        assert_eq!(m.filled(), 0);
        assert!(m.on_arrival(ms(100), 1000));
        assert_eq!(m.filled(), 1);
    }

    /// Constant-rate arrival pattern: 1448-byte segments every 1.3 ms (~1.114 MB/s).
    #[test]
    fn meter_accuracy_constant_rate() {
        let mut m = RateMeter::new(MeterConfig::default());
        let gap = 1_300_000u64;
        let mut t = 0;
        while t < 6_000_000_000 {
            m.on_arrival(Instant::from_nanos(t), 1448);
            t += gap;
        }
        assert_eq!(m.filled(), 30);
        let expect_bps = 1448.0 * 1e9 / gap as f64;
        let expect_pps = 1e9 / gap as f64;
        let got_bps = m.rate_bytes_per_sec() as f64;
        let got_pps = m.rate_milli_pps() as f64 / 1000.0;
        assert!((got_bps / expect_bps - 1.0).abs() < 0.02, "{got_bps} vs {expect_bps}");
        assert!((got_pps / expect_pps - 1.0).abs() < 0.02, "{got_pps} vs {expect_pps}");
    }

    /// A rate step is tracked: after the ring has turned over, the new rate is read.
    #[test]
    fn meter_follows_rate_change() {
        let mut m = RateMeter::new(MeterConfig { chunks: 10, ..Default::default() });
        let mut t = 0u64;
        while t < 2_000_000_000 {
            m.on_arrival(Instant::from_nanos(t), 1000);
            t += 1_000_000; // 1 MB/s
        }
        let hi = m.rate_bytes_per_sec();
        while t < 4_000_000_000 {
            m.on_arrival(Instant::from_nanos(t), 1000);
            t += 4_000_000; // 250 kB/s
        }
        let lo = m.rate_bytes_per_sec();
        assert!((hi as f64 / 1e6 - 1.0).abs() < 0.02, "{hi}");
        assert!((lo as f64 / 250e3 - 1.0).abs() < 0.02, "{lo}");
    }

    fn burst(m: &mut RateMeter) {
        for i in 0..=500 {
            m.on_arrival(ms(i), 1000);
        }
    }

    #[test]
    fn lazy_aging_of_idle_socket() {
        let mut m = RateMeter::new(MeterConfig::default());
        burst(&mut m);
        assert!(m.rate_bytes_per_sec() > 900_000);
        // Just under the idle interval: history kept.
        assert!(!m.age(ms(500 + 1999)));
        assert!(m.rate_bytes_per_sec() > 900_000);
        // An arrival after the idle interval sees a zeroed history first.
        m.on_arrival(ms(500 + 2000), 1000);
        assert_eq!(m.filled(), 0);
        assert_eq!(m.rate_bytes_per_sec(), 0);
        assert_eq!(m.resets(), 1);
    }

    #[test]
    fn timer_aging_only_on_tick() {
        let mut m = RateMeter::new(MeterConfig { aging: AgingMode::Timer, ..Default::default() });
        burst(&mut m);
        let r = m.rate_bytes_per_sec();
        // The thesis's variant: an arrival after silence does not age …
        m.on_arrival(ms(3000), 1000);
        assert_eq!(m.resets(), 0);
        // … the long chunk is only scaled down and averaged in.
        assert!(m.rate_bytes_per_sec() < r && m.rate_bytes_per_sec() > 0);
        // A tick before `idle` has passed since the last arrival keeps the history.
        assert!(!m.tick(ms(4000)));
        assert!(m.rate_bytes_per_sec() > 0);
        // The tick after 2 s of silence zeroes it.
        assert!(m.tick(ms(5000)));
        assert_eq!(m.rate_bytes_per_sec(), 0);
        assert_eq!(m.filled(), 0);
    }

    #[test]
    fn timer_mode_ages_at_the_tick_grid_without_a_driver() {
        let mut m = RateMeter::new(MeterConfig { aging: AgingMode::Timer, ..Default::default() });
        burst(&mut m); // last arrival at 500 ms
        // Ticks at 2 s (1.5 s idle: no) and 4 s (3.5 s idle: yes).
        assert!(!m.would_age(ms(3999)));
        assert!(m.would_age(ms(4000)));
        // An arrival at 3.9 s: no tick has aged the socket yet.
        let mut n = m.clone();
        n.on_arrival(ms(3900), 1000);
        assert_eq!(n.resets(), 0);
        // An arrival at 4.1 s finds the history zeroed by the 4 s tick.
        m.on_arrival(ms(4100), 1000);
        assert_eq!(m.resets(), 1);
        assert_eq!(m.filled(), 0);
        assert_eq!(last_tick(ms(4100)), ms(4000));
    }

    #[test]
    fn gap_shorter_than_idle_scales_long_chunk_down() {
        let mut m = RateMeter::new(MeterConfig { chunks: 1, ..Default::default() });
        m.on_arrival(ms(0), 1000);
        m.on_arrival(ms(50), 1000);
        // Chunk closes 1 s later: 3 packets over 1000 ms scaled to 100 ms = 0.3 packets.
        assert!(m.on_arrival(ms(1000), 1000));
        let s = *m.samples().next().unwrap();
        assert_eq!(s.milli_pkts, 300);
        assert_eq!(s.bytes, 300);
        assert_eq!(m.rate_milli_pps(), 3000);
    }

    #[test]
    fn chunk_length_change_keeps_average_correct() {
        let mut m = RateMeter::new(MeterConfig::default());
        let mut t = 0u64;
        while t < 1_000_000_000 {
            m.on_arrival(Instant::from_nanos(t), 500);
            t += 1_000_000;
        }
        m.set_chunk(Duration::from_millis(20));
        while t < 1_500_000_000 {
            m.on_arrival(Instant::from_nanos(t), 500);
            t += 1_000_000;
        }
        assert!((m.rate_bytes_per_sec() as f64 / 500e3 - 1.0).abs() < 0.02, "{}", m.rate_bytes_per_sec());
    }
}
