use super::bytes::{put_str, Cursor};
use super::*;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Rec(u64, String);

impl Record for Rec {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        put_str(out, &self.1);
    }
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut c = Cursor(bytes);
        let r = Rec(c.u64()?, c.string()?);
        c.end()?;
        Ok(r)
    }
    fn heap_bytes(&self) -> usize {
        self.1.len()
    }
}

fn records(n: u64) -> Vec<Rec> {
    (0..n)
        .map(|i| {
            Rec(
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1000,
                format!("u{i}"),
            )
        })
        .collect()
}

#[test]
fn a_tiny_chunk_gives_many_runs_and_the_same_order_as_a_sort() {
    let dir = tempfile::tempdir().expect("temp dir");
    // About 3 records a run: more runs than MAX_FAN_IN, so some are merged down first.
    let mut s =
        ExternalSort::new(dir.path(), "t", 3 * (std::mem::size_of::<Rec>() + 4)).expect("spill");
    let input = records(1000);
    for r in input.clone() {
        s.push(r).expect("push");
    }
    assert!(s.runs() > 1 && s.runs() <= MAX_FAN_IN, "{}", s.runs());
    assert!(s.written() > MAX_FAN_IN, "{}", s.written());
    let mut want = input;
    want.sort();
    for _ in 0..2 {
        let got: Vec<Rec> = s
            .merge()
            .expect("merge")
            .map(|r| r.expect("record"))
            .collect();
        assert_eq!(got, want, "a second merge reads the same runs");
    }
    let files = std::fs::read_dir(dir.path()).expect("dir").count();
    assert_eq!(files, s.runs(), "merged-down runs are deleted");
    s.remove();
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

/// Every way a run can be damaged ends the merge with an error naming the file.
#[test]
fn a_torn_or_garbled_run_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = ExternalSort::new(dir.path(), "t", 1 << 20).expect("spill");
    for r in records(50) {
        s.push(r).expect("push");
    }
    drop(s.merge().expect("first merge writes the run"));
    let run = std::fs::read_dir(dir.path())
        .expect("dir")
        .next()
        .expect("a run")
        .expect("entry")
        .path();
    let good = std::fs::read(&run).expect("read");
    let mut flipped = good.clone();
    flipped[40] ^= 0x55;
    let mut long_len = good.clone();
    long_len[8..12].copy_from_slice(&(MAX_RECORD + 1).to_le_bytes());
    let mut extra = good.clone();
    extra.push(0);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("torn", good[..good.len() / 2].to_vec()),
        ("torn in the end mark", good[..good.len() - 3].to_vec()),
        ("flipped", flipped),
        ("length", long_len),
        ("extra", extra),
        ("empty", Vec::new()),
        ("not a run", b"garbage garbage garbage".to_vec()),
    ];
    for (what, bytes) in cases {
        std::fs::write(&run, &bytes).expect("write");
        let got: Result<Vec<Rec>, String> = s.merge().and_then(|m| m.collect());
        let e = got.expect_err(what);
        assert!(e.contains(&*run.to_string_lossy()), "{what}: {e}");
    }
    // A record whose fields do not fit its bytes, with a right checksum, is refused too.
    assert!(Rec::decode(&[1, 2, 3]).is_err());
    let mut b = Vec::new();
    Rec(1, "x".into()).encode(&mut b);
    b.push(0);
    assert!(Rec::decode(&b).is_err());
}
