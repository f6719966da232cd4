//! Typed, column-by-column row writes into the event mode's table schemas.
//!
//! A sample's rows are first gathered as fixed arrays of cells (a float as its bits, an integer
//! as itself), then appended column by column: each column's type is matched once per batch of
//! rows, not once per cell, and its values are extended in one loop. They are appended either to
//! the host's own tables ([`Layout::append`]) or, in a batch of hosts, written straight into the
//! caller's output columns at the host's rows ([`TableOut::write`]), with the batch's `host` and
//! `vm_id` filled in on the way: the same values, and no per-host tables to hold until the
//! batch is joined (those cost a cold batch call more in page faults than its simulation). The schemas come from the
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

impl Kind {
    /// The kind of a table column.
    pub fn of(c: &Column) -> Kind {
        match c {
            Column::F64(_) => Kind::F,
            Column::U64(_) => Kind::U64,
            Column::U32(_) => Kind::U32,
        }
    }

    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            Kind::U32 => 4,
            Kind::F | Kind::U64 => 8,
        }
    }

    /// The dtype name of the bindings (`f64`, `u64`, `u32`).
    pub fn dtype(self) -> &'static str {
        match self {
            Kind::F => "f64",
            Kind::U64 => "u64",
            Kind::U32 => "u32",
        }
    }
}

/// What fills one column of a batch's output, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// the row's cell `i`
    Cell(usize),
    /// the row's cell `i` (a VM's index in its host) plus the VMs of the hosts before it
    VmId(usize),
    /// the host's index in the batch
    Host,
    /// a column fluid mode does not derive: NaN for a float, 0 for a count (as [`Layout::append`])
    Missing,
}

