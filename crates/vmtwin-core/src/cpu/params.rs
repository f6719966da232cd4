//! Tunables of the proportional-share CPU scheduler, with units, defaults and sources.

use super::cosched::CoschedMode;
use crate::sim::{Time, NS_PER_MS, NS_PER_S, NS_PER_US};
use crate::hw::{HtSharing, DEFAULT_HT_CORE_GAIN};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Largest `migrate_wait_factor` accepted, dimensionless: a thousand moves' cost (1.2 s across
/// nodes) is already far beyond any use; the bound keeps the wait in range of the clock.
const MAX_MIGRATE_WAIT_FACTOR: f64 = 1000.0;

/// Largest `demand_wait_power` accepted, dimensionless: at 32 a vCPU that waited as long as it
/// rested already counts 2^-32 of its wait (2e-10), so a higher power changes nothing but
/// backlogs, which count whole at any power.
const MAX_DEMAND_WAIT_POWER: u32 = 32;

/// Scheduler tunables. Every field name carries its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CpuSchedParams {
    /// Longest slice a vCPU runs before the scheduler re-picks, in ns; a vCPU weighted less
    /// than the heaviest runs that fraction of it (at least 1 ms), so that every slice spans
    /// the same virtual time (`sched.rs`). Default 50 ms: the commonly cited ESX `Cpu.Quantum` (research/cpu.md C4,
    /// unverified [X]).
    pub quantum_ns: Time,
    /// How often demand estimates and entitlements are recomputed, in ns. Default 1 s
    /// (research/cpu.md C1 step 6).
    pub entitlement_interval_ns: Time,
    /// Token-bucket depth of a CPU limit, as wall time at the limit rate, in ns. Default 100 ms
    /// (research/cpu.md C5).
    pub limit_burst_ns: Time,
    /// The turn of a CPU limit, in ns of CPU per vCPU: a throttled VM runs again once its
    /// bucket has earned this much for each vCPU that wants to run, or a quarter of its depth
    /// when that is less (`limit.rs`), so a VM held at a 25% limit runs 5 ms and waits 15 ms.
    /// Default 5 ms: Linux CFS bandwidth control hands runtime out in 5 ms slices
    /// (`sched_cfs_bandwidth_slice_us`, kernel Documentation/scheduler/sched-bwc.rst;
    /// research/anchors.md 2.5) [X]; ESX's own granularity is not documented (research/cpu.md C5
    /// gives only the 100 ms burst). With the resume level capped at a quarter of the depth,
    /// turns of 1 to 5 ms all pass the strict max-min sample (100 of 100) with a pooled census no
    /// worse than at 1 ms, and 5 ms gives bench-mixed's hour 20% fewer events than 1 ms
    /// (docs/cpu-scheduler.md).
    pub limit_min_slice_ns: Time,
    /// Most debt a vCPU held by a limit may run into on a pCPU that would otherwise idle, in
    /// pCPU-ns (`limit.rs`): limited VMs run in bursts between refills, and without the loan a
    /// pCPU would idle whenever all of them are held at once although CPU is wanted. The debt is
    /// repaid before the VM runs again, so a limit is never exceeded by more than this over any
    /// window. Default 1 ms: chosen, enough to fill the gaps between limited VMs' refills.
    pub limit_borrow_ns: Time,
    /// Fraction of a pool limit's bucket depth below which the pool's children's shares of the
    /// limit bind (the bucket is scarce, `limit.rs`), dimensionless in (0, 1]. Above it the
    /// children are leaving the pool's tokens unused, and a child its share holds back runs on.
    /// A throttled bucket's resume level is at most half of this (derived, not chosen: the
    /// bucket reads the accrual of the turns it resumed for on top of tokens they have already
    /// used, up to twice the resume level, which stays below the split). Default 0.5: chosen,
    /// well below full, so that the children held by their shares have half a depth's accrual
    /// (50 ms at the default depth) to start before the bucket drops tokens, and well above
    /// empty, so that a scarce pool is split by its children's shares.
    pub limit_share_split_below: f64,
    /// Longest a pool limit stays dormant at a time (`limit.rs`, dormant pool limits), as a
    /// fraction of `limit_burst_ns`, dimensionless in (0, 1], and at least `limit_min_slice_ns`
    /// of it (a shorter dormancy is never taken). It is also how often an awake pool limiter is
    /// looked at. What a dormancy's bulk charge can credit beyond the per-stop charges is at most
    /// its accrual, this fraction of the depth. Default 0.25: chosen.
    pub limit_dormant_max: f64,
    /// A waking vCPU preempts a running one only if its virtual time is lower by more than this,
    /// in ns of virtual time. Default 1 ms: chosen to avoid preemption thrash between near-equal
    /// vCPUs while keeping wake-up latency small (C4 asks for "a small margin").
    pub wake_preempt_margin_ns: Time,
    /// The most CPU time a vCPU may be owed by the fair clock, in ns (its lag, `clock.rs`): a
    /// waking vCPU is placed owed no more than this, and every vCPU's credit is clamped to it
    /// at each entitlement update (its debt to `max_debt_ns`). Default 100 ms = two quanta
    /// (research/cpu.md C3: "clamp |entitled - charged| to <= 1 quantum x 2").
    pub max_lag_ns: Time,
    /// The most CPU time a vCPU may owe the fair clock, in ns (`clock.rs`): at each entitlement
    /// update (a VM held at its reservation floor owes its reservation's balance up to it too:
    /// at `max_lag_ns` a 1-share VM reserving 40 MHz got 3.93 points of a pCPU for its 2.09), and
    /// when it wakes or a limit releases it (placing a waker owing at most `max_lag_ns` would
    /// forgive a limit-bound VM's debt at every release).
    /// Debt is what a vCPU ran beyond its weighted share while others were runnable too;
    /// forgiving it hands that time to the VM that ran ahead (seen: a held-back 3-vCPU VM some 170 ms ahead at every update got 0.18 pCPU more than its
    /// entitlement, from a satisfied neighbour). At an update, the debtors further ahead in
    /// virtual time than one the bound clamps are forgiven as much virtual time (in CPU time in
    /// proportion to their weights), so the bound, met first by the heavier of two debtors
    /// drifting at one pace, does not reorder them (`even_debts`, docs/cpu-scheduler.md: a
    /// 3-vCPU 100-share VM 4.79 points of a pCPU for max-min's 6.12 before). The clock does not
    /// need the bound (a vCPU moves it by the CPU time it runs, whatever its key); what does is
    /// a vCPU over-served for reasons fairness cannot reach (alone in its cell or node), which
    /// would otherwise wait out all of it once that ends. So at an update a vCPU of a VM held
    /// back by the others that never halted over the interval keeps its whole debt (without
    /// cells or NUMA confinement): it contends throughout and repays at the clock's pace, and
    /// clamped at every update a lone such vCPU, sitting a steady 700 ms ahead, was forgiven 55
    /// ms a second that it ran out of a neighbour (docs/cpu-scheduler.md, session 40); its wake
    /// still bounds it. Default 300 ms = 3 x `max_lag_ns`: chosen on the max-min census
    /// (scripts/maxmin_census.py, 400 pooled scenarios: 388 on their allocation with 100 ms, 396
    /// with 300 ms, 395 with 1 s), research/cpu.md C3 leaving the window open.
    pub max_debt_ns: Time,
    /// The most CPU time a backlogged vCPU of a held-back VM may owe the fair clock at an
    /// entitlement update, in ns (less than `max_debt_ns` reads as `max_debt_ns`). Such a vCPU
    /// keeps its debt past `max_debt_ns` (why: `max_debt_ns`), and what bounds it is the clock's
    /// zero sum: it owes what the other runnable vCPUs are owed, each at most `max_lag_ns` at an
    /// update. That sum grows with their count, so this guard makes the bound a constant, which
    /// issue 5 asks of every vCPU's lag. It is not meant to shape the schedule: the largest such
    /// debt seen was 1.30 s (session 41: every drawn and seeded max-min scenario kept as a case,
    /// and seeds 0-199 flat and pooled, each run 600 s, sampled every 10 ms; it settles within
    /// minutes and stays). Default 3 s = 10 x `max_debt_ns`: chosen above that.
    pub max_backlog_debt_ns: Time,
    /// Weight of the newest interval in the EWMA of each vCPU's demand estimate (how busy it is
    /// with no contention and no limit, `CpuSched::update_demand`), which sets the water level of
    /// the entitlement (`entitlement.rs`), dimensionless in (0, 1]. Default 0.5: chosen, see test
    /// `demand_tracks_duty_cycle`.
    pub demand_ewma_weight: f64,
    /// Power of the waiting share in the demand estimate (`CpuSched::update_demand`),
    /// dimensionless, an integer from 0 to 32: a vCPU's held time (READY, MLMTD, COSTOP) counts as
    /// demand in proportion to `(held / (held + rest))^p`, `rest` its idle and wait time, so a
    /// backlog (no rest) counts whole and a transient collision next to nothing; higher makes
    /// transient waits count less and lingering ones the same, 0 counts every held ns. Default 3:
    /// chosen on the max-min census (scripts/maxmin_census.py, docs/cpu-scheduler.md).
    pub demand_wait_power: u32,
    /// How far above its run time a vCPU of a VM not held back that never halted over an
    /// entitlement interval may read its READY time as demand, when that is more than what would
    /// have brought it up to its entitlement (`CpuSched::update_demand`), a fraction of a pCPU per
    /// vCPU (dimensionless: CPU time over the interval), from 0 to 1 (0: only up to the
    /// entitlement, as before it). A probe: the water-fill offers such a
    /// vCPU that much more than it ran, and its estimate climbs only while it takes the offer (a
    /// queue that grows runs more; one served at its rate stays at its run plus the margin), so a
    /// busy VM that its first second read a hair under a whole pCPU per vCPU is not held there.
    /// Default 0.01: chosen on the max-min census (docs/cpu-scheduler.md, session 41: 0.005 left
    /// two of the cases 0.01 closes open, 0.02 failed a strict case).
    pub demand_probe_margin: f64,
    /// Horizon of a vCPU's drain rate (`CpuSched::update_demand`), in ns: what it ran between
    /// entitlement intervals in which it halted, over the time between them, each such epoch
    /// weighed by `exp(-age / horizon)` as later ones close; a satisfied vCPU that never halted in
    /// an interval reads no more than that rate (or its open epoch's, if more) while its open
    /// epoch is no longer than its weighed closed ones. Long against the epochs of a queue served
    /// near its rate (streaks without a halt of up to 31 s on the max-min census), so the rate
    /// spans several of them, and short enough that the first epochs (start-up backlogs drained
    /// under the power-on guesses) fade within minutes. Default 60 s: chosen on the max-min census
    /// (docs/cpu-scheduler.md, session 43, mm43b: 120 s, 300 s and no horizon left
    /// drawn-pools-27002438 further off).
    pub demand_drain_horizon_ns: Time,
    /// How far short of its entitlement a VM's vCPUs must have run, as a fraction of one
    /// interval's entitlement, on the balance carried over the entitlement intervals in which
    /// they waited for CPU (`CpuSched::short_balance`), for wakers entitled to less to be barred
    /// from preempting them (`shield`), dimensionless in [0, 1] (1: never). The demand estimate
    /// reads part of READY time as demand, so a VM served all it wants on a busy host reads a
    /// little short; the margin keeps those out. Default 0.05: chosen on the max-min census
    /// (seeded 0-399, flat and pooled; judged then on the last interval alone): 0.02, 0.05 and
    /// 0.1 give 397 + 400, 397 + 400 and 397 + 399 scenarios on their allocation; 0 gives 395 +
    /// 397 (docs/cpu-scheduler.md).
    pub short_margin: f64,
    /// Co-scheduling of multi-vCPU VMs (`cosched.rs`), a mode, dimensionless: `off`, `strict`
    /// (ESX 2.x: VM-wide co-stop, gang co-start of every vCPU), `relaxed-3x` (ESX 3.x: VM-wide
    /// co-stop, gang co-start of the laggards) or `relaxed-4x` (ESX 4's per-vCPU skew). Default
    /// `off`: every vCPU independent, as before co-scheduling was modelled.
    pub cosched_mode: CoschedMode,
    /// Skew past which a leading vCPU is co-stopped, in ns. Default 3 ms: the paper's "a few
    /// milliseconds" (research/cpu.md C9).
    pub cosched_skew_threshold_ns: Time,
    /// Co-start skew, in ns: where a co-stop ends. `relaxed-4x`: a co-stopped vCPU starts again
    /// once no sibling is more than this behind it (its laggards have caught up), not as soon
    /// as they move. `relaxed-3x`: after the gang co-start, the VM's other vCPUs stay co-stopped
    /// until every member of the gang has worked its cumulative skew down to this. At most the
    /// threshold; the threshold itself is C12's "no hysteresis". Default 0: "once the lagging
    /// vCPUs catch up, the stopped vCPUs can start individually" and "scheduled together until
    /// the skew decreased sufficiently" [WP §3.1], caught up being no skew left (`cosched.rs`).
    /// `strict` does not read it: its co-stop ends at the gang co-start of every vCPU.
    pub cosched_costart_skew_ns: Time,
    /// LLC-aware placement and load balancing (ESX 4, research/cpu.md A6.3), a switch (dimensionless): a waking
    /// vCPU looks for an idle pCPU in its last pCPU's LLC before going further, and a pCPU that
    /// pulls work looks at its own LLC's queues first. Off: the scheduler sees no caches (ESX
    /// 3.x's "fixed migration cost"), every move within a node costs `migrate_cost_core_ns`.
    /// Default on.
    pub llc_aware: bool,
    /// Per-LLC load balancing of placement (ESX 4, research/cpu.md A6.3: the balancer "tries to
    /// balance CPU load per LLC", so an undercommitted VM's vCPUs "tend to span across multiple
    /// LLCs"), a switch (dimensionless): a waking vCPU takes an idle pCPU in the LLC with the
    /// fewest busy pCPUs (its home node first when it has one), its last pCPU, then its LLC,
    /// winning ties. Needs `llc_aware`. Default off: last pCPU, its LLC, its node, any, which
    /// packs vCPUs into one LLC while another idles (the 3.x behaviour the paper contrasts).
    pub llc_balance: bool,
    /// Extended fairness (ESX 4, research/cpu.md A6.8, C23), a switch (dimensionless): fair CPU
    /// time is not fair performance when one VM runs alone on an LLC and another shares one, so
    /// at each entitlement update the scheduler adds up each VM's co-runners (the other busy
    /// pCPUs on each running vCPU's LLC, per vCPU), and every `extended_fairness_period_ns` it
    /// swaps a running vCPU of the most crowded VM on the busiest LLC with one of the least
    /// crowded VM on a less busy LLC, at their next slice end. Default off.
    pub extended_fairness: bool,
    /// How often extended fairness may swap, in ns. Default 3 s: C23's choice for the paper's
    /// "infrequently enough, typically at a few seconds" [WP §3.3.4].
    pub extended_fairness_period_ns: Time,
    /// NUMA home nodes (research/cpu.md A6.1), a switch (dimensionless): each VM that fits in a node gets a home
    /// node (the least loaded at power-on), its vCPUs wake onto idle pCPUs there before other
    /// nodes, a pull onto another node costs `migrate_cost_node_ns`, and every
    /// `numa_rebalance_period_ns` the most loaded node gives a VM to the least loaded one.
    /// Default on.
    pub numa_home_nodes: bool,
    /// Confine NUMA-managed vCPUs to their home node, a switch (dimensionless): as the paper
    /// describes ESX ("All vCPUs of the virtual machine are scheduled within the home node",
    /// research/cpu.md A6.1), a vCPU with a home node neither wakes onto nor is pulled to a
    /// pCPU of another node; only the NUMA balancer moves it, by moving its home. Default off:
    /// confined, a node can idle while the other queues work, which the max-min allocation does
    /// not allow between balancer periods; off, home nodes are a preference (a move off home
    /// costs `migrate_cost_node_ns`).
    pub numa_confine: bool,
    /// Wide-VM NUMA support (ESX 4.1, research/cpu.md A7), a switch (dimensionless): a VM with
    /// more vCPUs than a node has cores (or than `numa_vcpu_max_per_machine_node`) is split into
    /// NUMA clients of as even sizes as possible, each with its own home node (distinct, least
    /// loaded). Off (ESX 4.0): such a VM is not NUMA-managed. Default on.
    pub numa_wide_vms: bool,
    /// `numa.vcpu.maxPerMachineNode`: the most vCPUs of one VM per NUMA client, dimensionless (a
    /// count); 0 means the cores of a node. Default 0 (research/cpu.md C27: no extra cap).
    pub numa_vcpu_max_per_machine_node: u32,
    /// How often the NUMA balancer compares node loads, in ns. Default 2 s (research/cpu.md C28:
    /// the commonly cited `Numa.RebalancePeriod`, unverified [X]).
    pub numa_rebalance_period_ns: Time,
    /// Node load difference, in pCPUs of demand per core of a node, above which the NUMA
    /// balancer moves a VM's home, dimensionless. Default 0.1: chosen ([R]; the paper says only
    /// "more heavily loaded", research/cpu.md A6.1).
    pub numa_rebalance_imbalance: f64,
    /// What the scheduler counts a move to another core of the same LLC as costing the vCPU, in
    /// ns of its CPU time (L1/L2 refill): a pull takes a vCPU from another queue only if it is
    /// owed this much more than the local candidate. Default 40 us: a 256 KB L2 is 4096 lines
    /// refilled from the LLC at ~10 ns each ([R], research/cpu.md C18 asks for a parameter).
    pub migrate_cost_core_ns: Time,
    /// The same for a move to another LLC of the same node (the working set refetched from
    /// memory), in ns. Default 800 us: an 8 MB LLC's 131,072 lines at ~10 GB/s ([R], C18).
    pub migrate_cost_llc_ns: Time,
    /// The same for a move to another NUMA node, or onto a node other than the vCPU's home, in ns.
    /// Default 1.2 ms: the LLC refill at remote-memory speed, ~1.5x local ([R], C18).
    pub migrate_cost_node_ns: Time,
    /// Cache affinity as a wait, dimensionless, >= 0: a free pCPU with an empty queue pulls a
    /// READY vCPU queued on another pCPU only once the vCPU has waited READY at least this many
    /// times what the move would cost it (`migrate_cost_*` by distance, read as ns of wall time); until then it is
    /// left to be picked up where its cache is (its own pCPU, or a pCPU of its own LLC or node
    /// when the pull would cross them) and the free pCPU takes another candidate or idles until
    /// that moment. 1 is the ski-rental break-even (wait until the waiting has cost as much as
    /// the move, then move: never more than twice the cost of the better choice made with
    /// hindsight; Karlin, Manasse, Rudolph and Sleator, "Competitive snoopy caching",
    /// Algorithmica 1988 [X]); the rule of research/cpu.md A6.0, "the benefit of the migration
    /// outweighs the cost", with the benefit a wait saved. Linux keeps a task that ran within
    /// `sched_migration_cost` (500 us) from being pulled the same way [X]. Default 0 (a free
    /// pCPU pulls at once, as before the switch): measured ([R], bench-cpu160 1 min
    /// with the execution-speed model), 1 cuts moves to another node from 25.6% to 21.0% of
    /// dispatches and refill cycles by 14%, for 0.8-1.3% more work, but moves of any kind rise
    /// from 69.5% to 73.8% and the simulator runs 13% more instructions (docs/cpu-scheduler.md).
    pub migrate_wait_factor: f64,
    /// CPU-load-based migration throttling (ESX 4, research/cpu.md A6.4), a switch (dimensionless): a ready vCPU
    /// that contributed at least `migration_throttle_share` of its pCPU's load over the last
    /// entitlement interval is not pulled away by another pCPU; it waits for its own. Default off: on
    /// (as in ESX 4) it keeps CPU-bound vCPUs on pCPUs they carry while a pCPU beside them
    /// holds two, which breaks the max-min allocation (docs/cpu-scheduler.md).
    pub migration_throttle: bool,
    /// The load contribution at which throttling keeps a vCPU where it is, dimensionless, in
    /// (0, 1]. Default 0.9
    /// (research/cpu.md C19: the paper's 95% example is throttled; "high" is all it says).
    pub migration_throttle_share: f64,
    /// Hyperthreading (research/cpu.md A6.2, A6.7), a switch (dimensionless): on a host with
    /// `threads_per_core: 2` the scheduler runs a vCPU on each hardware thread (each a pCPU, as
    /// esxtop counts them), a thread whose sibling is busy runs at `(1 + ht_core_gain) / 2` of a
    /// core and is charged `ht_used_charge` of its time in %USED. Off, or on a one-thread host:
    /// one vCPU per core, the second thread unused (the BIOS setting off). Default on, as ESX
    /// uses HT when the hardware has it (`docs/hyperthreading.md`).
    pub hyperthreading: bool,
    /// Extra throughput of a core whose two threads are both busy, dimensionless in [0, 1]:
    /// each thread then does `(1 + gain) / 2` of a core's work. Default 0.25 ([X]: Intel's "up
    /// to 30%"; the paper gives no factor, research/cpu.md A6.7), the execution-speed model's
    /// `ht_core_gain` default.
    pub ht_core_gain: f64,
    /// The share of its wall time a vCPU on a thread whose sibling is busy is charged in %USED,
    /// dimensionless in (0, 1]. Default 0.5: esxtop's rule, each of two busy threads shows 50%
    /// PCPU USED (research/cpu.md C22 [X]).
    pub ht_used_charge: f64,
    /// Place a waking vCPU on a whole idle core (both threads idle) before an idle thread whose
    /// sibling is busy, at each distance, and let a core that goes wholly idle take a vCPU off a
    /// core whose two threads both run (research/cpu.md A6.2, C21), a switch (dimensionless).
    /// Off: any idle thread is as good as another. Default on.
    pub ht_whole_core_first: bool,
    /// HT compensation (research/cpu.md A6.7), a switch (dimensionless): at the end of a slice
    /// on a whole core, the vCPU there swaps places with the running vCPU on a partial core that
    /// is furthest behind it in virtual time (by more than `wake_preempt_margin_ns`), so that a
    /// vCPU stuck on a busy core is "scheduled on a whole core to be compensated for the lost
    /// time". Default on.
    pub ht_compensation: bool,
    /// `sched.cpu.htsharing` per VM, by VM name, a mode (dimensionless): `any`, `internal` or
    /// `none` (`hw::HtSharing`). Default `any` for every VM not listed (ESX's default). In a
    /// scenario it is set per VM, as `vms[].cpu.ht_sharing`.
    pub ht_sharing: BTreeMap<String, HtSharing>,
    /// Scheduler cells (ESX 3.x, research/cpu.md A5, C17; `cells.rs`), a count of cores
    /// (dimensionless): the host is cut into cells of this many adjacent cores (whole LLCs), a
    /// VM's vCPUs run only in its cell and a VM changes cell only when the cell balancer moves
    /// it whole. 0 = no cells, ESX 4's per-pCPU scheduling. Default 0; C17 recommends a socket
    /// (4 on the paper's hosts), 8 for ESX 3.5 running 8-vCPU VMs [WP §4.6].
    pub cell_size: u32,
    /// How often the cell balancer compares cell loads, in ns. Default 2 s (research/cpu.md C17:
    /// "much coarser granularity" [WP §2.4]; the period is not given).
    pub cell_rebalance_period_ns: Time,
    /// Cell load difference, in pCPUs of demand per pCPU of a cell, above which the cell
    /// balancer moves a VM, dimensionless. Default 0.1: chosen ([R], as `numa_rebalance_imbalance`).
    pub cell_rebalance_imbalance: f64,
    /// `sched.cpu.vsmpConsolidate` per VM (research/cpu.md A6.5, C24), VM names
    /// (dimensionless): a waking vCPU of a listed VM first tries an idle pCPU in the LLC holding
    /// most of its siblings (best effort). Default none. In a scenario it is set per VM, as
    /// `vms[].cpu.vsmp_consolidate`.
    pub vsmp_consolidate: BTreeSet<String>,
    /// Inter-VM cache affinity (ESX 4, research/cpu.md A6.6, C25), a switch (dimensionless): a
    /// waking vCPU of a VM in `communicating_vms` first tries an idle pCPU in the LLC holding
    /// most of its partners' vCPUs (best effort). Default on (as ESX 4); it acts only on the
    /// declared pairs.
    pub inter_vm_cache_affinity: bool,
    /// Pairs of VMs that communicate (C25: the paper does not say how ESX detects them, so they
    /// are declared), VM names (dimensionless). Default none. In a scenario, per VM, as
    /// `vms[].cpu.communicates_with`.
    pub communicating_vms: Vec<(String, String)>,
}

