//! Random streams, one per entity.
//!
//! Each entity (a vCPU's workload, later a device or a page scanner) draws from its own PCG
//! stream whose seed is derived from the scenario seed and the entity's *name*, not its index:
//! adding a VM to a scenario does not change what the other VMs draw.

use rand_core::{RngCore, SeedableRng};
use rand_distr::{Distribution, Exp1};
use rand_pcg::Pcg64Mcg;

/// SplitMix64 finaliser: spreads nearby inputs over the whole 64-bit range.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over the bytes of an entity name.
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3))
}

/// Seed of the stream of entity `name`, sub-entity `index`, under scenario seed `seed`.
///
/// # Examples
/// ```
/// use vmtwin_core::sim::stream_seed;
/// assert_eq!(stream_seed(1, "vm0", 0), stream_seed(1, "vm0", 0));
/// assert_ne!(stream_seed(1, "vm0", 0), stream_seed(1, "vm0", 1));
/// assert_ne!(stream_seed(1, "vm0", 0), stream_seed(2, "vm0", 0));
/// ```
pub fn stream_seed(seed: u64, name: &str, index: u32) -> u64 {
    mix64(mix64(seed ^ fnv1a(name)) ^ u64::from(index))
}

/// One entity's random stream.
#[derive(Debug, Clone)]
pub struct Rng(Pcg64Mcg);

impl Rng {
    /// A stream from a derived seed (see [`stream_seed`]).
    pub fn new(stream_seed: u64) -> Self {
        Rng(Pcg64Mcg::seed_from_u64(stream_seed))
    }

    /// Uniform draw in [0, 1) with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponential draw with the given mean, rounded to an integer (nanoseconds). Uses the
    /// ziggurat sampler of `rand_distr` (a table lookup in all but ~1% of draws).
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> u64 {
        let e: f64 = Exp1.sample(&mut self.0);
        super::ns(e * mean)
    }
}
