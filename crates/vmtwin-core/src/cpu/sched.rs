//! Proportional-share vCPU scheduling on per-pCPU run queues.
//!
//! ESX picks the world whose *priority*, consumed CPU divided by entitled CPU, is lowest
//! ([WP §2.1]: "a priority 0 is considered higher than 100"). Here each vCPU carries a virtual
//! time `key`, the CPU it has consumed divided by its weight (its VM's scheduling weight from
//! `entitlement.rs`, split evenly over the VM's vCPUs, in pCPUs): running for `dt` adds
//! `dt / weight`. Picking the lowest key is picking the lowest consumed/entitled ratio, measured
//! against the fair clock of `clock.rs` (the weight-averaged key of the runnable vCPUs). A
//! waking vCPU, or one a limit releases, is placed owed at most `max_lag_ns` of CPU time by
//! that clock and owing at most `max_debt_ns`, so waiting and idling bank no more than that
//! and forgive no debt a runnable vCPU would keep; at each entitlement
//! update weights change, every key is rescaled so that its lag in CPU time is kept, clamped to
//! `max_lag_ns` of credit and `max_debt_ns` of debt (`max_backlog_debt_ns` for a backlogged
//! vCPU of a held-back VM, below), and rebased so the clock reads zero (near it where a clamp
//! binds: `clock.rs`); the
//! debtors ahead of one the debt bound clamps are forgiven as much virtual time, so that the
//! bound does not reorder debtors drifting at one pace (`even_debts`). At the update that first
//! measures a vCPU's demand, its debt is kept only up to its new entitlement x the interval:
//! the debt was run up against the power-on guesses' weights (a pCPU per vCPU, where a vCPU of
//! a limited pool may weigh 1e-8 and the clock races), and past that bound it would hold a vCPU
//! entitled to nothing back for thousands of seconds (docs/cpu-scheduler.md, 0m).
//!
//! Each pCPU has its own run queue. A vCPU is queued on its last pCPU. A pCPU that needs work
//! takes the best of its own queue's head, its LLC's, its node's and the host's (pull
//! migration; each an O(1) read of the run queues' tournament tree), where a head from another
//! pCPU is charged what the move costs it in its virtual time (`migrate_cost_*`, by distance:
//! another core of the LLC, another LLC, another node or off its NUMA home node): a vCPU is
//! pulled from further away only when it is owed more than the move costs, so a pCPU keeps its
//! own vCPUs unless fairness needs otherwise. With `migrate_wait_factor` above 0 (default 0,
//! off), neither does a pCPU with an empty queue pull a vCPU before it has waited READY that
//! many times what the move would cost it (`move_wait`, the same costs read as wall time):
//! until then it is left for a pCPU near its cache (its own, or one of its LLC or node, which
//! may free up first on a busy host), and the free pCPU takes another candidate or idles until that
//! moment, when it looks again and pulls whatever is best (`recheck_idle`; see `pick`'s
//! `DECLINE` for where the rule does not apply). Waiting as long as the move costs, then moving
//! (factor 1), never costs more than twice the better of the two choices made with hindsight
//! (ski rental), and no pCPU idles beside a READY vCPU for longer than the longest such wait
//! (1.2 ms at factor 1; `tests/work_conserving.rs`). A vCPU that
//! wakes goes to an idle pCPU if there is one: its last pCPU, then its LLC, then its NUMA home node, then any (push migration,
//! research/cpu.md C21); otherwise it preempts the running vCPU on its last pCPU if its own key
//! is lower by more than a margin, else the one with the highest key in its LLC if lower by the
//! margin plus a move's cost, or else queues on its last pCPU. A vCPU a limit releases is
//! placed the same way but preempts only a vCPU ahead of the fair clock, and never one bound
//! with it by a pool limit whose share split binds (`place_with`, `split_binds`). Each
//! VM that fits in a NUMA node has a home node (least loaded at power-on; the NUMA balancer
//! moves one VM's home every `numa_rebalance_period_ns` when node loads differ by more than
//! `numa_rebalance_imbalance`); a wider VM is split into NUMA clients, each with its own home
//! (ESX 4.1 wide-VM support, `numa_wide_vms`, `numa_vcpu_max_per_machine_node`).
//! CPU-load-based migration throttling (ESX 4, off by default, see its parameter) keeps a vCPU
//! that made most of its pCPU's load from being pulled away. Keys are not the whole rule: a vCPU
//! entitled to a whole pCPU, or on an uncommitted host one that gets all it wants, is displaced
//! only by a vCPU entitled to at least as much (`displaceable`), because it can make lost time
//! up only in the slack its entitlement leaves; without this, colliding wake-ups and limited
//! VMs sharing a spare pCPU would take their turns out of the busiest vCPUs, which then fall
//! below their max-min allocation. A waking vCPU also may not preempt a vCPU of a VM that was
//! served short of its entitlement over the last entitlement interval while it waited for CPU
//! (`shield`), unless the waker is entitled to at least as much: fairness is entitlement
//! against delivered CPU, and the fair clock alone cannot see it near critical load, where a
//! backlogged VM that wakers keep preempting sits in debt to the clock (the wakers' credit)
//! while it gets less than its entitlement. Only preemption at a wake or release is barred: at
//! its quantum's end such a vCPU yields by keys as before (`displaceable`), so it cannot hold
//! a pCPU against the VMs it owes time to. And a vCPU a waker preempts, if its VM is held back
//! by the others and ran under its entitlement over the last interval, and the clock owes it
//! CPU, passes the preemption on to the vCPU in its LLC furthest ahead of the clock among those
//! entitled to less (`pass_on`): being first in every queue does not give a vCPU back time it
//! lost while no pCPU freed, and one entitled to nearly a whole pCPU has little slack to wait.
//! Served short is judged on a balance, not on the last interval alone: what the VM's vCPUs
//! were entitled to less what they ran, carried from interval to interval while they wait for
//! CPU (at most one interval's entitlement either way). Judged on one interval the shield is a
//! bang-bang control: a VM that ran short is shielded, runs far over its entitlement in the
//! next interval, is not shielded in the one after and runs short again, a swing with a period
//! of two intervals (a drawn pooled scenario: a low-share 1-vCPU VM at 22 and 72 points a second
//! for its 41.55, taken from a 4-vCPU VM of a limited pool, which got 305 of its 313). With the
//! balance the over-served interval is paid back before the shield returns.
//! A short VM some vCPU of which waited and never halted over the last interval (its queue
//! outlasted the interval) is shielded from every waker not entitled to a whole pCPU, not only
//! from those entitled to less (`spent`): the exception for a waker entitled to as much assumes
//! the victim makes a preemption up in the slack its entitlement leaves, and such a VM has
//! spent it, so every preemption is lost for good while the host idles at other moments, when
//! its one runnable vCPU cannot use more than its pCPU; the waker's VM halts, and has slack to
//! wait in. Its own vCPUs are not barred (a preemption between siblings moves no CPU between
//! VMs; barred, a 4-vCPU VM's waking vCPU took another VM's pCPU instead of its sibling's).
//! Seen in the max-min test's draws (docs/cpu-scheduler.md): on 3 pCPUs a 1-vCPU VM at
//! duty 0.69, entitled to 0.686 beside a 3-vCPU VM at 0.74 per vCPU, was preempted by that VM's
//! wakes 148 times a second, waited READY 35% of the time, never halted, and got 64.84 points of
//! its 69.00 while the host idled 13 points, all of it while its vCPU ran.
//!
//! A vCPU that never halted over the last entitlement interval, of a VM that reserves a whole
//! pCPU per vCPU, is guarded as one entitled to a whole pCPU (`guard`, and its shield no weaker),
//! whatever its entitlement: a reservation is the VM's whenever it demands it, and a vCPU
//! runnable throughout demands at least its pCPU. Its entitlement can sit just under the
//! reservation, because the water-fill caps a VM's floor at its demand estimate, and a vCPU of a
//! VM not held back that never halts counts its READY time only up to its entitlement
//! (`update_demand`): an estimate that starts under the reservation (the first second's run,
//! short of a whole pCPU by the arrivals' phases) stays there. Under a whole pCPU and on a
//! committed host such a vCPU had no guard, so at each slice's end it yielded by keys to the
//! wakers queued with credit, and then waited for a pCPU, while the host idled at other moments,
//! when it could not use more than its own. Seen in the max-min test's draws
//! (docs/cpu-scheduler.md): on 8 pCPUs at load 1.00, a 3-vCPU VM reserving three whole pCPUs,
//! busy, was entitled to 7,791 of its 7,800 MHz all minute and got 284.94 points of its 300.00,
//! all the loss READY after such yields (8.3 s of 55) while the host idled 14.6 points. Only a
//! vCPU that never halted: guarded whatever it does, a VM at duty 0.84 reserving a whole pCPU
//! stopped yielding to a limited pool's VM, which then waited READY while its pool's bucket
//! filled and its sibling ran past its share (`limit.rs`).
//!
//! A vCPU of a VM held back by the others that never halted over the last entitlement interval
//! keeps its whole debt at the update, up to a guard, `max_backlog_debt_ns` (`debt_bound`; where
//! the water-fill sees all the contention: no cells, no NUMA confinement). The bound is there for a vCPU over-served where
//! fairness cannot reach, which would otherwise wait all of it out once that ends; a backlogged
//! vCPU held back at its share contends throughout, so it repays its debt at the pace the clock
//! sets, yielding only to vCPUs behind it. Its lag is not its over-service: a lone such vCPU
//! beside VMs that halt can sit a steady way ahead of the clock (kept, one in a drawn pooled
//! scenario settled at 700 ms and ran its entitlement), and clamped to the bound at every update
//! it was forgiven 55 ms a second, which it ran out of a satisfied neighbour (+0.95 points of a
//! pCPU; docs/cpu-scheduler.md). Once it halts, its wake (`place_key`) bounds its debt as every
//! waker's. Kept, its debt is bounded by the clock's zero sum (it owes what the other runnable
//! vCPUs are owed), a bound that grows with their count; the guard, 3 s, makes it a constant
//! and is not meant to bind (the largest seen is 1.30 s; `max_backlog_debt_ns`).
//!
//! A VM held back at its reservation (max-min gives it the reservation because its share at the
//! water level is less: `VcpuShare::at_floor`) weighs its reservation, so between updates it
//! takes part of whatever slack arises in proportion to it, where max-min gives slack to the
//! VMs at the water level by their shares, and a VM at its floor none of it until the level
//! passes the floor (a drawn scenario: 17.02 points of a pCPU for a 16.00 reservation). So at
//! each entitlement update the lags of its vCPUs are not the clock's but its reservation's
//! balance (`floor_balances`): what each vCPU was owed since the last update (its part of the
//! reservation, or what its share earned at the clock's pace if that is more), less what it
//! ran, carried from update to update, owed at most `max_lag_ns` per vCPU (no more than a
//! sleeper wakes with, so a reservation left unused is not banked beyond that) and owing at
//! most `max_debt_ns`, the bounds of every update's clamp. Owing at most `max_lag_ns`, the
//! balance forgave what the VM took by its weight each interval once it sat at that bound:
//! where the VMs at the water level weigh far less than the floor (a 1-share VM reserving 40
//! MHz beside two 1-share VMs on one pCPU), the balance that holds it to what it is owed sits
//! near 230 ms of debt, and at 100 ms the VM got 3.93 points of a pCPU for the 2.09 max-min
//! gives it (docs/cpu-scheduler.md). Within the interval the clock rules as for every VM; the
//! balance settles the interval. This
//! is the reservation tag of VMware's mClock (Gulati, Merchant and Varman, OSDI 2010:
//! reservations kept by real-time tags, spare capacity by shares) settled once an interval
//! instead of at every dispatch. A balance starts only at an update whose demands were all
//! measured: the first water-fill works on power-on guesses (a whole pCPU per vCPU), and a VM
//! it put at its floor then ran far beyond it while the others started up.
//!
//! A vCPU runs for at most the quantum times its weight over the heaviest vCPU's (at least
//! `MIN_SLICE_NS`; a co-scheduled one the whole quantum), its remaining burst, or its
//! part of what the limit
//! buckets binding it allow (`limit.rs`): its VM's own, its share of a binding pool limit above
//! it (`set_share_limit`), and those of every resource pool above it with a limit. A bucket's
//! tokens are split in proportion to the entitlements of the vCPUs it binds that want to run.
//! A vCPU a limit holds back waits in MLMTD; it may still run into a little debt on a pCPU that
//! would otherwise idle (`borrower`), so limited VMs whose refills fall at the same time do not
//! leave CPU idle that others could use; and, if its VM is at its own limit, in place of a vCPU
//! whose VM is held back below it, once that vCPU has run its entitlement since the last update
//! less one such loan, with no vCPU queued but its siblings and others that have had theirs so
//! (`gap_unowed`): it would take that gap only as spare capacity beyond its entitlement.
//!
//! Why the quantum is scaled by the weight: a backlogged vCPU runs its whole slice once picked,
//! so a whole 50 ms quantum at a weight of 0.04 pCPU put it 1.25 s of virtual time ahead, and
//! the CPU it took stood as credit of the heavier runnable vCPUs (the lags of the runnable
//! vCPUs sum to zero). A few such vCPUs left their heavier neighbours owed 100-300 ms each,
//! further back in virtual time than a waker may be (`max_lag_ns`), so a VM waking with its
//! whole entitlement's worth of credit waited behind them (READY), which its demand estimate
//! then read as demand, and the water-fill gave the excess to the VMs with the most weight.
//! Seen in the max-min property test's draws: on 2 pCPUs a 1-vCPU VM reserving a whole pCPU
//! at duty 0.74 waited READY 26%, was estimated at 995 MHz, and a 2-vCPU VM reserving 748 MHz
//! got 937 while two 20,000-share VMs got 10.9 points of their 18.9; on 1 pCPU with all VMs
//! backlogged, a 1-vCPU VM lost 2.4 points of its 50.35 (its credit clamped at its limit's
//! releases). With every slice spanning the virtual time a whole quantum takes the heaviest
//! vCPU, both are on max-min, and the lags the runnable vCPUs owe each other stay within that
//! span of the clock; where every vCPU weighs the same (bench-1024vm) slices stay whole quanta.
//!
//! Hyperthreading (`sched/ht.rs`): with `hyperthreading` on and two threads per core, every
//! thread is a pCPU; a vCPU beside a busy sibling thread runs at `(1 + ht_core_gain) / 2` of a
//! core, is charged that in virtual time and `ht_used_charge` of its time in %USED; whole idle
//! cores are taken first, and compensation gives whole cores in turn. Off, one vCPU per core.
//!
//! Every vCPU is in exactly one state at a time (RUN, READY, MLMTD, WAIT, WAIT_IDLE, or OFF
//! before power-on), and the time in each state is accumulated on every transition, so
//! RUN + READY + MLMTD + WAIT + WAIT_IDLE equals the powered-on time exactly.
//!
//! # Tunables
//! See [`CpuSchedParams`]: `quantum_ns` (50 ms), `wake_preempt_margin_ns` (1 ms),
//! `max_lag_ns` (100 ms), `max_debt_ns` (300 ms), `max_backlog_debt_ns` (3 s), `limit_burst_ns`
//! (100 ms), `limit_min_slice_ns` (5 ms), `entitlement_interval_ns` (1 s),
//! `demand_ewma_weight` (0.5), `demand_wait_power` (3), `demand_probe_margin` (0.01),
//! `demand_drain_horizon_ns` (60 s), `short_margin` (0.05); limits
//! (`limit.rs`): `limit_borrow_ns` (1 ms), `limit_share_split_below` (0.5), `limit_dormant_max`
//! (0.25); locality: `llc_aware` (on), `llc_balance` (off),
//! `extended_fairness` (off, every `extended_fairness_period_ns` = 3 s), `numa_home_nodes` (on),
//! `numa_confine` (off), `numa_wide_vms` (on), `numa_vcpu_max_per_machine_node` (0: a node's cores),
//! `numa_rebalance_period_ns` (2 s), `numa_rebalance_imbalance` (0.1), `migrate_cost_core_ns`
//! (40 us), `migrate_cost_llc_ns` (800 us), `migrate_cost_node_ns` (1.2 ms),
//! `migrate_wait_factor` (0: off; 1 is ski rental's break-even), `migration_throttle` (off),
//! `migration_throttle_share` (0.9).
//! [`CpuSchedParams::without_locality`] gives the scheduler as it was before locality.
//!
//! # Counters
//! Per vCPU, cumulative ns: `run`, `ready`, `mlmtd`, `wait`, `idle`, `used` (charged time; run
//! time, less `1 - ht_used_charge` of the time beside a busy hyperthread sibling); `migrations`, `llc_migrations`,
//! `node_migrations` (slices started on another pCPU, another LLC, another node); `home` (NUMA
//! home node); `load_share`. Per scheduler: `dispatches`, `preemptions`, `migrations`,
//! `core_migrations` (to the sibling hyperthread), `llc_migrations`, `node_migrations`,
//! `costops`, `vm_costops`, `costarts`, `numa_moves`; `SchedStats::locality` splits the
//! dispatches by level (same pCPU, same core, same LLC, same node, other node).
//!
//! # Known gaps
//! - Scheduler cells, vSMP consolidation and inter-VM cache affinity, and their gaps:
//!   `cells.rs`. Co-scheduling (all four modes) and its gaps: `cosched.rs`. The NUMA balancer moves only VMs of one client; a wide VM's clients
//!   keep the homes power-on gave them.
//! - Migration costs steer the scheduler's choices only: the vCPU is not slowed after a move
//!   until the execution-speed model charges it. Memory does not follow a home move.
//! - Home nodes are a preference, not a confinement: an idle pCPU on another node still takes
//!   a vCPU (work conservation), so some dispatches cross nodes (on bench-64vm about 9%).
//! - Within an LLC moves are cheap (40 us), so on an overcommitted host most wake-ups that
//!   preempt still move the waker to another core of its LLC.
//! - On a host whose pCPUs are all busy most of the time (bench-cpu160, 1 min), most dispatches
//!   change pCPU (69.5%; a quarter cross nodes), though 74.4% stay in their LLC, which is what
//!   ESX calls local (`SchedStats::locality`; the cross-node quarter is half vCPUs pulled off
//!   their home node by a freed pCPU and half coming back; only `numa_confine` removes it, at
//!   the price of idle pCPUs, docs/cpu-scheduler.md): a vCPU waking after a halt finds its last pCPU
//!   running another (then it preempts there, and the preempted vCPU moves, or it moves), and a
//!   vCPU waiting for a pCPU is usually pulled by another pCPU well before its own frees; only
//!   3% of dispatches take the pCPU's own queue. The wait rule (`migrate_wait_factor` 1) keeps
//!   the costly moves down (another node: 25.6% -> 21.0% of dispatches), not the 40 us ones
//!   (any move: 69.5% -> 73.8%, as the pCPUs it leaves idle are taken by wake-ups from
//!   anywhere), at 13% more simulator instructions; hence off by default. A wake-up still takes an
//!   idle pCPU anywhere at once (push migration does not wait), and the wait counts from entering
//!   READY, not from the last run: a vCPU that halted long ago is as cold on its last pCPU as
//!   elsewhere, which the scheduler does not know; the execution-speed model charges both (a
//!   move a refill, a return the part of the footprint others evicted, `cpu/cache.rs`).
//! - A VM's weight is split evenly over its vCPUs, whatever each vCPU demands.
//! - The demand estimate of a vCPU that never halts cannot tell a queue served at its rate from
//!   one that grows (`update_demand`): a satisfied one reads at most its drain rate (what it ran
//!   between intervals in which it halted) while it has been runnable no longer than its drain
//!   epochs, and otherwise (never halted, or runnable longer) the highest run of its history plus
//!   at most `demand_probe_margin`; a held-back one a whole pCPU while its backlog stands, so
//!   near critical load a VM held back just above its demand can stay held for good
//!   (docs/cpu-scheduler.md, the max-min property test: drawn-flat-15976149). There the host's
//!   idle is no scheduling gap: no pCPU idles beside a READY vCPU, and every idle ns falls while
//!   all five vCPUs of the held VM run (its width). Its neighbour gets what the held VM and
//!   that idle leave, so no rule that delivers the held VM its entitlement can close the case;
//!   only its estimate can, and that must read its arrival rate (420 points, not 420.5) while
//!   its queue grows, which its run, READY and halts cannot show (session 42, mm42a).
//! - Only a VM held at its own reservation floor is settled to its reservation's balance: a
//!   resource pool held at its floor gives its children weights from that floor, and they take
//!   slack by it as such a VM did. The balance counts run time, not the share of a core charged
//!   beside a busy hyperthread; its per-vCPU clamps and the placement of a waking vCPU drop part
//!   of it (the credit of a vCPU that idled beyond `max_lag_ns`, while its debt is kept to
//!   `max_debt_ns`), so a floor-held VM whose vCPUs halt often lands a little under its
//!   reservation (up to 1.1 points of a pCPU on the census: 4 bursty vCPUs at a 164.40 floor)
//!   where the weight alone put it a little over. The balance settles what a floor-held VM ran
//!   past its reservation while the first estimates were wrong too, and repays it after them,
//!   to whichever VM waits at the water level then (drawn-pools-29996: 2.1 s of CPU taken in
//!   1-5 s, repaid in 5-23 s); and a light floor-held VM's debt is forgiven past `max_debt_ns`
//!   of virtual time by `even_debts` (drawn-pools-0q: 18.4 ms of CPU at weight 0.061), so it
//!   keeps what it ran past its reservation (docs/cpu-scheduler.md, session 42).
//! - A vCPU entitled to nearly nothing that ran into debt keeps it: it is held back and never
//!   halts, so the update keeps it, and at its weight it would take hours of virtual time to
//!   repay. The clock's zero sum makes the runnable vCPUs owed that much, past `max_lag_ns`,
//!   whose clamp at every update then sets a heavy and a light vCPU to the same CPU credit, the
//!   light one further behind in virtual time (drawn-pools-0m: two vCPUs of a 2-share pool at
//!   -300 ms from the first second on, a 1-vCPU VM 1.7 points under its demand); bounding such
//!   debts by the entitlement at every update broke the cases the kept debt closed
//!   (docs/cpu-scheduler.md). A debt run up under the power-on guesses, 0m's, is now bounded
//!   at the first measured update (the header above; session 42, mm42d); one run up later is
//!   still kept.
//! - The demand estimate (`update_demand`) cannot tell a backlogged vCPU from one whose
//!   wake-ups collide often where it sees no halt: a vCPU of a held-back VM, or one of a
//!   satisfied VM that did not halt in an entitlement interval and ran less than its
//!   entitlement (a backlog longer than the interval, drained later). Near 100% load (a vCPU at
//!   83% with 15% READY and 2% idle) it reads the second as nearly the first and errs high, by
//!   up to its READY share (a satisfied vCPU up to its entitlement, not past it). A closed-loop
//!   vCPU of a VM not held back is read by its run time, though its waits delayed its next
//!   bursts.
//! - Only a reservation of a whole pCPU per vCPU guards a busy vCPU at it: a VM reserving less
//!   whose estimate reads under its reservation (READY counted only up to the entitlement,
//!   which that estimate caps) is entitled to the estimate, and yields by keys at its slices'
//!   ends as before. Counting READY up to the reservation instead lifts it, but over-reads a VM
//!   at duty 0.96 reserving a whole pCPU whose READY is collisions (docs/cpu-scheduler.md).
//! - Near 100% load, finite runs end with work still queued in the guests: usage then trails
//!   the max-min allocation by that backlog, as any queue near saturation does.

mod cells;
mod ht;

use super::cache::CacheWarmth;
use super::cells::Cells;
use super::clock::FairClock;
use super::cosched::{bits, gang_needs, next_laggard_in, CoschedMode, Lead, Pace, Siblings, SKEW_TICK_NS};
use super::limit::{BucketRules, TokenBucket};
use super::params::CpuSchedParams;
use super::runqueue::QueueSet;
use crate::hw::Topology;
use crate::sim::{ceil_f, ceil_time, mask, max_f, min_f, ns_f, pick_f, powi_u, trunc_i64, Event, EventQueue, Time};
use std::sync::atomic::Ordering::Relaxed;

/// Lowest weight a vCPU can have, in pCPUs (a few Hz): a VM whose entitlement is zero (the
/// host fully reserved by others) still has a finite virtual-time rate.
const MIN_WEIGHT: f64 = 1e-9;

/// Shortest slice a vCPU's weight makes (`start`), in ns: the shortest quantum a scenario may
/// set (python/vmtwin/scenario/limits.py, `MIN_QUANTUM_NS`), so that no weight makes more
/// slices than the smallest quantum does.
const MIN_SLICE_NS: Time = 1_000_000;

/// One vCPU's drain epochs, for `CpuSched::update_demand`: an epoch runs from the end of one
/// entitlement interval in which the vCPU halted to the end of the next, so its queue was empty
/// (or nearly: it halted in the interval) at both ends, and what it ran in between is what
/// arrived. Times in ns, rates in pCPUs.
#[derive(Clone, Copy, Debug, Default)]
struct Drain {
    /// it halted in some interval since power-on: an epoch is open
    open: bool,
    /// run and span of the open epoch so far (the intervals since the last halt)
    ran: f64,
    span: f64,
    /// run and span of the closed epochs, each weighed down by `demand_drain_horizon_ns`
    /// (`exp(-age / horizon)`) as later epochs close
    closed_ran: f64,
    closed_span: f64,
}

/// One VM's sums over its vCPUs for one entitlement interval (`CpuSched::update_demand`), each
/// in pCPUs (a fraction of the interval, summed over the vCPUs).
#[derive(Clone, Copy, Debug, Default)]
struct Served {
    /// the interval run
    run: f64,
    /// the interval held (READY, MLMTD, COSTOP): waited to run
    held: f64,
    /// entitlement
    alloc: f64,
    /// the interval's demand measurements (before the EWMA)
    measured: f64,
    /// some vCPU waited and never halted in the interval: its queue outlasted it
    backlog: bool,
}

/// The bounds of a weighted slice (`weighted_slice`): the quantum and [`MIN_SLICE_NS`] (or the
/// quantum, if shorter), as ns and as floats. Fixed by the parameters, so kept rather than
/// converted again for every vCPU at every entitlement update.
#[derive(Clone, Copy, Debug)]
struct SliceRange {
    q_ns: Time,
    lo: Time,
    q_f: f64,
    lo_f: f64,
}

impl SliceRange {
    fn new(q_ns: Time) -> Self {
        let lo = MIN_SLICE_NS.min(q_ns);
        SliceRange { q_ns, lo, q_f: ns_f(q_ns), lo_f: ns_f(lo) }
    }
}

/// [`CpuSched::update_demand`]'s cap of a VM held back at the last update, some vCPU of which
/// read a backlog since it was held back, and whose vCPUs' new measurements now sum to less
/// than its entitlement `entitled` while their estimates sum to more (`demand`): the backlog
/// has drained and the entitlement did not bind in the interval, so the estimate above the
/// entitlement is stale. Its vCPUs' estimates are scaled down to sum to the entitlement (the
/// doc comment there); returns their sum again, in vCPU order from zero as the walk sums it.
#[cold]
#[inline(never)]
fn cap_stale_claim(vcpus: &mut [Vcpu], g: &Siblings, entitled: f64, demand: f64) -> f64 {
    let range = g.first as usize..(g.first + g.n) as usize;
    let scale = entitled / demand;
    for vc in &mut vcpus[range.clone()] {
        vc.demand *= scale;
    }
    vcpus[range].iter().fold(0.0, |sum, vc| sum + vc.demand)
}

/// The quantum scaled by `weight` at `per_weight` ns of slice per pCPU of weight, kept within
/// `r`: the product truncated to whole ns and clamped (compared in floats first, so that a
/// vCPU as heavy as the heaviest takes one comparison and no conversion). Computed for every
/// vCPU at the entitlement update, which alone changes the weights and `per_weight`.
#[inline(always)]
fn weighted_slice(weight: f64, per_weight: f64, r: &SliceRange) -> Time {
    let s = weight * per_weight;
    if s >= r.q_f {
        r.q_ns
    } else if s > r.lo_f {
        // `lo < s < q_ns` here (a NaN fails both tests), so `s` fits an i64 and the plain
        // truncation is exact; `as` would add a saturating check of no use
        trunc_i64(s) as Time
    } else {
        r.lo
    }
}

/// A vCPU whose entitlement is at least this many pCPUs is entitled to a whole pCPU.
const FULL_PCPU: f64 = 1.0 - 1e-6;

/// Entitlements closer than this (pCPUs) count as equal when deciding who may displace whom.
const GUARD_EPS: f64 = 1e-9;

/// What the entitlement gives one vCPU, in pCPUs.
#[derive(Debug, Clone, Copy, Default)]
pub struct VcpuShare {
    /// scheduling weight
    pub weight: f64,
    /// entitlement
    pub alloc: f64,
    /// the host is uncommitted and this entitlement is all its VM wants (its ceiling: demand,
    /// limit or vCPUs)
    pub satisfied: bool,
    /// this entitlement is below what its VM wants (demand, its own limit or vCPUs): the
    /// others, or a pool's limit, hold it back
    pub held: bool,
    /// held back at its reservation, which is above its share at the water level: its weight is
    /// its reservation, and at the next update its lag is its reservation's balance
    /// (`floor_balances`)
    pub at_floor: bool,
    /// its share at its pool's water level, whatever its reservation (at most a pCPU)
    pub share: f64,
    /// its VM's own reservation per vCPU, whatever its demand estimate (pCPUs): at a whole pCPU
    /// a vCPU runnable throughout the last interval is guarded as entitled to it (`set_weights`)
    pub reserved: f64,
}

/// Least entitlement (pCPUs) a vCPU counts with when a bucket's tokens are split, so that one
/// entitled to nothing still gets slices of a sensible length when it does run.
const MIN_PART: f64 = 1e-3;

/// States in which a vCPU counts in the fair clock: it competes for a pCPU (RUN, READY) or is
/// co-stopped (research/cpu.md C3: entitled and charged accumulate while the world is runnable,
/// costop included, in every co-scheduling mode).
const IN_CLOCK: [bool; STATES] = [true, true, false, false, false, true, false];
/// States in which a vCPU wants to run, held back by a limit or not (a limiter's active weight).
const ACTIVE: [bool; STATES] = [true, true, true, false, false, false, false];
/// States in which a vCPU makes progress for co-scheduling: it runs or halts (`cosched.rs`).
const PROGRESS: [bool; STATES] = [true, false, false, false, true, false, false];
/// Per state, its class for co-scheduling's [`Pace`]: still (0), halted (1), running (2).
const PACE_CLASS: [u8; STATES] = [2, 0, 0, 0, 1, 0, 0];

/// No vCPU.
pub const NONE: u32 = u32::MAX;

/// Group adjacent cores by `level` (their LLC or node): the index ranges of the groups
/// (`range[g]..range[g + 1]`) and each core's group, numbered densely from 0.
fn groups(cores: &[crate::hw::Pcpu], level: impl Fn(&crate::hw::Pcpu) -> u32) -> (Vec<usize>, Vec<u32>) {
    let mut range = vec![0];
    for (p, w) in cores.windows(2).enumerate() {
        if level(&w[1]) != level(&w[0]) {
            range.push(p + 1);
        }
    }
    range.push(cores.len());
    let mut of = vec![0u32; cores.len()];
    for g in 0..range.len() - 1 {
        of[range[g]..range[g + 1]].fill(g as u32);
    }
    (range, of)
}

/// Where pCPU `p` sits, as the dispatch path reads it: the pCPU ranges of its LLC and its node
/// (topology numbers LLC and node mates adjacently, see `groups`), their run-queue subtrees
/// (`QueueSet::subtree`, 0 for none) and its LLC and node numbers. One record per pCPU, so a
/// pick or a slice start reads one entry, one bounds check, where it read five side arrays;
/// and whether another pCPU shares the LLC (node) is a range test on that pCPU's number, with
/// no look-up of it.
#[derive(Debug, Clone, Copy, Default)]
struct PcpuTopo {
    llc_lo: u32,
    llc_n: u32,
    node_lo: u32,
    node_n: u32,
    llc: u32,
    node: u32,
    llc_sub: u32,
    node_sub: u32,
}

impl PcpuTopo {
    /// pCPU `q` is under the same LLC
    #[inline(always)]
    fn same_llc(&self, q: u32) -> bool {
        q.wrapping_sub(self.llc_lo) < self.llc_n
    }

    /// pCPU `q` is on the same NUMA node
    #[inline(always)]
    fn same_node(&self, q: u32) -> bool {
        q.wrapping_sub(self.node_lo) < self.node_n
    }

    #[inline(always)]
    fn llc_range(&self) -> (usize, usize) {
        (self.llc_lo as usize, (self.llc_lo + self.llc_n) as usize)
    }

    #[inline(always)]
    fn node_range(&self) -> (usize, usize) {
        (self.node_lo as usize, (self.node_lo + self.node_n) as usize)
    }
}

/// The tighter of two optional limits.
fn min_limit(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// What a vCPU is doing, with esxtop's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcpuState {
    /// executing on a pCPU (%RUN)
    Run = 0,
    /// runnable, waiting for a pCPU (%RDY)
    Ready = 1,
    /// runnable but held back by the VM's CPU limit (%MLMTD, also counted in %RDY)
    Mlmtd = 2,
    /// blocked on a resource (%VMWAIT; the I/O and swap waits join here)
    Wait = 3,
    /// halted by the guest (%IDLE)
    Idle = 4,
    /// stopped by co-scheduling: it ran too far ahead of a sibling (%CSTP, `cosched.rs`)
    Costop = 5,
    /// the VM is powered off
    Off = 6,
}

/// Number of states with a time counter.
pub const STATES: usize = 7;

