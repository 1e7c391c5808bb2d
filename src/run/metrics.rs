//! Typed rows of `metrics.csv`. A driver lists its columns once, each a name beside the
//! function that formats its value ([`Column`]); the file's header and every row come from
//! that one list ([`MetricsRow`]), so the two cannot drift apart.

use super::MetricsCsv;

/// One column of a metrics row `R`: its name in the header and how a row formats its value.
pub struct Column<R> {
    pub name: &'static str,
    pub value: fn(&R) -> String,
}

impl<R> Column<R> {
    /// The column `name`, whose value in a row is `value(row)`.
    pub const fn new(name: &'static str, value: fn(&R) -> String) -> Column<R> {
        Column { name, value }
    }
}

/// A row type of `metrics.csv`.
pub trait MetricsRow: Sized + 'static {
    /// The columns, in file order.
    const COLUMNS: &'static [Column<Self>];

    /// The header: every column's name.
    fn header() -> Vec<&'static str> {
        Self::COLUMNS.iter().map(|c| c.name).collect()
    }

    /// This row's values, one per column.
    fn values(&self) -> Vec<String> {
        Self::COLUMNS.iter().map(|c| (c.value)(self)).collect()
    }
}

/// A float as the metrics files write it (`1.234560e-1`; NaN as `NaN`).
pub fn sci(x: f64) -> String {
    format!("{x:.6e}")
}

impl MetricsCsv {
    /// Appends `row` (its columns are the file's header, see [`MetricsRow`]).
    pub fn write<R: MetricsRow>(&mut self, row: &R) -> std::io::Result<()> {
        self.row(&row.values())
    }
}

#[cfg(test)]
mod tests {
    use super::{Column, MetricsRow, sci};

    struct Row {
        step: u64,
        loss: f64,
    }

    impl MetricsRow for Row {
        const COLUMNS: &'static [Column<Self>] = &[
            Column::new("step", |r| r.step.to_string()),
            Column::new("loss", |r| sci(r.loss)),
        ];
    }

    #[test]
    fn header_and_values_come_from_the_same_columns() {
        assert_eq!(Row::header(), ["step", "loss"]);
        let r = Row {
            step: 7,
            loss: 0.125,
        };
        assert_eq!(r.values(), ["7", "1.250000e-1"]);
        assert_eq!(Row::header().len(), r.values().len());
    }

    #[test]
    fn resuming_keeps_rows_written_before_columns_were_appended() {
        let dir = std::env::temp_dir().join(format!("armac-metrics-pad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("metrics.csv");
        std::fs::write(&path, "step,loss\n1,0.5\n2,0.25\n3,0.125\n4,0.1").unwrap();
        let (mut m, last) =
            crate::run::MetricsCsv::resume(&path, &["step", "loss", "nodes"], 2).unwrap();
        assert_eq!(last, Some(2));
        m.row(&["3".into(), "0.2".into(), "9".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "step,loss,nodes\n1,0.5,\n2,0.25,\n3,0.2,9\n");
        // A header that is not a prefix of the new one keeps no rows.
        std::fs::write(&path, "step,other\n1,0.5\n").unwrap();
        let (_, last) =
            crate::run::MetricsCsv::resume(&path, &["step", "loss", "nodes"], 2).unwrap();
        assert_eq!(last, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