/// One column of a batch's output: its name, type and fill.
pub type OutColumn = (&'static str, Kind, Fill);

/// Name of the column holding the host's index in a batch.
pub const HOST_INDEX: &str = "host";

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

/// The names of a batch's columns for a table with columns `names`: the `host` column after
/// `time_s` (first when there is no `time_s`).
pub fn with_host(names: &[&'static str]) -> Vec<&'static str> {
    let mut out = Vec::with_capacity(names.len() + 1);
    for &n in names {
        out.push(n);
        if n == "time_s" {
            out.push(HOST_INDEX);
        }
    }
    if !out.contains(&HOST_INDEX) {
        out.insert(0, HOST_INDEX);
    }
    out
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

    /// The columns of a batch's output for rows of this layout in `table` (the table this
    /// layout was made for): `table`'s columns with `host` after `time_s` ([`with_host`]), and
    /// `vm_id`, when a cell, shifted across the batch.
    pub fn out_columns(&self, table: &Table) -> Vec<OutColumn> {
        let names: Vec<&'static str> = table.columns.iter().map(|(n, _)| *n).collect();
        with_host(&names)
            .into_iter()
            .map(|name| {
                if name == HOST_INDEX {
                    return (name, Kind::U32, Fill::Host);
                }
                let at = names.iter().position(|n| *n == name).expect("a column of the table");
                let kind = Kind::of(&table.columns[at].1);
                let fill = match self.plan[at] {
                    Some(i) if name == "vm_id" => Fill::VmId(i),
                    Some(i) => Fill::Cell(i),
                    None => Fill::Missing,
                };
                (name, kind, fill)
            })
            .collect()
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

/// Where one host's rows of one table go in a batch's output: per column (in `columns`'
/// order) the host's own slice of the caller's column, room for the rows the batch bounded the
/// host to.
#[derive(Debug)]
pub struct TableOut<'o> {
    cols: Vec<&'o mut [u8]>,
    columns: &'o [OutColumn],
    /// rows written so far
    pub written: usize,
    host: u32,
    vm_offset: u32,
}

impl<'o> TableOut<'o> {
    /// Rows of host `host` (whose VMs follow `vm_offset` VMs of earlier hosts) written into
    /// `cols`, one slice per column of `columns`.
    pub fn new(cols: Vec<&'o mut [u8]>, columns: &'o [OutColumn], host: u32, vm_offset: u32) -> Self {
        assert_eq!(cols.len(), columns.len(), "one slice per column");
        TableOut { cols, columns, written: 0, host, vm_offset }
    }

    /// Write `rows` (each `N` cells in the layout's order) after the rows written so far, as
    /// little-endian values.
    ///
    /// # Panics
    /// When the host's slices have no room for them (a bound that is too small: a bug).
    pub fn write<const N: usize>(&mut self, rows: &[[Cell; N]]) {
        let (at, n) = (self.written, rows.len());
        let (host, shift) = (self.host, self.vm_offset);
        for (out, &(name, kind, fill)) in self.cols.iter_mut().zip(self.columns) {
            let size = kind.size();
            assert!((at + n) * size <= out.len(), "column {name}: more rows than the host's bound ({})", out.len() / size);
            let out = &mut out[at * size..(at + n) * size];
            match (kind, fill) {
                (Kind::U32, Fill::Cell(i)) => put(out, rows.iter().map(|r| (r[i] as u32).to_le_bytes())),
                (Kind::U32, Fill::VmId(i)) => put(out, rows.iter().map(|r| (r[i] as u32 + shift).to_le_bytes())),
                (Kind::U32, Fill::Host) => put(out, std::iter::repeat(host.to_le_bytes())),
                (Kind::U32 | Kind::U64, Fill::Missing) => out.fill(0),
                (Kind::F, Fill::Missing) => put(out, std::iter::repeat(f64::NAN.to_le_bytes())),
                (Kind::F | Kind::U64, Fill::Cell(i)) => put(out, rows.iter().map(|r| r[i].to_le_bytes())),
                (Kind::F | Kind::U64, Fill::VmId(_) | Fill::Host) => unreachable!("column {name}: host and vm_id are u32"),
            }
        }
        self.written += n;
    }
}

/// `values` one after the other into `out` (as many as fit).
#[inline]
fn put<const B: usize>(out: &mut [u8], values: impl Iterator<Item = [u8; B]>) {
    for (chunk, v) in out.chunks_exact_mut(B).zip(values) {
        chunk.copy_from_slice(&v);
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
    fn rows_written_out_are_the_rows_appended_with_host_and_shifted_vm_ids() {
        let schema = [("time_s", Value::F64(0.0)), ("vm_id", Value::U32(0)), ("extra", Value::F64(0.0)), ("n", Value::U64(0)), ("k", Value::U32(0))];
        let mut t = Table::with_schema(&schema);
        let layout = Layout::new(&t, &[("n", Kind::U64), ("time_s", Kind::F), ("vm_id", Kind::U32), ("k", Kind::U32)]);
        let rows = [[7, f(1.5), 3, 9], [8, f(-2.0), 4, 10], [u64::MAX, f(f64::INFINITY), 0, 11]];
        let columns = layout.out_columns(&t);
        let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
        assert_eq!(names, ["time_s", HOST_INDEX, "vm_id", "extra", "n", "k"]);
        // room for 5 rows; two writes of 1 and 2
        let mut bufs: Vec<Vec<u8>> = columns.iter().map(|c| vec![0xAB; 5 * c.1.size()]).collect();
        let mut out = TableOut::new(bufs.iter_mut().map(|b| b.as_mut_slice()).collect(), &columns, 6, 100);
        out.write(&rows[..1]);
        out.write(&rows[1..]);
        assert_eq!(out.written, 3);
        drop(out);
        layout.append(&mut t, &rows);
        for (b, (name, kind, _)) in bufs.iter().zip(&columns) {
            let got = &b[..3 * kind.size()];
            let want = match *name {
                HOST_INDEX => Column::U32(vec![6; 3]).to_le_bytes(),
                "vm_id" => Column::U32(vec![103, 104, 100]).to_le_bytes(),
                _ => t.column(name).unwrap().to_le_bytes(),
            };
            assert_eq!(got, want.as_slice(), "{name}");
            assert!(b[3 * kind.size()..].iter().all(|&x| x == 0xAB), "{name}: nothing past the rows written");
        }
    }

    #[test]
    #[should_panic(expected = "more rows than the host's bound")]
    fn rows_beyond_the_bound_are_a_bug() {
        let t = Table::with_schema(&[("a", Value::F64(0.0))]);
        let layout = Layout::new(&t, &[("a", Kind::F)]);
        let columns = layout.out_columns(&t);
        let mut bufs: Vec<Vec<u8>> = columns.iter().map(|c| vec![0; c.1.size()]).collect();
        let mut out = TableOut::new(bufs.iter_mut().map(|b| b.as_mut_slice()).collect(), &columns, 0, 0);
        out.write(&[[f(1.0)], [f(2.0)]]);
    }

    #[test]
    #[should_panic(expected = "as U32")]
    fn a_cell_of_another_type_is_a_bug() {
        let t = Table::with_schema(&[("a", Value::F64(0.0))]);
        Layout::new(&t, &[("a", Kind::U32)]);
    }
}