/// One vCPU's scheduling state and counters, laid out by use in cache lines (`repr(C)` keeps
/// the order, `align(64)` starts each record a line: 256 bytes, not 240). With 1,024 vCPUs
/// the array outgrows the L1 cache, and a dispatch, wake or preemption touches three lines of
/// the vCPU it moves, not the three or four an unaligned record straddled. The first line is
/// what the hot paths read of any vCPU (placement, the pick's scoring of queue heads, a
/// slice's start and stop); the second what every state change writes (`since`, the state
/// times); the third the rest of a start and a wake (guards, charged time, moves) and the
/// pops' `stale`; the last what only the entitlement update reads (and migration throttling's
/// `load_share`, off by default). The sampler reads the first three.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Vcpu {
    /// virtual time: sum of run time / weight
    pub key: f64,
    /// 1 / weight, kept because charging multiplies by it on every slice
    pub inv_weight: f64,
    /// scheduling weight in pCPUs
    pub weight: f64,
    /// its entitlement, pCPUs
    pub alloc: f64,
    /// CPU work left in the current burst, ns
    pub work_left: Time,
    /// when it last entered READY (what `migrate_wait_factor` measures its wait from)
    ready_at: Time,
    /// owning VM
    pub vm: u32,
    /// current or last pCPU
    pub pcpu: u32,
    /// current state
    pub state: VcpuState,
    /// some limiter in its VM's chain has a bucket: the hot paths skip the chain otherwise
    /// (active weights are then not kept, and are counted in when a limit is set)
    limited: bool,
    /// its starts, stops and wakes mark its VM for a look (`strict`, `relaxed-3x`: their
    /// looks read the siblings' states; `relaxed-4x` marks a VM when its paces move, `repace`,
    /// or when its timer is due at the instant, `look_if_due`)
    marks: bool,
    /// its VM is co-scheduled (`cosched.rs`); kept per vCPU, beside the state the hot paths
    /// already read, like `limited`
    cosched: bool,
    /// its NUMA home node, or [`NONE`] when its VM is not NUMA-managed (`numa_home_nodes` off,
    /// a one-node host, or a VM wider than a node)
    pub home: u32,
    /// when `state` was entered or last accounted
    pub since: Time,
    /// cumulative ns per state, indexed by `VcpuState as usize`
    pub time_ns: [u64; STATES],
    /// below this entitlement a waker may not displace it (see `displaceable`): its entitlement
    /// when it gets all it wants or a whole pCPU, else minus infinity
    pub guard: f64,
    /// below this entitlement a waking vCPU may not preempt it (`victim`): its entitlement when
    /// its VM was served short of it (`CpuSched::short`), else its `guard`
    pub shield: f64,
    /// cumulative charged ns (%USED)
    pub used_ns: u64,
    /// slices started on a pCPU other than its last one
    pub migrations: u64,
    /// of those, moves to a pCPU under another LLC
    pub llc_migrations: u64,
    /// its slice: the quantum scaled by its weight (`weighted_slice`), or the whole quantum when
    /// co-scheduled; kept from the entitlement update, which alone changes its inputs, rather
    /// than computed at every start
    slice: Time,
    /// moves to a pCPU on another NUMA node (of `llc_migrations`), beside the other move
    /// counts: the sampler reads all three, and so reads no vCPU's last line
    pub node_migrations: u64,
    /// run-queue entries of this vCPU left behind by a VM-wide co-stop (`strict`,
    /// `relaxed-3x`), skipped when popped, or dropped when the vCPU is queued again (a scan);
    /// read by every pop of a co-scheduled vCPU
    stale: u32,
    /// its VM's entitlement is its own limit (`place_key`), as of the last entitlement update;
    /// on this line, which the update writes anyway (`guard`, `shield`), not on the last
    at_limit: bool,
    /// a waker's preemption of it is passed on (`pass_on`): its VM is held back by the others
    /// and ran under its entitlement over the last interval while it waited, as of the last
    /// entitlement update; on this line with `at_limit`
    passes_on: bool,
    /// its VM is a `lendee` (`CpuSched::lendee`), as of the last entitlement update: what an
    /// enqueue or a pop adds to or takes from `CpuSched::queued_lendee`; on this line, which an
    /// enqueue reads anyway (`stale`)
    lendee: bool,
    /// EWMA of the demand estimate, in pCPUs (see `update_demand`)
    pub demand: f64,
    /// its share of its pCPU's load over the last entitlement interval, in [0, 1] (what
    /// CPU-load-based migration throttling reads; written by the demand walk, which writes
    /// this line anyway)
    pub load_share: f64,
    /// run ns at the last load-share update
    run_mark: u64,
    /// runnable ns (run + ready + mlmtd + costop) at the last demand update
    pub runnable_mark: u64,
    /// run ns at the last demand update
    pub ran_mark: u64,
    /// ready ns at the last demand update
    pub ready_mark: u64,
    /// when the demand estimate was last updated (or the vCPU powered on)
    pub demand_since: Time,
    /// the estimate holds a measurement, not the power-on guess
    pub demand_measured: bool,
    /// runnable throughout the last entitlement interval: it never halted (`update_demand`;
    /// read by `set_weights` for a VM reserving a whole pCPU per vCPU)
    busy: bool,
}

// the lines as laid out above
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Vcpu>() == 256);
    assert!(offset_of!(Vcpu, since) == 64);
    assert!(offset_of!(Vcpu, guard) == 128);
    assert!(offset_of!(Vcpu, demand) == 192);
    assert!(offset_of!(Vcpu, at_limit) < 192);
    assert!(offset_of!(Vcpu, node_migrations) < 192);
};

impl Vcpu {
    /// What the vCPU counts for when its buckets' tokens are split: its entitlement, at least
    /// [`MIN_PART`].
    #[inline]
    fn bucket_part(&self) -> f64 {
        // `self.alloc.max(MIN_PART)` by `max_f`: the same value for every `alloc`, NaN included
        max_f(self.alloc, MIN_PART)
    }

    /// Runnable ns so far: RUN + READY + MLMTD + COSTOP (what the vCPU wanted to run).
    pub fn runnable_ns(&self) -> u64 {
        self.time_ns[VcpuState::Run as usize]
            + self.time_ns[VcpuState::Ready as usize]
            + self.time_ns[VcpuState::Mlmtd as usize]
            + self.time_ns[VcpuState::Costop as usize]
    }

    /// Its run time (ns) up to `now`, counters not brought up to date.
    fn ran_by(&self, now: Time) -> u64 {
        self.time_ns[VcpuState::Run as usize] + if self.state == VcpuState::Run { now - self.since } else { 0 }
    }

    /// Add the time since `since` to the current state's counter and restart it at `now`:
    /// [`CpuSched::set_state`] into the state it is in, which changes nothing else (the clock,
    /// the limiters and co-scheduling's paces follow state changes only).
    #[inline(always)]
    pub(crate) fn accrue(&mut self, now: Time) {
        let dt = now - self.since;
        self.time_ns[self.state as usize] += dt;
        if self.state == VcpuState::Run {
            self.used_ns += dt;
        }
        self.since = now;
    }

    /// [`Self::accrue`], returning the counters it brings to `now` (state times, charged ns)
    /// for a caller that reads them: read back from the record just after `accrue`'s store of
    /// one counter, they wait for that store to reach the cache (a wider load takes no data
    /// from a narrower store): at 1,024 vCPUs the sampler's longest wait.
    #[inline(always)]
    pub(crate) fn accrue_read(&mut self, now: Time) -> ([u64; STATES], u64) {
        let dt = now - self.since;
        let state = self.state as usize;
        // (masks, not a branch per counter: the same sums; which counter takes `dt` is a coin
        // toss from one vCPU to the next, and the compiler keeps the sums in vector registers)
        let time = std::array::from_fn(|s| self.time_ns[s] + (dt & mask(s == state)));
        let used = self.used_ns + (dt & mask(self.state == VcpuState::Run));
        (self.time_ns, self.used_ns, self.since) = (time, used, now);
        (time, used)
    }

    /// Its share of its pCPU's load since the last entitlement update (what CPU-load-based
    /// migration throttling reads): the ns it ran over the ns its pCPU was busy, from the
    /// pCPUs' busy ns now (`busy`) and then (`mark`).
    fn update_load_share(&mut self, busy: &[u64], mark: &[u64]) {
        let run = self.time_ns[VcpuState::Run as usize];
        let p = self.pcpu as usize;
        let span = busy[p] - mark[p];
        self.load_share = if span == 0 { 0.0 } else { ((run - self.run_mark) as f64 / span as f64).min(1.0) };
        self.run_mark = run;
    }

    /// Co-scheduling progress so far (`cosched.rs`): ns running or halted, up to `now`.
    #[inline]
    fn progress_ns(&self, now: Time) -> Time {
        let p = self.time_ns[VcpuState::Run as usize] + self.time_ns[VcpuState::Idle as usize];
        if PROGRESS[self.state as usize] {
            p + (now - self.since)
        } else {
            p
        }
    }
}

/// One pCPU.
#[derive(Debug, Clone, Default)]
struct Pcpu {
    /// the vCPU running, or NONE
    running: u32,
    /// when its slice started
    slice_start: Time,
    /// the running vCPU's key is charged up to this time
    key_mark: Time,
    /// the running vCPU's key as a line in time, cached for the preemption scan:
    /// `key(now) = run_key0 + now * run_inv_weight` (one multiply-add per pCPU scanned)
    run_key0: f64,
    run_inv_weight: f64,
    /// the running vCPU's `shield` and `alloc`
    run_guard: f64,
    run_alloc: f64,
    /// the running vCPU's VM
    run_vm: u32,
    /// ns it has run vCPUs, up to the start of the current slice (esxtop's PCPU UTIL)
    busy_ns: u64,
    /// slices started on it: each follows one scheduler invocation that took its lock (the
    /// cell lock's contention in the execution-speed model, `cells.rs`)
    dispatches: u64,
}

/// A CPU limit being enforced: a VM's own, or a resource pool's (shared by every VM below it).
/// In declared order, aligned: the bucket and the flags every limit walk reads (`solo`,
/// `refill_pending`) share the first cache line.
#[derive(Debug, Clone, Default)]
#[repr(C, align(64))]
pub struct Limiter {
    /// the limit's bucket; `None` for a VM without a limit
    pub bucket: Option<TokenBucket>,
    /// a refill event is pending
    pub refill_pending: bool,
    /// a VM's own limiter that is the only bucket binding its one vCPU: a bucket of its own, no
    /// share of a pool limit (nothing to yield, no own limit kept apart) and no pool bucket
    /// awake above it (`refresh_solo`). Its vCPU's part of the bucket is then exactly 1, so
    /// the limits' looks read this bucket alone: `throttled_chain`, and `start` and `stop_left`
    /// without a call to the walks (`start_bound`, `stop_bound`)
    pub solo: bool,
    /// generation of the pending refill event, bumped to cancel it
    pub refill_gen: u32,
    /// vCPUs this limiter holds in MLMTD, in the order they were held
    pub held: Vec<u32>,
    /// a VM's own limit as configured, MHz
    pub user_mhz: Option<f64>,
    /// a VM's share of a binding pool limit above it, MHz (see `set_share_limit`)
    pub share_mhz: Option<f64>,
    /// a VM's own limit, kept apart while its share is tighter (`bucket` then runs at the
    /// share): the share yields when no pool bucket above is scarce (`share_yields`), the own
    /// limit never does
    pub user: Option<TokenBucket>,
    /// summed entitlement (pCPUs) of the vCPUs under this limiter that want to run (RUN, READY,
    /// MLMTD): each gets its bucket's tokens in proportion to its entitlement
    pub active_alloc: f64,
    /// how many vCPUs under this limiter want to run
    pub active_n: u32,
    /// a pool limiter's bucket while the limiter is dormant (`bucket` is then `None`, so every
    /// walk skips it; `limit.rs`, dormant pool limits)
    pub asleep: Option<TokenBucket>,
    /// the run ns its vCPUs had been charged for when its dormancy began (`charged_below`)
    pub asleep_mark: u64,
    /// the VMs below a pool limiter, in VM order (empty for a VM's own)
    pub vms: Vec<u32>,
    /// most of a pool limiter's vCPUs that can run at once: their count, at most the pCPUs'
    pub width: f64,
    /// a pool bucket at the share split or above never shortens a slice (`start_bound`) at the
    /// current entitlements and slices, with every vCPU below wanting to run (`set_weights`)
    pub slice_free: bool,
}

// the walks' fields in the first line, as laid out above
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Limiter, refill_gen) < 64);
    assert!(offset_of!(Limiter, solo) < 64);
};

/// Scheduler decisions worth counting.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedStats {
    /// slices started
    pub dispatches: u64,
    /// running vCPUs preempted by a waking one
    pub preemptions: u64,
    /// slices started on a pCPU other than the vCPU's last one
    pub migrations: u64,
    /// of those, onto the other hyperthread of the same core (0 without hyperthreading): the
    /// one move that keeps the core's L1 and L2 (see [`SchedStats::locality`])
    pub core_migrations: u64,
    /// of those, onto a pCPU under another LLC
    pub llc_migrations: u64,
    /// of those, onto a pCPU on another NUMA node
    pub node_migrations: u64,
    /// vCPUs co-stopped (transitions into COSTOP)
    pub costops: u64,
    /// VM-wide co-stops (`strict`, `relaxed-3x`)
    pub vm_costops: u64,
    /// gang co-starts of co-stopped VMs (`strict`, `relaxed-3x`)
    pub costarts: u64,
    /// VMs whose NUMA home node the balancer moved
    pub numa_moves: u64,
    /// VMs the cell balancer moved to another cell (`cells.rs`)
    pub cell_moves: u64,
    /// wake-ups placed in their target LLC by vSMP consolidation or cache affinity (`cells.rs`)
    pub affinity_placements: u64,
}

impl SchedStats {
    /// Dispatches by how far they moved the vCPU from its last pCPU, nearest first: on the same
    /// pCPU, to its sibling hyperthread (same core), to another core of the same LLC, to another
    /// LLC of the same NUMA node, to another node. They sum to `dispatches`. ESX's locality is
    /// the LLC's: the pCPUs sharing the origin's LLC are its "local" processors and the others
    /// "remote", and intra-LLC moves are "significantly cheaper" than inter-LLC ones
    /// (research/cpu.md, glossary and A6.3, [S §3.3]); so the first three levels are the
    /// local dispatches (`dispatches - llc_migrations`).
    pub fn locality(&self) -> [u64; 5] {
        let llc_local = self.migrations - self.llc_migrations;
        [
            self.dispatches - self.migrations,
            self.core_migrations,
            llc_local - self.core_migrations,
            self.llc_migrations - self.node_migrations,
            self.node_migrations,
        ]
    }
}

/// A moment written through `&self` (see `CpuSched::recheck`): a relaxed atomic, cloned by value.
#[derive(Debug)]
struct Recheck(std::sync::atomic::AtomicU64);

impl Clone for Recheck {
    fn clone(&self) -> Self {
        Recheck(std::sync::atomic::AtomicU64::new(self.0.load(Relaxed)))
    }
}

/// The CPU scheduler of one host.
#[derive(Debug, Clone)]
pub struct CpuSched {
    /// tunables in force
    pub params: CpuSchedParams,
    /// every vCPU of every VM, VM by VM
    pub vcpus: Vec<Vcpu>,
    /// limiters: index `vm` is VM `vm`'s own, pools' limiters follow
    pub limiters: Vec<Limiter>,
    /// per VM, the limiters that bind it: its own, then its pools' from the nearest up
    chains: Vec<Vec<u32>>,
    /// some limiter has had a bucket or a vCPU under it: until then every limiter is idle (no
    /// bucket, no active weight) and `set_weights` skips them (1,024 of them, a cache line or
    /// two each, on a 1,024-VM host)
    limits_set: bool,
    /// generation of the pending dormancy look (`look_dormancy`), bumped to make it stale
    dormant_gen: u32,
    /// the VMs below some pool limit, in VM order (`start_dormancy`)
    pool_vms: Vec<u32>,
    /// `look_dormancy`'s per-pool sums (charged, pending), kept for their room
    pool_sums: Vec<(u64, u64)>,
    /// decision counters
    pub stats: SchedStats,
    pcpus: Vec<Pcpu>,
    queues: QueueSet,
    llc_of: Vec<u32>,
    /// pCPUs of LLC `l` are `llc_range[l]..llc_range[l + 1]` (topology numbers them adjacently)
    llc_range: Vec<usize>,
    idle: Vec<bool>,
    idle_count: usize,
    /// the idle pCPUs again, as a bit set (bit `p % 64` of word `p / 64`): placement looks
    /// through the idle pCPUs only, in the same ascending order as a scan of `idle`
    idle_bits: Vec<u64>,
    clock: FairClock,
    /// vCPUs held by limits, over all limiters
    held_count: usize,
    /// an empty held list with room, swapped in for the list `release_held` releases
    held_spare: Vec<u32>,
    seq: u64,
    core_mhz: u64,
    /// per VM: its vCPUs, and its co-scheduling state (used where its vCPUs are `cosched`)
    gangs: Vec<Siblings>,
    /// per vCPU (kept for co-scheduled ones): its progress as a VM's look reads it, rewritten
    /// when its state's [`PACE_CLASS`] changes (`repace`)
    paces: Vec<Pace>,
    /// per VM: its vCPUs' paces folded (`cosched::Pace::fold`), kept as they change, so that a
    /// look at the VM reads one entry whatever its width
    vm_paces: Vec<Pace>,
    /// bit set of VMs whose siblings' progress changed, to look at before the scheduler returns
    /// (`settle_cosched`), and whether any bit is set
    dirty: Vec<u64>,
    any_dirty: bool,
    /// per VM: its vCPUs waited for CPU over the last entitlement interval and are short of their
    /// entitlement, on `short_balance`, by more than `short_margin` of an interval's
    /// (`update_demand`)
    short: Vec<bool>,
    /// per VM: what its vCPUs were entitled to less what they ran (fractions of an interval,
    /// summed over its vCPUs), carried from interval to interval while they wait for CPU (reset
    /// in an interval they did not), at most one interval's entitlement either way
    /// (`update_demand`; the module's header says why)
    short_balance: Vec<f64>,
    /// scratch of `even_debts`: (virtual debt, vCPU) of the debtors it may move
    debt_order: Vec<(f64, u32)>,
    /// per VM: `short`, and some vCPU of it waited and never halted over the last interval, so
    /// it has no slack left to make a preemption up in: shielded from every waker not entitled
    /// to a whole pCPU (`set_weights`; the module's header says why)
    spent: Vec<bool>,
    /// per VM: over the last entitlement interval its vCPUs waited for CPU and together ran
    /// less than their entitlement (no margin: read only with `VcpuShare::held`)
    under: Vec<bool>,
    /// per VM: its entitlement was below what it wants at the last entitlement update
    /// (`VcpuShare::held`); read by the demand estimate (`update_demand`)
    held_back: Vec<bool>,
    /// per VM: held at its reservation floor since the last entitlement update, and its share
    /// then (`VcpuShare::at_floor`, `share`; the flag is not set at an update that had a
    /// power-on guess among its demands)
    at_floor: Vec<(bool, f64)>,
    /// some VM's `at_floor` flag is set
    any_at_floor: bool,
    /// per vCPU: its demand was measured for the first time at this entitlement update
    /// (`update_demand` sets it, `set_weights` reads and clears it: a start-up debt)
    first_measured: Vec<bool>,
    /// per vCPU, its drain epochs (`update_demand`'s reading of a queue served at its rate)
    drains: Vec<Drain>,
    /// the vCPUs of the VMs held back at an entitlement per vCPU below that of a vCPU at its
    /// VM's limit (`lendee`), as of the last entitlement update, or 0 if there is none: only
    /// while fewer vCPUs than that are queued can a popped or stopped vCPU take a gap it is not
    /// owed, and only then does a dispatch look for a loan before its pick (`gap_unowed`)
    lend_width: usize,
    /// per VM: held back at an entitlement per vCPU below that of a vCPU at its VM's limit, as
    /// of the last entitlement update (a VM that may leave such a vCPU a gap, `gap_unowed`)
    lendee: Vec<bool>,
    /// run-queue entries of vCPUs of `lendee` VMs (`Vcpu::lendee`), kept at every enqueue and
    /// pop and counted afresh when the flags change: with every queued vCPU of such a VM, no
    /// other VM's vCPU is owed a gap (`gap_unowed`), so that rule walks the queues only then
    queued_lendee: usize,
    /// `gap_unowed`'s answers checked against a walk (`check_gap_unowed`)
    #[cfg(test)]
    gap_checks: std::cell::Cell<u64>,
    /// per VM held at its floor since the last update: what `set_weights` adds to each of its
    /// vCPUs' lags to bring their sum to the reservation's balance (`floor_balances`)
    floor_shift: Vec<f64>,
    /// per vCPU of a VM held at its floor: its lag (CPU ns) and run time (ns) at the last
    /// entitlement update, where its reservation's balance starts (`set_weights`)
    floor_marks: Vec<(f64, u64)>,
    /// per vCPU, the most debt (CPU ns) the update in progress leaves it (`set_weights`):
    /// `max_debt_ns`, or `max_backlog_debt_ns` for a backlogged vCPU of a held-back VM
    debt_bound: Vec<f64>,
    /// when `set_weights` last ran
    weights_at: Time,
    /// per VM, `update_demand`'s sums over its vCPUs
    served: Vec<Served>,
    /// per VM: held back since it last was not, some vCPU of it read a backlog (waited and never
    /// halted in an interval); `update_demand`'s stale-estimate check
    backlogged: Vec<bool>,
    /// per VM, its vCPUs' demand estimates (`Vcpu::demand`, pCPUs) summed in vCPU order, as of
    /// the last demand walk, which alone changes them: the entitlement update's claims read
    /// this dense array, not the last line of every vCPU's record
    vm_demand: Vec<f64>,
    /// debug builds: `relaxed-4x` VMs left unmarked by a start, stop or wake, to check at the
    /// look (`check_unlooked`)
    #[cfg(debug_assertions)]
    unlooked: Vec<u64>,
    /// VMs co-stopped as a whole and waiting for a gang co-start (`strict`, `relaxed-3x`)
    waiting: Vec<u32>,
    /// `relaxed-3x` VMs whose gang co-started while their co-stop lasts (`Siblings::holding`)
    holding: Vec<u32>,
    /// an empty list with room, swapped in for a VM's co-stopped vCPUs while `settle_dirty`
    /// goes through them (so the ones kept co-stopped are pushed without allocating)
    spare_stopped: Vec<u32>,
    /// NUMA node of each pCPU, densely numbered from 0
    node_of: Vec<u32>,
    /// pCPUs of node `n` are `node_range[n]..node_range[n + 1]`
    node_range: Vec<usize>,
    /// per LLC, the run-queue tree node holding exactly its queues (0: scan them)
    llc_sub: Vec<usize>,
    /// per pCPU, its LLC and node as the dispatch path reads them (`PcpuTopo`)
    topo: Vec<PcpuTopo>,
    /// the scheduler's cost of a move, as ns of the vCPU's CPU time, by distance: none, another
    /// core of the LLC, another LLC of the node, another node (`CpuSchedParams::migrate_cost_*`)
    move_cost: [f64; 4],
    /// by the same distances, how long a READY vCPU waits for its cache before a free pCPU
    /// elsewhere pulls it, in ns (`move_cost` x `migrate_wait_factor`)
    move_wait: [Time; 4],
    /// the earliest moment a vCPU the pick just passed over (too fresh to pull, `move_wait`)
    /// may be pulled: a pCPU left idle by it looks again then. Written from `move_score`, which
    /// takes `&self`; an atomic (relaxed: one thread) rather than a `Cell`, which would make the
    /// scheduler, and the Python module's `Simulation`, not `Sync`
    recheck: Recheck,
    /// some `move_wait` beyond the pCPU's own is above 0: dispatches may decline (`pick`)
    waits: bool,
    /// pulls weigh distance (costs, throttling, LLC and node tiers); off, a pCPU takes the
    /// lowest key on the host, as before locality was modelled
    local_pull: bool,
    /// the quantum and the shortest slice, for `weighted_slice`
    slice_range: SliceRange,
    /// the limit parameters every bucket's tests read, as floats (`limit.rs`)
    bucket_rules: BucketRules,
    /// per pCPU, busy ns at the last load-share update
    busy_mark: Vec<u64>,
    /// per VM, its home node or NONE
    vm_home: Vec<u32>,
    /// per node, vCPUs of powered-on VMs homed on it (what NUMA placement balances; kept so
    /// that a power-on does not scan every vCPU: building 10,000 VMs was quadratic)
    node_vcpus: Vec<usize>,
    /// when the NUMA balancer last ran
    last_rebalance: Time,
    /// extended fairness: per VM, co-runners summed over entitlement updates; when it last
    /// chose; the (crowded, favoured) running vCPUs to swap at the next slice end of either
    crowd: Vec<f64>,
    last_fairness: Time,
    fair_pair: Option<(u32, u32)>,
    /// hyperthreading state (`sched/ht.rs`)
    ht: ht::Ht,
    /// scheduler cells and LLC preferences (`cells.rs`), set by `apply_placement`
    cells: Cells,
    /// cache warmth across returns (`cpu/cache.rs`), counted only while the execution-speed
    /// model runs with `resume_refill`
    warmth: Option<Box<CacheWarmth>>,
}

impl CpuSched {
    /// A scheduler for `topo` with VMs of the given vCPU counts, all powered off. It schedules
    /// on every thread with `hyperthreading` on and two threads per core, else on one per core.
    pub fn new(topo: &Topology, params: CpuSchedParams, vcpus_per_vm: &[u32]) -> Self {
        let ht_on = params.hyperthreading && topo.threads_per_core == 2;
        let cores: Vec<_> = topo.pcpus.iter().filter(|p| ht_on || p.thread == 0).copied().collect();
        let n = cores.len();
        let mut vcpus = Vec::new();
        for (vm, &k) in vcpus_per_vm.iter().enumerate() {
            for _ in 0..k {
                vcpus.push(Vcpu {
                    vm: vm as u32,
                    state: VcpuState::Off,
                    since: 0,
                    ready_at: 0,
                    time_ns: [0; STATES],
                    used_ns: 0,
                    key: 0.0,
                    weight: 1.0,
                    inv_weight: 1.0,
                    alloc: 0.0,
                    guard: f64::NEG_INFINITY,
                    shield: f64::NEG_INFINITY,
                    // spread first placements round-robin over the host
                    pcpu: (vcpus.len() % n) as u32,
                    work_left: 0,
                    demand: 1.0,
                    runnable_mark: 0,
                    ran_mark: 0,
                    ready_mark: 0,
                    demand_since: 0,
                    demand_measured: false,
                    busy: false,
                    at_limit: false,
                    passes_on: false,
                    lendee: false,
                    migrations: 0,
                    llc_migrations: 0,
                    node_migrations: 0,
                    // weight 1 is the heaviest at first: the quantum (`set_weights` keeps it)
                    slice: params.quantum_ns,
                    home: NONE,
                    load_share: 0.0,
                    run_mark: 0,
                    limited: false,
                    marks: k > 1 && !matches!(params.cosched_mode, CoschedMode::Off | CoschedMode::Relaxed4x),
                    cosched: k > 1 && params.cosched_mode != CoschedMode::Off,
                    stale: 0,
                });
            }
        }
        let n_vcpus = vcpus.len();
        let (llc_range, llc_of) = groups(&cores, |c| c.llc);
        let (node_range, node_of) = groups(&cores, |c| c.node);
        let node_count = node_range.len() - 1;
        let queues = QueueSet::new(n);
        let llc_sub: Vec<usize> = llc_range.windows(2).map(|w| queues.subtree(w[0], w[1])).collect();
        let node_sub: Vec<usize> = node_range.windows(2).map(|w| queues.subtree(w[0], w[1])).collect();
        let pcpu_topo: Vec<PcpuTopo> = (0..n)
            .map(|p| {
                let (l, m) = (llc_of[p] as usize, node_of[p] as usize);
                PcpuTopo {
                    llc_lo: llc_range[l] as u32,
                    llc_n: (llc_range[l + 1] - llc_range[l]) as u32,
                    node_lo: node_range[m] as u32,
                    node_n: (node_range[m + 1] - node_range[m]) as u32,
                    llc: l as u32,
                    node: m as u32,
                    llc_sub: llc_sub[l] as u32,
                    node_sub: node_sub[m] as u32,
                }
            })
            .collect();
        let move_cost = [
            0.0,
            params.migrate_cost_core_ns as f64,
            if params.llc_aware { params.migrate_cost_llc_ns } else { params.migrate_cost_core_ns } as f64,
            params.migrate_cost_node_ns as f64,
        ];
        let move_wait = move_cost.map(|c| (c * params.migrate_wait_factor).round() as Time);
        let local_pull = params.numa_home_nodes || params.migration_throttle || move_cost.iter().any(|&c| c > 0.0);
        CpuSched {
            vcpus,
            limiters: vec![Limiter::default(); vcpus_per_vm.len()],
            chains: (0..vcpus_per_vm.len() as u32).map(|vm| vec![vm]).collect(),
            limits_set: false,
            dormant_gen: 0,
            pool_vms: Vec::new(),
            pool_sums: Vec::new(),
            stats: SchedStats::default(),
            pcpus: vec![Pcpu { running: NONE, run_guard: f64::NEG_INFINITY, ..Pcpu::default() }; n],
            queues,
            llc_of,
            llc_range,
            idle: vec![true; n],
            idle_count: n,
            idle_bits: (0..n.div_ceil(64)).map(|w| if 64 * (w + 1) <= n { u64::MAX } else { (1u64 << (n % 64)) - 1 }).collect(),
            clock: FairClock::default(),
            held_count: 0,
            held_spare: Vec::new(),
            seq: 0,
            core_mhz: topo.core_mhz,
            gangs: vcpus_per_vm
                .iter()
                .scan(0u32, |first, &n| {
                    let g = Siblings {
                        first: *first,
                        n,
                        timer_at: Time::MAX,
                        stopped_least: Time::MAX,
                        skew: super::cosched::CumulativeSkew::new(n as usize),
                        prog: vec![false; n as usize],
                        ..Siblings::default()
                    };
                    *first += n;
                    Some(g)
                })
                .collect(),
            // powered off: still, at no progress
            paces: vec![Pace::new(0, 0, false, false); n_vcpus],
            vm_paces: vec![Pace::new(0, 0, false, false); vcpus_per_vm.len()],
            dirty: vec![0; vcpus_per_vm.len().div_ceil(64)],
            any_dirty: false,
            short: vec![false; vcpus_per_vm.len()],
            short_balance: vec![0.0; vcpus_per_vm.len()],
            debt_order: Vec::new(),
            spent: vec![false; vcpus_per_vm.len()],
            under: vec![false; vcpus_per_vm.len()],
            held_back: vec![false; vcpus_per_vm.len()],
            at_floor: vec![(false, 0.0); vcpus_per_vm.len()],
            any_at_floor: false,
            first_measured: vec![false; n_vcpus],
            drains: vec![Drain::default(); n_vcpus],
            lend_width: 0,
            lendee: vec![false; vcpus_per_vm.len()],
            queued_lendee: 0,
            #[cfg(test)]
            gap_checks: std::cell::Cell::new(0),
            floor_shift: vec![0.0; vcpus_per_vm.len()],
            floor_marks: vec![(0.0, 0); n_vcpus],
            debt_bound: vec![params.max_debt_ns as f64; n_vcpus],
            weights_at: 0,
            served: vec![Served::default(); vcpus_per_vm.len()],
            backlogged: vec![false; vcpus_per_vm.len()],
            // every vCPU's estimate starts at a whole pCPU (`Vcpu::demand`)
            vm_demand: vcpus_per_vm.iter().map(|&n| f64::from(n)).collect(),
            #[cfg(debug_assertions)]
            unlooked: vec![0; vcpus_per_vm.len().div_ceil(64)],
            waiting: Vec::new(),
            holding: Vec::new(),
            spare_stopped: Vec::new(),
            node_of,
            node_range,
            llc_sub,
            topo: pcpu_topo,
            move_cost,
            move_wait,
            recheck: Recheck(std::sync::atomic::AtomicU64::new(Time::MAX)),
            waits: move_wait[1..].iter().any(|&w| w > 0),
            local_pull,
            slice_range: SliceRange::new(params.quantum_ns),
            bucket_rules: BucketRules::new(&params),
            busy_mark: vec![0; n],
            vm_home: vec![NONE; vcpus_per_vm.len()],
            node_vcpus: vec![0; node_count],
            last_rebalance: 0,
            crowd: vec![0.0; vcpus_per_vm.len()],
            last_fairness: 0,
            fair_pair: None,
            ht: ht::Ht::new(ht_on, n, crate::hw::thread_speed(params.ht_core_gain), params.ht_used_charge, vcpus_per_vm),
            cells: Cells::default(),
            warmth: None,
            params,
        }
    }

    /// Timer slots the event queue needs: one per pCPU, for its slice (slot = pCPU index), and
    /// with co-scheduling one per VM after them, for its co-stop timer (`cosched_slot`).
    pub fn timer_slots(&self) -> usize {
        self.pcpus.len() + if self.params.cosched_mode == CoschedMode::Off { 0 } else { self.gangs.len() }
    }

    /// The timer slot of VM `vm`'s co-stop timer: re-armed and cancelled in place, so a timer
    /// that a later look moves never fires as a stale event.
    #[inline]
    fn cosched_slot(&self, vm: u32) -> u32 {
        self.pcpus.len() as u32 + vm
    }

    /// Count cache warmth across returns from now on (`cpu/cache.rs`): the execution-speed
    /// model sets it up before any VM is powered on.
    pub fn set_warmth(&mut self, w: CacheWarmth) {
        self.warmth = Some(Box::new(w));
    }

    /// The cache warmth counts, when they are kept.
    pub fn warmth(&self) -> Option<&CacheWarmth> {
        self.warmth.as_deref()
    }

    /// Number of pCPUs.
    pub fn pcpu_count(&self) -> usize {
        self.pcpus.len()
    }

    /// Cumulative ns pCPU `pcpu` has spent running vCPUs, up to `now` (the slice in progress
    /// included).
    pub fn pcpu_busy_ns(&self, pcpu: u32, now: Time) -> u64 {
        let pc = &self.pcpus[pcpu as usize];
        pc.busy_ns + if pc.running != NONE { now - pc.slice_start } else { 0 }
    }

    /// The vCPU running on `pcpu`, or [`NONE`].
    pub fn running_on(&self, pcpu: u32) -> u32 {
        self.pcpus[pcpu as usize].running
    }

