//! A TimeMap as the web page draws it, pure: mementos → counts per year and archive → the
//! geometry of a stacked bar chart on a time axis (every year from the first memento's to the
//! last's has its place, so years without mementos show as gaps), and the mementos listed by
//! year under a cap. No markup here: the template draws it and escapes every text.

use crate::timemap::model::Memento;
use crate::uri_text::is_servable_uri_m;
use chrono::Datelike;
use std::collections::BTreeMap;

/// At most this many mementos are listed under one year (the rest are counted, and the full
/// TimeMaps are linked), so a year of 100,000 captures stays a page a browser can open.
pub const LIST_PER_YEAR: usize = 100;
/// At most this many mementos are listed on one page, all years together.
pub const LIST_TOTAL: usize = 2_000;

/// Fill colours, one per archive in configured order (cycled past eight). Each has at least
/// 4.5:1 contrast on white (WCAG AA asks 3:1 of graphics), so a bar is never lost.
pub const PALETTE: [&str; 8] = [
    "#1f5fa8", "#b43c0c", "#137a4b", "#8e3b9e", "#8a5a00", "#be185d", "#0e6b80", "#4b5563",
];

/// The chart's fixed parts, in SVG user units. The plot is [`PLOT_WIDTH`] wide whatever the
/// years: the page scales the drawing to its box.
const PLOT_WIDTH: f64 = 960.0;
const PLOT_HEIGHT: f64 = 220.0;
const TOP: f64 = 12.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const BOTTOM: f64 = 36.0;
/// Year labels closer than this would overlap: only every k-th year is labelled then, k from
/// 1, 2, 5, 10, 20, 50… (labelled years are multiples of k, so the ticks read as a calendar).
const LABEL_SPACING: f64 = 40.0;

/// The chart: a bar per year with mementos, each stacked by archive, and the legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub width: f64,
    pub height: f64,
    /// Where the plot's baseline is (the bars stand on it) and its top (the largest bar's top).
    pub baseline: f64,
    pub top: f64,
    pub left: f64,
    pub right: f64,
    /// Where the axis's numbers end (right-aligned) and where the year labels stand.
    pub axis_label_x: f64,
    pub year_label_y: f64,
    /// The largest year's count, labelled at the top of the axis.
    pub max_total: usize,
    pub legend: Vec<Series>,
    /// One per year that has mementos.
    pub bars: Vec<YearBar>,
    /// The labelled years of the axis, empty ones included.
    pub ticks: Vec<Tick>,
    /// One sentence for screen readers (the SVG's `<title>` and `aria-label`).
    pub summary: String,
}

/// One archive in the legend: its id, colour and how many of the mementos are its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub archive: String,
    pub colour: &'static str,
    pub total: usize,
}

/// One labelled year on the axis: its label's centre.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub year: i32,
    pub x: f64,
}

/// One year's bar.
#[derive(Debug, Clone, PartialEq)]
pub struct YearBar {
    pub year: i32,
    pub total: usize,
    pub x: f64,
    pub width: f64,
    /// Bottom to top, in legend order; archives with nothing that year have none.
    pub segments: Vec<Segment>,
}

/// One archive's part of a year's bar, with the tooltip text its `<title>` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub archive: String,
    pub count: usize,
    pub y: f64,
    pub height: f64,
    pub colour: &'static str,
    pub title: String,
}

/// Counts per year, each a count per archive by the archive's place in `archives`.
pub fn counts_by_year(mementos: &[Memento], archives: &[String]) -> BTreeMap<i32, Vec<usize>> {
    let mut years: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for m in mementos {
        let Some(i) = archives.iter().position(|a| **a == *m.archive) else {
            continue;
        };
        let row = years
            .entry(m.datetime.year())
            .or_insert_with(|| vec![0; archives.len()]);
        row[i] += 1;
    }
    years
}

/// The archives in the order the page shows them: the outcomes' (configured) order, then any
/// archive that holds a memento without an outcome, in the order met.
pub fn archive_order(outcomes: &[String], mementos: &[Memento]) -> Vec<String> {
    let mut order = outcomes.to_vec();
    for m in mementos {
        if !order.iter().any(|a| **a == *m.archive) {
            order.push(m.archive.to_string());
        }
    }
    order
}

