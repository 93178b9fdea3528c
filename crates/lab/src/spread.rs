//! Repeated samples: median and min-max, and the verdict a difference earns.
//!
//! A point is measured `--repeat` times, one sample per round, and every round
//! runs every point once (interleaved across designs), so a point's samples are
//! spread evenly over the whole bench and see its load drift, and drift hits all
//! designs alike. **The interval of a point is the min-max of its samples**, and
//! what it promises is that a repeat of the run under similar load gives a range
//! that overlaps it.
//!
//! Nothing fancier: with a handful of samples a bootstrap or t interval claims
//! more than the data holds, and on a loaded machine it measurably did. Four
//! pairs of back-to-back default runs (6 x 250 ms per point, 64 points, 2 cores
//! shared with other jobs, load average 6-15): min-max ranges of ops/s overlapped
//! at 256 of 256 points and those of the ratios to linux at 256 of 256; 90 %
//! bootstrap intervals of the median at 219 (ratios 247); ranges of samples
//! divided by their round's machine-wide speed at 217. Ranges of 3 of those
//! samples (every other round) overlapped at only 217 of 256 for ops/s and 234
//! for the ratios; with the former default of 3 x 500 ms, one pair at 45 and 62
//! of 64.
//!
//! The ranges cover a repeat of the run under similar load. Absolute ops/s move
//! with the machine's load: runs 40 minutes apart at load averages of about 7 and
//! about 12 overlapped at as few as 8 of 64 points, while their ratio ranges
//! still overlapped at 64 of 64, since a ratio pairs each sample with linux's in
//! the same round. Compare designs by the ratios.
//!
//! Why several short samples rather than a few long ones: if the samples of two
//! runs come from one distribution, their ranges miss each other only when all
//! of one run's samples lie below all of the other's, with chance
//! [`disjoint_chance`] = 2 / C(2n, n): 10 % for n = 3 (so a table of 64 points
//! disagrees with its repeat at about 6 of them by chance alone; measured with
//! 3 x 500 ms, 7 and 19), 0.2 % for n = 6.
//!
//! **Verdicts come from the paired ratios** ([`Verdict::paired`]): each sample
//! of a design divided by the reference's sample of the same round, so the
//! load of that round cancels. A design is *faster* when every round's ratio
//! is above 1 and their median is at least 1 + [`MIN_EFFECT`]; *slower* when
//! every ratio is below 1 and the median at most 1 / (1 + [`MIN_EFFECT`]);
//! otherwise a *tie*; with fewer than [`MIN_ROUNDS`] rounds there is no
//! verdict. Between two designs that do not differ, each round's ratio is as
//! likely above 1 as below, so all n on one side happens with chance at most
//! [`false_verdict_chance`] = 2 / 2^n (3.1 % at the default 6 rounds), however
//! the load swings; the median's margin keeps differences smaller than this
//! bench resolves (load that changes within a round) out of the verdicts.
//! Comparing the unpaired ops/s ranges instead, as this module once did,
//! called every design a tie whenever the load moved between rounds, which is
//! exactly when the pairing still answers.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Median, minimum and maximum of a set of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median (mean of the middle two for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// How many samples.
    pub n: usize,
}

