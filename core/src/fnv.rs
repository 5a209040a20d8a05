//! A 64-bit FNV-1a hash: what an ETag is made of, fed piece by piece, so a body rendered whole
//! and one written to disk in pieces hash alike.

/// A 64-bit FNV-1a of a body, fed piece by piece: a stable ETag across restarts, unlike std's
/// seeded hasher, and the same for a body rendered whole or streamed to disk.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn of(bytes: &[u8]) -> Fnv {
        let mut h = Fnv::default();
        h.update(bytes);
        h
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    }

    pub fn value(&self) -> u64 {
        self.0
    }

    /// The strong ETag of the body hashed: `"` 16 hex digits `"`.
    pub fn etag(&self) -> String {
        format!("\"{:016x}\"", self.0)
    }
}