/// Lays the chart out; None without mementos (the page then says so instead).
pub fn timeline(mementos: &[Memento], archives: &[String]) -> Option<Timeline> {
    let years = counts_by_year(mementos, archives);
    let max_total = years.values().map(|r| r.iter().sum::<usize>()).max()?;
    let (first, last) = (*years.keys().next()?, *years.keys().next_back()?);
    // Every year of the span has its slot, with mementos or not: a time axis, not a list.
    let span = f64::from(last - first + 1);
    let slot = PLOT_WIDTH / span;
    let bar_width = round1((slot * 0.7).min(48.0));
    let slot_x = |year: i32| LEFT + f64::from(year - first) * slot;
    let baseline = TOP + PLOT_HEIGHT;
    let scale = PLOT_HEIGHT / max_total as f64;
    let bars = years
        .iter()
        .map(|(&year, row)| {
            let x = slot_x(year) + (slot - bar_width) / 2.0;
            let mut below = 0usize;
            let segments = row
                .iter()
                .enumerate()
                .filter(|(_, &count)| count > 0)
                .map(|(a, &count)| {
                    // From the cumulative counts, so the parts add up to the bar exactly.
                    let bottom = baseline - below as f64 * scale;
                    below += count;
                    let top = baseline - below as f64 * scale;
                    Segment {
                        archive: archives[a].clone(),
                        count,
                        y: round1(top),
                        height: round1(bottom - top),
                        colour: PALETTE[a % PALETTE.len()],
                        title: format!("{year}: {count} {} in {}", noun(count), archives[a]),
                    }
                })
                .collect();
            YearBar {
                year,
                total: row.iter().sum(),
                x: round1(x),
                width: bar_width,
                segments,
            }
        })
        .collect::<Vec<_>>();
    let every = label_step(slot);
    let ticks = (first..=last)
        .filter(|y| y.rem_euclid(every) == 0)
        .map(|year| Tick {
            year,
            x: round1(slot_x(year) + slot / 2.0),
        })
        .collect::<Vec<_>>();
    let legend = archives
        .iter()
        .enumerate()
        .map(|(a, id)| Series {
            archive: id.clone(),
            colour: PALETTE[a % PALETTE.len()],
            total: years.values().map(|r| r[a]).sum(),
        })
        .filter(|s| s.total > 0)
        .collect::<Vec<_>>();
    let total: usize = bars.iter().map(|b| b.total).sum();
    let summary = format!(
        "Mementos per year from {first} to {last}: {total} {} in {} {} with mementos, from {} {}; the most in one year is {max_total}.",
        noun(total),
        bars.len(),
        if bars.len() == 1 { "year" } else { "years" },
        legend.len(),
        if legend.len() == 1 { "archive" } else { "archives" },
    );
    Some(Timeline {
        width: round1(LEFT + PLOT_WIDTH + RIGHT),
        height: baseline + BOTTOM,
        baseline,
        top: TOP,
        left: LEFT,
        right: round1(LEFT + PLOT_WIDTH),
        axis_label_x: LEFT - 6.0,
        year_label_y: baseline + 18.0,
        max_total,
        legend,
        bars,
        ticks,
        summary,
    })
}

/// Label every k-th year, k the first of 1, 2, 5, 10, 20, 50… whose labels stand at least
/// [`LABEL_SPACING`] apart when a year is `slot` wide.
fn label_step(slot: f64) -> i32 {
    let mut decade = 1;
    // Years span a few thousand at most: a million years a label is past any chart.
    while decade < 1_000_000 {
        for k in [decade, 2 * decade, 5 * decade] {
            if f64::from(k) * slot >= LABEL_SPACING {
                return k;
            }
        }
        decade *= 10;
    }
    decade
}

/// One year's part of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct YearList {
    pub year: i32,
    pub total: usize,
    pub shown: Vec<Listed>,
    /// Mementos of this year left out by the caps.
    pub more: usize,
}

/// One memento as listed: a link only when its URI is http(s) with a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// `2001-01-01 00:00:00`, and the same in RFC 3339 for `<time datetime>`.
    pub when: String,
    pub machine: String,
    pub archive: String,
    pub uri: String,
    pub link: bool,
}

