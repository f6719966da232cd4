//! Hyperthreading in the scheduler: two pCPUs per core, a slower thread beside a busy
//! sibling, and the charging esxtop shows.
//!
//! With `hyperthreading` on and `threads_per_core: 2`, every hardware thread is a pCPU (as
//! esxtop counts them) and siblings are adjacent (`p ^ 1`). A vCPU runs at rate 1 (a whole
//! core's work per ns) while its sibling thread is idle and at `s = (1 + ht_core_gain) / 2`
//! while the sibling runs a vCPU (`hw::thread_speed`). The rate of a running vCPU changes only
//! when its sibling starts or stops, so each change settles the vCPU up to that instant at the
//! old rate (`ht_settle`) and starts its slice again at the new one (`ht_restart`):
//!
//! - its burst's work (`work_left`, in ns of a whole core) falls by `rate x dt`;
//! - its virtual time (`key`) grows by `rate x dt / weight`: the scheduler is fair in work
//!   delivered, in units of core capacity, so a vCPU slowed by a busy sibling is charged less
//!   and is owed the difference (the paper's partial charging, research/cpu.md A6.7);
//! - %RUN counts wall time on the thread; %USED (`used_ns`) is charged `ht_used_charge` (0.5,
//!   esxtop's rule, research/cpu.md C22) of the time the sibling was busy, in full otherwise;
//! - `ht_ns(v)` counts the run ns with the sibling busy (what the execution-speed model reads).
//!
//! Placement prefers a whole idle core to a thread whose sibling is busy at each distance
//! (`ht_whole_core_first`, C21's order); a core that goes wholly idle takes the most-behind
//! vCPU off a core whose two threads both run. Compensation (`ht_compensation`, A6.7): a vCPU
//! starting a slice on a whole core gives it to the running vCPU on a partial core that is
//! furthest behind it (by more than `wake_preempt_margin_ns`) and takes that one's thread, so
//! over time every busy vCPU gets its share of whole-core time. `sched.cpu.htsharing`
//! (`hw::HtSharing`, per VM): a vCPU may start on a thread only if it and the vCPU on the
//! sibling admit each other; a vCPU that may not (it reached the thread by preemption or a
//! pull) goes back to its queue and the thread stays idle.
//!
//! # Tunables
//! `hyperthreading` (on), `ht_core_gain` (0.25), `ht_used_charge` (0.5),
//! `ht_whole_core_first` (on), `ht_compensation` (on), `ht_sharing` (per VM; `any`) in
//! `CpuSchedParams`.
//!
//! # Counters
//! Per vCPU `ht_ns(v)` (run ns beside a busy sibling) and `used_ns` (charged); per pCPU its
//! charged ns (`pcpu_used_ns`, esxtop's PCPU USED) and per core the ns either thread ran
//! (`core_busy_ns`, esxtop's CORE UTIL).
//!
//! # Known gaps
//! - The fair clock counts a running vCPU at rate 1 between its settles; it is corrected at
//!   each settle, so a wake-up's placement can read it high by at most `(1 - s)` of a slice per
//!   contended vCPU, over the total weight.
//! - Limits charge their buckets in wall time on the thread, not in work.
//! - Moves that hyperthreading makes (whole-core pulls, compensation swaps) ignore migration
//!   costs, throttling and NUMA confinement.
//! - A thread beside a vCPU that does not share its core idles even when vCPUs wait that
//!   could run there; the queue head decides.
//! - Entitlement still splits `cores x MHz` (vCenter's capacity), not what HT adds.

use super::{CpuSched, VcpuState, NONE};
use crate::hw::{may_share, HtSharing};
use crate::sim::{ns_f, EventQueue, Time};

/// `x.round()` for `0 <= x < 2^63`, without the libm call `f64::round` compiles to on the
/// baseline x86-64 target (no SSE4.1): the same value, half away from zero. Exact: below 2^53
/// the fraction `x - trunc(x)` is representable, and above it `x` is an integer.
#[inline(always)]
fn round_ns(x: f64) -> Time {
    // through i64: one truncating conversion, where `as u64` costs a compare and a second
    // conversion for values past 2^63 that never occur here
    let t = x as i64 as Time;
    t + (x - t as f64 >= 0.5) as Time
}

/// `x.ceil()` for `0 <= x < 2^63`, without a libm call (as [`round_ns`]).
#[inline(always)]
fn ceil_ns(x: f64) -> Time {
    let t = x as i64 as Time;
    t + ((t as f64) < x) as Time
}

