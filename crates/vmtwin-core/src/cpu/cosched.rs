//! Co-scheduling of a multi-vCPU VM's siblings: progress, skew, co-stop and co-start.
//!
//! A guest OS assumes its vCPUs advance together (a watchdog waits for a sibling's answer, a
//! spin lock for its holder), so ESX keeps sibling vCPUs from drifting apart [WP §2.2]. A vCPU
//! *progresses* while it runs guest code or halts (a halted vCPU has nothing to do, so it
//! cannot lag); READY, WAIT and COSTOP are not progress (research/cpu.md A2, C13). The three
//! generations of the rule (research/cpu.md A4):
//!
//! - `strict` (ESX 2.x): each vCPU accumulates *skew* while it does not progress and some
//!   sibling does, and loses it while it progresses (the decrease rule is unstated; C10's
//!   choice). Past the threshold the whole VM is co-stopped and co-started only with a pCPU for
//!   every vCPU that is not halted.
//! - `relaxed-3x` (ESX 3.x): the same cumulative skew and VM-wide co-stop, but co-start needs
//!   pCPUs only for the *laggards*, the vCPUs whose skew is over the threshold; the co-stop of
//!   the others lasts until the laggards have worked their skew down to the co-start skew.
//! - `relaxed-4x` (ESX 4.x): progress is tracked per vCPU and skew is each vCPU's lead over the
//!   slowest sibling, `skew_i = p_i - min_j p_j`. Only a leader is stopped, when its lead over
//!   a sibling that is not progressing passes the threshold (the pairwise rule that reproduces
//!   Table 1's nine choices, A4.4); it starts again once its laggards have *caught up*: no
//!   sibling is more than the co-start skew behind it ([`caught_up`]), and is then placed as a
//!   waking vCPU is (it may preempt another VM's vCPU), so that it can run beside the laggard.
//!
//! # Does skew decay, and when does a co-stop end?
//! The paper's answer, per generation ([WP §2.2, §3.1]; research/cpu.md C10, C12):
//! - ESX 2.x/3.x: the cumulative skew "only shrinks" once co-started: it decays while the vCPU
//!   progresses (C10's rate, -1 per ns). 3.x requires the laggards "to be scheduled together
//!   until the skew decreased sufficiently": under `relaxed-3x` the VM's co-stop lasts past the
//!   gang co-start until every member of the gang is down to the co-start skew
//!   (`cosched_costart_skew_ns`, default 0; C12's "until every skew_i <= θ" is the co-start
//!   skew set to the threshold). Only the gang's skews end it: the held vCPUs gain skew while
//!   held (C10: they do not progress while a sibling does), so waiting for theirs too would
//!   never end. A held vCPU that is released over the threshold co-stops the VM again at once,
//!   with the roles swapped: that is C10's overestimation at work ([WP §3.1]: two siblings
//!   that "make equal progress but at different moments" still accrue skew), and it is why
//!   3.x shows far more co-stopped time than 4.x.
//! - ESX 4.x: skew is a difference of cumulative progress. It does not decay with time; only
//!   the laggard's progress closes it. That is the drift the guest sees (a watchdog compares
//!   real progress), so a decay would let real drift grow without bound. A co-stop ends
//!   "once the lagging vCPUs catch up": when they have closed the gap, not when they merely
//!   start to move. The co-start skew (`cosched_costart_skew_ns`, default 0) names "caught up";
//!   C12's optional hysteresis is the threshold minus it. Set to the threshold, a stop ends as
//!   soon as the laggard is within the threshold again, so a pair stays a threshold apart and
//!   every READY wait of the laggard co-stops the leader once more (bench-cpu160: 19.9
//!   co-stops per vCPU per second, against 4.5 with the default).
//!
//! In the engine, `relaxed-4x` is event-driven and exact: between scheduler events every
//! vCPU's progress grows at rate 0 or 1, so the moment a running leader's lead over a sibling
//! that is not progressing reaches the threshold is known in advance and a timer stops it
//! then ([`next_block_in`]), and so is the moment a co-stopped vCPU's laggards have caught up
//! while they progress ([`next_release_in`]); the VM's one timer is set for the earlier.
//!
//! `strict` and `relaxed-3x` are event-driven the same way. Between events each cumulative
//! skew changes at rate -1, 0 or +1, so the moment the first sibling waiting for a pCPU (READY)
//! passes the threshold is known ([`next_laggard_in`]) and a timer co-stops the VM then: every
//! running sibling is stopped and every READY one is relabelled COSTOP. The co-stopped VM
//! waits for a *gang co-start*: the vCPUs [`gang_needs`] (strict: every co-stopped one, so
//! every vCPU that is not halted or blocked; relaxed-3x: the co-stopped laggards) start at one
//! instant, on pCPUs that are idle, the one being dispatched, or taken from running vCPUs of
//! other VMs whose virtual time is ahead of the gang's (its members' mean) by the wake-up
//! preemption margin, whatever their entitlement (a gang cannot make its time up one vCPU at a
//! time, so the displacement guard that shelters vCPUs entitled to a whole pCPU from single
//! wakers does not apply: with it, a 3-vCPU VM beside VMs that fill their pCPUs starved). A
//! co-start is tried whenever a pCPU is dispatched and whenever the VM's siblings change; it
//! happens only if enough pCPUs are found at that instant, else none is taken (the
//! *fragmentation* of [WP §2.2]: a pCPU may idle while a 2-vCPU VM waits for a second);
//! except under relaxed-3x when an idle pCPU is among those found: then as many laggards as
//! pCPUs were found start, those with the most skew first, and the others stay co-stopped
//! ("still attempts to schedule all sibling vCPUs ... if there are enough pCPUs", A4.2, read as
//! not leaving a pCPU idle for want of a second; [R]). Under
//! strict the co-stop ends there. Under relaxed-3x it lasts: the VM's other co-stopped vCPUs
//! stay COSTOP until the gang's skews are down (the VM's timer is set for the
//! exact moment while every member still over the co-start skew progresses), but while no such
//! member waits READY a held vCPU may run beside the gang ("still attempts to schedule all
//! sibling vCPUs for better performance if there are enough pCPUs", A4.2): it takes a pCPU
//! that is idle or being dispatched when its key is the lowest there (at a slice end it may
//! displace the vCPU that ran there); a pCPU its VM's own co-stop has just freed is idle only
//! for an instant, while other VMs' vCPUs are queued for it. Once a member over the co-start skew waits READY, every sibling running
//! beside it is co-stopped again. In every mode a co-stopped vCPU stays in the fair clock, as a
//! READY one does (research/cpu.md C3: consumption and entitlement accrue "while the world is
//! runnable (running, ready or costop)"), and is released with the key it was co-stopped with
//! (its lag bounded by `max_lag_ns`, as every lag is): held back by its siblings' skew, not
//! idle, it is owed the CPU it misses, so a VM whose threads do not synchronise keeps its
//! max-min allocation (without this, a held vCPU's share goes to other VMs; docs/cosched.md
//! has the history).
//!
//! Choices not in the paper ([R]): only a READY sibling's skew triggers a co-stop (one held by
//! a limit or blocked in WAIT cannot be co-started, and waiting for it would stop the VM at
//! once again after every co-start); the gang's virtual time is its members' mean; a gang
//! co-start never preempts a vCPU that started at the same instant (so co-starts of two VMs
//! cannot take each other's pCPUs back and forth at one instant), nor a co-scheduled VM's vCPU
//! that has run less than the skew threshold: its siblings run on, so it would be back over the
//! threshold at once and co-stop its own VM, whose gang co-start would take a pCPU back. Without
//! that rule 8-vCPU strict VMs on 32 pCPUs preempted each other's gangs a nanosecond apart
//! (bench-cpu160's spec in strict: 100 ms took 31 M events; with it, a minute takes 587 k).
//! `relaxed-3x` co-stops on accounting ticks ([`SKEW_TICK_NS`]), so a READY sibling's skew may
//! pass the threshold by up to a tick; and at once when a sibling enters READY already over the
//! threshold (it brings skew from a halt or wait beside a progressing sibling, or from a
//! lasting co-stop), so that it does not wait a tick more; `strict` co-stops at the exact moment.
//!
//! # Tunables
//! `cosched_mode` (per host: `off`, `strict`, `relaxed-3x` or `relaxed-4x`),
//! `cosched_skew_threshold_ns` (3 ms: the paper says only "a few milliseconds", research/cpu.md
//! C9) and `cosched_costart_skew_ns` (0: "once the lagging vCPUs catch up" [WP §3.1], above;
//! read by `relaxed-4x` and `relaxed-3x`), in [`super::CpuSchedParams`].
//!
//! # Counters
//! Per vCPU, cumulative ns in COSTOP (esxtop %CSTP), and co-stops (transitions into COSTOP,
//! counted per vCPU as C14 recommends). Per scheduler: `costops` (per vCPU), `vm_costops` and
//! `costarts` (VM-level co-stops and gang co-starts, strict and relaxed-3x).
//!
//! # Known gaps
//! - `strict` ends a co-stop at its gang co-start (every vCPU starts at once, so nothing is left
//!   to hold).
//! - `relaxed-3x` max-min is out of reach for some VMs: C10's skew stays bounded only if, while
//!   a busy VM runs, at least half its vCPUs run on average (with k of n running the skews grow
//!   by n - 2k ns per ns in sum), so a 3-vCPU VM under 1.5 pCPU must take two pCPUs at once in
//!   bursts, from VMs that cannot make the time up, or idle a pCPU while it waits. No VM
//!   starves (the least share of its max-min allocation over 2,400 census draws is 0.830);
//!   59 of them miss the 3% bound, none of the 1,690 where no VM has to gang, and no CPU is
//!   left idle (a partial gang co-start takes an idle pCPU). docs/cosched.md.
//! - Hypervisor time is not modelled (C11's fraction `h_i` is 0), so ESX 3.x's and 4.x's
//!   progress are the same measure here; they differ only in how skew is derived from it.
//! - A vCPU blocked in WAIT (swap-in, synchronous I/O) is accounted for the cumulative skew at
//!   once, but the VM's co-stop timer is re-armed only at the next scheduler event.
//! - A gang needs as many pCPUs at once as it has co-stopped vCPUs: a strict VM wider than the
//!   scheduler's pCPUs (possible only with hyperthreads off on an HT host) never co-starts.
//! - No explicit hypervisor co-scheduling requests (ESX 4, C11). Guest synchronisation
//!   (threads that spin at a barrier for a descheduled sibling) is the barrier workload's
//!   (`guest/barrier.rs`), not the scheduler's.

