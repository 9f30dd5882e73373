//! Tick labels and log-axis ticks. Kept here because plotters does not offer them: its default
//! tick labels print an `f64` with as many digits as it has (`0.30000000000000004`, `250000`),
//! and its log scale labels only the powers of ten inside the range, so a range narrower than a
//! decade (3 .. 40 µs, 2.5 .. 4.5 ms) gets one label or none. The key points computed here are
//! handed to plotters' own `with_key_points`.

/// Formats a value for tick and bar labels with 3 significant digits and no trailing zeros:
/// `0`, `0.0123`, `1.5`, `123`, `12345`; scientific below 0.001 and from 100000 on (`1e-4`,
/// `2.5e5`).
pub(super) fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    if !(1e-3..1e5).contains(&a) {
        // Round to 3 significant digits, then print the shortest form ("1e5", "2.5e5").
        let rounded: f64 = format!("{v:.2e}").parse().unwrap_or(v);
        return format!("{rounded:e}");
    }
    let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

/// Tick positions of a log axis spanning `lo .. hi` (both > 0): the bold (labelled) points are
/// the powers of ten inside the range, or 1-2-5 multiples of them when that gives fewer than 3
/// points, or every multiple 1..9 when even that gives fewer than 2. The light points (grid
/// lines only) are the remaining multiples 1..9 of each power of ten inside the range.
pub(super) fn log_key_points(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let multiples = |ms: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        for e in first..=last {
            let p = 10f64.powi(e);
            for m in ms {
                // Products like 3 * 0.1 are not exact; parse back the printed value.
                let v: f64 = format!("{:e}", m * p).parse().unwrap_or(m * p);
                if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
        }
        out
    };
    let all = multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let mut bold = multiples(&[1.0]);
    if bold.len() < 3 {
        bold = multiples(&[1.0, 2.0, 5.0]);
    }
    if bold.len() < 2 {
        bold = all.clone();
    }
    let light = all.into_iter().filter(|v| !bold.contains(v)).collect();
    (bold, light)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_formatted_with_three_significant_digits() {
        let cases = [
            (0.0, "0"),
            (0.001, "0.001"),
            (0.01234, "0.0123"),
            (1.5, "1.5"),
            (2.0, "2"),
            (123.4, "123"),
            (12345.0, "12345"),
            (-0.25, "-0.25"),
            (0.0001, "1e-4"),
            (250_000.0, "2.5e5"),
            (100_000.0, "1e5"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_value(v), want, "fmt_value({v})");
        }
    }

    #[test]
    fn log_ticks_are_decades_or_finer_for_narrow_ranges() {
        let (bold, light) = log_key_points(0.001, 200.0);
        assert_eq!(bold, vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0]);
        assert!(light.contains(&0.002) && light.contains(&200.0));
        assert!(!light.contains(&300.0));

        let (bold, _) = log_key_points(3.0, 40.0);
        assert_eq!(bold, vec![5.0, 10.0, 20.0]);

        let (bold, _) = log_key_points(2.5, 4.5);
        assert_eq!(bold, vec![3.0, 4.0]);
    }
}
