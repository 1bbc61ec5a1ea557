//! Window sizing policies (thesis §5.2.1, §6.6).
//!
//! The policy keeps its own window `W`, moved one step at a time in the direction the rate
//! comparison asks for; the controller offers `min(W, Linux's window)`.
//!
//! * [`PolicyKind::Original`]: "Windows over 8k in size are reduced substantially … As
//!   [the window] falls below the 8k marker, the window size drops at a lower rate until
//!   it reaches the 2k mark at which time it drops at a 256 byte rate." The text gives the
//!   band edges (8 KB, 2 KB) and the fine step (256 B) but neither the large and middle
//!   steps nor the growth steps; it only says the window "would shrink more quickly than it
//!   grew" (§6.2). Ours, as named defaults in [`OriginalSteps`]: shrink 4096/1024/256,
//!   grow 2048/512/256, floor 256 B (the window may go below 1 MSS: that is the behaviour
//!   §6.3 diagnoses as the SWS cliff).
//! * [`PolicyKind::Revised`]: "1. Grow and shrink by 1 MSS at a time 2. Never shrink
//!   below 1 MSS" (§5.2.1), used for every experiment after §6.6.
//!
//! Both never grow `W` past the largest window Linux has offered on this connection
//! (anti-windup: a window the socket buffer never allowed cannot be used anyway).
use core::cmp::Ordering;

/// Which window policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PolicyKind {
    /// Thesis §5.2.1 first algorithm: large steps above 8 KB, fine below.
    Original,
    /// Thesis §5.2.1/§6.6 revision: 1-MSS steps, never below 1 MSS.
    #[default]
    Revised,
}

/// When the policy takes a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StepTrigger {
    /// One step per new rate value (each completed chunk, or aging). Default: the rate only
    /// changes at chunk completion, so stepping more often integrates one stale error many
    /// times.
    #[default]
    RateUpdate,
    /// One step at every window computation (every segment the receiver sends), the
    /// literal reading of §5.2.1 ("When a window size is being computed … the current socket
    /// rate is compared").
    EveryWindow,
}

/// Band edges and step sizes of the original policy (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OriginalSteps {
    /// Above this window: large steps ("over 8k", thesis).
    pub big_above: u32,
    /// At or below this window: fine steps ("the 2k mark", thesis).
    pub fine_at_or_below: u32,
    /// Shrink steps for the big, middle and fine bands (fine = 256 B, thesis; others ours).
    pub shrink: [u32; 3],
    /// Growth steps per band (ours: half the shrink step, at least the fine step).
    pub grow: [u32; 3],
    /// Smallest window the original policy offers (ours: one fine step; not 0, which
    /// would hand control to the sender's persist timer).
    pub floor: u32,
}

impl Default for OriginalSteps {
    fn default() -> Self {
        OriginalSteps { big_above: 8192, fine_at_or_below: 2048, shrink: [4096, 1024, 256], grow: [2048, 512, 256], floor: 256 }
    }
}

impl OriginalSteps {
    fn band(&self, w: u32) -> usize {
        if w > self.big_above {
            0
        } else if w > self.fine_at_or_below {
            1
        } else {
            2
        }
    }
}

/// A window policy with its current window `W`.
#[derive(Clone, Debug)]
pub struct WindowPolicy {
    kind: PolicyKind,
    steps: OriginalSteps,
    w: Option<u32>,
    ceiling: u32,
    shrinks: u64,
    grows: u64,
}

impl WindowPolicy {
    /// A policy that takes its initial `W` from the first Linux window it sees.
    pub fn new(kind: PolicyKind) -> Self {
        WindowPolicy { kind, steps: OriginalSteps::default(), w: None, ceiling: 0, shrinks: 0, grows: 0 }
    }

    /// Replaces the original policy's steps.
    pub fn with_steps(mut self, steps: OriginalSteps) -> Self {
        self.steps = steps;
        self
    }

    /// The policy kind.
    pub fn kind(&self) -> PolicyKind {
        self.kind
    }

    /// Current `W` (None before the first window computation).
    pub fn window(&self) -> Option<u32> {
        self.w
    }

    /// Steps taken so far (shrinks, grows).
    pub fn step_counts(&self) -> (u64, u64) {
        (self.shrinks, self.grows)
    }

    /// Records a window Linux offered: raises the growth ceiling and, on first use,
    /// initialises `W` (revised: rounded down to whole MSS, at least 1 MSS).
    pub fn observe(&mut self, linux_window: u32, mss: u32) {
        let mss = mss.max(1);
        self.ceiling = self.ceiling.max(linux_window);
        if self.w.is_none() {
            self.w = Some(match self.kind {
                PolicyKind::Original => linux_window.max(self.steps.floor),
                PolicyKind::Revised => (linux_window / mss * mss).max(mss),
            });
        }
    }

