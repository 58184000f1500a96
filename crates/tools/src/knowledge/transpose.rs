//! Tables laid out one row per measure and one column per period or site (`| Measure | Jan | Feb |`),
//! turned so that each measure is a series and each column header a row label — the shape every other
//! table has, so averages, extremes, rules and charts read them the same way.
//!
//! A table is read as transposed when its first column holds the measures' names and (a) that column's
//! header says so (`Metric`, `Measure`, `指标`), or (b) every other header names a period of one kind
//! (`Jan`…, `Q1`…, `2023`…), or (c) every row's label ends in a unit the vocabulary knows
//! (`Error share (%)`), or (d) the corner cell is empty and units sit on some row labels and on no column
//! header. Nothing else is turned: a table that fits none stays as written.

use forge_language::numbers;
use forge_language::tables;

use super::cells::split_unit;
use super::markdown::RawTable;

/// The table turned (header: the periods' kind or the first header, then one column per measure; one row
/// per former column), or `None` when `raw` is not laid out one row per measure.
pub(crate) fn reoriented(raw: &RawTable) -> Option<RawTable> {
    let label_header = raw.header.first()?;
    let columns = &raw.header[1..];
    if columns.len() < 2 || raw.rows.is_empty() {
        return None;
    }
    let labels: Vec<&str> = raw
        .rows
        .iter()
        .map(|r| r.first().map_or("", |c| c.trim()))
        .collect();
    // The measures' names are text, and every row holds numbers in the period columns.
    let text_labels = labels
        .iter()
        .all(|l| !l.is_empty() && numbers::parse_quantity(l).is_none());
    let numeric_rows = raw.rows.iter().all(|row| {
        row[1..]
            .iter()
            .any(|cell| numbers::parse_quantity(cell.trim()).is_some())
    });
    if !text_labels || !numeric_rows {
        return None;
    }
    let kinds: Vec<Option<&str>> = columns.iter().map(|h| tables::period_kind(h)).collect();
    let one_period_kind = kinds[0].is_some() && kinds.iter().all(|k| *k == kinds[0]);
    let has_unit = |text: &str| {
        split_unit(text)
            .1
            .is_some_and(|u| forge_language::units::read(&u).is_some())
    };
    let units_on_rows = labels.len() >= 2 && labels.iter().all(|l| has_unit(l));
    // An empty corner says nothing about which way the table runs; units do: a measure carries its unit,
    // a site or period does not, so units on some row labels and on no column header put the measures
    // in the rows (`| | North | South |` over `Wait (min)`, `Visits`).
    let corner_over_measures = label_header.trim().is_empty()
        && labels.iter().any(|l| has_unit(l))
        && !columns.iter().any(|h| has_unit(h));
    if !(tables::is_metric_header(label_header)
        || one_period_kind
        || units_on_rows
        || corner_over_measures)
    {
        return None;
    }
    let row_kind = match kinds[0] {
        Some(kind) if one_period_kind => kind.to_owned(),
        _ if tables::is_metric_header(label_header) => String::new(),
        _ => label_header.clone(),
    };
    let mut header = vec![row_kind];
    header.extend(labels.iter().map(|l| (*l).to_owned()));
    let rows = columns
        .iter()
        .enumerate()
        .map(|(j, period)| {
            let mut row = vec![period.clone()];
            row.extend(
                raw.rows
                    .iter()
                    .map(|r| r.get(j + 1).cloned().unwrap_or_default()),
            );
            row
        })
        .collect();
    Some(RawTable {
        line: raw.line,
        header,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(header: &[&str], rows: &[&[&str]]) -> RawTable {
        RawTable {
            line: 3,
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|s| (*s).to_owned()).collect())
                .collect(),
        }
    }

    #[test]
    fn measures_by_month_become_series_by_month() {
        let t = reoriented(&raw(
            &["Measure", "Jan", "Feb", "Mar"],
            &[
                &["Items checked", "4,210", "3,980", "4,650"],
                &["Error share (%)", "6.2", "5.8", "7.4"],
            ],
        ))
        .unwrap();
        assert_eq!(t.header, ["Month", "Items checked", "Error share (%)"]);
        assert_eq!(t.rows[2], ["Mar", "4,650", "7.4"]);
        assert_eq!(t.line, 3);
    }

    #[test]
    fn sites_as_columns_need_a_metric_header_or_units_on_the_rows() {
        let by_header = reoriented(&raw(
            &["Metric", "North", "South"],
            &[&["Visits", "120", "98"], &["Wait", "31", "28"]],
        ))
        .unwrap();
        assert_eq!(by_header.header, ["", "Visits", "Wait"]);
        let by_units = reoriented(&raw(
            &["Site", "North", "South"],
            &[&["Wait (min)", "31", "28"], &["Cost ($)", "12", "14"]],
        ))
        .unwrap();
        assert_eq!(by_units.header, ["Site", "Wait (min)", "Cost ($)"]);
        assert_eq!(by_units.rows[1], ["South", "28", "14"]);
    }

    #[test]
    fn an_empty_corner_is_turned_only_where_units_sit_on_the_rows() {
        let turned = reoriented(&raw(
            &["", "North", "South"],
            &[
                &["Members (Sept)", "1,240", "860"],
                &["Retention rate (%)", "84", "79"],
            ],
        ))
        .unwrap();
        assert_eq!(turned.header, ["", "Members (Sept)", "Retention rate (%)"]);
        assert_eq!(turned.rows[1], ["South", "860", "79"]);
        // Units on the column headers: the measures are the columns, as written.
        for t in [
            raw(
                &["", "Wait (min)", "Visits"],
                &[&["North", "31", "120"], &["South (%)", "28", "98"]],
            ),
            raw(
                &["", "North", "South"],
                &[&["Visits", "120", "98"], &["Wait", "31", "28"]],
            ),
        ] {
            assert_eq!(reoriented(&t), None, "{:?}", t.header);
        }
    }

    #[test]
    fn ordinary_tables_stay_as_written() {
        for t in [
            raw(
                &["Clinic", "Visits", "Wait (min)"],
                &[&["Abbey", "1,140", "28"]],
            ),
            raw(&["Month", "Occupancy"], &[&["Jan", "82"], &["Feb", "85"]]),
            raw(&["Measure", "Value"], &[&["Calls", "12"]]),
            raw(&["Measure", "Jan", "Feb"], &[&["2023", "1", "2"]]),
            raw(&["Measure", "Jan", "Feb"], &[&["Calls", "n/a", "—"]]),
        ] {
            assert_eq!(reoriented(&t), None, "{:?}", t.header);
        }
    }
}
