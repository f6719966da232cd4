//! The Native Multipathing Plug-in's path selection policies: FIXED, MRU, RR and PSP Adaptive.
//!
//! A LUN's paths are each *up* or *down* and, on an ALUA array, *active optimized* (AO, to the
//! owning controller) or *active un-optimized* (AUO). For every command the NMP asks the LUN's
//! PSP for a path:
//!
//! - **FIXED** sends everything down the preferred path while it is up. When it fails, I/O moves
//!   to another working path (AO first) and stays there until the preferred path returns, then
//!   fails back.
//! - **MRU** keeps the most recently used working path; on failure it moves to another working
//!   path (AO first) and does not fail back.
//! - **RR** rotates over the working AO paths (all working paths if no AO path works), moving to
//!   the next path after every `iops` commands (`esxcli storage nmp psp roundrobin deviceconfig
//!   set --type=iops --iops=N`, default 1000).
//! - **Adaptive** ([P] §3) is RR for reads, always. Writes follow RR too until the AO paths
//!   saturate: at the end of each monitoring window it computes t_o and t_uo, the mean device
//!   latency (DAVG) of the commands completed on AO and on AUO paths in the window, and the
//!   aggregate IOPS and throughput over all paths. Then, in this order (research/storage.md C3.8):
//!   1. knob off: stop spreading (behave exactly as RR);
//!   2. spreading and t_uo > t_c: stop ("the un-optimized paths should not be used"); re-arm
//!      only once t_o falls below t_b (C3.7, `tc_sticky`, or below t_a without it);
//!   3. spreading and t_o < t_b: stop;
//!   4. spreading, every `check_windows` windows: unless IOPS or throughput is at least 10%
//!      above the reference saved when spreading started, stop; re-arm once t_o falls below t_a
//!      ("unless the I/O latency on optimized paths exceeds ta again ...");
//!   5. not spreading, armed and t_o > t_a: save this window's IOPS and throughput as the
//!      reference, then start spreading.
//!
//!   Between t_b and t_a nothing changes (hysteresis). While spreading, writes rotate over all
//!   working paths, AO and AUO, switching every `iops` writes; reads never use AUO paths.
//!
//! The policy and its settings can change while I/O runs, as esxcli changes them
//! ([`PspChange`]): a new policy (`esxcli storage nmp device set --psp`) takes over with the
//! paths' states as they are and a fresh round-robin position (a new Adaptive starts armed, not
//! spreading); a new switch count (`--iops`) applies from the next command; the Adaptive knob
//! acts at the next window's end.
//!
//! # Tunables
//! [`super::PspSpec`]: FIXED `preferred`, RR `iops`, Adaptive `iops` and [`super::AdaptiveParams`]
//! (`ta_ns` > `tb_ns`, `tc_ns` > `ta_ns`, `window_ns` 1 s, `check_windows` 5, `improvement` 0.10,
//! `enabled`, `tc_sticky`).
//!
//! # Counters
//! Per path the esxtop path view (`counters.rs`); per Adaptive LUN the log of its state changes
//! with the window's t_o, t_uo, IOPS and throughput ([`AdaptiveChange`]).
//!
//! # Known gaps
//! - No SATP: path states come from the topology and from failure events, not from REPORT
//!   TARGET PORT GROUPS; no path-state transitions of ALUA itself (transitioning, standby).
//! - RR's `--type=bytes` switching is not modelled.

use super::{AdaptiveParams, Op, PspSpec};
use crate::sim::{ns_f, Time};

/// A change of a LUN's path selection made while it runs (esxcli).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PspChange {
    /// `esxcli storage nmp device set --device <lun> --psp <policy>`
    Policy(PspSpec),
    /// `esxcli storage nmp psp roundrobin deviceconfig set --type=iops --iops=N` (RR or Adaptive)
    Iops(u32),
    /// PSP Adaptive's on/off knob
    AdaptiveEnabled(bool),
}

/// Why PSP Adaptive changed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdaptiveReason {
    /// t_o > t_a while armed: write spread on
    Start,
    /// t_o < t_b: off
    StopBelowTb,
    /// t_uo > t_c: off, re-armed only later
    StopAuoAboveTc,
    /// neither IOPS nor throughput improved by the required fraction: off
    StopNoImprovement,
    /// the knob was turned off while spreading
    StopKnobOff,
    /// latency fell back below the re-arm level: spreading may start again
    Rearm,
}

/// One logged state change of PSP Adaptive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveChange {
    /// end of the window that decided it
    pub at: Time,
    /// what happened
    pub reason: AdaptiveReason,
    /// mean DAVG on AO paths in the window, ns
    pub t_o_ns: f64,
    /// mean DAVG on AUO paths in the window, ns (0 without AUO completions)
    pub t_uo_ns: f64,
    /// aggregate commands per second in the window
    pub iops: f64,
    /// aggregate bytes per second in the window
    pub bytes_per_s: f64,
}