use crate::sim::Time;
use serde::{Deserialize, Serialize};

/// How often `relaxed-3x` looks at the cumulative skews, ns: its co-stops fall on multiples of
/// this tick (C10 accounts skew "per accounting tick"; the value is not given: 1 ms chosen
/// [R], a 1 kHz timer). Without it, a VM wider than the pCPUs it gets co-stops again within
/// nanoseconds of each partial co-start, since the siblings left READY then sit just under the
/// threshold.
pub const SKEW_TICK_NS: Time = 1_000_000;

/// Which co-scheduling rule a host applies to multi-vCPU VMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CoschedMode {
    /// every vCPU is scheduled independently
    #[default]
    #[serde(rename = "off")]
    Off,
    /// ESX 2.x: VM-wide co-stop, co-start of every non-halted vCPU at once
    #[serde(rename = "strict")]
    Strict,
    /// ESX 3.x: VM-wide co-stop, co-start of the laggards
    #[serde(rename = "relaxed-3x")]
    Relaxed3x,
    /// ESX 4.x: per-vCPU skew against the slowest sibling, only leaders stopped
    #[serde(rename = "relaxed-4x")]
    Relaxed4x,
}

impl std::str::FromStr for CoschedMode {
    type Err = String;

    /// The scenario's names (`off`, `strict`, `relaxed-3x`, `relaxed-4x`), read as serde reads them.
    fn from_str(name: &str) -> Result<Self, String> {
        use serde::de::{value, IntoDeserializer};
        let d: value::StrDeserializer<'_, value::Error> = name.into_deserializer();
        Self::deserialize(d).map_err(|e| e.to_string())
    }
}