    /// Move `v` to `state`, accumulating the time spent in the old one, and keep the fair clock
    /// and the limiters' active weights in step. A running vCPU must be stopped (charged) before
    /// it leaves RUN. Always inlined: callers pass a constant state, which folds its branches
    /// (about 4% of bench-64vm's instructions as a call).
    #[inline(always)]
    fn set_state(&mut self, v: u32, now: Time, state: VcpuState) {
        let vc = &mut self.vcpus[v as usize];
        let old = vc.state;
        let dt = now - vc.since;
        vc.time_ns[old as usize] += dt;
        if old == VcpuState::Run {
            vc.used_ns += dt;
        }
        vc.since = now;
        vc.state = state;
        if state == VcpuState::Ready && old != VcpuState::Ready {
            vc.ready_at = now;
        }
        if vc.cosched && PACE_CLASS[old as usize] != PACE_CLASS[state as usize] {
            self.repace(v, now);
        }
        let vc = &self.vcpus[v as usize];
        let (w, key, vm, a, limited) = (vc.weight, vc.key, vc.vm as usize, vc.bucket_part(), vc.limited);
        let (was, is) = (IN_CLOCK[old as usize], IN_CLOCK[state as usize]);
        if was != is {
            if is {
                self.clock.join(w, key);
            } else {
                self.clock.leave(w, key);
            }
        }
        // the state test first: it is constant for most callers (RUN from READY), where
        // `limited` is a coin toss
        if ACTIVE[old as usize] != ACTIVE[state as usize] && limited {
            let up = ACTIVE[state as usize];
            for &l in &self.chains[vm] {
                let lim = &mut self.limiters[l as usize];
                if up {
                    lim.active_alloc += a;
                    lim.active_n += 1;
                } else {
                    lim.active_alloc -= a;
                    lim.active_n -= 1;
                }
                if let Some(b) = &mut lim.bucket {
                    b.set_active(lim.active_n, &self.bucket_rules);
                }
            }
        }
    }

    /// Co-scheduled `v` changed [`PACE_CLASS`] at `now`: rewrite its pace, and its VM's fold
    /// in place, or again over the VM's vCPUs when `v` gave up an extreme. Under `relaxed-4x`
    /// the VM is marked for a look only when its fold moved (see `settle_dirty`).
    #[inline(never)]
    fn repace(&mut self, v: u32, now: Time) {
        let vc = &self.vcpus[v as usize];
        let new = Pace::new(vc.progress_ns(now), now, PROGRESS[vc.state as usize], vc.state == VcpuState::Run);
        let old = std::mem::replace(&mut self.paces[v as usize], new);
        let vm = vc.vm;
        let before = self.vm_paces[vm as usize];
        if !Pace::replace(&mut self.vm_paces[vm as usize], old, new) {
            self.vm_paces[vm as usize] = Pace::fold(&self.paces[self.vcpus_of(vm)]);
        }
        if self.params.cosched_mode == CoschedMode::Relaxed4x && self.vm_paces[vm as usize] != before {
            self.mark_dirty(vm);
        }
    }

    /// Place a vCPU that is about to become runnable owed at most `max_lag_ns` of CPU time by
    /// the fair clock and owing at most `max_debt_ns`, the bounds of every update's clamp:
    /// waiting or idling banks no more credit than that. Debt is not forgiven down to
    /// `max_lag_ns` here: a limit-bound VM is released every few ms, and each release that did
    /// so let a VM limited above its entitlement (75 shares, 8 vCPUs) run its whole limit, 18.5
    /// points of a pCPU over max-min, out of a busy VM held below its own entitlement, which
    /// sat further in debt than the release (docs/cpu-scheduler.md). A waking
    /// vCPU keeps the key it halted with, so what the clock moved while it slept is its credit
    /// (less any debt it halted with); why the lag at the halt is not kept instead is in
    /// `clock.rs` (measured: it queues every burst of a VM under its share). A vCPU
    /// released by a limit (`from_hold`) is placed owed at most half as much: it was held by its
    /// own limit, not idle, so it runs ahead of vCPUs that have had their share (and shows its
    /// waiting as MLMTD rather than READY) but behind VMs waking from real idleness. A VM whose
    /// entitlement is its own limit (`at_limit`) is owed as a sleeper: the limit only paces it
    /// at its entitlement, so its time held is time it was not entitled to run. At half, such a
    /// VM queued READY behind vCPUs near their credit bound while its bucket dropped tokens
    /// (29.05 of 29.70 points; docs/cpu-scheduler.md). Not at a share of a pool limit, which
    /// binds only while the pool's bucket is scarce (`limit.rs`); counted, it broke a census
    /// scenario.
    #[inline]
    fn place_key(&mut self, v: u32, now: Time, from_hold: bool) {
        let clock = self.clock.value(now);
        let vc = &mut self.vcpus[v as usize];
        // through i64 (`ns_f`): one instruction, where u64 takes several, at every placement;
        // the same value below 2^63 ns (292 years), as for `wake_preempt_margin_ns` in `victim`
        let reach = ns_f(self.params.max_lag_ns) * vc.inv_weight;
        let credit = if from_hold && !vc.at_limit { 0.5 * reach } else { reach };
        vc.key = vc.key.clamp(clock - credit, clock + ns_f(self.params.max_debt_ns) * vc.inv_weight);
    }

    /// [`Self::account_all`] for a caller that visits every vCPU anyway (the sampler): settles
    /// the hyperthreads' charges and returns the vCPUs, each to be brought to `now` with
    /// [`Vcpu::accrue`] as it is visited, in one walk over the records instead of two.
    pub(crate) fn vcpus_to_account(&mut self, now: Time) -> &mut [Vcpu] {
        if self.ht.on {
            self.ht_settle_all(now);
        }
        &mut self.vcpus
    }

    /// Bring every vCPU's counters up to `now` without changing any state (for sampling).
    pub fn account_all(&mut self, now: Time) {
        if self.ht.on {
            self.ht_settle_all(now);
        }
        for vc in &mut self.vcpus {
            vc.accrue(now);
        }
    }

    /// Power on VM `vm`'s vCPUs: they start halted (WAIT_IDLE), at the fair clock, and with
    /// NUMA home nodes on, on the least loaded node that has room for the VM (see
    /// [`Self::numa_clients_for`]).
    pub fn power_on(&mut self, vm: u32, now: Time) {
        let clock = self.clock.value(now);
        let vcpus = self.vcpus_of(vm);
        let clients = if self.cells.on { self.cell_power_on(vm) } else { self.numa_clients_for(vm) };
        if clients.len() == 1 {
            self.set_home(vm, clients[0].0);
        }
        let mut at = vcpus.start;
        for &(n, size) in &clients {
            // each client starts on its home node, spread by VM number within it
            let (lo, hi) = (self.node_range[n as usize], self.node_range[n as usize + 1]);
            for (i, vc) in self.vcpus[at..at + size as usize].iter_mut().enumerate() {
                vc.home = n;
                vc.pcpu = (lo + (vm as usize + i) % (hi - lo)) as u32;
            }
            at += size as usize;
        }
        for (vc, pace) in self.vcpus[vcpus.clone()].iter_mut().zip(&mut self.paces[vcpus.clone()]) {
            vc.time_ns[VcpuState::Off as usize] += now - vc.since;
            vc.since = now;
            vc.state = VcpuState::Idle;
            *pace = Pace::new(vc.progress_ns(now), now, true, false);
            vc.key = clock;
            vc.runnable_mark = vc.runnable_ns();
            vc.ran_mark = vc.time_ns[VcpuState::Run as usize];
            vc.ready_mark = vc.time_ns[VcpuState::Ready as usize];
            vc.demand_since = now;
            if vc.home != NONE {
                self.node_vcpus[vc.home as usize] += 1;
            }
        }
        self.vm_paces[vm as usize] = Pace::fold(&self.paces[vcpus]);
    }

    /// VM `vm`'s NUMA clients at power-on, as (home node, vCPUs), in vCPU order; none when
    /// NUMA home nodes are off, the host has one node, or the VM is wide and wide-VM support is
    /// off (ESX 4.0: not NUMA-managed, research/cpu.md C26).
    ///
    /// A client holds at most the cores of a node, or `numa_vcpu_max_per_machine_node` vCPUs
    /// if that is set and smaller; a VM needs `ceil(vcpus / that)` clients, of sizes as even as
    /// possible (6 vCPUs on 4-core nodes: 3 + 3). Each client goes to the node whose cores carry
    /// the fewest vCPUs of NUMA-managed VMs, not already used by the VM while another is free
    /// (lowest-numbered on ties). A VM of one client has that home node.
    fn numa_clients_for(&self, vm: u32) -> Vec<(u32, u32)> {
        let nodes = self.node_range.len() - 1;
        let n = self.gangs[vm as usize].n;
        if !self.params.numa_home_nodes || nodes < 2 || n == 0 {
            return vec![];
        }
        let cores = |i: usize| self.node_range[i + 1] - self.node_range[i];
        let node_cores = (0..nodes).map(cores).min().expect("nodes") as u32;
        if !self.params.numa_wide_vms {
            // ESX 4.0: a VM that fits a node has one home; a wider one is not NUMA-managed
            return if n <= node_cores { vec![(self.least_loaded_node(), n)] } else { vec![] };
        }
        let cap = match self.params.numa_vcpu_max_per_machine_node {
            0 => node_cores,
            m => m.min(node_cores),
        };
        let k = n.div_ceil(cap);
        let mut load = self.node_vcpus.clone();
        let mut used = vec![false; nodes];
        let mut out = Vec::with_capacity(k as usize);
        for c in 0..k {
            // sizes as even as possible: the first n % k clients get one more
            let size = n / k + u32::from(c < n % k);
            let fresh = used.iter().any(|u| !u);
            let home = (0..nodes)
                .filter(|&i| !(fresh && used[i]))
                .min_by(|&a, &b| (load[a] * cores(b)).cmp(&(load[b] * cores(a))).then(a.cmp(&b)))
                .expect("a node");
            used[home] = true;
            load[home] += size as usize;
            out.push((home as u32, size));
        }
        out
    }

    /// The node whose cores carry the fewest vCPUs of NUMA-managed VMs (lowest on ties).
    fn least_loaded_node(&self) -> u32 {
        let nodes = self.node_range.len() - 1;
        let cores = |i: usize| self.node_range[i + 1] - self.node_range[i];
        let load = &self.node_vcpus;
        (0..nodes).min_by(|&a, &b| (load[a] * cores(b)).cmp(&(load[b] * cores(a))).then(a.cmp(&b))).expect("a node") as u32
    }

    /// The NUMA clients of VM `vm`: the home node of each vCPU, in order ([`NONE`] for a VM
    /// that is not NUMA-managed).
    pub fn homes_of(&self, vm: u32) -> Vec<u32> {
        self.vcpus[self.vcpus_of(vm)].iter().map(|vc| vc.home).collect()
    }

    /// The share of VM `vm`'s memory accesses that are local under a uniform access pattern,
    /// as research/cpu.md A7 computes it: memory is placed on the VM's home node, or interleaved
    /// over its clients' home nodes (a wide VM: `1 / distinct homes`), or over every node when
    /// the VM is not NUMA-managed (`1 / nodes`).
    pub fn local_memory_fraction(&self, vm: u32) -> f64 {
        let mut homes = self.homes_of(vm);
        homes.sort_unstable();
        homes.dedup();
        match homes.as_slice() {
            [NONE] | [] => 1.0 / (self.node_range.len() - 1) as f64,
            h => 1.0 / h.len() as f64,
        }
    }

    fn set_home(&mut self, vm: u32, node: u32) {
        self.vm_home[vm as usize] = node;
        let vcpus = self.vcpus_of(vm);
        for vc in &mut self.vcpus[vcpus] {
            if vc.state != VcpuState::Off {
                if vc.home != NONE {
                    self.node_vcpus[vc.home as usize] -= 1;
                }
                self.node_vcpus[node as usize] += 1;
            }
            vc.home = node;
        }
    }

    /// VM `vm`'s NUMA home node, or [`NONE`].
    pub fn home_of(&self, vm: u32) -> u32 {
        self.vm_home[vm as usize]
    }

    /// The NUMA balancer (research/cpu.md A6.1): compare the nodes' loads, the summed demand
    /// estimates of the vCPUs homed on each per core, and when the most loaded exceeds the least
    /// loaded by more than `numa_rebalance_imbalance`, move the home of the VM whose move
    /// narrows the gap most (and only if it narrows it) to the least loaded node. One move per
    /// period, so homes move gradually; the vCPUs follow as they wake and are pulled (a move
    /// onto the new home costs nothing, staying away from it costs a node move).
    fn rebalance_numa(&mut self) {
        let nodes = self.node_range.len() - 1;
        if nodes < 2 || self.cells.on {
            // with cells, a VM's home is its cell's node: the cell balancer moves it
            return;
        }
        let cores: Vec<f64> = (0..nodes).map(|i| (self.node_range[i + 1] - self.node_range[i]) as f64).collect();
        let mut demand = vec![0.0; self.vm_home.len()];
        for vc in &self.vcpus {
            if vc.state != VcpuState::Off {
                demand[vc.vm as usize] += vc.demand;
            }
        }
        let mut load = vec![0.0; nodes];
        for (vm, &h) in self.vm_home.iter().enumerate() {
            if h != NONE {
                load[h as usize] += demand[vm];
            }
        }
        let per_core = |i: usize, l: &[f64]| l[i] / cores[i];
        let hi = (0..nodes).max_by(|&a, &b| per_core(a, &load).total_cmp(&per_core(b, &load)).then(b.cmp(&a))).expect("nodes");
        let lo = (0..nodes).min_by(|&a, &b| per_core(a, &load).total_cmp(&per_core(b, &load)).then(a.cmp(&b))).expect("nodes");
        let gap = per_core(hi, &load) - per_core(lo, &load);
        if gap <= self.params.numa_rebalance_imbalance {
            return;
        }
        let mut best: Option<(f64, usize)> = None;
        for (vm, &h) in self.vm_home.iter().enumerate() {
            let fits = self.gangs[vm].n as f64 <= cores[lo];
            if h as usize != hi || demand[vm] <= 0.0 || !fits {
                continue;
            }
            let after = ((load[hi] - demand[vm]) / cores[hi] - (load[lo] + demand[vm]) / cores[lo]).abs();
            if after < gap && best.is_none_or(|(b, _)| after < b) {
                best = Some((after, vm));
            }
        }
        if let Some((_, vm)) = best {
            self.set_home(vm as u32, lo as u32);
            self.stats.numa_moves += 1;
        }
    }

    /// Set (or clear) the CPU limit of the VM `vm`.
    pub fn set_limit(&mut self, vm: u32, limit_mhz: Option<u64>, now: Time, q: &mut EventQueue) {
        // a VM below a limited pool is always tracked; only its own limiter's weight can be new
        let limited = limit_mhz.is_some() || self.chains[vm as usize].len() > 1;
        let vcpus = self.vcpus_of(vm);
        for vc in &mut self.vcpus[vcpus.clone()] {
            vc.limited = limited;
        }
        let active = self.vcpus[vcpus].iter().filter(|c| limited && ACTIVE[c.state as usize]);
        let (a, n) = active.fold((0.0, 0), |(a, n), c| (a + c.bucket_part(), n + 1));
        let s = &mut self.limiters[vm as usize];
        s.active_alloc = a;
        s.active_n = n;
        s.user_mhz = limit_mhz.map(|l| l as f64);
        let effective = min_limit(s.user_mhz, s.share_mhz);
        let (core, rules) = (self.core_mhz, self.bucket_rules);
        s.bucket = effective.map(|l| TokenBucket::new(l, core, &rules, now));
        // the own limit apart while the share is tighter (`set_share_limit`)
        s.user = match (s.user_mhz, s.share_mhz) {
            (Some(u), Some(sh)) if sh < u => Some(TokenBucket::new(u, core, &rules, now)),
            _ => None,
        };
        self.limits_set |= limited || effective.is_some();
        for b in s.bucket.iter_mut().chain(s.user.iter_mut()) {
            b.set_active(n, &rules);
        }
        self.refresh_solo(vm);
        // a pending refill belongs to the old bucket
        self.cancel_refill(vm, now, q);
    }

    /// Whether VM `vm`'s own limiter is the only bucket binding it (`Limiter::solo`): one
    /// vCPU, a bucket of its own, no share of a pool limit and no pool bucket awake above it.
    /// Looked at wherever one of those changes: its limit or share (`set_limit`,
    /// `set_share_limit`), a pool limit added above it, or a pool above it falling asleep or
    /// waking (`relimit_below`, `wake_limiter`).
    fn refresh_solo(&mut self, vm: u32) {
        let own = &self.limiters[vm as usize];
        let solo = self.gangs[vm as usize].n == 1
            && own.bucket.is_some()
            && own.user.is_none()
            && own.share_mhz.is_none()
            && self.chains[vm as usize][1..].iter().all(|&l| self.limiters[l as usize].bucket.is_none());
        self.limiters[vm as usize].solo = solo;
    }

    /// Cancel limiter `l`'s pending refill (timed for a bucket or rate that is gone) and release
    /// the vCPUs it held; any still throttled are held again against the bucket as it is now.
    fn cancel_refill(&mut self, l: u32, now: Time, q: &mut EventQueue) {
        let s = &mut self.limiters[l as usize];
        s.refill_gen = s.refill_gen.wrapping_add(1);
        s.refill_pending = false;
        self.release_held(l, now, q);
        self.settle_cosched(now, q);
    }

    /// Set (or clear) VM `vm`'s share of a binding pool limit above it, in MHz: its entitlement
    /// share of the pool's allocation at the pool's water level (`entitlement.rs`). Enforced in
    /// the VM's own bucket beside its own limit, so that the children of a limited pool split
    /// the limit by their shares and reservations however many pCPUs they run on at once (the
    /// pool's own bucket only caps their sum). It binds only while a pool bucket above the VM is
    /// scarce (`share_yields`).
    pub fn set_share_limit(&mut self, vm: u32, share_mhz: Option<f64>, now: Time, q: &mut EventQueue) {
        let s = &mut self.limiters[vm as usize];
        let before = min_limit(s.user_mhz, s.share_mhz);
        s.share_mhz = share_mhz;
        let after = min_limit(s.user_mhz, s.share_mhz);
        // the own limit's bucket apart while the share is tighter: taken from the bucket as it
        // stood when the share became the tighter (it was tracking the own limit), handed back
        // when the own limit is the tighter again
        let share_binds = matches!((s.user_mhz, share_mhz), (Some(u), Some(sh)) if sh < u);
        match (share_binds, s.user.is_some()) {
            (true, false) => {
                let mut u = s.bucket.clone().expect("a VM with its own limit has a bucket");
                u.refill(now);
                s.user = Some(u);
            }
            (false, true) => {
                let mut u = s.user.take().expect("checked");
                u.refill(now);
                u.set_active(s.active_n, &self.bucket_rules);
                s.bucket = Some(u);
            }
            _ => {}
        }
        match (before, after) {
            (Some(b), Some(a)) if (a - b).abs() <= 1e-9 * b => {}
            (Some(_), Some(a)) => {
                let (core, rules, n) = (self.core_mhz, self.bucket_rules, s.active_n);
                s.bucket.as_mut().expect("a limit has a bucket").set_limit(a, core, &rules, n, now);
                // a pending refill was timed at the old rate (at a share of a few Hz, tens of
                // seconds away), and at a share of 0 none was timed at all (`hold`: its vCPUs
                // wait for the share to change): release what it held, to be held again at the
                // new rate
                if s.refill_pending || !s.held.is_empty() {
                    self.cancel_refill(vm, now, q);
                }
            }
            (None, Some(a)) => {
                let mut b = TokenBucket::new(a, self.core_mhz, &self.bucket_rules, now);
                b.set_active(s.active_n, &self.bucket_rules);
                s.bucket = Some(b);
                self.limits_set = true;
            }
            (Some(_), None) => {
                s.bucket = None;
                self.cancel_refill(vm, now, q);
            }
            (None, None) => {}
        }
        self.refresh_solo(vm);
    }

    /// Add a resource pool's limit, binding `vms` (every VM below the pool); returns its index.
    pub fn add_pool_limit(&mut self, limit_mhz: u64, vms: &[u32]) -> u32 {
        let id = self.limiters.len() as u32;
        let bucket = TokenBucket::new(limit_mhz as f64, self.core_mhz, &self.bucket_rules, 0);
        // called before any VM is powered on, so no vCPU is active yet
        let mut below = vms.to_vec();
        below.sort_unstable();
        let n: usize = vms.iter().map(|&vm| self.vcpus_of(vm).len()).sum();
        let width = n.min(self.pcpus.len()) as f64;
        self.limiters.push(Limiter { bucket: Some(bucket), vms: below, width, ..Limiter::default() });
        self.limits_set = true;
        for &vm in vms {
            self.chains[vm as usize].push(id);
            let vcpus = self.vcpus_of(vm);
            for vc in &mut self.vcpus[vcpus] {
                vc.limited = true;
            }
            self.refresh_solo(vm);
        }
        id
    }

    /// `v` wakes with a burst of `work` ns of CPU to do.
    #[inline(never)]
    pub fn wake(&mut self, v: u32, work: Time, now: Time, q: &mut EventQueue) {
        self.wake_inline(v, work, now, q);
    }

    /// [`Self::wake`], always inlined: into the run loop's wake-up, where the call paid a
    /// prologue and an epilogue that save six registers.
    #[inline(always)]
    pub(crate) fn wake_inline(&mut self, v: u32, work: Time, now: Time, q: &mut EventQueue) {
        let vc = &mut self.vcpus[v as usize];
        debug_assert!(matches!(vc.state, VcpuState::Idle | VcpuState::Wait));
        vc.work_left = work.max(1);
        if vc.cosched {
            self.touched(v, now);
        }
        self.place_key(v, now, false);
        self.set_state(v, now, VcpuState::Ready);
        // `place_with`'s body, inlined: the wake-up is its most frequent caller (bench-mixed:
        // 155,701 of 172,893 placements), and as a call it paid a second prologue, epilogue
        // and the re-reads of `v`'s record a call forces
        self.place_with_inline(v, now, q, f64::NEG_INFINITY);
        self.settle_cosched(now, q);
    }

    /// Find a pCPU for a ready vCPU: an idle one, or a queue plus a possible preemption.
    #[inline]
    fn place(&mut self, v: u32, now: Time, q: &mut EventQueue) {
        self.place_with(v, now, q, f64::NEG_INFINITY);
    }

    /// VMs `a` and `b` are both below a pool limit whose bucket is scarce at `now`: the share
    /// split binds them (`limit.rs`), so each gets the pool's tokens by its share bucket, not
    /// by the fair clock, and a release of one may not preempt the other (`place_with`).
    #[inline]
    fn split_binds(&self, a: u32, b: u32, now: Time) -> bool {
        let pools = &self.chains[b as usize][1..];
        self.chains[a as usize][1..]
            .iter()
            .any(|l| pools.contains(l) && self.limiters[*l as usize].bucket.as_ref().is_some_and(|bk| bk.scarce_at(now, &self.bucket_rules)))
    }

    /// [`Self::victim`] for a release whose pick the share split shields (`split_binds`): the
    /// running vCPU furthest ahead of `v`'s key plus the preemption margin (plus a move's cost
    /// off `last`) and above `floor`, in `last`'s LLC, that `v` may displace (`run_guard`), no
    /// sibling of a co-scheduled `v`, and not bound with `v` by a scarce pool limit; or
    /// [`NONE`]. Cold: releases under a scarce pool limit only.
    #[cold]
    fn victim_outside_split(&self, v: u32, last: u32, now: Time, floor: f64) -> u32 {
        let vc = &self.vcpus[v as usize];
        let key = (vc.key + ns_f(self.params.wake_preempt_margin_ns)).max(floor);
        let far = if self.local_pull { self.move_cost[1] * vc.inv_weight } else { 0.0 };
        let reach = vc.alloc + GUARD_EPS;
        let llc = self.llc_of[last as usize] as usize;
        let mut best = (NONE, 0.0);
        for p in self.llc_range[llc]..self.llc_range[llc + 1] {
            let pc = &self.pcpus[p];
            if (pc.run_guard > reach && pc.run_vm != vc.vm) || (vc.cosched && pc.run_vm == vc.vm) || self.split_binds(vc.vm, pc.run_vm, now) {
                continue;
            }
            let ahead = pc.run_key0 + ns_f(now) * pc.run_inv_weight - if p == last as usize { key } else { key + far };
            if ahead > best.1 {
                best = (p as u32, ahead);
            }
        }
        best.0
    }

    /// [`Self::place`], preempting by keys only a running vCPU whose key is also above `floor`:
    /// `f64::NEG_INFINITY` for a waking vCPU, `f64::INFINITY` for no preemption at all, and the
    /// fair clock for a vCPU a limit releases. A release may then displace only a vCPU that
    /// has had more than its share (negative lag): a busy VM held below its entitlement has no
    /// slack to make preempted time up, and releases are frequent (a limit-bound VM is
    /// released every few ms). Measured on the census's seed 524 (8 pCPUs;
    /// docs/cpu-scheduler.md): with the waker's key alone, two limit-bound VMs' releases
    /// preempted a busy 6-vCPU VM 105,800 times in 60 s and it lost 2.3 points of a pCPU to
    /// a VM limited above its entitlement; without the some 6,200 of those whose victim was
    /// behind the clock, it loses nothing. On one pCPU beside a busy VM (the %MLMTD test) the
    /// other VM is ahead of the clock whenever the keys let the release preempt, so the
    /// release still runs as soon as its bucket allows and its wait shows as MLMTD.
    ///
    /// Nor does a release preempt a vCPU bound with it by a pool limit whose bucket is scarce
    /// (`split_binds`), whatever the keys: there the pool's tokens are split between its
    /// children by their share buckets (`set_share_limit`), a release is timed by the
    /// releaser's share bucket (or the pool's), and a preemption between the two only moves
    /// the pool's CPU from the victim to the releaser, which has just had its share. The fair
    /// clock cannot tell who is under their share here: every waker joins with credit, so a
    /// busy sibling sits in debt to the clock (ahead of it) while it runs under its share.
    /// Seen in the max-min test's draws (docs/cpu-scheduler.md): a 1-vCPU busy VM entitled
    /// to 87.40 points of a pool limit was preempted by its pool siblings' releases for 4.8 s
    /// of 55 and got 83.43; its share bucket, full at the slices' starts, dropped what it
    /// accrued as it ran. The released vCPU takes another victim if one qualifies
    /// (`victim_outside_split`), else queues.
    #[inline(never)]
    fn place_with(&mut self, v: u32, now: Time, q: &mut EventQueue, floor: f64) {
        self.place_with_inline(v, now, q, floor);
    }

    /// [`Self::place_with`], always inlined (into `wake`; the other callers share the call).
    #[inline(always)]
    fn place_with_inline(&mut self, v: u32, now: Time, q: &mut EventQueue, floor: f64) {
        // `costop_if_blocked` and `throttled` with the two flags read once (neither check
        // changes them: they are set with the VM's configuration)
        let (cosched, limited) = (self.vcpus[v as usize].cosched, self.vcpus[v as usize].limited);
        if cosched && self.costop_if_blocked_slow(v, now) {
            return;
        }
        if let Some(l) = if limited { self.throttled_chain(v, now) } else { None } {
            self.hold(v, l, now, q);
            return;
        }
        let last = self.vcpus[v as usize].pcpu;
        if self.idle_count > 0 {
            let target = self.idle_pcpu_near(v, last);
            if target != NONE {
                self.start(target, v, now, q);
                return;
            }
            if self.ht.on {
                // idle threads it may not share a core on (htsharing): the victim scan below
                // expects every pCPU of the LLC busy, so it waits in its queue
                self.enqueue(last, v);
                return;
            }
        }
        if floor == f64::INFINITY {
            self.enqueue(last, v);
            return;
        }
        // preempt the running vCPU furthest ahead in virtual time in the waker's LLC, if far
        // enough ahead (intra-LLC moves are the cheap ones, [WP §3.3]) and if the waker may
        // displace it at all (see `displaceable`). A guarded waker (a whole pCPU, or all it
        // wants on an uncommitted host) also displaces, whatever the keys, a vCPU entitled to
        // less, which has more slack to wait in: the one entitled to least.
        let victim = match (cosched, self.local_pull) {
            (true, true) => self.victim::<true, true>(v, last, now, floor),
            (true, false) => self.victim::<true, false>(v, last, now, floor),
            (false, true) => self.victim::<false, true>(v, last, now, floor),
            (false, false) => self.victim::<false, false>(v, last, now, floor),
        };
        // a release does not take a pCPU from a vCPU the share split shields (`split_binds`):
        // it looks again among the others
        let victim = if victim != NONE && floor > f64::NEG_INFINITY && self.split_binds(self.vcpus[v as usize].vm, self.pcpus[victim as usize].run_vm, now) {
            self.victim_outside_split(v, last, now, floor)
        } else {
            victim
        };
        if victim == NONE {
            self.enqueue_inline(last, v);
            return;
        }
        self.stats.preemptions += 1;
        // the victim's slice timer is re-armed by start() below, not cancelled
        let r = self.stop(victim, now);
        if let Some(l) = self.throttled(r, now) {
            self.hold(r, l, now, q);
        } else if floor == f64::NEG_INFINITY && self.vcpus[r as usize].passes_on && !self.vcpus[r as usize].cosched && self.vcpus[r as usize].key < self.clock.value(now) {
            self.set_state(r, now, VcpuState::Ready);
            self.start(victim, v, now, q);
            self.pass_on(r, victim, now, q);
            return;
        } else {
            self.set_state(r, now, VcpuState::Ready);
            self.enqueue_inline(victim, r);
        }
        self.start_inline(victim, v, now, q);
    }

    /// `r`, just preempted on `last` by a waker (READY, owed CPU by the fair clock, its VM held
    /// back and served under its entitlement: `passes_on`), passes the preemption on: it takes
    /// the pCPU of the running vCPU in `last`'s LLC furthest ahead of the clock and of `r`'s
    /// key plus the preemption margin and a move's cost, among those entitled to less than `r`
    /// that `r` may displace (`run_guard`, no pool split binding the two: `split_binds`), and
    /// queues on `last` if there is none.
    ///
    /// The waker's time should come from a vCPU that has had more than its share and has the
    /// slack to make it up; the waker takes its last pCPU whoever runs there (C21's order), and
    /// a backlogged vCPU entitled to nearly a whole pCPU can make up a preemption only in the
    /// little slack its entitlement leaves: owed by the clock, it is first in every queue, but
    /// it runs at most one pCPU, so its credit grows until the entitlement update's clamp
    /// (`max_lag_ns`) forgives it. Seen in the max-min test's seeded scenarios
    /// (docs/cpu-scheduler.md): on 4 pCPUs a 2-vCPU VM entitled to 0.957 pCPU per vCPU was
    /// preempted by a bursty VM's wakes 125 times a second while not shielded, waited 1.1 ms
    /// each time, and got 96.5% of its entitlement; its credit reached 150-220 ms of CPU at
    /// every update, and a 3-vCPU VM entitled to 0.505 per vCPU, 180 ms in debt, took the
    /// difference. Passed on, the time comes from the vCPU in debt with more slack, and the
    /// clock then evens the two out.
    #[cold]
    #[inline(never)]
    fn pass_on(&mut self, r: u32, last: u32, now: Time, q: &mut EventQueue) {
        let llc = self.llc_of[last as usize] as usize;
        let (lo, hi) = (self.llc_range[llc], self.llc_range[llc + 1]);
        let slackest = self.vcpus[r as usize].alloc - GUARD_EPS;
        // first the least entitlement shown by the other pCPUs of the LLC (a pCPU is open only
        // if it runs a vCPU entitled to less than `slackest`; an idle one's stale entitlement
        // only sends the pass to the scan below): when none is less, no pCPU is open and `r`
        // queues on `last` without the key and the scan (bench-1024vm-1m: 36,534 of 51,783
        // passes end here; 106 find a pCPU). One `minsd` a pCPU, not the scan's tests
        let least = |pcs: &[Pcpu]| pcs.iter().fold(f64::INFINITY, |m, pc| if pc.run_alloc < m { pc.run_alloc } else { m });
        let last = last as usize;
        if !(least(&self.pcpus[lo..last]) < slackest || least(&self.pcpus[last + 1..hi]) < slackest) {
            self.enqueue(last as u32, r);
            return;
        }
        let vc = &self.vcpus[r as usize];
        let key = (vc.key + ns_f(self.params.wake_preempt_margin_ns)).max(self.clock.value(now));
        let far = if self.local_pull { self.move_cost[1] * vc.inv_weight } else { 0.0 };
        let reach = vc.alloc + GUARD_EPS;
        let now_f = ns_f(now);
        let mut best = (NONE, 0.0);
        // the pCPUs either side of `last` (where the waker now runs), in order; the entitlements
        // and the key tested without a branch each, the cell and the pool split only for a pCPU
        // that would win: which pCPUs run a vCPU entitled to less is data (bench-1024vm-1m:
        // 51,365 passes, 100 of which find a pCPU; a branch per test mispredicted 6.4 times a
        // pass in callgrind's branch simulation)
        for (from, pcs) in [(lo, &self.pcpus[lo..last]), (last + 1, &self.pcpus[last + 1..hi])] {
            for (i, pc) in pcs.iter().enumerate() {
                let open = (pc.running != NONE) & !(pc.run_guard > reach) & !(pc.run_alloc >= slackest);
                let ahead = std::hint::select_unpredictable(open, pc.run_key0 + now_f * pc.run_inv_weight - (key + far), f64::NEG_INFINITY);
                let p = (from + i) as u32;
                if ahead > best.1 && !(self.cells.on && !self.in_cell(r, p)) && !self.split_binds(vc.vm, pc.run_vm, now) {
                    best = (p, ahead);
                }
            }
        }
        let target = best.0;
        if target == NONE {
            self.enqueue(last as u32, r);
            return;
        }
        self.stats.preemptions += 1;
        let r2 = self.stop(target, now);
        if let Some(l) = self.throttled(r2, now) {
            self.hold(r2, l, now, q);
        } else {
            self.set_state(r2, now, VcpuState::Ready);
            self.enqueue(target, r2);
        }
        self.start(target, r, now, q);
    }

