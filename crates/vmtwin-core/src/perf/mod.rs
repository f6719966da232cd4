//! The execution-speed model: from CPU time to instructions, hardware counters and throughput.
//!
//! The scheduler decides *when* and *where* a vCPU runs; this module decides *how much work* that
//! run time does. A vCPU that ran `t` ns at `f` MHz spent `f t / 1000` cycles and retired
//! `f t / 1000 / CPI` instructions, the CPI coming from what its workload does per unit of work
//! (path length and base CPI per layer: guest user, guest kernel, hypervisor) plus named
//! penalties that depend on where and beside whom it ran: cold caches after a move or after a
//! return to a cache others used meanwhile, LLC sharing
//! with co-runners, remote NUMA memory, a busy hyperthread sibling and, under virtualization,
//! two-dimensional page walks on TLB misses. The work done is what the workload reports as
//! throughput (units per second: business operations for a SPECjbb-like profile, a compile's
//! progress for a kernel-compile-like one), and the counts are what `perf stat` would read, so
//! the Tier-1 methodology (`python/vmtwin/methodology/`) analyses a simulated run as it analyses
//! a real one.
//!
//! - `walk.rs`: the nested-paging walk cost (`nm + n + m` references, page-walk caches)
//! - `model.rs`: the CPI model, the penalties, the per-vCPU counters (`vcpu_perf` table)
//! - `membw.rs`: memory bandwidth contention (an M/D/1 queue per NUMA node's memory controller,
//!   solved as a fixed point with the vCPUs' miss rates at each sample)
//! - `params.rs`: machine tunables ([`PerfParams`]) and workload profiles ([`PerfProfile`]),
//!   each with its unit, default and source
//!
//! The model is off unless a scenario gives a VM a profile; then it runs once per sample
//! interval, reading each vCPU's run time and placement from the scheduler; the one part on the
//! scheduler's hot path is the cache-warmth count of `resume_refill` (`cpu/cache.rs`: about 330
//! instructions per dispatch on bench-cpu160, +14% there, benchmarks/README.md; only while the
//! model runs).
//!
//! Tunables, with units and sources (defaults in `params.rs` and `walk.rs`):
//!
//! | tunable | unit | default | source |
//! |---|---|---|---|
//! | `llc_bytes` | bytes | 8 MiB | [X] typical LLC of the period |
//! | `l2_bytes` | bytes | 256 KiB | [X]; the scheduler's `migrate_cost_core_ns` assumes it |
//! | `line_bytes` | bytes | 64 | [X] |
//! | `llc_refill_line_ns` | ns per line | 10 | [R] research/cpu.md C18, as the scheduler |
//! | `mem_refill_bytes_per_ns` | GB/s | 10 | [R] C18, as the scheduler |
//! | `llc_miss_stall_cycles` | cycles | 100 | [X] ~80 ns DRAM at 2.6 GHz, half overlapped |
//! | `remote_latency_ratio` | ratio | 1.5 | [X] two-socket NUMA factor; C18 |
//! | `ht_core_gain` | fraction | 0.25 | [X] Intel's "up to 30%" |
//! | `sched_lock_hold_ns` | ns | 3800 | [X] a whole context switch's direct cost (upper bound) |
//! | `resume_refill` | switch | true | the mechanism of `cpu/cache.rs` (returns refill what others evicted); no constant of its own |
//! | `mem_bandwidth` | switch | true | the mechanism of `membw.rs`; acts where a bandwidth is given |
//! | `mem_node_bytes_per_ns` | GB/s | 0 (not given) | per host: the platform's peak (channels x rate x 8 B), [X] vendor figures in the reproductions |
//! | `mem_latency_ns` | ns | 80 | [X] as `llc_miss_stall_cycles` |
//! | per layer `cpi_core`, `instructions_per_unit`, `walks_per_kinstr`, `llc_refs_per_kinstr`, `llc_base_miss_ratio` | per unit / per 1000 instructions | profile | presets: research/perf-methodology.md C.3-8 |
//! | `walk.*` levels, hit probabilities, cycles per reference | levels, probability, cycles | 4/4, 0, 12.5/3.0 | A.8; Table 3 calibration |

mod membw;
mod model;
mod params;
mod walk;

pub use model::{execute, insert_rates, refill, remote_fraction, slowdown, Executed, LayerCounts, PerfModel, VcpuFacts, LAYERS};
pub use params::{LayerProfile, PerfParams, PerfProfile, PerfSpec};
pub use walk::{nested_references, WalkParams, LEVELS_2M, LEVELS_4K};
