//! What a prediction stores beside a measurement: the predicted curves for
//! the host `aspace bench` ran on (the `predicted` field of results.json) and
//! the validation comparisons printed with every prediction. Data only, so
//! that the results file, the reports and the predictor can all name these
//! types without importing one another.

use serde::{Deserialize, Serialize};

/// The label on every predicted figure.
pub const KIND: &str = "PREDICTION (simulated, not measured)";

/// One predicted point for the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostPoint {
    /// `execl` or `shell`.
    pub workload: String,
    /// Design name.
    pub design: String,
    /// Call pattern name.
    pub call_pattern: String,
    /// Worker threads (copies).
    pub threads: usize,
    /// Predicted ops (iterations) per second.
    pub per_s: f64,
    /// Predicted contended acquisitions, percent.
    pub contended_pct: f64,
}

/// The predicted curves for the host `aspace bench` ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostPrediction {
    /// Always [`KIND`].
    pub kind: String,
    /// The machine description the simulation used, in words.
    pub machine: String,
    /// Where it came from: a calibration file, or the documented default.
    pub source: String,
    /// What is predicted and what is not, in words.
    pub note: String,
    /// The points (thread counts above the host's CPUs are left out: the
    /// simulator runs one copy per CPU).
    pub points: Vec<HostPoint>,
    /// The validation errors, where the file was found: the stored
    /// validation's (`aspace predict --validate`), not this run's.
    pub validation_checks: Vec<Check>,
    /// What the checks are ([`StoredValidation::label`]: stored, when,
    /// from which commit). Empty in results written before it was.
    #[serde(default)]
    pub validation_label: String,
}

/// One validation comparison: a published (or measured) figure against its
/// prediction, with the error and whether the target is met.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is compared.
    pub what: String,
    /// The machine and point.
    pub setting: String,
    /// The published figure, in words.
    pub published: String,
    /// The published figure as a number (None: an ordering/target only).
    pub published_value: Option<f64>,
    /// The prediction.
    pub predicted: f64,
    /// The target, in words.
    pub target: String,
    /// (predicted - published) / published, percent, or the difference in
    /// points for shares.
    pub error: Option<f64>,
    /// Whether the target is met.
    pub met: bool,
}

/// A validation as `aspace predict --validate` stored it: when, from which
/// build and on which host it was made. Printed beside a prediction, it is
/// always labelled as stored: it is not that run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredValidation {
    /// The day it was made (UTC, `YYYY-MM-DD`), or "unknown".
    pub date: String,
    /// The commit `aspace` was built from, or "unknown".
    pub commit: String,
    /// The host calibration it used, in words.
    pub host: String,
    /// The comparisons.
    pub checks: Vec<Check>,
}

impl StoredValidation {
    /// Reads a validation file: this type, or the bare list of checks older
    /// files hold (date and commit then "unknown"). None when absent or
    /// unreadable.
    pub fn load(path: &std::path::Path) -> Option<StoredValidation> {
        let text = std::fs::read_to_string(path).ok()?;
        if let Ok(v) = serde_json::from_str::<StoredValidation>(&text) {
            return Some(v);
        }
        let checks: Vec<Check> = serde_json::from_str(&text).ok()?;
        Some(StoredValidation {
            date: "unknown".into(),
            commit: "unknown".into(),
            host: "unknown".into(),
            checks,
        })
    }

    /// Targets met.
    pub fn met(&self) -> usize {
        self.checks.iter().filter(|c| c.met).count()
    }

    /// One line saying what it is: stored, when, from which commit, and
    /// how many targets it met; never "this run".
    pub fn label(&self, path: &std::path::Path) -> String {
        format!(
            "STORED validation, not this run: {} (made {} by commit {}): {} of {} targets met",
            path.display(),
            self.date,
            self.commit,
            self.met(),
            self.checks.len()
        )
    }
}
