//! Host hardware: the processor topology (sockets, NUMA nodes, LLC groups, cores, threads).
//! Machine memory, HBAs, arrays and paths join here when their subsystems arrive.

mod topology;

pub use topology::{Pcpu, Topology};
