//! A sink collecting every element into a shared vector: for tests and small jobs.

use crate::operators::sink::Sink;
use crate::operators::OperatorError;
use std::sync::{Arc, Mutex};
use xorflow_core::Element;

/// A sink that collects every element into a shared vector (tests and small jobs).
pub struct VecSink<T> {
    shared: Arc<Mutex<Vec<Element<T>>>>,
}

/// Handle to the vector [`VecSink`] instances share.
pub struct SharedVec<T> {
    shared: Arc<Mutex<Vec<Element<T>>>>,
}

impl<T> VecSink<T> {
    /// A new shared vector to create sinks from.
    #[allow(clippy::new_ret_no_self)]
    pub fn shared() -> SharedVec<T> {
        SharedVec {
            shared: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

impl<T: Send + 'static> SharedVec<T> {
    /// A sink factory for [`Stream::sink`].
    pub fn factory(&self) -> impl FnMut(usize) -> VecSink<T> + 'static {
        let shared = self.shared.clone();
        move |_| VecSink {
            shared: shared.clone(),
        }
    }

    /// Takes everything collected so far.
    pub fn take(&self) -> Vec<Element<T>> {
        std::mem::take(&mut *self.shared.lock().expect("sink mutex poisoned"))
    }
}

impl<T: Send> Sink<T> for VecSink<T> {
    fn write(&mut self, batch: Vec<Element<T>>) -> Result<(), OperatorError> {
        self.shared
            .lock()
            .map_err(|_| "sink mutex poisoned".to_string())?
            .extend(batch);
        Ok(())
    }
}
