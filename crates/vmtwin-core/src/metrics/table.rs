//! Columnar tables: one typed vector per column, rows appended in sampling order.

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// 64-bit floats
    F64(Vec<f64>),
    /// unsigned 64-bit integers
    U64(Vec<u64>),
    /// unsigned 32-bit integers
    U32(Vec<u32>),
}

/// A cell to append.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// a float
    F64(f64),
    /// a u64
    U64(u64),
    /// a u32
    U32(u32),
}

impl Column {
    /// The dtype name used across the binding (`f64`, `u64`, `u32`).
    pub fn dtype(&self) -> &'static str {
        match self {
            Column::F64(_) => "f64",
            Column::U64(_) => "u64",
            Column::U32(_) => "u32",
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::U32(v) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values as little-endian bytes: borrowed on little-endian machines (no copy; a
    /// drained table goes to Python once per few thousand rows), copied elsewhere.
    pub fn le_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        #[cfg(target_endian = "little")]
        {
            // SAFETY: f64, u64 and u32 have no padding and every bit pattern is a valid byte.
            let (ptr, bytes) = match self {
                Column::F64(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
                Column::U64(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
                Column::U32(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(v.as_slice())),
            };
            std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(ptr, bytes) })
        }
        #[cfg(not(target_endian = "little"))]
        {
            std::borrow::Cow::Owned(self.to_le_bytes())
        }
    }

    /// The values as little-endian bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// An empty column of the same kind.
    pub fn empty_like(&self) -> Column {
        match self {
            Column::F64(_) => Column::F64(Vec::new()),
            Column::U64(_) => Column::U64(Vec::new()),
            Column::U32(_) => Column::U32(Vec::new()),
        }
    }

    /// Bytes per value.
    pub fn value_bytes(&self) -> usize {
        match self {
            Column::F64(_) | Column::U64(_) => 8,
            Column::U32(_) => 4,
        }
    }

    /// Values it has room for.
    pub fn capacity(&self) -> usize {
        match self {
            Column::F64(v) => v.capacity(),
            Column::U64(v) => v.capacity(),
            Column::U32(v) => v.capacity(),
        }
    }

    /// Reserve room for `n` more values.
    pub fn reserve(&mut self, n: usize) {
        match self {
            Column::F64(v) => v.reserve(n),
            Column::U64(v) => v.reserve(n),
            Column::U32(v) => v.reserve(n),
        }
    }

    /// Its reserved room after its values, as (address, bytes).
    pub fn spare_room(&mut self) -> (usize, usize) {
        match self {
            Column::F64(v) => (v.spare_capacity_mut().as_ptr() as usize, std::mem::size_of_val(v.spare_capacity_mut())),
            Column::U64(v) => (v.spare_capacity_mut().as_ptr() as usize, std::mem::size_of_val(v.spare_capacity_mut())),
            Column::U32(v) => (v.spare_capacity_mut().as_ptr() as usize, std::mem::size_of_val(v.spare_capacity_mut())),
        }
    }

    fn push(&mut self, value: Value) {
        match (self, value) {
            (Column::F64(v), Value::F64(x)) => v.push(x),
            (Column::U64(v), Value::U64(x)) => v.push(x),
            (Column::U32(v), Value::U32(x)) => v.push(x),
            (c, x) => unreachable!("column {} given {x:?}", c.dtype()),
        }
    }
}

/// A table with a fixed schema.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// (name, values) in schema order
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// An empty table whose schema is given by a sample row.
    pub fn with_schema(schema: &[(&'static str, Value)]) -> Self {
        let columns = schema
            .iter()
            .map(|&(name, v)| {
                let col = match v {
                    Value::F64(_) => Column::F64(Vec::new()),
                    Value::U64(_) => Column::U64(Vec::new()),
                    Value::U32(_) => Column::U32(Vec::new()),
                };
                (name, col)
            })
            .collect();
        Table { columns }
    }

    /// Append one row, in schema order.
    pub fn push_row(&mut self, row: &[(&'static str, Value)]) {
        debug_assert_eq!(row.len(), self.columns.len());
        for ((name, col), &(rn, v)) in self.columns.iter_mut().zip(row) {
            debug_assert_eq!(*name, rn);
            col.push(v);
        }
    }

    /// A writer that appends one row cell by cell, in schema order, with no row to build first
    /// (the sampler's path: thousands of rows per sample on large hosts).
    #[inline]
    pub fn row(&mut self) -> RowWriter<'_> {
        RowWriter { cols: self.columns.iter_mut() }
    }

    /// A writer of at most `rows` more rows into room reserved in the columns (see [`Rows`]).
    pub fn append(&mut self, rows: usize) -> Rows<'_> {
        self.reserve(rows);
        let slots = self
            .columns
            .iter_mut()
            .map(|(name, c)| {
                // the first free slot of each column: `reserve` made room for `rows` after it
                let (at, kind) = match c {
                    Column::F64(v) => (v.spare_capacity_mut().as_mut_ptr() as *mut u8, Kind::F64),
                    Column::U64(v) => (v.spare_capacity_mut().as_mut_ptr() as *mut u8, Kind::U64),
                    Column::U32(v) => (v.spare_capacity_mut().as_mut_ptr() as *mut u8, Kind::U32),
                };
                Slot { at, kind, name: *name }
            })
            .collect();
        let block = vec![0; rows.min(BLOCK_ROWS) * self.columns.len()];
        Rows { cols: &mut self.columns, slots, block, gathered: 0, done: 0, room: rows, fetch_col: 0, fetch_at: 0, fetch_end: 0 }
    }

    /// Reserve room for `rows` more rows in every column.
    pub fn reserve(&mut self, rows: usize) {
        for (_, c) in &mut self.columns {
            c.reserve(rows);
        }
    }

    /// Each column's reserved room after its rows, as (address, bytes), onto `out`.
    pub fn spare_room(&mut self, out: &mut Vec<(usize, usize)>) {
        for (_, c) in &mut self.columns {
            out.push(c.spare_room());
        }
    }

    /// Take the next of `spares` (empty columns with room, in schema order) in place of each
    /// column that has no values and no room of its own, when its kind matches; the others are
    /// left in `spares`' place untouched (and dropped with it).
    pub fn adopt(&mut self, spares: &mut impl Iterator<Item = Column>) {
        for (_, c) in &mut self.columns {
            let Some(s) = spares.next() else { return };
            if c.capacity() == 0 && s.is_empty() && std::mem::discriminant(c) == std::mem::discriminant(&s) {
                *c = s;
            }
        }
    }

    /// Move every row out, leaving this table empty with the same schema (the sampler is
    /// drained this way while a run goes, so it never holds more than one drain's rows).
    pub fn take(&mut self) -> Table {
        let empty = self
            .columns
            .iter()
            .map(|(name, c)| {
                let col = match c {
                    Column::F64(_) => Column::F64(Vec::new()),
                    Column::U64(_) => Column::U64(Vec::new()),
                    Column::U32(_) => Column::U32(Vec::new()),
                };
                (*name, col)
            })
            .collect();
        Table { columns: std::mem::replace(&mut self.columns, empty) }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }
}

/// Something cells are written to, in schema order: a [`RowWriter`] appending to a table, or a
/// `Vec` of named values (a row for [`Table::push_row`], or a schema for [`Table::with_schema`]).
/// Writing rows through one function generic over `Cells` keeps a table's schema and its rows
/// defined in one place.
pub trait Cells {
    /// a float cell
    fn f64(&mut self, name: &'static str, x: f64);
    /// a u64 cell
    fn u64(&mut self, name: &'static str, x: u64);
    /// a u32 cell
    fn u32(&mut self, name: &'static str, x: u32);
}

impl Cells for Vec<(&'static str, Value)> {
    fn f64(&mut self, name: &'static str, x: f64) {
        self.push((name, Value::F64(x)));
    }
    fn u64(&mut self, name: &'static str, x: u64) {
        self.push((name, Value::U64(x)));
    }
    fn u32(&mut self, name: &'static str, x: u32) {
        self.push((name, Value::U32(x)));
    }
}

/// Appends one row, cell by cell in schema order (see [`Table::row`]). Every cell of the row must
/// be written, in order, with the column's type; a mismatch panics.
pub struct RowWriter<'a> {
    cols: std::slice::IterMut<'a, (&'static str, Column)>,
}

impl RowWriter<'_> {
    #[inline]
    fn next(&mut self, name: &'static str) -> &mut Column {
        let (n, c) = self.cols.next().expect("a cell beyond the schema");
        debug_assert_eq!(*n, name);
        c
    }
}

impl Cells for RowWriter<'_> {
    #[inline]
    fn f64(&mut self, name: &'static str, x: f64) {
        match self.next(name) {
            Column::F64(v) => v.push(x),
            c => unreachable!("column {name} is {}, given a f64", c.dtype()),
        }
    }

    #[inline]
    fn u64(&mut self, name: &'static str, x: u64) {
        match self.next(name) {
            Column::U64(v) => v.push(x),
            c => unreachable!("column {name} is {}, given a u64", c.dtype()),
        }
    }

    #[inline]
    fn u32(&mut self, name: &'static str, x: u32) {
        match self.next(name) {
            Column::U32(v) => v.push(x),
            c => unreachable!("column {name} is {}, given a u32", c.dtype()),
        }
    }
}

impl Drop for RowWriter<'_> {
    fn drop(&mut self) {
        assert!(self.cols.len() == 0 || std::thread::panicking(), "a row left short");
    }
}

