//! Table 1: how a fresh TimeMap compares with the cached one, as one of seven cases.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A row of the spec's Table 1 (completed): how a fresh TimeMap T' compares to the cached T.
/// Serialised as its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
#[repr(u8)]
pub enum ChangeCase {
    /// a' = a, m' = m: unchanged in size.
    C1 = 1,
    /// a' = a, m' > m: gained mementos.
    C2 = 2,
    /// a' > a, m' > m: gained archive(s) and mementos.
    C3 = 3,
    /// a' < a, m' > m: lost archive(s), still gained mementos.
    C4 = 4,
    /// m = 0, m' > 0: a (false) empty TimeMap became non-empty.
    C5 = 5,
    /// a' < a, m' ≤ m: lost archive(s), no gain.
    C6 = 6,
    /// a' ≥ a, m' < m (or a' > a with m' = m): lost mementos without losing an archive.
    C7 = 7,
}

impl ChangeCase {
    pub const ALL: [ChangeCase; 7] = [
        ChangeCase::C1,
        ChangeCase::C2,
        ChangeCase::C3,
        ChangeCase::C4,
        ChangeCase::C5,
        ChangeCase::C6,
        ChangeCase::C7,
    ];

    pub fn number(self) -> u8 {
        self as u8
    }

    /// Cases 2–5 gain mementos: the ones `conditional` replaces on.
    pub fn is_better(self) -> bool {
        matches!(
            self,
            ChangeCase::C2 | ChangeCase::C3 | ChangeCase::C4 | ChangeCase::C5
        )
    }
}

impl From<ChangeCase> for u8 {
    fn from(c: ChangeCase) -> u8 {
        c.number()
    }
}

impl TryFrom<u8> for ChangeCase {
    type Error = String;

    fn try_from(n: u8) -> Result<Self, Self::Error> {
        ChangeCase::ALL
            .get(usize::from(n).wrapping_sub(1))
            .copied()
            .ok_or_else(|| format!("no Table 1 case {n}: expected 1 to 7"))
    }
}

impl fmt::Display for ChangeCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// Classifies the fresh (a', m') against the cached (a, m): exactly one case for every input.
/// Case 5 comes before 2–4, as the spec says.
pub fn classify(a: usize, m: usize, a2: usize, m2: usize) -> ChangeCase {
    use std::cmp::Ordering::*;
    if m == 0 && m2 > 0 {
        return ChangeCase::C5;
    }
    match (a2.cmp(&a), m2.cmp(&m)) {
        (Equal, Equal) => ChangeCase::C1,
        (Equal, Greater) => ChangeCase::C2,
        (Greater, Greater) => ChangeCase::C3,
        (Less, Greater) => ChangeCase::C4,
        (Less, _) => ChangeCase::C6,
        // a' ≥ a and m' < m, or a' > a with m' = m.
        (Equal | Greater, Less) | (Greater, Equal) => ChangeCase::C7,
    }
}
