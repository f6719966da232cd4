//! Counters with esxtop's names, sampled every interval into columnar tables.
//!
//! - `table.rs`: typed columns, handed to Python as raw little-endian bytes (pyarrow writes
//!   the Parquet; the engine has no Arrow dependency)
//! - `sampler.rs`: the esxtop derivations (%USED, %RUN, %RDY, %MLMTD, %WAIT, %VMWAIT, %IDLE)
//! - `prefault.rs`: the room reserved for the rows faulted in on a second thread

mod prefault;
mod sampler;
mod table;

pub use sampler::{Sampler, VmRow};
pub use table::{Cells, Column, Row, RowWriter, Rows, Table, Value};
