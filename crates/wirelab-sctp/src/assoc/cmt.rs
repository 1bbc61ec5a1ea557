//! Concurrent multipath transfer (CMT): Iyengar, Amer and Stewart, "Concurrent Multipath
//! Transfer Using SCTP Multihoming Over Independent End-to-End Paths" (IEEE/ACM ToN 14(5),
//! 2006), as FreeBSD implements it (`sys/netinet/sctp_indata.c`, `sctp_output.c`,
//! `sctp_cc_functions.c`, `sctp_timer.c`; `net.inet.sctp.cmt_on_off`).
//!
//! What lives here: which path new data goes to (round robin over the paths' cwnds, as
//! `sctp_med_chunk_output()`), where a retransmission goes (the RTX policies), the
//! per-SACK decisions of split fast retransmit (SFR) and the delayed-ack algorithm (DAC),
//! and FreeBSD's resource-pooling cwnd arithmetic (`cmt_on_off` 2–4). The SACK walk in
//! `sack.rs` records the per-path facts (`saw_newack`, `highest_newack`, `new_pca`) that
//! these rules read; CUC is applied in `sack.rs`'s cwnd update.
use super::path::{Increase, Path};
use super::Assoc;
use crate::config::{Cmt, RtxPolicy, SctpConfig};
use crate::types::PathState;
use crate::wire::Tsn;
use wirelab_core::Rng;

/// FreeBSD `SCTP_SACK_CMT_DAC`: the SACK says two (or more) DATA packets arrived since the
/// previous SACK.
pub(super) const SACK_CMT_DAC: u8 = 0x80;

/// The DAC facts of one SACK (FreeBSD `sctp_strike_gap_ack_chunks()`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dac {
    /// The SACK's DAC flag is set and it acks new data on exactly one path (not a
    /// "mixed" SACK: `num_dests_sacked == 1`).
    pub extra: bool,
    /// Lowest TSN this SACK newly acked (the cumulative TSN when that moved, so no TSN
    /// still missing is below it: `this_sack_lowest_newack`).
    pub lowest_newack: Tsn,
}

/// How many miss indications a chunk in flight below the highest TSN newly acked gets
/// from one SACK under CMT: `None` when SFR withholds it (no TSN sent later to the same
/// path was newly acked by a gap block: FreeBSD's `saw_newack` /
/// `this_sack_highest_newack` tests), else 1, or 2 when DAC adds one (the chunk lies
/// below every TSN the single-path SACK newly acked).
pub(super) fn misses_for(sfr: bool, dac: Option<Dac>, path: &Path, tsn: Tsn) -> Option<u8> {
    if sfr && !(path.saw_newack && tsn < path.highest_newack) {
        return None;
    }
    match dac {
        Some(d) if d.extra && tsn < d.lowest_newack => Some(2),
        _ => Some(1),
    }
}

/// Index of a uniformly chosen element of `cands` (FreeBSD breaks cwnd ties at random).
fn pick(cands: &[usize], rng: &mut Rng) -> Option<usize> {
    match cands.len() {
        0 => None,
        1 => Some(cands[0]),
        n => Some(cands[rng.below(n as u64) as usize]),
    }
}

/// The destination of a retransmission of a chunk last sent to `orig` (ToN 2006 §V).
/// Only ACTIVE paths qualify (PF and INACTIVE ones are skipped, as FreeBSD's CMT-PF
/// `sctp_find_alternate_net(…, 2)`); when none does, `fallback` (RFC 9260 §6.4.1's
/// alternate) is used.
pub(super) fn choose_rtx(policy: RtxPolicy, paths: &[Path], orig: usize, fallback: usize, rng: &mut Rng) -> usize {
    let mut cands = [0usize; super::MAX_ADDRS];
    let mut n = 0;
    let mut best = 0u64;
    let active = |p: &Path| p.state == PathState::Active;
    for (i, p) in paths.iter().enumerate().take(super::MAX_ADDRS) {
        if !active(p) {
            continue;
        }
        let key = match policy {
            RtxPolicy::Same => continue,
            RtxPolicy::Asap if p.flight >= p.cwnd => continue,
            RtxPolicy::Asap => 1,
            RtxPolicy::Cwnd => p.cwnd as u64,
            RtxPolicy::Ssthresh => p.ssthresh as u64,
        };
        if key > best {
            best = key;
            n = 0;
        }
        if key == best {
            cands[n] = i;
            n += 1;
        }
    }
    let same = if active(&paths[orig]) { orig } else { fallback };
    if policy == RtxPolicy::Same {
        return same;
    }
    pick(&cands[..n], rng).unwrap_or(if policy == RtxPolicy::Asap { same } else { fallback })
}

