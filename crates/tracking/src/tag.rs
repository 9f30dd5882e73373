//! Random 64-bit tags (docs/design.md, requirement 1).
//!
//! A non-empty set of unmatched tags XORs to zero only with probability 2^-64, which is what makes a
//! zero slot XOR mean "complete".

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A per-worker source of random tags (xoshiro256++ from `rand`'s `SmallRng`: a few ns a tag; the
/// tags need to be unpredictable to the data, not cryptographically secure).
#[derive(Debug)]
pub struct TagSource {
    rng: SmallRng,
}

impl TagSource {
    /// A tag source seeded from the operating system's entropy.
    pub fn from_entropy() -> Self {
        TagSource {
            rng: SmallRng::from_rng(&mut rand::rng()),
        }
    }

    /// A deterministic tag source (tests and simulations).
    pub fn seeded(seed: u64) -> Self {
        TagSource {
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The next tag; never 0, so that a registered tag always changes its slot's XOR.
    #[inline]
    pub fn next_tag(&mut self) -> u64 {
        loop {
            let t: u64 = self.rng.random();
            if t != 0 {
                return t;
            }
        }
    }
}