/// The cumulative skew of ESX 2.x and 3.x, one entry per sibling (research/cpu.md C10): over
/// `dt`, a vCPU that does not progress while some sibling does gains `dt`; one that progresses
/// loses `dt` (down to zero); otherwise nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CumulativeSkew {
    /// ns per vCPU
    pub skew_ns: Vec<Time>,
}

impl CumulativeSkew {
    /// No skew for `n` vCPUs.
    pub fn new(n: usize) -> Self {
        CumulativeSkew { skew_ns: vec![0; n] }
    }

    /// Account `dt` ns during which the vCPUs flagged in `progressing` made progress.
    pub fn advance(&mut self, dt: Time, progressing: &[bool]) {
        let any = progressing.iter().any(|&p| p);
        for (s, &p) in self.skew_ns.iter_mut().zip(progressing) {
            if p {
                *s = s.saturating_sub(dt);
            } else if any {
                *s += dt;
            }
        }
    }

    /// The laggards: vCPUs whose skew exceeds `threshold_ns`, as a bit set.
    pub fn laggards(&self, threshold_ns: Time) -> u64 {
        bits(self.skew_ns.iter().map(|&s| s > threshold_ns))
    }
}

/// Replay a progress pattern: `slots[k][i]` says whether vCPU `i` progressed during slot `k`, each
/// slot `slot_ns` long. Returns the cumulative skew (ESX 2.x/3.x) and each vCPU's progress (what
/// ESX 4's skew is computed from) at the end: Figure 1 of the white paper is such a pattern.
pub fn replay_progress(slots: &[Vec<bool>], slot_ns: Time) -> (CumulativeSkew, Vec<Time>) {
    let n = slots.first().map_or(0, Vec::len);
    let mut skew = CumulativeSkew::new(n);
    let mut progress = vec![0; n];
    for slot in slots {
        skew.advance(slot_ns, slot);
        for (p, &on) in progress.iter_mut().zip(slot) {
            *p += if on { slot_ns } else { 0 };
        }
    }
    (skew, progress)
}

