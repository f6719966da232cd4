//! Devices whose completion time is known when a command starts: the analytic exponential
//! server and the directly attached SSD, both FCFS over parallel servers.
//!
//! A [`ServerPool`] keeps the time each of its `c` servers next falls free. A command ready at
//! `r` starts on the server that frees first, at `max(r, free)`, and holds it for its service
//! time, so commands are served first come first served in the order they reach the device and
//! the completion is known at submission: one engine event per command. With one server and
//! exponential service this is exactly M/M/1 FCFS; with `c` servers M/M/c.
//!
//! An SSD command takes a fixed part by direction plus its bytes at the interface rate shared
//! by the channels (each channel moves `bytes_per_s / channels`), so small random I/O is latency
//! bound and large I/O bandwidth bound.
//!
//! # Tunables
//! [`super::DeviceSpec::Exponential`] `servers`, `mean_service_ns`; [`super::SsdParams`]
//! (`channels`, `read_ns`, `write_ns`, `bytes_per_s`, `queue_depth`), sources there.
//!
//! # Counters
//! None of their own: DAVG at the LUN and path includes the time a command waits here for a
//! server (as a real device's internal queueing shows up in DAVG).
//!
//! # Known gaps
//! - The SSD has no garbage collection, write cliff or read/write interference.
//! - FCFS order is the order of `ready` submission, not of `ready` times; callers submit with
//!   non-decreasing ready times per device except across paths with different link delays.

use super::{Op, SsdParams};
use crate::sim::{Rng, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `c` parallel servers, FCFS: the times they fall free, earliest on top.
#[derive(Debug, Clone)]
pub struct ServerPool {
    free_at: BinaryHeap<Reverse<Time>>,
}

impl ServerPool {
    /// `servers` idle servers.
    pub fn new(servers: u32) -> Self {
        ServerPool { free_at: (0..servers).map(|_| Reverse(0)).collect() }
    }

    /// Serve a command ready at `ready` for `service` ns on the server that frees first;
    /// returns its completion time.
    #[inline]
    pub fn serve(&mut self, ready: Time, service: Time) -> Time {
        let mut first = self.free_at.peek_mut().expect("a pool has at least one server");
        let done = ready.max(first.0) + service;
        *first = Reverse(done);
        done
    }
}

/// The analytic device: exponential service.
#[derive(Debug, Clone)]
pub struct ExpDevice {
    pool: ServerPool,
    mean_ns: f64,
    rng: Rng,
}

impl ExpDevice {
    /// `servers` servers with exponential service of mean `mean_ns`, drawing from `rng`.
    pub fn new(servers: u32, mean_ns: Time, rng: Rng) -> Self {
        ExpDevice { pool: ServerPool::new(servers), mean_ns: mean_ns as f64, rng }
    }

    /// Completion time of a command ready at `ready`.
    #[inline]
    pub fn serve(&mut self, ready: Time) -> Time {
        let s = self.rng.exponential(self.mean_ns);
        self.pool.serve(ready, s)
    }

    /// Mean service time, ns.
    pub fn mean_ns(&self) -> f64 {
        self.mean_ns
    }
}

/// A directly attached SSD.
#[derive(Debug, Clone)]
pub struct Ssd {
    pool: ServerPool,
    p: SsdParams,
    ns_per_byte: f64,
}

impl Ssd {
    /// An idle SSD.
    pub fn new(p: &SsdParams) -> Self {
        let ns_per_byte = 1e9 * f64::from(p.channels) / p.bytes_per_s as f64;
        Ssd { pool: ServerPool::new(p.channels), p: p.clone(), ns_per_byte }
    }

    /// Service time of one command, ns.
    #[inline]
    pub fn service_ns(&self, op: Op, len: u32) -> Time {
        let fixed = if op == Op::Read { self.p.read_ns } else { self.p.write_ns };
        fixed + crate::sim::ns(f64::from(len) * self.ns_per_byte)
    }

    /// Completion time of a command ready at `ready`.
    #[inline]
    pub fn serve(&mut self, ready: Time, op: Op, len: u32) -> Time {
        let s = self.service_ns(op, len);
        self.pool.serve(ready, s)
    }

    /// On-board queue depth.
    pub fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
}