impl Spread {
    /// The spread of `samples` (non-finite ones ignored); `None` when none is left.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// Whether the two min-max ranges share a value.
    #[cfg(test)]
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// The chance that the min-max ranges of `n` and `m` samples drawn from one
/// continuous distribution (independent, or merely exchangeable) do not overlap:
/// all of one side's samples below all of the other's, 2 / C(n + m, n). It is
/// also the chance of a false verdict ([`Verdict::paired`] says faster or slower
/// although both sides are alike). 1 when a side has no sample.
pub fn disjoint_chance(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    // C(n + m, n) as a product of ratios, in floating point (no overflow).
    let c: f64 = (1..=n).map(|i| (m + i) as f64 / i as f64).product();
    (2.0 / c).min(1.0)
}

/// Fewer paired rounds than this give no verdict: with 4 the chance of a
/// false one would be 2 / 2^4 = 12.5 %.
pub const MIN_ROUNDS: usize = 5;

/// The smallest difference called a verdict: the median paired ratio must be
/// at least 1.05 (or at most 1 / 1.05).
pub const MIN_EFFECT: f64 = 0.05;

/// The chance that two designs that do not differ get a verdict from `n`
/// paired rounds: every ratio on one side of 1, 2 / 2^n (1 below
/// [`MIN_ROUNDS`], where no verdict is given).
pub fn false_verdict_chance(n: usize) -> f64 {
    if n < MIN_ROUNDS {
        return 1.0;
    }
    2.0 / 2f64.powi(n as i32)
}

/// The verdict rule in words, as the reports print it, with the chance of a
/// false verdict at `rounds` rounds.
pub fn verdict_rule(rounds: usize) -> String {
    format!(
        "faster = the ratio to the reference, each sample over the reference's sample of the same \
         round, is above 1 in every round and its median is at least {:.2}; slower = below 1 in every \
         round and the median at most {:.2}; otherwise tie (no verdict with fewer than {MIN_ROUNDS} \
         rounds). Two designs that do not differ get a verdict with chance at most 2/2^n \
         ({:.1}% at {} rounds)",
        1.0 + MIN_EFFECT,
        1.0 / (1.0 + MIN_EFFECT),
        100.0 * false_verdict_chance(rounds.max(MIN_ROUNDS)),
        rounds.max(MIN_ROUNDS)
    )
}

/// A sample below half or above twice its point's median is an outlier: the
/// reports flag it, and the plots draw it apart from the min-max bar.
pub const OUTLIER_FACTOR: f64 = 2.0;

/// Whether `x` is an outlier beside `median` (see [`OUTLIER_FACTOR`]).
pub fn is_outlier(x: f64, median: f64) -> bool {
    median > 0.0 && (x < median / OUTLIER_FACTOR || x > median * OUTLIER_FACTOR)
}

/// How a design compares with a reference at one point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It is the reference.
    Reference,
    /// Faster in every round, by at least [`MIN_EFFECT`] at the median.
    Faster,
    /// Slower in every round, by at least [`MIN_EFFECT`] at the median.
    Slower,
    /// Neither: no difference can be claimed.
    Tie,
    /// Fewer than [`MIN_ROUNDS`] paired rounds: no claim. (Read as
    /// `one_sample` from files written before verdicts were paired.)
    #[serde(alias = "one_sample")]
    FewRounds,
}

impl Verdict {
    /// The verdict of the paired ratios `ratios` (this design's sample over the
    /// reference's, one per round; non-finite ones ignored). See the module
    /// docs for the rule and its false-verdict chance.
    pub fn paired(ratios: &[f64]) -> Verdict {
        let v: Vec<f64> = ratios.iter().copied().filter(|x| x.is_finite()).collect();
        let Some(s) = Spread::of(&v) else {
            return Verdict::FewRounds;
        };
        if s.n < MIN_ROUNDS {
            Verdict::FewRounds
        } else if s.min > 1.0 && s.median >= 1.0 + MIN_EFFECT {
            Verdict::Faster
        } else if s.max < 1.0 && s.median <= 1.0 / (1.0 + MIN_EFFECT) {
            Verdict::Slower
        } else {
            Verdict::Tie
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reference => "ref",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Tie => "tie",
            Verdict::FewRounds => "too few rounds",
        })
    }
}

