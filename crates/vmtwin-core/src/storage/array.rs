//! A dual-controller ALUA flash array: controller affinity, per-controller read caches and
//! write mirroring.
//!
//! Each LUN is owned by one controller. Paths to the owner are *active optimized* (AO), paths to
//! the partner *active un-optimized* (AUO). A command passes two resources of the array:
//!
//! ```text
//! 1. data:    the front end of the controller it arrives at (`via`), FCFS at
//!             controller_bytes_per_s: bytes / controller_bytes_per_s          (per byte)
//! 2. command: one of the OWNER's engines, for
//!             controller_ns + backend_read_ns (a read missing via's cache)
//!                           + mirror_ns       (a write: copied to the partner's cache)  (per I/O)
//! ```
//!
//! and a command that arrived on the partner (AUO) is forwarded over the inter-controller link
//! to the owner first, `hop_ns` later, without holding anything meanwhile.
//!
//! Why the split: ALUA keeps a LUN's metadata, locks and ordering on its owning controller, so
//! every command is processed there whichever port it came in on (that is what the AUO "hop"
//! forwards, [P] §2: AUO paths have "higher service time"); the data, though, moves between the
//! host and the controller whose port it uses, and a write lands in both caches anyway (mirroring,
//! [P] §3.2: "issuing writes on either controller is symmetric"). So the hop costs per I/O and
//! moving writes to AUO paths relieves only the per-byte resource: small-block I/O, bound by the
//! owner's command processing, gains nothing from spreading, while large-block I/O, bound by the
//! owner's front end, gains up to the share of bytes moved (research/storage.md C3.2, where the
//! paper is ambiguous about the bottleneck). This is what makes PSP Adaptive's gain grow with the
//! block size ([P] Figs. 3/4).
//!
//! Each controller has its own read cache, direct mapped over `cache_chunk_bytes` chunks. A read
//! hits if every chunk it touches is resident in *that* controller's cache, and fills them on a
//! miss; a write fills both caches (it is mirrored). So reads keep an affinity to the controller
//! that served them before — reads moved to the partner miss until its cache warms — while
//! writes are symmetric between controllers: the asymmetry PSP Adaptive relies on ([P] §3.2:
//! "reads have affinity to a particular controller, while writes do not").
//!
//! # Tunables
//! [`super::ArraySpec`]: `engines_per_controller`, `controller_ns` (per-command, owner),
//! `controller_bytes_per_s` (per-byte, receiving controller), `backend_read_ns`, `mirror_ns`,
//! `hop_ns`, `cache_slots`, `cache_chunk_bytes` (chosen values; the paper gives none).
//!
//! # Counters
//! Cache hits and misses per controller ([`FlashArray::cache_stats`]); latency shows in DAVG/cmd
//! of the LUN and path.
//!
//! # Known gaps
//! - No write destaging to flash, no array-side QoS or queue-full (TASK SET FULL) answers.
//! - Engines and front ends serve in submission order (see `device.rs`), not strictly by arrival
//!   time at the array.
//! - A read on an AUO path is served from the receiving controller's cache (its data leaves
//!   from there); a real array may serve it from the owner's over the inter-controller link.
//! - The inter-controller link itself has no bandwidth limit (mirroring is a fixed `mirror_ns`).

use super::device::ServerPool;
use super::{ArraySpec, Op, SECTOR_BYTES};
use crate::sim::{ns, Time};

#[derive(Debug, Clone)]
struct Controller {
    engines: ServerPool,
    /// when the front end's data path falls free
    front_free: Time,
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
        let c = Controller { engines: ServerPool::new(spec.engines_per_controller), front_free: 0, cache: vec![0; spec.cache_slots as usize], hits: 0, misses: 0 };
        FlashArray {
            ns_per_byte: 1e9 / spec.controller_bytes_per_s as f64,
            sectors_per_chunk: (u64::from(spec.cache_chunk_bytes) / SECTOR_BYTES).max(1),
            spec: spec.clone(),
            ctrl: [c.clone(), c],
        }
    }

    /// Service time of a command without cache, queueing or ALUA effects, ns (the SFQ cost
    /// estimate): its command processing plus its bytes through a front end.
    pub fn expected_ns(&self, op: Op, len: u32) -> f64 {
        let base = self.spec.controller_ns as f64 + f64::from(len) * self.ns_per_byte;
        if op == Op::Write {
            base + self.spec.mirror_ns as f64
        } else {
            base
        }
    }

    /// Chunks `lba .. lba + len` touches: the first and the last chunk number.
    #[inline]
    fn chunks(&self, lba: u64, len: u32) -> (u64, u64) {
        let last = lba + (u64::from(len).div_ceil(SECTOR_BYTES)).max(1) - 1;
        (lba / self.sectors_per_chunk, last / self.sectors_per_chunk)
    }

    /// Look chunks `first ..= last` up in `c`'s cache, filling the missing ones; true when all hit.
    #[inline]
    fn lookup_fill(c: &mut Controller, (first, last): (u64, u64), lun: u32) -> bool {
        let slots = c.cache.len() as u128;
        let mut hit = true;
        // a plain counted loop: a `RangeInclusive` carries an exhaustion flag through it
        for ch in first..last + 1 {
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
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn serve(&mut self, ready: Time, lun: u32, owner: u8, via: u8, op: Op, lba: u64, len: u32) -> Time {
        let chunks = self.chunks(lba, len);
        let mut service = self.spec.controller_ns;
        match op {
            Op::Read => {
                let c = &mut self.ctrl[via as usize];
                if Self::lookup_fill(c, chunks, lun) {
                    c.hits += 1;
                } else {
                    c.misses += 1;
                    service += self.spec.backend_read_ns;
                }
            }
            Op::Write => {
                Self::lookup_fill(&mut self.ctrl[0], chunks, lun);
                Self::lookup_fill(&mut self.ctrl[1], chunks, lun);
                service += self.spec.mirror_ns;
            }
        }
        // per byte, at the receiving controller's front end
        let front = &mut self.ctrl[via as usize].front_free;
        *front = (*front).max(ready) + ns(f64::from(len) * self.ns_per_byte);
        // per I/O, on the owner (an AUO command is forwarded there first)
        let at_owner = if via != owner { *front + self.spec.hop_ns } else { *front };
        self.ctrl[owner as usize].engines.serve(at_owner, service)
    }

    /// Read-cache (hits, misses) of controller `c`.
    pub fn cache_stats(&self, c: u8) -> (u64, u64) {
        (self.ctrl[c as usize].hits, self.ctrl[c as usize].misses)
    }
}
