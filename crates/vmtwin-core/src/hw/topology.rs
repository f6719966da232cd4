//! Processor topology.
//!
//! A host is `sockets x numa_nodes_per_socket x llcs_per_node x cores_per_llc x
//! threads_per_core` logical processors. ESX calls each logical processor a pCPU; hyperthread
//! siblings share a core. Each pCPU records its place in every level, so the scheduler's later
//! NUMA-, LLC- and HT-aware placement can compare two pCPUs with one field read.

use crate::spec::HostSpec;
use crate::{invalid, VmtwinResult};

/// Where one logical processor sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pcpu {
    /// socket index
    pub socket: u32,
    /// NUMA node index, host-wide
    pub node: u32,
    /// LLC group index, host-wide
    pub llc: u32,
    /// core index, host-wide
    pub core: u32,
    /// hardware thread within the core
    pub thread: u32,
}

/// The host's processors, numbered so that siblings, LLC mates and node mates are adjacent.
#[derive(Debug, Clone)]
pub struct Topology {
    /// every logical processor, by pCPU index
    pub pcpus: Vec<Pcpu>,
    /// core clock in MHz
    pub core_mhz: u64,
    /// threads per core
    pub threads_per_core: u32,
}

/// Upper bound on logical processors, so a typo cannot allocate the machine away.
const MAX_PCPUS: u32 = 4096;

impl Topology {
    /// Build the topology from the host spec.
    ///
    /// # Examples
    /// ```
    /// use vmtwin_core::hw::Topology;
    /// use vmtwin_core::spec::HostSpec;
    /// let host = HostSpec { name: "h".into(), sockets: 2, numa_nodes_per_socket: 1,
    ///     llcs_per_node: 2, cores_per_llc: 2, threads_per_core: 1, core_mhz: 2660,
    ///     memory_bytes: 1 << 35 };
    /// let t = Topology::new(&host).unwrap();
    /// assert_eq!(t.pcpus.len(), 8);
    /// assert_eq!(t.pcpus[7].llc, 3);
    /// assert_eq!(t.capacity_mhz(), 8 * 2660);
    /// ```
    pub fn new(host: &HostSpec) -> VmtwinResult<Self> {
        let levels = [
            ("host.sockets", host.sockets),
            ("host.numa_nodes_per_socket", host.numa_nodes_per_socket),
            ("host.llcs_per_node", host.llcs_per_node),
            ("host.cores_per_llc", host.cores_per_llc),
        ];
        for (path, v) in levels {
            if v == 0 {
                invalid!(path, v, "an integer >= 1");
            }
        }
        if !(1..=2).contains(&host.threads_per_core) {
            invalid!("host.threads_per_core", host.threads_per_core, "1 or 2");
        }
        if host.core_mhz == 0 {
            invalid!("host.core_mhz", host.core_mhz, "a clock > 0 MHz");
        }
        let total = host.sockets as u64
            * host.numa_nodes_per_socket as u64
            * host.llcs_per_node as u64
            * host.cores_per_llc as u64
            * host.threads_per_core as u64;
        if total > MAX_PCPUS as u64 {
            invalid!("host", format!("{total} logical processors"), format!("at most {MAX_PCPUS}"));
        }
        let mut pcpus = Vec::with_capacity(total as usize);
        let (mut node, mut llc, mut core) = (0, 0, 0);
        for socket in 0..host.sockets {
            for _ in 0..host.numa_nodes_per_socket {
                for _ in 0..host.llcs_per_node {
                    for _ in 0..host.cores_per_llc {
                        for thread in 0..host.threads_per_core {
                            pcpus.push(Pcpu { socket, node, llc, core, thread });
                        }
                        core += 1;
                    }
                    llc += 1;
                }
                node += 1;
            }
        }
        Ok(Topology { pcpus, core_mhz: host.core_mhz, threads_per_core: host.threads_per_core })
    }

    /// Number of logical processors.
    pub fn len(&self) -> usize {
        self.pcpus.len()
    }

    /// True for a host without processors (never, once built).
    pub fn is_empty(&self) -> bool {
        self.pcpus.is_empty()
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.pcpus.len() / self.threads_per_core as usize
    }

    /// Schedulable capacity in MHz: every core at the core clock. A hyperthread adds no
    /// capacity until hyperthreading is modelled (its own issue).
    pub fn capacity_mhz(&self) -> u64 {
        self.cores() as u64 * self.core_mhz
    }
}