/// Cancel pCPU `p`'s slice timer, out of the hot path.
#[inline(never)]
fn disarm(q: &mut EventQueue, p: u32) {
    q.cancel_timer(p);
}

/// Hyperthreading state of one scheduler (empty vectors when HT is off).
#[derive(Debug, Clone, Default)]
pub(super) struct Ht {
    /// the scheduler runs on both threads of each core
    pub on: bool,
    /// some VM restricts who shares its cores (`ht_sharing` other than `any`)
    pub restricted: bool,
    /// a thread's speed beside a busy sibling, in cores
    speed: f64,
    /// the share of such time charged in %USED
    used_charge: f64,
    /// per pCPU: the running vCPU's rate (1 or `speed`)
    rate: Vec<f64>,
    /// per pCPU: the slice's end from the quantum and limits (work aside)
    cap_at: Vec<Time>,
    /// per pCPU: ns of busy time not charged in %USED
    discount: Vec<u64>,
    /// per core: ns with either thread running, up to `core_since`
    core_busy: Vec<u64>,
    /// per core: since when a thread runs, or `Time::MAX` when both are idle
    core_since: Vec<Time>,
    /// per VM: its sharing mode and vCPU count
    sharing: Vec<(HtSharing, u32)>,
    /// a compensation or whole-core move is in progress (no nested moves)
    moving: bool,
    /// `start` is restarting a slice whose rate changed (`ht_restart`)
    restart: bool,
    /// per vCPU: run ns beside a busy sibling (kept here, not in `Vcpu`, whose size the hot
    /// path's indexing is sensitive to)
    vcpu_ns: Vec<u64>,
}

impl Ht {
    /// State for `pcpus` threads and VMs of `vcpus_per_vm`, or off.
    pub(super) fn new(on: bool, pcpus: usize, speed: f64, used_charge: f64, vcpus_per_vm: &[u32]) -> Self {
        if !on {
            return Ht::default();
        }
        Ht {
            on,
            restricted: false,
            speed,
            used_charge,
            rate: vec![1.0; pcpus],
            cap_at: vec![0; pcpus],
            discount: vec![0; pcpus],
            core_busy: vec![0; pcpus / 2],
            core_since: vec![Time::MAX; pcpus / 2],
            sharing: vcpus_per_vm.iter().map(|&n| (HtSharing::Any, n)).collect(),
            moving: false,
            restart: false,
            vcpu_ns: vec![0; vcpus_per_vm.iter().sum::<u32>() as usize],
        }
    }
}

impl CpuSched {
    /// Hyperthreading is in force: every thread of every core is a pCPU.
    pub fn hyperthreading(&self) -> bool {
        self.ht.on
    }

    /// Cumulative run ns of vCPU `v` on a thread whose sibling was busy, up to its last settle
    /// (`account_all` brings it to now); 0 without hyperthreading.
    pub fn ht_ns(&self, v: u32) -> u64 {
        self.ht.vcpu_ns.get(v as usize).copied().unwrap_or(0)
    }

    /// Number of cores under the pCPUs.
    pub fn core_count(&self) -> usize {
        if self.ht.on {
            self.pcpus.len() / 2
        } else {
            self.pcpus.len()
        }
    }

    /// The core of pCPU `p`.
    pub fn core_of(&self, p: u32) -> u32 {
        if self.ht.on {
            p / 2
        } else {
            p
        }
    }

    /// Set VM `vm`'s `sched.cpu.htsharing` (before it is powered on).
    pub fn set_ht_sharing(&mut self, vm: u32, mode: HtSharing) {
        if !self.ht.on {
            return;
        }
        self.ht.sharing[vm as usize].0 = mode;
        self.ht.restricted |= mode != HtSharing::Any;
    }

    /// Apply `ht_sharing` (by VM name) to the VMs named `names` (index = VM), or name the
    /// unknown VM. Without hyperthreading the setting has nothing to restrict.
    pub fn apply_ht_sharing(&mut self, names: &[&str]) -> crate::VmtwinResult<()> {
        let modes = self.params.ht_sharing.clone();
        for (name, mode) in modes {
            let Some(vm) = names.iter().position(|n| *n == name) else {
                crate::invalid!(format!("cpu_scheduler.ht_sharing.{name}"), name, "the name of a VM of the host");
            };
            self.set_ht_sharing(vm as u32, mode);
        }
        Ok(())
    }