/// What a LUN saw in one monitoring window.
#[derive(Debug, Clone, Copy, Default)]
pub struct WindowStats {
    /// summed DAVG of commands completed on AO paths, ns
    pub ao_sum_ns: u64,
    /// commands completed on AO paths
    pub ao_n: u64,
    /// summed DAVG on AUO paths, ns
    pub auo_sum_ns: u64,
    /// commands completed on AUO paths
    pub auo_n: u64,
    /// bytes completed on all paths
    pub bytes: u64,
}

#[derive(Debug, Clone)]
struct Adaptive {
    p: AdaptiveParams,
    spreading: bool,
    armed: bool,
    sticky: bool,
    windows: u32,
    ref_iops: f64,
    ref_tp: f64,
    log: Vec<AdaptiveChange>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Fixed { preferred: usize },
    Mru,
    Rr,
}

/// Round-robin cursor: the current path and the commands sent down it since the last switch.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    cur: usize,
    count: u32,
}

/// One LUN's NMP: its path states and its PSP.
#[derive(Debug, Clone)]
pub struct Nmp {
    kind: Kind,
    iops: u32,
    up: Vec<bool>,
    optimized: Vec<bool>,
    current: usize,
    rr: Cursor,
    wr: Cursor,
    adaptive: Option<Adaptive>,
}

impl Nmp {
    /// The NMP of a LUN whose paths are AO where `optimized` says so, all up.
    pub fn new(psp: &PspSpec, optimized: Vec<bool>) -> Self {
        let (kind, iops, adaptive) = match psp {
            PspSpec::Fixed { preferred } => (Kind::Fixed { preferred: *preferred as usize }, 1, None),
            PspSpec::Mru => (Kind::Mru, 1, None),
            PspSpec::RoundRobin { iops } => (Kind::Rr, *iops, None),
            PspSpec::Adaptive { iops, params } => (
                Kind::Rr,
                *iops,
                Some(Adaptive { p: params.clone(), spreading: false, armed: true, sticky: false, windows: 0, ref_iops: 0.0, ref_tp: 0.0, log: Vec::new() }),
            ),
        };
        let n = optimized.len();
        let mut nmp = Nmp { kind, iops, up: vec![true; n], optimized, current: 0, rr: Cursor::default(), wr: Cursor::default(), adaptive };
        nmp.current = match kind {
            Kind::Fixed { preferred } => preferred,
            _ => nmp.first_working().unwrap_or(0),
        };
        nmp.rr.cur = nmp.current;
        nmp.wr.cur = nmp.current;
        nmp
    }

    /// First working path, AO before AUO.
    fn first_working(&self) -> Option<usize> {
        let n = self.up.len();
        (0..n).find(|&i| self.up[i] && self.optimized[i]).or_else(|| (0..n).find(|&i| self.up[i]))
    }

    /// Advance `c` to the next path after its current one that `ok` accepts, if the current one
    /// is not acceptable or has had its `iops` commands.
    #[inline]
    fn rotate(c: &mut Cursor, iops: u32, n: usize, ok: impl Fn(usize) -> bool) -> Option<usize> {
        if !ok(c.cur) || c.count >= iops {
            let next = (1..=n).map(|k| (c.cur + k) % n).find(|&i| ok(i))?;
            c.cur = next;
            c.count = 0;
        }
        c.count += 1;
        Some(c.cur)
    }

    /// The path (index among the LUN's paths) for the next command, or `None` when every path is down.
    #[inline]
    pub fn select(&mut self, op: Op) -> Option<usize> {
        let n = self.up.len();
        match self.kind {
            Kind::Fixed { .. } | Kind::Mru => {
                if !self.up[self.current] {
                    self.current = self.first_working()?;
                }
                Some(self.current)
            }
            Kind::Rr => {
                let (up, opt) = (&self.up, &self.optimized);
                if op == Op::Write && self.adaptive.as_ref().is_some_and(|a| a.spreading) {
                    return Self::rotate(&mut self.wr, self.iops, n, |i| up[i]);
                }
                let any_ao = (0..n).any(|i| up[i] && opt[i]);
                Self::rotate(&mut self.rr, self.iops, n, |i| up[i] && (opt[i] || !any_ao))
            }
        }
    }

