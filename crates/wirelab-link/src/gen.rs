//! netem's random generators: correlated uniforms, the loss models and the delay
//! distributions. Probabilities are kept as netem keeps them, scaled to `u32`
//! (iproute2's `set_percent`: `rint(p * 0xffffffff)`), and compared with raw 32-bit draws
//! exactly as sch_netem.c compares them.
use crate::spec::{Distribution, LossModel};
use wirelab_core::Rng;

/// iproute2's `set_percent`: a fraction scaled to `u32`.
pub(crate) fn scaled(frac: f64) -> u32 {
    (frac.clamp(0.0, 1.0) * u32::MAX as f64).round() as u32
}

/// `struct crndstate` with `init_crandom` / `get_crandom`.
#[derive(Clone, Debug)]
pub(crate) struct CRandom {
    last: u32,
    rho: u32,
}

impl CRandom {
    /// `init_crandom`: `last` starts from a random value.
    pub(crate) fn new(corr: f64, rng: &mut Rng) -> Self {
        CRandom { rho: scaled(corr), last: rng.next_u32() }
    }

    /// `get_crandom`: the next value is a weighted mix of a fresh draw and the last value.
    pub(crate) fn next(&mut self, rng: &mut Rng) -> u32 {
        if self.rho == 0 {
            return rng.next_u32();
        }
        let value = rng.next_u32() as u64;
        let rho = self.rho as u64 + 1;
        let answer = (value * ((1u64 << 32) - rho) + self.last as u64 * rho) >> 32;
        self.last = answer as u32;
        self.last
    }
}

/// Which loss generator fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LossHit {
    Random,
    Model,
}

/// `loss_model` + `struct clgstate`.
#[derive(Clone, Debug)]
pub(crate) enum LossGen {
    None,
    /// `CLG_RANDOM`.
    Random { loss: u32, cor: CRandom },
    /// `CLG_4_STATES`: a1 = p13, a2 = p31, a3 = p32, a4 = p14, a5 = p23.
    FourState { state: u8, a1: u32, a2: u32, a3: u32, a4: u32, a5: u32 },
    /// `CLG_GILB_ELL`: a1 = p, a2 = r, a3 = h, a4 = 1-k.
    GilbEll { bad: bool, a1: u32, a2: u32, a3: u32, a4: u32 },
}

// 4-state model states, numbered as sch_netem.c (with its current, corrected names).
const TX_IN_GAP_PERIOD: u8 = 1;
const TX_IN_BURST_PERIOD: u8 = 2;
const LOST_IN_BURST_PERIOD: u8 = 3;
const LOST_IN_GAP_PERIOD: u8 = 4;

impl LossGen {
    pub(crate) fn new(model: &LossModel, rng: &mut Rng) -> Self {
        match *model {
            LossModel::None => LossGen::None,
            LossModel::Random(p) => LossGen::Random { loss: scaled(p.p), cor: CRandom::new(p.corr, rng) },
            // get_loss_clg, NETEM_LOSS_GI: state = 1
            LossModel::State { p13, p31, p32, p23, p14 } => LossGen::FourState {
                state: TX_IN_GAP_PERIOD,
                a1: scaled(p13),
                a2: scaled(p31),
                a3: scaled(p32),
                a4: scaled(p14),
                a5: scaled(p23),
            },
            // NETEM_LOSS_GE: iproute2 sends h = 0xffffffff - (1-h)
            LossModel::GilbertElliott { p, r, one_minus_h, one_minus_k } => LossGen::GilbEll {
                bad: false,
                a1: scaled(p),
                a2: scaled(r),
                a3: u32::MAX - scaled(one_minus_h),
                a4: scaled(one_minus_k),
            },
        }
    }

    /// `loss_event`: is this packet lost?
    pub(crate) fn event(&mut self, rng: &mut Rng) -> Option<LossHit> {
        match self {
            LossGen::None => None,
            // "Random packet drop 0 => none, ~0 => all"
            LossGen::Random { loss, cor } => (*loss != 0 && *loss >= cor.next(rng)).then_some(LossHit::Random),
            LossGen::FourState { state, a1, a2, a3, a4, a5 } => {
                loss_4state(state, *a1 as u64, *a2 as u64, *a3 as u64, *a4 as u64, *a5 as u64, rng)
                    .then_some(LossHit::Model)
            }
            LossGen::GilbEll { bad, a1, a2, a3, a4 } => {
                // loss_gilb_ell
                let lost = if !*bad {
                    if rng.next_u32() < *a1 {
                        *bad = true;
                    }
                    rng.next_u32() < *a4
                } else {
                    if rng.next_u32() < *a2 {
                        *bad = false;
                    }
                    rng.next_u32() > *a3
                };
                lost.then_some(LossHit::Model)
            }
        }
    }
}

