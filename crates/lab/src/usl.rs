//! The Universal Scalability Law, fitted by least squares.
//!
//! `X(N) = lambda * N / (1 + sigma * (N - 1) + kappa * N * (N - 1))`: `lambda` is the
//! single-thread rate, `sigma` the serial fraction (contention), `kappa` the coherence
//! cost (crosstalk). The fit minimises the squared *relative* residuals, so that every
//! measured point weighs the same whatever its magnitude: for fixed (sigma, kappa)
//! the best lambda is closed form, and (sigma, kappa) in [0, 1] are found by a log grid
//! followed by a pattern search.

use serde::{Deserialize, Serialize};

/// A fitted curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Usl {
    /// Throughput of one thread (ops/s).
    pub lambda: f64,
    /// Contention (serial fraction), in [0, 1].
    pub sigma: f64,
    /// Coherence (crosstalk), in [0, 1].
    pub kappa: f64,
    /// Root mean square of the relative residuals over the measured points, in %.
    pub rms_error_pct: f64,
}

impl Usl {
    /// The model's throughput at `n` threads.
    pub fn at(&self, n: f64) -> f64 {
        self.lambda * shape(self.sigma, self.kappa, n)
    }

    /// The thread count of peak throughput (`sqrt((1 - sigma) / kappa)`), if finite.
    pub fn peak(&self) -> Option<f64> {
        (self.kappa > 0.0 && self.sigma < 1.0).then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }
}

fn shape(sigma: f64, kappa: f64, n: f64) -> f64 {
    n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Best lambda for fixed sigma and kappa, and the relative sum of squares.
fn solve(points: &[(f64, f64)], sigma: f64, kappa: f64) -> (f64, f64) {
    // residual_i = (X_i - lambda g_i) / X_i = 1 - lambda * (g_i / X_i)
    let (mut a, mut b) = (0.0, 0.0);
    for &(n, x) in points {
        let r = shape(sigma, kappa, n) / x;
        a += r;
        b += r * r;
    }
    let lambda = if b > 0.0 { a / b } else { 0.0 };
    let sse = points
        .iter()
        .map(|&(n, x)| {
            let e = 1.0 - lambda * shape(sigma, kappa, n) / x;
            e * e
        })
        .sum();
    (lambda, sse)
}

/// Fits the USL to `(threads, ops_per_sec)` points. Needs at least three points at
/// distinct thread counts, all with positive throughput; `None` otherwise.
pub fn fit(points: &[(f64, f64)]) -> Option<Usl> {
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if ns.len() < 3
        || points
            .iter()
            .any(|&(n, x)| !(n >= 1.0 && x > 0.0 && x.is_finite()))
    {
        return None;
    }
    let grid = |lo: f64, hi: f64, steps: usize| {
        std::iter::once(0.0)
            .chain((0..=steps).map(move |i| 10f64.powf(lo + (hi - lo) * i as f64 / steps as f64)))
    };
    let mut best = (f64::INFINITY, 0.0, 0.0);
    for s in grid(-5.0, 0.0, 50) {
        for k in grid(-7.0, 0.0, 70) {
            let (_, sse) = solve(points, s, k);
            if sse < best.0 {
                best = (sse, s, k);
            }
        }
    }
    // Pattern search in log space around the grid optimum.
    let (mut sse, mut s, mut k) = best;
    let mut step = 0.5f64;
    while step > 1e-6 {
        let mut improved = false;
        for (ds, dk) in [(1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)] {
            let ns = if s == 0.0 {
                if ds > 0.0 {
                    1e-7
                } else {
                    0.0
                }
            } else {
                (s * (step * ds).exp()).min(1.0)
            };
            let nk = if k == 0.0 {
                if dk > 0.0 {
                    1e-9
                } else {
                    0.0
                }
            } else {
                (k * (step * dk).exp()).min(1.0)
            };
            let (_, e) = solve(points, ns, nk);
            if e < sse {
                (sse, s, k) = (e, ns, nk);
                improved = true;
            }
        }
        if !improved {
            step /= 2.0;
        }
    }
    let (lambda, sse) = solve(points, s, k);
    Some(Usl {
        lambda,
        sigma: s,
        kappa: k,
        rms_error_pct: 100.0 * (sse / points.len() as f64).sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synth(l: f64, s: f64, k: f64, ns: &[f64]) -> Vec<(f64, f64)> {
        let u = Usl {
            lambda: l,
            sigma: s,
            kappa: k,
            rms_error_pct: 0.0,
        };
        ns.iter().map(|&n| (n, u.at(n))).collect()
    }

    #[test]
    fn recovers_exact_parameters() {
        let pts = synth(1000.0, 0.05, 0.002, &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
        let f = fit(&pts).unwrap();
        assert!((f.lambda - 1000.0).abs() < 1.0, "{f:?}");
        assert!((f.sigma - 0.05).abs() < 0.002, "{f:?}");
        assert!((f.kappa - 0.002).abs() < 0.0002, "{f:?}");
        assert!(f.rms_error_pct < 0.1);
        let peak = f.peak().unwrap();
        assert!((peak - (0.95f64 / 0.002).sqrt()).abs() < 1.0);
    }

    #[test]
    fn linear_scaling_fits_zero_contention() {
        let pts: Vec<_> = [1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|&n| (n, 500.0 * n))
            .collect();
        let f = fit(&pts).unwrap();
        assert!(f.sigma < 1e-3 && f.kappa < 1e-4, "{f:?}");
        assert!((f.at(384.0) / (500.0 * 384.0) - 1.0).abs() < 0.2);
    }

    #[test]
    fn noisy_data_reports_its_error() {
        let mut pts = synth(800.0, 0.2, 0.0, &[1.0, 2.0, 3.0, 4.0]);
        pts[2].1 *= 1.10;
        let f = fit(&pts).unwrap();
        assert!(f.rms_error_pct > 1.0 && f.rms_error_pct < 10.0, "{f:?}");
    }

    #[test]
    fn too_few_points_or_bad_values_give_none() {
        assert!(fit(&[(1.0, 10.0), (2.0, 19.0)]).is_none());
        assert!(fit(&[(1.0, 10.0), (1.0, 11.0), (2.0, 19.0)]).is_none());
        assert!(fit(&[(1.0, 10.0), (2.0, 0.0), (3.0, 19.0)]).is_none());
        assert!(fit(&[(1.0, f64::NAN), (2.0, 1.0), (3.0, 19.0)]).is_none());
    }
}
