//! A fixed-size block of u64 words, moved between a channel's thread and the writer thread.
//!
//! Raw rather than a `Vec` so that the channel's thread can write records through a plain
//! pointer (no bounds check, no `&mut` over the whole block) while `flush_all` reads the
//! already-published prefix from another thread (see `sink.rs` for that protocol).

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// An owned, heap-allocated, zero-initialised array of `words` u64s.
pub(crate) struct Block {
    ptr: NonNull<u64>,
    words: usize,
}

// SAFETY: a Block owns its allocation exclusively, like a Box<[u64]>; moving it between threads
// moves that ownership.
unsafe impl Send for Block {}

impl Block {
    /// A zeroed block of `words` (>= 1) words. Aborts on allocation failure, as `Vec` does.
    pub(crate) fn new(words: usize) -> Block {
        let layout = Layout::array::<u64>(words.max(1)).expect("block size overflows");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) } as *mut u64;
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        Block {
            ptr,
            words: words.max(1),
        }
    }

    /// The base pointer, for the channel's writes and `flush_all`'s reads.
    pub(crate) fn as_ptr(&self) -> *mut u64 {
        self.ptr.as_ptr()
    }

    /// The first `words` words. The caller guarantees no thread writes them meanwhile (the
    /// writer thread owns a shipped block; `flush_all` reads only the published prefix).
    pub(crate) fn prefix(&self, words: usize) -> &[u64] {
        // SAFETY: within the allocation (clamped), initialised (zeroed at allocation), and not
        // written concurrently by the caller's guarantee.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), words.min(self.words)) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let layout = Layout::array::<u64>(self.words).expect("checked at allocation");
        // SAFETY: allocated in `new` with this very layout, freed once.
        unsafe { alloc::dealloc(self.ptr.as_ptr() as *mut u8, layout) }
    }
}
