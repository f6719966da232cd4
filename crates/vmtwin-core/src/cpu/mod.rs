//! CPU resource management: entitlement from shares, reservations and limits (with resource
//! pools and admission control), and the proportional-share scheduler.
//!
//! - `entitlement.rs`: weighted max-min (water-filling) split at one level
//! - `pools.rs`: the resource-pool tree, admission control, hierarchical entitlement
//! - `cosched.rs`: co-scheduling of a VM's sibling vCPUs: progress, skew, co-stop, co-start
//! - `cache.rs`: cache warmth across a return (footprint decay with other work on the cache)
//! - `cells.rs`: ESX 3.x scheduler cells, vSMP consolidation and inter-VM cache affinity
//! - `clock.rs`: the fair clock that virtual times are measured against
//! - `limit.rs`: the token buckets behind VM and pool CPU limits (%MLMTD)
//! - `runqueue.rs`: one pCPU's run queue
//! - `sched.rs`: the scheduler: states, accounting, placement, dispatch, preemption
//! - `params.rs`: the tunables

mod cache;
mod cells;
mod clock;
mod cosched;
mod entitlement;
mod limit;
mod params;
mod pools;
mod runqueue;
mod sched;

pub use cache::{footprint_lines, CacheWarmth, WarmthProfile};
pub use cells::{cell_ranges, choose_move, least_loaded, lock_wait_ns, target_llc, CellVm};
pub use cosched::{
    blocked, caught_up, gang_needs, lead_skew, may_run_together, next_block_in, next_laggard_in, next_release_in, replay_progress,
    CoschedMode, CumulativeSkew, Lead, SKEW_TICK_NS,
};
pub use entitlement::{water_fill, water_level, Claim};
pub use limit::{BucketRules, TokenBucket};
pub use params::CpuSchedParams;
pub use pools::{check_vm_cpu, Entitlement, Pool, PoolScratch, PoolTree, VmClaim, ROOT_POOL};
pub use sched::{CpuSched, Limiter, SchedStats, Vcpu, VcpuShare, VcpuState, NONE, STATES};
