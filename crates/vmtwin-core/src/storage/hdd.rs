//! A spinning disk: seek by cylinder distance, rotation to the sector, transfer, and an
//! on-board queue the firmware reorders.
//!
//! A logical block address maps to cylinder `lba / sectors_per_cylinder` and to the angle
//! `(lba mod sectors_per_track) / sectors_per_track` of a revolution. The platter turns at
//! `rpm`, so the head's angle at time `t` is `(t mod T_rev) / T_rev`. Serving a command costs
//!
//! ```text
//! overhead + seek(|Δcyl|) + rotational wait + bytes / media rate
//! seek(d) = 0 if d = 0, else t_track + (t_full - t_track) * sqrt((d - 1) / (cylinders - 1))
//! ```
//!
//! (the square-root seek curve of Ruemmler and Wilkes), where the rotational wait is the time
//! for the target sector to come under the head once the seek ends. One actuator serves one
//! command at a time; the others wait in the on-board queue (NCQ), and when the head frees the
//! firmware picks the next by FCFS, shortest seek (SSTF) or shortest positioning time (SPTF,
//! seek plus rotation, what NCQ firmware approximates). Ties go to the oldest command.
//!
//! # Tunables
//! [`super::HddParams`]: `rpm`, geometry (`cylinders`, `sectors_per_cylinder`,
//! `sectors_per_track`), `seek_track_ns`, `seek_full_ns`, `media_bytes_per_s`,
//! `command_overhead_ns`, `queue_depth`, `order`; defaults and sources there.
//!
//! # Counters
//! None of its own; its queueing and service show in DAVG/cmd at the LUN and path.
//!
//! # Known gaps
//! - No zoned recording (constant sectors per track), no track or head switch time, no on-board
//!   cache or write-back, no read-ahead.
//! - Head settle is folded into `seek_track_ns`.

use super::{HddOrder, HddParams, Op, SECTOR_BYTES};
use crate::sim::{ns, ns_f, Time};

/// A command waiting on board.
#[derive(Debug, Clone, Copy)]
pub struct HddCmd {
    /// the stack's command id
    pub cmd: u32,
    /// the attempt it belongs to
    pub attempt: u64,
    /// direction
    pub op: Op,
    /// first sector
    pub lba: u64,
    /// bytes
    pub len: u32,
    /// when it reaches the disk
    pub ready: Time,
}

/// One spinning disk.
#[derive(Debug, Clone)]
pub struct Hdd {
    p: HddParams,
    rev_ns: f64,
    ns_per_byte: f64,
    head_cyl: u64,
    busy: bool,
    queue: Vec<HddCmd>,
}

impl Hdd {
    /// An idle disk with its head on cylinder 0.
    pub fn new(p: &HddParams) -> Self {
        Hdd {
            rev_ns: 60e9 / f64::from(p.rpm),
            ns_per_byte: 1e9 / p.media_bytes_per_s as f64,
            p: p.clone(),
            head_cyl: 0,
            busy: false,
            queue: Vec::with_capacity(p.queue_depth as usize),
        }
    }

    fn cylinder(&self, lba: u64) -> u64 {
        (lba / u64::from(self.p.sectors_per_cylinder)).min(u64::from(self.p.cylinders) - 1)
    }

    /// Seek time over `d` cylinders, ns.
    pub fn seek_ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        let span = (f64::from(self.p.cylinders) - 1.0).max(1.0);
        let t0 = ns_f(self.p.seek_track_ns);
        t0 + (ns_f(self.p.seek_full_ns) - t0) * ((d - 1) as f64 / span).sqrt()
    }

    /// Seek plus rotational wait to reach `lba` when positioning starts at `t`, ns.
    fn positioning_ns(&self, t: Time, lba: u64) -> (f64, f64) {
        let seek = self.seek_ns(self.cylinder(lba).abs_diff(self.head_cyl));
        let spt = u64::from(self.p.sectors_per_track);
        let target = (lba % spt) as f64 / spt as f64;
        let after = ((ns_f(t) + seek) % self.rev_ns) / self.rev_ns;
        let wait = (target - after).rem_euclid(1.0) * self.rev_ns;
        (seek, wait)
    }

    /// Mean service time of a command of `len` bytes under random access, ns (for SFQ costs):
    /// overhead + seek over a third of the stroke + half a revolution + transfer.
    pub fn expected_ns(&self, len: u32) -> f64 {
        ns_f(self.p.command_overhead_ns) + self.seek_ns(u64::from(self.p.cylinders) / 3) + self.rev_ns / 2.0 + f64::from(len) * self.ns_per_byte
    }

    /// On-board queue depth.
    pub fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }

    /// A command arrives. If the head is free it starts now: returns it with its completion.
    pub fn submit(&mut self, now: Time, c: HddCmd) -> Option<(HddCmd, Time)> {
        self.queue.push(c);
        if self.busy {
            None
        } else {
            self.next(now)
        }
    }

    /// The head is free at `now` (its last command completed): start the next, if any.
    pub fn next(&mut self, now: Time) -> Option<(HddCmd, Time)> {
        self.busy = false;
        if self.queue.is_empty() {
            return None;
        }
        let start = now;
        let over = ns_f(self.p.command_overhead_ns);
        let pick = match self.p.order {
            HddOrder::Fcfs => 0,
            HddOrder::Sstf => {
                let mut best = 0;
                for i in 1..self.queue.len() {
                    let d = |j: usize| self.cylinder(self.queue[j].lba).abs_diff(self.head_cyl);
                    if d(i) < d(best) {
                        best = i;
                    }
                }
                best
            }
            HddOrder::Sptf => {
                let t = start + ns(over);
                let cost = |c: &HddCmd| {
                    let (s, w) = self.positioning_ns(t.max(c.ready), c.lba);
                    s + w + ns_f(c.ready.saturating_sub(t))
                };
                let mut best = 0;
                let mut best_cost = cost(&self.queue[0]);
                for i in 1..self.queue.len() {
                    let ci = cost(&self.queue[i]);
                    if ci < best_cost {
                        best = i;
                        best_cost = ci;
                    }
                }
                best
            }
        };
        let c = self.queue.remove(pick);
        let t = start.max(c.ready) + ns(over);
        let (seek, wait) = self.positioning_ns(t, c.lba);
        let done = t + ns(seek + wait + f64::from(c.len) * self.ns_per_byte);
        self.head_cyl = self.cylinder(c.lba + u64::from(c.len).div_ceil(SECTOR_BYTES).saturating_sub(1));
        self.busy = true;
        Some((c, done))
    }

    /// Commands on board, including the one in service.
    pub fn pending(&self) -> usize {
        self.queue.len() + usize::from(self.busy)
    }
}