    /// The pCPU in `last`'s LLC whose running vCPU waking `v` should preempt, or [`NONE`]:
    /// the one furthest ahead in virtual time, if far enough ahead of `v` and above `floor`
    /// (see `place_with`), or for a guarded waker the one entitled to least (see `place`). With `SKIP_SIBLINGS` (a co-scheduled waker) a
    /// sibling's pCPU is never taken: it may be the very sibling whose progress lets the waker
    /// run; the flag is a constant so that VMs without co-scheduling do not pay for the check.
    #[inline(always)]
    fn victim<const SKIP_SIBLINGS: bool, const LOCAL: bool>(&self, v: u32, last: u32, now: Time, floor: f64) -> u32 {
        let vm = self.vcpus[v as usize].vm;
        let key = (self.vcpus[v as usize].key + ns_f(self.params.wake_preempt_margin_ns)).max(floor);
        let alloc = self.vcpus[v as usize].alloc;
        let reach = alloc + GUARD_EPS;
        let guarded = self.vcpus[v as usize].guard > f64::NEG_INFINITY;
        let now_f = ns_f(now);
        if LOCAL && !guarded {
            // the waker's last pCPU first (C21's lexicographic order): its vCPU is preempted
            // whenever it may be at all, and no move is paid
            let pc = &self.pcpus[last as usize];
            // (a sibling is never shielded from it: the shield is its VM's, `spent`)
            let eligible = !((pc.run_guard > reach && pc.run_vm != vm) || (SKIP_SIBLINGS && pc.run_vm == vm));
            if eligible && pc.run_key0 + now_f * pc.run_inv_weight > key {
                return last;
            }
        }
        // taking another core's pCPU costs the waker a move, in its virtual time
        let worst = if LOCAL { key + self.move_cost[1] * self.vcpus[v as usize].inv_weight } else { key };
        let llc = self.llc_of[last as usize] as usize;
        let (lo, hi) = (self.llc_range[llc], self.llc_range[llc + 1]);
        // four copies of the scan, so that no pCPU's test reads what is fixed for the waker:
        // whether it is guarded (an unguarded waker's scan, most of them, does not test it),
        // and whether its VM's slack is spent (`spent`: its shield above its entitlement), when
        // it sees its siblings, shielded as it is, as it would unshielded
        let kin = self.vcpus[v as usize].shield > reach;
        let (victim, by_slack) = match (guarded, kin) {
            (true, false) => self.victim_scan::<SKIP_SIBLINGS, true, false>(lo, hi, vm, reach, now_f, worst, alloc - GUARD_EPS),
            (false, false) => self.victim_scan::<SKIP_SIBLINGS, false, false>(lo, hi, vm, reach, now_f, worst, alloc - GUARD_EPS),
            (true, true) => self.victim_scan::<SKIP_SIBLINGS, true, true>(lo, hi, vm, reach, now_f, worst, alloc - GUARD_EPS),
            (false, true) => self.victim_scan::<SKIP_SIBLINGS, false, true>(lo, hi, vm, reach, now_f, worst, alloc - GUARD_EPS),
        };
        if by_slack != NONE {
            by_slack
        } else {
            victim
        }
    }

