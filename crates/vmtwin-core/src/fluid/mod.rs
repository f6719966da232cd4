//! Fluid mode (`fidelity: fluid`): one host advanced in steps, with no burst-level events.
//!
//! The event mode simulates every burst of every vCPU and lets a proportional-share scheduler
//! deliver, on average, the entitlement the pool tree computes (`cpu/entitlement.rs`). The fluid
//! mode skips the bursts and hands every VM that entitlement directly. Time advances in *pieces*:
//! from one boundary to the next, where boundaries are the sample times (`sample_interval`,
//! which may be as long as a trace's own step, 300 s for PlanetLab), scheduled power-ons and
//! the times a stepped run stops at. For each piece:
//!
//! 1. every powered-on VM's demand is its workload's mean demand over the piece
//!    (`Workload::demand`, the same figure the event mode writes as `demand_mhz`), plus, for an
//!    open-loop workload, the work left unserved by earlier pieces (its backlog), spread over
//!    the piece and capped at one pCPU per vCPU;
//! 2. one water-fill of the resource-pool tree ([`crate::cpu::PoolTree::entitlements`], the
//!    call the event mode's `recompute_entitlements` makes, with the same `VmClaim`s) turns
//!    demands, shares, reservations and limits into each VM's allocation `a`, which is at most
//!    its demand;
//! 3. the VM uses `a`, split evenly over its vCPUs (`u = a / (vcpus x core_mhz)` per vCPU), and
//!    each vCPU's piece of time is split over esxtop's states ([`split`]):
//!    - served in full (`u` = demand `d`): RUN `u`, IDLE `1 - u`;
//!    - short, open loop (work queues in the guest) or `d = 1`: runnable all the piece, RUN `u`,
//!      waiting `1 - u`;
//!    - short, closed loop (`cpu_bound` with `arrivals: closed`, `trace`): a vCPU that
//!      alternates bursts of work `b` with think times `b (1 - d) / d` and progresses at rate
//!      `x` while runnable uses `u = 1 / (1/x + (1 - d)/d)` of a pCPU, so it is runnable
//!      `r = u / x = 1 - u (1 - d) / d` of the time: RUN `u`, waiting `r - u`, IDLE `1 - r`;
//!    - the waiting is %MLMTD when a limit binds the VM (its own limit, at which its allocation
//!      sits, or the limit of a pool above it, which the tree reports as binding), and %RDY's
//!      READY part otherwise (held back by other VMs' shares and reservations).
//!
//! The states' nanoseconds are accumulated per vCPU as integers (rounded, the remainder to
//! IDLE, so every vCPU's states add up to its powered-on time exactly), and every
//! `sample_interval` the sampler's tables (`host`, `vm`, `vcpu`, `pcpu`, the same columns in the
//! same order as the event mode's, `metrics/sampler.rs`) get one row each from the differences,
//! by the same formulas. Everything is arithmetic on the spec in a fixed order, so the tables
//! are byte-identical run to run; the seed is not used (nothing is drawn).
//!
//! # Approximations (where not to trust it)
//! - **No burst collisions.** A VM served in full waits 0: the queueing delay of bursts that
//!   arrive while pCPUs are busy (READY on a busy but not overcommitted host) is not modelled,
//!   so %RDY of bursty VMs on a host near saturation is low, and the %USED closed-loop VMs lose
//!   to such waits in the event mode (a burst held up delays the next one) is not lost here.
//! - **Max-min, not GPS, for closed loops.** The event scheduler gives a runnable vCPU a rate
//!   in proportion to its weight, so a closed-loop VM below its fair share still runs slower
//!   while others are runnable and falls behind its duty; here it gets its whole demand.
//! - **Demand is known, not estimated.** The event mode's water-fill uses an EWMA of runnable
//!   time (`demand_est_mhz`), which lags changes by about a second and, for closed loops under
//!   contention, includes waiting; here the water-fill sees the true demand of the piece.
//! - **Demand is flat within a piece.** A piece that spans a change of demand (a trace step
//!   shorter than `sample_interval`, or not aligned with it) averages it: contention in part
//!   of the piece is diluted. Set `sample_interval` to the trace's step or a divisor of it.
//! - **No placement.** vCPUs are not put on pCPUs: each `pcpu` row is the host's mean.
//! - **No co-scheduling, no hyperthreads.** %CSTP is 0 whatever `cosched_mode` says.
//!
//! # Tunables
//! None of its own: the step is `sample_interval`, the rest comes from the scenario.
//!
//! # Counters
//! The event mode's tables and columns; `demand_est_mhz` is the demand the water-fill used
//! (the piece's mean demand plus an open-loop backlog), `entitlement_mhz` the allocation of the
//! last piece. `docs/reference/counters.md` says what fluid mode cannot derive.

mod batch;
mod cursor;
mod engine;
mod rows;
mod split;

pub use batch::{run_hosts, set_traces, Batch, HostFacts, Joined, Ran, VmTrace, HOST_INDEX};
pub use engine::FluidSim;
pub use split::{split, Fractions, Loop};