/// The mementos by year, at most [`LIST_PER_YEAR`] a year and [`LIST_TOTAL`] in all; years
/// past the total are left out whole. Returns the years listed, and the mementos and years left
/// out entirely.
pub fn list_by_year(mementos: &[Memento]) -> (Vec<YearList>, usize, usize) {
    let mut years: Vec<YearList> = Vec::new();
    let (mut listed, mut unlisted, mut unlisted_years) = (0usize, 0usize, 0usize);
    let mut previous: Option<i32> = None;
    for m in mementos {
        let year = m.datetime.year();
        if previous != Some(year) {
            previous = Some(year);
            if listed >= LIST_TOTAL {
                unlisted_years += 1;
            } else {
                years.push(YearList {
                    year,
                    total: 0,
                    shown: Vec::new(),
                    more: 0,
                });
            }
        }
        let Some(current) = years.last_mut().filter(|y| y.year == year) else {
            unlisted += 1;
            continue;
        };
        current.total += 1;
        if current.shown.len() < LIST_PER_YEAR && listed < LIST_TOTAL {
            listed += 1;
            current.shown.push(Listed {
                when: m.datetime.format("%Y-%m-%d %H:%M:%S").to_string(),
                machine: m.datetime.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                archive: m.archive.to_string(),
                uri: m.uri_m.to_string(),
                link: is_servable_uri_m(&m.uri_m),
            });
        } else {
            current.more += 1;
        }
    }
    (years, unlisted, unlisted_years)
}

impl Listed {
    /// The link's target: the URI with what may not stand raw in a URL (space, quotes, `<>`,
    /// non-ASCII) percent-encoded; the template escapes it again for the attribute.
    pub fn href(&self) -> std::borrow::Cow<'_, str> {
        crate::uri_text::escape_uri(&self.uri)
    }
}

fn noun(count: usize) -> &'static str {
    if count == 1 {
        "memento"
    } else {
        "mementos"
    }
}

