//! What guest pages hold: a content model of ids, and raw memory images hashed from real bytes.
//!
//! Page sharing finds identical pages by content [S1 §4.2], so the simulator must know what
//! each page holds. A **content id** (63 bits) names a page's contents: two pages are identical
//! exactly when their ids are equal. Ids come from a model of where guest memory comes from
//! (research/memory.md C.27, DESIGN "Memory"):
//!
//! - **zero pages**: id 0, the all-zero page [S2 fn 4];
//! - **guest-OS image pages**: page `i` of the image of OS `os` has the same id in every VM
//!   running that OS and version (kernel text, libraries, read-only data);
//! - **application pages**: page `i` of application `app`, common to VMs running it;
//! - **private data**: an id drawn from the VM's own random stream, unique with overwhelming
//!   probability (2^-60 per pair).
//!
//! - **copies of OS-image pages within one VM** (`os_copy_fraction`): [S1 §4.3] reclaims
//!   nearly 5 MB from a single VM, only about 55% of it from zero pages, so one guest holds
//!   duplicate non-zero pages (a file's page in the page cache and the same data read into a
//!   process, say). They are modelled as second copies of OS-image pages: content every VM of
//!   that OS holds too.
//!
//! A VM's layout ([`ContentSpec`]) gives the fraction of its pages in each class: the OS image
//! occupies the first pages, the application the next, then the copies of the OS image's first
//! pages, and zero pages are spread at random over the rest. The top three bits of an id record its class, so counters can tell zero,
//! OS, application and private pages apart.
//!
//! **Memory images** ([`MemoryImage`]) are flat files of guest-physical memory, 4 KiB per page,
//! as a suspended VM's `.vmem` is. [`page_hash`] hashes their real bytes; sharing over images
//! confirms every hash match by comparing the bytes ([`crate::mem::sharing::scan_images`]).
//!
//! **Compressibility** of a content is a property of the content: a deterministic function of
//! its id places it in the 1/4-page class, the 1/2-page class or neither, with the fractions
//! of [`crate::mem::MemParams`] (research/memory.md C.16: "page compressibility is a workload
//! attribute"). Zero pages compress to a quarter.
//!
//! # Tunables
//! `ContentSpec` fractions per VM; `compress_quarter_fraction`, `compress_half_fraction` in
//! `MemParams`.
//!
//! # Counters
//! None here; the host counts zero pages (ZERO) from ids.
//!
//! # Known gaps
//! - The page hash is written here (a 4-lane multiply-rotate hash of 64-bit words, finished with
//!   SplitMix64), not Jenkins' hash [S1 ref 14]: the engine takes no hashing crate. A weak hash
//!   would only cost false matches, which the byte comparison catches.
//! - Compressibility of image pages is not measured from their bytes: only model ids have it.

use crate::sim::Rng;
use crate::{invalid, VmtwinResult};
use std::path::Path;

/// Bytes per guest and machine page.
pub const PAGE_BYTES: usize = 4096;
/// The zero page's content id.
pub const ZERO_CONTENT: u64 = 0;

const CLASS_SHIFT: u32 = 60;
const LOW_MASK: u64 = (1 << CLASS_SHIFT) - 1;

/// Class of a content id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentClass {
    /// the all-zero page
    Zero,
    /// a guest-OS image page
    OsImage,
    /// an application page
    Application,
    /// private data
    Private,
    /// hashed from a memory image's bytes
    Image,
}

/// SplitMix64 finaliser (a bijection of u64).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn make(class: u64, low: u64) -> u64 {
    let id = (class << CLASS_SHIFT) | (low & LOW_MASK);
    if id == ZERO_CONTENT {
        1 << CLASS_SHIFT
    } else {
        id
    }
}

/// Content id of page `index` of OS image `os`.
pub fn os_page(os: u32, index: u64) -> u64 {
    make(1, mix64(mix64(u64::from(os) ^ 0x05_0000_0000) ^ index))
}

/// Content id of page `index` of application `app`.
pub fn app_page(app: u32, index: u64) -> u64 {
    make(2, mix64(mix64(u64::from(app) ^ 0x0A_0000_0000) ^ index))
}

/// A fresh private content id from a VM's stream.
pub fn private_page(rng: &mut Rng) -> u64 {
    make(3, (rng.uniform() * (1u64 << 53) as f64) as u64 ^ (rng.uniform().to_bits() << 11))
}

/// Content id of an image page whose bytes hash to `hash`.
pub fn image_page(hash: u64, zero: bool) -> u64 {
    if zero {
        ZERO_CONTENT
    } else {
        make(4, hash)
    }
}

/// Class of content id `cid`.
pub fn class(cid: u64) -> ContentClass {
    match cid >> CLASS_SHIFT {
        _ if cid == ZERO_CONTENT => ContentClass::Zero,
        1 => ContentClass::OsImage,
        2 => ContentClass::Application,
        3 => ContentClass::Private,
        _ => ContentClass::Image,
    }
}

/// Quarter pages a content compresses into: 1, 2, or 0 for incompressible.
pub fn compressed_quarters(cid: u64, quarter_fraction: f64, half_fraction: f64) -> u32 {
    if cid == ZERO_CONTENT {
        return 1;
    }
    if class(cid) == ContentClass::Image {
        return 0;
    }
    let u = (mix64(cid ^ 0xC0) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    if u < quarter_fraction {
        1
    } else if u < quarter_fraction + half_fraction {
        2
    } else {
        0
    }
}

/// Where a VM's pages come from: fractions of its pages in each class.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentSpec {
    /// guest OS and version id: VMs with the same id share the OS image pages
    pub os: u32,
    /// fraction of pages holding the OS image, dimensionless in [0, 1]
    pub os_fraction: f64,
    /// application id: VMs with the same id share application pages
    pub app: u32,
    /// fraction of pages holding application pages, dimensionless in [0, 1]
    pub app_fraction: f64,
    /// fraction of the remaining pages that are zero, dimensionless in [0, 1]
    pub zero_fraction: f64,
    /// fraction of pages holding a second copy of an OS-image page (page `i` of the copies holds
    /// OS page `i`), dimensionless in [0, os_fraction]; default 0
    pub os_copy_fraction: f64,
}