impl Default for CpuSchedParams {
    fn default() -> Self {
        CpuSchedParams {
            quantum_ns: 50 * NS_PER_MS,
            entitlement_interval_ns: NS_PER_S,
            limit_burst_ns: 100 * NS_PER_MS,
            limit_min_slice_ns: 5 * NS_PER_MS,
            limit_borrow_ns: NS_PER_MS,
            limit_share_split_below: 0.5,
            limit_dormant_max: 0.25,
            wake_preempt_margin_ns: NS_PER_MS,
            max_lag_ns: 100 * NS_PER_MS,
            max_debt_ns: 300 * NS_PER_MS,
            max_backlog_debt_ns: 3 * NS_PER_S,
            demand_ewma_weight: 0.5,
            demand_wait_power: 3,
            demand_probe_margin: 0.01,
            demand_drain_horizon_ns: 60 * NS_PER_S,
            short_margin: 0.05,
            cosched_mode: CoschedMode::Off,
            cosched_skew_threshold_ns: 3 * NS_PER_MS,
            cosched_costart_skew_ns: 0,
            llc_aware: true,
            llc_balance: false,
            extended_fairness: false,
            extended_fairness_period_ns: 3 * NS_PER_S,
            numa_home_nodes: true,
            numa_confine: false,
            numa_wide_vms: true,
            numa_vcpu_max_per_machine_node: 0,
            numa_rebalance_period_ns: 2 * NS_PER_S,
            numa_rebalance_imbalance: 0.1,
            migrate_cost_core_ns: 40 * NS_PER_US,
            migrate_cost_llc_ns: 800 * NS_PER_US,
            migrate_cost_node_ns: 1200 * NS_PER_US,
            migrate_wait_factor: 0.0,
            migration_throttle: false,
            migration_throttle_share: 0.9,
            hyperthreading: true,
            ht_core_gain: DEFAULT_HT_CORE_GAIN,
            ht_used_charge: 0.5,
            ht_whole_core_first: true,
            ht_compensation: true,
            ht_sharing: BTreeMap::new(),
            cell_size: 0,
            cell_rebalance_period_ns: 2 * NS_PER_S,
            cell_rebalance_imbalance: 0.1,
            vsmp_consolidate: BTreeSet::new(),
            inter_vm_cache_affinity: true,
            communicating_vms: Vec::new(),
        }
    }
}

