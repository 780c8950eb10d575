//! The table the seed series print: a label, the seed's before and after
//! with their change, then one or more simulated before/after pairs, each
//! with its change.

/// Column widths, separators and number formats of one table.
pub struct SeedTable {
    pub label_w: usize,
    /// Width of the seed's two columns and of the simulated ones.
    pub seed_w: usize,
    pub sim_w: usize,
    /// Between the seed's group and each simulated group.
    pub sep: &'static str,
    pub cell: fn(f64) -> String,
    /// The change from before to after, as printed.
    pub change: fn(f64, f64) -> String,
}

/// Width of a change column.
const CHANGE_W: usize = 7;

impl SeedTable {
    /// A header line: the label column, then (before, after, change)
    /// titles per group, the seed's first.
    pub fn header(&self, label: &str, groups: &[[&str; 3]]) -> String {
        self.line(label, groups.iter().map(|g| g.map(str::to_string)))
    }

    /// A row: the seed's (before, after), then the simulated pairs.
    pub fn row(&self, label: &str, pairs: &[(f64, f64)]) -> String {
        let cells = pairs
            .iter()
            .map(|&(a, b)| [(self.cell)(a), (self.cell)(b), (self.change)(a, b)]);
        self.line(label, cells)
    }

    fn line(&self, label: &str, groups: impl Iterator<Item = [String; 3]>) -> String {
        let mut s = format!("{label:<w$}", w = self.label_w);
        for (i, [a, b, c]) in groups.enumerate() {
            let w = if i == 0 { self.seed_w } else { self.sim_w };
            let sep = if i == 0 { " " } else { self.sep };
            s += &format!("{sep}{a:>w$} {b:>w$} {c:>CHANGE_W$}");
        }
        s
    }
}