impl Default for ContentSpec {
    fn default() -> Self {
        ContentSpec { os: 0, os_fraction: 0.0, app: 0, app_fraction: 0.0, zero_fraction: 0.0, os_copy_fraction: 0.0 }
    }
}

impl ContentSpec {
    /// Reject fractions outside [0, 1] or OS + application above 1, naming the field.
    pub fn validate(&self, path: &str) -> VmtwinResult<()> {
        for (name, v) in [
            ("os_fraction", self.os_fraction),
            ("app_fraction", self.app_fraction),
            ("zero_fraction", self.zero_fraction),
            ("os_copy_fraction", self.os_copy_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                invalid!(format!("{path}.{name}"), v, "a fraction in [0, 1]");
            }
        }
        if self.os_fraction + self.app_fraction > 1.0 {
            invalid!(format!("{path}.app_fraction"), self.app_fraction, format!("at most 1 - os_fraction = {}", 1.0 - self.os_fraction));
        }
        if self.os_copy_fraction > self.os_fraction {
            invalid!(format!("{path}.os_copy_fraction"), self.os_copy_fraction, format!("at most os_fraction = {} (copies of OS-image pages)", self.os_fraction));
        }
        if self.os_fraction + self.app_fraction + self.os_copy_fraction > 1.0 {
            invalid!(
                format!("{path}.os_copy_fraction"),
                self.os_copy_fraction,
                format!("at most 1 - os_fraction - app_fraction = {}", 1.0 - self.os_fraction - self.app_fraction)
            );
        }
        Ok(())
    }

    /// The first-touch content id of each of `pages` pages, drawing private data from `rng`.
    pub fn layout(&self, pages: u32, rng: &mut Rng) -> Vec<u64> {
        let os_pages = (self.os_fraction * f64::from(pages)) as u64;
        let app_pages = ((self.app_fraction * f64::from(pages)) as u64).min(u64::from(pages) - os_pages);
        let copies = ((self.os_copy_fraction * f64::from(pages)) as u64).min(os_pages).min(u64::from(pages) - os_pages - app_pages);
        (0..u64::from(pages))
            .map(|i| {
                if i < os_pages {
                    os_page(self.os, i)
                } else if i < os_pages + app_pages {
                    app_page(self.app, i - os_pages)
                } else if i < os_pages + app_pages + copies {
                    os_page(self.os, i - os_pages - app_pages)
                } else if rng.uniform() < self.zero_fraction {
                    ZERO_CONTENT
                } else {
                    private_page(rng)
                }
            })
            .collect()
    }
}

/// 64-bit hash of one page's bytes (see Known gaps). Never 0, so 0 can mark empty table slots.
pub fn page_hash(page: &[u8]) -> u64 {
    debug_assert_eq!(page.len(), PAGE_BYTES);
    const P: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93];
    let mut lane = [0x243F_6A88_85A3_08D3u64, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0, 0x082E_FA98_EC4E_6C89];
    for chunk in page.chunks_exact(32) {
        for k in 0..4 {
            let w = u64::from_le_bytes(chunk[k * 8..k * 8 + 8].try_into().unwrap());
            lane[k] = (lane[k] ^ w).wrapping_mul(P[k]).rotate_left(31);
        }
    }
    let h = mix64(lane[0] ^ mix64(lane[1] ^ mix64(lane[2] ^ mix64(lane[3]))));
    h | (h == 0) as u64
}

/// A raw memory image: guest-physical memory as a flat file of 4 KiB pages.
#[derive(Debug, Clone)]
pub struct MemoryImage {
    bytes: Vec<u8>,
}

impl MemoryImage {
    /// An image from bytes; the length must be a positive multiple of 4096.
    pub fn from_bytes(bytes: Vec<u8>, what: &str) -> VmtwinResult<Self> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(PAGE_BYTES) {
            invalid!(what, format!("{} bytes", bytes.len()), "a memory image of whole 4096-byte pages (truncated or empty file?)");
        }
        Ok(MemoryImage { bytes })
    }

    /// Read an image file, refusing a missing, empty or truncated one with its path.
    pub fn read(path: &Path) -> VmtwinResult<Self> {
        let shown = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => Self::from_bytes(bytes, &shown),
            Err(e) => invalid!(shown, format!("unreadable ({e})"), "an existing, readable memory image file"),
        }
    }

    /// Number of pages.
    pub fn pages(&self) -> u32 {
        (self.bytes.len() / PAGE_BYTES) as u32
    }

    /// The bytes of page `ppn`.
    #[inline]
    pub fn page(&self, ppn: u32) -> &[u8] {
        let a = ppn as usize * PAGE_BYTES;
        &self.bytes[a..a + PAGE_BYTES]
    }

    /// Whether page `ppn` is all zero bytes.
    pub fn is_zero(&self, ppn: u32) -> bool {
        self.page(ppn).iter().all(|&b| b == 0)
    }

    /// Content ids of every page, from the hash of its bytes (zero pages get the zero id).
    pub fn content_ids(&self) -> Vec<u64> {
        (0..self.pages()).map(|p| image_page(page_hash(self.page(p)), self.is_zero(p))).collect()
    }
}
