//! The optional per-request completion log of a VM disk (`log_requests` on a disk in the
//! scenario): one record per guest request when it completes, in completion order.
//!
//! What blktrace records inside a guest, and what Kraft et al.'s models are parameterised from
//! ([K] §3.2: issue and completion timestamps, direction, size): the time the guest issued the
//! request (before any wait for a virtual queue slot), the time the VMM accepted it (GAVG
//! starts), its completion, direction and bytes. A split request is one record (its pieces
//! complete together from the guest's view: when the last one does). Off by default: a disk
//! that does not log costs one branch per completed request.
//!
//! # Tunables
//! `log_requests` per VM disk (off).
//!
//! # Counters
//! None of its own: the records become the `io_log` table (docs/reference/counters.md).
//!
//! # Known gaps
//! - A row per request: records move into the `io_log` table at each sample, so a busy logged
//!   disk adds rows as fast as it completes requests (millions a minute on a flash LUN). It is
//!   meant for the short runs Kraft's models are parameterised from.

use super::Op;
use crate::sim::Time;

/// One completed guest request of a logged VM disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoRecord {
    /// the VM disk
    pub disk: u32,
    /// direction
    pub op: Op,
    /// bytes
    pub bytes: u32,
    /// when the guest issued it, ns
    pub submitted: Time,
    /// when the VMM accepted it (GAVG starts; later than `submitted` when it waited in the guest
    /// for a virtual queue slot), ns
    pub accepted: Time,
    /// when it completed, ns
    pub done: Time,
}