/// ESX 4's skew of each vCPU: its progress minus the slowest sibling's, ns.
pub fn lead_skew(progress_ns: &[Time]) -> Vec<Time> {
    let min = progress_ns.iter().copied().min().unwrap_or(0);
    progress_ns.iter().map(|&p| p - min).collect()
}

/// May the vCPUs in `set` (a bit set over the VM's vCPUs) be scheduled together?
///
/// - `strict`: when some skew exceeds the threshold the VM is co-stopped, and only every vCPU
///   that is not halted (`halted`) together may run.
/// - `relaxed-3x`: when co-stopped, a set may run only if it holds every laggard.
/// - `relaxed-4x`: each vCPU in the set needs every sibling it leads by more than the
///   threshold in the set too (`progress_ns` per vCPU).
///
/// `skew` is the cumulative skew for the first two, ignored by the third.
pub fn may_run_together(
    mode: CoschedMode,
    set: u64,
    skew: &CumulativeSkew,
    progress_ns: &[Time],
    halted: u64,
    threshold_ns: Time,
) -> bool {
    let n = progress_ns.len();
    let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    match mode {
        CoschedMode::Off => true,
        CoschedMode::Strict => skew.laggards(threshold_ns) == 0 || set & !halted & all == !halted & all,
        CoschedMode::Relaxed3x => {
            let lag = skew.laggards(threshold_ns);
            lag & set == lag
        }
        CoschedMode::Relaxed4x => (0..n).filter(|&i| set >> i & 1 == 1).all(|i| {
            (0..n).all(|j| progress_ns[i] <= progress_ns[j] + threshold_ns || set >> j & 1 == 1)
        }),
    }
}

/// Under `relaxed-4x`, must vCPU `i` stay co-stopped? Yes while it leads some sibling that is
/// not progressing by more than the threshold: running alone it would only lead further.
/// (A sibling that progresses runs beside it or is catching up by halting.)
#[inline]
pub fn blocked(i: usize, progress_ns: &[Time], progressing: &[bool], threshold_ns: Time) -> bool {
    let p = progress_ns[i];
    progress_ns.iter().zip(progressing).any(|(&q, &moving)| !moving && p > q + threshold_ns)
}

/// Under `relaxed-4x`, may co-stopped vCPU `i` start again? Once its laggards have caught up:
/// no sibling is more than the co-start skew behind it (`costart_ns`, below the threshold: the
/// hysteresis of C12). Until then it stays stopped even while they run, so that they close the
/// gap instead of running beside it at a constant lead [WP §3.1: "Once the lagging vCPUs catch
/// up, the stopped vCPUs can start individually"].
#[inline]
pub fn caught_up(i: usize, progress_ns: &[Time], costart_ns: Time) -> bool {
    let p = progress_ns[i];
    progress_ns.iter().all(|&q| p <= q + costart_ns)
}

/// Under `relaxed-4x`, how long until co-stopped vCPU `i` has caught up ([`caught_up`]), if
/// nothing changes meanwhile: every sibling more than the co-start skew behind must be
/// progressing (rate 1; `i` itself is stopped), and the slowest one sets the time; `None` if
/// one of them stands still.
pub fn next_release_in(i: usize, progress_ns: &[Time], progressing: &[bool], costart_ns: Time) -> Option<Time> {
    let mark = progress_ns[i].saturating_sub(costart_ns);
    let behind = progress_ns.iter().zip(progressing).filter(|(&q, _)| q < mark);
    if behind.clone().any(|(_, &moving)| !moving) {
        return None;
    }
    Some(behind.map(|(&q, _)| mark - q).max().unwrap_or(0))
}