/// A column's type, checked at every cell a [`Rows`] writer stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    F64,
    U64,
    U32,
}

/// Where a [`Rows`] writer moves one column's cells.
struct Slot {
    /// the column's first free slot when the writer was made
    at: *mut u8,
    kind: Kind,
    name: &'static str,
}

/// Rows a [`Rows`] writer gathers before it moves them into the columns. Large columns are each
/// their own page-aligned allocation, so row i of every column falls in the same L1 set (4 KiB
/// apart on a 32 KiB 8-way L1): written row by row, the `vcpu` table's 23 columns evict one
/// another at every cell. Moved column by column a block at a time, each column's lines are
/// filled whole before the next column's. 64 rows of the widest table (23 cells) are 11.8 KB,
/// so the block and the lines it fills stay within L1. Source: sized here (benchmarks/README.md,
/// "Session 23: bench-1024vm cache misses").
const BLOCK_ROWS: usize = 64;

/// Bytes in a cache line (x86-64).
const CACHE_LINE: usize = 64;

/// Cache lines of the columns a [`Rows`] writer asks for per row gathered: the `vcpu` table's
/// block fills about 200 lines over its 64 rows.
const PREFETCH_PER_ROW: usize = 4;

/// Appends up to a given number of rows (see [`Table::append`]) into room reserved beforehand:
/// no length update or capacity check per cell, where a [`RowWriter`] push costs about 20
/// instructions (a 1,024-VM host writes 40,000 cells per sample). Cells are gathered row-major
/// in a block of [`BLOCK_ROWS`] rows and moved into the columns a block at a time, column by
/// column (one L1 miss per cache line of a column, not per cell). Rows, written cell by cell in
/// schema order with [`Rows::row`], join the columns when the writer is dropped; a row left
/// short panics and is not kept.
pub struct Rows<'a> {
    /// the table's columns, borrowed so that none can grow (move) while the writer lives
    cols: &'a mut [(&'static str, Column)],
    slots: Vec<Slot>,
    /// rows gathered and not yet moved, row-major, a cell as 64 bits (a float's bits, a u32
    /// widened): room for [`BLOCK_ROWS`] rows
    block: Vec<u64>,
    /// whole rows in `block`
    gathered: usize,
    /// rows moved into the columns
    done: usize,
    /// rows reserved
    room: usize,
    /// the prefetch's place (`Rows::prefetch_some`): the next column to start, the next line
    /// of the current one and where it ends
    fetch_col: usize,
    fetch_at: usize,
    fetch_end: usize,
}

