//! esxtop's disk counters, accumulated per VM disk, LUN (device), path and adapter.
//!
//! Each grain keeps cumulative totals ([`DiskCounters`]): commands, reads, writes, bytes each
//! way, summed latencies, and the current and time-integrated numbers of active and queued
//! commands. A sampler takes two snapshots and [`EsxtopDisk::between`] turns the difference into
//! esxtop's columns, with esxtop's meanings:
//!
//! | column | meaning |
//! |---|---|
//! | CMDS/s | commands completed per second (reads + writes) |
//! | READS/s, WRITES/s | read and write commands per second |
//! | MBREAD/s, MBWRTN/s | megabytes (2^20 bytes) read and written per second |
//! | DAVG/cmd | ms per command at the device: from leaving the kernel to completion (fabric, array, disk) |
//! | KAVG/cmd | ms per command in the VMkernel: GAVG - DAVG (queueing plus failed attempts) |
//! | GAVG/cmd | ms per command as the guest sees it: from the VMM receiving it to completion |
//! | QAVG/cmd | ms per command waiting in the kernel queues (part of KAVG) |
//! | ACTV | commands active at the device now (issued, not completed) |
//! | QUED | commands queued in the kernel now |
//! | %USD | ACTV / DQLEN x 100 |
//! | DQLEN | the queue depth: the LUN's device queue depth; for a VM disk the per-VM limit (`Disk.SchedNumReqOutstanding`); for an adapter the port's queue depth (esxtop AQLEN) |
//!
//! Grains: the *LUN*, *path* and *adapter* count device commands (after splitting and merging,
//! as the device sees them); the *VM disk* counts the guest's requests (one per request however
//! many pieces it became), with GAVG the request's whole response time.
//!
//! # Tunables
//! None.
//!
//! # Counters
//! The table above, plus ABRTS (commands aborted because their path failed and retried
//! elsewhere) and the averages of ACTV and QUED over the interval (esxtop shows the
//! instantaneous values; the averages are steadier for short intervals).
//!
//! # Known gaps
//! - No RESETS/s, no per-path QUED (the queue is per LUN), no LAT/rd and LAT/wr split.

use crate::sim::{ns_f, Time};

/// Cumulative counters of one grain.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskCounters {
    /// commands completed
    pub cmds: u64,
    /// reads completed
    pub reads: u64,
    /// writes completed
    pub writes: u64,
    /// bytes read
    pub bytes_read: u64,
    /// bytes written
    pub bytes_written: u64,
    /// summed device time, ns
    pub davg_sum_ns: u64,
    /// summed kernel time, ns
    pub kavg_sum_ns: u64,
    /// summed guest-visible time, ns
    pub gavg_sum_ns: u64,
    /// summed kernel queue time, ns
    pub qavg_sum_ns: u64,
    /// commands aborted (path failure) and retried
    pub aborts: u64,
    /// active now
    pub actv: u32,
    /// queued now
    pub qued: u32,
    /// the queue depth shown as DQLEN
    pub dqlen: u32,
    /// integral of ACTV over time up to `level_at`, command-ns (filled in by [`DiskCounters::at`])
    pub actv_area: u64,
    /// integral of QUED over time up to `level_at`, command-ns (filled in by [`DiskCounters::at`])
    pub qued_area: u64,
    /// when ACTV or QUED last changed; in a snapshot, the time it was taken
    pub level_at: Time,
    /// sum over every change of ACTV of the change times the time it happened (modulo 2^64):
    /// the integral up to `t` is `actv * t - actv_moment`, since ACTV starts at 0 at time 0
    pub(crate) actv_moment: u64,
    /// the same for QUED
    pub(crate) qued_moment: u64,
}

impl DiskCounters {
    /// Change ACTV by `dactv` and QUED by `dqued` at `now` (never before the last change).
    ///
    /// The integrals are not summed interval by interval: each change adds `change * now` to
    /// a moment, and [`DiskCounters::at`] takes `level * t - moment`, the same integer (a sum
    /// of `level * dt` over the intervals, rearranged). Constant deltas then cost an add each,
    /// and a zero delta nothing: the stack levels ten counters per I/O.
    #[inline]
    pub fn level(&mut self, now: Time, dactv: i32, dqued: i32) {
        debug_assert!(now >= self.level_at, "counters changed at {now} ns, after a change at {} ns", self.level_at);
        self.level_at = now;
        self.actv = self.actv.wrapping_add_signed(dactv);
        self.qued = self.qued.wrapping_add_signed(dqued);
        self.actv_moment = self.actv_moment.wrapping_add((i64::from(dactv) as u64).wrapping_mul(now));
        self.qued_moment = self.qued_moment.wrapping_add((i64::from(dqued) as u64).wrapping_mul(now));
    }

    /// Record one completed command.
    #[inline]
    pub fn complete(&mut self, read: bool, bytes: u64, davg: Time, gavg: Time, qavg: Time) {
        self.cmds += 1;
        if read {
            self.reads += 1;
            self.bytes_read += bytes;
        } else {
            self.writes += 1;
            self.bytes_written += bytes;
        }
        self.davg_sum_ns += davg;
        self.gavg_sum_ns += gavg;
        self.kavg_sum_ns += gavg - davg;
        self.qavg_sum_ns += qavg;
    }