/// FreeBSD's smoothed RTT `lastsa`: ms scaled by 8 (`SCTP_RTT_SHIFT`), 0 before a sample.
fn lastsa(p: &Path) -> u64 {
    p.srtt.map_or(0, |ns| ns * 8 / 1_000_000)
}

/// The association-wide sums FreeBSD's resource-pooling rules use, taken before any path
/// changes (`sctp_cwnd_update_after_sack_common()`, `sctp_cwnd_update_after_fr()`,
/// `sctp_cwnd_update_after_timeout()`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Pool {
    mode: Cmt,
    mtu: u64,
    /// Σ ssthresh (≥ 1).
    t_ssthresh: u64,
    /// Σ cwnd.
    t_cwnd: u64,
    /// Σ cwnd / lastsa over paths with an RTT (≥ 1).
    t_ucwnd_sbw: u64,
    /// `mptcp_like_alpha`, scaled by 2^8 (`SHIFT_MPTCP_MULTI`).
    alpha: u64,
}

/// FreeBSD's `sctp_L2_abc_variable` caps a slow-start step at L·MTU (default 2). wirelab's
/// base congestion control is Linux's (one MTU per SACK), so the pooled variants use L = 1
/// too and the modes differ only in each path's share.
const ABC_L: u64 = 1;

impl Pool {
    /// `None` unless `mode` is one of the resource-pooling variants.
    pub(super) fn new(mode: Cmt, paths: &[Path], mtu: u32) -> Option<Pool> {
        if !matches!(mode, Cmt::RpV1 | Cmt::RpV2 | Cmt::Mptcp) {
            return None;
        }
        let mtu = mtu as u64;
        let (mut t_ss, mut t_cwnd, mut t_sbw, mut t_mptcp, mut max_path) = (0u64, 0u64, 0u64, 0u128, 0u128);
        for p in paths {
            t_ss = t_ss.saturating_add(p.ssthresh as u64);
            t_cwnd += p.cwnd as u64;
            let srtt = lastsa(p);
            if let Some(q) = (p.cwnd as u64).checked_div(srtt) {
                t_sbw += q;
                t_mptcp += ((p.cwnd as u128) << 16) / (mtu as u128 * srtt as u128);
                let tmp = ((p.cwnd as u128) << 40) / (mtu as u128 * (srtt as u128 * srtt as u128));
                max_path = max_path.max(tmp);
            }
        }
        let alpha = if t_mptcp > 0 { (max_path / (t_mptcp * t_mptcp)).min(u64::MAX as u128) as u64 } else { 1 };
        Some(Pool { mode, mtu, t_ssthresh: t_ss.max(1), t_cwnd, t_ucwnd_sbw: t_sbw.max(1), alpha })
    }

