//! Property test of an open buffer's range tag ([`RangeTag`], `src/range_tag.rs`): a few output
//! buffers into one component take elements in random slots, commit (register their tag over
//! the slots seen so far) at random moments, are sealed and sent, and their batches are received
//! (the receiver XORs the batch's tag over its range) in random order. The tracker's view is the
//! XOR of every update, applied one at a time: the acks of the two halves of a re-registration
//! may travel and be applied apart.
//!
//! The invariant (docs/design.md, "trAcker requirements", requirement 1): after every single
//! update, every slot holding a committed element that has not been received is non-zero (its
//! substream is not complete); every committed element lies inside its buffer's registered range;
//! when everything is received, every slot is zero. A registration that cancels the old range
//! before registering the new one breaks the first rule, and the test shows it does.

use proptest::prelude::*;
use std::collections::BTreeMap;
use xorflow_tracking::range_tag::RangeTag;
use xorflow_tracking::{Slot, TagSource};

const SLOTS: u64 = 24;
const BUFFERS: usize = 3;

#[derive(Clone, Debug)]
enum Step {
    /// Buffer `b` takes an element in slot `s`.
    Push(usize, Slot),
    /// Buffer `b` commits: its tag covers the slots of its elements.
    Commit(usize),
    /// Buffer `b` is committed, sealed and sent.
    Seal(usize),
    /// The batch in flight number `i` (modulo their count) is received.
    Receive(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..BUFFERS, 0..SLOTS).prop_map(|(b, s)| Step::Push(b, s)),
        3 => (0..BUFFERS).prop_map(Step::Commit),
        1 => (0..BUFFERS).prop_map(Step::Seal),
        2 => any::<usize>().prop_map(Step::Receive),
    ]
}

/// How a buffer (re-)registers its range: the real [`RangeTag::register`], or a broken order.
type Register = fn(&mut RangeTag, (Slot, Slot), &mut TagSource, &mut dyn FnMut(Slot, Slot, u64));

fn real(
    r: &mut RangeTag,
    range: (Slot, Slot),
    tags: &mut TagSource,
    xor: &mut dyn FnMut(Slot, Slot, u64),
) {
    r.register(range, tags, xor);
}

/// Cancels the old registration first, then registers the new range: between the two halves
/// the buffer's slots can read zero.
fn cancel_first(
    r: &mut RangeTag,
    range: (Slot, Slot),
    tags: &mut TagSource,
    xor: &mut dyn FnMut(Slot, Slot, u64),
) {
    if let Some((lo, hi)) = r.registered() {
        if (lo, hi) == range {
            return;
        }
        xor(lo, hi, r.tag());
    }
    *r = RangeTag::new();
    r.register(range, tags, xor);
}

/// One open buffer: its elements (by slot: how many, how many committed) and its registration.
#[derive(Default)]
struct Buffer {
    elements: BTreeMap<Slot, (u32, u32)>,
    tag: RangeTag,
}

/// A sealed batch in flight: its tag, range and the slots of its elements.
struct InFlight {
    tag: u64,
    range: (Slot, Slot),
    slots: Vec<Slot>,
}

struct Sim {
    table: [u64; SLOTS as usize],
    buffers: Vec<Buffer>,
    in_flight: Vec<InFlight>,
    tags: TagSource,
    register: Register,
}

impl Sim {
    fn new(seed: u64, register: Register) -> Self {
        Sim {
            table: [0; SLOTS as usize],
            buffers: (0..BUFFERS).map(|_| Buffer::default()).collect(),
            in_flight: Vec::new(),
            tags: TagSource::seeded(seed),
            register,
        }
    }

    /// Slots with a committed element not yet received (open buffers and batches in flight).
    fn pending(&self) -> Vec<Slot> {
        let open = self
            .buffers
            .iter()
            .flat_map(|b| b.elements.iter().filter(|(_, c)| c.1 > 0).map(|(s, _)| *s));
        let sent = self.in_flight.iter().flat_map(|f| f.slots.iter().copied());
        open.chain(sent).collect()
    }

    /// The invariant after one update of the tracker's table.
    fn check(&self) -> Result<(), String> {
        for s in self.pending() {
            if self.table[s as usize] == 0 {
                return Err(format!("slot {s} reads complete with an element pending"));
            }
        }
        Ok(())
    }

    /// Buffer `b` registers its range, the tracker applying each half on its own.
    fn commit(&mut self, b: usize) -> Result<(), String> {
        let buf = &mut self.buffers[b];
        let (Some(lo), Some(hi)) = (buf.elements.keys().next(), buf.elements.keys().last()) else {
            return Ok(());
        };
        let range = (*lo, *hi);
        let mut updates = Vec::new();
        (self.register)(&mut buf.tag, range, &mut self.tags, &mut |lo, hi, x| {
            updates.push((lo, hi, x))
        });
        for c in buf.elements.values_mut() {
            c.1 = c.0;
        }
        for (lo, hi, x) in updates {
            for s in lo..=hi {
                self.table[s as usize] ^= x;
            }
            self.check()?;
        }
        let reg = self.buffers[b].tag.registered().expect("registered");
        if reg != range {
            return Err(format!("registered {reg:?}, elements span {range:?}"));
        }
        Ok(())
    }

    fn run(&mut self, steps: &[Step]) -> Result<(), String> {
        for st in steps {
            match *st {
                Step::Push(b, s) => self.buffers[b].elements.entry(s).or_default().0 += 1,
                Step::Commit(b) => self.commit(b)?,
                Step::Seal(b) => self.seal(b)?,
                Step::Receive(i) if !self.in_flight.is_empty() => {
                    let f = self.in_flight.remove(i % self.in_flight.len());
                    for s in f.range.0..=f.range.1 {
                        self.table[s as usize] ^= f.tag;
                    }
                    self.check()?;
                }
                Step::Receive(_) => {}
            }
        }
        for b in 0..BUFFERS {
            self.seal(b)?;
        }
        while let Some(f) = self.in_flight.pop() {
            for s in f.range.0..=f.range.1 {
                self.table[s as usize] ^= f.tag;
            }
            self.check()?;
        }
        match self.table.iter().position(|&x| x != 0) {
            Some(s) => Err(format!("slot {s} is not complete with nothing pending")),
            None => Ok(()),
        }
    }

    fn seal(&mut self, b: usize) -> Result<(), String> {
        self.commit(b)?;
        let buf = &mut self.buffers[b];
        if let Some(range) = buf.tag.registered() {
            let slots = buf.elements.keys().copied().collect();
            self.in_flight.push(InFlight {
                tag: buf.tag.tag(),
                range,
                slots,
            });
        }
        buf.tag.sealed();
        buf.elements.clear();
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn committed_elements_keep_their_slots_open_until_received(
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 1..120),
    ) {
        let r = Sim::new(seed, real).run(&steps);
        prop_assert!(r.is_ok(), "{r:?}");
    }
}

/// The oracle is not vacuous: a buffer whose range grows after a commit, re-registered by
/// cancelling first, leaves its slot reading complete between the two halves.
#[test]
fn cancelling_before_registering_is_caught() {
    let steps = [
        Step::Push(0, 3),
        Step::Commit(0),
        Step::Push(0, 5),
        Step::Commit(0),
    ];
    assert!(Sim::new(1, real).run(&steps).is_ok());
    let r = Sim::new(1, cancel_first).run(&steps);
    assert!(
        r.as_ref()
            .is_err_and(|e| e.contains("slot 3 reads complete")),
        "{r:?}"
    );
}
