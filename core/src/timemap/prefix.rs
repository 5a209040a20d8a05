//! Prefix coding of a sorted list of URI-Ms: each one as the length of the prefix it shares with
//! the one before and the rest, so an archive's `https://archive.example/web/2001…/http://e.com/`
//! is stored once per list rather than once per memento. Used by the compact stored form.

/// The bytes `next` shares with `prev` from the start, cut back to a character boundary so the
/// suffix is a `str` of its own.
pub fn shared_prefix(prev: &str, next: &str) -> usize {
    let mut n = prev
        .bytes()
        .zip(next.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !next.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// `next` as (shared, suffix) against `prev`: borrowed, so coding a list copies no URI-M.
pub fn code<'a>(prev: &str, next: &'a str) -> (usize, &'a str) {
    let shared = shared_prefix(prev, next);
    (shared, &next[shared..])
}

/// The URI-M coded as (shared, suffix) against `prev`, or None when `shared` is not a prefix
/// length of `prev` on a character boundary (damaged or planted input).
pub fn expand(prev: &str, shared: usize, suffix: &str) -> Option<String> {
    let head = prev.get(..shared)?;
    let mut uri = String::with_capacity(shared + suffix.len());
    uri.push_str(head);
    uri.push_str(suffix);
    Some(uri)
}

/// A whole list coded, each against the one before (the first against "").
pub fn code_all<'a>(uris: &[&'a str]) -> Vec<(usize, &'a str)> {
    let mut prev = "";
    uris.iter()
        .map(|&uri| {
            let coded = code(prev, uri);
            prev = uri;
            coded
        })
        .collect()
}

/// A coded list back, or None at the first entry that does not fit the one before.
pub fn expand_all(coded: &[(usize, &str)]) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(coded.len());
    for &(shared, suffix) in coded {
        let prev = out.last().map_or("", String::as_str);
        let uri = expand(prev, shared, suffix)?;
        out.push(uri);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_archive_s_list_shares_its_prefix() {
        let uris = [
            "https://a.example/web/20010101000000/http://e.com/",
            "https://a.example/web/20010102000000/http://e.com/",
            "https://a.example/web/20020101000000/http://e.com/",
        ];
        let coded = code_all(&uris);
        assert_eq!(coded[0], (0, uris[0]));
        assert_eq!(coded[1], (29, "2000000/http://e.com/"));
        assert_eq!(coded[2], (25, "20101000000/http://e.com/"));
        assert_eq!(expand_all(&coded).expect("expands"), uris);
    }

    #[test]
    fn the_shared_length_stops_at_a_character_boundary() {
        // "é" and "è" share their first UTF-8 byte; the suffix must still start on a character.
        assert_eq!(shared_prefix("aé", "aè"), 1);
        assert_eq!(code("aé", "aè"), (1, "è"));
    }

    #[test]
    fn a_shared_length_that_does_not_fit_is_refused() {
        assert_eq!(expand("abc", 4, "x"), None);
        assert_eq!(expand("aé", 2, "x"), None, "inside a character");
        assert_eq!(expand_all(&[(0, "ab"), (usize::MAX, "c")]), None);
        assert_eq!(expand_all(&[(1, "b")]), None, "the first shares nothing");
    }

    proptest! {
        #![proptest_config(crate::prop_tests::config())]

        #[test]
        fn any_list_round_trips(uris in proptest::collection::vec(".{0,12}", 0..20)) {
            let borrowed: Vec<&str> = uris.iter().map(String::as_str).collect();
            prop_assert_eq!(expand_all(&code_all(&borrowed)), Some(uris.clone()));
        }

        #[test]
        fn a_sorted_list_with_a_common_prefix_round_trips(
            prefix in "[a-zé/:.]{0,16}",
            mut tails in proptest::collection::vec("[0-9a-zè]{0,8}", 0..20),
        ) {
            tails.sort();
            let uris: Vec<String> = tails.iter().map(|t| format!("{prefix}{t}")).collect();
            let borrowed: Vec<&str> = uris.iter().map(String::as_str).collect();
            let coded = code_all(&borrowed);
            for &(shared, _) in coded.iter().skip(1) {
                prop_assert!(shared >= prefix.len());
            }
            prop_assert_eq!(expand_all(&coded), Some(uris.clone()));
        }
    }
}