impl<'a> Rows<'a> {
    /// The next row; panics beyond the rows reserved.
    #[inline(always)]
    pub fn row(&mut self) -> Row<'_> {
        if self.gathered == BLOCK_ROWS {
            self.flush();
        }
        assert!(self.done + self.gathered < self.room, "more rows than the {} reserved", self.room);
        self.prefetch_some();
        let n = self.slots.len();
        // the row's cells: `gathered < BLOCK_ROWS` (a full block was moved out above) and
        // `gathered < room` leave room for them in `block`
        let Rows { block, slots, gathered, .. } = self;
        Row { slots, cells: &mut block[*gathered * n..][..n], k: 0, gathered }
    }

    /// Write one row of exactly `N` cells (the schema's width) with `cells`, straight into the
    /// block: with the width a constant, every cell's place in the row is one too, so a cell
    /// is a single store, with no count kept in memory and no bounds check per cell (a
    /// [`Row`] cost about 8 instructions a cell). A row left short panics, and a panic while
    /// `cells` runs keeps nothing of the row (it is counted only after it is whole).
    #[inline(always)]
    pub fn fill<const N: usize>(&mut self, cells: impl FnOnce(&mut FixedRow<'_, N>)) {
        if self.gathered == BLOCK_ROWS {
            self.flush();
        }
        assert!(self.done + self.gathered < self.room, "more rows than the {} reserved", self.room);
        assert!(self.slots.len() == N, "a row of {N} cells for a schema of {}", self.slots.len());
        self.prefetch_some();
        let at = self.gathered * N;
        let Ok(row) = <&mut [u64; N]>::try_from(&mut self.block[at..at + N]) else { unreachable!("N cells") };
        let mut fixed = FixedRow { cells: row, k: 0, #[cfg(debug_assertions)] slots: &self.slots };
        cells(&mut fixed);
        assert!(fixed.k == N, "a row left short");
        self.gathered += 1;
    }

    /// Ask for the next [`PREFETCH_PER_ROW`] cache lines that the block being gathered will
    /// fill (column by column, as [`Rows::flush`] writes them), so that they are in cache when
    /// the flush stores its cells: the columns' fresh memory is in no cache, and without this
    /// the flush waits on a line per 8 cells (60% of the sampler's time at 1,024 VMs). A few
    /// lines a row, so that every line has most of the block's rows to arrive and the requests
    /// do not queue. A prefetch changes no memory and never faults: lines beyond the reserved
    /// room cost only the request.
    #[inline(always)]
    fn prefetch_some(&mut self) {
        #[cfg(target_arch = "x86_64")]
        for _ in 0..PREFETCH_PER_ROW {
            if self.fetch_at >= self.fetch_end {
                if self.fetch_col >= self.slots.len() {
                    return;
                }
                let slot = &self.slots[self.fetch_col];
                let size = if slot.kind == Kind::U32 { 4 } else { 8 };
                let start = slot.at.wrapping_add(self.done * size) as usize;
                self.fetch_at = start & !(CACHE_LINE - 1);
                self.fetch_end = start + BLOCK_ROWS * size;
                self.fetch_col += 1;
            }
            // SAFETY: `prefetch` only hints the cache; any address is allowed
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(self.fetch_at as *const i8) };
            self.fetch_at += CACHE_LINE;
        }
    }

    /// Move the gathered rows into the columns, column by column.
    #[inline(never)]
    fn flush(&mut self) {
        let (n, rows) = (self.slots.len(), self.gathered);
        let block = self.block.as_ptr();
        for (k, slot) in self.slots.iter().enumerate() {
            // SAFETY: the block holds `rows` whole rows of `n` cells, so cell `k` of row `r` is
            // at `r * n + k`. `slot.at` is the column's first free slot for its kind's type,
            // with room for `room` values after it (`Table::append` reserved them) and
            // `done + rows <= room` (`row`); the column cannot reallocate while `cols` is
            // borrowed here. A float column takes its values' bits (`f64` and `u64` have one
            // size and alignment).
            unsafe {
                let from = block.add(k);
                match slot.kind {
                    Kind::F64 | Kind::U64 => {
                        let at = (slot.at as *mut u64).add(self.done);
                        for r in 0..rows {
                            at.add(r).write(*from.add(r * n));
                        }
                    }
                    Kind::U32 => {
                        let at = (slot.at as *mut u32).add(self.done);
                        for r in 0..rows {
                            at.add(r).write(*from.add(r * n) as u32);
                        }
                    }
                }
            }
        }
        self.done += rows;
        self.gathered = 0;
        // the next block's lines, from its first column
        (self.fetch_col, self.fetch_at, self.fetch_end) = (0, 0, 0);
    }
}

