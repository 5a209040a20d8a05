//! Real archives' recorded answers (`tests/fixtures/real/`, see its README) served through fake
//! archives on loopback: tmproxy must serve every distinct memento a recording lists exactly
//! once, as spelled, with the right ends, count and TimeGate choices, and take what a recorded
//! TimeGate head names when the TimeMap fails.

mod aggregated;
mod checks;
mod heads;
mod reading;
mod serving;

use checks::check_recordings;

/// One test per recorded TimeMap (so each passes or fails on its own), and the table of them
/// the corpus check reads: test name, file, the URI-R it was recorded for.
macro_rules! recorded_timemaps {
    ($($name:ident: $file:literal for $uri_r:literal;)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                check_recordings(&[$file], $uri_r).await;
            }
        )*
        const TIMEMAPS: &[&str] = &[$($file),*];
    };
}

recorded_timemaps! {
    ia_vikowebsite_com: "ia-timemap-vikowebsite.com.link" for "http://vikowebsite.com";
    ia_readymadedownline_com: "ia-timemap-readymadedownline.com.link" for "http://readymadedownline.com";
    ia_designforlondon_gov_uk: "ia-timemap-designforlondon.gov.uk.link" for "http://designforlondon.gov.uk";
    ia_niemann_blogs_nytimes_com: "ia-timemap-niemann.blogs.nytimes.com.link" for "http://niemann.blogs.nytimes.com";
    ia_svd_se: "ia-timemap-svd.se.link" for "http://svd.se";
    ia_megynkelly_2017_06: "ia-timemap-twitter.com-megynkelly-2017-06.link" for "http://twitter.com/megynkelly";
    ia_megynkelly_2017_07: "ia-timemap-twitter.com-megynkelly-2017-07.link" for "http://twitter.com/megynkelly";
    odu_aggregator_lakers_com: "odu-aggregator-timemap-lakers.com.link" for "http://Lakers.com";
    odu_aggregator_www_amazon_jp: "odu-aggregator-timemap-www.amazon.jp.link" for "http://www.amazon.jp";
    odu_aggregator_money_com: "odu-aggregator-timemap-money.com.link" for "http://Money.com";
    odu_aggregator_my_mail_ru: "odu-aggregator-timemap-my.mail.ru.link" for "http://my.mail.ru";
    odu_aggregator_cbssports_com: "odu-aggregator-timemap-cbssports.com.link" for "http://CBSSports.com";
    odu_aggregator_mlb_mlb_com_home: "odu-aggregator-timemap-mlb.mlb.com-home.link" for "http://mlb.mlb.com/home";
    odu_aggregator_investmentwatchblog_com: "odu-aggregator-timemap-investmentwatchblog.com.link" for "http://investmentwatchblog.com/";
    odu_aggregator_www_cs_odu_edu: "odu-aggregator-timemap-www.cs.odu.edu.link" for "http://www.cs.odu.edu/";
    memgator_antifa_com_2020_10_05: "memgator-timemap-antifa.com-2020-10-05.link" for "http://antifa.com";
    memgator_antifa_com_2020_10_29: "memgator-timemap-antifa.com-2020-10-29.link" for "http://antifa.com";
    memgator_twitter_antifawebsite: "memgator-timemap-twitter.com-AntifaWebsite.link" for "https://twitter.com/AntifaWebsite";
    memgator_hashtag_bluelivesmatter: "memgator-timemap-twitter.com-hashtag-BlueLivesMatter.link" for "https://twitter.com/hashtag/BlueLivesMatter";
    memgator_hashtag_millionmagamarch: "memgator-timemap-twitter.com-hashtag-MillionMAGAMarch.link" for "https://twitter.com/hashtag/MillionMAGAMarch";
    memgator_hashtag_qanon: "memgator-timemap-twitter.com-hashtag-QAnon.link" for "https://twitter.com/hashtag/QAnon";
    memgator_hashtag_whitelivesmatter: "memgator-timemap-twitter.com-hashtag-WhiteLivesMatter.link" for "https://twitter.com/hashtag/WhiteLivesMatter";
    memgator_hashtag_whiteoutwednesday: "memgator-timemap-twitter.com-hashtag-whiteoutwednesday.link" for "https://twitter.com/hashtag/whiteoutwednesday";
    memgator_trump_status_1304769412759724033: "memgator-timemap-twitter.com-realDonaldTrump-status-1304769412759724033.link" for "https://twitter.com/realDonaldTrump/status/1304769412759724033";
    archivetoday_www_bbc_co_uk: "archivetoday-timemap-www.bbc.co.uk.link" for "https://www.bbc.co.uk/";
}

/// Two recordings of one URI-R, each from an archive of its own: tmproxy serves their union, a
/// memento both list once. MemGator's two answers for antifa.com, 24 days apart:
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memgator_antifa_com_both_recordings() {
    let both = [
        "memgator-timemap-antifa.com-2020-10-05.link",
        "memgator-timemap-antifa.com-2020-10-29.link",
    ];
    check_recordings(&both, "http://antifa.com").await;
}

/// IA's two answers for twitter.com/megynkelly, a month apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ia_megynkelly_both_recordings() {
    let both = [
        "ia-timemap-twitter.com-megynkelly-2017-06.link",
        "ia-timemap-twitter.com-megynkelly-2017-07.link",
    ];
    check_recordings(&both, "http://twitter.com/megynkelly").await;
}

/// The recorded CDX answers are IA's plain-text form (what the CDX server sends without
/// `output=json`). tmproxy's CDX archives ask for `output=json` and read only JSON, so serving
/// these in its place would test an answer no archive gives it; they are kept, not served.
/// The one JSON answer is to a prefix query with its own `fl=` columns (no `urlkey`, 37
/// different URLs): not what tmproxy asks for one URI-R either, so it is kept too.
const CDX_KEPT: &[&str] = &[
    "ia-cdx-cnn.com.txt",
    "ia-cdx-twitter.com-realDonaldTrump-status-1304769412759724033.txt",
    "ia-cdx-usatoday.com-2000-century-tech.txt",
    "ia-cdx-json-twitter.com-ScalaCoward-status.json",
];

/// Every file in the corpus is described in its README and has a use here (a TimeMap checked, a
/// head checked, or a CDX answer listed as kept), and everything named here is there.
#[test]
fn every_recording_is_described_and_used() {
    let dir = serving::corpus_dir();
    let readme = serving::fixture_text("README.md");
    let named: Vec<&str> = TIMEMAPS
        .iter()
        .copied()
        .chain(heads::HEADS.iter().map(|(file, _)| *file))
        .chain(CDX_KEPT.iter().copied())
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name != "README.md")
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "only {} recordings in {}",
        files.len(),
        dir.display()
    );
    for file in &files {
        assert!(
            readme.contains(&format!("`{file}`")),
            "{file} is not described in README.md"
        );
        assert!(named.contains(&file.as_str()), "{file} is used by no check");
    }
    for file in named {
        assert!(
            files.iter().any(|f| f == file),
            "{file} is not in {}",
            dir.display()
        );
    }
}