/// A `relaxed-4x` VM's siblings reduced to what [`blocked`] and [`next_block_in`] read: the
/// least progress of a sibling that is not progressing and the most of a running one. A vCPU
/// leads some still sibling by more than the threshold exactly when it leads the slowest still
/// one by that much, so this one summary answers both (the scheduler looks at a VM at every
/// start and stop of one of its vCPUs, and reads it from the VM's folded [`Pace`],
/// [`Lead::at`]; the tests' `Lead::add` is its definition over the siblings one by one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lead {
    /// least progress of a sibling not progressing, ns; `Time::MAX` when every one progresses
    pub slowest_still: Time,
    /// least progress of any sibling, ns; `Time::MAX` when none was seen
    pub slowest: Time,
    /// most progress of a running sibling, ns; `None` when none runs
    pub leader: Option<Time>,
}

impl Lead {
    /// No sibling seen yet.
    pub const NONE: Lead = Lead { slowest_still: Time::MAX, slowest: Time::MAX, leader: None };

    /// Count in a sibling with `progress_ns`, progressing or not, running or not: the
    /// definition the folded paces ([`Lead::at`]) are tested against; the scheduler reads paces.
    #[cfg(test)]
    pub fn add(&mut self, progress_ns: Time, progressing: bool, running: bool) {
        self.slowest = self.slowest.min(progress_ns);
        if !progressing {
            self.slowest_still = self.slowest_still.min(progress_ns);
        } else if running {
            self.leader = Some(self.leader.map_or(progress_ns, |l| l.max(progress_ns)));
        }
    }

    /// [`blocked`] for a vCPU at `progress_ns`.
    #[inline]
    pub fn blocks(&self, progress_ns: Time, threshold_ns: Time) -> bool {
        progress_ns.saturating_sub(threshold_ns) > self.slowest_still
    }

    /// [`caught_up`] for a co-stopped vCPU at `progress_ns`.
    #[inline]
    pub fn caught_up(&self, progress_ns: Time, costart_ns: Time) -> bool {
        progress_ns.saturating_sub(costart_ns) <= self.slowest
    }

    /// [`next_release_in`] for a co-stopped vCPU at `progress_ns`.
    #[inline]
    pub fn next_release_in(&self, progress_ns: Time, costart_ns: Time) -> Option<Time> {
        let mark = progress_ns.saturating_sub(costart_ns);
        if self.slowest_still < mark {
            return None;
        }
        Some(mark.saturating_sub(self.slowest))
    }

    /// [`next_block_in`].
    #[inline]
    pub fn next_block_in(&self, threshold_ns: Time) -> Option<Time> {
        if self.slowest_still == Time::MAX {
            return None;
        }
        Some((self.slowest_still + threshold_ns + 1).saturating_sub(self.leader?))
    }
}

/// One co-scheduled vCPU's progress as [`Lead`] reads it, in a form that stays valid while
/// its state's class (still, halted, running) does not change: a progressing vCPU's progress
/// at `now` is `now - lag` (it grows at rate 1), a still one's is constant. The scheduler
/// rewrites it only when a vCPU changes class, and keeps each VM's paces folded
/// ([`Pace::fold`], [`Pace::replace`]), so a look at a VM reads one entry instead of every
/// sibling's state, times and `since`, with no branch on each one's state: those branches
/// were a coin toss per sibling, and the look ran at nearly every scheduler event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// progress, ns, when not progressing; `Time::MAX` otherwise
    pub still: Time,
    /// `lag` when running; `Time::MAX` otherwise
    pub run_lag: Time,
    /// time minus progress, ns, when progressing (constant then); 0 otherwise
    pub lag: Time,
}

impl Pace {
    /// A vCPU at `progress_ns` at `now` (progress never exceeds the time), progressing or not,
    /// running or not (running implies progressing).
    #[inline]
    pub fn new(progress_ns: Time, now: Time, progressing: bool, running: bool) -> Pace {
        let lag = now - progress_ns;
        match (progressing, running) {
            (false, _) => Pace { still: progress_ns, run_lag: Time::MAX, lag: 0 },
            (true, false) => Pace { still: Time::MAX, run_lag: Time::MAX, lag },
            (true, true) => Pace { still: Time::MAX, run_lag: lag, lag },
        }
    }