/// `loss_4state`, comparison for comparison (sums in u64: the kernel's u32 sums cannot
/// overflow for the probabilities `NetemSpec::validate` accepts).
fn loss_4state(state: &mut u8, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64, rng: &mut Rng) -> bool {
    let rnd = rng.next_u32() as u64;
    match *state {
        TX_IN_GAP_PERIOD => {
            if rnd < a4 {
                *state = LOST_IN_GAP_PERIOD;
                return true;
            } else if a4 < rnd && rnd < a1 + a4 {
                *state = LOST_IN_BURST_PERIOD;
                return true;
            } else if a1 + a4 < rnd {
                *state = TX_IN_GAP_PERIOD;
            }
        }
        TX_IN_BURST_PERIOD => {
            if rnd < a5 {
                *state = LOST_IN_BURST_PERIOD;
                return true;
            } else {
                *state = TX_IN_BURST_PERIOD;
            }
        }
        LOST_IN_BURST_PERIOD => {
            if rnd < a3 {
                *state = TX_IN_BURST_PERIOD;
            } else if a3 < rnd && rnd < a2 + a3 {
                *state = TX_IN_GAP_PERIOD;
            } else if a2 + a3 < rnd {
                *state = LOST_IN_BURST_PERIOD;
                return true;
            }
        }
        LOST_IN_GAP_PERIOD => *state = TX_IN_GAP_PERIOD,
        _ => *state = TX_IN_GAP_PERIOD,
    }
    false
}

/// Table range of netem's distributions: `s16` entries scaled by `NETEM_DIST_SCALE` (8192).
const T_MIN: f64 = i16::MIN as f64 / 8192.0;
const T_MAX: f64 = i16::MAX as f64 / 8192.0;

/// Standard normal quantile (Acklam's rational approximation, |rel. error| < 1.2e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.38357751867269e+02,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00];
    const P_LOW: f64 = 0.02425;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p <= 0.0 {
        f64::NEG_INFINITY
    } else if p >= 1.0 {
        f64::INFINITY
    } else if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - P_LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    }
}

/// iproute2 `pareto.c` / `paretovalue()`: shape 3, mean removed, scaled by 4/3, capped at
/// the table's maximum. `u` in (0, 1); increasing in `u`.
fn pareto_value(u: f64) -> f64 {
    let x = 1.0 / (1.0 - u).powf(1.0 / 3.0);
    ((x - 1.5) * (4.0 / 3.0)).min(T_MAX)
}

/// The table value `t` (in units of sigma) for a uniform `u` in (0, 1): the continuous
/// version of `dist->table[rnd % dist->size] / NETEM_DIST_SCALE`.
pub(crate) fn dist_value(d: Distribution, u: f64) -> f64 {
    match d {
        Distribution::Uniform => 2.0 * u - 1.0,
        Distribution::Normal => normal_quantile(u).clamp(T_MIN, T_MAX),
        Distribution::Pareto => pareto_value(u),
        // paretonormal.c: value = (normvalue + 3 * parvalue) / 4, clamped to s16
        Distribution::ParetoNormal => ((normal_quantile(u) + 3.0 * pareto_value(u)) / 4.0).clamp(T_MIN, T_MAX),
    }
}