    /// cwnd increments of path `p` for its `p.acked` newly acked bytes.
    pub(super) fn increase(&self, p: &Path) -> Increase {
        let (mtu, acked, cwnd) = (self.mtu, p.acked as u64, p.cwnd as u64);
        let (ss, ca) = match self.mode {
            Cmt::RpV1 => {
                let share = |x: u64| x * p.ssthresh as u64 / self.t_ssthresh;
                (share(acked).min(share(mtu * ABC_L)).max(1), share(mtu).max(1))
            }
            Cmt::RpV2 => {
                let d = lastsa(p).max(1) * self.t_ucwnd_sbw;
                let share = |x: u64| x * cwnd / d;
                (share(acked).min(share(mtu * ABC_L)).max(1), share(mtu).max(1))
            }
            _ => {
                let limit = (mtu * self.alpha * ABC_L) >> 8;
                let ss = ((acked * self.alpha) >> 8).min(limit).min(acked).min(mtu);
                (ss, ((self.alpha * cwnd) >> 8).min(mtu))
            }
        };
        let c = |v: u64| v.min(u32::MAX as u64) as u32;
        Increase { slow_start: c(ss), avoidance: c(ca) }
    }

    /// FreeBSD's shared tail: ssthresh ≥ cwnd − Σcwnd/2 (when cwnd > Σcwnd/2), ≥ MTU.
    fn clamp(&self, p: &Path, ss: u64) -> u32 {
        let cwnd = p.cwnd as u64;
        let half = self.t_cwnd / 2;
        let ss = if cwnd > half && ss < cwnd - half { cwnd - half } else { ss };
        ss.max(self.mtu).min(u32::MAX as u64) as u32
    }

    /// ssthresh after a fast retransmit on `p` (`None`: the base rule, MPTCP-like too).
    pub(super) fn fr_ssthresh(&self, p: &Path) -> Option<u32> {
        let ss = match self.mode {
            Cmt::RpV1 => 4 * self.mtu * p.ssthresh as u64 / self.t_ssthresh,
            Cmt::RpV2 => 4 * self.mtu * p.cwnd as u64 / (lastsa(p).max(1) * self.t_ucwnd_sbw),
            _ => return None,
        };
        Some(self.clamp(p, ss))
    }

    /// ssthresh after a T3-rtx timeout on `p` (`None`: the base rule).
    pub(super) fn t3_ssthresh(&self, p: &Path) -> Option<u32> {
        let ss = match self.mode {
            Cmt::RpV1 => 4 * self.mtu * p.ssthresh as u64 / self.t_ssthresh,
            Cmt::RpV2 => {
                let cc_delta = self.t_ucwnd_sbw * lastsa(p).max(1) / 2;
                if cc_delta < self.t_cwnd {
                    self.t_cwnd - cc_delta
                } else {
                    self.mtu
                }
            }
            _ => return None,
        };
        Some(self.clamp(p, ss))
    }

    /// RPv1/RPv2 start each path at IW / number of paths (≥ one MTU; FreeBSD
    /// `sctp_set_initial_cc_param()`).
    pub(super) fn initial_cwnd(mode: Cmt, iw: u32, paths: usize, mtu: u32) -> u32 {
        if matches!(mode, Cmt::RpV1 | Cmt::RpV2) {
            (iw / paths.max(1) as u32).max(mtu - 12)
        } else {
            iw
        }
    }
}

impl Assoc {
    /// CMT's delayed-ack rules apply to this association (`cmt_on_off > 0 &&
    /// cmt_use_dac`, on the receiver for the SACK flags and delay, on the sender for the
    /// extra miss indication).
    pub(super) fn dac_on(&self, cfg: &SctpConfig) -> bool {
        self.sock.cmt.on() && cfg.cmt_use_dac
    }

    /// Start of an output pass: the path after the one the previous pass started at
    /// (FreeBSD `asoc->last_net_cmt_send_started`).
    pub(super) fn cmt_begin_pass(&mut self) {
        if self.sock.cmt.on() && !self.paths.is_empty() {
            let start = self.cmt_last_start.map_or(0, |l| (l + 1) % self.paths.len());
            self.cmt_last_start = Some(start);
        }
    }