    /// The siblings' paces folded into one (at least one sibling): the least still progress,
    /// the least running lag and the most lag. What [`Lead::at`] reads, and constant while no
    /// sibling changes class.
    #[inline]
    pub fn fold(paces: &[Pace]) -> Pace {
        let mut all = Pace { still: Time::MAX, run_lag: Time::MAX, lag: 0 };
        for p in paces {
            all.still = all.still.min(p.still);
            all.run_lag = all.run_lag.min(p.run_lag);
            all.lag = all.lag.max(p.lag);
        }
        all
    }

    /// Update `all`, the fold of some siblings' paces, for one sibling's pace going from `old`
    /// to `new`; false when that cannot be done in place (`old` held an extreme that `new`
    /// gives up), and the siblings must be folded again.
    #[inline]
    pub fn replace(all: &mut Pace, old: Pace, new: Pace) -> bool {
        if (old.still == all.still && new.still > old.still)
            || (old.run_lag == all.run_lag && new.run_lag > old.run_lag)
            || (old.lag == all.lag && new.lag < old.lag)
        {
            return false;
        }
        all.still = all.still.min(new.still);
        all.run_lag = all.run_lag.min(new.run_lag);
        all.lag = all.lag.max(new.lag);
        true
    }
}

impl Lead {
    /// The siblings' [`Lead`] at `now` from their paces folded ([`Pace::fold`]), as the tests'
    /// `Lead::add` over each one's progress finds it: the slowest still sibling, the running
    /// leader at `now - least running lag`, and the slowest of all, which is a still one or the
    /// progressing one with the most lag (with none progressing, `now` is no less than any
    /// progress, so the minimum is the still one's).
    #[inline]
    pub fn at(all: Pace, now: Time) -> Lead {
        Lead {
            slowest_still: all.still,
            slowest: all.still.min(now - all.lag),
            leader: (all.run_lag != Time::MAX).then(|| now - all.run_lag),
        }
    }
}

/// Under `relaxed-4x`, how long until some vCPU in `running` first leads a sibling that is not
/// progressing by more than the threshold, if nothing changes meanwhile; `None` if never.
/// Progress of running vCPUs grows at rate 1, of the others not at all (halted vCPUs also grow,
/// but they are not running and are checked when they wake).
pub fn next_block_in(progress_ns: &[Time], running: &[bool], progressing: &[bool], threshold_ns: Time) -> Option<Time> {
    let slowest_still = progress_ns.iter().zip(progressing).filter(|(_, &m)| !m).map(|(&q, _)| q).min()?;
    let leader = progress_ns.iter().zip(running).filter(|(_, &r)| r).map(|(&p, _)| p).max()?;
    // the lead must exceed the threshold: one ns past it
    Some((slowest_still + threshold_ns + 1).saturating_sub(leader))
}

/// Under `strict` and `relaxed-3x`, how long until the cumulative skew of some sibling flagged
/// in `ready` (waiting for a pCPU, not progressing) exceeds the threshold, if nothing changes
/// meanwhile: it grows at rate 1 while any sibling progresses; `None` if it never does.
pub fn next_laggard_in(skew_ns: &[Time], progressing: &[bool], ready: &[bool], threshold_ns: Time) -> Option<Time> {
    if !progressing.iter().any(|&p| p) {
        return None;
    }
    skew_ns.iter().zip(ready).filter(|(_, &r)| r).map(|(&s, _)| (threshold_ns + 1).saturating_sub(s)).min()
}

/// The vCPUs (indices within the VM) a co-stopped VM must start at one instant, among the
/// co-stopped ones (`costopped`): all of them under `strict`, the laggards (skew over the
/// threshold) under `relaxed-3x`; none otherwise.
pub fn gang_needs(mode: CoschedMode, skew_ns: &[Time], costopped: &[bool], threshold_ns: Time) -> Vec<usize> {
    (0..costopped.len())
        .filter(|&i| {
            costopped[i]
                && match mode {
                    CoschedMode::Strict => true,
                    CoschedMode::Relaxed3x => skew_ns[i] > threshold_ns,
                    CoschedMode::Off | CoschedMode::Relaxed4x => false,
                }
        })
        .collect()
}

