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

    /// Reserve room for `rows` more rows in every column.
    pub fn reserve(&mut self, rows: usize) {
        for (_, c) in &mut self.columns {
            match c {
                Column::F64(v) => v.reserve(rows),
                Column::U64(v) => v.reserve(rows),
                Column::U32(v) => v.reserve(rows),
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