impl Drop for Rows<'_> {
    fn drop(&mut self) {
        self.flush();
        for (_, c) in self.cols.iter_mut() {
            // SAFETY: the `done` values after each column's length were written by `flush`
            // from complete rows (`Row`'s drop counts a row only when every cell was gathered)
            // within the reserved capacity
            unsafe {
                match c {
                    Column::F64(v) => v.set_len(v.len() + self.done),
                    Column::U64(v) => v.set_len(v.len() + self.done),
                    Column::U32(v) => v.set_len(v.len() + self.done),
                }
            }
        }
    }
}

/// One row of a [`Rows`] writer: every cell, in schema order, with the column's type.
pub struct Row<'r> {
    /// the writer's schema and this row's cells in its block, borrowed apart (not through the
    /// writer) so that nothing a cell's store writes can alias them: the count of cells stays
    /// in a register (a raw pointer's store had it written back and re-read at every cell)
    slots: &'r [Slot],
    cells: &'r mut [u64],
    /// cells written
    k: usize,
    /// the writer's count of whole rows gathered
    gathered: &'r mut usize,
}

impl Row<'_> {
    #[inline(always)]
    fn put(&mut self, kind: Kind, name: &'static str, bits: u64) {
        // the schema is made by the same row functions that write the cells (`Sampler::new`),
        // so a cell's type matches its column's by construction; and a cell is 64 bits whatever
        // its type, so a mismatch could garble a value but not memory: checked in debug builds
        // (a release check cost 3 instructions a cell, 0.8% of bench-1024vm-1m's)
        debug_assert!(self.slots[self.k].kind == kind, "column {} is {:?}, given a {kind:?}", self.slots[self.k].name, self.slots[self.k].kind);
        debug_assert_eq!(self.slots[self.k].name, name);
        let Some(cell) = self.cells.get_mut(self.k) else { panic!("a cell beyond the schema") };
        *cell = bits;
        self.k += 1;
    }
}

