//! The public Memento-compliant archives tmproxy knows: the server's default archive list (and
//! `config.toml`'s, which a test keeps equal), and how the simulations' importer tells whose a
//! URI-M is.

/// One known archive: its id, its name, and the URL prefixes its TimeMaps and TimeGate take a
/// URI-R after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownArchive {
    pub id: &'static str,
    pub name: &'static str,
    pub timemap: &'static str,
    pub timegate: &'static str,
}

/// In the order the default configuration lists them. The prefixes are those of the list
/// MemGator's maintainers keep (`docs/archives.json` of oduwsdl/MemGator, 2026-04-09, commit
/// 6a22246), except where `config.toml` says why ours differ; the archives MemGator marks
/// `ignore` are not listed. `[upstream] archives_file` loads that list itself.
pub const KNOWN: &[KnownArchive] = &[
    KnownArchive {
        id: "ia",
        name: "Internet Archive",
        timemap: "https://web.archive.org/web/timemap/link/",
        timegate: "https://web.archive.org/web/",
    },
    KnownArchive {
        id: "archive-it",
        name: "Archive-It",
        timemap: "https://wayback.archive-it.org/all/timemap/link/",
        timegate: "https://wayback.archive-it.org/all/",
    },
    KnownArchive {
        id: "arquivo",
        name: "Arquivo.pt (Portuguese Web Archive)",
        timemap: "https://arquivo.pt/wayback/timemap/link/",
        timegate: "https://arquivo.pt/wayback/",
    },
    KnownArchive {
        id: "archive.today",
        name: "archive.today",
        timemap: "https://archive.today/timemap/",
        timegate: "https://archive.today/timegate/",
    },
    KnownArchive {
        id: "perma",
        name: "Perma.cc",
        timemap: "https://perma.cc/timemap/link/",
        timegate: "https://perma.cc/timegate/",
    },
    KnownArchive {
        id: "is",
        name: "Icelandic Web Archive (vefsafn.is)",
        timemap: "https://vefsafn.is/timemap/link/",
        timegate: "https://vefsafn.is/",
    },
    KnownArchive {
        id: "ukwa",
        name: "UK Web Archive",
        timemap: "https://www.webarchive.org.uk/wayback/archive/timemap/link/",
        timegate: "https://www.webarchive.org.uk/wayback/archive/",
    },
    KnownArchive {
        id: "parliament.uk",
        name: "UK Parliament Web Archive",
        timemap: "http://webarchive.parliament.uk/timemap/link/",
        timegate: "http://webarchive.parliament.uk/timegate/",
    },
    KnownArchive {
        id: "nrs",
        name: "National Records of Scotland Web Archive",
        timemap: "https://webarchive.nrscotland.gov.uk/timemap/link/",
        timegate: "https://webarchive.nrscotland.gov.uk/timegate/",
    },
    KnownArchive {
        id: "lac",
        name: "Library and Archives Canada (Government of Canada Web Archive)",
        timemap: "https://webarchiveweb.wayback.bac-lac.canada.ca/web/timemap/link/",
        timegate: "https://webarchiveweb.wayback.bac-lac.canada.ca/web/",
    },
    KnownArchive {
        id: "banq",
        name: "BAnQ (Bibliothèque et Archives nationales du Québec)",
        timemap: "https://waext.banq.qc.ca/wayback/timemap/link/",
        timegate: "https://waext.banq.qc.ca/wayback/",
    },
    KnownArchive {
        id: "nla",
        name: "Australian Web Archive (NLA / Trove)",
        timemap: "https://web.archive.org.au/awa/timemap/link/",
        timegate: "https://web.archive.org.au/awa/",
    },
    KnownArchive {
        id: "ndl",
        name: "WARP (National Diet Library, Japan)",
        timemap: "https://warp.da.ndl.go.jp/collections/timemap/",
        timegate: "https://warp.da.ndl.go.jp/collections/timegate/",
    },
];
