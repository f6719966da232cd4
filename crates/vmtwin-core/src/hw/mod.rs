//! Host hardware: the processor topology (sockets, NUMA nodes, LLC groups, cores, threads) and
//! what hyperthreads deliver (`ht.rs`).
//! Machine memory, HBAs, arrays and paths join here when their subsystems arrive.

mod ht;
mod topology;

pub use ht::{may_share, thread_speed, HtSharing, DEFAULT_HT_CORE_GAIN};
pub use topology::{Pcpu, Topology};