    /// Cumulative ns pCPU `p` has been charged for (esxtop's PCPU USED): its busy time less
    /// the discount for time beside a busy sibling, up to `now`.
    pub fn pcpu_used_ns(&self, p: u32, now: Time) -> u64 {
        let busy = self.pcpu_busy_ns(p, now);
        if !self.ht.on {
            return busy;
        }
        let pi = p as usize;
        let pc = &self.pcpus[pi];
        let open = if pc.running != NONE && self.ht.rate[pi] < 1.0 { self.discount_of(now - pc.slice_start) } else { 0 };
        busy - self.ht.discount[pi] - open
    }

    /// Cumulative ns core `c` has had a thread running, up to `now` (esxtop's CORE UTIL).
    pub fn core_busy_ns(&self, c: u32, now: Time) -> u64 {
        if !self.ht.on {
            return self.pcpu_busy_ns(c, now);
        }
        let ci = c as usize;
        let since = self.ht.core_since[ci];
        self.ht.core_busy[ci] + if since == Time::MAX { 0 } else { now - since }
    }

    /// The part of `dt` ns beside a busy sibling that %USED does not charge.
    #[inline]
    fn discount_of(&self, dt: Time) -> u64 {
        dt - round_ns(ns_f(dt) * self.ht.used_charge)
    }

    /// May `v` run on pCPU `p` beside what runs on its sibling thread?
    #[inline]
    pub(super) fn ht_admits(&self, p: u32, v: u32) -> bool {
        let w = self.pcpus[p as usize ^ 1].running;
        if w == NONE || !self.ht.restricted {
            return true;
        }
        let (a, b) = (self.vcpus[v as usize].vm, self.vcpus[w as usize].vm);
        let (ma, na) = self.ht.sharing[a as usize];
        let (mb, nb) = self.ht.sharing[b as usize];
        may_share((a, na, ma), (b, nb, mb))
    }