impl CpuSchedParams {
    /// These tunables with NUMA home nodes and throttling off and moves free: the scheduler as
    /// it was before locality was modelled (a pCPU pulls the lowest key on the host wherever it
    /// is queued; a waking vCPU still prefers an idle pCPU in its last LLC, which that
    /// scheduler did). For experiments that switch the policies off, and for comparing.
    pub fn without_locality(mut self) -> Self {
        self.numa_home_nodes = false;
        self.migration_throttle = false;
        self.migrate_cost_core_ns = 0;
        self.migrate_cost_llc_ns = 0;
        self.migrate_cost_node_ns = 0;
        self.migrate_wait_factor = 0.0;
        self
    }

    /// Reject values the scheduler cannot run with, naming the field.
    pub fn validate(&self) -> crate::VmtwinResult<()> {
        use crate::invalid;
        if self.quantum_ns == 0 {
            invalid!("cpu_scheduler.quantum", self.quantum_ns, "a duration > 0");
        }
        if self.entitlement_interval_ns == 0 {
            invalid!("cpu_scheduler.entitlement_interval", self.entitlement_interval_ns, "a duration > 0");
        }
        if self.max_lag_ns == 0 {
            invalid!("cpu_scheduler.max_lag", self.max_lag_ns, "a duration > 0");
        }
        if self.max_debt_ns == 0 {
            invalid!("cpu_scheduler.max_debt", self.max_debt_ns, "a duration > 0");
        }
        if self.max_backlog_debt_ns == 0 {
            invalid!("cpu_scheduler.max_backlog_debt", self.max_backlog_debt_ns, "a duration > 0");
        }
        if self.limit_burst_ns == 0 {
            invalid!("cpu_scheduler.limit_burst", self.limit_burst_ns, "a duration > 0");
        }
        if self.limit_min_slice_ns == 0 {
            invalid!("cpu_scheduler.limit_min_slice", self.limit_min_slice_ns, "a duration > 0");
        }
        if self.limit_borrow_ns == 0 {
            invalid!("cpu_scheduler.limit_borrow", self.limit_borrow_ns, "a duration > 0");
        }
        if !(self.limit_share_split_below > 0.0 && self.limit_share_split_below <= 1.0) {
            invalid!("cpu_scheduler.limit_share_split_below", self.limit_share_split_below, "a number in (0, 1]");
        }
        // a dormancy shorter than a turn is never taken, and an awake pool is looked at every
        // `limit_dormant_max` of the burst: a sliver would make an event per sliver
        if !(self.limit_dormant_max > 0.0
            && self.limit_dormant_max <= 1.0
            && self.limit_dormant_max * self.limit_burst_ns as f64 >= self.limit_min_slice_ns as f64)
        {
            invalid!(
                "cpu_scheduler.limit_dormant_max",
                self.limit_dormant_max,
                "a number in (0, 1] with limit_dormant_max x limit_burst at least limit_min_slice"
            );
        }
        if !(self.demand_ewma_weight > 0.0 && self.demand_ewma_weight <= 1.0) {
            invalid!("cpu_scheduler.demand_ewma_weight", self.demand_ewma_weight, "a number in (0, 1]");
        }
        if self.demand_wait_power > MAX_DEMAND_WAIT_POWER {
            invalid!("cpu_scheduler.demand_wait_power", self.demand_wait_power, "an integer from 0 to 32");
        }
        if self.demand_drain_horizon_ns == 0 {
            invalid!("cpu_scheduler.demand_drain_horizon", self.demand_drain_horizon_ns, "a duration > 0");
        }
        if !(0.0..=1.0).contains(&self.demand_probe_margin) {
            invalid!("cpu_scheduler.demand_probe_margin", self.demand_probe_margin, "a number from 0 to 1");
        }
        if !(0.0..=1.0).contains(&self.short_margin) {
            invalid!("cpu_scheduler.short_margin", self.short_margin, "a number from 0 to 1");
        }
        if self.cosched_skew_threshold_ns == 0 {
            invalid!("cpu_scheduler.cosched_skew_threshold", self.cosched_skew_threshold_ns, "a duration > 0");
        }
        if self.cosched_costart_skew_ns > self.cosched_skew_threshold_ns {
            invalid!(
                "cpu_scheduler.cosched_costart_skew",
                self.cosched_costart_skew_ns,
                "a duration >= 0 and at most cosched_skew_threshold"
            );
        }
        if self.extended_fairness_period_ns == 0 {
            invalid!("cpu_scheduler.extended_fairness_period", self.extended_fairness_period_ns, "a duration > 0");
        }
        if self.numa_rebalance_period_ns == 0 {
            invalid!("cpu_scheduler.numa_rebalance_period", self.numa_rebalance_period_ns, "a duration > 0");
        }
        if !(self.numa_rebalance_imbalance >= 0.0 && self.numa_rebalance_imbalance.is_finite()) {
            invalid!("cpu_scheduler.numa_rebalance_imbalance", self.numa_rebalance_imbalance, "a number >= 0");
        }
        if !(self.migrate_wait_factor >= 0.0 && self.migrate_wait_factor <= MAX_MIGRATE_WAIT_FACTOR) {
            invalid!("cpu_scheduler.migrate_wait_factor", self.migrate_wait_factor, "a number in [0, 1000]");
        }
        if !(self.migration_throttle_share > 0.0 && self.migration_throttle_share <= 1.0) {
            invalid!("cpu_scheduler.migration_throttle_share", self.migration_throttle_share, "a number in (0, 1]");
        }
        if self.cell_rebalance_period_ns == 0 {
            invalid!("cpu_scheduler.cell_rebalance_period", self.cell_rebalance_period_ns, "a duration > 0");
        }
        if !(self.cell_rebalance_imbalance >= 0.0 && self.cell_rebalance_imbalance.is_finite()) {
            invalid!("cpu_scheduler.cell_rebalance_imbalance", self.cell_rebalance_imbalance, "a number >= 0");
        }
        if !(0.0..=1.0).contains(&self.ht_core_gain) {
            invalid!("cpu_scheduler.ht_core_gain", self.ht_core_gain, "a number from 0 to 1");
        }
        if !(self.ht_used_charge > 0.0 && self.ht_used_charge <= 1.0) {
            invalid!("cpu_scheduler.ht_used_charge", self.ht_used_charge, "a number in (0, 1]");
        }
        Ok(())
    }
}