/// One VM in the engine: its vCPUs, and its co-scheduling state (multi-vCPU VMs).
#[derive(Debug, Clone, Default)]
pub struct Siblings {
    /// its vCPUs are `first .. first + n`
    pub first: u32,
    pub n: u32,
    /// vCPUs in COSTOP, in the order they were stopped
    pub stopped: Vec<u32>,
    /// the least progress of those (constant while they are co-stopped), `Time::MAX` when
    /// there are none, kept wherever `stopped` changes; `relaxed-4x` reads it: the first of
    /// them to catch up
    pub stopped_least: Time,
    /// generation of the pending co-stop timer (an older one firing is stale)
    pub timer_gen: u32,
    /// when the pending co-stop timer fires, `Time::MAX` when none is pending
    pub timer_at: Time,
    /// `strict` / `relaxed-3x`: each vCPU's cumulative skew, accounted up to `skew_at`
    pub skew: CumulativeSkew,
    pub skew_at: Time,
    /// which vCPUs have progressed since `skew_at` (what the skew is advanced with)
    pub prog: Vec<bool>,
    /// `strict` / `relaxed-3x`: the whole VM is co-stopped, waiting for a gang co-start
    pub costopped: bool,
    /// `relaxed-3x`: the gang co-started and the co-stop lasts: the vCPUs still in `stopped`
    /// stay co-stopped until every member of the gang is down to the co-start skew
    pub holding: bool,
    /// `relaxed-3x`: the members (bits, within the VM) of the last gang co-start
    pub gang: u64,
    /// `strict` / `relaxed-3x`: which vCPUs (bits) were READY when the VM was last looked at
    /// (one that has entered READY since, already over the threshold, co-stops the VM at once)
    pub ready: u64,
}

