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
    /// integral of ACTV over time, command-ns
    pub actv_area: u64,
    /// integral of QUED over time, command-ns
    pub qued_area: u64,
    /// when the integrals were last brought up to date
    pub level_at: Time,
}

impl DiskCounters {
    /// Bring the integrals up to `now`, then change ACTV by `dactv` and QUED by `dqued`.
    #[inline]
    pub fn level(&mut self, now: Time, dactv: i32, dqued: i32) {
        let dt = now - self.level_at;
        self.actv_area += u64::from(self.actv) * dt;
        self.qued_area += u64::from(self.qued) * dt;
        self.level_at = now;
        self.actv = self.actv.wrapping_add_signed(dactv);
        self.qued = self.qued.wrapping_add_signed(dqued);
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
        c.level(now, 0, 0);
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
