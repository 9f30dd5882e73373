//! The last minutes of a job's status, sampled once a second by the metrics server
//! (`server.rs`; on process 0 the whole job's): what the status page's charts draw
//! (`charts.rs`) and `GET /api/history` returns.

use serde_json::{json, Value};
use std::collections::VecDeque;

/// Samples kept: 5 minutes at one a second.
pub const SAMPLES: usize = 300;

/// One vertex's series, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexSeries {
    /// The vertex's name.
    pub name: String,
    /// Elements taken in per second (a source: emitted).
    pub per_s: VecDeque<f64>,
    /// Share of the time its instances were blocked by backpressure (0-1).
    pub backpressure: VecDeque<f64>,
    /// Frontier lag: seconds when the job's time unit is known, else time units; `None` where
    /// the vertex had no frontier.
    pub lag: VecDeque<Option<f64>>,
}

/// The samples: times and per vertex (graph order) its series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// When each sample was taken, s since the server started.
    pub at_s: VecDeque<f64>,
    /// Per vertex.
    pub vertices: Vec<VertexSeries>,
    /// True when `lag` is in seconds (the job said what its time unit is).
    pub lag_in_s: bool,
}

impl History {
    /// Records `status` (`Live::status`, or the job's merged one) taken at `at_s`, dropping the
    /// oldest sample beyond [`SAMPLES`].
    pub fn record(&mut self, at_s: f64, status: &Value) {
        let Some(vertices) = status["vertices"].as_array() else {
            return;
        };
        let per_s = status["time_per_second"].as_f64().filter(|&t| t > 0.0);
        self.lag_in_s = per_s.is_some();
        if self.vertices.len() != vertices.len() {
            self.vertices = (vertices.iter())
                .map(|v| VertexSeries {
                    name: v["name"].as_str().unwrap_or("?").to_string(),
                    ..VertexSeries::default()
                })
                .collect();
            self.at_s.clear();
        }
        let full = self.at_s.len() >= SAMPLES;
        if full {
            self.at_s.pop_front();
        }
        self.at_s.push_back(at_s);
        for (s, v) in self.vertices.iter_mut().zip(vertices) {
            if full {
                s.per_s.pop_front();
                s.backpressure.pop_front();
                s.lag.pop_front();
            }
            let n = |k: &str| v[k].as_f64().unwrap_or(0.0);
            // A source's input is what it emits.
            let per_s_in = match n("in_per_s") {
                0.0 => n("out_per_s"),
                x => x,
            };
            s.per_s.push_back(per_s_in);
            s.backpressure.push_back(n("backpressure"));
            let lag = v["frontier_lag"].as_f64().map(|l| l / per_s.unwrap_or(1.0));
            s.lag.push_back(lag);
        }
    }

    /// As JSON: `at_s` and per vertex its series (`lag` null where there was none).
    pub fn to_json(&self) -> Value {
        let vertices: Vec<Value> = (self.vertices.iter())
            .map(|v| {
                json!({"name": v.name, "per_s": v.per_s, "backpressure": v.backpressure,
                       "lag": v.lag})
            })
            .collect();
        json!({"at_s": self.at_s, "lag_unit": if self.lag_in_s { "s" } else { "time units" },
               "vertices": vertices})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_the_last_minutes_and_lags_in_seconds() {
        let mut h = History::default();
        for i in 0..SAMPLES + 5 {
            let status = json!({"time_per_second": 1000, "vertices": [
                {"name": "src", "in_per_s": 0.0, "out_per_s": 10.0 * i as f64,
                 "frontier_lag": 0},
                {"name": "map", "in_per_s": 5.0, "backpressure": 0.5, "frontier_lag": null}]});
            h.record(i as f64, &status);
        }
        assert_eq!(h.at_s.len(), SAMPLES);
        assert_eq!(h.at_s[0], 5.0);
        assert_eq!(
            h.vertices[0].per_s[0], 50.0,
            "a source's rate is what it emits"
        );
        assert_eq!(h.vertices[1].lag[0], None);
        h.record(
            400.0,
            &json!({"time_per_second": 1000, "vertices": [
            {"name": "src", "frontier_lag": 2500}, {"name": "map"}]}),
        );
        assert_eq!(h.vertices[0].lag.back(), Some(&Some(2.5)));
        assert_eq!(h.to_json()["lag_unit"], "s");
    }
}
