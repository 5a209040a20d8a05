//! The conditional TimeMap cache: what is stored, the policy that decides, and where it lives.

pub mod store;
