//! Compare-and-set in the shared tier: each value in Redis starts with the revision of the
//! entry it holds, and a write lands only if the revision stored is still the one the writer's
//! policy decided against, so two replicas never store a worse TimeMap over a better one.
//!
//! A value is `TMR1`, the revision in 16 hex digits, then the envelope sled holds. The script
//! reads those 20 bytes only (GETRANGE), never the value, and the whole check-and-write is one
//! key, so it runs as well on a Redis Cluster.
//!
//! Not a `tmproxy_disk` frame, on purpose: the head is for the Lua script, which can match a
//! fixed-width ASCII prefix but not read a little-endian version or a zstd body, and it guards
//! no body of its own (the envelope after it is the frame, with its own checksum). Its shape is
//! also what replicas of the previous build write and read during a rolling upgrade.

/// The first bytes of a value with a revision: an envelope starts `TMB1`, `{` or 0x78 instead.
const MAGIC: &[u8; 4] = b"TMR1";

/// The magic and the revision's 16 hex digits.
pub(super) const HEAD_LEN: usize = MAGIC.len() + 16;

/// How many times a replica whose write lost decides again against the winner and retries;
/// past that the shared entry stands and is installed locally.
pub const CAS_ATTEMPTS: usize = 3;

/// Writes ARGV[2] under KEYS[1] if what is stored is still what the writer saw (ARGV[1]): ""
/// for nothing, else a revision. A value without a revision (the previous build's, or planted)
/// matches any revision: it is overwritten once, and from then on the key has revisions.
pub(super) const SET_IF: &str = r"
local head = redis.call('GETRANGE', KEYS[1], 0, 19)
local ok
if head == '' then
  ok = ARGV[1] == ''
elseif string.match(head, '^TMR1' .. string.rep('[0-9a-f]', 16) .. '$') then
  ok = string.sub(head, 5, 20) == ARGV[1]
else
  ok = ARGV[1] ~= ''
end
if not ok then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
";

/// What a replica saw in the shared tier for a key: what its write is compared against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// Nothing stored.
    Absent,
    /// An entry of this revision.
    Revision(u64),
    /// A value without a revision (written by the previous build, or planted).
    Unversioned,
}

impl Observed {
    /// The script's ARGV[1] for this expectation. An unversioned value is expected as any
    /// revision, so the script's "overwrite once" applies.
    pub(super) fn expected_arg(self) -> String {
        match self {
            Observed::Absent => String::new(),
            Observed::Revision(r) => hex(r),
            Observed::Unversioned => "unversioned".into(),
        }
    }
}

/// What a compare-and-set came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetIf {
    /// Written: the shared entry was still the one expected.
    Stored,
    /// Another replica wrote first: nothing was written.
    Lost,
    /// Redis failed, or is paused after a failure: only the local tiers hold the write.
    Unavailable,
}

/// `value`'s bytes in Redis: the head naming `revision`, then the envelope.
pub(super) fn framed(revision: u64, envelope: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD_LEN + envelope.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(hex(revision).as_bytes());
    out.extend_from_slice(envelope);
    out
}

/// What the first bytes of a stored value say, and where its envelope starts. A value too
/// short for a head, or with a damaged one, is unversioned (exactly as [`SET_IF`] judges it,
/// so a planted head cannot make every write lose): its envelope check then decides.
pub(super) fn observed(bytes: &[u8]) -> (Observed, &[u8]) {
    if bytes.is_empty() {
        return (Observed::Absent, bytes);
    }
    match bytes.strip_prefix(MAGIC.as_slice()) {
        Some(rest) if rest.len() >= 16 => {
            let revision = std::str::from_utf8(&rest[..16])
                .ok()
                .filter(|digits| {
                    digits
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                })
                .and_then(|digits| u64::from_str_radix(digits, 16).ok());
            match revision {
                Some(r) => (Observed::Revision(r), &rest[16..]),
                None => (Observed::Unversioned, bytes),
            }
        }
        _ => (Observed::Unversioned, bytes),
    }
}

/// A revision as the script compares it: 16 lower-case hex digits.
fn hex(revision: u64) -> String {
    format!("{revision:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_framed_value_names_its_revision_and_keeps_its_envelope() {
        let bytes = framed(0xabc, b"TMB1rest");
        assert_eq!(bytes.len(), HEAD_LEN + 8);
        assert_eq!(
            observed(&bytes),
            (Observed::Revision(0xabc), &b"TMB1rest"[..])
        );
        assert_eq!(Observed::Revision(0xabc).expected_arg(), "0000000000000abc");
        assert_eq!(Observed::Absent.expected_arg(), "");
    }

    #[test]
    fn values_without_a_good_head_are_unversioned_and_read_whole() {
        for old in [
            &b"TMB1\x01\x00\x00\x00zstd"[..],
            b"{\"v\":1}",
            b"TMR1",
            b"TMR1zzzzzzzzzzzzzzzzrest",
            b"TMR100000000000000ABrest",
        ] {
            assert_eq!(observed(old), (Observed::Unversioned, old), "{old:?}");
        }
        assert_eq!(observed(b""), (Observed::Absent, &b""[..]));
        assert_ne!(
            Observed::Unversioned.expected_arg(),
            "",
            "must not mean absent"
        );
    }
}
