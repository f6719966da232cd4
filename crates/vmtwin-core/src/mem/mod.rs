//! Memory: page-granular overcommitment of one host, as the 2002 and 2013 ESX papers describe it.
//!
//! Each VM has a pmap ([`pmap`]): per guest page a state (unmapped, regular, shared, compressed,
//! ballooned, swapped, deflated) and a content id ([`content`]: zero, OS image, application,
//! private, or hashed from a raw memory image's bytes). The host ([`MemHost`]) owns machine
//! memory per NUMA node, the page-sharing table ([`sharing`]), the balloon drivers, the
//! compression caches and the swap daemon, and runs the allocation policy ([`policy`]): targets
//! from shares, reservations and the idle memory tax over sampled active memory, and the
//! free-memory states that pick the techniques, under one of two presets ([`Preset`]).
//!
//! # Wiring
//! The subsystem owns its state, counters and events but not an event queue: calls that may
//! schedule take a [`MemScheduler`], and the run loop hands each [`MemEvent`] back to
//! [`MemHost::handle`] at its time. A vCPU's access ([`MemHost::read`], [`MemHost::write`])
//! returns an [`Access`]: a hit, an in-memory fault's stall, a swap-in wait until a time (the
//! CPU side's %SWPWT), or "blocked, retry at". Swap I/O goes through the narrow [`SwapDevice`]
//! trait; [`FixedLatencySwapStandIn`] answers until the storage subsystem is wired in. CPU work
//! done for a VM (sharing scans, compression) accumulates in its counters for the CPU side to
//! charge. Time is integer ns; every VM has its own random stream, and the scanner one more.
//!
//! Sources: research/memory.md ([S1] Waldspurger, OSDI 2002; [S2] VMware Technical Journal 2013).

pub mod app;
pub mod content;
pub mod guest;
pub mod charge;
mod host;
pub mod params;
pub mod pmap;
pub mod policy;
pub mod sharing;
pub mod spec;
pub mod swap;

pub use content::{ContentSpec, MemoryImage, PAGE_BYTES};
pub use host::{Access, MemEvent, MemHost, MemScheduler, SwapRequest, VmMemCounters, VmMemSpec, VmMemStats};
pub use params::{min_free_pages, MemParams, Preset};
pub use pmap::{PageState, Pmap};
pub use policy::{adjusted_ratio, idle_cost, next_state, targets, ActiveEstimate, MemClaim, MemState};
pub use spec::{MemorySpec, VmMemorySpec};
pub use swap::{FixedLatencySwapStandIn, SwapDevice};
