//! A dual-controller ALUA flash array: controller affinity, per-controller read caches and
//! write mirroring.
//!
//! Each LUN is owned by one controller. Paths to the owner are *active optimized* (AO), paths to
//! the partner *active un-optimized* (AUO). A command is processed by the controller it arrives
//! at: it takes one of that controller's engines for
//!
//! ```text
//! controller_ns + bytes / (controller_bytes_per_s / engines)
//!   + backend_read_ns   (a read that misses this controller's cache)
//!   + mirror_ns         (a write: copied into the partner's cache before the ack)
//! ```
//!
//! and a command that arrived on the partner pays `hop_ns` more on top (forwarded over the
//! inter-controller link to the owner's metadata), without holding an engine meanwhile.
//!
//! Each controller has its own read cache, direct mapped over `cache_chunk_bytes` chunks. A read
//! hits if every chunk it touches is resident in *that* controller's cache, and fills them on a
//! miss; a write fills both caches (it is mirrored). So reads keep an affinity to the controller
//! that served them before — reads moved to the partner miss until its cache warms — while
//! writes are symmetric between controllers: the asymmetry PSP Adaptive relies on ([P] §3.2:
//! "reads have affinity to a particular controller, while writes do not").
//!
//! # Tunables
//! [`super::ArraySpec`]: `engines_per_controller`, `controller_ns`, `controller_bytes_per_s`,
//! `backend_read_ns`, `mirror_ns`, `hop_ns`, `cache_slots`, `cache_chunk_bytes` (chosen values;
//! the paper gives none).
//!
//! # Counters
//! Cache hits and misses per controller ([`FlashArray::cache_stats`]); latency shows in DAVG/cmd
//! of the LUN and path.
//!
//! # Known gaps
//! - No write destaging to flash, no array-side QoS or queue-full (TASK SET FULL) answers.
//! - Engines serve in submission order (see `device.rs`), not strictly by arrival time at the array.

use super::device::ServerPool;
use super::{ArraySpec, Op, SECTOR_BYTES};
use crate::sim::{ns, Time};

#[derive(Debug, Clone)]
struct Controller {
    engines: ServerPool,
    /// tag (hash of LUN and chunk, never 0) per slot, 0 = empty
    cache: Vec<u32>,
    hits: u64,
    misses: u64,
}

/// One array, shared by the LUNs it exports.
#[derive(Debug, Clone)]
pub struct FlashArray {
    spec: ArraySpec,
    ns_per_byte: f64,
    sectors_per_chunk: u64,
    ctrl: [Controller; 2],
}

impl FlashArray {
    /// An array with cold caches.
    pub fn new(spec: &ArraySpec) -> Self {
        let c = Controller { engines: ServerPool::new(spec.engines_per_controller), cache: vec![0; spec.cache_slots as usize], hits: 0, misses: 0 };
        FlashArray {
            ns_per_byte: 1e9 * f64::from(spec.engines_per_controller) / spec.controller_bytes_per_s as f64,
            sectors_per_chunk: (u64::from(spec.cache_chunk_bytes) / SECTOR_BYTES).max(1),
            spec: spec.clone(),
            ctrl: [c.clone(), c],
        }
    }

    /// Service time of a command without cache or ALUA effects, ns (the SFQ cost estimate).
    pub fn expected_ns(&self, op: Op, len: u32) -> f64 {
        let base = self.spec.controller_ns as f64 + f64::from(len) * self.ns_per_byte;
        if op == Op::Write {
            base + self.spec.mirror_ns as f64
        } else {
            base
        }
    }

    /// Chunks `lba .. lba + len` touches, as a range of chunk numbers.
    fn chunks(&self, lba: u64, len: u32) -> std::ops::RangeInclusive<u64> {
        let last = lba + (u64::from(len).div_ceil(SECTOR_BYTES)).max(1) - 1;
        (lba / self.sectors_per_chunk)..=(last / self.sectors_per_chunk)
    }

    fn lookup_fill(c: &mut Controller, chunks: std::ops::RangeInclusive<u64>, lun: u32) -> bool {
        let slots = c.cache.len() as u128;
        let mut hit = true;
        for ch in chunks {
            // LUNs share the cache: the LUN is mixed into the hash. The slot comes from the high
            // bits (multiply-shift instead of a division), the 32-bit tag from the low ones; two
            // chunks share slot and tag with probability ~2^-32, a negligible false hit.
            let h = (ch ^ (u64::from(lun) << 40)).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let slot = ((u128::from(h) * slots) >> 64) as usize;
            let tag = (h as u32) | 1;
            if c.cache[slot] != tag {
                hit = false;
                c.cache[slot] = tag;
            }
        }
        hit
    }

    /// Serve a command of LUN `lun` (owned by `owner`) arriving at controller `via` at `ready`;
    /// returns its completion time at the array.
    pub fn serve(&mut self, ready: Time, lun: u32, owner: u8, via: u8, op: Op, lba: u64, len: u32) -> Time {
        let chunks = self.chunks(lba, len);
        let mut service = self.spec.controller_ns as f64 + f64::from(len) * self.ns_per_byte;
        match op {
            Op::Read => {
                let c = &mut self.ctrl[via as usize];
                if Self::lookup_fill(c, chunks, lun) {
                    c.hits += 1;
                } else {
                    c.misses += 1;
                    service += self.spec.backend_read_ns as f64;
                }
            }
            Op::Write => {
                Self::lookup_fill(&mut self.ctrl[0], chunks.clone(), lun);
                Self::lookup_fill(&mut self.ctrl[1], chunks, lun);
                service += self.spec.mirror_ns as f64;
            }
        }
        let done = self.ctrl[via as usize].engines.serve(ready, ns(service));
        if via != owner {
            done + self.spec.hop_ns
        } else {
            done
        }
    }

    /// Read-cache (hits, misses) of controller `c`.
    pub fn cache_stats(&self, c: u8) -> (u64, u64) {
        (self.ctrl[c as usize].hits, self.ctrl[c as usize].misses)
    }
}