/// SVG coordinates to a tenth of a unit: short attributes, no visible difference.
fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timemap::datetime::parse_14digit;

    fn m(ts: &str, archive: &str) -> Memento {
        Memento {
            uri_m: format!("http://{archive}.test/{ts}/x").into(),
            datetime: parse_14digit(ts).expect("timestamp"),
            archive: archive.into(),
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn counts_per_year_per_archive_in_archive_order() {
        let ms = [
            m("20010101000000", "b"),
            m("20010601000000", "a"),
            m("20010701000000", "a"),
            m("20050101000000", "b"),
        ];
        let counts = counts_by_year(&ms, &ids(&["a", "b"]));
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            [(2001, vec![2, 1]), (2005, vec![0, 1])]
        );
    }

    #[test]
    fn an_archive_without_an_outcome_still_gets_its_place() {
        let ms = [m("20010101000000", "x"), m("20020101000000", "a")];
        assert_eq!(archive_order(&ids(&["a"]), &ms), ids(&["a", "x"]));
    }

    #[test]
    fn one_bar_per_year_with_mementos_stacked_to_scale() {
        let ms = [
            m("19990101000000", "a"),
            m("19990201000000", "a"),
            m("19990301000000", "b"),
            m("19990401000000", "b"),
            m("20040101000000", "b"),
        ];
        let t = timeline(&ms, &ids(&["a", "b", "c"])).expect("a chart");
        // 2000-2003 have no mementos, so no bar: one per year that has some, each in its
        // year's place on the axis (2004 five years' width after 1999).
        assert_eq!(
            t.bars.iter().map(|b| b.year).collect::<Vec<_>>(),
            [1999, 2004]
        );
        let year = PLOT_WIDTH / 6.0;
        assert!((t.bars[1].x - t.bars[0].x - 5.0 * year).abs() < 0.2);
        // Every year of the span labelled, the empty ones too.
        assert_eq!(
            t.ticks.iter().map(|k| k.year).collect::<Vec<_>>(),
            (1999..=2004).collect::<Vec<_>>()
        );
        assert_eq!(t.max_total, 4);
        let tall = &t.bars[0];
        assert_eq!(tall.segments.len(), 2);
        let full: f64 = tall.segments.iter().map(|s| s.height).sum();
        assert!((full - PLOT_HEIGHT).abs() < 0.2, "{full}");
        // Bottom to top: a's part stands on the baseline, b's on a's.
        assert!((tall.segments[0].y + tall.segments[0].height - t.baseline).abs() < 0.2);
        assert!((tall.segments[1].y + tall.segments[1].height - tall.segments[0].y).abs() < 0.2);
        let short = &t.bars[1];
        assert!((short.segments[0].height - PLOT_HEIGHT / 4.0).abs() < 0.2);
        assert_eq!(short.segments[0].colour, PALETTE[1]);
        assert_eq!(short.segments[0].title, "2004: 1 memento in b");
        // c holds nothing: no legend entry.
        let legend: Vec<_> = t
            .legend
            .iter()
            .map(|s| (s.archive.as_str(), s.total))
            .collect();
        assert_eq!(legend, [("a", 2), ("b", 3)]);
        assert!(
            t.summary
                .contains("from 1999 to 2004: 5 mementos in 2 years"),
            "{}",
            t.summary
        );
        assert!(t.bars[1].x > t.bars[0].x + t.bars[0].width);
        assert!(t.right <= t.width);
    }

    #[test]
    fn no_mementos_no_chart() {
        assert_eq!(timeline(&[], &ids(&["a"])), None);
    }

    #[test]
    fn many_years_keep_labels_apart() {
        let ms: Vec<Memento> = (1000..1400)
            .map(|y| m(&format!("{y}0101000000"), "a"))
            .collect();
        let t = timeline(&ms, &ids(&["a"])).expect("a chart");
        assert_eq!(t.bars.len(), 400);
        let labelled: Vec<f64> = t.ticks.iter().map(|k| k.x).collect();
        assert!(labelled
            .windows(2)
            .all(|w| w[1] - w[0] >= LABEL_SPACING - 0.2));
        assert!(labelled.len() > 1);
        // Round years: 400 years in 960 units label every 20th.
        assert!(t.ticks.iter().all(|k| k.year % 20 == 0), "{:?}", t.ticks);
        assert_eq!(label_step(100.0), 1);
        assert_eq!(label_step(15.0), 5);
        assert_eq!(label_step(0.5), 100);
    }

    #[test]
    fn the_list_is_capped_per_year_and_in_all() {
        let mut ms: Vec<Memento> = (0..150)
            .map(|i| m(&format!("2001{:02}01000000", 1 + i % 12), "a"))
            .collect();
        ms.sort_by_key(|m| m.datetime);
        let (years, unlisted, unlisted_years) = list_by_year(&ms);
        assert_eq!((years.len(), unlisted, unlisted_years), (1, 0, 0));
        assert_eq!(
            (years[0].total, years[0].shown.len(), years[0].more),
            (150, LIST_PER_YEAR, 50)
        );

        // More years than the total cap allows: later years are counted, not listed.
        let ms: Vec<Memento> = (0..30)
            .flat_map(|y| (0..LIST_PER_YEAR).map(move |d| (1990 + y, d)))
            .map(|(y, d)| m(&format!("{y}01{:02}{:06}", 1 + d / 24, d % 24 * 10000), "a"))
            .collect();
        let (years, unlisted, unlisted_years) = list_by_year(&ms);
        let shown: usize = years.iter().map(|y| y.shown.len()).sum();
        assert_eq!(shown, LIST_TOTAL);
        assert_eq!(years.len(), LIST_TOTAL / LIST_PER_YEAR);
        assert_eq!(unlisted_years, 30 - years.len());
        assert_eq!(unlisted, unlisted_years * LIST_PER_YEAR);
    }

    #[test]
    fn only_http_uris_become_links() {
        let mut ms = vec![m("20010101000000", "a"), m("20020101000000", "a")];
        ms[1].uri_m = "javascript:alert(1)".into();
        let (years, _, _) = list_by_year(&ms);
        assert!(years[0].shown[0].link);
        assert!(!years[1].shown[0].link);
        assert_eq!(years[1].shown[0].uri, "javascript:alert(1)");
        assert_eq!(years[0].shown[0].when, "2001-01-01 00:00:00");
        assert_eq!(years[0].shown[0].machine, "2001-01-01T00:00:00Z");
    }

    #[test]
    fn archive_ids_pass_through_as_text_for_the_template_to_escape() {
        let ms = [m("20010101000000", "<b>x</b>")];
        let t = timeline(&ms, &ids(&["<b>x</b>"])).expect("a chart");
        assert_eq!(t.bars[0].segments[0].title, "2001: 1 memento in <b>x</b>");
    }
}