    /// Bring the vCPU running on `p` up to `now` at its rate: key (and the fair clock), work,
    /// RUN and USED, `ht_ns`, the pCPU's busy time and its limit buckets. The slice and the key
    /// restart from `now`.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_settle(&mut self, p: u32, now: Time) {
        let pi = p as usize;
        let v = self.pcpus[pi].running;
        if v == NONE || self.pcpus[pi].slice_start == now {
            return;
        }
        let r = self.ht.rate[pi];
        let pc = &mut self.pcpus[pi];
        let dt = now - pc.slice_start;
        let kdt = now - pc.key_mark;
        // the clock adds a running vCPU's term at rate 1: charge it `r x kdt` instead (at rate
        // 1 the product is `kdt` itself, and `dt` for the work below)
        let whole = r == 1.0;
        let charged = if whole { kdt } else { round_ns(ns_f(kdt) * r) };
        self.clock.charge(pc.key_mark, pc.key_mark + charged);
        self.clock.run_from(now);
        pc.key_mark = now;
        pc.busy_ns += dt;
        pc.slice_start = now;
        let discount = if whole { 0 } else { self.discount_of(dt) };
        self.ht.discount[pi] += discount;
        let vc = &mut self.vcpus[v as usize];
        vc.key += ns_f(kdt) * r * vc.inv_weight;
        vc.work_left = vc.work_left.saturating_sub(if whole { dt } else { round_ns(ns_f(dt) * r) });
        let run = now - vc.since;
        vc.time_ns[VcpuState::Run as usize] += run;
        vc.used_ns += run - discount;
        vc.since = now;
        if !whole {
            self.ht.vcpu_ns[v as usize] += dt;
        }
        if vc.limited | vc.marks {
            self.stop_bound(v, dt, now);
        }
    }

    /// The rate of the vCPU running on `p` changed (its sibling started or stopped): settle
    /// it at the old rate and start its slice again, so that `start` sets the rate and arms
    /// the timer (the one place a slice timer is set: a second `set_timer` call site made the
    /// compiler outline it, +3% instructions on bench-64vm with hyperthreading off). The
    /// restart keeps the slice's end bound and is not counted as a dispatch.
    #[cold]
    #[inline(never)]
    fn ht_restart(&mut self, p: u32, now: Time, q: &mut EventQueue) {
        let v = self.stop(p, now);
        self.ht.restart = true;
        self.start(p, v, now, q);
        self.ht.restart = false;
    }

    /// `start` is putting `v` on `p` with a slice bound of `cap` ns (quantum and limits): set
    /// its rate from the sibling thread and return when the slice ends, at the bound or when
    /// its work is done at that rate.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_slice_end(&mut self, p: u32, v: u32, cap: Time, now: Time) -> Time {
        let pi = p as usize;
        let bound = now.saturating_add(cap);
        if self.ht.restart {
            self.stats.dispatches -= 1;
            self.ht.cap_at[pi] = self.ht.cap_at[pi].min(bound);
        } else {
            self.ht.cap_at[pi] = bound;
        }
        let rate = if self.pcpus[pi ^ 1].running != NONE { self.ht.speed } else { 1.0 };
        self.ht.rate[pi] = rate;
        let vc = &self.vcpus[v as usize];
        let work = vc.work_left;
        if rate != 1.0 {
            let inv = vc.inv_weight * rate;
            let key = vc.key;
            let pc = &mut self.pcpus[pi];
            pc.run_inv_weight = inv;
            pc.run_key0 = key - ns_f(now) * inv;
        }
        let done = now + if rate == 1.0 { work } else { ceil_ns(ns_f(work) / rate) };
        done.min(self.ht.cap_at[pi]).max(now)
    }

    /// After `start` put `v` on `p` and armed its timer: htsharing (a vCPU that may not run
    /// beside its sibling's goes back to the queue), the core's busy time, the sibling's rate,
    /// and compensation.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_after_start(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) {
        if self.ht.restart {
            return;
        }
        let pi = p as usize;
        let s = pi ^ 1;
        if self.ht.restricted && !self.ht_admits(p, v) {
            // htsharing: it may not run beside its sibling's vCPU; back to the queue
            let r = self.stop(p, now);
            self.set_state(r, now, VcpuState::Ready);
            self.enqueue(p, r);
            self.set_idle(p);
            disarm(q, p);
            self.ht_went_idle(p, now, q);
            return;
        }
        let c = pi / 2;
        if self.ht.core_since[c] == Time::MAX {
            self.ht.core_since[c] = now;
        }
        if self.pcpus[s].running != NONE {
            if self.ht.rate[s] != self.ht.speed {
                self.ht_restart(s as u32, now, q);
            }
        } else if self.params.ht_compensation && !self.ht.moving {
            self.ht_compensate(p, v, now, q);
        }
    }

    /// `v` starts a slice on whole core `p`: if the running vCPU on a partial core furthest
    /// behind is behind `v` by more than the wake-up margin, they swap threads.
    #[cold]
    #[inline(never)]
    fn ht_compensate(&mut self, p: u32, v: u32, now: Time, q: &mut EventQueue) {
        let now_f = ns_f(now);
        let margin = self.params.wake_preempt_margin_ns as f64;
        let vkey = self.vcpus[v as usize].key;
        let mut best = (vkey - margin, NONE);
        for (t, pc) in self.pcpus.iter().enumerate() {
            if pc.running == NONE || self.ht.rate[t] == 1.0 || t / 2 == p as usize / 2 {
                continue;
            }
            let key = pc.run_key0 + now_f * pc.run_inv_weight;
            let (uvm, vvm) = (self.vcpus[pc.running as usize].vm, self.vcpus[v as usize].vm);
            // with cells, each must land in its own VM's cell
            if key < best.0 && uvm != vvm && self.cell_admits(uvm, p) && self.cell_admits(vvm, t as u32) {
                best = (key, t as u32);
            }
        }
        let t = best.1;
        if t == NONE {
            return;
        }
        let u = self.pcpus[t as usize].running;
        self.ht.moving = true;
        let su = self.stop(t, now);
        let sv = self.stop(p, now);
        debug_assert_eq!((su, sv), (u, v));
        self.start(p, u, now, q);
        if self.ht_admits(t, v) {
            self.start(t, v, now, q);
        } else {
            self.set_state(v, now, VcpuState::Ready);
            self.enqueue(t, v);
            self.dispatch(t, now, q);
        }
        self.ht.moving = false;
    }

    /// `p` just went idle: its sibling's vCPU (if any) speeds up; if the whole core is idle,
    /// its busy time stops, and with `ht_whole_core_first` it takes the most-behind vCPU off a
    /// core whose two threads both run.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_went_idle(&mut self, p: u32, now: Time, q: &mut EventQueue) {
        let pi = p as usize;
        let s = pi ^ 1;
        if self.pcpus[s].running != NONE {
            if self.ht.rate[s] != 1.0 {
                self.ht_restart(s as u32, now, q);
            }
            return;
        }
        let c = pi / 2;
        if self.ht.core_since[c] != Time::MAX {
            self.ht.core_busy[c] += now - self.ht.core_since[c];
            self.ht.core_since[c] = Time::MAX;
        }
        if self.ht.restricted && self.queues.len() > 0 && self.idle[s] {
            // the sibling may have idled beside a vCPU it could not share the core with
            self.dispatch(s as u32, now, q);
            if !self.idle[pi] || !self.idle[s] {
                return;
            }
        }
        if !self.params.ht_whole_core_first || self.ht.moving {
            return;
        }
        let now_f = ns_f(now);
        let mut best = (f64::INFINITY, NONE);
        for (t, pc) in self.pcpus.iter().enumerate() {
            if pc.running != NONE && self.pcpus[t ^ 1].running != NONE {
                let key = pc.run_key0 + now_f * pc.run_inv_weight;
                if key < best.0 && self.cell_admits(pc.run_vm, p) {
                    best = (key, t as u32);
                }
            }
        }
        let t = best.1;
        if t == NONE {
            return;
        }
        self.ht.moving = true;
        let u = self.stop(t, now);
        self.start(p, u, now, q);
        self.dispatch(t, now, q);
        self.ht.moving = false;
    }

    /// An idle pCPU for `v` with hyperthreading: its last pCPU if idle and a whole core (or
    /// any idle thread without `ht_whole_core_first`), else by distance (its last pCPU's LLC,
    /// its home node or last node, anywhere), a whole idle core before a partial one at each
    /// distance; only threads `v` may share a core on. With `numa_confine`, only its home node.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_idle_near(&self, v: u32, last: u32) -> u32 {
        self.ht_idle_within(v, last, 0..self.pcpus.len())
    }

    /// [`CpuSched::ht_idle_near`] among the pCPUs `within` only (a scheduler cell's, `cells.rs`;
    /// every pCPU without cells), [`NONE`] when none of them will do.
    pub(super) fn ht_idle_within(&self, v: u32, last: u32, within: std::ops::Range<usize>) -> u32 {
        let whole_first = self.params.ht_whole_core_first;
        let partial = |p: usize| whole_first && self.pcpus[p ^ 1].running != NONE;
        let home = if self.params.numa_home_nodes { self.vcpus[v as usize].home } else { NONE };
        let confined = self.params.numa_confine && home != NONE;
        let node = if home != NONE { home } else { self.node_of[last as usize] };
        let llc = if self.params.llc_aware { self.llc_of[last as usize] } else { NONE };
        let li = last as usize;
        if within.contains(&li) && self.idle[li] && !partial(li) && !(confined && self.node_of[li] != home) && self.ht_admits(last, v) {
            return last;
        }
        let mut best = (u32::MAX, NONE);
        for p in self.idle_in(within) {
            let in_node = self.node_of[p] == node;
            if confined && !in_node {
                continue;
            }
            let dist = if self.llc_of[p] == llc && (home == NONE || in_node) {
                0
            } else if in_node {
                1
            } else {
                2
            };
            // the last pCPU wins ties at its rank
            let rank = 4 * dist + 2 * partial(p) as u32 + (p != li) as u32;
            if rank < best.0 && self.ht_admits(p as u32, v) {
                best = (rank, p as u32);
            }
        }
        best.1
    }

    /// Settle every running vCPU up to `now` (before sampling or reweighting).
    #[cold]
    #[inline(never)]
    pub(super) fn ht_settle_all(&mut self, now: Time) {
        for p in 0..self.pcpus.len() as u32 {
            // outside a scheduler call (a sample, a reweighting) a settled co-scheduled vCPU's
            // VM is marked, to be looked at on the next call, whenever that is: its timer may
            // be due then (`look_if_due` covers only looks at the instant of the change)
            let (v, start) = (self.pcpus[p as usize].running, self.pcpus[p as usize].slice_start);
            if v != NONE && start != now && self.vcpus[v as usize].cosched {
                let vm = self.vcpus[v as usize].vm;
                self.mark_dirty(vm);
            }
            self.ht_settle(p, now);
        }
    }

    /// After weights change: the running vCPUs' key lines at their rates.
    #[cold]
    #[inline(never)]
    pub(super) fn ht_rekey_running(&mut self, now: Time) {
        let now_f = ns_f(now);
        for (p, pc) in self.pcpus.iter_mut().enumerate() {
            if pc.running != NONE {
                let vc = &self.vcpus[pc.running as usize];
                pc.run_inv_weight = vc.inv_weight * self.ht.rate[p];
                pc.run_key0 = vc.key - now_f * pc.run_inv_weight;
            }
        }
    }
}