/// `tabledist(mu, sigma, state, dist)` in nanoseconds (may be negative; the caller clamps).
pub(crate) fn tabledist(mu: i64, sigma: i64, dist: Distribution, cor: &mut CRandom, rng: &mut Rng) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = cor.next(rng);
    match dist {
        // netem: (rnd % (2*sigma)) - sigma + mu. wirelab scales instead of taking the
        // remainder so that the result is monotone in rnd (keeps correlation meaningful)
        // and works for any sigma.
        Distribution::Uniform => {
            let v = mu as i128 - sigma as i128 + ((rnd as i128 * 2 * sigma as i128) >> 32);
            v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
        }
        _ => {
            let u = (rnd as f64 + 0.5) / 4_294_967_296.0;
            let t = dist_value(dist, u);
            // `as` saturates; no overflow for any configured time
            mu.saturating_add((sigma as f64 * t).round() as i64)
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::spec::{LossModel, Prob};

    #[test]
    fn normal_quantile_is_accurate() {
        for (p, x) in [(0.5, 0.0), (0.975, 1.959_963_985), (0.841_344_746, 1.0), (0.001, -3.090_232_306), (0.02, -2.053_748_911)] {
            let q = normal_quantile(p);
            assert!((q - x).abs() < 1e-6, "{p}: {q} vs {x}");
        }
    }

    #[test]
    fn distributions_have_netem_moments() {
        let n = 200_000;
        // The table cap at 32767/8192 cuts the Pareto tail above x = 4.5, which moves its
        // mean from 0 to -4/3 * 1/(2 * 4.5^2) = -0.0329 (and paretonormal's by 3/4 of that).
        for (d, mean_want, sd_lo, sd_hi) in [
            (Distribution::Uniform, 0.0, 0.56, 0.60), // sd of U(-1,1) = 0.577
            (Distribution::Normal, 0.0, 0.98, 1.02),
            // capped: sd = 4/3 * sqrt(E[min(X,4.5)^2] - E[min(X,4.5)]^2) = 0.8209
            (Distribution::Pareto, -0.0329, 0.815, 0.827),
            // comonotone mix (N + 3P) / 4
            (Distribution::ParetoNormal, -0.0247, 0.82, 0.85),
        ] {
            let (mut s, mut s2) = (0.0, 0.0);
            for i in 0..n {
                let u = (i as f64 + 0.5) / n as f64;
                let t = dist_value(d, u);
                assert!((T_MIN..=T_MAX).contains(&t), "{d:?} {u} {t}");
                s += t;
                s2 += t * t;
            }
            let mean = s / n as f64;
            let sd = (s2 / n as f64 - mean * mean).sqrt();
            assert!((mean - mean_want).abs() < 0.002, "{d:?} mean {mean}");
            assert!(sd > sd_lo && sd < sd_hi, "{d:?} sd {sd}");
        }
        // Pareto is skewed: its minimum is (1 - 1.5) * 4/3
        assert!((dist_value(Distribution::Pareto, 1e-9) + 2.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn crandom_matches_formula_and_correlates() {
        let mut rng = Rng::from_seed(7);
        let mut c = CRandom::new(0.0, &mut rng);
        let mut r2 = rng.clone();
        assert_eq!(c.next(&mut rng), r2.next_u32());
        // rho = 100%: (v * 0 + last * 2^32) >> 32, the value stays at `last`
        let mut c = CRandom { last: 1234, rho: u32::MAX };
        assert_eq!(c.next(&mut rng), 1234);
        // 75% correlation: successive values are positively correlated
        let mut c = CRandom::new(0.75, &mut rng);
        let xs: Vec<f64> = (0..50_000).map(|_| c.next(&mut rng) as f64).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let (mut cov, mut var) = (0.0, 0.0);
        for w in xs.windows(2) {
            cov += (w[0] - m) * (w[1] - m);
            var += (w[0] - m) * (w[0] - m);
        }
        assert!(cov / var > 0.6, "{}", cov / var);
    }

    #[test]
    fn random_loss_edges() {
        let mut rng = Rng::from_seed(1);
        let mut all = LossGen::new(&LossModel::Random(Prob { p: 1.0, corr: 0.0 }), &mut rng);
        let mut none = LossGen::new(&LossModel::Random(Prob { p: 0.0, corr: 0.0 }), &mut rng);
        for _ in 0..1000 {
            assert_eq!(all.event(&mut rng), Some(LossHit::Random));
            assert_eq!(none.event(&mut rng), None);
        }
    }

    #[test]
    fn four_state_isolated_losses() {
        // Only p14: every loss is isolated (state 4 always returns to 1 with a delivery).
        let mut rng = Rng::from_seed(3);
        let model = LossModel::State { p13: 0.0, p31: 1.0, p32: 0.0, p23: 1.0, p14: 0.2 };
        let mut g = LossGen::new(&model, &mut rng);
        let v: Vec<bool> = (0..100_000).map(|_| g.event(&mut rng).is_some()).collect();
        assert!(v.windows(2).all(|w| !(w[0] && w[1])));
        let rate = v.iter().filter(|&&x| x).count() as f64 / v.len() as f64;
        // stationary: pi4 = p14 / (1 + p14)
        assert!((rate - 0.2 / 1.2).abs() < 0.005, "{rate}");
    }

    #[test]
    fn gemodel_good_state_loss_and_bad_state_delivery() {
        // 1-h = 50%: half the bad-state packets get through; 1-k = 0: none lost when good.
        let mut rng = Rng::from_seed(4);
        let model = LossModel::GilbertElliott { p: 0.1, r: 0.1, one_minus_h: 0.5, one_minus_k: 0.0 };
        let mut g = LossGen::new(&model, &mut rng);
        let n = 200_000;
        let lost = (0..n).filter(|_| g.event(&mut rng).is_some()).count() as f64 / n as f64;
        // half the time bad, half of those lost
        assert!((lost - 0.25).abs() < 0.01, "{lost}");
    }
}