    /// A copy with the integrals brought up to `now` (for sampling).
    pub fn at(&self, now: Time) -> DiskCounters {
        assert!(now >= self.level_at, "counters sampled at {now} ns, before their last change at {} ns", self.level_at);
        let mut c = *self;
        c.actv_area = u64::from(self.actv).wrapping_mul(now).wrapping_sub(self.actv_moment);
        c.qued_area = u64::from(self.qued).wrapping_mul(now).wrapping_sub(self.qued_moment);
        c.level_at = now;
        c
    }
}

/// One esxtop disk row over an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EsxtopDisk {
    /// CMDS/s
    pub cmds_per_s: f64,
    /// READS/s
    pub reads_per_s: f64,
    /// WRITES/s
    pub writes_per_s: f64,
    /// MBREAD/s
    pub mbread_per_s: f64,
    /// MBWRTN/s
    pub mbwrtn_per_s: f64,
    /// DAVG/cmd, ms
    pub davg_ms: f64,
    /// KAVG/cmd, ms
    pub kavg_ms: f64,
    /// GAVG/cmd, ms
    pub gavg_ms: f64,
    /// QAVG/cmd, ms
    pub qavg_ms: f64,
    /// ACTV at the end of the interval
    pub actv: u32,
    /// QUED at the end of the interval
    pub qued: u32,
    /// mean ACTV over the interval
    pub actv_mean: f64,
    /// mean QUED over the interval
    pub qued_mean: f64,
    /// %USD at the end of the interval (0 when DQLEN is 0)
    pub usd_pct: f64,
    /// DQLEN
    pub dqlen: u32,
    /// ABRTS/s
    pub aborts_per_s: f64,
}

const MB: f64 = 1024.0 * 1024.0;

impl EsxtopDisk {
    /// The row for the interval between snapshots `a` and `b` (both from [`DiskCounters::at`]).
    pub fn between(a: &DiskCounters, b: &DiskCounters) -> EsxtopDisk {
        let secs = ns_f(b.level_at - a.level_at) / 1e9;
        let per_s = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let n = b.cmds - a.cmds;
        let per_cmd = |x: u64| if n > 0 { x as f64 / n as f64 / 1e6 } else { 0.0 };
        let mean = |x: u64| if secs > 0.0 { x as f64 / (secs * 1e9) } else { 0.0 };
        EsxtopDisk {
            cmds_per_s: per_s(n),
            reads_per_s: per_s(b.reads - a.reads),
            writes_per_s: per_s(b.writes - a.writes),
            mbread_per_s: per_s(b.bytes_read - a.bytes_read) / MB,
            mbwrtn_per_s: per_s(b.bytes_written - a.bytes_written) / MB,
            davg_ms: per_cmd(b.davg_sum_ns - a.davg_sum_ns),
            kavg_ms: per_cmd(b.kavg_sum_ns - a.kavg_sum_ns),
            gavg_ms: per_cmd(b.gavg_sum_ns - a.gavg_sum_ns),
            qavg_ms: per_cmd(b.qavg_sum_ns - a.qavg_sum_ns),
            actv: b.actv,
            qued: b.qued,
            actv_mean: mean(b.actv_area - a.actv_area),
            qued_mean: mean(b.qued_area - a.qued_area),
            usd_pct: if b.dqlen > 0 { 100.0 * f64::from(b.actv) / f64::from(b.dqlen) } else { 0.0 },
            dqlen: b.dqlen,
            aborts_per_s: per_s(b.aborts - a.aborts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integrals against a sum of `level * dt` over the intervals between changes, for
    /// random changes (several at the same instant too) and snapshots taken in between.
    #[test]
    fn integrals_equal_the_interval_sums() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut c = DiskCounters::default();
        let (mut actv, mut qued, mut area_a, mut area_q, mut t) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for _ in 0..20_000 {
            let dt = if next() % 3 == 0 { 0 } else { next() % 5_000_000 };
            area_a += actv * dt;
            area_q += qued * dt;
            t += dt;
            if next() % 7 == 0 {
                let s = c.at(t);
                assert_eq!((s.actv_area, s.qued_area, s.level_at), (area_a, area_q, t));
                assert_eq!((s.actv, s.qued), (actv as u32, qued as u32));
            }
            let da = (next() % 5) as i32 - 2;
            let dq = (next() % 9) as i32 - 4;
            let (da, dq) = (da.max(-(actv as i32)), dq.max(-(qued as i32)));
            c.level(t, da, dq);
            actv = (actv as i64 + i64::from(da)) as u64;
            qued = (qued as i64 + i64::from(dq)) as u64;
        }
        let s = c.at(t + 1);
        assert_eq!((s.actv_area, s.qued_area), (area_a + actv, area_q + qued));
        assert!(area_a > 1 << 40, "a long run, so that the moments are large numbers");
    }
}
