//! `vmtwin._core.ColumnBytes`: a drained table column handed to Python without a copy.
//!
//! `drain_tables` used to copy every column into a fresh `bytes` object. With 1,024 VMs sampled
//! every 2 s that is about 200 MB over bench-1024vm's 20 minutes, written into freshly
//! faulted-in pages, and it was the largest single cost of sampling (about 0.14 s of the
//! benchmark's 0.78 s). The column's vector is moved into this object instead, which exports its
//! memory through the buffer protocol as read-only bytes: `np.frombuffer` and then
//! `pa.array` wrap that memory, keeping this object alive for as long as the Arrow array lives.
//! On a big-endian machine the values are converted to little-endian bytes once (a copy, as
//! before).

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use std::borrow::Cow;
use std::os::raw::c_int;
use vmtwin_core::metrics::Column;

/// The values' little-endian bytes: the column itself where that is its layout, else a copy.
enum Held {
    Column(Column),
    Bytes(Vec<u8>),
}

/// One drained column's values as read-only little-endian bytes (a bytes-like object:
/// `len()` is its size in bytes; `bytes(c)` copies it).
#[pyclass(frozen, module = "vmtwin._core")]
pub struct ColumnBytes {
    held: Held,
}

impl ColumnBytes {
    pub fn new(col: Column) -> Self {
        let converted = match col.le_bytes() {
            Cow::Borrowed(_) => None,
            Cow::Owned(bytes) => Some(bytes),
        };
        Self { held: converted.map_or(Held::Column(col), Held::Bytes) }
    }

    fn bytes(&self) -> &[u8] {
        match &self.held {
            Held::Column(c) => match c.le_bytes() {
                Cow::Borrowed(b) => b,
                Cow::Owned(_) => unreachable!("a column is held as is only when its bytes are borrowed"),
            },
            Held::Bytes(b) => b,
        }
    }
}

#[pymethods]
impl ColumnBytes {
    fn __len__(&self) -> usize {
        self.bytes().len()
    }

    /// Export the bytes, read-only (`PyBuffer_FillInfo` refuses a writable request).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("null view"));
        }
        let bytes = slf.get().bytes();
        let len = isize::try_from(bytes.len()).map_err(|_| PyBufferError::new_err("column too large"))?;
        // SAFETY: `view` is the caller's; the bytes live as long as `slf`, of which FillInfo
        // stores a new reference in the view (released with the view).
        let rc = unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), bytes.as_ptr() as *mut _, len, 1, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}