/// One row of a [`Rows::fill`]: `N` cells, in schema order, with the column's type (checked in
/// debug builds).
pub struct FixedRow<'r, const N: usize> {
    cells: &'r mut [u64; N],
    /// cells written: a constant at every cell once the row's function is inlined
    k: usize,
    #[cfg(debug_assertions)]
    slots: &'r [Slot],
}

impl<const N: usize> FixedRow<'_, N> {
    #[inline(always)]
    fn put(&mut self, kind: Kind, name: &'static str, bits: u64) {
        #[cfg(debug_assertions)]
        {
            assert!(self.slots[self.k].kind == kind, "column {} is {:?}, given a {kind:?}", self.slots[self.k].name, self.slots[self.k].kind);
            assert_eq!(self.slots[self.k].name, name);
        }
        let _ = (kind, name);
        self.cells[self.k] = bits;
        self.k += 1;
    }
}

/// `Cells` for a row type whose `put(kind, name, bits)` stores one 64-bit cell: both block rows.
macro_rules! cells_by_put {
    ($t:ty $(, const $n:ident: $nt:ty)?) => {
        impl$(<const $n: $nt>)? Cells for $t {
            #[inline(always)]
            fn f64(&mut self, name: &'static str, x: f64) {
                self.put(Kind::F64, name, x.to_bits());
            }

            #[inline(always)]
            fn u64(&mut self, name: &'static str, x: u64) {
                self.put(Kind::U64, name, x);
            }

            #[inline(always)]
            fn u32(&mut self, name: &'static str, x: u32) {
                self.put(Kind::U32, name, u64::from(x));
            }
        }
    };
}
cells_by_put!(FixedRow<'_, N>, const N: usize);
cells_by_put!(Row<'_>);

impl Drop for Row<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.k == self.cells.len() {
            // a full block is moved out by the next row, or the writer's drop
            *self.gathered += 1;
        } else {
            assert!(std::thread::panicking(), "a row left short");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Table {
        Table::with_schema(&[("t", Value::F64(0.0)), ("id", Value::U32(0)), ("ns", Value::U64(0))])
    }

    /// A drained table's columns take spares of their kind, in schema order; a column with room
    /// of its own, or a spare of another kind, is left as it was.
    #[test]
    fn adopt_takes_matching_spares_in_order() {
        let mut t = schema();
        t.adopt(&mut vec![Column::F64(Vec::with_capacity(10)), Column::U32(Vec::with_capacity(20)), Column::U64(Vec::with_capacity(30))].into_iter());
        assert_eq!(t.columns.iter().map(|(_, c)| c.capacity()).collect::<Vec<_>>(), [10, 20, 30]);
        let mut t = schema();
        t.reserve(5);
        let own = t.columns[0].1.capacity();
        t.columns[1].1 = Column::U32(Vec::new());
        t.columns[2].1 = Column::U64(Vec::new());
        t.adopt(&mut vec![Column::F64(Vec::with_capacity(100)), Column::F64(Vec::with_capacity(100)), Column::U64(Vec::with_capacity(7))].into_iter());
        assert_eq!(t.columns.iter().map(|(_, c)| c.capacity()).collect::<Vec<_>>(), [own, 0, 7]);
        assert_eq!(t.columns.iter().map(|(_, c)| c.dtype()).collect::<Vec<_>>(), ["f64", "u32", "u64"]);
        // rows still go where they should
        t.push_row(&[("t", Value::F64(1.5)), ("id", Value::U32(3)), ("ns", Value::U64(9))]);
        assert_eq!(t.rows(), 1);
    }

    fn cells(c: &mut impl Cells, i: u64) {
        c.f64("t", i as f64 * 0.5);
        c.u32("id", i as u32 + 7);
        c.u64("ns", i * 1_000_000_007);
    }

    #[test]
    fn rows_writer_appends_what_push_row_does() {
        // the oracle is the same rows through `push_row`, after rows already in the table
        let mut want = schema();
        let mut got = schema();
        for i in 0..5 {
            let mut row = Vec::new();
            cells(&mut row, i);
            want.push_row(&row);
            got.push_row(&row);
        }
        // 150 rows: two whole blocks of `BLOCK_ROWS` and a partial one
        for (batch, n) in [(0u64, 3u64), (1, 0), (2, 40), (3, 150)] {
            let mut rows = got.append(n as usize + 2); // room for more than are written
            for i in 0..n {
                cells(&mut rows.row(), 100 * batch + i);
            }
            drop(rows);
            for i in 0..n {
                let mut row = Vec::new();
                cells(&mut row, 100 * batch + i);
                want.push_row(&row);
            }
        }
        assert_eq!(got.rows(), 5 + 3 + 40 + 150);
        assert_eq!(got.columns, want.columns);
    }

    #[test]
    fn fixed_rows_append_what_push_row_does() {
        let (mut want, mut got) = (schema(), schema());
        for i in 0..150 {
            let mut row = Vec::new();
            cells(&mut row, i);
            want.push_row(&row);
        }
        {
            let mut rows = got.append(150);
            for i in 0..150 {
                rows.fill::<3>(|c| cells(c, i));
            }
        }
        assert_eq!(got.columns, want.columns);
        // a row left short panics and is not kept; so does one of the wrong width
        let short = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rows = got.append(1);
            rows.fill::<3>(|c| c.f64("t", 1.0));
        }));
        assert!(short.is_err());
        let wide = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rows = got.append(1);
            rows.fill::<4>(|c| cells(c, 1));
        }));
        assert!(wide.is_err());
        assert_eq!(got.rows(), 150);
    }

    #[test]
    fn rows_writer_keeps_only_whole_rows() {
        let mut t = schema();
        let short = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rows = t.append(2);
            cells(&mut rows.row(), 1);
            let mut r = rows.row();
            r.f64("t", 9.0);
        }));
        assert!(short.is_err(), "a row left short panics");
        assert_eq!(t.rows(), 1, "the whole row is kept, the short one is not");
        let mut wrong_t = t.clone();
        let wrong = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rows = wrong_t.append(1);
            let mut r = rows.row();
            r.u64("t", 3);
            r.u32("id", 1);
            r.u64("ns", 1);
        }));
        // checked in debug builds only (`Row::put`); a release build keeps the cell's bits
        assert_eq!(wrong.is_err(), cfg!(debug_assertions), "a cell of the wrong type panics in debug builds");
        let beyond = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut rows = t.append(1);
            cells(&mut rows.row(), 2);
            cells(&mut rows.row(), 3);
        }));
        assert!(beyond.is_err(), "a row beyond those reserved panics");
        assert_eq!(t.rows(), 2);
        assert_eq!(t.column("id"), Some(&Column::U32(vec![8, 9])));
    }
}
