//! [`Generator`]: the events of a configuration, or of one slice of it, in event-number order.

use crate::config::NexmarkConfig;
use crate::generate::event;
use crate::model::Event;

/// An iterator over `(event number, event)` in increasing event-number order: every event of
/// the configuration ([`NexmarkConfig::events`]; when 0, event numbers up to 2^63 - 1, which is
/// unbounded in practice), or those of one slice.
///
/// Slice `instance` of `instances` holds event numbers `instance, instance + instances, ...`;
/// the slices `0..instances` together hold every event exactly once, each as
/// [`event`](crate::event) makes it, so parallel source instances generate the stream the
/// sequential generator does.
#[derive(Clone, Debug)]
pub struct Generator {
    config: NexmarkConfig,
    instance: u64,
    instances: u64,
    /// The next event number, `None` once past the end.
    next: Option<u64>,
    /// One past the last event number.
    end: u64,
}

impl Generator {
    /// Every event of `config`, from event number 0.
    ///
    /// # Panics
    /// `config` is invalid ([`NexmarkConfig::validate`]; [`NexmarkConfig::from_options`]
    /// returns only valid ones).
    pub fn new(config: NexmarkConfig) -> Self {
        if let Err(e) = config.validate() {
            panic!("{e}");
        }
        // Unbounded: as far as event numbers go (below 2^63).
        let end = if config.events == 0 {
            i64::MAX as u64
        } else {
            config.events.min(i64::MAX as u64)
        };
        Generator {
            config,
            instance: 0,
            instances: 1,
            next: Some(0),
            end,
        }
    }

    /// Only the events of slice `instance` of `instances` (event numbers `n` with
    /// `n % instances == instance`), from the start of the stream.
    ///
    /// # Panics
    /// `instances` is 0 or `instance >= instances`.
    pub fn with_slice(mut self, instance: u64, instances: u64) -> Self {
        assert!(
            instances > 0 && instance < instances,
            "slice {instance} of {instances}: the instance must be below the number of instances"
        );
        self.instance = instance;
        self.instances = instances;
        self.next = Some(instance);
        self
    }

    /// Resumes at event number `n`: the next event is the first of the slice whose number is at
    /// least `n` (a source restarting from the next event number it had checkpointed).
    pub fn from_event(mut self, n: u64) -> Self {
        self.next = if n <= self.instance {
            Some(self.instance)
        } else {
            (n - self.instance)
                .div_ceil(self.instances)
                .checked_mul(self.instances)
                .and_then(|k| k.checked_add(self.instance))
        };
        self
    }

    /// The number of the next event it will yield, `None` when it has yielded them all.
    pub fn next_event_number(&self) -> Option<u64> {
        self.next.filter(|&n| n < self.end)
    }

    /// The configuration it generates.
    pub fn config(&self) -> &NexmarkConfig {
        &self.config
    }
}

impl Iterator for Generator {
    type Item = (u64, Event);

    fn next(&mut self) -> Option<(u64, Event)> {
        let n = self.next_event_number()?;
        self.next = n.checked_add(self.instances);
        Some((n, event(&self.config, n)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.next_event_number() {
            None => (0, Some(0)),
            Some(n) => {
                let left = (self.end - n - 1) / self.instances + 1;
                match usize::try_from(left) {
                    Ok(l) => (l, Some(l)),
                    Err(_) => (usize::MAX, None),
                }
            }
        }
    }
}