    /// Whether new data may go to `path`: without CMT only the active path; with CMT any
    /// ACTIVE path (PF paths get none, as FreeBSD's "if dest is in PF state, do not send
    /// data to it"), or the active path when no path is ACTIVE.
    pub(super) fn data_path_ok(&self, path: usize) -> bool {
        if !self.sock.cmt.on() {
            return path == self.active;
        }
        match self.paths.get(path) {
            Some(p) if p.state == PathState::Active => true,
            _ => path == self.active && self.paths.iter().all(|p| p.state != PathState::Active),
        }
    }

    /// Paths in the order this pass serves them: from the pass's start, round robin.
    pub(super) fn cmt_order(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.paths.len();
        let start = self.cmt_last_start.unwrap_or(0) % n.max(1);
        (0..n).map(move |k| (start + k) % n)
    }

    /// Destination of a retransmission of a chunk last sent on `orig`, by the CMT policy.
    pub(super) fn rtx_destination(&self, cfg: &SctpConfig, orig: usize, rng: &mut Rng) -> usize {
        let fallback = self.alternate(orig);
        choose_rtx(cfg.cmt_rtx_policy, &self.paths, orig, fallback, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn path(cwnd: u32, ssthresh: u32, flight: u32, srtt_ms: u64) -> Path {
        let cfg = SctpConfig::default();
        let mut p = Path::new(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1), &cfg, ssthresh);
        p.cwnd = cwnd;
        p.flight = flight;
        p.srtt = (srtt_ms > 0).then_some(srtt_ms * 1_000_000);
        p
    }

    #[test]
    fn sfr_counts_a_miss_only_below_a_newer_gap_ack_on_the_same_path() {
        let mut p = path(10_000, 100_000, 5_000, 20);
        p.saw_newack = false;
        p.highest_newack = Tsn(100);
        // nothing newly acked on this path: no miss (the SACK says nothing about it)
        assert_eq!(misses_for(true, None, &p, Tsn(90)), None);
        // a newer TSN to this path was gap-acked: a miss for the older one...
        p.saw_newack = true;
        p.highest_newack = Tsn(120);
        assert_eq!(misses_for(true, None, &p, Tsn(110)), Some(1));
        // ...but not for one sent to it after that TSN
        assert_eq!(misses_for(true, None, &p, Tsn(125)), None);
        // SFR off: plain HTNA (the caller already stopped at the highest TSN newly acked)
        p.saw_newack = false;
        assert_eq!(misses_for(false, None, &p, Tsn(110)), Some(1));
    }

    #[test]
    fn dac_adds_a_miss_only_for_a_single_path_sack_with_the_flag_below_its_new_acks() {
        let mut p = path(10_000, 100_000, 5_000, 20);
        p.saw_newack = true;
        p.highest_newack = Tsn(200);
        let single = Dac { extra: true, lowest_newack: Tsn(150) };
        assert_eq!(misses_for(true, Some(single), &p, Tsn(140)), Some(2));
        // between two newly acked TSNs: one miss only
        assert_eq!(misses_for(true, Some(single), &p, Tsn(160)), Some(1));
        // flag clear or a mixed SACK (more than one path newly acked): one miss
        let mixed = Dac { extra: false, lowest_newack: Tsn(150) };
        assert_eq!(misses_for(true, Some(mixed), &p, Tsn(140)), Some(1));
    }

    #[test]
    fn each_rtx_policy_picks_its_destination() {
        let mut rng = Rng::from_seed(7);
        // path 0: big cwnd, full; path 1: small cwnd, room, biggest ssthresh; path 2: PF
        let mut paths = vec![path(60_000, 30_000, 60_000, 20), path(20_000, 90_000, 5_000, 60), path(90_000, 95_000, 0, 10)];
        paths[2].state = PathState::PotentiallyFailed;
        assert_eq!(choose_rtx(RtxPolicy::Same, &paths, 0, 1, &mut rng), 0);
        assert_eq!(choose_rtx(RtxPolicy::Cwnd, &paths, 1, 0, &mut rng), 0, "largest cwnd among ACTIVE paths");
        assert_eq!(choose_rtx(RtxPolicy::Ssthresh, &paths, 0, 0, &mut rng), 1, "largest ssthresh among ACTIVE paths");
        assert_eq!(choose_rtx(RtxPolicy::Asap, &paths, 0, 0, &mut rng), 1, "the only ACTIVE path with cwnd room");
        // RTX-SAME from a path that is no longer ACTIVE: the fallback
        assert_eq!(choose_rtx(RtxPolicy::Same, &paths, 2, 1, &mut rng), 1);
        // ties are broken at random among the tied paths only
        let tied = vec![path(40_000, 1, 0, 20), path(40_000, 1, 0, 20), path(10_000, 1, 0, 20)];
        let picks: std::collections::BTreeSet<usize> = (0..64).map(|_| choose_rtx(RtxPolicy::Cwnd, &tied, 2, 2, &mut rng)).collect();
        assert_eq!(picks, [0, 1].into_iter().collect());
        // nothing ACTIVE: the fallback
        let mut down = vec![path(1, 1, 0, 20), path(1, 1, 0, 20)];
        down[0].state = PathState::Inactive;
        down[1].state = PathState::PotentiallyFailed;
        assert_eq!(choose_rtx(RtxPolicy::Cwnd, &down, 0, 1, &mut rng), 1);
    }

    #[test]
    fn resource_pooling_shares_follow_freebsd() {
        let mtu = 1500;
        let mut a = path(30_000, 20_000, 30_000, 40);
        let mut b = path(30_000, 20_000, 30_000, 40);
        a.acked = 3000;
        b.acked = 3000;
        let paths = [a.clone(), b.clone()];
        assert!(Pool::new(Cmt::Base, &paths, mtu).is_none(), "CMT without RP uses the base rules");
        // RPv1: each path's share of Σ ssthresh (here a half)
        let v1 = Pool::new(Cmt::RpV1, &paths, mtu).unwrap();
        assert_eq!(v1.increase(&a), Increase { slow_start: 750, avoidance: 750 });
        // after a loss: ssthresh = 4·MTU·ssthresh/Σssthresh = 3000, not below MTU
        assert_eq!(v1.fr_ssthresh(&a), Some(3000));
        // RPv2: share of Σ cwnd/srtt (equal paths: a half)
        let v2 = Pool::new(Cmt::RpV2, &paths, mtu).unwrap();
        let inc = v2.increase(&a).avoidance; // 756 with FreeBSD's integer cwnd/lastsa sums
        assert!((740..=760).contains(&inc), "{inc}");
        // MPTCP-like: one path alone grows ≈ 1 MTU per cwnd acked (alpha = 1/w)...
        let one = Pool::new(Cmt::Mptcp, std::slice::from_ref(&a), mtu).unwrap();
        let inc = one.increase(&a).avoidance;
        assert!((1300..=1500).contains(&inc), "{inc}");
        // ...two equal paths a quarter each (LIA: half an MTU per RTT in total)
        let two = Pool::new(Cmt::Mptcp, &paths, mtu).unwrap();
        let inc = two.increase(&a).avoidance;
        assert!((300..=400).contains(&inc), "{inc}");
        assert_eq!(two.fr_ssthresh(&a), None, "MPTCP-like decreases as the base rule");
        // RP initial windows: IW split over the paths
        assert_eq!(Pool::initial_cwnd(Cmt::RpV1, 4380, 2, mtu), 2190);
        assert_eq!(Pool::initial_cwnd(Cmt::RpV1, 4380, 4, mtu), 1488);
        assert_eq!(Pool::initial_cwnd(Cmt::Base, 4380, 2, mtu), 4380);
        b.cwnd = 90_000;
        let v2 = Pool::new(Cmt::RpV2, &[a.clone(), b.clone()], mtu).unwrap();
        assert!(v2.increase(&b).avoidance > v2.increase(&a).avoidance, "RPv2 favours the path with more cwnd/srtt");
    }
}