    /// [`Self::victim`]'s scan of the pCPUs `lo..hi` of an LLC: the one furthest ahead above
    /// `worst`, and with `GUARDED` the one entitled to least below `slackest`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn victim_scan<const SKIP_SIBLINGS: bool, const GUARDED: bool, const KIN: bool>(
        &self,
        lo: usize,
        hi: usize,
        vm: u32,
        reach: f64,
        now_f: f64,
        mut worst: f64,
        mut slackest: f64,
    ) -> (u32, u32) {
        let (mut victim, mut by_slack) = (NONE, NONE);
        // no pCPU is idle here (checked by the caller), so every one in the LLC has a running
        // vCPU
        for (p, pc) in self.pcpus[lo..hi].iter().enumerate() {
            debug_assert!(pc.running != NONE);
            // a pCPU the waker may not take scores as no candidate at all (a select, not a
            // branch that skips it: which pCPUs are shielded is data, mispredicted about one
            // time in nine in callgrind's branch simulation)
            let barred = ((pc.run_guard > reach) & !(KIN && pc.run_vm == vm)) | (SKIP_SIBLINGS && pc.run_vm == vm);
            let eff = std::hint::select_unpredictable(barred, f64::NEG_INFINITY, pc.run_key0 + now_f * pc.run_inv_weight);
            if eff > worst {
                worst = eff;
                victim = (p + lo) as u32;
            }
            if GUARDED {
                let alloc = std::hint::select_unpredictable(barred, f64::INFINITY, pc.run_alloc);
                if alloc < slackest {
                    slackest = alloc;
                    by_slack = (p + lo) as u32;
                }
            }
        }
        (victim, by_slack)
    }

    /// An idle pCPU for `v`: its last pCPU, else one in that pCPU's LLC (`llc_aware`), else one
    /// in its home node (or, without one, its last pCPU's node), else the lowest-numbered. The
    /// order of research/cpu.md C21 (with hyperthreading, `ht_idle_near` also puts whole idle
    /// cores before partial ones).
    /// With `numa_confine`, only pCPUs of its home node qualify, and there may be none
    /// ([`NONE`]).
    fn idle_pcpu_near(&mut self, v: u32, last: u32) -> u32 {
        if self.cells.hooked() {
            if let Some(p) = self.idle_pcpu_hooked(v, last) {
                return p;
            }
        }
        if self.ht.on {
            return self.ht_idle_near(v, last);
        }
        if self.params.llc_balance && self.params.llc_aware {
            return self.idle_pcpu_balanced(v, last);
        }
        let llc = if self.params.llc_aware { self.llc_of[last as usize] } else { NONE };
        if !self.params.numa_home_nodes {
            if self.idle[last as usize] {
                return last;
            }
            // LLC, then the lowest-numbered
            let mut any = NONE;
            for p in self.idle_in(0..self.pcpus.len()) {
                if self.llc_of[p] == llc {
                    return p as u32;
                }
                if any == NONE {
                    any = p as u32;
                }
            }
            return any;
        }
        let home = self.vcpus[v as usize].home;
        let confined = self.params.numa_confine && home != NONE;
        if self.idle[last as usize] && !(confined && self.node_of[last as usize] != home) {
            return last;
        }
        let node = if home != NONE { home } else { self.node_of[last as usize] };
        let (mut in_node, mut any) = (NONE, NONE);
        for p in self.idle_in(0..self.pcpus.len()) {
            if self.llc_of[p] == llc && (home == NONE || self.node_of[p] == home) {
                return p as u32;
            }
            if in_node == NONE && self.node_of[p] == node {
                in_node = p as u32;
            }
            if any == NONE {
                any = p as u32;
            }
        }
        if in_node != NONE || confined {
            in_node
        } else {
            any
        }
    }

    /// `llc_balance` (ESX 4 balances CPU load per LLC, research/cpu.md A6.3): the idle pCPU
    /// minimising (off the home node, busy pCPUs in its LLC, distance), distance being 0 for
    /// `last`, 1 its LLC, 2 its node (the home node when it has one), 3 elsewhere; with
    /// `numa_confine` only the home node's pCPUs qualify. [`NONE`] if none does.
    fn idle_pcpu_balanced(&self, v: u32, last: u32) -> u32 {
        let home = self.vcpus[v as usize].home;
        let confined = self.params.numa_confine && home != NONE;
        let (last_llc, near) = (self.llc_of[last as usize], if home != NONE { home } else { self.node_of[last as usize] });
        let mut best = ((true, usize::MAX, u8::MAX), NONE);
        for l in 0..self.llc_range.len() - 1 {
            let (lo, hi) = (self.llc_range[l], self.llc_range[l + 1]);
            let node = self.node_of[lo];
            if confined && node != home {
                continue;
            }
            let busy = self.idle[lo..hi].iter().filter(|&&i| !i).count();
            for p in (lo..hi).filter(|&p| self.idle[p]) {
                let dist = match () {
                    _ if p == last as usize => 0,
                    _ if l as u32 == last_llc => 1,
                    _ if node == near => 2,
                    _ => 3,
                };
                let key = (home != NONE && node != home, busy, dist);
                if key < best.0 {
                    best = (key, p as u32);
                }
            }
        }
        best.1
    }

    /// Mark busy pCPU `p` idle.
    #[inline]
    fn set_idle(&mut self, p: u32) {
        self.idle[p as usize] = true;
        self.idle_count += 1;
        self.idle_bits[p as usize / 64] |= 1 << (p % 64);
    }

    /// The idle pCPUs among `within`, in ascending order (`idle_bits`).
    #[inline]
    fn idle_in(&self, within: std::ops::Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let (lo, hi) = (within.start, within.end);
        (lo / 64..hi.div_ceil(64)).flat_map(move |w| {
            let from = if w == lo / 64 { u64::MAX << (lo % 64) } else { u64::MAX };
            let to = if w == hi / 64 { (1u64 << (hi % 64)).wrapping_sub(1) } else { u64::MAX };
            let mut b = self.idle_bits[w] & from & to;
            std::iter::from_fn(move || {
                (b != 0).then(|| {
                    let p = w * 64 + b.trailing_zeros() as usize;
                    b &= b - 1;
                    p
                })
            })
        })
    }

    /// Queue ready `v` on pCPU `p`.
    #[inline(never)]
    fn enqueue(&mut self, p: u32, v: u32) {
        self.enqueue_inline(p, v);
    }

    /// [`Self::enqueue`], always inlined: into the placement (`place_with_inline`), whose
    /// wake-ups queue a vCPU at 147,000 of bench-mixed-1m's 175,000 enqueues, where the call
    /// paid its prologue and epilogue and the bounds checks of a record just read.
    #[inline(always)]
    fn enqueue_inline(&mut self, p: u32, v: u32) {
        if self.vcpus[v as usize].stale > 0 {
            self.drop_stale(v);
        }
        self.seq += 1;
        let vc = &self.vcpus[v as usize];
        self.queued_lendee += usize::from(vc.lendee);
        self.queues.push(p, vc.key, self.seq, v);
    }

    /// Give free pCPU `p` the ready vCPU with the lowest key on the host (pulling it from
    /// another pCPU's queue if need be), or leave `p` idle.
    #[inline]
    fn dispatch(&mut self, p: u32, now: Time, q: &mut EventQueue) {
        self.dispatch_as(p, now, q, true, NONE);
    }

    /// [`Self::dispatch`]; `may_wait`: vCPUs too fresh to pull from elsewhere may be passed
    /// over when `p`'s own queue is empty (`move_wait`, `pick`'s `DECLINE`). `first`, unless
    /// [`NONE`], is the queue the first pick would name, picked already by the caller (`requeue`)
    /// with nothing the pick reads changed since: it is not picked again.
    #[inline(never)]
    fn dispatch_as(&mut self, p: u32, now: Time, q: &mut EventQueue, may_wait: bool, first: u32) {
        self.dispatch_as_inline(p, now, q, may_wait, first);
    }

    /// [`Self::dispatch_as`], always inlined: into a burst's end that halts (the run loop's
    /// `burst_done`; bench-mixed-1m: 155,647 of 175,076 dispatches), where the call paid a
    /// prologue and an epilogue that save six registers.
    #[inline(always)]
    fn dispatch_as_inline(&mut self, p: u32, now: Time, q: &mut EventQueue, may_wait: bool, mut first: u32) {
        if !self.waiting.is_empty() && self.gang_dispatch(p, now, q) {
            return;
        }
        if !self.holding.is_empty() && self.hold_dispatch(p, now, q) {
            return;
        }
        let declining = may_wait && self.waits;
        if declining {
            self.recheck.0.store(Time::MAX, Relaxed);
        }
        loop {
            let qp = if first != NONE {
                std::mem::replace(&mut first, NONE)
            } else {
                let pick = if declining && self.queues.head_entry(p).is_none() {
                    self.pick::<true>(p, now)
                } else {
                    self.pick_inline(p, now)
                };
                let Some((qp, _)) = pick else { break };
                qp
            };
            let v = self.queues.pop(qp).expect("best queue is not empty");
            self.queued_lendee -= usize::from(self.vcpus[v as usize].lendee);
            // one test of the flags for most vCPUs (no co-scheduling, no limit, and no VM held
            // back below a limited vCPU's entitlement with so few vCPUs queued: `lend_width`, 0
            // where none is)
            let vc = &self.vcpus[v as usize];
            let gap = self.queues.len() < self.lend_width;
            if vc.cosched | vc.limited | gap {
                if self.popped_blocked(v, now) {
                    continue;
                }
                if let Some(l) = self.throttled(v, now) {
                    self.hold(v, l, now, q);
                    continue;
                }
                // a vCPU of a held-back VM that has run its entitlement does not take a pCPU
                // that a held vCPU entitled to more could borrow (`lend_before`)
                if gap && self.may_lend(&self.vcpus[v as usize]) && self.lend_before(p, qp, v, now, q) {
                    return;
                }
            }
            self.start_inline(p, v, now, q);
            return;
        }
        if self.held_count > 0 && self.lend_over(p, f64::NEG_INFINITY, now, q) {
            return;
        }
        // read before `ht_went_idle`, which may dispatch another pCPU
        let recheck = if declining { self.recheck.0.load(Relaxed) } else { Time::MAX };
        if !self.idle[p as usize] {
            self.set_idle(p);
            q.cancel_timer(p);
            if self.ht.on {
                self.ht_went_idle(p, now, q);
            }
        }
        if recheck != Time::MAX && self.idle[p as usize] {
            // a vCPU it passed over to wait for its cache (`move_wait`) may be pulled then
            q.set_timer(p, recheck, Event::SliceEnd { pcpu: p });
        }
    }

    /// The timer of idle pCPU `p` fired: a vCPU it passed over (`move_wait`) may be pulled now.
    #[cold]
    #[inline(never)]
    fn recheck_idle(&mut self, p: u32, now: Time, q: &mut EventQueue) {
        if self.idle[p as usize] {
            self.dispatch_as(p, now, q, false, NONE);
            self.settle_cosched(now, q);
        }
    }

    /// Start a slice of `v` on `p`.
    #[inline(never)]
    fn start(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) {
        self.start_inline(p, v, now, q);
    }

    /// [`Self::start`], always inlined: into the dispatch (bench-mixed-1m: 175,074 of 322,381
    /// starts) and a preempting wake-up's placement (most of the rest), where the call paid a
    /// prologue and an epilogue that save six registers.
    #[inline(always)]
    fn start_inline(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) {
        // the count first: on a busy host no pCPU is idle, and it is one field, not a look-up
        if self.idle_count > 0 && self.idle[p as usize] {
            self.idle[p as usize] = false;
            self.idle_count -= 1;
            self.idle_bits[p as usize / 64] &= !(1 << (p % 64));
        }
        self.set_state(v, now, VcpuState::Run);
        if let Some(w) = self.warmth.as_deref_mut() {
            w.start(p, v, now);
        }
        self.count_move(v, p);
        self.stats.dispatches += 1;
        // one read of the vCPU's record (`start_bound` changes none of these fields)
        let vc = &self.vcpus[v as usize];
        let (work, run_key, run_inv_weight, run_guard, run_alloc, run_vm) = (vc.work_left, vc.key, vc.inv_weight, vc.shield, vc.alloc, vc.vm);
        // its weighted slice (`Vcpu::slice`), bounded by the limits; the burst's work ends it
        // sooner
        let mut slice = vc.slice;
        if vc.limited | vc.cosched {
            // a lone vCPU's only bucket (`Limiter::solo`) here, every other case in the call
            slice = match &self.limiters[vc.vm as usize] {
                own if vc.limited && own.solo => solo_slice(own, vc, slice, &self.bucket_rules),
                _ => self.start_bound(v, slice, now),
            };
        }
        self.clock.run_from(now);
        let pc = &mut self.pcpus[p as usize];
        pc.running = v;
        pc.slice_start = now;
        pc.key_mark = now;
        pc.run_key0 = run_key - ns_f(now) * run_inv_weight;
        pc.run_inv_weight = run_inv_weight;
        pc.run_guard = run_guard;
        pc.run_alloc = run_alloc;
        pc.run_vm = run_vm;
        pc.dispatches += 1;
        // one read of the flag: the call on the hyperthreaded path made it read twice
        let ht = self.ht.on;
        let at = if ht { self.ht_slice_end(p, v, slice, now) } else { now + slice.min(work) };
        q.set_timer(p, at, Event::SliceEnd { pcpu: p });
        if ht {
            self.ht_after_start(p, v, now, q);
        }
    }

    /// Count `v`'s move from its last pCPU to `p` (if it moved) at every level it crosses, and
    /// make `p` its last pCPU. Whether a slice starts where the last one ran is a coin toss
    /// (bench-mixed: 45% of dispatches move), so a move is counted by adding 0 or 1, not by a
    /// branch (a tenth of that run's mispredictions in callgrind's branch simulator); a move
    /// to another LLC is rare (5%), and keeps its branch.
    #[inline(always)]
    fn count_move(&mut self, v: u32, p: u32) {
        let pi = p as usize;
        let from = self.vcpus[v as usize].pcpu as usize;
        let moved = u64::from(from != pi);
        let vc = &mut self.vcpus[v as usize];
        vc.pcpu = p;
        vc.migrations += moved;
        self.stats.migrations += moved;
        if self.llc_of[from] != self.llc_of[pi] {
            self.count_far_move(v, from, p);
        } else if self.ht.on {
            self.stats.core_migrations += u64::from(from ^ 1 == pi);
        }
    }

    /// The rarer part of [`Self::count_move`]: a move to another LLC, perhaps another node.
    #[inline]
    fn count_far_move(&mut self, v: u32, from: usize, p: u32) {
        let node = (self.node_of[from] != self.node_of[p as usize]) as u64;
        let vc = &mut self.vcpus[v as usize];
        vc.llc_migrations += 1;
        vc.node_migrations += node;
        self.stats.llc_migrations += 1;
        self.stats.node_migrations += node;
    }

    /// What a starting vCPU's limits and co-scheduling do: the slice its buckets allow (see
    /// `start`), and a look at its siblings before the scheduler returns (for `relaxed-4x`
    /// only if its VM's timer is due now, `touched`).
    #[inline(never)]
    fn start_bound(&mut self, v: u32, mut slice: Time, now: Time) -> Time {
        let vc = &self.vcpus[v as usize];
        if vc.limited {
            // each bucket allows `ceil(tokens x part)` ns, at least 1: the slice is the least of
            // those and `slice`, which is `max(ceil(least), 1)` of the least unrounded one
            // (`ceil` is monotone and `slice` a whole number of at least 1 ns), so one rounding
            // per start, not one per bucket, done in integers (`ceil_time`); `slice` (a quantum)
            // and the result are below 2^53, exact as f64 (tokens are never NaN: finite accruals
            // and charges)
            let mine = vc.bucket_part();
            let mut least = ns_f(slice);
            for &l in &self.chains[vc.vm as usize] {
                let lim = &self.limiters[l as usize];
                if let Some(b) = &lim.bucket {
                    // the vCPUs a bucket binds share its tokens in proportion to their
                    // entitlements (inside a limited pool: the split of the limit by shares
                    // and reservations); `mine` is never NaN
                    let part = mine / max_f(lim.active_alloc, mine);
                    // a vCPU started from a held list on an otherwise idle pCPU may borrow
                    let allowed = b.spendable(&self.bucket_rules) * part;
                    least = min_f(allowed, least);
                }
            }
            slice = ceil_time(least).max(1);
        }
        if vc.cosched {
            self.touched(v, now);
        }
        slice
    }

    /// What a stopping vCPU's limits and co-scheduling do: its buckets pay for the `ran` ns,
    /// and its siblings are looked at before the scheduler returns (as in `start_bound`).
    #[inline(never)]
    fn stop_bound(&mut self, v: u32, ran: Time, now: Time) {
        let vc = &self.vcpus[v as usize];
        let vm = vc.vm;
        let chain: &[u32] = if vc.limited { &self.chains[vm as usize] } else { &[] };
        for &l in chain {
            let lim = &mut self.limiters[l as usize];
            if let Some(b) = &mut lim.bucket {
                b.refill(now);
                b.tokens -= ns_f(ran);
            }
        }
        if !chain.is_empty() {
            if let Some(u) = &mut self.limiters[vm as usize].user {
                u.refill(now);
                u.tokens -= ns_f(ran);
            }
        }
        if vc.cosched {
            self.touched(v, now);
        }
    }

    /// Stop whatever runs on `p` and charge it; its state is still RUN for the caller to change.
    /// The caller either re-arms `p`'s slice timer (a new slice) or leaves `p` idle, whose stale
    /// timer is cancelled in `dispatch`.
    #[inline(always)]
    fn stop(&mut self, p: u32, now: Time) -> u32 {
        self.stop_left(p, now).0
    }

    /// [`Self::stop`], also returning the work left in the stopped vCPU's burst (what
    /// `slice_end` asks next, without looking the vCPU up again).
    #[inline(always)]
    fn stop_left(&mut self, p: u32, now: Time) -> (u32, Time) {
        if self.ht.on {
            // the slice so far at its rate; `ran` below is then 0
            self.ht_settle(p, now);
        }
        let pc = &mut self.pcpus[p as usize];
        let v = pc.running;
        let ran = now - pc.slice_start;
        let mark = pc.key_mark;
        pc.running = NONE;
        pc.busy_ns += ran;
        if let Some(w) = self.warmth.as_deref_mut() {
            w.stop(p, v, now);
        }
        self.clock.charge(mark, now);
        let vc = &mut self.vcpus[v as usize];
        vc.key += ns_f(now - mark) * vc.inv_weight;
        let left = vc.work_left.saturating_sub(ran);
        vc.work_left = left;
        if vc.limited | vc.cosched {
            // a lone vCPU's only bucket (`Limiter::solo`) here, every other case in the call
            match &mut self.limiters[vc.vm as usize] {
                own if vc.limited && own.solo => {
                    let b = own.bucket.as_mut().expect("a solo limiter has a bucket");
                    b.refill(now);
                    b.tokens -= ns_f(ran);
                }
                _ => self.stop_bound(v, ran, now),
            }
        }
        (v, left)
    }

    /// A slice timer fired. Returns the vCPU if its burst is done: the caller must then call
    /// [`CpuSched::burst_done`].
    pub fn slice_end(&mut self, p: u32, now: Time, q: &mut EventQueue) -> Option<u32> {
        if self.pcpus[p as usize].running == NONE {
            self.recheck_idle(p, now, q);
            return None;
        }
        let (v, left) = self.stop_left(p, now);
        if left == 0 {
            return Some(v);
        }
        self.requeue(p, v, now, q);
        self.settle_cosched(now, q);
        None
    }

    /// After a finished burst: `Some(work)` runs another burst at once, `None` halts the vCPU
    /// (WAIT_IDLE) until the caller wakes it.
    pub fn burst_done(&mut self, p: u32, v: u32, next: Option<Time>, now: Time, q: &mut EventQueue) {
        match next {
            Some(work) => {
                self.vcpus[v as usize].work_left = work.max(1);
                self.requeue(p, v, now, q);
            }
            None => {
                self.set_state(v, now, VcpuState::Idle);
                self.dispatch_as_inline(p, now, q, true, NONE);
            }
        }
        self.settle_cosched(now, q);
    }

    /// A halted vCPU (WAIT_IDLE, just after its burst) blocks on a resource (synchronous I/O,
    /// swap-in): WAIT (esxtop %VMWAIT) until the caller wakes it ([`Self::wake`]) or lets it
    /// halt ([`Self::wait_to_idle`]).
    pub fn block(&mut self, v: u32, now: Time) {
        debug_assert_eq!(self.vcpus[v as usize].state, VcpuState::Idle);
        self.set_state(v, now, VcpuState::Wait);
        self.progress_changed(v, now);
    }

    /// `v` stopped progressing or started again outside the scheduler's own calls (WAIT
    /// entered or left): a co-scheduled VM's skews are brought up to date now, and its siblings
    /// are looked at on the scheduler's next call.
    #[inline]
    fn progress_changed(&mut self, v: u32, now: Time) {
        if self.vcpus[v as usize].cosched {
            let vm = self.vcpus[v as usize].vm;
            if self.vcpus[v as usize].marks {
                self.gang_account(vm, now);
            }
            self.mark_dirty(vm);
        }
    }

    /// A vCPU blocked in WAIT whose wait is over halts (WAIT_IDLE) instead of running.
    pub fn wait_to_idle(&mut self, v: u32, now: Time) {
        debug_assert_eq!(self.vcpus[v as usize].state, VcpuState::Wait);
        self.set_state(v, now, VcpuState::Idle);
        self.progress_changed(v, now);
    }

    /// Start on `p` a held vCPU that may borrow in place of `v`, just popped from queue `qp`, if
    /// `v` would take a gap it is not owed (`gap_unowed`) and the borrower is entitled to more
    /// (`borrower`); `v` then goes back to `qp`.
    #[cold]
    #[inline(never)]
    fn lend_before(&mut self, p: u32, qp: u32, v: u32, now: Time, q: &mut EventQueue) -> bool {
        let alloc = self.vcpus[v as usize].alloc;
        if !self.gap_unowed(v, now) || !self.lend_over(p, alloc, now, q) {
            return false;
        }
        self.enqueue(qp, v);
        true
    }

    /// [`Self::lend_before`] for `v`, just stopped on `p` with work left (`requeue`): a held
    /// vCPU that may borrow takes `p`, and `v` waits READY in `p`'s queue. Without it a vCPU
    /// that took a gap kept its pCPU from slice to slice until the limit's next turn.
    #[cold]
    #[inline(never)]
    fn lend_after(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) -> bool {
        let alloc = self.vcpus[v as usize].alloc;
        if !self.gap_unowed(v, now) {
            return false;
        }
        let Some(b) = self.borrower(p, alloc, now) else { return false };
        self.set_state(v, now, VcpuState::Ready);
        self.enqueue(p, v);
        if !self.start_loan(p, b, now, q) {
            self.dispatch(p, now, q);
        }
        true
    }

    /// True if vCPU `v` (just popped, or just stopped with work left) would take a gap it is
    /// not owed, while some vCPU is held by a limit: `v`'s VM is held back, `v` has run, since
    /// the last entitlement update, more than its entitlement over that time less one loan
    /// (`limit_borrow_ns`, what the scheduler lends at a time), and every vCPU queued is its
    /// sibling or is not owed the gap either: a vCPU of a VM held back below the lender
    /// (`lendee`) that has run its entitlement so (`past_entitlement`). A vCPU entitled to less
    /// than one loan an interval never is owed a gap.
    ///
    /// Not only its siblings: a queued vCPU that has had its entitlement is not one the gap
    /// would otherwise serve, and counting it as such handed the gaps to two over-served VMs in
    /// turn. Seen in the max-min test's draws (docs/cpu-scheduler.md, pooled 0p): a pool
    /// limited to 650 MHz, entitled to 478 at the root, over a 1-vCPU VM and a 5-vCPU VM, each
    /// queued while the other ran, filled the gaps a 6-vCPU VM at its own limit left between
    /// its turns, beside a busy 6-vCPU VM that could not use them, and ran its whole limit.
    #[inline]
    fn gap_unowed(&self, v: u32, now: Time) -> bool {
        let vc = &self.vcpus[v as usize];
        // (the cheap tests first: more vCPUs queued than the VMs that may leave a gap have; a
        // vCPU queued that is owed the gap by its VM alone, `foreign_owed`)
        let unowed = !(self.held_count == 0
            || !self.held_back[vc.vm as usize]
            || self.queues.len() >= self.lend_width
            || self.foreign_owed(vc)
            || !self.past_entitlement(vc, now))
            && self.queued_unowed(vc.vm, now);
        #[cfg(any(test, debug_assertions))]
        self.check_gap_unowed(vc, now, unowed);
        unowed
    }

    /// `gap_unowed`'s two cheapest tests, for the callers to make before their call: fewer vCPUs
    /// queued than the lendees have (`lend_width`, 0 where there is none), and, `vc`'s VM a
    /// lendee, none of another VM's (`foreign_owed`: bench-mixed-1m's commonest answer).
    #[inline(always)]
    fn may_lend(&self, vc: &Vcpu) -> bool {
        let n = self.queues.len();
        n < self.lend_width && !(vc.lendee && n != self.queued_lendee)
    }

    /// Some vCPU queued is of a VM that is not a `lendee` and not `vc`'s, so owed the gap
    /// (`gap_unowed`), told from the count of queued lendees' vCPUs (`queued_lendee`) without a
    /// walk of the queues: more vCPUs of VMs that are not lendees are queued than `vc`'s
    /// siblings could be (none if its VM is a lendee; its other vCPUs if its VM is not
    /// co-scheduled, each queued at most once, and `vc` itself not queued: just popped or just
    /// stopped; no bound if it is co-scheduled, whose vCPUs may leave entries behind,
    /// `stale`). A walk found such a vCPU at 83,000 of bench-mixed-1m's 92,000 walks.
    #[inline]
    fn foreign_owed(&self, vc: &Vcpu) -> bool {
        let foreign = self.queues.len() - self.queued_lendee;
        let siblings = if vc.lendee {
            0
        } else if vc.cosched {
            usize::MAX
        } else {
            self.gangs[vc.vm as usize].n as usize - 1
        };
        foreign > siblings
    }

    /// Queued entries of vCPUs of `lendee` VMs, counted by a walk of the queues (what
    /// `queued_lendee` keeps).
    fn count_queued_lendee(&self) -> usize {
        let mut n = 0;
        self.queues.all(|w| {
            n += usize::from(self.vcpus[w as usize].lendee);
            true
        });
        n
    }

    /// In tests and debug builds: `gap_unowed`'s answer `unowed` for `vc` is the walk's of
    /// every queued vCPU (the rule as first written), and the kept count `queued_lendee` is
    /// what a walk counts, so that neither drifts silently.
    #[cfg(any(test, debug_assertions))]
    fn check_gap_unowed(&self, vc: &Vcpu, now: Time, unowed: bool) {
        assert_eq!(self.queued_lendee, self.count_queued_lendee(), "the kept count of queued lendees' vCPUs");
        let walked = self.held_count != 0
            && self.held_back[vc.vm as usize]
            && self.queues.len() < self.lend_width
            && self.past_entitlement(vc, now)
            && self.queues.all(|w| {
                let wc = &self.vcpus[w as usize];
                wc.vm == vc.vm || (self.lendee[wc.vm as usize] && self.past_entitlement(wc, now))
            });
        assert_eq!(unowed, walked, "gap_unowed against a walk of the queues");
        #[cfg(test)]
        self.gap_checks.set(self.gap_checks.get() + 1);
    }

    /// `vc`, of a VM held back, has run since the last entitlement update more than its
    /// entitlement over that time less one loan: it is not owed a gap (`gap_unowed`).
    #[inline]
    fn past_entitlement(&self, vc: &Vcpu, now: Time) -> bool {
        ns_f(vc.ran_by(now) - vc.ran_mark) + self.bucket_rules.borrow > vc.alloc * ns_f(now - vc.demand_since)
    }

    /// Every queued vCPU is of VM `vm`, or of another VM that may leave a gap (`lendee`) and
    /// past its entitlement (`past_entitlement`): none is owed a gap (`gap_unowed`). Stops at
    /// the first that is.
    #[inline]
    fn queued_unowed(&self, vm: u32, now: Time) -> bool {
        // the host's first in the queues first: the lowest key, the likeliest to be owed
        let Some((qp, _)) = self.queues.best() else { return true };
        let head = self.queues.head(qp).expect("a best queue has a head");
        // every queued vCPU a lendee's (`queued_lendee`): the flag need not be read
        if self.queued_lendee == self.queues.len() {
            self.head_and_queued_unowed::<true>(vm, head, now)
        } else {
            self.head_and_queued_unowed::<false>(vm, head, now)
        }
    }

    /// [`Self::queued_unowed`]'s test of `head`, then of every queued vCPU: each is `vm`'s, or
    /// of a `lendee` VM (known of every one with `ALL_LENDEES`, so no flag is read) and past its
    /// entitlement.
    #[inline(always)]
    fn head_and_queued_unowed<const ALL_LENDEES: bool>(&self, vm: u32, head: u32, now: Time) -> bool {
        let unowed = |w: u32| {
            let wc = &self.vcpus[w as usize];
            wc.vm == vm || ((ALL_LENDEES || self.lendee[wc.vm as usize]) && self.past_entitlement(wc, now))
        };
        unowed(head) && self.queued_unowed_all(&unowed)
    }

    /// [`Self::queued_unowed`]'s walk of every queue.
    #[cold]
    #[inline(never)]
    fn queued_unowed_all(&self, unowed: &impl Fn(u32) -> bool) -> bool {
        self.queues.all(unowed)
    }

    /// Start on `p` a held vCPU entitled to more than `over` (pCPUs per vCPU) that may borrow
    /// (`borrower`), if there is one; true if it started. `over` is `f64::NEG_INFINITY` where
    /// `p` would otherwise idle, and the entitlement of the vCPU `p` would otherwise take where
    /// that one is not owed the gap (`lend_before`).
    #[cold]
    #[inline(never)]
    fn lend_over(&mut self, p: u32, over: f64, now: Time, q: &mut EventQueue) -> bool {
        let Some(v) = self.borrower(p, over, now) else { return false };
        self.start_loan(p, v, now, q)
    }

    /// Start on `p` the borrower `v` (`borrower`), unless its VM's gang has co-stopped it;
    /// true if it started.
    fn start_loan(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) -> bool {
        if self.costop_if_blocked(v, now) {
            return false;
        }
        self.place_key(v, now, true);
        self.start(p, v, now, q);
        true
    }

    /// A vCPU held by a limit that may run on a pCPU that would otherwise idle, by letting its
    /// buckets (none of them in debt) run into at most `limit_borrow_ns` of debt (repaid
    /// before it is released again, so its long-run rate still never exceeds the limit; and
    /// never a sliver: a bucket in debt does not lend): the one with the lowest key among
    /// those entitled to more than `over` (pCPUs per vCPU), taken out of its limiter's held
    /// list. Limited VMs run in bursts between refills, and without this a pCPU would idle
    /// whenever all of them are held at once although CPU is wanted, which a fluid max-min
    /// allocation never does.
    ///
    /// Nor does such a gap go to a vCPU that is not owed it where a held vCPU at its VM's limit
    /// and entitled to more may borrow (`lend_before` at a pick, `lend_after` at a slice end;
    /// `over` is then that vCPU's entitlement): one whose VM is held back, that has run its
    /// entitlement since the last update less one loan, and that no vCPU owed the gap waits
    /// behind (`gap_unowed`: its siblings, and other held-back VMs' vCPUs that have had their
    /// entitlement so, are not). What it would fill is spare capacity beyond its entitlement, and
    /// spare capacity goes by entitlement: to the limited VM, which the fluid reference runs at
    /// its limit's rate with no gaps at all. A VM that is not held back (it gets all it wants,
    /// however little) keeps its gaps, and so does one behind its entitlement by a loan. Seen in
    /// the max-min test's draws (docs/cpu-scheduler.md): on 5 pCPUs a 5-vCPU VM with 1 share,
    /// entitled to 0.07 points of a pCPU, took 0.59 in the gaps three limit-bound VMs' turns left
    /// (a 5-vCPU VM at its 2,653 MHz limit running its five vCPUs at once every 25 ms), from a
    /// backlogged 3-vCPU VM at the water level; on 4 pCPUs a 1-vCPU VM entitled to 0.18 points
    /// took 10.67 beside a 4-vCPU VM's turns. The first rule here gated on the entitlement alone
    /// (less than one loan an interval, which the pace test still always holds back) and missed
    /// the second. Not for any queued vCPU entitled to less than the borrower: then limit-bound
    /// VMs ran on loans instead of turns (bench-mixed: 17% more events), and a VM whose vCPUs
    /// could not use the pCPUs the loans' debt later left idle lost 2.3 points; nor with other
    /// VMs' vCPUs queued (the pace alone: bench-mixed 13% more events, the same allocation).
    fn borrower(&mut self, p: u32, over: f64, now: Time) -> Option<u32> {
        let mut best: Option<(f64, u32, usize)> = None;
        for l in 0..self.limiters.len() {
            for (i, &v) in self.limiters[l].held.iter().enumerate() {
                let vc = &self.vcpus[v as usize];
                let key = vc.key;
                if best.is_some_and(|(k, _, _)| k <= key) || (self.cells.on && !self.in_cell(v, p)) || vc.alloc <= over || (over > f64::NEG_INFINITY && !vc.at_limit) {
                    continue;
                }
                let vm = vc.vm as usize;
                let ok = self.chains[vm].iter().all(|&c| {
                    self.limiters[c as usize].bucket.as_ref().is_none_or(|b| b.tokens_at(now) >= 0.0)
                });
                if ok {
                    best = Some((key, l as u32, i));
                }
            }
        }
        let (_, l, i) = best?;
        self.held_count -= 1;
        Some(self.limiters[l as usize].held.remove(i))
    }

    /// `v` just stopped on `p` with work left: keep running it if it is still the best choice.
    fn requeue(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) {
        if self.costop_if_blocked(v, now) {
            self.dispatch(p, now, q);
            return;
        }
        if let Some(l) = self.throttled(v, now) {
            // straight from RUN: a READY of no length between them changed nothing
            self.hold(v, l, now, q);
            self.dispatch(p, now, q);
            return;
        }
        if self.may_lend(&self.vcpus[v as usize]) && self.lend_after(p, v, now, q) {
            return;
        }
        if !self.waiting.is_empty() {
            // a co-stopped VM may want this pCPU for its gang: the pCPU is dispatched afresh
            self.set_state(v, now, VcpuState::Ready);
            self.enqueue(p, v);
            self.dispatch(p, now, q);
            return;
        }
        let key = self.vcpus[v as usize].key;
        if !self.holding.is_empty() {
            // a vCPU a lasting co-stop holds may be owed `p` more than `v` is, and more than
            // the best vCPU queued for `p` (if that one is owed more, the match below gives it
            // `p`, or keeps `v`)
            let bar = self.pick::<false>(p, now).map_or(key, |(_, best)| key.min(best));
            if let Some((vm, k)) = self.held_best(p, bar, v) {
                self.set_state(v, now, VcpuState::Ready);
                self.enqueue(p, v);
                self.run_held(vm, k, p, now, q);
                return;
            }
        }
        match self.pick::<false>(p, now) {
            Some((qp, best)) if best < key && self.displaceable(v, qp) => {
                self.set_state(v, now, VcpuState::Ready);
                if self.vcpus[v as usize].guard > f64::NEG_INFINITY {
                    // a guarded vCPU yields only to another: it then looks for a pCPU as a
                    // waking one does, and may take one from a vCPU with more slack
                    self.dispatch(p, now, q);
                    self.place(v, now, q);
                } else if self.holding.is_empty() && self.vcpus[v as usize].stale == 0 {
                    // `v`, queued behind `qp`'s head, changes no pick (the host's best and
                    // `qp`'s score are lower than its key, and `p`'s own queue is no longer
                    // empty, so nothing declines): `p` takes from `qp` without a second pick
                    self.enqueue(p, v);
                    self.dispatch_as(p, now, q, true, qp);
                } else {
                    self.enqueue(p, v);
                    self.dispatch(p, now, q);
                }
            }
            _ if self.fair_pair.is_some() && self.fair_swap(p, v, now, q) => {}
            _ => self.start(p, v, now, q),
        }
    }

    /// The queue pCPU `p` should take its next vCPU from, with that vCPU's key plus what moving
    /// it to `p` costs (in its virtual time), or `None` when nothing may run on `p`.
    ///
    /// Without locality this is the lowest key on the host. With it, the candidates are the
    /// heads of `p`'s own queue, of its LLC's queues, of its node's and of the host's (each an
    /// O(1) read of the run-queue tree), each charged the cost of its move (`move_cost`, by
    /// distance; a move onto a node other than the vCPU's home costs a node move): a vCPU is
    /// pulled from further away only when it is owed more than the move costs, so most
    /// dispatches stay local while no vCPU falls behind by more than a move's cost. A throttled
    /// candidate (it made most of its own pCPU's load, `migration_throttle`) is not pulled.
    ///
    /// With `DECLINE`, a candidate queued elsewhere that has not yet waited READY what its move
    /// costs (`move_wait`) is passed over, and the moment it will have is noted (`recheck`). Only
    /// a pCPU being dispatched with an empty queue of its own, which would otherwise idle or take
    /// another vCPU from elsewhere, declines. Not one choosing between its running vCPU and a
    /// waiting one (`requeue`), nor one with vCPUs of its own queued, which would then keep a
    /// waiting vCPU out for a whole slice; nor an idle pCPU looking again (`recheck_idle`), which
    /// pulls whatever is best, so that no pCPU idles beside a READY vCPU for longer than the
    /// longest wait. A constant, so that the other picks do not pay for the check.
    #[inline(always)]
    fn pick<const DECLINE: bool>(&self, p: u32, now: Time) -> Option<(u32, f64)> {
        let host = self.queues.best()?;
        if !self.local_pull || host.0 == p {
            return Some(host);
        }
        self.pick_local::<DECLINE>(p, host, now)
    }

    /// [`Self::pick`] when distance counts and the host's best is queued elsewhere: the best
    /// score among `p`'s own head, the host's best and, when that lies outside `p`'s LLC (node),
    /// the LLC's (node's) best. A move never costs less than nothing, so a candidate whose key
    /// is no lower than the best score so far is not scored.
    #[inline(never)]
    fn pick_local<const DECLINE: bool>(&self, p: u32, host: (u32, f64), now: Time) -> Option<(u32, f64)> {
        if self.cells.on {
            return self.pick_in_cell::<DECLINE>(p, now);
        }
        self.pick_local_body::<DECLINE>(p, host, now)
    }

    /// [`Self::pick`] without `DECLINE`, its scoring inlined (the cells' pick stays a call):
    /// for the dispatch's pick, 152,630 of bench-mixed-1m's 170,238 picks that score, where the
    /// call to [`Self::pick_local`] paid a prologue and an epilogue that save six registers.
    #[inline(always)]
    fn pick_inline(&self, p: u32, now: Time) -> Option<(u32, f64)> {
        let host = self.queues.best()?;
        if !self.local_pull || host.0 == p {
            return Some(host);
        }
        if self.cells.on {
            return self.pick_local::<false>(p, host, now);
        }
        self.pick_local_body::<false>(p, host, now)
    }

    /// [`Self::pick_local`] without scheduler cells.
    #[inline(always)]
    fn pick_local_body<const DECLINE: bool>(&self, p: u32, host: (u32, f64), now: Time) -> Option<(u32, f64)> {
        let t = self.topo[p as usize];
        let (mut bq, mut best) = match self.queues.head_entry(p) {
            Some((_, k)) => (p, k),
            None => (NONE, f64::INFINITY),
        };
        let (hq, hk) = host;
        // Without `DECLINE` a score has no side effect, and a move never costs less than
        // nothing, so the tests that skip a candidate whose key is no lower than the best so
        // far (or that is `p`'s own head, or the host's best again) only save a score that
        // cannot win; where they go is a coin toss (a third of them mispredicted in callgrind's
        // branch simulation), so without `DECLINE` every candidate is scored and the better
        // taken by a select.
        if !DECLINE || hk < best {
            if let Some(s) = self.move_score::<DECLINE>(p, &t, hq, hk, now) {
                (bq, best) = std::hint::select_unpredictable(s < best, (hq, s), (bq, best));
            }
        }
        if self.params.llc_aware && (!DECLINE || !t.same_llc(hq)) {
            let (lo, hi) = t.llc_range();
            // an LLC with nothing queued scores the host's best again, which cannot win twice
            // (a select, not a branch)
            let (q, k) = self.queues.best_in(t.llc_sub as usize, lo, hi).unwrap_or(host);
            if !DECLINE || (q != p && k < best) {
                if let Some(s) = self.move_score::<DECLINE>(p, &t, q, k, now) {
                    (bq, best) = std::hint::select_unpredictable(s < best, (q, s), (bq, best));
                }
            }
            let sub = t.node_sub;
            if !t.same_node(hq) && sub != 0 && sub != t.llc_sub {
                let (lo, hi) = t.node_range();
                if let Some((q, k)) = self.queues.best_in(sub as usize, lo, hi) {
                    if q != p && k < best {
                        if let Some(s) = self.move_score::<DECLINE>(p, &t, q, k, now) {
                            if s < best {
                                (bq, best) = (q, s);
                            }
                        }
                    }
                }
            }
        }
        (bq != NONE).then_some((bq, best))
    }

    /// The key of the head of queue `qp` plus what moving it to pCPU `p` (whose topology is
    /// `t`) costs, in its virtual time, or `None` if migration throttling keeps it on its own
    /// pCPU or, with `DECLINE`, it has not yet waited what the move costs (see `pick`).
    #[inline(always)]
    fn move_score<const DECLINE: bool>(&self, p: u32, t: &PcpuTopo, qp: u32, key: f64, now: Time) -> Option<f64> {
        debug_assert_eq!(t.llc, self.llc_of[p as usize]);
        let v = self.queues.head(qp).expect("a candidate queue is not empty");
        let vc = &self.vcpus[v as usize];
        if self.params.migration_throttle && vc.load_share >= self.params.migration_throttle_share {
            return None;
        }
        let node = t.node;
        if self.params.numa_confine && vc.home != NONE && vc.home != node {
            return None;
        }
        // 3 off the node (or off the vCPU's home), else 2 off the LLC, else 1; by arithmetic on
        // the tests, not branches on them (where the candidate lies is a coin toss)
        let far = !t.same_node(qp) | (vc.home != NONE) & (vc.home != node);
        let level = 1 + usize::from(far | !t.same_llc(qp)) + usize::from(far);
        if DECLINE {
            let until = vc.ready_at.saturating_add(self.move_wait[level]);
            if now < until {
                // it has not yet waited what the move would cost it: left for a pCPU near its
                // cache
                if until < self.recheck.0.load(Relaxed) {
                    self.recheck.0.store(until, Relaxed);
                }
                return None;
            }
        }
        Some(key + self.move_cost[level] * vc.inv_weight)
    }

    /// May the head of queue `qp` take running vCPU `v`'s pCPU (besides having the lower key)?
    ///
    /// A vCPU entitled to a whole pCPU can never make up lost time (it can use at most one
    /// pCPU), so it is displaced only by another such vCPU. On an uncommitted host, where every
    /// VM gets all it wants and free pCPUs come back, a vCPU can make lost time up only in the
    /// slack its entitlement leaves, `1 - alloc` of a pCPU, so it is displaced only by a vCPU
    /// entitled to at least as much; one entitled to less waits for a free pCPU, which it has
    /// the slack to do. Anywhere else virtual time decides and pays a displaced vCPU back.
    /// Without this, when momentary demand exceeds the pCPUs (wake-ups colliding on an
    /// uncommitted host, limited VMs whose refills overlap on the spare pCPU), the vCPUs nearest
    /// a whole pCPU would bear every collision and fall below their max-min allocation.
    #[inline]
    fn displaceable(&self, v: u32, qp: u32) -> bool {
        let head = self.queues.head(qp).expect("best queue is not empty");
        self.vcpus[v as usize].guard <= self.vcpus[head as usize].alloc + GUARD_EPS
    }

    /// Take the lowest-numbered dirty VM, if any (clearing `any_dirty` when none is left).
    fn next_dirty(&mut self) -> Option<u32> {
        for (w, bits) in self.dirty.iter_mut().enumerate() {
            if *bits != 0 {
                let b = bits.trailing_zeros();
                *bits &= *bits - 1;
                return Some(w as u32 * 64 + b);
            }
        }
        self.any_dirty = false;
        None
    }

    /// Indices of VM `vm`'s vCPUs in `vcpus`.
    #[inline]
    fn vcpus_of(&self, vm: u32) -> std::ops::Range<usize> {
        let g = &self.gangs[vm as usize];
        g.first as usize..(g.first + g.n) as usize
    }

    /// VM `vm`'s siblings at `now` as `relaxed-4x` reads them (`cosched::Lead`).
    #[inline]
    fn lead_of(&self, vm: u32, now: Time) -> Lead {
        Lead::at(self.pace_of(vm, now), now)
    }

    /// VM `vm`'s siblings' paces folded (`cosched::Pace::fold`), as `repace` keeps it; debug
    /// builds check it, and each pace, against the vCPUs' states and times.
    #[inline]
    fn pace_of(&self, vm: u32, now: Time) -> Pace {
        let range = self.vcpus_of(vm);
        debug_assert!(self.vcpus[range.clone()].iter().zip(&self.paces[range.clone()]).all(|(vc, &pace)| {
            pace == Pace::new(vc.progress_ns(now), now, PROGRESS[vc.state as usize], vc.state == VcpuState::Run)
        }));
        debug_assert_eq!(self.vm_paces[vm as usize], Pace::fold(&self.paces[range]));
        self.vm_paces[vm as usize]
    }

    /// The least progress of VM `vm`'s siblings that are not progressing (`Lead::slowest_still`
    /// of [`Self::lead_of`]), `Time::MAX` when every one progresses.
    #[inline]
    fn slowest_still_of(&self, vm: u32) -> Time {
        self.vm_paces[vm as usize].still
    }

    /// Note that VM `vm`'s siblings' progress may have changed, to look at before returning
    /// (`settle_cosched`). Progress changes only when a vCPU starts or stops running or wakes
    /// from a halt, so `start`, `stop` and `wake` call this, not every state change.
    #[cold]
    #[inline(never)]
    fn mark_dirty(&mut self, vm: u32) {
        self.dirty[vm as usize / 64] |= 1 << (vm % 64);
        self.any_dirty = true;
    }

    /// A start, stop or wake of one of `relaxed-4x` VM `vm`'s vCPUs at `now`, inside a
    /// scheduler call (which looks at the marked VMs before it returns, at `now`): the VM is
    /// marked only if its timer is due at this very instant. A look at an unmarked VM whose
    /// fold has not moved changes nothing (`settle_cosched`), except when its timer is due
    /// now: the look then releases the co-stopped vCPU that timer was for, and moves the
    /// timer before it fires. Only the VM's own look sets its timer, so the one read here is
    /// the one the look at the call's end would see.
    #[inline(always)]
    fn look_if_due(&mut self, vm: u32, now: Time) {
        if self.gangs[vm as usize].timer_at == now {
            self.mark_dirty(vm);
        } else {
            #[cfg(debug_assertions)]
            {
                self.unlooked[vm as usize / 64] |= 1 << (vm % 64);
            }
        }
    }

    /// A start, stop or wake of co-scheduled `v` at `now`, inside a scheduler call: its VM is
    /// marked (`Vcpu::marks`), or looked at if its timer is due now (`relaxed-4x`).
    #[inline]
    fn touched(&mut self, v: u32, now: Time) {
        let vc = &self.vcpus[v as usize];
        let vm = vc.vm;
        if vc.marks {
            self.mark_dirty(vm);
        } else {
            self.look_if_due(vm, now);
        }
    }

    /// Co-stop `v` (READY, MLMTD, or RUN and already stopped) if it runs too far ahead of a
    /// sibling that is not progressing (`cosched::blocked`); true if it did.
    #[inline(always)]
    fn costop_if_blocked(&mut self, v: u32, now: Time) -> bool {
        self.vcpus[v as usize].cosched && self.costop_if_blocked_slow(v, now)
    }

    #[inline(never)]
    fn costop_if_blocked_slow(&mut self, v: u32, now: Time) -> bool {
        let vm = self.vcpus[v as usize].vm;
        if self.params.cosched_mode != CoschedMode::Relaxed4x {
            return self.gang_hold(v, vm, now);
        }
        // `Lead::blocks` needs only the slowest still sibling: read it alone (this runs at
        // every placement and every pop of a co-scheduled vCPU)
        let still = self.slowest_still_of(vm);
        let lead = Lead { slowest_still: still, ..Lead::NONE };
        if !lead.blocks(self.vcpus[v as usize].progress_ns(now), self.params.cosched_skew_threshold_ns) {
            return false;
        }
        self.costop(v, vm, now);
        true
    }

    /// Put `v` (of VM `vm`) in COSTOP, at the end of its VM's co-stopped list. Inlined: as a
    /// call from the co-stop timer's check, inlined into the run loop, it cost bench-64vm (no
    /// co-scheduling) 0.4% more instructions there.
    #[inline(always)]
    fn costop(&mut self, v: u32, vm: u32, now: Time) {
        self.set_state(v, now, VcpuState::Costop);
        let progress = self.vcpus[v as usize].progress_ns(now);
        let g = &mut self.gangs[vm as usize];
        g.stopped.push(v);
        g.stopped_least = g.stopped_least.min(progress);
        self.stats.costops += 1;
    }

    /// `v` is queued again while an entry a VM-wide co-stop left behind is still queued (it was
    /// co-started from COSTOP, which takes no entry off a queue): drop that entry now. Left to
    /// be skipped when popped, such entries piled up without bound on a pCPU whose dispatches
    /// all went to gang co-starts (strict, 8-vCPU VMs on 32 pCPUs: 200,000 entries on one
    /// queue within 30 ms, each insert a longer memmove).
    #[cold]
    #[inline(never)]
    fn drop_stale(&mut self, v: u32) {
        let dropped = self.queues.remove_first_of(v);
        debug_assert!(dropped, "a stale count names a queued entry");
        let vc = &mut self.vcpus[v as usize];
        vc.stale -= u32::from(dropped);
        self.queued_lendee -= usize::from(dropped & vc.lendee);
    }

    /// [`Self::costop_if_blocked`] for a vCPU just popped from a run queue: an entry a VM-wide
    /// co-stop left behind is skipped.
    #[inline(always)]
    fn popped_blocked(&mut self, v: u32, now: Time) -> bool {
        self.vcpus[v as usize].cosched && self.popped_blocked_slow(v, now)
    }

    #[inline(never)]
    fn popped_blocked_slow(&mut self, v: u32, now: Time) -> bool {
        let vc = &mut self.vcpus[v as usize];
        if vc.stale > 0 {
            // any of its entries will do as the stale one: they name the same vCPU
            vc.stale -= 1;
            return true;
        }
        self.costop_if_blocked_slow(v, now)
    }

    /// `strict` / `relaxed-3x`: while `v`'s VM is co-stopped, `v` (about to run or queue) joins
    /// its co-stopped siblings; true if it did.
    fn gang_hold(&mut self, v: u32, vm: u32, now: Time) -> bool {
        if !self.gangs[vm as usize].costopped {
            return false;
        }
        self.costop(v, vm, now);
        true
    }

    /// `strict` / `relaxed-3x`: advance VM `vm`'s cumulative skews to `now` with the siblings'
    /// progress since the last call (`cosched::CumulativeSkew::advance`), then note who
    /// progresses from now on. Called at every instant a sibling's progress may change (before
    /// time moves on), so the skews are exact.
    fn gang_account(&mut self, vm: u32, now: Time) {
        let range = self.vcpus_of(vm);
        let g = &mut self.gangs[vm as usize];
        let dt = now - g.skew_at;
        if dt > 0 {
            g.skew.advance(dt, &g.prog);
        }
        g.skew_at = now;
        for (f, vc) in g.prog.iter_mut().zip(&self.vcpus[range]) {
            *f = PROGRESS[vc.state as usize];
        }
    }

    /// `strict` / `relaxed-3x`: look at VM `vm` after its siblings changed. A co-stopped VM tries
    /// its gang co-start; otherwise a READY sibling whose skew is over the threshold co-stops the
    /// VM now, and else the VM's timer is armed for the moment the first one would be.
    fn gang_settle(&mut self, vm: u32, now: Time, q: &mut EventQueue) {
        self.gang_account(vm, now);
        let now_ready = bits(self.vcpus[self.vcpus_of(vm)].iter().map(|vc| vc.state == VcpuState::Ready));
        let was_ready = std::mem::replace(&mut self.gangs[vm as usize].ready, now_ready);
        if self.gangs[vm as usize].costopped {
            self.try_costart(vm, NONE, f64::INFINITY, now, q);
            return;
        }
        let hold_due = if self.gangs[vm as usize].holding { self.hold_or_end(vm, now, q) } else { None };
        // (the lasting co-stop may have started, stopped or released siblings)
        let ready: Vec<bool> = self.vcpus[self.vcpus_of(vm)].iter().map(|vc| vc.state == VcpuState::Ready).collect();
        self.gangs[vm as usize].ready = bits(ready.iter().copied());
        let th = self.params.cosched_skew_threshold_ns;
        // relaxed-3x looks at skews on accounting ticks (strict at once): see `cosched.rs`
        let tick = if self.params.cosched_mode == CoschedMode::Relaxed3x { SKEW_TICK_NS } else { 1 };
        let g = &self.gangs[vm as usize];
        let due = if g.skew.skew_ns.iter().zip(&ready).any(|(&s, &r)| r && s > th) {
            // on a tick; or at once when a sibling has entered READY since the VM was last
            // looked at, already over the threshold (it brings skew from before: it halted or
            // was blocked beside a progressing sibling, or is a lasting co-stop's gang member),
            // where it would wait up to a tick more
            let entered = g.skew.skew_ns.iter().zip(&ready).enumerate().any(|(i, (&s, &r))| r && s > th && was_ready >> i & 1 == 0);
            if now % tick == 0 || entered {
                self.costop_vm(vm, now, q);
                return;
            }
            Some(0)
        } else {
            next_laggard_in(&g.skew.skew_ns, &g.prog, &ready, th)
        };
        // a lasting co-stop ends at the exact moment its gang's skews are down (no tick)
        let at = due.map(|d| (now + d).div_ceil(tick) * tick);
        let at = match (at, hold_due) {
            (Some(a), Some(h)) => Some(a.min(now + h)),
            (a, h) => a.or(h.map(|h| now + h)),
        };
        if let Some(at) = at {
            let slot = self.cosched_slot(vm);
            let g = &mut self.gangs[vm as usize];
            if at < g.timer_at {
                g.timer_gen = g.timer_gen.wrapping_add(1);
                g.timer_at = at;
                q.set_timer(slot, at, Event::Cosched { vm, gen: g.timer_gen });
            }
        }
    }

    /// `strict` / `relaxed-3x`: co-stop VM `vm` as a whole. Its running vCPUs stop (their pCPUs
    /// are offered to the gang first, then dispatched), its READY ones are relabelled COSTOP
    /// (their queue entries go stale), and a gang co-start is tried at once.
    fn costop_vm(&mut self, vm: u32, now: Time, q: &mut EventQueue) {
        self.stop_holding(vm);
        self.gangs[vm as usize].costopped = true;
        self.waiting.push(vm);
        self.stats.vm_costops += 1;
        let mut freed = Vec::new();
        for v in self.vcpus_of(vm) {
            let v = v as u32;
            match self.vcpus[v as usize].state {
                VcpuState::Run => {
                    let p = self.vcpus[v as usize].pcpu;
                    self.stop(p, now);
                    if !self.idle[p as usize] {
                        self.set_idle(p);
                        q.cancel_timer(p);
                    }
                    freed.push(p);
                }
                VcpuState::Ready => self.vcpus[v as usize].stale += 1,
                _ => continue,
            }
            self.costop(v, vm, now);
        }
        self.try_costart(vm, NONE, f64::INFINITY, now, q);
        for p in freed {
            if self.idle[p as usize] {
                self.dispatch(p, now, q);
            }
        }
    }

    /// Try the gang co-start of co-stopped VM `vm` (see `cosched.rs`): the vCPUs
    /// [`gang_needs`] start at this instant if their mean virtual time is at most `max_key` and
    /// enough pCPUs are found: `free` (a pCPU being dispatched, or [`NONE`]), idle ones, then
    /// those running another VM's vCPU ahead of the gang by the wake-up margin (furthest ahead
    /// first; one that started at this instant is left alone). True if the gang started.
    fn try_costart(&mut self, vm: u32, free: u32, max_key: f64, now: Time, q: &mut EventQueue) -> bool {
        self.gang_account(vm, now);
        debug_assert_eq!(self.gangs[vm as usize].stopped_least, self.stopped_least_of(vm, now));
        let th = self.params.cosched_skew_threshold_ns;
        let g = &self.gangs[vm as usize];
        let first = g.first;
        let mut costopped = vec![false; g.n as usize];
        for &v in &g.stopped {
            costopped[(v - first) as usize] = true;
        }
        let mut need: Vec<u32> =
            gang_needs(self.params.cosched_mode, &g.skew.skew_ns, &costopped, th).into_iter().map(|i| first + i as u32).collect();
        if need.is_empty() {
            self.end_costop(vm, now, q);
            return false;
        }
        if need.len() > self.pcpus.len() || need.iter().any(|&v| self.throttled(v, now).is_some()) {
            return false;
        }
        let key = need.iter().map(|&v| self.vcpus[v as usize].key).sum::<f64>() / need.len() as f64;
        if key > max_key {
            return false;
        }
        let mut got: Vec<u32> = Vec::with_capacity(need.len());
        if free != NONE {
            got.push(free);
        }
        for p in 0..self.pcpus.len() as u32 {
            if got.len() < need.len() && self.idle[p as usize] && p != free && self.cell_admits(vm, p) {
                got.push(p);
            }
        }
        let taken = got.len();
        if taken < need.len() {
            let bar = key + self.params.wake_preempt_margin_ns as f64;
            let now_f = ns_f(now);
            // by virtual time alone: not the displacement guard (`displaceable`), which kept a
            // gang from the pCPUs of vCPUs entitled to a whole one and starved a 3-vCPU VM
            // beside VMs that fill theirs (0.005 pCPU of its 0.851); a gang cannot make its
            // time up one vCPU at a time, so it takes its pCPUs as ESX does, by priority
            let mut victims: Vec<(f64, u32)> = self
                .pcpus
                .iter()
                .enumerate()
                .filter(|&(p, pc)| {
                    pc.running != NONE && p as u32 != free && pc.run_vm != vm && pc.slice_start != now
                        // a co-scheduled vCPU that has run less than the skew threshold is left
                        // alone: its siblings run, so it would come back over the threshold at
                        // once and co-stop its own VM, whose co-start would take a pCPU back
                        && !(self.vcpus[pc.running as usize].cosched && now - pc.slice_start < th)
                })
                .filter(|&(p, _)| self.cell_admits(vm, p as u32))
                .map(|(p, pc)| (pc.run_key0 + now_f * pc.run_inv_weight, p as u32))
                .filter(|&(k, _)| k > bar)
                .collect();
            if taken + victims.len() < need.len() {
                // relaxed-3x: rather than leave an idle pCPU idle, the laggards furthest behind
                // start on the pCPUs found, the others stay co-stopped (`cosched.rs`)
                let idle_found = taken > usize::from(free != NONE);
                if !(idle_found && self.params.cosched_mode == CoschedMode::Relaxed3x) {
                    return false;
                }
                let sk = &self.gangs[vm as usize].skew.skew_ns;
                need.sort_by_key(|&v| (std::cmp::Reverse(sk[(v - first) as usize]), v));
                need.truncate(taken + victims.len());
            }
            victims.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            got.extend(victims.iter().take(need.len() - taken).map(|&(_, p)| p));
            for &p in &got[taken..] {
                self.stats.preemptions += 1;
                let r = self.stop(p, now);
                self.set_state(r, now, VcpuState::Ready);
                if let Some(l) = self.throttled(r, now) {
                    self.hold(r, l, now, q);
                } else {
                    self.enqueue(p, r);
                }
            }
        }
        // each member on its last pCPU when that is among those found, else on any other
        let mut slots = got;
        let mut on = vec![NONE; need.len()];
        for (i, &v) in need.iter().enumerate() {
            if let Some(k) = slots.iter().position(|&p| p == self.vcpus[v as usize].pcpu) {
                on[i] = slots.swap_remove(k);
            }
        }
        for o in on.iter_mut().filter(|o| **o == NONE) {
            *o = slots.pop().expect("a pCPU per member");
        }
        self.gangs[vm as usize].stopped.retain(|v| !need.contains(v));
        self.gangs[vm as usize].stopped_least = self.stopped_least_of(vm, now);
        self.stats.costarts += 1;
        for (&v, p) in need.iter().zip(on) {
            self.start(p, v, now, q);
        }
        if self.params.cosched_mode == CoschedMode::Relaxed3x && !self.gangs[vm as usize].stopped.is_empty() {
            // the gang runs; the co-stop of the others lasts until the gang's skews are down
            let g = &mut self.gangs[vm as usize];
            g.costopped = false;
            g.gang = need.iter().fold(0, |acc, &v| acc | 1 << (v - first));
            self.waiting.retain(|&w| w != vm);
            if !g.holding {
                g.holding = true;
                self.holding.push(vm);
            }
            self.hold_or_end(vm, now, q);
        } else {
            self.end_costop(vm, now, q);
        }
        true
    }

    /// End VM `vm`'s co-stop: its remaining co-stopped vCPUs (relaxed-3x's non-laggards) become
    /// READY and take an idle pCPU or queue, without preempting.
    fn end_costop(&mut self, vm: u32, now: Time, q: &mut EventQueue) {
        let g = &mut self.gangs[vm as usize];
        if g.costopped {
            g.costopped = false;
            self.waiting.retain(|&w| w != vm);
        }
        self.stop_holding(vm);
        self.gangs[vm as usize].stopped_least = Time::MAX;
        for v in std::mem::take(&mut self.gangs[vm as usize].stopped) {
            if self.vcpus[v as usize].stale > 0 && self.idle_count == 0 {
                // still queued from before the co-stop: that entry is live again
                self.vcpus[v as usize].stale -= 1;
                self.set_state(v, now, VcpuState::Ready);
                continue;
            }
            // (co-stopped, it stayed in the fair clock: it keeps its key, owed what a READY one is)
            self.set_state(v, now, VcpuState::Ready);
            self.place_with(v, now, q, f64::INFINITY);
        }
    }

    /// `relaxed-3x`: VM `vm`'s co-stop no longer lasts (it ended, or the VM co-stops again).
    fn stop_holding(&mut self, vm: u32) {
        let g = &mut self.gangs[vm as usize];
        if g.holding {
            g.holding = false;
            self.holding.retain(|&w| w != vm);
        }
    }

    /// `relaxed-3x`: is some member of VM `vm`'s gang still over the co-start skew and READY
    /// (waiting for a pCPU)? While one is, no other sibling may run: it would only add to that
    /// member's skew.
    fn gang_waits(&self, vm: u32) -> bool {
        let cs = self.params.cosched_costart_skew_ns;
        let g = &self.gangs[vm as usize];
        self.vcpus[self.vcpus_of(vm)]
            .iter()
            .zip(&g.skew.skew_ns)
            .enumerate()
            .any(|(i, (vc, &s))| g.gang >> i & 1 == 1 && s > cs && vc.state == VcpuState::Ready)
    }

    /// `relaxed-3x`, a lasting co-stop (skews accounted to `now`): end it once every member of
    /// the gang is down to the co-start skew (`cosched_costart_skew_ns`; C12's "until the skew
    /// decreased sufficiently"). Until then the VM's other vCPUs stay co-stopped, with two
    /// exceptions that keep the gang from falling further behind: while no member over the
    /// co-start skew waits READY, a held vCPU takes a pCPU that is idle ("still attempts to
    /// schedule all sibling vCPUs ... if there are enough pCPUs", A4.2) or being dispatched,
    /// when its key wins there (`hold_dispatch`); once one waits READY, every sibling running
    /// beside it is co-stopped again. Returns how long until the gang is down, if every member
    /// still over the co-start skew progresses.
    fn hold_or_end(&mut self, vm: u32, now: Time, q: &mut EventQueue) -> Option<Time> {
        let cs = self.params.cosched_costart_skew_ns;
        let g = &self.gangs[vm as usize];
        let gang = g.gang;
        if g.skew.skew_ns.iter().enumerate().all(|(i, &s)| gang >> i & 1 == 0 || s <= cs) {
            self.end_costop(vm, now, q);
            return None;
        }
        if self.gang_waits(vm) {
            let first = self.gangs[vm as usize].first;
            for v in self.vcpus_of(vm) {
                let v = v as u32;
                if gang >> (v - first) & 1 == 1 || self.vcpus[v as usize].state != VcpuState::Run {
                    continue;
                }
                let p = self.vcpus[v as usize].pcpu;
                self.stop(p, now);
                self.costop(v, vm, now);
                self.dispatch(p, now, q);
            }
        } else {
            // by key, as at a dispatch: a pCPU the VM's own co-stop has just freed is idle for
            // an instant while other VMs' vCPUs owed more are queued for it (taking it anyway
            // kept a VM that co-stops every few ms on its pCPUs past every slice end's
            // comparison: 1.747 pCPU of its 1.682, docs/cosched.md)
            while self.idle_count > 0 && !self.gangs[vm as usize].stopped.is_empty() {
                let v = self.gangs[vm as usize].stopped[0];
                let p = self.idle_pcpu_near(v, self.vcpus[v as usize].pcpu);
                if p == NONE || !self.cell_admits(vm, p) || !self.hold_dispatch(p, now, q) {
                    break;
                }
            }
        }
        self.gang_account(vm, now);
        let g = &self.gangs[vm as usize];
        let over = g.skew.skew_ns.iter().zip(&g.prog).enumerate().filter(|(i, (&s, _))| gang >> i & 1 == 1 && s > cs);
        if over.clone().any(|(_, (_, &moving))| !moving) {
            return None;
        }
        over.map(|(_, (&s, _))| s - cs).max()
    }

    /// Start the `k`-th vCPU VM `vm`'s lasting co-stop holds on `p` (idle, or being
    /// dispatched). It stayed in the fair clock while held, so its key is as a READY one's.
    fn run_held(&mut self, vm: u32, k: usize, p: u32, now: Time, q: &mut EventQueue) {
        let v = self.gangs[vm as usize].stopped.remove(k);
        self.gangs[vm as usize].stopped_least = self.stopped_least_of(vm, now);
        self.start(p, v, now, q);
    }

    /// A pCPU is being dispatched while `relaxed-3x` co-stops last: the held vCPU with the
    /// lowest key takes it if no vCPU queued for `p` has a lower one and its gang does not
    /// wait for a pCPU (`hold_or_end`). True if one started.
    #[cold]
    #[inline(never)]
    fn hold_dispatch(&mut self, p: u32, now: Time, q: &mut EventQueue) -> bool {
        // entries a VM-wide co-stop left behind are dropped first (as `dispatch` would): the
        // held vCPU competes with the best live one
        while let Some((qp, _)) = self.pick::<false>(p, now) {
            let h = self.queues.head(qp).expect("best queue is not empty");
            if self.vcpus[h as usize].stale == 0 {
                break;
            }
            self.queues.pop(qp);
            self.queued_lendee -= usize::from(self.vcpus[h as usize].lendee);
            self.vcpus[h as usize].stale -= 1;
        }
        let best = self.pick::<false>(p, now).map_or(f64::INFINITY, |(_, k)| k);
        let Some((vm, k)) = self.held_best(p, best, NONE) else {
            return false;
        };
        self.run_held(vm, k, p, now, q);
        true
    }

    /// The vCPU a lasting `relaxed-3x` co-stop holds that `p` should take, as (VM, index in its
    /// `stopped`): the lowest key below `bar`, of a VM whose gang does not wait for a pCPU, and
    /// one that may displace `displaced` (the vCPU that just ran on `p`, see `displaceable`)
    /// unless that is [`NONE`].
    fn held_best(&self, p: u32, mut bar: f64, displaced: u32) -> Option<(u32, usize)> {
        let guard = if displaced == NONE { f64::NEG_INFINITY } else { self.vcpus[displaced as usize].guard };
        let mut found = None;
        for &vm in &self.holding {
            if !self.cell_admits(vm, p) || self.gang_waits(vm) {
                continue;
            }
            for (k, &v) in self.gangs[vm as usize].stopped.iter().enumerate() {
                let vc = &self.vcpus[v as usize];
                if vc.key < bar && guard <= vc.alloc + GUARD_EPS {
                    bar = vc.key;
                    found = Some((vm, k));
                }
            }
        }
        found
    }

    /// A pCPU is being dispatched while VMs wait for a gang co-start: the waiting gang whose
    /// mean virtual time is lowest and not above what the pCPU would otherwise take starts, if
    /// it can. True if one did (the pCPU is then taken).
    #[inline(never)]
    fn gang_dispatch(&mut self, p: u32, now: Time, q: &mut EventQueue) -> bool {
        let best = self.pick::<false>(p, now).map_or(f64::INFINITY, |(_, k)| k);
        let mut order: Vec<(f64, u32)> = self
            .waiting
            .iter()
            .map(|&vm| {
                let st = &self.gangs[vm as usize].stopped;
                let mean = st.iter().map(|&v| self.vcpus[v as usize].key).sum::<f64>() / st.len().max(1) as f64;
                (mean, vm)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        order.into_iter().any(|(_, vm)| {
            self.gangs[vm as usize].costopped
                && self.cell_admits(vm, p)
                // a co-stop that ends here releases its vCPUs, and one may take `p` itself
                && (self.try_costart(vm, p, best, now, q) || self.pcpus[p as usize].running != NONE)
        })
    }

    /// A co-stop timer fired: stop every running vCPU of `vm` that now leads a sibling that is
    /// not progressing by more than the threshold.
    pub fn cosched_check(&mut self, vm: u32, gen: u32, now: Time, q: &mut EventQueue) {
        let g = &mut self.gangs[vm as usize];
        if g.timer_gen != gen {
            return;
        }
        g.timer_at = Time::MAX;
        if self.params.cosched_mode != CoschedMode::Relaxed4x {
            // strict / relaxed-3x: a READY sibling's skew passes the threshold now
            self.mark_dirty(vm);
            self.settle_cosched(now, q);
            return;
        }
        let (first, n) = (g.first, g.n);
        for v in first..first + n {
            if self.vcpus[v as usize].state != VcpuState::Run {
                continue;
            }
            let p = self.vcpus[v as usize].pcpu;
            let lead = self.lead_of(vm, now);
            if lead.blocks(self.vcpus[v as usize].progress_ns(now), self.params.cosched_skew_threshold_ns) {
                let r = self.stop(p, now);
                debug_assert_eq!(r, v);
                self.costop(v, vm, now);
                self.dispatch(p, now, q);
            }
        }
        self.mark_dirty(vm);
        self.settle_cosched(now, q);
    }

    /// Look again at every VM whose siblings' progress changed: release the co-stopped vCPUs
    /// no longer blocked (a sibling they waited for progresses), and arm the VM's timer for
    /// the moment a running vCPU would next run too far ahead.
    ///
    /// Under `relaxed-4x` a look reads only the VM's folded paces, its co-stopped vCPUs (still:
    /// their progress is constant) and its timer. While the fold stays put, the release and
    /// block moments the last look armed the timer for stay put too, and no co-stopped vCPU is
    /// caught up before that timer fires; a vCPU co-stopped since then is blocked, so neither
    /// caught up nor due for release. A look then changes nothing, so the VM is marked only
    /// when its fold moves (`repace`), when its timer fires, and at a start, stop or wake at
    /// the instant its timer is due (`look_if_due`: the look releases then, ahead of the
    /// timer), not at every start and stop: a slice continued or restarted at a new
    /// hyperthread rate moves nothing. Debug builds check each look left out
    /// (`check_unlooked`).
    #[inline(always)]
    fn settle_cosched(&mut self, now: Time, q: &mut EventQueue) {
        if self.any_dirty {
            self.settle_dirty(now, q);
        }
        #[cfg(debug_assertions)]
        self.check_unlooked(now);
    }

    #[inline(never)]
    fn settle_dirty(&mut self, now: Time, q: &mut EventQueue) {
        let cs = self.params.cosched_costart_skew_ns;
        while let Some(vm) = self.next_dirty() {
            if self.params.cosched_mode != CoschedMode::Relaxed4x {
                self.gang_settle(vm, now, q);
                continue;
            }
            let mut lead = self.lead_of(vm, now);
            // the least-progressed co-stopped vCPU is the first to catch up, and the first due
            // for release (both grow with its progress): while it has not, none has
            let least = self.gangs[vm as usize].stopped_least;
            debug_assert_eq!(least, self.stopped_least_of(vm, now));
            if least != Time::MAX && lead.caught_up(least, cs) {
                lead = self.release_caught_up(vm, lead, now, q);
            }
            // the timer moved later or cancelled as well as earlier: until the siblings
            // change again that moment is fixed, and a look before it would find no vCPU to stop
            let at = self.timer_due(vm, &lead, now);
            let slot = self.cosched_slot(vm);
            let g = &mut self.gangs[vm as usize];
            if at != g.timer_at {
                g.timer_at = at;
                if at == Time::MAX {
                    q.cancel_timer(slot);
                } else {
                    g.timer_gen = g.timer_gen.wrapping_add(1);
                    q.set_timer(slot, at, Event::Cosched { vm, gen: g.timer_gen });
                }
            }
        }
    }

    /// `relaxed-4x`: when VM `vm`'s timer is due, its siblings being `lead`: at the moment a
    /// running vCPU first leads too far, or a co-stopped one has caught up, if that is earlier;
    /// `Time::MAX` for neither.
    #[inline]
    fn timer_due(&self, vm: u32, lead: &Lead, now: Time) -> Time {
        let mut due = lead.next_block_in(self.params.cosched_skew_threshold_ns);
        let least = self.gangs[vm as usize].stopped_least;
        if least != Time::MAX {
            if let Some(d) = lead.next_release_in(least, self.params.cosched_costart_skew_ns) {
                due = Some(due.map_or(d, |e| e.min(d)));
            }
        }
        due.map_or(Time::MAX, |d| now + d)
    }

    /// Debug builds: the `relaxed-4x` VMs a start, stop or wake left unmarked since the last
    /// look (`look_if_due`) are ones a look would not change: none of their co-stopped vCPUs
    /// has caught up, and their timer is where a look would arm it.
    #[cfg(debug_assertions)]
    fn check_unlooked(&mut self, now: Time) {
        for w in 0..self.unlooked.len() {
            let mut bits = std::mem::take(&mut self.unlooked[w]);
            while bits != 0 {
                let vm = w as u32 * 64 + bits.trailing_zeros();
                bits &= bits - 1;
                let lead = self.lead_of(vm, now);
                let least = self.gangs[vm as usize].stopped_least;
                assert!(least == Time::MAX || !lead.caught_up(least, self.params.cosched_costart_skew_ns), "vm {vm} left unlooked at {now} has a vCPU to release");
                assert_eq!(self.timer_due(vm, &lead, now), self.gangs[vm as usize].timer_at, "vm {vm} left unlooked at {now}: its timer would move");
            }
        }
    }

    /// `relaxed-4x`: release VM `vm`'s co-stopped vCPUs that have caught up, judged in the
    /// order they were stopped by `lead`, the siblings as they are now, and each by the
    /// siblings as the previous release left them. Returns the siblings' lead after.
    #[inline(never)]
    fn release_caught_up(&mut self, vm: u32, mut lead: Lead, now: Time, q: &mut EventQueue) -> Lead {
        let cs = self.params.cosched_costart_skew_ns;
        let spare = std::mem::take(&mut self.spare_stopped);
        let mut stopped = std::mem::replace(&mut self.gangs[vm as usize].stopped, spare);
        let mut released = false;
        for &v in &stopped {
            // held until its laggards have caught up (the co-start skew), not only
            // until they move: see `cosched::caught_up`
            if !lead.caught_up(self.vcpus[v as usize].progress_ns(now), cs) {
                self.gangs[vm as usize].stopped.push(v);
            } else {
                // released with the key it was co-stopped with (it stayed in the fair
                // clock, owed what a READY one is), and placed as a waking vCPU is: it
                // may preempt another VM's vCPU (never a sibling's, `victim`), so it can
                // run beside the laggard it waited for. Queued only, it got a pCPU
                // beside it only when one freed within the threshold, and a VM entitled
                // to between n - 1 and n pCPUs got n - 1 (a 2-vCPU VM 1.000 of its
                // 1.123). A preemption only stops progress, which releases no one, so
                // releases do not cascade at one instant. The next ones are judged by
                // the siblings as this one's placement finds them.
                self.set_state(v, now, VcpuState::Ready);
                lead = self.lead_of(vm, now);
                self.place(v, now, q);
                released = true;
            }
        }
        stopped.clear();
        self.spare_stopped = stopped;
        self.gangs[vm as usize].stopped_least = self.stopped_least_of(vm, now);
        if released {
            // the last placement changed the siblings the lead was read from
            lead = self.lead_of(vm, now);
        }
        lead
    }

    /// The least progress of VM `vm`'s co-stopped vCPUs, `Time::MAX` when none is.
    fn stopped_least_of(&self, vm: u32, now: Time) -> Time {
        self.gangs[vm as usize].stopped.iter().map(|&v| self.vcpus[v as usize].progress_ns(now)).min().unwrap_or(Time::MAX)
    }

    /// The first limiter binding vCPU `v`'s VM whose bucket is empty, if any. A VM's own bucket
    /// empty only of its share of a pool limit does not hold it while no pool bucket above it is
    /// scarce (`limit.rs`): it is filled to run, and the pool buckets still bind. The test for a
    /// limited vCPU is inlined at every look, the chain's walk is not: most looks are at vCPUs
    /// no limit binds (all of bench-64vm's, 2/3 of bench-mixed's), and as a call each paid for
    /// the walk's prologue (3.6% of bench-64vm's instructions).
    #[inline(always)]
    fn throttled(&mut self, v: u32, now: Time) -> Option<u32> {
        if self.vcpus[v as usize].limited {
            self.throttled_chain(v, now)
        } else {
            None
        }
    }

    /// [`Self::throttled`] for a limited vCPU: walk its VM's chain.
    #[inline(never)]
    fn throttled_chain(&mut self, v: u32, now: Time) -> Option<u32> {
        let vm = self.vcpus[v as usize].vm as usize;
        // its own limiter (first in its chain), which alone may yield to the pools above it;
        // then the pools', walked without a call that could change the chain in between
        let own = &mut self.limiters[vm];
        if let Some(b) = &mut own.bucket {
            if own.refill_pending {
                return Some(vm as u32);
            }
            b.refill(now);
            if own.solo {
                // the only bucket, and no share in it to yield
                return if b.exhausted() { Some(vm as u32) } else { None };
            }
            if b.exhausted() && !self.share_yields(vm, now) {
                return Some(vm as u32);
            }
        }
        for &l in &self.chains[vm][1..] {
            let s = &mut self.limiters[l as usize];
            if let Some(b) = &mut s.bucket {
                if s.refill_pending {
                    return Some(l);
                }
                b.refill(now);
                if b.exhausted() {
                    return Some(l);
                }
            }
        }
        None
    }

    /// VM `vm`'s own bucket is exhausted: if what it enforces is the VM's share of a pool limit
    /// (not its own limit), no pool bucket above it is scarce and no other VM below those pools
    /// waits to spend their tokens within its own share (`sibling_waits`), fill it to its
    /// resume level and say so.
    #[cold]
    fn share_yields(&mut self, vm: usize, now: Time) -> bool {
        let own = &mut self.limiters[vm];
        if !own.share_mhz.is_some_and(|share| own.user_mhz.is_none_or(|u| share < u)) {
            return false;
        }
        // the VM's own limit, kept apart while the share is tighter, never yields
        if let Some(u) = own.user.as_mut() {
            u.refill(now);
            u.set_active(own.active_n, &self.bucket_rules);
            if u.exhausted() {
                return false;
            }
        }
        for &p in &self.chains[vm][1..] {
            if let Some(b) = self.limiters[p as usize].bucket.as_mut() {
                b.refill(now);
                if b.scarce(&self.bucket_rules) {
                    return false;
                }
            }
        }
        if self.sibling_waits(vm, now) {
            return false;
        }
        let b = self.limiters[vm].bucket.as_mut().expect("exhausted, so it has a bucket");
        b.tokens = b.resume;
        true
    }

    /// Another VM below a pool limit above VM `vm` (awake) has a vCPU queued READY, and its own
    /// bucket, if it has one (its share of the pool, or its own limit), is not exhausted: it
    /// waits for a pCPU to spend the pool's tokens within its share. A share yields only what
    /// its siblings leave unused (a full pool bucket would drop it, `limit.rs`), and a sibling
    /// waiting READY with its share to spend is not leaving it: it is behind in the queues.
    /// Yielding to `vm` then hands it the sibling's share. Seen in the max-min test's draws
    /// (docs/cpu-scheduler.md): a pool limited to 1,025 MHz split 147 : 200 : 677 MHz by its
    /// children's shares delivered 282 : 216 : 527, its 677-MHz child (6 vCPUs entitled to
    /// 0.043 pCPU each, released owed half a sleeper's credit) queued READY behind other VMs'
    /// vCPUs while the pool's bucket filled past its share split, and a 1-share sibling
    /// released ahead of it in the queues (weight 0.168 against 0.771) yielded 11,000 times in
    /// 40 s and ran twice its share. Cold: shares yielding only.
    #[cold]
    fn sibling_waits(&self, vm: usize, now: Time) -> bool {
        for &p in &self.chains[vm][1..] {
            let pool = &self.limiters[p as usize];
            if pool.bucket.is_none() {
                continue;
            }
            for &o in pool.vms.iter().filter(|&&o| o as usize != vm) {
                let own = &self.limiters[o as usize];
                let spends = !own.refill_pending && own.bucket.as_ref().is_none_or(|b| !b.exhausted_at(now));
                if spends && self.vcpus[self.vcpus_of(o)].iter().any(|w| w.state == VcpuState::Ready) {
                    return true;
                }
            }
        }
        false
    }

    /// Park vCPU `v` (READY, or RUN and already stopped) in MLMTD until limiter `l`'s bucket
    /// refills; a bucket at a share of 0 MHz never does, so until the share changes
    /// (`set_share_limit`).
    fn hold(&mut self, v: u32, l: u32, now: Time, q: &mut EventQueue) {
        self.set_state(v, now, VcpuState::Mlmtd);
        self.held_count += 1;
        let s = &mut self.limiters[l as usize];
        s.held.push(v);
        if !s.refill_pending {
            let b = s.bucket.as_ref().expect("held only under a limit");
            let mut wait = b.time_to_resume();
            // held by its own limit where the share would yield: look again when that refills
            // (it refills faster than the share; not exhausted, the share is what holds it)
            if let Some(u) = s.user.as_mut() {
                u.refill(now);
                u.set_active(s.active_n, &self.bucket_rules);
                if u.exhausted() {
                    wait = wait.min(u.time_to_resume());
                }
            }
            if wait != Time::MAX {
                s.refill_pending = true;
                q.push(now + wait, Event::LimitRefill { limiter: l, gen: s.refill_gen });
            }
        }
    }

    /// Schedule the pool limiters' first look at dormancy (`look_dormancy`): when the first of
    /// their buckets, which start holding one turn, could be full.
    pub fn start_dormancy(&mut self, q: &mut EventQueue) {
        let first = self.chains.len();
        let mut vms: Vec<u32> = self.limiters[first..].iter().flat_map(|s| s.vms.iter().copied()).collect();
        vms.sort_unstable();
        vms.dedup();
        self.pool_vms = vms;
        let mut at = Time::MAX;
        for s in &self.limiters[first..] {
            if let (false, Some(b)) = (s.vms.is_empty(), &s.bucket) {
                if b.rate > 0.0 {
                    at = at.min(ceil_f((b.depth - b.tokens) / b.rate) as Time);
                }
            }
        }
        if at != Time::MAX {
            q.push(at.max(1), Event::LimitDormant { gen: self.dormant_gen });
        }
    }

    /// VM `vm`'s vCPUs at `now`: the run ns a bucket binding it has been charged for or would
    /// have been (`stop_bound` charges a slice when it stops: their RUN time less what their
    /// running slices have run so far), and what their running slices have run so far.
    #[inline]
    fn vm_run(&self, vm: u32, now: Time) -> (u64, u64) {
        let (mut charged, mut pending) = (0, 0);
        for vc in &self.vcpus[self.vcpus_of(vm)] {
            if vc.state == VcpuState::Run {
                // a slice re-armed without a state change starts after `since`: in that
                // order the sum never goes below zero
                let start = self.pcpus[vc.pcpu as usize].slice_start;
                charged += vc.time_ns[VcpuState::Run as usize] + start - vc.since;
                pending += now - start;
            } else {
                charged += vc.time_ns[VcpuState::Run as usize];
            }
        }
        (charged, pending)
    }

    /// Every pool limiter's vCPUs at `now`, as [`Self::vm_run`] gives them, into `pool_sums`
    /// (indexed by limiter less the VMs' count): one pass over the VMs below some pool limit,
    /// each VM's sums added to every pool of its chain (whole ns: any order).
    fn sum_pool_run(&mut self, now: Time) {
        let first = self.chains.len();
        let mut sums = std::mem::take(&mut self.pool_sums);
        sums.clear();
        sums.resize(self.limiters.len() - first, (0, 0));
        for &vm in &self.pool_vms {
            let (c, p) = self.vm_run(vm, now);
            for &l in &self.chains[vm as usize][1..] {
                let sum = &mut sums[l as usize - first];
                sum.0 += c;
                sum.1 += p;
            }
        }
        self.pool_sums = sums;
    }

    /// The dormancy look's event fired: stale unless `gen` matches (a look at the entitlement
    /// update took its place).
    pub fn limit_dormant(&mut self, gen: u32, now: Time, q: &mut EventQueue) {
        if gen == self.dormant_gen {
            self.look_dormancy(now, q);
        }
    }

    /// Every pool limiter's look at dormancy (`limit.rs`, dormant pool limits), in one pass over
    /// the VMs below them: a dormant limiter's bucket is charged in bulk for what its vCPUs ran
    /// since it slept; then, if the bucket is far enough above the share split, the limiter
    /// sleeps (on) until its vCPUs could have drained it there, or else wakes (stays awake).
    /// All look again at the soonest of those times, an awake one `limit_dormant_max` of the burst later at most.
    pub fn look_dormancy(&mut self, now: Time, q: &mut EventQueue) {
        let first = self.chains.len();
        if self.pool_vms.is_empty() {
            return;
        }
        let hmax = self.params.limit_dormant_max * ns_f(self.params.limit_burst_ns);
        let hmin = ns_f(self.params.limit_min_slice_ns);
        self.sum_pool_run(now);
        // taken for the loop, which wakes and puts limiters to sleep (`&mut self`)
        let sums = std::mem::take(&mut self.pool_sums);
        let mut next = f64::INFINITY;
        for (i, &(charged, pending)) in sums.iter().enumerate() {
            let li = first + i;
            let s = &mut self.limiters[li];
            if s.vms.is_empty() {
                continue;
            }
            let asleep = s.asleep.is_some();
            let b = match (s.asleep.as_mut(), s.bucket.as_mut()) {
                (Some(b), _) => {
                    b.charge_bulk(now, charged - s.asleep_mark);
                    b
                }
                (None, Some(b)) => {
                    b.refill(now);
                    b
                }
                (None, None) => continue,
            };
            let mut h = 0.0;
            if s.slice_free && !s.refill_pending && s.held.is_empty() {
                // at most `width` of its vCPUs run at once, each spending a token a ns, and the
                // running slices' time so far is still to be charged
                let drain = s.width - b.rate;
                let headroom = b.tokens - ns_f(pending) - b.split_floor(&self.bucket_rules);
                h = if drain <= 0.0 { hmax } else { min_f(headroom / drain, hmax) };
            }
            if h >= hmin {
                s.asleep_mark = charged;
                if !asleep {
                    s.asleep = s.bucket.take();
                    self.relimit_below(li);
                }
                next = min_f(next, h);
            } else {
                if asleep {
                    self.wake_limiter(li);
                }
                next = min_f(next, hmax);
            }
        }
        self.pool_sums = sums;
        if next.is_finite() {
            self.dormant_gen = self.dormant_gen.wrapping_add(1);
            q.push(now + next as Time, Event::LimitDormant { gen: self.dormant_gen });
        }
    }

    /// Pool limiter `l` went to sleep: its VMs are limited only if another bucket binds them.
    fn relimit_below(&mut self, l: usize) {
        for i in 0..self.limiters[l].vms.len() {
            let vm = self.limiters[l].vms[i];
            let limited = self.chains[vm as usize].iter().any(|&c| self.limiters[c as usize].bucket.is_some());
            let r = self.vcpus_of(vm);
            for vc in &mut self.vcpus[r] {
                vc.limited = limited;
            }
            self.refresh_solo(vm);
        }
    }

    /// Dormant pool limiter `l` wakes up early (entitlements are about to change): its bucket
    /// charged in bulk up to `now`, as at a look (`look_dormancy`), its vCPUs' RUN time being
    /// `charged` (`sum_pool_run`).
    fn rouse(&mut self, l: usize, charged: u64, now: Time) {
        let s = &mut self.limiters[l];
        s.asleep.as_mut().expect("dormant").charge_bulk(now, charged - s.asleep_mark);
        self.wake_limiter(l);
    }

    /// Put dormant pool limiter `l`'s (settled) bucket back, mark its VMs limited again, and
    /// rebuild the active weights that were not kept while they were not.
    fn wake_limiter(&mut self, l: usize) {
        let s = &mut self.limiters[l];
        s.bucket = s.asleep.take();
        let vms = std::mem::take(&mut s.vms);
        let (mut a, mut n) = (0.0, 0);
        for &vm in &vms {
            let flipped = !self.vcpus[self.vcpus_of(vm).start].limited;
            let (mut va, mut vn) = (0.0, 0);
            let r = self.vcpus_of(vm);
            for vc in &mut self.vcpus[r] {
                vc.limited = true;
                if ACTIVE[vc.state as usize] {
                    va += vc.bucket_part();
                    vn += 1;
                }
            }
            a += va;
            n += vn;
            if flipped {
                // its own limiter had no bucket (else it stayed limited): only its weights
                let own = &mut self.limiters[vm as usize];
                own.active_alloc = va;
                own.active_n = vn;
            }
            // a pool bucket binds it again
            self.limiters[vm as usize].solo = false;
        }
        let s = &mut self.limiters[l];
        s.vms = vms;
        s.active_alloc = a;
        s.active_n = n;
        s.bucket.as_mut().expect("woken").set_active(n, &self.bucket_rules);
    }

    /// A limit refill event fired: release what the limiter held (another limiter up the chain
    /// may hold them again).
    pub fn limit_refill(&mut self, l: u32, gen: u32, now: Time, q: &mut EventQueue) {
        let s = &mut self.limiters[l as usize];
        if s.refill_gen != gen || !s.refill_pending {
            return;
        }
        s.refill_pending = false;
        self.release_held(l, now, q);
        self.settle_cosched(now, q);
    }

    fn release_held(&mut self, l: u32, now: Time, q: &mut EventQueue) {
        let held = &mut self.limiters[l as usize].held;
        if held.len() == 1 {
            // the usual release (a 1-vCPU VM's own limit): taken off its list, which is then
            // empty while it is placed, as the swap below leaves it
            let v = held.pop().expect("one held");
            self.held_count -= 1;
            self.release_one(v, now, q);
            return;
        }
        // the list is swapped with an empty one that keeps its room (`held_spare`), and its own
        // room is kept for the next release: a limited VM's vCPUs are held and released every
        // few ms, and a fresh list each time was an allocation and a free per hold
        let mut held = std::mem::take(&mut self.held_spare);
        std::mem::swap(&mut held, &mut self.limiters[l as usize].held);
        self.held_count -= held.len();
        for &v in &held {
            self.release_one(v, now, q);
        }
        held.clear();
        self.held_spare = held;
    }

    /// Place `v`, just released by a limit (MLMTD, out of every held list).
    #[inline(always)]
    fn release_one(&mut self, v: u32, now: Time, q: &mut EventQueue) {
        self.place_key(v, now, true);
        self.set_state(v, now, VcpuState::Ready);
        if self.vcpus[v as usize].cosched {
            // READY again: its skew may now co-stop its VM (strict, relaxed-3x)
            let vm = self.vcpus[v as usize].vm;
            self.mark_dirty(vm);
        }
        // it may preempt only a vCPU ahead of the fair clock (see `place_with`)
        let clock = self.clock.value(now);
        self.place_with(v, now, q, clock);
    }

    /// Update every powered-on vCPU's demand estimate from its time since the last update (at
    /// most `interval` ns): `demand = w * x + (1 - w) * demand`, in pCPUs, where
    ///
    /// ```text
    ///     x = (run + held * (held / (held + rest))^p) / span
    /// ```
    ///
    /// `held` is its READY + MLMTD + COSTOP time in the span (it wanted to run and was kept
    /// from it), `rest` its idle and wait time, `p` = `demand_wait_power` (3). The estimate is what
    /// the vCPU would use with no contention and no limit (vCenter's demand), and the question is
    /// how much of its held time was demand left unserved. A vCPU that never idles is backlogged:
    /// all of it was (`x = (run + held) / span`). One that mostly idles met transient
    /// collisions: its wake-ups waited on busy pCPUs, but its queue emptied and the work it
    /// delayed was done later, so its run time alone is its demand. Counting every held ns
    /// (the runnable share) inflated such a VM's estimate by its whole ready share, and the
    /// water-fill took that excess from the VMs held back (a duty-0.67 VM with 5% ready estimated
    /// at 0.72, a floor-bound neighbour 6 points of a pCPU over its allocation). The weight
    /// `(held / (held + rest))^p` is 1 for the first kind and near 0 for the second, so the
    /// estimate errs by `held^(p+1) / (held + rest)^p`, second order and smaller in the ready
    /// share. In a VM not held back at the last update (`held_back`) on a host whose vCPUs may run
    /// on any pCPU (no scheduler cells, no `numa_confine`), a vCPU that halted or blocked in the
    /// span (`rest > 0`) counts none of its READY time: its queue emptied in the span, so the work
    /// READY delayed was done in it and its run time is its demand (READY after its last halt is
    /// read at the next update, if it lasts that span). Its MLMTD and COSTOP time still count (what
    /// it would use with no limit). The weight alone left such a VM read above its use near
    /// saturation: on 7 pCPUs a 4-vCPU VM reserving its limit, 2 ms bursts at duty 0.80, READY 4.6%
    /// of the time, read 3.29 pCPUs for the 3.20 it used, and the water-fill took the 9 points from
    /// the VM at the water level (the max-min census, docs/cpu-scheduler.md). A vCPU of such a VM
    /// that never halted in the span counts its READY time only up to its entitlement (`alloc`): as
    /// much of it as would have brought its run time up to what it was entitled to, none once it
    /// ran that much. The water-fill gave the VM all it asked for, so the scheduler owed it that
    /// much and the wait for it was demand; READY beyond it is the wait of a queue served at about
    /// its arrival rate that did not happen to empty in the span, not work the VM asked for and was
    /// refused. Its weight is its share at the water level, at least its entitlement
    /// (`entitlement.rs`), so a VM whose demand rises runs past its entitlement, its estimate rises
    /// with its run time, and once it reaches that share the water-fill holds it back and READY
    /// counts in full. Counted in full, one second without a halt read a whole pCPU: on 2 pCPUs a
    /// 1-vCPU VM reserving 0.97 pCPU, 2 ms bursts at duty 0.74 and runnable 99.5% of the time,
    /// missed a halt one second in five, its estimate jumped from 0.74 to 0.87 each time, and the
    /// slack it left went to the VMs at the water level by their weights, one of them 0.52 points
    /// over its allocation (draw 2134 of the max-min census). Up to the entitlement alone, though,
    /// such an estimate has no pull of its own: any value from the run time up reads as itself
    /// (READY fills it to the entitlement the estimate set), so it stays where its history put it,
    /// rising when a second runs past it and never falling while the vCPU does not halt. A busy VM
    /// whose first second ran a hair under a whole pCPU per vCPU (its bursts arrive at their
    /// phases) read that for the rest of the run, under its demand, and the water-fill handed the
    /// difference to the VM at the water level (on 8 pCPUs a busy 7-vCPU VM read 699.35 points for
    /// 700, and a 4-vCPU VM beside it got 1.99 over its allocation: pooled draw 46096). So READY
    /// also counts up to `demand_probe_margin` (0.01 pCPU) over the run where that is more: a
    /// probe. The water-fill offers the vCPU that much more than it ran. A queue that grows takes
    /// the offer, runs more, and its estimate climbs again (by at most the EWMA's weight times the
    /// margin an interval: no ready-time spike), until it halts (its queue drained: it reads its
    /// run), is held back (READY counts whole) or reaches a whole pCPU (guarded, `displaceable`);
    /// a queue served at its rate does not take it, and its estimate stops at its run plus the
    /// margin, the fixed point of `e = run(e) + m` instead of any point above the run. The probe
    /// never reads less than the entitlement rule, so it adds at most the margin to the over-read
    /// of a queue served at its rate (which the entitlement rule bounds by the highest run of its
    /// history). A held-back VM keeps all of it
    /// wherever its entitlement held it back (below for the rest): it gets its share whatever
    /// the estimate says above it, and where the guest thinks after each burst (closed loop)
    /// READY time is demand lost, not delayed; counted as delay
    /// there, bench-mixed's held-back closed-loop VMs read their use as their demand (web-b 242 MHz
    /// of 1,950). Nor where cells or NUMA confinement keep a VM to part of the host: the water-fill
    /// sees only the whole host's contention, so a VM it does not hold back may still be held back
    /// in its cell, and the cell balancer, which moves VMs by their estimates, then saw the crowded
    /// cell's VMs at their use (a case built to move VMs: 1 move in 5 s, not 5 or more). The first
    /// measurement after power-on replaces the guess the estimate starts from (a whole pCPU per
    /// vCPU) instead of blending with it, so a VM's entitlement reflects what it does after one
    /// interval rather than three or four.
    ///
    /// A satisfied vCPU that never halted reads no more than its drain rate ([`Drain`]). The two
    /// rules above have no downward pull: such a vCPU reads the larger of its entitlement and its
    /// run plus the margin, so its estimate is the running maximum of its seconds, and a queue
    /// served at about its arrival rate, whose seconds run a little over it and a little under,
    /// reads over it for good (drawn-pools-27002438: a 1-vCPU VM at duty 0.96 read 0.96-0.99 and
    /// entitled itself so, and its held-back neighbour lost 1.3 points of a pCPU; the same in
    /// 4871's 4-vCPU VM at 0.98 and 395's at 0.87). What the scheduler does see is when a queue
    /// was empty: an interval with a halt. Between the ends of two such intervals the vCPU ran
    /// what arrived (its queue empty, or nearly, at both), so that run over that time is its
    /// arrival rate, measured rather than inferred from READY: kept over the closed epochs, each
    /// weighed by `exp(-age / demand_drain_horizon_ns)`, and for the open epoch (the intervals
    /// since its last halt) its run so far, a lower bound of what arrived in it. Such a vCPU reads
    /// at most the larger of the two. The reading comes down as well as up: every epoch that
    /// closes measures the rate afresh, a second that runs over it drains a backlog whose work the
    /// rate already counts, and demand that rises shows as an open epoch whose run outgrows it.
    /// Only while the open epoch is no longer than the closed ones (their weighed span): a vCPU
    /// runnable for longer than any drain it has shown may hold a queue that grows, which its run
    /// cannot show (collisions keep it under its arrivals and it never halts: drawn-pools-2500's
    /// vm3, duty 0.98, runs 0.94 a second from 3 s, its one closed epoch the start-up's, which ran
    /// 0.70 at 2 s; read at that rate without this bound, vm2 took 4.24 points over its share), so
    /// it reads as above; so does a vCPU that never halted at all (a busy one has no epoch).
    ///
    /// A drained backlog leaves no estimate above the entitlement. A VM held back below its
    /// demand builds a backlog (an open-loop guest queues its work); while it lasts every vCPU
    /// with queued work is runnable, and READY counts whole for a held-back VM, so the VM reads
    /// its vCPU count rather than its arrival rate. That is demand while it lasts (it would use
    /// that much uncontended), but once the queue has drained the readings are stale, and the
    /// blend would carry them on for seconds at the EWMA's pace. So a VM held back at the last
    /// update, some vCPU of which read a backlog (waited and never halted in an interval) since
    /// it was last not held back, and whose vCPUs' measurements now sum to less than its
    /// entitlement (it asked for less than it could have had: the entitlement did not bind and
    /// the backlog is gone) is estimated at no more than that entitlement: its vCPUs' estimates
    /// are scaled down to sum to it ([`cap_stale_claim`]); the blend goes on from there.
    /// Where every VM powers on at once from the guess, the first water-fill holds the low-share
    /// ones back and they build just such backlogs: on 6 pCPUs a 6-vCPU VM at duty 0.14 (84
    /// points) read 473 points at 3 s and, blended at weight 0.5, 279, 181, 133, 108 and 96 from
    /// then on while it used its 84 from 4 s; the water-fill gave it the excess, and the
    /// backlogged VM at its pool's water level got 66.7 points over 5-15 s for its 76.5 (the
    /// max-min census, docs/cpu-scheduler.md: seed 389). Now it reads its 94 points of
    /// entitlement at 4 s and 89 at 5 s. The backlog condition is what keeps a VM at the water
    /// level alone: one whose demand is about its entitlement measures a little under it in
    /// some intervals and over it in others, its estimate's excess is READY of collisions, not a
    /// backlog, and cutting it there flipped such VMs in and out of being held back (bench-mixed's
    /// r4, duty 0.75 at a 0.75 entitlement: 6% more CPU time for the hour, in the preemption
    /// paths a VM below the water level opens). A closed-loop guest halts after every burst, so
    /// it never reads a backlog. Not with cells or `numa_confine`, as above: there the
    /// entitlement is not all that binds.
    ///
    /// A vCPU of a held-back VM that halted in the span and ran less than its entitlement counts
    /// its READY time only up to that entitlement, as a satisfied one that never halted does: its
    /// queue emptied and it ran under what it was entitled to, so the entitlement did not hold it
    /// back; the wait for that much was the scheduler's debt, the rest the delay of collisions.
    /// Counted in full, collisions that the fair clock leaves on one vCPU (it evens run time, not
    /// waits) read as demand and keep a VM held back that wants less than its share: on 6 pCPUs
    /// a 6-vCPU VM at duty 0.74 (4.44 pCPUs; its share 4.61) had one vCPU READY 25% and idle 0.6%
    /// of every second (fixed bursts whose phases put the collisions on it; its siblings waited
    /// 0-8%), read 0.98 there and 4.68 in all, stayed held back from the power-on guess on, and
    /// the lone backlogged 1-vCPU VM beside it was entitled to 0.287 pCPU for the 0.46 max-min
    /// gives it (drawn-flat-2402 of the max-min test's open cases). A held-back vCPU that ran its
    /// entitlement (the entitlement bound it) or never halted (a backlog) counts all of it.
    ///
    /// One walk over the vCPUs brings each one's counters to `now` ([`Self::account_all`]),
    /// updates its estimate and, with `migration_throttle`, its load share: with 1,024 vCPUs
    /// the array is far larger than the L1 cache, and three walks read every line three times.
    /// Each vCPU's arithmetic is the same, in the same order, as in three separate walks.
    pub fn update_demand(&mut self, now: Time, interval: Time) {
        // entitlements, slices and share limits change next: a dormant pool's condition was
        // checked against the old ones (`look_dormancy`), so each wakes, to be looked at again
        // once they have changed. Waking changes no vCPU's time, so one sum serves them all.
        let first = self.chains.len();
        let mut summed = false;
        for l in first..self.limiters.len() {
            if self.limiters[l].asleep.is_some() {
                if !summed {
                    self.sum_pool_run(now);
                    summed = true;
                }
                let charged = self.pool_sums[l - first].0;
                self.rouse(l, charged, now);
            }
        }
        if self.ht.on {
            self.ht_settle_all(now);
        }
        let w = self.params.demand_ewma_weight;
        // at most 32 (`CpuSchedParams::validate`)
        let power = self.params.demand_wait_power;
        let probe = self.params.demand_probe_margin;
        let margin = self.params.short_margin;
        let throttle = self.params.migration_throttle;
        let busy: Vec<u64> = if throttle { (0..self.pcpus.len()).map(|p| self.pcpu_busy_ns(p as u32, now)).collect() } else { Vec::new() };
        self.served.fill(Served::default());
        self.vm_demand.fill(0.0);
        // READY as delay only where the water-fill sees all the contention (the doc comment)
        let whole_host = !self.cells.on && !self.params.numa_confine;
        // the per-VM arrays cut to one length, so that one bounds check on a vCPU's VM serves
        // all four (each is one entry a VM)
        let vms = self.served.len();
        let served_vm = &mut self.served[..vms];
        let held_back = &self.held_back[..vms];
        let backlogged = &mut self.backlogged[..vms];
        let vm_demand = &mut self.vm_demand[..vms];
        let horizon = ns_f(self.params.demand_drain_horizon_ns);
        // an epoch's weight, kept for the last span: most epochs that close span one interval,
        // the same for every vCPU, so one `exp` an update serves them
        let (mut keep_span, mut keep) = (f64::NAN, 0.0);
        for ((vc, first), dr) in self.vcpus.iter_mut().zip(self.first_measured.iter_mut()).zip(self.drains.iter_mut()) {
            // (read once: the stores to the record below made each use load it again, and check
            // it against the arrays' length again)
            let vm = vc.vm as usize;
            vc.accrue(now);
            if throttle {
                vc.update_load_share(&busy, &self.busy_mark);
            }
            let span = now.saturating_sub(vc.demand_since).min(interval);
            // a powered-off vCPU, or one with no time measured, keeps its estimate
            if vc.state != VcpuState::Off && span != 0 {
                // the ns as floats through `i64` (`ns_f`: one instruction each where a `u64` takes
                // six; the same values below 2^63 ns)
                let span_f = ns_f(span);
                let runnable = vc.runnable_ns();
                let ran = vc.time_ns[VcpuState::Run as usize];
                let run = ns_f(ran - vc.ran_mark);
                let held = ns_f(runnable - vc.runnable_mark) - run;
                let rest = (span_f - run - held).max(0.0);
                let ready_ns = vc.time_ns[VcpuState::Ready as usize];
                let ready = ns_f(ready_ns - vc.ready_mark);
                vc.ready_mark = ready_ns;
                // READY time of a vCPU in a VM not held back is delay, not demand, beyond what
                // brings it up to its entitlement, or `probe` over its run if that is more (the
                // doc comment): none of it if it halted in the span; its MLMTD and COSTOP time
                // still count. Picked, not branched over (`pick_f`): whether a vCPU halted is a
                // coin toss from one to the next. With `held` zero the weighed time is not taken
                // (a NaN if `rest` is zero too).
                let satisfied = whole_host & !held_back[vm];
                let owed = (vc.alloc * span_f - run).max(0.0);
                let halted = rest > 0.0;
                // (`max_f`: neither side is NaN, `owed` by its `max` and `probe` by validation)
                let delay = ready - pick_f(halted, 0.0, ready.min(max_f(owed, probe * span_f)));
                // a vCPU of a held-back VM that halted and ran under its entitlement counts its
                // READY up to that entitlement, as a satisfied one that never halted does: its
                // entitlement did not hold it back (the doc comment)
                let unbound = whole_host & halted & (owed > 0.0);
                let counted = held - pick_f(satisfied, delay, pick_f(unbound, ready - ready.min(owed), 0.0));
                let weighed = counted * powi_u(held / (held + rest), power);
                let waited = pick_f(held > 0.0, weighed, 0.0);
                let frac = ((run + waited) / span_f).min(1.0);
                // a satisfied vCPU that never halted reads no more than its drain rate: what it ran
                // over its closed epochs, or over the open one if that is more, while the open
                // one is no longer than the closed ones (the doc comment)
                let e_ran = dr.ran + run;
                let e_span = dr.span + span_f;
                let at_rate = satisfied & !halted & (held > 0.0) & (e_span <= dr.closed_span);
                let frac = if at_rate { min_f(frac, max_f(dr.closed_ran / dr.closed_span, e_ran / e_span)) } else { frac };
                if halted {
                    if dr.open {
                        if e_span != keep_span {
                            (keep_span, keep) = (e_span, (-e_span / horizon).exp());
                        }
                        dr.closed_ran = dr.closed_ran * keep + e_ran;
                        dr.closed_span = dr.closed_span * keep + e_span;
                    }
                    dr.open = true;
                    dr.ran = 0.0;
                    dr.span = 0.0;
                } else if dr.open {
                    dr.ran = e_ran;
                    dr.span = e_span;
                }
                let served = &mut served_vm[vm];
                served.run += run / span_f;
                served.held += held / span_f;
                served.alloc += vc.alloc;
                served.measured += frac;
                served.backlog |= (rest == 0.0) & (held > 0.0);
                // it waited and never halted: a backlog (`cap_stale_claim`)
                backlogged[vm] |= (rest == 0.0) & (held > 0.0);
                vc.runnable_mark = runnable;
                vc.ran_mark = ran;
                vc.demand_since = now;
                // the first measurement replaces the power-on guess rather than blending with it
                vc.demand = if vc.demand_measured { w * frac + (1.0 - w) * vc.demand } else { frac };
                *first = !vc.demand_measured;
                vc.demand_measured = true;
                vc.busy = rest == 0.0;
            }
            // (every vCPU's estimate, kept or new, goes into its VM's sum)
            vm_demand[vm] += vc.demand;
        }
        if throttle {
            self.busy_mark = busy;
        }
        // one walk over the VMs: the stale claims capped, and the four flags (the arrays cut to
        // one length, so that the loop's bound serves every index)
        let served = &self.served[..vms];
        let (held_back, backlogged, vm_demand) = (&self.held_back[..vms], &mut self.backlogged[..vms], &mut self.vm_demand[..vms]);
        let (under, short, spent, balances) = (&mut self.under[..vms], &mut self.short[..vms], &mut self.spent[..vms], &mut self.short_balance[..vms]);
        for vm in 0..vms {
            let Served { run, held, alloc, backlog, measured } = served[vm];
            if whole_host {
                // (`cap_stale_claim`: the doc comment's check of a VM held back last time)
                if !held_back[vm] {
                    backlogged[vm] = false;
                } else if backlogged[vm] {
                    let fresh = measured >= alloc || vm_demand[vm] <= alloc;
                    if !fresh {
                        backlogged[vm] = false;
                        vm_demand[vm] = cap_stale_claim(&mut self.vcpus, &self.gangs[vm], alloc, vm_demand[vm]);
                    }
                }
            }
            under[vm] = held > 0.0 && run < alloc;
            // entitled less ran, carried while its vCPUs wait (the module's header)
            let balance = &mut balances[vm];
            *balance = if held > 0.0 { (*balance + alloc - run).clamp(-alloc, alloc) } else { 0.0 };
            short[vm] = held > 0.0 && *balance > alloc * margin;
            spent[vm] = short[vm] && backlog;
        }
        if self.params.numa_home_nodes && now - self.last_rebalance >= self.params.numa_rebalance_period_ns {
            self.last_rebalance = now;
            self.rebalance_numa();
        }
        if self.params.extended_fairness {
            self.extended_fairness(now);
        }
    }

    /// Extended fairness (`CpuSchedParams::extended_fairness`, research/cpu.md C23): add each
    /// running vCPU's LLC co-runners to its VM's crowding (per vCPU of the VM); every period,
    /// pair a running vCPU of the most crowded VM on the busiest LLC with a running vCPU of the
    /// least crowded VM on a less busy LLC, to swap at the next slice end of either.
    fn extended_fairness(&mut self, now: Time) {
        let busy: Vec<usize> = self.llc_range.windows(2).map(|w| self.idle[w[0]..w[1]].iter().filter(|&&i| !i).count()).collect();
        let llc_busy = |p: usize, s: &Self| busy[s.llc_of[p] as usize];
        let mut running = Vec::new();
        for (p, pc) in self.pcpus.iter().enumerate() {
            if pc.running != NONE {
                let vm = self.vcpus[pc.running as usize].vm as usize;
                running.push((p, pc.running, vm));
            }
        }
        for &(p, _, vm) in &running {
            self.crowd[vm] += (llc_busy(p, self) - 1) as f64 / self.gangs[vm].n as f64;
        }
        if now - self.last_fairness < self.params.extended_fairness_period_ns {
            return;
        }
        self.last_fairness = now;
        let crowd = &self.crowd;
        let by_crowd = |a: &&(usize, u32, usize), b: &&(usize, u32, usize)| crowd[a.2].total_cmp(&crowd[b.2]).then(a.2.cmp(&b.2));
        let (Some(hi), Some(lo)) = (running.iter().max_by(by_crowd), running.iter().min_by(by_crowd)) else { return };
        let (hi_vm, lo_vm) = (hi.2, lo.2);
        if hi_vm == lo_vm || crowd[hi_vm] - crowd[lo_vm] < 1e-9 {
            return;
        }
        let pick = |vm: usize, most: bool| {
            let mine = running.iter().filter(move |r| r.2 == vm);
            if most { mine.max_by_key(|r| (llc_busy(r.0, self), r.0)) } else { mine.min_by_key(|r| (llc_busy(r.0, self), r.0)) }
        };
        let pair = match (pick(hi_vm, true), pick(lo_vm, false)) {
            (Some(a), Some(b)) if llc_busy(a.0, self) > llc_busy(b.0, self) => Some((a.1, b.1)),
            _ => None,
        };
        if pair.is_some() {
            self.fair_pair = pair;
        }
    }

    /// At a slice end of `v` (stopped, `p` free): if `v` is one of the pair extended fairness
    /// chose and its partner still runs on another pCPU, swap them (both are counted as
    /// moves, paying their refill in the execution-speed model). The pair is spent either way.
    fn fair_swap(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) -> bool {
        let Some((a, b)) = self.fair_pair else { return false };
        let other = if v == a { b } else if v == b { a } else { return false };
        self.fair_pair = None;
        let op = self.vcpus[other as usize].pcpu;
        if op == p || self.pcpus[op as usize].running != other || (self.cells.on && !(self.in_cell(v, op) && self.in_cell(other, p))) {
            return false;
        }
        let o = self.stop(op, now);
        self.start(op, v, now, q);
        self.start(p, o, now, q);
        true
    }

    /// Set every vCPU's weight and entitlement (pCPUs) at `now`: `per_vm[vm]` gives both for
    /// each vCPU of VM `vm`. Every key is rescaled so that its
    /// lag in CPU time survives the change, clamped to `max_lag_ns`, and rebased so that the
    /// fair clock reads zero; the run queues, the clock's sums and the limiters' active weights
    /// are rebuilt from scratch, which also clears their float drift. `new_keys` is scratch:
    /// the run queues' rekey reads the new keys from this dense copy in queue order, not from a
    /// line of each queued vCPU's record.
    pub fn set_weights(&mut self, now: Time, per_vm: &[VcpuShare], new_keys: &mut Vec<f64>) {
        if self.ht.on {
            self.ht_settle_all(now);
        }
        let clock = self.clock.value(now);
        let core = self.core_mhz as f64;
        // charge running vCPUs up to now, so that every key is current (the clock's sums are
        // rebuilt below)
        for p in 0..self.pcpus.len() {
            let pc = &mut self.pcpus[p];
            if pc.running != NONE {
                let vc = &mut self.vcpus[pc.running as usize];
                vc.key += ns_f(now - pc.key_mark) * vc.inv_weight;
                pc.key_mark = now;
            }
        }
        let max_lag = self.params.max_lag_ns as f64;
        let max_debt = self.params.max_debt_ns as f64;
        let backlog_debt = max_f(self.params.max_backlog_debt_ns as f64, max_debt);
        self.clock.reset(0.0);
        let limiters = if self.limits_set { &mut self.limiters[..] } else { &mut [] };
        for l in limiters {
            l.active_alloc = 0.0;
            l.active_n = 0;
        }
        // one pass: new weight and key, then the clock's sums and the limiters' active weights
        // rebuilt from them (in vCPU order, as before, so the float sums are the same)
        for (h, sh) in self.held_back.iter_mut().zip(per_vm) {
            *h = sh.held;
        }
        // the least any powered-on vCPU is entitled to: a vCPU entitled to no more than that (a
        // preemption's tolerance aside) can pass no preemption on (`pass_on` takes only a pCPU
        // running a vCPU entitled to less), and on a host where every VM is held back at one
        // water level that is every vCPU, so the preemption path skips `pass_on`'s scan
        // The same walk takes the heaviest powered-on vCPU's weight, so that the main pass can
        // set each slice (which scales by it) without a walk of its own over every record. That
        // walk is the lag walk below: a walk of its own cost 12 instructions a vCPU an update
        let (mut least, mut heaviest) = (f64::INFINITY, MIN_WEIGHT);
        // (the lag walk below stores every entry: last update's room is not zeroed again)
        if new_keys.len() != self.vcpus.len() {
            new_keys.clear();
            new_keys.resize(self.vcpus.len(), 0.0);
        }
        let span = ns_f(now - self.weights_at);
        self.weights_at = now;
        let was_any = self.any_at_floor;
        if was_any {
            self.floor_balances(clock, now, span);
        }
        // every lag in CPU time against the old clock (a floor-held VM's its balance's), then
        // the debts past `max_debt` forgiven evenly in virtual time (`even_debts`)
        // A vCPU of a VM held back now that never halted over the interval keeps its whole
        // debt (the module's header), where the water-fill sees all the contention
        let whole_host = !self.cells.on && !self.params.numa_confine;
        let mut over = false;
        for (((vc, lag), bound), &first) in self.vcpus.iter().zip(new_keys.iter_mut()).zip(self.debt_bound.iter_mut()).zip(&self.first_measured) {
            let sh = &per_vm[vc.vm as usize];
            let on = vc.state != VcpuState::Off;
            if on {
                least = min_f(least, sh.alloc);
                heaviest = heaviest.max(sh.weight.max(MIN_WEIGHT));
            }
            *lag = (clock - vc.key) * vc.weight;
            if was_any && self.at_floor[vc.vm as usize].0 && on {
                *lag += self.floor_shift[vc.vm as usize];
            }
            // a start-up debt (run up under the power-on guesses' weights, before the first
            // update that measured this vCPU's demand) is kept only up to what its measured
            // entitlement repays in one interval: past that it is the race of the power-on
            // weights, not service taken from others (the module's header)
            if first && on {
                *lag = lag.max(-sh.alloc * span);
            }
            // (`busy` is on the record's last line: read only for a held-back VM's vCPU)
            let keeps = whole_host && sh.held && vc.busy;
            *bound = if keeps { backlog_debt } else { max_debt };
            over |= (*lag < -*bound) & on;
        }
        self.first_measured.fill(false);
        // ns of slice per pCPU of weight: the quantum over the heaviest vCPU's weight (at most
        // a pCPU), so that every slice spans the same virtual time
        let per_weight = self.params.quantum_ns as f64 / heaviest.min(1.0);
        // each slice is the quantum scaled by the weight (why: the module's header). A
        // co-scheduled vCPU keeps the whole quantum: its VM runs in gangs, and shorter slices
        // broke them up (relaxed-3x: a 3-vCPU VM got 0.81 of its 1.26 pCPU)
        let q_ns = self.params.quantum_ns;
        if over {
            self.even_debts(per_vm, new_keys);
        }
        let mut any_at_floor = false;
        // the most a vCPU at its VM's limit is entitled to: a VM held back below that may owe
        // it a gap (`lend_width`)
        let mut lender = f64::NEG_INFINITY;
        // the per-VM arrays cut to one length, so that the check on a vCPU's VM for `per_vm`
        // serves all three
        let vms = per_vm.len();
        let (under, spent, short) = (&self.under[..vms], &self.spent[..vms], &self.short[..vms]);
        for (v, ((vc, new_key), &debt_bound)) in self.vcpus.iter_mut().zip(new_keys.iter_mut()).zip(&self.debt_bound).enumerate() {
            let sh = per_vm[vc.vm as usize];
            let w = sh.weight.max(MIN_WEIGHT);
            // (a VM held at its reservation floor until now: its vCPUs' lags sum to the
            // reservation's balance, `floor_balances`, clamped below as every lag is: owing at
            // most `max_debt`, the module's header says why not `max_lag`)
            let lag = *new_key;
            vc.alloc = sh.alloc;
            // its VM's entitlement in MHz against its own limit (not a share of a pool's); the
            // VM's vCPU count (a line of its `Siblings`) read only for a limited one
            vc.at_limit = vc.limited
                && self.limiters[vc.vm as usize].user_mhz.is_some_and(|l| sh.alloc * f64::from(self.gangs[vc.vm as usize].n) * core >= l * (1.0 - 1e-9));
            if vc.at_limit {
                lender = max_f(lender, sh.alloc);
            }
            vc.passes_on = sh.held & under[vc.vm as usize] & (least < sh.alloc - GUARD_EPS);
            // a vCPU that never halted, of a VM reserving a whole pCPU per vCPU, demands its
            // reservation, and is guarded at it whatever its estimate let the water-fill give
            // it (the module's header)
            let reserved = max_f(sh.alloc, sh.reserved);
            // (`busy` is on the record's last line: read only for such a VM)
            let whole = reserved >= FULL_PCPU && vc.busy;
            vc.guard = pick_f(whole, reserved, pick_f(sh.satisfied | (sh.alloc >= FULL_PCPU), sh.alloc, f64::NEG_INFINITY));
            // served short: shielded from wakers entitled to less, or from every waker not
            // entitled to a whole pCPU once its slack is spent (`spent`)
            let shield = pick_f(spent[vc.vm as usize], FULL_PCPU, sh.alloc);
            // (no weaker than its guard, which its reservation may set above its entitlement)
            vc.shield = pick_f(short[vc.vm as usize], max_f(shield, vc.guard), vc.guard);
            let lag = lag.clamp(-debt_bound, max_lag);
            // one held there from now (powered on: its vCPUs are not off) starts a balance
            if sh.at_floor {
                any_at_floor = true;
                self.floor_marks[v] = (lag, vc.ran_by(now));
            }
            vc.weight = w;
            vc.slice = if vc.cosched { q_ns } else { weighted_slice(w, per_weight, &self.slice_range) };
            vc.inv_weight = 1.0 / w;
            vc.key = -lag * vc.inv_weight;
            *new_key = vc.key;
            self.clock.join_if(IN_CLOCK[vc.state as usize], vc.weight, vc.key);
            if vc.limited && ACTIVE[vc.state as usize] {
                for &l in &self.chains[vc.vm as usize] {
                    self.limiters[l as usize].active_alloc += vc.bucket_part();
                    self.limiters[l as usize].active_n += 1;
                }
            }
        }
        // a balance starts only at an update whose demands were all measured: before, the water
        // level comes from power-on guesses (a whole pCPU per vCPU), and a VM it put at its
        // floor ran far beyond it while the others started up
        let measured = any_at_floor && self.vcpus.iter().all(|vc| vc.demand_measured || vc.state == VcpuState::Off);
        self.any_at_floor = measured;
        // with no vCPU at its limit no VM is a lendee now, and with none last time (every VM
        // has a vCPU, so a lendee adds to `lend_width`) no flag flips: the walk over every VM
        // is skipped (a host without limits)
        if lender > f64::NEG_INFINITY || self.lend_width != 0 {
            let mut flipped = false;
            for ((l, sh), g) in self.lendee.iter_mut().zip(per_vm).zip(&self.gangs) {
                let lendee = sh.held && sh.alloc < lender;
                if lendee != *l {
                    // (its vCPUs' copies of the flag, and the count of their queued entries below)
                    *l = lendee;
                    flipped = true;
                    for vc in &mut self.vcpus[g.first as usize..(g.first + g.n) as usize] {
                        vc.lendee = lendee;
                    }
                }
            }
            if flipped {
                self.queued_lendee = self.count_queued_lendee();
            }
            self.lend_width = self.lendee.iter().zip(&self.gangs).filter(|(&l, _)| l).map(|(_, g)| g.n as usize).sum();
        }
        if was_any || any_at_floor {
            for (f, sh) in self.at_floor.iter_mut().zip(per_vm) {
                *f = (sh.at_floor && measured, sh.share);
            }
        }
        let limiters = if self.limits_set { &mut self.limiters[..] } else { &mut [] };
        for l in limiters {
            if let Some(b) = &mut l.bucket {
                b.set_active(l.active_n, &self.bucket_rules);
            }
        }
        // whether a pool bucket's slice allowance can bind at the share split (dormancy needs
        // it not to): `tokens x mine / active` there is at least `floor x mine / all`. Pools'
        // limiters only (after the VMs' own, which list no VMs): not a line of each of the
        // 1,024 VMs' limiters every second on a 1,024-VM host
        for l in self.chains.len()..self.limiters.len() {
            let s = &self.limiters[l];
            let Some(b) = s.bucket.as_ref().filter(|_| !s.vms.is_empty()) else { continue };
            let floor = b.split_floor(&self.bucket_rules);
            let all: f64 = s.vms.iter().flat_map(|&vm| self.vcpus[self.vcpus_of(vm)].iter()).map(|vc| vc.bucket_part()).sum();
            let free = s.vms.iter().flat_map(|&vm| self.vcpus[self.vcpus_of(vm)].iter()).all(|vc| {
                let mine = vc.bucket_part();
                // a millionth of margin for the roundings of the active sum and the product
                floor * (mine / max_f(all, mine)) >= ns_f(vc.slice) * 1.000_001
            });
            self.limiters[l].slice_free = free;
        }
        let now_f = ns_f(now);
        for pc in &mut self.pcpus {
            if pc.running != NONE {
                let vc = &self.vcpus[pc.running as usize];
                self.clock.run_from(now);
                pc.run_key0 = vc.key - now_f * vc.inv_weight;
                pc.run_inv_weight = vc.inv_weight;
                pc.run_guard = vc.shield;
                pc.run_alloc = vc.alloc;
            }
        }
        if self.ht.on {
            self.ht_rekey_running(now);
        }
        // (no key changed since the walk above)
        self.queues.rekey(|v| new_keys[v as usize]);
    }

    /// Forgive the debts past each vCPU's bound (`debt_bound`: `max_debt_ns`, or none) (`lags[v]`,
    /// CPU ns, negative for a debt) evenly in virtual time, at the new weights. A vCPU owing more
    /// than its bound is brought back to it, as the plain clamp does; every debtor further ahead in virtual time is forgiven as
    /// much virtual time (in CPU time, in proportion to its weight), and one between the bound
    /// and where the clamped vCPU stood is brought to the bound: no debtor's order is changed
    /// and no gap between two debtors widens. The least forgiveness that does so: sorted by
    /// virtual debt `x`, each is forgiven the most any vCPU at or below it overran its bound
    /// (`x - bound / w`), then each is held at or below the next one up.
    #[inline(never)]
    fn even_debts(&mut self, per_vm: &[VcpuShare], lags: &mut [f64]) {
        // each vCPU's own bound, `max_debt_ns` or `max_backlog_debt_ns` (`set_weights`)
        let bounds = &self.debt_bound;
        let weight = |vc: &Vcpu| per_vm[vc.vm as usize].weight.max(MIN_WEIGHT);
        // no debtor below the lowest bound of one that overran it is moved
        let low = self
            .vcpus
            .iter()
            .zip(lags.iter())
            .zip(bounds)
            .filter(|((vc, &lag), &b)| lag < -b && vc.state != VcpuState::Off)
            .map(|((vc, _), &b)| b / weight(vc))
            .fold(f64::INFINITY, min_f);
        let order = &mut self.debt_order;
        order.clear();
        for (v, (vc, &lag)) in self.vcpus.iter().zip(lags.iter()).enumerate() {
            let x = -lag / weight(vc);
            if x > low && vc.state != VcpuState::Off {
                order.push((x, v as u32));
            }
        }
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // NaN marks a vCPU brought to its own bound: it keeps its lag, which the update's clamp
        // brings to `max_debt` exactly, as without this rule (unless the next one up stands
        // lower still)
        let mut forgiven = 0.0f64;
        for e in order.iter_mut() {
            let over = e.0 - bounds[e.1 as usize] / weight(&self.vcpus[e.1 as usize]);
            let own = over >= forgiven && over > 0.0;
            forgiven = max_f(forgiven, over);
            e.0 = pick_f(own, f64::NAN, e.0 - forgiven);
        }
        let mut next = f64::INFINITY;
        for e in order.iter_mut().rev() {
            let v = e.1 as usize;
            let w = weight(&self.vcpus[v]);
            if e.0.is_nan() && bounds[v] / w <= next {
                next = bounds[v] / w;
                continue;
            }
            let x = if e.0.is_nan() { next } else { min_f(e.0, next) };
            next = x;
            lags[v] = -x * w;
        }
    }

    /// For each VM held at its reservation floor since the last update (`VcpuShare::at_floor`),
    /// the shift that brings its vCPUs' lags (CPU ns, against the fair clock, which has moved
    /// `clock` virtual ns in the `span` ns since that update) to its reservation's balance: the
    /// balance at that update, plus what each vCPU was owed since, less what it ran. Each was
    /// owed its entitlement (its part of the reservation) or, if more, what its share earned at
    /// the clock's pace (`clock` x its share: a vCPU at the water level keeping pace with the
    /// clock got that much). The module's header says why.
    fn floor_balances(&mut self, clock: f64, now: Time, span: f64) {
        for vm in 0..self.at_floor.len() {
            let (at_floor, share) = self.at_floor[vm];
            if !at_floor {
                continue;
            }
            let (mut balance, mut lags, mut n) = (0.0, 0.0, 0u32);
            for v in self.vcpus_of(vm as u32) {
                let vc = &self.vcpus[v];
                if vc.state == VcpuState::Off {
                    continue;
                }
                // (`alloc`: the entitlement in force since the last update, the reservation)
                let owed = (vc.alloc * span).max(share * clock);
                let mark = self.floor_marks[v];
                balance += mark.0 + owed - (vc.ran_by(now) - mark.1) as f64;
                lags += (clock - vc.key) * vc.weight;
                n += 1;
            }
            self.floor_shift[vm] = if n > 0 { (balance - lags) / f64::from(n) } else { 0.0 };
        }
    }

    /// Per VM, its vCPUs' demand estimates summed (pCPUs): see `vm_demand`.
    pub fn vm_demand(&self) -> &[f64] {
        &self.vm_demand
    }

    /// The fair clock's reading now, in virtual ns.
    pub fn clock(&self, now: Time) -> f64 {
        self.clock.value(now)
    }

    /// vCPU `v`'s lag against the fair clock now, in ns of CPU time (`clock.rs`: owed if
    /// positive, owing if negative), or `None` for one outside the clock (halted, waiting, held
    /// by a limit, powered off), whose lag is settled when it wakes. For tests of C3's bound.
    pub fn lag_ns(&self, v: u32, now: Time) -> Option<f64> {
        let vc = &self.vcpus[v as usize];
        if !IN_CLOCK[vc.state as usize] {
            return None;
        }
        // a running vCPU's key is charged up to its pCPU's mark; the rest is still to add
        let ran = if vc.state == VcpuState::Run { ns_f(now - self.pcpus[vc.pcpu as usize].key_mark) } else { 0.0 };
        Some((self.clock.value(now) - vc.key - ran * vc.inv_weight) * vc.weight)
    }

    /// The most debt (CPU ns) the last entitlement update left vCPU `v` (`max_debt_ns`, or
    /// `max_backlog_debt_ns` for a backlogged vCPU of a held-back VM). For tests of C3's bound.
    pub fn debt_bound_ns(&self, v: u32) -> f64 {
        self.debt_bound[v as usize]
    }

    /// Number of vCPUs queued or held (READY or MLMTD).
    pub fn ready_count(&self) -> usize {
        self.queues.len() + self.limiters.iter().map(|s| s.held.len()).sum::<usize>()
    }
}

/// [`CpuSched::start_bound`]'s slice for a lone vCPU whose own bucket is its only one
/// (`Limiter::solo`), in `start` without the call: its part of the bucket is `mine / mine`,
/// exactly 1, so the bucket allows its tokens (with the borrow when exhausted), and the slice
/// is the least of that and `slice`, rounded up as there.
#[inline(always)]
fn solo_slice(own: &Limiter, vc: &Vcpu, slice: Time, rules: &BucketRules) -> Time {
    debug_assert_eq!(own.active_alloc, vc.bucket_part());
    let b = own.bucket.as_ref().expect("a solo limiter has a bucket");
    ceil_time(min_f(b.spendable(rules), ns_f(slice))).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::HostSpec;

    /// `gap_unowed` without its walk (`queued_lendee`, `foreign_owed`, `may_lend`) answers as
    /// the walk of every queued vCPU does, and the kept count is what a walk counts
    /// (`check_gap_unowed`, which every answer in a test build runs, and here after every
    /// event): bench-mixed's pools, limits and duty cycles on 16 pCPUs, with 2-vCPU VMs among
    /// them (siblings queued), for 6 simulated seconds (46,000 events with lendees, 9,100
    /// answers checked).
    #[test]
    fn the_kept_count_of_queued_lendees_answers_as_a_walk() {
        // (name, pool, count, vCPUs, shares, reservation MHz, limit MHz, duty, burst ms, open)
        let groups = [
            ("web", "\"prod-web\"", 12, 1, 1000, 0, "null", 0.5, 2, false),
            ("webr", "\"prod-web\"", 4, 1, 1000, 500, "null", 0.5, 2, false),
            ("db", "\"prod-db\"", 6, 2, 1000, 0, "null", 0.5, 2, true),
            ("dbr", "\"prod-db\"", 2, 1, 2000, 2000, "null", 0.9, 5, true),
            ("app", "\"prod\"", 3, 1, 1000, 0, "null", 0.6, 5, false),
            ("appcap", "\"prod\"", 1, 1, 1000, 0, "600", 1.0, 10, false),
            ("ci", "\"dev-ci\"", 6, 1, 1000, 0, "null", 0.9, 5, true),
            ("cicap", "\"dev-ci\"", 2, 2, 1000, 300, "800", 1.0, 5, false),
            ("sbx", "\"dev-sandbox\"", 8, 1, 500, 0, "null", 0.3, 2, true),
            ("batch", "\"batch\"", 8, 1, 1000, 0, "null", 0.9, 2, false),
            ("r", "null", 8, 1, 1000, 0, "null", 0.5, 5, true),
            ("rcap", "null", 2, 1, 1000, 0, "1000", 0.9, 5, false),
        ];
        let mut vms = Vec::new();
        for (name, pool, count, vcpus, shares, res, limit, duty, burst, open) in groups {
            for i in 0..count {
                let arrivals = if open { "open" } else { "closed" };
                vms.push(format!(
                    r#"{{"name": "{name}-{i}", "pool": {pool}, "vcpus": {vcpus}, "memory_bytes": 1073741824, "shares": {shares}, "reservation_mhz": {res}, "limit_mhz": {limit}, "power_on_ns": 0, "workload": {{"kind": "cpu_bound", "duty": {duty}, "burst_ns": {burst}000000, "burst_dist": "exponential", "arrivals": "{arrivals}"}}}}"#
                ));
            }
        }
        let pools = r#"[{"name": "prod", "parent": null, "shares": 8000, "reservation_mhz": 12000, "limit_mhz": null, "expandable": true},
            {"name": "prod-web", "parent": "prod", "shares": 4000, "reservation_mhz": 4000, "limit_mhz": null, "expandable": false},
            {"name": "prod-db", "parent": "prod", "shares": 8000, "reservation_mhz": 6000, "limit_mhz": null, "expandable": true},
            {"name": "dev", "parent": null, "shares": 2000, "reservation_mhz": 0, "limit_mhz": 16000, "expandable": true},
            {"name": "dev-ci", "parent": "dev", "shares": 4000, "reservation_mhz": 2000, "limit_mhz": 8000, "expandable": false},
            {"name": "dev-sandbox", "parent": "dev", "shares": 1500, "reservation_mhz": 0, "limit_mhz": 6000, "expandable": true},
            {"name": "batch", "parent": null, "shares": 4000, "reservation_mhz": 3000, "limit_mhz": null, "expandable": false}]"#;
        let spec = format!(
            r#"{{"seed": 1, "duration_ns": 6000000000, "sample_interval_ns": 2000000000,
            "host": {{"name": "h", "sockets": 2, "numa_nodes_per_socket": 1, "llcs_per_node": 1, "cores_per_llc": 8, "threads_per_core": 1, "core_mhz": 2600, "memory_bytes": 274877906944}},
            "cpu_sched": {{}}, "pools": {pools}, "vms": [{}]}}"#,
            vms.join(",")
        );
        let mut sim = crate::simulation::Simulation::new(crate::spec::SimSpec::from_json(&spec).unwrap()).unwrap();
        let mut lent = 0;
        while sim.next_event_time().is_some_and(|t| t <= 6_000_000_000) {
            sim.step();
            let s = sim.sched();
            assert_eq!(s.queued_lendee, s.count_queued_lendee(), "at {} ns", sim.now());
            lent += usize::from(s.lend_width > 0);
        }
        let s = sim.sched();
        assert!(lent > 10_000 && s.gap_checks.get() > 1_000, "the rule was exercised: {lent} events with lendees, {} answers", s.gap_checks.get());
    }

    /// A moment by which every vCPU queued at time 0 has waited longer than any move costs.
    const LATER: Time = 10_000_000;

    fn sched(params: CpuSchedParams) -> CpuSched {
        let host = HostSpec { name: "h".into(), sockets: 2, numa_nodes_per_socket: 1, llcs_per_node: 2,
            cores_per_llc: 2, threads_per_core: 1, core_mhz: 2000, memory_bytes: 1 << 34 };
        CpuSched::new(&Topology::new(&host).unwrap(), params, &[1, 1, 1])
    }

    /// `update_demand`: a VM held back whose vCPU read a backlog (waited and never halted in an
    /// interval) and then measured less than its entitlement has its estimate cut to the
    /// entitlement; a VM held back that never read a backlog, and a VM not held back, are
    /// blended as before.
    #[test]
    fn a_drained_backlog_leaves_no_estimate_above_the_entitlement() {
        let host = HostSpec { name: "h".into(), sockets: 1, numa_nodes_per_socket: 1, llcs_per_node: 1,
            cores_per_llc: 4, threads_per_core: 1, core_mhz: 2000, memory_bytes: 1 << 34 };
        let mut s = CpuSched::new(&Topology::new(&host).unwrap(), CpuSchedParams::default(), &[1, 1, 1]);
        let w = s.params.demand_ewma_weight;
        const SEC: Time = 1_000_000_000;
        for v in 0..3 {
            let vc = &mut s.vcpus[v];
            vc.state = VcpuState::Idle;
            vc.demand = 0.9;
            vc.demand_measured = true;
            vc.alloc = 0.3;
        }
        s.held_back = vec![true, true, false];
        // one interval of (ran, READY) each, the rest idle, every vCPU idle at its end
        let step = |s: &mut CpuSched, end: Time, intervals: [(Time, Time); 3]| {
            for (v, (run, ready)) in intervals.into_iter().enumerate() {
                let vc = &mut s.vcpus[v];
                vc.since = end;
                vc.time_ns[VcpuState::Run as usize] += run;
                vc.time_ns[VcpuState::Ready as usize] += ready;
                vc.time_ns[VcpuState::Idle as usize] += SEC - run - ready;
            }
            s.update_demand(end, SEC);
        };
        // vCPU 0 waits the whole second (a backlog), vCPU 1 waits and halts
        step(&mut s, SEC, [(300_000_000, 700_000_000), (300_000_000, 300_000_000), (200_000_000, 0)]);
        assert!((s.vcpus[0].demand - (w * 1.0 + (1.0 - w) * 0.9)).abs() < 1e-12, "a backlog is demand while it lasts");
        let before = [s.vcpus[0].demand, s.vcpus[1].demand, s.vcpus[2].demand];
        // then each runs 0.2 s and idles the rest: below its 0.3
        step(&mut s, 2 * SEC, [(200_000_000, 0); 3]);
        assert!((s.vcpus[0].demand - 0.3).abs() < 1e-12, "drained: {}", s.vcpus[0].demand);
        assert_eq!(s.vm_demand()[0], s.vcpus[0].demand);
        for v in [1, 2] {
            assert!((s.vcpus[v].demand - (w * 0.2 + (1.0 - w) * before[v])).abs() < 1e-12, "vCPU {v}: {}", s.vcpus[v].demand);
        }
    }

    /// One entitlement interval of `(run, ready)` ns for vCPU 0 (the rest idle, idle at its
    /// end), then `update_demand`, on a scheduler with `params`, vCPU 0's VM held back or not and
    /// entitled to `alloc`.
    fn one_interval(params: CpuSchedParams, held_back: bool, alloc: f64, run: Time, ready: Time) -> CpuSched {
        const SEC: Time = 1_000_000_000;
        let mut s = sched(params);
        s.held_back = vec![held_back, false, false];
        for vc in &mut s.vcpus {
            vc.state = VcpuState::Idle;
        }
        let vc = &mut s.vcpus[0];
        vc.alloc = alloc;
        vc.since = SEC;
        vc.time_ns[VcpuState::Run as usize] += run;
        vc.time_ns[VcpuState::Ready as usize] += ready;
        vc.time_ns[VcpuState::Idle as usize] += SEC - run - ready;
        s.update_demand(SEC, SEC);
        s
    }

    /// `demand_wait_power`: a held-back vCPU that ran 0.3 s, waited 0.3 s and idled 0.4 s counts
    /// `0.3 x (0.3 / 0.7)^p` of its wait as demand (its first measurement, so the estimate):
    /// all of it at 0, less as the power grows; a backlog (no idle time) counts whole at any power.
    #[test]
    fn a_higher_wait_power_counts_less_of_a_transient_wait() {
        const MS300: Time = 300_000_000;
        let estimate = |p: u32, ready: Time| {
            let params = CpuSchedParams { demand_wait_power: p, ..CpuSchedParams::default() };
            one_interval(params, true, 0.3, MS300, ready).vcpus[0].demand
        };
        let share: f64 = 0.3 / 0.7;
        for p in [0, 1, 3, 8] {
            let want = 0.3 + 0.3 * share.powi(p as i32);
            assert!((estimate(p, MS300) - want).abs() < 1e-12, "power {p}: {} for {want}", estimate(p, MS300));
            assert!((estimate(p, 700_000_000) - 1.0).abs() < 1e-12, "power {p}: a backlog reads {}", estimate(p, 700_000_000));
        }
        assert!(estimate(0, MS300) > estimate(1, MS300) && estimate(1, MS300) > estimate(3, MS300));
    }

    /// A vCPU of a VM the water-fill satisfied that never halted in the interval counts its
    /// READY time up to its entitlement (0.74 s of the second here) and no further: run 0.74 s
    /// and waited the rest, it reads 0.74 (a whole pCPU before the rule); run 0.6 s, 0.74; run
    /// 0.8 s, 0.8. Held back, the same vCPU reads its whole runnable time, and one that halted
    /// reads its run time alone, as before.
    #[test]
    fn a_satisfied_vcpu_that_never_halted_reads_ready_only_up_to_its_entitlement() {
        const MS: Time = 1_000_000;
        // without the probe (`demand_probe_margin` 0): READY up to the entitlement alone
        let params = CpuSchedParams { demand_probe_margin: 0.0, ..CpuSchedParams::default() };
        let estimate = |held_back: bool, run: Time, ready: Time| one_interval(params.clone(), held_back, 0.74, run * MS, ready * MS).vcpus[0].demand;
        for (run, want) in [(740, 0.74), (600, 0.74), (800, 0.8), (300, 0.74)] {
            let got = estimate(false, run, 1_000 - run);
            assert!((got - want).abs() < 1e-12, "satisfied, ran {run} ms: {got} for {want}");
        }
        assert!((estimate(true, 740, 260) - 1.0).abs() < 1e-12, "held back: a backlog reads whole");
        assert!((estimate(false, 600, 300) - 0.6).abs() < 1e-12, "halted: its run time");
    }

    /// `demand_probe_margin`: a satisfied vCPU entitled to 0.74 that never halted reads its READY
    /// up to its entitlement or up to the margin (0.01) over its run, whichever is more: 0.75
    /// having run its 0.74, 0.81 having run 0.8, its entitlement having run well under it; read
    /// at its run if it halted, whole if held back (the probe is only for a VM not held back).
    #[test]
    fn a_satisfied_vcpu_that_never_halted_reads_ready_up_to_a_probe_over_its_run() {
        const MS: Time = 1_000_000;
        let estimate = |held_back: bool, run: Time, ready: Time| one_interval(CpuSchedParams::default(), held_back, 0.74, run * MS, ready * MS).vcpus[0].demand;
        for (run, want) in [(740, 0.75), (735, 0.745), (800, 0.81), (600, 0.74), (300, 0.74), (995, 1.0)] {
            let got = estimate(false, run, 1_000 - run);
            assert!((got - want).abs() < 1e-12, "satisfied, ran {run} ms: {got} for {want}");
        }
        assert!((estimate(true, 740, 260) - 1.0).abs() < 1e-12, "held back: a backlog reads whole");
        assert!((estimate(false, 600, 300) - 0.6).abs() < 1e-12, "halted: its run time");
    }

    /// `demand_drain_horizon_ns`: a satisfied vCPU entitled to 0.99 that never halted reads no
    /// more than its drain rate while its run without a halt is no longer than its closed epochs.
    /// It halts at 1 s (an epoch opens), runs 0.95 at 2 s without a halt (no closed epoch yet:
    /// its entitlement, 0.99), and halts at 3 s having run 0.93: the epoch closes at 1.88 s of
    /// run over 2 s, 0.94. At 4 s it runs 0.92 without a halt and reads 0.94 (0.99 before the
    /// rule); at 5 s 0.99, and reads its open epoch's 0.955 (1.0 before); at 6 s its open epoch
    /// (3 s) outlasts the closed one and it reads 0.99 again. Held back, it reads a backlog whole.
    #[test]
    fn a_satisfied_vcpu_that_never_halted_reads_at_most_its_drain_rate() {
        const MS: Time = 1_000_000;
        const SEC: Time = 1_000_000_000;
        let run_for = |held_back: bool, seconds: &[(Time, Time)]| {
            let mut s = sched(CpuSchedParams::default());
            let mut read = Vec::new();
            for (i, &(run, ready)) in seconds.iter().enumerate() {
                let now = (i as Time + 1) * SEC;
                s.held_back = vec![held_back && i == seconds.len() - 1, false, false];
                for vc in &mut s.vcpus {
                    vc.state = VcpuState::Idle;
                    vc.since = now;
                }
                let vc = &mut s.vcpus[0];
                vc.alloc = 0.99;
                vc.time_ns[VcpuState::Run as usize] += run * MS;
                vc.time_ns[VcpuState::Ready as usize] += ready * MS;
                vc.time_ns[VcpuState::Idle as usize] += SEC - (run + ready) * MS;
                s.update_demand(now, SEC);
                read.push(s.served[0].measured);
            }
            read
        };
        let seconds = [(500, 100), (950, 50), (930, 20), (920, 80), (990, 10), (950, 50)];
        let read = run_for(false, &seconds);
        for (i, want) in [0.5, 0.99, 0.93, 0.94, 0.955, 0.99].into_iter().enumerate() {
            assert!((read[i] - want).abs() < 1e-9, "second {}: read {} for {want}", i + 1, read[i]);
        }
        let held = run_for(true, &seconds[..4]);
        assert!((held[3] - 1.0).abs() < 1e-12, "held back: a backlog reads whole, not {}", held[3]);
    }

    #[test]
    fn a_held_back_vcpu_that_halted_under_its_entitlement_reads_ready_only_up_to_it() {
        const MS: Time = 1_000_000;
        let estimate = |run: Time, ready: Time| one_interval(CpuSchedParams::default(), true, 0.74, run * MS, ready * MS).vcpus[0].demand;
        // the held time weighs (held / (held + rest))^3 at the default power
        let weigh = |held: f64, rest: f64| (held / (held + rest)).powi(3);
        // halted, ran 0.6 of its 0.74: READY counts up to 0.14 (all 0.3 of it before the rule)
        let got = estimate(600, 300);
        assert!((got - (0.6 + 0.14 * weigh(0.3, 0.1))).abs() < 1e-9, "halted under its entitlement: {got}");
        // halted, ran past its entitlement (it bound): all of it
        let got = estimate(800, 150);
        assert!((got - (0.8 + 0.15 * weigh(0.15, 0.05))).abs() < 1e-9, "halted past its entitlement: {got}");
        // never halted: a backlog, all of it
        assert!((estimate(600, 400) - 1.0).abs() < 1e-12, "never halted");
    }

    #[test]
    fn a_short_vm_whose_queue_outlasted_the_interval_is_shielded_from_every_waker_below_a_pcpu() {
        const MS: Time = 1_000_000;
        let shield = |run: Time, ready: Time| {
            let mut s = one_interval(CpuSchedParams::default(), true, 0.5, run * MS, ready * MS);
            let sh = VcpuShare { weight: 0.5, alloc: 0.5, held: true, share: 0.5, ..VcpuShare::default() };
            s.set_weights(1_000 * MS, &[sh; 3], &mut Vec::new());
            (s.short[0], s.vcpus[0].shield)
        };
        // short and never halted: no slack left, shielded from all but a whole pCPU's waker
        assert_eq!(shield(400, 600), (true, FULL_PCPU));
        // short but halted: from wakers entitled to less, as before
        assert_eq!(shield(400, 500), (true, 0.5));
        // not short: no shield (not satisfied, below a pCPU: no guard either)
        assert_eq!(shield(490, 510), (false, f64::NEG_INFINITY));
    }

    /// A vCPU that never halted in the interval, of a VM reserving a whole pCPU per vCPU but
    /// entitled to a little less (its estimate under the reservation; the host committed, so no
    /// guard by the entitlement), is guarded at the reservation: a queued vCPU entitled to less
    /// does not displace it at its slice's end, whatever the keys. One that halted is not
    /// guarded, nor is one of a VM reserving less than a whole pCPU per vCPU.
    #[test]
    fn a_busy_vcpu_reserving_a_whole_pcpu_is_guarded_at_its_reservation() {
        const MS: Time = 1_000_000;
        let guarded = |run: Time, ready: Time, reserved: f64| {
            let mut s = one_interval(CpuSchedParams::default(), false, 0.9989, run * MS, ready * MS);
            let sh = VcpuShare { weight: 1.0, alloc: 0.9989, reserved, share: 0.5, ..VcpuShare::default() };
            s.set_weights(1_000 * MS, &[sh; 3], &mut Vec::new());
            // vCPU 1, of a VM entitled to 0.25, queued on pCPU 1 with the lower key
            s.vcpus[1].alloc = 0.25;
            s.queues.push(1, -1.0, 1, 1);
            (s.vcpus[0].guard, s.displaceable(0, 1))
        };
        assert_eq!(guarded(950, 50, 1.0), (1.0, false), "never halted, a whole pCPU reserved");
        assert_eq!(guarded(900, 50, 1.0), (f64::NEG_INFINITY, true), "halted");
        assert_eq!(guarded(950, 50, 0.99), (f64::NEG_INFINITY, true), "less than a whole pCPU reserved");
    }

    /// `even_debts`: two 1-vCPU debtors drift at one virtual pace, the heavier (0.25 pCPU)
    /// 1.5 s of virtual time ahead of the clock, past its 300 ms bound (1.2 s at its weight),
    /// a light one (0.0125) ahead of it at 1.6 s, another between the bound and it at 1.4 s,
    /// and a heavy one (1 pCPU) 50 ms in debt. The heavier is brought to its bound, as the plain
    /// clamp does; the light one ahead is forgiven the same 0.3 s of virtual time (3.75 ms of
    /// CPU, in proportion to its weight, not nothing), the one between is brought to the bound,
    /// and the heavy one below it is not moved. With the plain clamp the heavier would be 0.4 s
    /// of virtual time ahead of the light one in every queue after each update.
    #[test]
    fn debts_past_the_bound_are_forgiven_evenly_in_virtual_time() {
        const MS: f64 = 1e6;
        let host = HostSpec { name: "h".into(), sockets: 1, numa_nodes_per_socket: 1, llcs_per_node: 1,
            cores_per_llc: 4, threads_per_core: 1, core_mhz: 2000, memory_bytes: 1 << 34 };
        let mut s = CpuSched::new(&Topology::new(&host).unwrap(), CpuSchedParams::default(), &[1, 1, 1, 1]);
        for vc in &mut s.vcpus {
            vc.state = VcpuState::Ready;
        }
        let weights = [0.25, 0.0125, 0.0125, 1.0];
        let per_vm: Vec<VcpuShare> = weights.iter().map(|&w| VcpuShare { weight: w, alloc: w, ..VcpuShare::default() }).collect();
        // CPU lags (negative: owing) of virtual debts 1.5, 1.6, 1.4 and 0.05 s
        let mut lags: Vec<f64> = [1.5e3, 1.6e3, 1.4e3, 50.0].iter().zip(weights).map(|(x, w)| -x * w * MS).collect();
        s.even_debts(&per_vm, &mut lags);
        // (the heavier keeps its lag: the update's clamp brings it to -300 ms, as before)
        let want = [-375.0, -1.3e3 * 0.0125, -1.2e3 * 0.0125, -50.0];
        for (v, (got, want)) in lags.iter().zip(want).enumerate() {
            assert!((got / MS - want).abs() < 1e-9, "vCPU {v}: {} ms for {want}", got / MS);
        }
        // through `set_weights`: halted vCPUs (the clock, with none runnable, reads 0) at those
        // virtual debts, the weights unchanged: keys 1.2, 1.3, 1.2 and 0.05 s after
        for (v, x) in [1.5e9, 1.6e9, 1.4e9, 50e6].into_iter().enumerate() {
            let vc = &mut s.vcpus[v];
            (vc.state, vc.weight, vc.inv_weight, vc.key) = (VcpuState::Idle, weights[v], 1.0 / weights[v], x);
        }
        s.set_weights(0, &per_vm, &mut Vec::new());
        for (v, want) in [1.2e9, 1.3e9, 1.2e9, 50e6].into_iter().enumerate() {
            assert!((s.vcpus[v].key - want).abs() < 1.0, "vCPU {v}: key {} for {want}", s.vcpus[v].key);
        }
    }

    /// `set_weights`: a vCPU of a held-back VM that never halted over the interval keeps its
    /// whole debt (500 ms of CPU) up to `max_backlog_debt_ns` (5 s is brought to 3 s); one of a
    /// held-back VM that halted, and a busy one of a VM not held back, are brought to
    /// `max_debt_ns` (300 ms) as before.
    #[test]
    fn a_backlogged_vcpu_of_a_held_back_vm_keeps_its_debt() {
        let host = HostSpec { name: "h".into(), sockets: 1, numa_nodes_per_socket: 1, llcs_per_node: 1,
            cores_per_llc: 4, threads_per_core: 1, core_mhz: 2000, memory_bytes: 1 << 34 };
        let mut s = CpuSched::new(&Topology::new(&host).unwrap(), CpuSchedParams::default(), &[1, 1, 1, 1]);
        // (the two brought to `max_debt_ns` weigh less: further ahead in virtual time, so the
        // even rule, which keeps debtors' order, does not touch the one kept below them)
        let weights = [0.25, 0.0125, 0.0125, 0.25];
        let held = [true, true, false, true];
        let per_vm: Vec<VcpuShare> =
            weights.iter().zip(held).map(|(&w, held)| VcpuShare { weight: w, alloc: w, held, ..VcpuShare::default() }).collect();
        // halted (the clock, with none runnable, reads 0), each owing 500 ms of CPU, the last 5 s
        for (v, (busy, owes)) in [(true, 500e6), (false, 500e6), (true, 500e6), (true, 5e9)].into_iter().enumerate() {
            let vc = &mut s.vcpus[v];
            (vc.state, vc.weight, vc.inv_weight, vc.key, vc.busy) = (VcpuState::Idle, weights[v], 1.0 / weights[v], owes / weights[v], busy);
        }
        s.set_weights(0, &per_vm, &mut Vec::new());
        for (v, want) in [500.0, 300.0, 300.0, 3000.0].into_iter().enumerate() {
            let debt = s.vcpus[v].key * s.vcpus[v].weight / 1e6;
            assert!((debt - want).abs() < 1e-6, "vCPU {v}: owes {debt} ms for {want}");
        }
    }

    /// `short_margin`: a VM whose vCPU waited and ran 0.485 s of its 0.5 s entitlement is short
    /// by 3% of it: served short (its vCPUs shielded from wakers entitled to less) at a margin of
    /// 2%, not at the default 5% or at 1 (never).
    #[test]
    fn a_smaller_short_margin_shields_a_vm_served_less_short() {
        let short = |margin: f64| {
            let params = CpuSchedParams { short_margin: margin, ..CpuSchedParams::default() };
            one_interval(params, false, 0.5, 485_000_000, 200_000_000).short[0]
        };
        assert!(short(0.02));
        assert!(!short(0.05));
        assert!(!short(1.0));
        assert!(short(0.0));
    }

    /// research/cpu.md C19: a vCPU that made 95% of its pCPU's load is not pulled to an idle
    /// pCPU (it waits for its own), one that made 50% is.
    #[test]
    fn migration_throttling_keeps_a_vcpu_that_carries_its_pcpu() {
        let mut s = sched(CpuSchedParams { migration_throttle: true, ..CpuSchedParams::default() });
        s.vcpus[0].pcpu = 1;
        s.queues.push(1, 0.0, 1, 0);
        s.vcpus[0].load_share = 0.95;
        assert_eq!(s.pick::<false>(0, LATER), None, "throttled: pCPU 0 stays idle");
        s.vcpus[0].load_share = 0.5;
        assert_eq!(s.pick::<false>(0, LATER).map(|(q, _)| q), Some(1));
        // switched off, even the heavy one moves
        let mut s = sched(CpuSchedParams { migration_throttle: false, ..CpuSchedParams::default() });
        s.queues.push(1, 0.0, 1, 0);
        s.vcpus[0].load_share = 0.95;
        assert_eq!(s.pick::<false>(0, LATER).map(|(q, _)| q), Some(1));
    }

    /// A pull weighs distance: pCPU 0 takes its own head over a remote vCPU owed less than the
    /// move costs, and the remote one once it is owed more. Costs by distance: same LLC, other
    /// LLC on the node, other node.
    #[test]
    fn a_pull_pays_the_move_by_distance() {
        let p = CpuSchedParams::default();
        let (core, llc, node) = (p.migrate_cost_core_ns as f64, p.migrate_cost_llc_ns as f64, p.migrate_cost_node_ns as f64);
        for (remote, cost) in [(1u32, core), (2, llc), (5, node)] {
            let mut s = sched(p.clone());
            s.vcpus[0].pcpu = 0;
            s.queues.push(0, 1e6, 1, 0);
            s.vcpus[1].pcpu = remote;
            // weight 1: the cost in virtual time is the cost in ns
            s.queues.push(remote, 1e6 - 0.9 * cost, 2, 1);
            assert_eq!(s.pick::<false>(0, LATER), Some((0, 1e6)), "remote pCPU {remote}: owed less than the move");
            let mut s = sched(p.clone());
            s.queues.push(0, 1e6, 1, 0);
            s.vcpus[1].pcpu = remote;
            s.queues.push(remote, 1e6 - 1.1 * cost, 2, 1);
            assert_eq!(s.pick::<false>(0, LATER).map(|(q, _)| q), Some(remote), "remote pCPU {remote}: owed more");
        }
    }

    /// `migrate_wait_factor`: a pCPU being dispatched with an empty queue leaves a vCPU queued
    /// on another pCPU until it has waited READY the move's cost times the factor (40 us to
    /// another core of the LLC, 800 us to another LLC, 1.2 ms to another node at the defaults),
    /// noting that moment; from then on it pulls it. Any other pick pulls even a fresh one.
    #[test]
    fn a_fresh_vcpu_is_left_near_its_cache_for_the_move_cost() {
        for (factor, remote, wait) in [(1.0, 1u32, 40_000), (1.0, 2, 800_000), (1.0, 5, 1_200_000), (2.0, 5, 2_400_000)] {
            let mut s = sched(CpuSchedParams { migrate_wait_factor: factor, ..CpuSchedParams::default() });
            s.vcpus[1].pcpu = remote;
            s.vcpus[1].ready_at = 1_000;
            s.queues.push(remote, 0.0, 1, 1);
            assert_eq!(s.pick::<true>(0, 1_000 + wait - 1), None, "pCPU {remote}, factor {factor}: too fresh to pull");
            assert_eq!(s.recheck.0.load(Relaxed), 1_000 + wait, "pCPU {remote}: the moment to look again");
            assert_eq!(s.pick::<true>(0, 1_000 + wait).map(|(q, _)| q), Some(remote), "pCPU {remote}: waited enough");
            assert_eq!(s.pick::<false>(0, 1_000).map(|(q, _)| q), Some(remote), "pCPU {remote}: not dispatching idle, pulls at once");
        }
        // 0: pulled at once, as before the rule
        let mut s = sched(CpuSchedParams { migrate_wait_factor: 0.0, ..CpuSchedParams::default() });
        s.vcpus[1].pcpu = 5;
        s.vcpus[1].ready_at = 1_000;
        s.queues.push(5, 0.0, 1, 1);
        assert_eq!(s.pick::<true>(0, 1_000).map(|(q, _)| q), Some(5));
    }

    /// `Limiter::solo`: a 1-vCPU VM's own limit is its only bucket until a share of a pool
    /// limit is set in it or a pool bucket above it is awake; a 2-vCPU VM's never is. And where
    /// it is, the slice `start` takes for it without the walk (`solo_slice`) is the walk's.
    #[test]
    fn a_lone_vcpu_reads_its_own_bucket_alone_only_while_no_other_binds() {
        let host = HostSpec { name: "h".into(), sockets: 1, numa_nodes_per_socket: 1, llcs_per_node: 1,
            cores_per_llc: 4, threads_per_core: 1, core_mhz: 2000, memory_bytes: 1 << 34 };
        let mut s = CpuSched::new(&Topology::new(&host).unwrap(), CpuSchedParams::default(), &[1, 2, 1]);
        let mut q = EventQueue::with_timers(s.timer_slots());
        let pool = s.add_pool_limit(4000, &[0, 1]) as usize;
        s.set_limit(0, Some(500), 0, &mut q);
        s.set_limit(1, Some(500), 0, &mut q);
        assert!(!s.limiters[0].solo, "the pool's bucket binds it too");
        assert!(!s.limiters[1].solo && !s.limiters[2].solo, "two vCPUs; no limit");
        // the pool falls asleep (`look_dormancy`) and wakes
        s.limiters[pool].asleep = s.limiters[pool].bucket.take();
        s.relimit_below(pool);
        assert!(s.limiters[0].solo && !s.limiters[1].solo);
        s.wake_limiter(pool);
        assert!(!s.limiters[0].solo);
        s.limiters[pool].asleep = s.limiters[pool].bucket.take();
        s.relimit_below(pool);
        // a share of the pool's limit, tighter than its own: kept apart, and it may yield
        s.set_share_limit(0, Some(300.0), 0, &mut q);
        assert!(!s.limiters[0].solo);
        s.set_share_limit(0, None, 0, &mut q);
        assert!(s.limiters[0].solo);
        s.set_limit(0, None, 0, &mut q);
        assert!(!s.limiters[0].solo, "no bucket of its own");
        s.set_limit(0, Some(500), 0, &mut q);
        // the slice: the bucket's tokens (with the borrow once exhausted) or the quantum, rounded
        // up, at least 1 ns, as the walk gives it, the vCPU wanting to run (its part is 1)
        s.vcpus[0].state = VcpuState::Run;
        s.limiters[0].active_alloc = s.vcpus[0].bucket_part();
        s.limiters[0].active_n = 1;
        let quantum = s.vcpus[0].slice;
        for tokens in [-3e6, -0.5, 0.0, 0.25, 1.0, 2.5e6 + 0.5, 4.9e6, 5e6, 7.3e6, 1e12] {
            s.limiters[0].bucket.as_mut().unwrap().tokens = tokens;
            let walked = s.start_bound(0, quantum, 0);
            assert_eq!(solo_slice(&s.limiters[0], &s.vcpus[0], quantum, &s.bucket_rules), walked, "{tokens} tokens");
            assert!(walked >= 1 && walked <= quantum);
        }
    }

    /// `victim_scan`'s eight copies against a plain reference written with branches, over
    /// random pCPU states: a pCPU is no candidate when it runs a sibling and siblings are skipped,
    /// or when its vCPU is shielded above the waker's reach, unless (`KIN`) the waker sees its
    /// own VM's shielded siblings as unshielded; among the rest the victim is the first furthest
    /// ahead above `worst`, and with `GUARDED` the slack victim the first entitled to least
    /// below `slackest`. The sibling rules are exercised on every copy, not only the one that
    /// behaviour-level tests happen to reach.
    #[test]
    fn every_copy_of_the_victim_scan_bars_the_pcpus_the_reference_bars() {
        fn reference(pcs: &[Pcpu], vm: u32, reach: f64, now_f: f64, worst: f64, slackest: f64, skip: bool, guarded: bool, kin: bool) -> (u32, u32) {
            let (mut best, mut victim, mut least, mut by_slack) = (worst, NONE, slackest, NONE);
            for (p, pc) in pcs.iter().enumerate() {
                let sibling = pc.run_vm == vm;
                if skip && sibling {
                    continue;
                }
                if pc.run_guard > reach && !(kin && sibling) {
                    continue;
                }
                let eff = pc.run_key0 + now_f * pc.run_inv_weight;
                if eff > best {
                    best = eff;
                    victim = p as u32;
                }
                if guarded && pc.run_alloc < least {
                    least = pc.run_alloc;
                    by_slack = p as u32;
                }
            }
            (victim, by_slack)
        }
        let mut s = sched(CpuSchedParams::default());
        let n = s.pcpus.len();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut draw = |k: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % k
        };
        let mut barred_siblings = [0u32; 2];
        for _ in 0..4000 {
            let vm = draw(3) as u32;
            for pc in s.pcpus.iter_mut() {
                pc.running = 0;
                pc.run_vm = draw(3) as u32;
                // few distinct values, so that ties and equal guards occur
                pc.run_key0 = draw(5) as f64;
                pc.run_inv_weight = draw(3) as f64 * 0.5;
                pc.run_guard = draw(4) as f64;
                pc.run_alloc = draw(4) as f64 * 0.25;
            }
            let (reach, now_f, worst, slackest) = (draw(4) as f64, draw(3) as f64, draw(6) as f64 - 1.0, draw(5) as f64 * 0.25);
            let lo = draw(n as u64 / 2) as usize;
            let hi = lo + 1 + draw((n - lo) as u64) as usize;
            let got = [
                s.victim_scan::<false, false, false>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<false, false, true>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<false, true, false>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<false, true, true>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<true, false, false>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<true, false, true>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<true, true, false>(lo, hi, vm, reach, now_f, worst, slackest),
                s.victim_scan::<true, true, true>(lo, hi, vm, reach, now_f, worst, slackest),
            ];
            for (i, got) in got.into_iter().enumerate() {
                let (skip, guarded, kin) = (i & 4 != 0, i & 2 != 0, i & 1 != 0);
                let (v, b) = reference(&s.pcpus[lo..hi], vm, reach, now_f, worst, slackest, skip, guarded, kin);
                let want = (if v == NONE { NONE } else { v + lo as u32 }, if b == NONE { NONE } else { b + lo as u32 });
                assert_eq!(got, want, "copy skip={skip} guarded={guarded} kin={kin}, vm {vm}, pCPUs {lo}..{hi}: {:?}", &s.pcpus[lo..hi]);
            }
            // count draws where skipping siblings changed the answer, so the test is known to
            // reach the rule (with and without KIN)
            for (k, kin) in [false, true].into_iter().enumerate() {
                let i = kin as usize;
                if got[i] != got[4 + i] {
                    barred_siblings[k] += 1;
                }
            }
        }
        assert!(barred_siblings.iter().all(|&c| c > 100), "the sibling rule changed too few answers: {barred_siblings:?}");
    }
}
