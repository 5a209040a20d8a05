//! A small fixed-size memo of a pure function of short text: the last input and result in each
//! of a few thousand slots, the slot chosen by the input's hash.
//!
//! A cache hit parses its URI-R with `url` twice (to check and normalise it, then for its cache
//! key); the same popular URI-Rs come again and again, and the two parses were ~4% of a hit's
//! CPU (BENCHMARKS.md, [scale]). The memo is bounded whatever clients send: a fixed number of
//! slots, inputs over [`MAX_INPUT`] bytes not kept, a colliding input simply taking the slot.
//! Only successes are kept, so a refused input is refused afresh each time.

use std::hash::Hasher;
use std::sync::Mutex;

/// Longer inputs are computed every time: the memo's memory stays under slots × 2 × this.
pub const MAX_INPUT: usize = 256;

/// Slots of a memo by URI-R (the parsed URI-Rs, the cache keys): the popular URI-Rs of a busy
/// aggregator, in at most ~2 MiB each.
pub const URI_R_SLOTS: usize = 4096;

type Slot<V> = Mutex<Option<(Box<str>, V)>>;

pub struct Memo<V> {
    slots: Box<[Slot<V>]>,
}

impl<V: Clone> Memo<V> {
    /// A memo of `slots` slots (rounded up to a power of two, at least one).
    pub fn new(slots: usize) -> Memo<V> {
        let n = slots.max(1).next_power_of_two();
        Memo {
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// `f(input)`, from the memo when this input's result is there. `f` must be pure: the same
    /// input always gives the same result.
    pub fn get_or_try<E>(&self, input: &str, f: impl FnOnce(&str) -> Result<V, E>) -> Result<V, E> {
        if input.len() > MAX_INPUT {
            return f(input);
        }
        let slot = self.slot(input);
        {
            // A poisoned slot held a whole pair or none: a panic cannot leave half of one.
            let held = slot.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((kept, value)) = held.as_ref() {
                if **kept == *input {
                    return Ok(value.clone());
                }
            }
        }
        let value = f(input)?;
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((input.into(), value.clone()));
        Ok(value)
    }

    fn slot(&self, input: &str) -> &Slot<V> {
        let mut h = rustc_hash::FxHasher::default();
        h.write(input.as_bytes());
        // The length is a power of two: the mask keeps the index in range.
        let i = (h.finish() as usize) & (self.slots.len() - 1);
        &self.slots[i]
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