    /// Apply an esxcli change. The paths keep their states; a new policy starts afresh (Adaptive
    /// armed and not spreading; its earlier log is kept). A switch count for a policy without one
    /// and the knob of a LUN not on Adaptive are refused (esxcli refuses them too).
    pub fn change(&mut self, c: &PspChange) -> Result<(), String> {
        match c {
            PspChange::Policy(psp) => {
                let log = self.adaptive.take().map(|a| a.log).unwrap_or_default();
                let up = std::mem::take(&mut self.up);
                *self = Nmp::new(psp, std::mem::take(&mut self.optimized));
                for (i, u) in up.into_iter().enumerate() {
                    self.set_up(i, u);
                }
                if let Some(a) = &mut self.adaptive {
                    a.log = log;
                }
                if !self.up[self.current] {
                    self.current = self.first_working().unwrap_or(self.current);
                }
            }
            PspChange::Iops(n) if self.kind == Kind::Rr && *n >= 1 => self.iops = *n,
            PspChange::Iops(n) => return Err(format!("--iops {n} on a LUN whose policy has no switch count (RR or Adaptive, iops >= 1)")),
            PspChange::AdaptiveEnabled(on) => match &mut self.adaptive {
                Some(a) => a.p.enabled = *on,
                None => return Err("the Adaptive knob on a LUN whose policy is not Adaptive".into()),
            },
        }
        Ok(())
    }

    /// Path `i` failed or came back.
    pub fn set_up(&mut self, i: usize, up: bool) {
        self.up[i] = up;
        if let Kind::Fixed { preferred } = self.kind {
            if up && i == preferred {
                self.current = preferred; // fail back
            }
        }
    }

    /// Whether path `i` is active optimized.
    pub fn optimized(&self, i: usize) -> bool {
        self.optimized[i]
    }

    /// Whether PSP Adaptive is spreading writes now (false for the other PSPs).
    pub fn spreading(&self) -> bool {
        self.adaptive.as_ref().is_some_and(|a| a.spreading)
    }

    /// PSP Adaptive's state changes so far (empty for the other PSPs).
    pub fn adaptive_log(&self) -> &[AdaptiveChange] {
        self.adaptive.as_ref().map_or(&[], |a| &a.log)
    }

    /// The monitoring window is `Some(ns)` for PSP Adaptive.
    pub fn window_ns(&self) -> Option<Time> {
        self.adaptive.as_ref().map(|a| a.p.window_ns)
    }

    /// Turn PSP Adaptive's knob on or off (esxcli); no effect on the other PSPs.
    pub fn set_adaptive_enabled(&mut self, on: bool) {
        if let Some(a) = &mut self.adaptive {
            a.p.enabled = on;
        }
    }

    /// Close a monitoring window of PSP Adaptive at `now` with what it saw.
    pub fn window(&mut self, now: Time, w: &WindowStats) {
        let Some(a) = &mut self.adaptive else { return };
        let secs = ns_f(a.p.window_ns) / 1e9;
        let t_o = if w.ao_n > 0 { w.ao_sum_ns as f64 / w.ao_n as f64 } else { 0.0 };
        let t_uo = if w.auo_n > 0 { w.auo_sum_ns as f64 / w.auo_n as f64 } else { 0.0 };
        let iops = (w.ao_n + w.auo_n) as f64 / secs;
        let tp = w.bytes as f64 / secs;
        let (ta, tb, tc) = (ns_f(a.p.ta_ns), ns_f(a.p.tb_ns), ns_f(a.p.tc_ns));
        let change = |a: &mut Adaptive, reason| a.log.push(AdaptiveChange { at: now, reason, t_o_ns: t_o, t_uo_ns: t_uo, iops, bytes_per_s: tp });
        if !a.p.enabled {
            if a.spreading {
                a.spreading = false;
                change(a, AdaptiveReason::StopKnobOff);
            }
            return;
        }
        if a.spreading {
            if w.auo_n > 0 && t_uo > tc {
                a.spreading = false;
                a.armed = false;
                a.sticky = a.p.tc_sticky;
                change(a, AdaptiveReason::StopAuoAboveTc);
            } else if t_o < tb {
                a.spreading = false;
                a.armed = true;
                change(a, AdaptiveReason::StopBelowTb);
            } else {
                a.windows += 1;
                if a.windows % a.p.check_windows == 0 {
                    let k = 1.0 + a.p.improvement;
                    if !(iops >= k * a.ref_iops || tp >= k * a.ref_tp) {
                        a.spreading = false;
                        a.armed = false;
                        a.sticky = false;
                        change(a, AdaptiveReason::StopNoImprovement);
                    }
                }
            }
            return;
        }
        if !a.armed {
            if t_o < if a.sticky { tb } else { ta } {
                a.armed = true;
                a.sticky = false;
                change(a, AdaptiveReason::Rearm);
            }
            return;
        }
        if t_o > ta {
            a.ref_iops = iops;
            a.ref_tp = tp;
            a.spreading = true;
            a.windows = 0;
            change(a, AdaptiveReason::Start);
        }
    }
}