/// `median [min-max]` with `f` formatting each number; just the median for one
/// sample.
pub fn show(s: &Spread, f: impl Fn(f64) -> String) -> String {
    if s.n < 2 {
        f(s.median)
    } else {
        format!("{} [{}-{}]", f(s.median), f(s.min), f(s.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Spread::of(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 10.0));
        let s = Spread::of(&[f64::NAN, 5.0]).unwrap();
        assert_eq!((s.median, s.n), (5.0, 1));
        assert!(Spread::of(&[]).is_none());
        assert!(Spread::of(&[f64::INFINITY]).is_none());
    }

    /// The issue's own example: `aspace per-vma 2 thr 1.41 [1.15-2.29]` was
    /// called a tie from overlapping ops/s ranges; paired, it is faster.
    #[test]
    fn paired_ratios_decide() {
        let v = [1.15, 1.3, 1.41, 1.41, 1.6, 2.29];
        assert_eq!(Verdict::paired(&v), Verdict::Faster);
        let inv: Vec<f64> = v.iter().map(|x| 1.0 / x).collect();
        assert_eq!(Verdict::paired(&inv), Verdict::Slower);
        // One round on the other side: a tie.
        assert_eq!(
            Verdict::paired(&[0.99, 1.3, 1.4, 1.4, 1.6, 2.3]),
            Verdict::Tie
        );
        // Every round above 1 but by less than the margin at the median.
        assert_eq!(
            Verdict::paired(&[1.01, 1.02, 1.03, 1.03, 1.04, 1.2]),
            Verdict::Tie
        );
        // Too few rounds, whatever they say.
        assert_eq!(Verdict::paired(&[2.0, 2.0, 2.0, 2.0]), Verdict::FewRounds);
        assert_eq!(Verdict::paired(&[]), Verdict::FewRounds);
        // An outlier round of the reference (a ratio of 49) cannot make a
        // design slower, and cannot by itself make it faster.
        assert_eq!(
            Verdict::paired(&[0.9, 0.95, 0.92, 0.93, 0.9, 49.0]),
            Verdict::Tie
        );
        assert_eq!(
            Verdict::paired(&[f64::NAN, 1.2, 1.2, 1.2, 1.2, 1.2]),
            Verdict::Faster
        );
        assert!(is_outlier(45.68, 20e3) && is_outlier(50e3, 20e3));
        assert!(!is_outlier(11e3, 20e3) && !is_outlier(39e3, 20e3) && !is_outlier(1.0, 0.0));
    }

    #[test]
    fn disjoint_chance_is_two_over_the_binomial() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(disjoint_chance(3, 3), 0.1)); // 2 / C(6, 3) = 2 / 20
        assert!(close(disjoint_chance(6, 6), 2.0 / 924.0));
        assert!(close(disjoint_chance(2, 1), 2.0 / 3.0));
        assert!(close(disjoint_chance(4, 2), disjoint_chance(2, 4)));
        assert!(close(disjoint_chance(1, 1), 1.0));
        assert_eq!(disjoint_chance(0, 5), 1.0);
        assert!(disjoint_chance(100, 100) > 0.0);
    }

    /// Two designs that do not differ, each round's load moving both alike
    /// by up to 3x: the paired verdict is wrong about as often as stated
    /// (2/2^n), and the load never makes it more often.
    #[test]
    fn equal_designs_get_a_verdict_as_rarely_as_stated() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            // xorshift64: deterministic, so the test is too.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [5, 6, 8] {
            let trials = 40_000;
            let mut called = 0;
            for _ in 0..trials {
                let ratios: Vec<f64> = (0..n)
                    .map(|_| {
                        let load = 1.0 + 2.0 * next();
                        // Noise of 30% either way, the same law for both.
                        let a = 1e4 / load * (0.7 + 0.6 * next());
                        let b = 1e4 / load * (0.7 + 0.6 * next());
                        a / b
                    })
                    .collect();
                if matches!(Verdict::paired(&ratios), Verdict::Faster | Verdict::Slower) {
                    called += 1;
                }
            }
            let got = called as f64 / trials as f64;
            let bound = false_verdict_chance(n);
            assert!(
                got <= bound * 1.1 + 0.002,
                "n = {n}: {got} called, bound {bound}"
            );
        }
    }

    #[test]
    fn shown_with_its_range() {
        let s = Spread::of(&[1.0, 2.0, 4.0]).unwrap();
        assert_eq!(show(&s, |x| format!("{x:.1}")), "2.0 [1.0-4.0]");
        assert_eq!(
            show(&Spread::of(&[2.0]).unwrap(), |x| format!("{x:.1}")),
            "2.0"
        );
        assert!(s.overlaps(&Spread::of(&[4.0, 9.0]).unwrap()));
        assert!(!s.overlaps(&Spread::of(&[4.5, 9.0]).unwrap()));
    }
}