/// Flags as a bit set, the first flag lowest.
pub(super) fn bits(flags: impl Iterator<Item = bool>) -> u64 {
    flags.enumerate().fold(0, |acc, (i, f)| acc | (u64::from(f) << i))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Time = 1_000_000; // the figure's unit time: 1 ms

    /// research/cpu.md A4.4's reconstruction of Figure 1: four slots of T; slot 1: v0, v1, v2
    /// progress; slots 2-4: v3; v2 also in slot 2.
    const SLOTS: [[bool; 4]; 4] =
        [[true, true, true, false], [false, false, true, true], [false, false, false, true], [false, false, false, true]];

    fn figure1() -> (CumulativeSkew, Vec<Time>) {
        replay_progress(&SLOTS.map(|s| s.to_vec()), T)
    }

    /// Every non-empty subset of the four vCPUs the rule allows, as sorted lists.
    fn allowed(mode: CoschedMode, threshold: Time) -> Vec<Vec<usize>> {
        let (skew, progress) = figure1();
        (1u64..16)
            .filter(|&s| may_run_together(mode, s, &skew, &progress, 0, threshold))
            .map(|s| (0..4).filter(|i| s >> i & 1 == 1).collect())
            .collect()
    }

    #[test]
    fn figure1_skews_esx3_overestimates_esx4_is_exact() {
        let (skew, progress) = figure1();
        // (a) ESX 3.x: v0 and v1 accumulate 3T though the guest progress differs by only 2T
        assert_eq!(skew.skew_ns, vec![3 * T, 3 * T, 2 * T, 0]);
        // (b) ESX 4: v3's skew is 2T, exactly its lead over the slowest
        assert_eq!(lead_skew(&progress), vec![0, 0, T, 2 * T]);
    }

    #[test]
    fn table1_esx3_allows_four_choices_esx4_nine() {
        // thresholds of A4.4: 2.5T for 3.x, 1.5T for 4.x
        let three = allowed(CoschedMode::Relaxed3x, 5 * T / 2);
        assert_eq!(three, vec![vec![0, 1], vec![0, 1, 2], vec![0, 1, 3], vec![0, 1, 2, 3]]);
        let mut four = allowed(CoschedMode::Relaxed4x, 3 * T / 2);
        four.sort();
        let mut table: Vec<Vec<usize>> = vec![
            vec![0, 1, 2, 3],
            vec![0, 1, 2],
            vec![0, 1, 3],
            vec![0, 1],
            vec![0, 2],
            vec![1, 2],
            vec![0],
            vec![1],
            vec![2],
        ];
        table.sort();
        assert_eq!(four, table);
    }

    #[test]
    fn strict_needs_every_non_halted_vcpu_once_skewed() {
        let (skew, progress) = figure1();
        let halted = 0b0100; // v2 halted: not needed
        let ok = |s| may_run_together(CoschedMode::Strict, s, &skew, &progress, halted, 5 * T / 2);
        assert!(ok(0b1011) && ok(0b1111));
        assert!(!ok(0b0011) && !ok(0b0111));
        // below the threshold nothing is co-stopped
        assert!(may_run_together(CoschedMode::Strict, 0b0001, &skew, &progress, 0, 3 * T));
    }

    #[test]
    fn a_leader_is_blocked_only_by_a_sibling_that_stands_still() {
        let progress = [T, T, 2 * T, 3 * T];
        let th = 3 * T / 2;
        // v3 leads v0 and v1 by 2T: blocked while either is still
        assert!(blocked(3, &progress, &[false, true, true, false], th));
        // both run beside it: free
        assert!(!blocked(3, &progress, &[true, true, false, false], th));
        // v2 leads by T only: never blocked
        assert!(!blocked(2, &progress, &[false, false, false, false], th));
    }

    proptest::proptest! {
        /// `Lead`'s one pass answers as the per-sibling rules do, for any siblings (a running
        /// vCPU progresses).
        #[test]
        fn lead_answers_as_blocked_and_next_block_in(
            sibs in proptest::collection::vec((0..20u64, 0..3u8), 1..9),
            th in 0..8u64,
        ) {
            let progress: Vec<Time> = sibs.iter().map(|s| s.0).collect();
            let running: Vec<bool> = sibs.iter().map(|s| s.1 == 2).collect();
            let moving: Vec<bool> = sibs.iter().map(|s| s.1 >= 1).collect();
            let mut lead = Lead::NONE;
            for i in 0..sibs.len() {
                lead.add(progress[i], moving[i], running[i]);
            }
            for i in 0..sibs.len() {
                proptest::prop_assert_eq!(lead.blocks(progress[i], th), blocked(i, &progress, &moving, th));
            }
            proptest::prop_assert_eq!(lead.next_block_in(th), next_block_in(&progress, &running, &moving, th));
            for cs in [0, th / 2, th] {
                for i in 0..sibs.len() {
                    proptest::prop_assert_eq!(lead.caught_up(progress[i], cs), caught_up(i, &progress, cs));
                    // the stopped vCPU itself stands still
                    let mut still = moving.clone();
                    still[i] = false;
                    let mut l = Lead::NONE;
                    for j in 0..sibs.len() {
                        l.add(progress[j], still[j], running[j] && j != i);
                    }
                    proptest::prop_assert_eq!(l.next_release_in(progress[i], cs), next_release_in(i, &progress, &still, cs));
                }
            }
        }
    }

    proptest::proptest! {
        /// The paces give the `Lead` that one pass over the siblings' progress gives, at the
        /// moment they were taken and later, with the progressing ones moved on.
        #[test]
        fn paces_give_the_lead_of_the_siblings(
            sibs in proptest::collection::vec((0..20u64, 0..3u8), 1..9),
            at in 20..40u64,
            later in 0..30u64,
        ) {
            for now in [at, at + later] {
                let mut lead = Lead::NONE;
                let mut paces = Vec::new();
                for &(p, class) in &sibs {
                    let (moving, running) = (class >= 1, class == 2);
                    // progress at `now`: the progressing ones moved on by `now - at`
                    let q = if moving { p + (now - at) } else { p };
                    lead.add(q, moving, running);
                    paces.push(Pace::new(p, at, moving, running));
                }
                proptest::prop_assert_eq!(Lead::at(Pace::fold(&paces), now), lead);
            }
        }

        /// Replacing one sibling's pace in place, where `Pace::replace` can, gives the fold of
        /// the siblings' new paces.
        #[test]
        fn a_pace_replaced_in_place_is_the_fold_again(
            sibs in proptest::collection::vec((0..20u64, 0..3u8), 1..9),
            who in 0..8usize,
            to in (0..20u64, 0..3u8),
        ) {
            let pace = |(p, class): (u64, u8)| Pace::new(p, 20, class >= 1, class == 2);
            let mut paces: Vec<Pace> = sibs.iter().map(|&s| pace(s)).collect();
            let mut all = Pace::fold(&paces);
            let i = who % paces.len();
            let old = std::mem::replace(&mut paces[i], pace(to));
            if Pace::replace(&mut all, old, paces[i]) {
                proptest::prop_assert_eq!(all, Pace::fold(&paces));
            }
        }
    }

    #[test]
    fn next_block_is_when_the_lead_passes_the_threshold() {
        let th = 3 * T;
        // v0 runs at 2T ahead of v1, which is ready: after T + 1 ns the lead exceeds 3T
        assert_eq!(next_block_in(&[5 * T, 3 * T], &[true, false], &[true, false], th), Some(T + 1));
        // both progressing: never
        assert_eq!(next_block_in(&[5 * T, 3 * T], &[true, false], &[true, true], th), None);
        // nothing running: never
        assert_eq!(next_block_in(&[5 * T, 3 * T], &[false, false], &[false, false], th), None);
    }
}