    /// Sets `W` directly (tests, or a driver restoring state).
    pub fn set_window(&mut self, w: u32) {
        self.w = Some(w);
        self.ceiling = self.ceiling.max(w);
    }

    /// The size of one step from window `w` (bytes).
    pub fn step_size(&self, w: u32, shrink: bool, mss: u32) -> u32 {
        match self.kind {
            PolicyKind::Revised => mss.max(1),
            PolicyKind::Original => {
                let b = self.steps.band(w);
                if shrink {
                    self.steps.shrink[b]
                } else {
                    self.steps.grow[b]
                }
            }
        }
    }

    /// Smallest `W` this policy allows.
    pub fn floor(&self, mss: u32) -> u32 {
        match self.kind {
            PolicyKind::Revised => mss.max(1),
            PolicyKind::Original => self.steps.floor,
        }
    }

    /// One step: `Greater` (rate over target) shrinks, `Less` grows, `Equal` holds.
    /// Returns the new `W`. No-op before [`observe`](Self::observe).
    pub fn step(&mut self, rate_vs_target: Ordering, mss: u32) -> Option<u32> {
        let w = self.w?;
        let floor = self.floor(mss);
        let new = match rate_vs_target {
            Ordering::Greater => {
                let s = self.step_size(w, true, mss);
                w.saturating_sub(s).max(floor)
            }
            Ordering::Less => {
                let s = self.step_size(w, false, mss);
                w.saturating_add(s).min(self.ceiling.max(floor)).max(floor)
            }
            Ordering::Equal => w,
        };
        if new < w {
            self.shrinks += 1;
        } else if new > w {
            self.grows += 1;
        }
        self.w = Some(new);
        Some(new)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use Ordering::*;

    fn shrink_path(p: &mut WindowPolicy, mss: u32, n: usize) -> Vec<u32> {
        (0..n).map(|_| p.step(Greater, mss).unwrap()).collect()
    }

    #[test]
    fn original_large_steps_above_8k_fine_below() {
        let mut p = WindowPolicy::new(PolicyKind::Original);
        p.observe(32768, 1448);
        assert_eq!(p.window(), Some(32768));
        let path = shrink_path(&mut p, 1448, 16);
        // 4 KB steps while above 8 KB, 1 KB steps down to 2 KB, then 256 B, floor 256.
        assert_eq!(
            path,
            vec![28672, 24576, 20480, 16384, 12288, 8192, 7168, 6144, 5120, 4096, 3072, 2048, 1792, 1536, 1280, 1024]
        );
        let path = shrink_path(&mut p, 1448, 5);
        assert_eq!(path, vec![768, 512, 256, 256, 256]);
        // Growing is slower than shrinking in every band.
        let g: Vec<u32> = (0..12).map(|_| p.step(Less, 1448).unwrap()).collect();
        assert_eq!(g, vec![512, 768, 1024, 1280, 1536, 1792, 2048, 2304, 2816, 3328, 3840, 4352]);
        for w in [1000u32, 4000, 20000] {
            assert!(p.step_size(w, false, 1448) <= p.step_size(w, true, 1448));
        }
    }

    #[test]
    fn original_goes_below_one_mss() {
        let mut p = WindowPolicy::new(PolicyKind::Original);
        p.observe(4096, 1448);
        let path = shrink_path(&mut p, 1448, 8);
        assert!(path.iter().any(|&w| w < 1448), "{path:?}");
    }

    #[test]
    fn revised_one_mss_steps_never_below_one_mss() {
        let mut p = WindowPolicy::new(PolicyKind::Revised);
        p.observe(10_000, 1460);
        assert_eq!(p.window(), Some(8760), "rounded down to whole MSS");
        let path = shrink_path(&mut p, 1460, 8);
        assert_eq!(path, vec![7300, 5840, 4380, 2920, 1460, 1460, 1460, 1460]);
        let g: Vec<u32> = (0..7).map(|_| p.step(Less, 1460).unwrap()).collect();
        // Grows by 1 MSS up to the largest window Linux offered (10 000), no further.
        assert_eq!(g, vec![2920, 4380, 5840, 7300, 8760, 10_000, 10_000]);
        assert_eq!(p.step(Equal, 1460), Some(10_000));
        // A tiny Linux window never drags the revised floor below 1 MSS.
        let mut q = WindowPolicy::new(PolicyKind::Revised);
        q.observe(500, 1460);
        assert_eq!(q.window(), Some(1460));
        assert_eq!(q.step(Greater, 1460), Some(1460));
    }

    #[test]
    fn ceiling_follows_linux_growth() {
        let mut p = WindowPolicy::new(PolicyKind::Revised);
        p.observe(2920, 1460);
        assert_eq!(p.step(Less, 1460), Some(2920));
        p.observe(5840, 1460);
        assert_eq!(p.step(Less, 1460), Some(4380));
        assert_eq!(p.step_counts(), (0, 1));
    }
}
