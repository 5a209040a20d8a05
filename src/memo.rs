//! A small fixed-size memo of a pure function of short text: the last input and result in each
//! of a few thousand slots, the slot chosen by the input's hash.
//!
//! A cache hit parses its URI-R with `url` twice (to check and normalise it, then for its cache
//! key); the same popular URI-Rs come again and again, and the two parses were ~4% of a hit's
//! CPU (BENCHMARKS.md, "Small cache hits against nginx"). The memo is bounded whatever clients send: a fixed number of
//! slots, inputs over [`MAX_INPUT`] bytes not kept, a colliding input simply taking the slot.
//! Only successes are kept, so a refused input is refused afresh each time. A slot another
//! thread is using is passed by, never waited for; and each thread asks slots of its own (the
//! slots are striped by thread, `crate::stripe`), so two connection threads asking for the same
//! popular URI-R neither take turns at one slot's lock nor count one result up and down (its
//! cache lines moved between cores on every request).

use std::hash::Hasher;
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Longer inputs are computed every time: the memo's memory stays under slots × 2 × this.
pub const MAX_INPUT: usize = 256;

/// Slots of a memo by URI-R (the parsed URI-Rs, the cache keys): the popular URI-Rs of a busy
/// aggregator, in at most ~2 MiB each.
pub const URI_R_SLOTS: usize = 4096;

/// The last input kept in a slot and its result.
type Kept<V> = Option<(Box<str>, V)>;
type Slot<V> = Mutex<Kept<V>>;

pub struct Memo<V> {
    /// By stripe, then by the input's hash.
    stripes: Box<[Box<[Slot<V>]>]>,
}

/// Stripes of a memo: a server's connection threads, one per core, each have one of their own
/// up to this many.
const STRIPES: usize = 4;

/// The slot's content, unless another thread holds it: then the caller computes without the
/// memo rather than wait. Every connection thread asks the same slot for a popular URI-R, and
/// waiting on a holder the scheduler had preempted stalled all of a thread's connections for a
/// time slice (BENCHMARKS.md, "Small cache hits against nginx"). A poisoned slot held a whole pair or
/// none: a panic cannot leave half of one.
fn try_hold<V>(slot: &Slot<V>) -> Option<MutexGuard<'_, Kept<V>>> {
    match slot.try_lock() {
        Ok(held) => Some(held),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl<V: Clone> Memo<V> {
    /// A memo of about `slots` slots in all, shared out between the stripes (each a power of
    /// two, at least one).
    pub fn new(slots: usize) -> Memo<V> {
        let n = (slots / STRIPES).max(1).next_power_of_two();
        let stripe = || (0..n).map(|_| Mutex::new(None)).collect();
        Memo {
            stripes: (0..STRIPES).map(|_| stripe()).collect(),
        }
    }

    /// `f(input)`, from the memo when this input's result is there. `f` must be pure: the same
    /// input always gives the same result.
    pub fn get_or_try<E>(&self, input: &str, f: impl FnOnce(&str) -> Result<V, E>) -> Result<V, E> {
        if input.len() > MAX_INPUT {
            return f(input);
        }
        let slot = self.slot(input);
        if let Some(held) = try_hold(slot) {
            if let Some((kept, value)) = held.as_ref() {
                if **kept == *input {
                    return Ok(value.clone());
                }
            }
        }
        let value = f(input)?;
        if let Some(mut held) = try_hold(slot) {
            *held = Some((input.into(), value.clone()));
        }
        Ok(value)
    }

    /// The calling thread's slot for `input`.
    fn slot(&self, input: &str) -> &Slot<V> {
        let slots = &self.stripes[crate::stripe::of_this_thread(self.stripes.len())];
        let mut h = rustc_hash::FxHasher::default();
        h.write(input.as_bytes());
        // The length is a power of two: the mask keeps the index in range.
        let i = (h.finish() as usize) & (slots.len() - 1);
        &slots[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_kept_result_is_given_back_without_computing_it_again() {
        let memo = Memo::new(16);
        let calls = Cell::new(0);
        let len = |s: &str| -> Result<usize, ()> {
            calls.set(calls.get() + 1);
            Ok(s.len())
        };
        assert_eq!(memo.get_or_try("http://a.example/", len), Ok(17));
        assert_eq!(memo.get_or_try("http://a.example/", len), Ok(17));
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn inputs_sharing_a_slot_each_get_their_own_result() {
        // One slot: every input collides, and each must still get its own answer.
        let memo = Memo::new(1);
        let upper = |s: &str| -> Result<String, ()> { Ok(s.to_uppercase()) };
        for _ in 0..3 {
            assert_eq!(memo.get_or_try("abc", upper).as_deref(), Ok("ABC"));
            assert_eq!(memo.get_or_try("xyz", upper).as_deref(), Ok("XYZ"));
        }
    }

    #[test]
    fn a_slot_held_elsewhere_is_computed_past_not_waited_for() {
        let memo = Memo::new(1);
        assert_eq!(memo.get_or_try("abc", |s| Ok::<_, ()>(s.len())), Ok(3));
        // Another thread is using the only slot: the answer is computed, not waited for (this
        // thread would otherwise block here for good) and the slot is left as it was.
        let held = memo.slot("abc").lock().expect("slot");
        let calls = Cell::new(0);
        let f = |s: &str| -> Result<usize, ()> {
            calls.set(calls.get() + 1);
            Ok(s.len() * 10)
        };
        assert_eq!(memo.get_or_try("abc", f), Ok(30));
        assert_eq!(memo.get_or_try("wxyz", f), Ok(40));
        assert_eq!(calls.get(), 2);
        drop(held);
        assert_eq!(
            memo.get_or_try("abc", f),
            Ok(3),
            "the kept result is still there"
        );
    }

    #[test]
    fn failures_and_long_inputs_are_not_kept() {
        let memo = Memo::new(16);
        let calls = Cell::new(0);
        let f = |s: &str| -> Result<usize, String> {
            calls.set(calls.get() + 1);
            match s.starts_with("bad") {
                true => Err(s.to_owned()),
                false => Ok(s.len()),
            }
        };
        assert!(memo.get_or_try("bad input", f).is_err());
        assert!(memo.get_or_try("bad input", f).is_err());
        let long = "x".repeat(MAX_INPUT + 1);
        assert_eq!(memo.get_or_try(&long, f), Ok(MAX_INPUT + 1));
        assert_eq!(memo.get_or_try(&long, f), Ok(MAX_INPUT + 1));
        assert_eq!(calls.get(), 4);
    }
}
