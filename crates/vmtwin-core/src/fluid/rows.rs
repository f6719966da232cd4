//! Typed, column-by-column row writes into the event mode's table schemas.
//!
//! A sample's rows are first gathered as fixed arrays of cells (a float as its bits, an integer
//! as itself), then appended column by column: each column's type is matched once per sample,
//! not once per cell, and its values are extended in one loop. The schemas come from the
//! event mode's sampler (`metrics/sampler.rs`), so a column the sampler gains is filled here
//! as not derived (NaN, which the results read as NULL, for a float; 0 for a count) instead of
//! breaking the row; a column fluid mode writes that the schema has lost, or whose type
//! differs, is a bug caught when the layout is built.
//!
//! # Tunables
//! None.
//!
//! # Counters
//! None of its own: it writes the cells `engine.rs` computes.
//!
//! # Known gaps
//! None known.

use crate::metrics::{Column, Table};

/// The type of a cell fluid mode writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// a float, stored as its bits
    F,
    /// a u64
    U64,
    /// a u32
    U32,
}

/// One cell: a float's bits or an integer.
pub type Cell = u64;

/// A float cell.
#[inline]
pub fn f(x: f64) -> Cell {
    x.to_bits()
}

/// Where fluid mode's cells go in one table: per schema column, the index of its cell.
#[derive(Debug)]
pub struct Layout {
    plan: Vec<Option<usize>>,
}

impl Layout {
    /// The layout of rows whose cells are `cells` (name and type, in the row's order) in
    /// `table`'s schema.
    ///
    /// # Panics
    /// When the schema has no column of a cell's name, or one of another type (a bug).
    pub fn new(table: &Table, cells: &[(&str, Kind)]) -> Self {
        for (name, kind) in cells {
            let col = table.column(name).unwrap_or_else(|| panic!("fluid mode writes column {name}, which the event mode's table no longer has"));
            let same = matches!((col, kind), (Column::F64(_), Kind::F) | (Column::U64(_), Kind::U64) | (Column::U32(_), Kind::U32));
            assert!(same, "fluid mode writes column {name} as {kind:?}, the event mode's table has {}", col.dtype());
        }
        Layout { plan: table.columns.iter().map(|(c, _)| cells.iter().position(|(n, _)| n == c)).collect() }
    }

    /// Append `rows` (each `N` cells in the layout's order) to `table`.
    pub fn append<const N: usize>(&self, table: &mut Table, rows: &[[Cell; N]]) {
        let n = rows.len();
        for ((_, col), at) in table.columns.iter_mut().zip(&self.plan) {
            match (col, *at) {
                (Column::F64(c), Some(i)) => c.extend(rows.iter().map(|r| f64::from_bits(r[i]))),
                (Column::U64(c), Some(i)) => c.extend(rows.iter().map(|r| r[i])),
                (Column::U32(c), Some(i)) => c.extend(rows.iter().map(|r| r[i] as u32)),
                (Column::F64(c), None) => c.resize(c.len() + n, f64::NAN),
                (Column::U64(c), None) => c.resize(c.len() + n, 0),
                (Column::U32(c), None) => c.resize(c.len() + n, 0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Value;

    #[test]
    fn cells_land_in_their_columns_and_unknown_columns_are_not_derived() {
        let mut t = Table::with_schema(&[("a", Value::F64(0.0)), ("extra", Value::F64(0.0)), ("b", Value::U32(0)), ("c", Value::U64(0))]);
        let layout = Layout::new(&t, &[("c", Kind::U64), ("a", Kind::F), ("b", Kind::U32)]);
        layout.append(&mut t, &[[7, f(1.5), 3], [8, f(-2.0), 4]]);
        assert_eq!(t.columns[0].1, Column::F64(vec![1.5, -2.0]));
        let Column::F64(extra) = &t.columns[1].1 else { panic!() };
        assert!(extra.iter().all(|x| x.is_nan()) && extra.len() == 2);
        assert_eq!(t.columns[2].1, Column::U32(vec![3, 4]));
        assert_eq!(t.columns[3].1, Column::U64(vec![7, 8]));
    }

    #[test]
    #[should_panic(expected = "as U32")]
    fn a_cell_of_another_type_is_a_bug() {
        let t = Table::with_schema(&[("a", Value::F64(0.0))]);
        Layout::new(&t, &[("a", Kind::U32)]);
    }
}
