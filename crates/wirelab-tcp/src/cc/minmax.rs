//! Kathleen Nichols' windowed min/max filter (lib/win_minmax.c): the best, second-best
//! and third-best samples of a sliding window, O(1) per update. BBR keeps its max
//! bandwidth over 10 round trips with it.

/// `struct minmax_sample`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u32,
    v: u32,
}

/// `struct minmax`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Minmax {
    s: [Sample; 3],
}

impl Minmax {
    /// `minmax_get()`: the windowed best.
    #[inline]
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// `minmax_reset()`: forget everything but (`t`, `meas`).
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        self.s = [Sample { t, v: meas }; 3];
        meas
    }

    /// `minmax_subwin_update()`: age the choices as time advances.
    fn subwin_update(&mut self, win: u32, val: Sample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // a whole window without a new best: promote the 2nd and 3rd choices (twice
            // when the 2nd is out of the window too)
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // a quarter of the window without a new best: a 2nd choice from the 2nd quarter
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // half the window: a 3rd choice from the last half
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max()`: add a sample taken at `t`, keep the max over `win`.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = Sample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min()`: add a sample taken at `t`, keep the min over `win`.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = Sample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn max_expires_after_the_window() {
        let mut m = Minmax::default();
        m.reset(0, 0);
        assert_eq!(m.running_max(10, 0, 100), 100);
        for t in 1..=10 {
            assert_eq!(m.running_max(10, t, 50), 100, "t {t}");
        }
        // 11 rounds after the max: the best of the rest (50) takes over
        assert_eq!(m.running_max(10, 11, 40), 50);
        // a new max wins at once
        assert_eq!(m.running_max(10, 12, 70), 70);
        let mut n = Minmax::default();
        n.reset(0, u32::MAX);
        assert_eq!(n.running_min(5, 1, 30), 30);
        assert_eq!(n.running_min(5, 2, 40), 30);
        // the 40 never became a 2nd choice, so when the 30 leaves the window all is reset
        assert_eq!(n.running_min(5, 7, 45), 45);
    }
}
