//! What the state crate's integration tests share.

use xorflow_state::window::Fold;

/// Sums `u32` elements into a `u64`: the fold-left aggregate of the window tests.
pub struct Sum;

impl Fold<u32> for Sum {
    type Acc = u64;
    fn init(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, el: &u32) {
        *acc += u64::from(*el);
    }
}
